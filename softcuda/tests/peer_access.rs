//! Which memory a kernel may touch, through the C ABI: another device's memory only
//! with peer access enabled (`cuCtxEnablePeerAccess`, until
//! `cuCtxDisablePeerAccess`), never another context's memory on the same device;
//! managed, pinned and registered host memory from everywhere; pool memory where the
//! pool grants access (`cuMemPoolSetAccess`), graph memory where its access
//! descriptors do. A forbidden access is the sticky
//! `CUDA_ERROR_ILLEGAL_ADDRESS` of a fault. Copies between devices need no peer
//! access; memory opened through IPC is reachable from the opening context until it
//! closes it. Every test ends with no live handle.

mod common;

use common::fault;
use common::{launch_kernel, no_leaks, ok, serial};
use softcuda::api::managed::cuMemAllocManaged;
use softcuda::api::{context::*, graph::*, ipc::*, memory::*, module::*, pool::*, stream::*};
use softcuda::types::*;
use std::ffi::c_void;
use std::ptr::null_mut;

/// `poke(p, v)`: one thread stores `v` at `p`. `fetch(d, s)`: one thread copies the
/// `u32` at `s` to `d`.
const PTX: &str = concat!(
    ".version 8.0\n.target sm_80\n.address_size 64\n",
    ".visible .entry poke(.param .u64 poke_p, .param .u32 poke_v)\n{\n",
    ".reg .b32 %r<2>;\n.reg .b64 %rd<2>;\n",
    "ld.param.u64 %rd1, [poke_p];\nld.param.u32 %r1, [poke_v];\n",
    "st.global.u32 [%rd1], %r1;\nret;\n}\n",
    ".visible .entry fetch(.param .u64 fetch_d, .param .u64 fetch_s)\n{\n",
    ".reg .b32 %r<2>;\n.reg .b64 %rd<3>;\n",
    "ld.param.u64 %rd1, [fetch_d];\nld.param.u64 %rd2, [fetch_s];\n",
    "ld.global.u32 %r1, [%rd2];\nst.global.u32 [%rd1], %r1;\nret;\n}\n\0"
);

/// A created context on device `dev`, left current.
fn ctx_on(dev: CUdevice) -> CUcontext {
    let mut c = null_mut();
    // SAFETY: a valid out-pointer.
    ok(unsafe { cuCtxCreate_v2(&mut c, 0, dev) });
    c
}

fn make_current(c: CUcontext) {
    // SAFETY: a live context.
    ok(unsafe { cuCtxSetCurrent(c) });
}

/// `cuMemAlloc` of `n` bytes in the current context, zeroed.
fn alloc(n: usize) -> CUdeviceptr {
    let mut p = 0;
    // SAFETY: a valid out-pointer; then `n` bytes of the allocation.
    unsafe {
        ok(cuMemAlloc_v2(&mut p, n));
        ok(cuMemsetD8_v2(p, 0, n));
    }
    p
}

fn read_u32(p: CUdeviceptr) -> u32 {
    let mut v = 0u32;
    // SAFETY: 4 bytes of host memory, 4 of mapped memory.
    ok(unsafe { cuMemcpyDtoH_v2((&raw mut v).cast(), p, 4) });
    v
}

/// The module, loaded in the current context, and its two kernels.
fn kernels() -> (CUmodule, CUfunction, CUfunction) {
    let mut m = null_mut();
    // SAFETY: NUL-terminated PTX.
    ok(unsafe { cuModuleLoadData(&mut m, PTX.as_ptr().cast()) });
    (
        m,
        common::function(m, c"poke"),
        common::function(m, c"fetch"),
    )
}

/// Launches `poke(p, v)` on the legacy stream and synchronises the context: the
/// result of the synchronisation (the kernel's fault, if any).
fn poke(f: CUfunction, mut p: CUdeviceptr, mut v: u32) -> CUresult {
    let mut params = [(&raw mut p).cast::<c_void>(), (&raw mut v).cast()];
    let launched = launch_kernel(f, [1; 3], [1; 3], 0, null_mut(), &mut params);
    // SAFETY: no arguments.
    let synced = unsafe { cuCtxSynchronize() };
    if launched != code::SUCCESS {
        launched
    } else {
        synced
    }
}

fn fetch(f: CUfunction, mut d: CUdeviceptr, mut s: CUdeviceptr) -> CUresult {
    let mut params = [(&raw mut d).cast::<c_void>(), (&raw mut s).cast()];
    let launched = launch_kernel(f, [1; 3], [1; 3], 0, null_mut(), &mut params);
    // SAFETY: no arguments.
    let synced = unsafe { cuCtxSynchronize() };
    if launched != code::SUCCESS {
        launched
    } else {
        synced
    }
}

/// The context is poisoned: any call that needs it answers the fault.
#[track_caller]
fn assert_poisoned() {
    let mut p = 0;
    // SAFETY: a valid out-pointer.
    assert_eq!(
        unsafe { cuMemAlloc_v2(&mut p, 16) },
        fault(),
        "the fault is sticky"
    );
}

fn destroy(c: CUcontext) {
    // SAFETY: a live context.
    ok(unsafe { cuCtxDestroy_v2(c) });
}

#[test]
fn a_kernel_touches_another_devices_memory_only_with_peer_access() {
    let _g = serial();
    let owner = ctx_on(1);
    let far = alloc(64);
    // Without peer access: a fault, sticky; the memory untouched.
    let c = ctx_on(0);
    let (_, poke_f, _) = kernels();
    assert_eq!(poke(poke_f, far, 7), fault());
    assert_poisoned();
    destroy(c);
    make_current(owner);
    assert_eq!(read_u32(far), 0, "a faulting kernel wrote nothing");

    // With peer access: reads and writes reach the peer's memory.
    let c = ctx_on(0);
    let (m, poke_f, fetch_f) = kernels();
    let near = alloc(64);
    // SAFETY: a live peer context; no flags.
    ok(unsafe { cuCtxEnablePeerAccess(owner, 0) });
    ok(poke(poke_f, far, 0xC0DE));
    ok(poke(poke_f, far + 4, 41));
    ok(fetch(fetch_f, near, far + 4));
    assert_eq!(read_u32(near), 41, "the kernel read the peer's value");
    make_current(owner);
    assert_eq!(read_u32(far), 0xC0DE, "the kernel wrote the peer's memory");

    // Disabled again: a fault again.
    make_current(c);
    // SAFETY: a live peer context.
    ok(unsafe { cuCtxDisablePeerAccess(owner) });
    assert_eq!(fetch(fetch_f, near, far), fault());
    assert_poisoned();
    let _ = m;
    destroy(c);
    make_current(owner);
    assert_eq!(read_u32(far), 0xC0DE);
    destroy(owner);
    no_leaks();
}

#[test]
fn peer_access_is_one_way_and_ends_with_the_peer() {
    let _g = serial();
    let a = ctx_on(0);
    let in_a = alloc(16);
    let b = ctx_on(1);
    let in_b = alloc(16);
    let (_, poke_b, _) = kernels();
    make_current(a);
    let (_, poke_a, _) = kernels();
    // SAFETY: a live peer context; no flags.
    ok(unsafe { cuCtxEnablePeerAccess(b, 0) });
    ok(poke(poke_a, in_b, 5));
    // b has not enabled access to a.
    make_current(b);
    assert_eq!(poke(poke_b, in_a, 5), fault());
    destroy(b);
    make_current(a);
    assert_eq!(read_u32(in_a), 0);
    // A new context on device 1 is not the destroyed peer: no access.
    let b2 = ctx_on(1);
    let in_b2 = alloc(16);
    make_current(a);
    assert_eq!(poke(poke_a, in_b2, 9), fault());
    destroy(a);
    make_current(b2);
    assert_eq!(read_u32(in_b2), 0);
    destroy(b2);
    no_leaks();
}

#[test]
fn another_contexts_memory_on_the_same_device_is_out_of_reach() {
    let _g = serial();
    let owner = ctx_on(0);
    let theirs = alloc(16);
    let c = ctx_on(0);
    let (_, poke_f, _) = kernels();
    // Peer access needs two devices.
    // SAFETY: a live context; no flags.
    assert_eq!(
        unsafe { cuCtxEnablePeerAccess(owner, 0) },
        code::INVALID_DEVICE
    );
    assert_eq!(poke(poke_f, theirs, 3), fault());
    destroy(c);
    make_current(owner);
    assert_eq!(read_u32(theirs), 0);
    destroy(owner);
    no_leaks();
}

#[test]
fn copies_and_memsets_between_devices_need_no_peer_access() {
    let _g = serial();
    let owner = ctx_on(1);
    let far = alloc(64);
    // SAFETY: 64 bytes of the allocation.
    ok(unsafe { cuMemsetD32_v2(far, 0x1111_1111, 16) });
    let c = ctx_on(0);
    let near = alloc(64);
    // SAFETY (all below): ranges inside the two allocations.
    unsafe {
        ok(cuMemcpyPeer(near, c, far, owner, 64));
        assert_eq!(read_u32(near + 60), 0x1111_1111);
        ok(cuMemsetD32_v2(far, 0x2222_2222, 16));
        ok(cuMemcpyDtoD_v2(near, far, 64));
        assert_eq!(read_u32(near), 0x2222_2222);
        let seven = 7u32;
        ok(cuMemcpyHtoD_v2(far, (&raw const seven).cast(), 4));
        assert_eq!(read_u32(far), 7);
    }
    destroy(c);
    destroy(owner);
    no_leaks();
}

#[test]
fn managed_pinned_and_registered_memory_are_reachable_from_every_device() {
    let _g = serial();
    let owner = ctx_on(1);
    let mut managed = 0;
    let mut pinned = null_mut();
    let mut registered = [0u32; 4];
    // SAFETY: valid out-pointers; the registered range is ours and stays alive until
    // it is unregistered below.
    unsafe {
        ok(cuMemAllocManaged(&mut managed, 16, 1));
        ok(cuMemAllocHost_v2(&mut pinned, 16));
        ok(cuMemHostRegister_v2(registered.as_mut_ptr().cast(), 16, 0));
    }
    let c = ctx_on(0);
    let (_, poke_f, _) = kernels();
    ok(poke(poke_f, managed, 1));
    ok(poke(poke_f, pinned as u64, 2));
    ok(poke(poke_f, registered.as_ptr() as u64, 3));
    destroy(c);
    make_current(owner);
    assert_eq!(read_u32(managed), 1);
    assert_eq!(read_u32(pinned as u64), 2);
    assert_eq!(read_u32(registered.as_ptr() as u64), 3);
    // SAFETY: the three allocations above, each freed once.
    unsafe {
        ok(cuMemFree_v2(managed));
        ok(cuMemFreeHost(pinned));
        ok(cuMemHostUnregister(registered.as_mut_ptr().cast()));
    }
    destroy(owner);
    no_leaks();
}

#[test]
fn pool_memory_follows_the_pools_access_not_peer_access() {
    let _g = serial();
    let owner = ctx_on(1);
    let mut p = 0;
    let mut pool = null_mut();
    // SAFETY: valid out-pointers; the legacy stream.
    unsafe {
        ok(cuMemAllocAsync(&mut p, 64, null_mut()));
        ok(cuMemsetD8_v2(p, 0, 64));
        ok(cuDeviceGetDefaultMemPool(&mut pool, 1));
    }
    let c = ctx_on(0);
    let (_, poke_f, _) = kernels();
    // Peer access between the contexts does not open pool memory.
    // SAFETY: a live peer context; no flags.
    ok(unsafe { cuCtxEnablePeerAccess(owner, 0) });
    assert_eq!(poke(poke_f, p, 1), fault());
    destroy(c);
    // The pool's access does.
    let grant = CUmemAccessDesc {
        location: CUmemLocation {
            type_: CU_MEM_LOCATION_TYPE_DEVICE,
            id: 0,
        },
        flags: 3,
    };
    // SAFETY: one descriptor.
    ok(unsafe { cuMemPoolSetAccess(pool, &grant, 1) });
    let c = ctx_on(0);
    let (_, poke_f, _) = kernels();
    ok(poke(poke_f, p + 8, 77));
    destroy(c);
    make_current(owner);
    assert_eq!(read_u32(p), 0, "the faulting kernel wrote nothing");
    assert_eq!(read_u32(p + 8), 77);
    let revoke = CUmemAccessDesc { flags: 0, ..grant };
    // SAFETY: one descriptor; the legacy stream.
    unsafe {
        ok(cuMemPoolSetAccess(pool, &revoke, 1));
        ok(cuMemFreeAsync(p, null_mut()));
        ok(cuStreamSynchronize(null_mut()));
    }
    destroy(owner);
    no_leaks();
}

#[test]
fn memory_opened_through_ipc_is_reachable_until_closed() {
    let _g = serial();
    let owner = ctx_on(1);
    let shared = alloc(16);
    let mut h = CUipcMemHandle { reserved: [0; 64] };
    // SAFETY: a valid out-pointer; the allocation's base.
    ok(unsafe { cuIpcGetMemHandle(&mut h, shared) });
    let c = ctx_on(0);
    let (_, poke_f, _) = kernels();
    let mut opened = 0;
    // SAFETY: a valid out-pointer; a handle of a live allocation.
    ok(unsafe { cuIpcOpenMemHandle_v2(&mut opened, h, 1) });
    ok(poke(poke_f, opened, 12));
    // SAFETY: the address the open returned.
    ok(unsafe { cuIpcCloseMemHandle(opened) });
    assert_eq!(poke(poke_f, opened, 13), fault(), "closed");
    destroy(c);
    make_current(owner);
    assert_eq!(read_u32(shared), 12);
    destroy(owner);
    no_leaks();
}

/// Graph memory on device 1, allocated by a launch of a graph with one allocation
/// node (no free node: it outlives the launch), readable and writable by devices
/// `access`.
fn graph_memory(access: &[CUdevice]) -> CUdeviceptr {
    let descs: Vec<CUmemAccessDesc> = access
        .iter()
        .map(|&d| CUmemAccessDesc {
            location: CUmemLocation {
                type_: CU_MEM_LOCATION_TYPE_DEVICE,
                id: d,
            },
            flags: 3,
        })
        .collect();
    let mut props = common::pinned_pool_props();
    props.location.id = 1;
    let mut params = CUDA_MEM_ALLOC_NODE_PARAMS {
        poolProps: props,
        accessDescs: if descs.is_empty() {
            std::ptr::null()
        } else {
            descs.as_ptr()
        },
        accessDescCount: descs.len(),
        bytesize: 64,
        dptr: 0,
    };
    let (mut g, mut node, mut exec) = (null_mut(), null_mut(), null_mut());
    // SAFETY: valid out-pointers and parameters; the legacy stream.
    unsafe {
        ok(cuGraphCreate(&mut g, 0));
        ok(cuGraphAddMemAllocNode(
            &mut node,
            g,
            std::ptr::null(),
            0,
            &mut params,
        ));
        ok(cuGraphInstantiateWithFlags(&mut exec, g, 0));
        ok(cuGraphLaunch(exec, null_mut()));
        ok(cuStreamSynchronize(null_mut()));
        ok(cuGraphExecDestroy(exec));
        ok(cuGraphDestroy(g));
        ok(cuMemsetD8_v2(params.dptr, 0, 64));
    }
    params.dptr
}

#[test]
fn graph_memory_follows_its_access_descriptors() {
    let _g = serial();
    let owner = ctx_on(1);
    let closed = graph_memory(&[]);
    let open = graph_memory(&[0]);
    let c = ctx_on(0);
    let (_, poke_f, _) = kernels();
    // Peer access between the contexts does not open graph memory.
    // SAFETY: a live peer context; no flags.
    ok(unsafe { cuCtxEnablePeerAccess(owner, 0) });
    ok(poke(poke_f, open, 21));
    assert_eq!(poke(poke_f, closed, 22), fault());
    destroy(c);
    make_current(owner);
    assert_eq!(read_u32(open), 21);
    assert_eq!(read_u32(closed), 0);
    // Kernels on the memory's own device may use it.
    let (_, poke_f, _) = kernels();
    ok(poke(poke_f, closed, 23));
    assert_eq!(read_u32(closed), 23);
    // SAFETY: the two allocations, each freed once.
    unsafe {
        ok(cuMemFree_v2(closed));
        ok(cuMemFree_v2(open));
    }
    destroy(owner);
    no_leaks();
}

//! Stream-ordered memory and managed memory through the C ABI: pools and their
//! attributes, allocation mapped when the stream reaches it, use after an async free
//! reported as an illegal address, release threshold and trim, peer access, device
//! attributes; managed allocations seen by host and device, attach, prefetch, advice
//! and range attributes, and the refusals. Every test ends with no live handle.

mod common;

use common::{no_leaks, ok, pinned_pool_props, serial};
use softcuda::api::{context::*, device::*, graph::*, managed::*, memory::*, pool::*, stream::*};
use softcuda::types::*;
use std::ffi::c_void;
use std::ptr::null_mut;
use std::sync::atomic::{AtomicBool, Ordering};

fn ctx() -> CUcontext {
    let mut c = null_mut();
    // SAFETY: a valid out-pointer.
    ok(unsafe { cuCtxCreate_v2(&mut c, 0, 0) });
    c
}

fn stream() -> CUstream {
    let mut s = null_mut();
    // SAFETY: a valid out-pointer.
    ok(unsafe { cuStreamCreate(&mut s, 0) });
    s
}

fn attr(pool: CUmemoryPool, a: u32) -> u64 {
    let mut v = 0u64;
    // SAFETY: a `cuuint64_t` out-value.
    ok(unsafe { cuMemPoolGetAttribute(pool, a, (&raw mut v).cast()) });
    v
}

fn free_mem() -> usize {
    let (mut f, mut t) = (0, 0);
    // SAFETY: valid out-pointers.
    ok(unsafe { cuMemGetInfo_v2(&mut f, &mut t) });
    f
}

static GATE: AtomicBool = AtomicBool::new(false);

extern "C" fn wait_gate(_: *mut c_void) {
    while !GATE.load(Ordering::Acquire) {
        std::thread::yield_now();
    }
}

#[test]
fn allocation_is_mapped_when_the_stream_reaches_it_and_unmapped_by_the_free() {
    let _g = serial();
    let c = ctx();
    let s = stream();
    // SAFETY (all below): softcuda's exports, called as C would call them.
    unsafe {
        GATE.store(false, Ordering::Release);
        ok(cuLaunchHostFunc(s, Some(wait_gate), null_mut()));
        let mut p = 0;
        ok(cuMemAllocAsync(&mut p, 4096, s));
        assert_ne!(p, 0, "the address is returned at once");
        let mut ty = 0u32;
        // Not usable yet: the stream has not reached the allocation.
        assert_eq!(
            cuPointerGetAttribute((&raw mut ty).cast(), 2, p),
            code::INVALID_VALUE
        );
        // A copy queued after it on the same stream is accepted (from pinned memory:
        // one from plain host memory would wait for the gate).
        let mut pinned = null_mut();
        ok(cuMemAllocHost_v2(&mut pinned, 4096));
        std::ptr::write_bytes(pinned.cast::<u8>(), 7, 4096);
        let src = [7u8; 4096];
        ok(cuMemcpyHtoDAsync_v2(p, pinned, 4096, s));
        GATE.store(true, Ordering::Release);
        ok(cuStreamSynchronize(s));
        ok(cuPointerGetAttribute((&raw mut ty).cast(), 2, p));
        assert_eq!(ty, CU_MEMORYTYPE_DEVICE);
        let mut pool: CUmemoryPool = null_mut();
        ok(cuPointerGetAttribute((&raw mut pool).cast(), 17, p));
        let mut dflt = null_mut();
        ok(cuDeviceGetDefaultMemPool(&mut dflt, 0));
        assert_eq!(pool, dflt);
        let mut back = [0u8; 4096];
        ok(cuMemcpyDtoH_v2(back.as_mut_ptr().cast(), p, 4096));
        assert_eq!(back, src);
        ok(cuMemFreeAsync(p, s));
        assert_eq!(cuMemFreeAsync(p, s), code::INVALID_VALUE, "freed twice");
        ok(cuStreamSynchronize(s));
        assert_eq!(
            cuPointerGetAttribute((&raw mut ty).cast(), 2, p),
            code::INVALID_VALUE
        );
        ok(cuMemFreeHost(pinned));
        ok(cuStreamDestroy_v2(s));
        ok(cuCtxDestroy_v2(c));
    }
    no_leaks();
}

#[test]
fn work_queued_after_the_free_faults_with_an_illegal_address() {
    let _g = serial();
    let c = ctx();
    let s = stream();
    // SAFETY (all below): softcuda's exports, called as C would call them.
    unsafe {
        GATE.store(false, Ordering::Release);
        let mut p = 0;
        ok(cuMemAllocAsync(&mut p, 256, s));
        ok(cuLaunchHostFunc(s, Some(wait_gate), null_mut()));
        ok(cuMemFreeAsync(p, s));
        // Pinned: a copy into plain host memory would wait for the gate.
        let mut back = null_mut();
        ok(cuMemAllocHost_v2(&mut back, 256));
        // Checked when queued (the block is not given back yet), and again when it runs.
        ok(cuMemcpyDtoHAsync_v2(back, p, 256, s));
        GATE.store(true, Ordering::Release);
        assert_eq!(cuStreamSynchronize(s), code::ILLEGAL_ADDRESS);
        // The context is poisoned now: destroying it frees `back`.
        ok(cuStreamDestroy_v2(s));
        ok(cuCtxDestroy_v2(c));
    }
    no_leaks();
}

#[test]
fn pools_count_reserve_release_and_trim() {
    let _g = serial();
    let c = ctx();
    let s = stream();
    // SAFETY (all below): softcuda's exports, called as C would call them.
    unsafe {
        let props = pinned_pool_props();
        let mut pool = null_mut();
        ok(cuMemPoolCreate(&mut pool, &props));
        assert_eq!(softcuda::control::live_counts().pools, 1);
        let before = free_mem();
        let mut threshold = 1u64 << 20;
        ok(cuMemPoolSetAttribute(pool, 4, (&raw mut threshold).cast()));
        assert_eq!(attr(pool, 4), 1 << 20);
        let mut p = 0;
        ok(cuMemAllocFromPoolAsync(&mut p, 4096, pool, s));
        assert_eq!(attr(pool, 5), 4096); // reserved
        assert_eq!(attr(pool, 7), 4096); // used
        assert_eq!(before - free_mem(), 4096, "reserved memory is used memory");
        ok(cuMemFreeAsync(p, s));
        ok(cuStreamSynchronize(s));
        assert_eq!(attr(pool, 7), 0);
        assert_eq!(attr(pool, 5), 4096, "kept below the release threshold");
        assert_eq!(attr(pool, 8), 4096); // used high
        // Reused: the same block, no new reservation.
        let mut q = 0;
        ok(cuMemAllocFromPoolAsync(&mut q, 4000, pool, s));
        assert_eq!(q, p);
        assert_eq!(attr(pool, 5), 4096);
        ok(cuMemFreeAsync(q, s));
        ok(cuStreamSynchronize(s));
        // The watermarks reset to zero only.
        let mut zero = 0u64;
        let mut one = 1u64;
        assert_eq!(
            cuMemPoolSetAttribute(pool, 6, (&raw mut one).cast()),
            code::INVALID_VALUE
        );
        assert_eq!(
            cuMemPoolSetAttribute(pool, 5, (&raw mut zero).cast()),
            code::INVALID_VALUE
        );
        ok(cuMemPoolSetAttribute(pool, 6, (&raw mut zero).cast()));
        ok(cuMemPoolSetAttribute(pool, 8, (&raw mut zero).cast()));
        assert_eq!((attr(pool, 6), attr(pool, 8)), (0, 0));
        // Reuse policies: recorded and answered.
        let mut off = 0i32;
        ok(cuMemPoolSetAttribute(pool, 2, (&raw mut off).cast()));
        let mut v = 7i32;
        ok(cuMemPoolGetAttribute(pool, 2, (&raw mut v).cast()));
        assert_eq!(v, 0);
        ok(cuMemPoolGetAttribute(pool, 1, (&raw mut v).cast()));
        assert_eq!(v, 1);
        ok(cuMemPoolTrimTo(pool, 0));
        assert_eq!(attr(pool, 5), 0);
        assert_eq!(free_mem(), before);
        // Threshold 0: released as soon as the free runs.
        ok(cuMemPoolSetAttribute(pool, 4, (&raw mut zero).cast()));
        ok(cuMemAllocFromPoolAsync(&mut p, 512, pool, s));
        ok(cuMemFreeAsync(p, s));
        ok(cuStreamSynchronize(s));
        assert_eq!(attr(pool, 5), 0);
        // The device's current pool.
        ok(cuDeviceSetMemPool(0, pool));
        let mut cur = null_mut();
        ok(cuDeviceGetMemPool(&mut cur, 0));
        assert_eq!(cur, pool);
        assert_eq!(cuDeviceSetMemPool(1, pool), code::INVALID_DEVICE);
        ok(cuMemAllocAsync(&mut p, 64, s));
        assert_eq!(attr(pool, 7), 64);
        // Destroyed with an allocation outstanding: it goes once that is freed.
        ok(cuMemPoolDestroy(pool));
        assert_eq!(attr_result(pool), code::INVALID_VALUE);
        ok(cuDeviceGetMemPool(&mut cur, 0));
        assert_ne!(cur, pool, "the default pool is current again");
        ok(cuMemFreeAsync(p, s));
        ok(cuStreamSynchronize(s));
        assert_eq!(free_mem(), before);
        let mut dflt = null_mut();
        ok(cuDeviceGetDefaultMemPool(&mut dflt, 0));
        assert_eq!(cuMemPoolDestroy(dflt), code::INVALID_VALUE);
        // Refusals.
        assert_eq!(cuMemAllocAsync(&mut p, 0, s), code::INVALID_VALUE);
        let mut bad = props;
        bad.handleTypes = CU_MEM_HANDLE_TYPE_WIN32; // (POSIX descriptors: tests/pool_ipc.rs)
        assert_eq!(cuMemPoolCreate(&mut pool, &bad), code::NOT_SUPPORTED);
        bad = props;
        bad.location.id = 9;
        assert_eq!(cuMemPoolCreate(&mut pool, &bad), code::INVALID_DEVICE);
        let mut capped = props;
        capped.maxSize = 1024;
        ok(cuMemPoolCreate(&mut pool, &capped));
        assert_eq!(
            cuMemAllocFromPoolAsync(&mut p, 2048, pool, s),
            code::OUT_OF_MEMORY
        );
        ok(cuMemPoolDestroy(pool));
        ok(cuStreamDestroy_v2(s));
        ok(cuCtxDestroy_v2(c));
    }
    no_leaks();
}

fn attr_result(pool: CUmemoryPool) -> CUresult {
    let mut v = 0u64;
    // SAFETY: a `cuuint64_t` out-value.
    unsafe { cuMemPoolGetAttribute(pool, 5, (&raw mut v).cast()) }
}

#[test]
fn peer_access_follows_the_topology() {
    let _g = serial();
    // SAFETY (all below): softcuda's exports, called as C would call them.
    unsafe {
        let mut pool = null_mut();
        ok(cuDeviceGetDefaultMemPool(&mut pool, 0));
        let mut loc = CUmemLocation {
            type_: CU_MEM_LOCATION_TYPE_DEVICE,
            id: 1,
        };
        let mut f = 9;
        ok(cuMemPoolGetAccess(&mut f, pool, &mut loc));
        assert_eq!(f, 0);
        let desc = CUmemAccessDesc {
            location: loc,
            flags: CU_MEM_ACCESS_FLAGS_PROT_READWRITE,
        };
        ok(cuMemPoolSetAccess(pool, &desc, 1));
        ok(cuMemPoolGetAccess(&mut f, pool, &mut loc));
        assert_eq!(f, CU_MEM_ACCESS_FLAGS_PROT_READWRITE);
        let none = CUmemAccessDesc {
            location: loc,
            flags: 0,
        };
        ok(cuMemPoolSetAccess(pool, &none, 1));
        // The owner's access cannot change.
        let own = CUmemAccessDesc {
            location: CUmemLocation {
                type_: CU_MEM_LOCATION_TYPE_DEVICE,
                id: 0,
            },
            flags: 0,
        };
        assert_eq!(cuMemPoolSetAccess(pool, &own, 1), code::INVALID_VALUE);
        let mut own_loc = own.location;
        ok(cuMemPoolGetAccess(&mut f, pool, &mut own_loc));
        assert_eq!(f, CU_MEM_ACCESS_FLAGS_PROT_READWRITE);
    }
    // Without a link, no access.
    softcuda::control::set_peer_links(Some(Vec::new())).unwrap();
    // SAFETY: as above.
    unsafe {
        let mut pool = null_mut();
        ok(cuDeviceGetDefaultMemPool(&mut pool, 0));
        let desc = CUmemAccessDesc {
            location: CUmemLocation {
                type_: CU_MEM_LOCATION_TYPE_DEVICE,
                id: 1,
            },
            flags: CU_MEM_ACCESS_FLAGS_PROT_READWRITE,
        };
        assert_eq!(cuMemPoolSetAccess(pool, &desc, 1), code::INVALID_DEVICE);
    }
    softcuda::control::set_peer_links(None).unwrap();
    no_leaks();
}

#[test]
fn device_attributes_say_what_is_supported() {
    let _g = serial();
    let get = |a| {
        let mut v = -1;
        // SAFETY: a valid out-pointer.
        ok(unsafe { cuDeviceGetAttribute(&mut v, a, 0) });
        v
    };
    assert_eq!(get(115), 1, "MEMORY_POOLS_SUPPORTED");
    let posix_fd = i32::from(cfg!(target_os = "linux"));
    assert_eq!(get(119), posix_fd, "MEMPOOL_SUPPORTED_HANDLE_TYPES");
    assert_eq!(get(83), 1, "MANAGED_MEMORY");
    assert_eq!(get(89), 1, "CONCURRENT_MANAGED_ACCESS");
    assert_eq!(get(88), 0, "PAGEABLE_MEMORY_ACCESS");
}

#[test]
fn managed_memory_is_one_address_space_with_recorded_advice() {
    let _g = serial();
    let c = ctx();
    let s = stream();
    // SAFETY (all below): softcuda's exports, called as C would call them.
    unsafe {
        let mut p = 0;
        ok(cuMemAllocManaged(&mut p, 8192, 1));
        let mut is = 0u32;
        ok(cuPointerGetAttribute((&raw mut is).cast(), 8, p));
        assert_eq!(is, 1, "IS_MANAGED");
        // The host writes, the device reads the same bytes.
        let host = p as *mut u32;
        host.write(0xDEAD_BEEF);
        let mut back = 0u32;
        ok(cuMemcpyDtoH_v2((&raw mut back).cast(), p, 4));
        assert_eq!(back, 0xDEAD_BEEF);
        ok(cuMemsetD32_v2(p, 5, 1));
        assert_eq!(host.read_volatile(), 5);
        // Advice, per range.
        ok(cuMemAdvise(p, 4096, 1, 0)); // read-mostly, first half
        let mut v = -7i32;
        ok(cuMemRangeGetAttribute((&raw mut v).cast(), 4, 1, p, 4096));
        assert_eq!(v, 1);
        ok(cuMemRangeGetAttribute((&raw mut v).cast(), 4, 1, p, 8192));
        assert_eq!(v, 0, "not the whole range");
        ok(cuMemAdvise(p, 8192, 3, -1)); // preferred: the host
        ok(cuMemRangeGetAttribute((&raw mut v).cast(), 4, 2, p, 8192));
        assert_eq!(v, -1);
        let dev1 = CUmemLocation {
            type_: CU_MEM_LOCATION_TYPE_DEVICE,
            id: 1,
        };
        ok(cuMemAdvise_v2(p, 8192, 5, dev1)); // accessed by device 1
        let mut list = [0i32; 3];
        ok(cuMemRangeGetAttribute(
            list.as_mut_ptr().cast(),
            12,
            3,
            p,
            8192,
        ));
        assert_eq!(list, [1, -2, -2]);
        ok(cuMemAdvise_v2(p, 8192, 6, dev1));
        ok(cuMemRangeGetAttribute(
            list.as_mut_ptr().cast(),
            12,
            3,
            p,
            8192,
        ));
        assert_eq!(list, [-2, -2, -2]);
        // Prefetch: recorded when the stream reaches it.
        ok(cuMemPrefetchAsync(p, 8192, 0, s));
        ok(cuStreamSynchronize(s));
        ok(cuMemRangeGetAttribute((&raw mut v).cast(), 4, 4, p, 8192));
        assert_eq!(v, 0);
        let host_loc = CUmemLocation { type_: 2, id: 0 };
        ok(cuMemPrefetchAsync_v2(p, 4096, host_loc, 0, s));
        ok(cuStreamSynchronize(s));
        let (mut ty, mut id) = (0i32, 9i32);
        let mut data = [(&raw mut ty).cast::<c_void>(), (&raw mut id).cast()];
        let mut sizes = [4usize, 4];
        let mut attrs = [7u32, 8];
        ok(cuMemRangeGetAttributes(
            data.as_mut_ptr(),
            sizes.as_mut_ptr(),
            attrs.as_mut_ptr(),
            2,
            p,
            4096,
        ));
        assert_eq!(ty, 2, "last prefetch: the host");
        ok(cuMemRangeGetAttribute((&raw mut v).cast(), 4, 4, p, 8192));
        assert_eq!(v, -2, "halves prefetched to different places");
        // Attach: recorded when the stream reaches it.
        ok(cuStreamAttachMemAsync(s, p, 0, 4));
        ok(cuStreamSynchronize(s));
        assert_eq!(attachment(p), Some((4, s as usize)));
        assert_eq!(
            cuStreamAttachMemAsync(null_mut(), p, 0, 4),
            code::INVALID_VALUE
        );
        assert_eq!(cuStreamAttachMemAsync(s, p, 16, 1), code::INVALID_VALUE);
        // Refusals.
        let mut q = 0;
        assert_eq!(cuMemAllocManaged(&mut q, 64, 4), code::INVALID_VALUE);
        assert_eq!(cuMemAllocManaged(&mut q, 0, 1), code::INVALID_VALUE);
        ok(cuMemAlloc_v2(&mut q, 64));
        assert_eq!(cuMemAdvise(q, 64, 1, 0), code::INVALID_VALUE, "not managed");
        ok(cuMemFree_v2(q));
        assert_eq!(
            cuMemAdvise(p, 9000, 1, 0),
            code::INVALID_VALUE,
            "out of range"
        );
        assert_eq!(cuMemPrefetchAsync(p, 64, 5, s), code::INVALID_DEVICE);
        let numa = CUmemLocation { type_: 3, id: 0 };
        assert_eq!(cuMemAdvise_v2(p, 64, 3, numa), code::NOT_SUPPORTED);
        ok(cuMemFree_v2(p));
        ok(cuStreamDestroy_v2(s));
        ok(cuCtxDestroy_v2(c));
    }
    no_leaks();
}

#[test]
fn a_free_that_runs_before_its_allocation_leaves_nothing_mapped() {
    let _g = serial();
    let c = ctx();
    let (a, b) = (stream(), stream());
    // SAFETY (all below): softcuda's exports, called as C would call them.
    unsafe {
        GATE.store(false, Ordering::Release);
        ok(cuLaunchHostFunc(a, Some(wait_gate), null_mut()));
        let mut p = 0;
        ok(cuMemAllocAsync(&mut p, 1024, a));
        // Freed on another stream, unordered: the free runs first.
        ok(cuMemFreeAsync(p, b));
        ok(cuStreamSynchronize(b));
        GATE.store(true, Ordering::Release);
        ok(cuStreamSynchronize(a));
        let mut ty = 0u32;
        assert_eq!(
            cuPointerGetAttribute((&raw mut ty).cast(), 2, p),
            code::INVALID_VALUE,
            "the late allocation maps nothing"
        );
        ok(cuStreamDestroy_v2(a));
        ok(cuStreamDestroy_v2(b));
        ok(cuCtxDestroy_v2(c));
    }
    no_leaks();
}

#[test]
fn cu_mem_free_gives_pool_memory_back_and_capture_refuses_pool_calls() {
    let _g = serial();
    let c = ctx();
    let s = stream();
    // SAFETY (all below): softcuda's exports, called as C would call them.
    unsafe {
        let mut pool = null_mut();
        ok(cuDeviceGetDefaultMemPool(&mut pool, 0));
        let mut p = 0;
        ok(cuMemAllocAsync(&mut p, 4096, s));
        ok(cuMemFree_v2(p)); // waits for the context's work, then gives it back
        assert_eq!(attr(pool, 7), 0);
        assert_eq!(cuMemFreeAsync(p, s), code::INVALID_VALUE, "already freed");
        // Inside a capture: refused, and the capture invalidated.
        ok(cuStreamBeginCapture_v2(s, 0));
        assert_eq!(
            cuMemAllocAsync(&mut p, 64, s),
            code::STREAM_CAPTURE_UNSUPPORTED
        );
        let mut g = null_mut();
        assert_eq!(
            cuStreamEndCapture(s, &mut g),
            code::STREAM_CAPTURE_INVALIDATED
        );
        ok(cuStreamDestroy_v2(s));
        ok(cuCtxDestroy_v2(c));
    }
    no_leaks();
}

//! Helpers of the virtual-memory tests (`tests/vmm.rs`, `tests/vmm_handles.rs`): the
//! C entry points wrapped for brevity, and a kernel that writes into device memory.
#![allow(dead_code)] // each test binary uses its own subset

use crate::common::{function, launch_kernel, ok};
use softcuda::api::{context::*, memory::*, module::*, vmm::*};
use softcuda::types::*;
use std::ffi::c_int;
use std::ptr::null_mut;

/// The granularity.
pub const G: usize = 2 << 20;

/// Writes `3 i + 1` to word `i` of `buf` for `i < n`.
pub const IOTA: &str = concat!(
    ".version 8.0\n.target sm_80\n.address_size 64\n",
    ".visible .entry iota(.param .u64 iota_buf, .param .u32 iota_n)\n{\n",
    ".reg .pred %p<2>;\n.reg .b32 %r<6>;\n.reg .b64 %rd<4>;\n",
    "ld.param.u64 %rd1, [iota_buf];\nld.param.u32 %r1, [iota_n];\n",
    "mov.u32 %r2, %ctaid.x;\nmov.u32 %r3, %ntid.x;\nmov.u32 %r4, %tid.x;\n",
    "mad.lo.s32 %r2, %r2, %r3, %r4;\nsetp.ge.u32 %p1, %r2, %r1;\n@%p1 bra $DONE;\n",
    "mul.wide.u32 %rd2, %r2, 4;\nadd.s64 %rd3, %rd1, %rd2;\n",
    "mad.lo.s32 %r5, %r2, 3, 1;\nst.global.u32 [%rd3], %r5;\n",
    "$DONE:\nret;\n}\n\0"
);

pub fn prop(device: c_int, handle_types: u32) -> CUmemAllocationProp {
    CUmemAllocationProp {
        type_: CU_MEM_ALLOCATION_TYPE_PINNED,
        requestedHandleTypes: handle_types,
        location: CUmemLocation {
            type_: CU_MEM_LOCATION_TYPE_DEVICE,
            id: device,
        },
        win32HandleMetaData: null_mut(),
        allocFlags: CUmemAllocationProp_allocFlags::default(),
    }
}

pub fn try_create(size: usize, p: &CUmemAllocationProp) -> Result<u64, CUresult> {
    let mut h = 0;
    // SAFETY: valid out-pointer and properties.
    match unsafe { cuMemCreate(&mut h, size, p, 0) } {
        code::SUCCESS => Ok(h),
        e => Err(e),
    }
}

/// Physical memory of `size` bytes on device 0.
#[track_caller]
pub fn create(size: usize) -> u64 {
    let h = try_create(size, &prop(0, CU_MEM_HANDLE_TYPE_NONE)).unwrap();
    assert_ne!(h, 0);
    h
}

/// `size` bytes of reserved addresses.
#[track_caller]
pub fn reserve(size: usize) -> CUdeviceptr {
    let mut p = 0;
    // SAFETY: a valid out-pointer.
    ok(unsafe { cuMemAddressReserve(&mut p, size, 0, 0, 0) });
    assert_eq!(p as usize % G, 0);
    p
}

pub fn access(device: c_int, flags: u32) -> CUmemAccessDesc {
    CUmemAccessDesc {
        location: CUmemLocation {
            type_: CU_MEM_LOCATION_TYPE_DEVICE,
            id: device,
        },
        flags,
    }
}

pub fn set_access(ptr: CUdeviceptr, size: usize, flags: u32) -> CUresult {
    let d = access(0, flags);
    // SAFETY: one descriptor.
    unsafe { cuMemSetAccess(ptr, size, &d, 1) }
}

/// Maps `h` at `ptr` and grants device 0 read-write access.
#[track_caller]
pub fn map_rw(ptr: CUdeviceptr, size: usize, h: u64) {
    // SAFETY: softcuda's exports, called as C would call them.
    unsafe { ok(cuMemMap(ptr, size, 0, h, 0)) };
    ok(set_access(ptr, size, CU_MEM_ACCESS_FLAGS_PROT_READWRITE));
}

pub fn get_access(ptr: CUdeviceptr, device: c_int) -> Result<u64, CUresult> {
    let mut f = 99;
    let l = CUmemLocation {
        type_: CU_MEM_LOCATION_TYPE_DEVICE,
        id: device,
    };
    // SAFETY: valid pointers.
    match unsafe { cuMemGetAccess(&mut f, &l, ptr) } {
        code::SUCCESS => Ok(f),
        e => Err(e),
    }
}

pub fn write(d: CUdeviceptr, v: &[u32]) -> CUresult {
    // SAFETY: `v` is ours, `v.len()` words.
    unsafe { cuMemcpyHtoD_v2(d, v.as_ptr().cast(), v.len() * 4) }
}

pub fn read(d: CUdeviceptr, n: usize) -> Result<Vec<u32>, CUresult> {
    let mut v = vec![0u32; n];
    // SAFETY: `v` is ours, `n` words.
    match unsafe { cuMemcpyDtoH_v2(v.as_mut_ptr().cast(), d, n * 4) } {
        code::SUCCESS => Ok(v),
        e => Err(e),
    }
}

pub fn ctx() -> CUcontext {
    let mut c = null_mut();
    // SAFETY: a valid out-pointer.
    ok(unsafe { cuCtxCreate_v2(&mut c, 0, 0) });
    c
}

pub fn destroy(c: CUcontext) {
    // SAFETY: a live context.
    ok(unsafe { cuCtxDestroy_v2(c) });
}

pub fn free_mem() -> usize {
    let (mut f, mut t) = (0, 0);
    // SAFETY: valid out-pointers.
    ok(unsafe { cuMemGetInfo_v2(&mut f, &mut t) });
    f
}

pub fn release(h: u64) -> CUresult {
    // SAFETY: softcuda's export.
    unsafe { cuMemRelease(h) }
}

pub fn unmap(ptr: CUdeviceptr, size: usize) -> CUresult {
    // SAFETY: softcuda's export.
    unsafe { cuMemUnmap(ptr, size) }
}

pub fn address_free(ptr: CUdeviceptr, size: usize) -> CUresult {
    // SAFETY: softcuda's export.
    unsafe { cuMemAddressFree(ptr, size) }
}

pub fn properties(h: u64) -> Result<CUmemAllocationProp, CUresult> {
    let mut p = prop(-1, 77);
    // SAFETY: a valid out-pointer.
    match unsafe { cuMemGetAllocationPropertiesFromHandle(&mut p, h) } {
        code::SUCCESS => Ok(p),
        e => Err(e),
    }
}

/// Runs kernel `iota` writing `n` words at `buf`.
pub fn iota(n: u32, buf: CUdeviceptr) -> CUresult {
    let mut m = null_mut();
    // SAFETY: NUL-terminated PTX text.
    ok(unsafe { cuModuleLoadData(&mut m, IOTA.as_ptr().cast()) });
    let f = function(m, c"iota");
    let (mut b, mut n_) = (buf, n);
    let r = launch_kernel(
        f,
        [n.div_ceil(128), 1, 1],
        [128, 1, 1],
        0,
        null_mut(),
        &mut [(&raw mut b).cast(), (&raw mut n_).cast()],
    );
    // SAFETY: the module loaded above.
    let _ = unsafe { cuModuleUnload(m) };
    r
}

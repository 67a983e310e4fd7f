//! Helpers of the CUDA-array tests (`tests/arrays.rs`, `tests/array_copies.rs`).
#![allow(dead_code)] // each test binary uses its own subset

use crate::common::ok;
use softcuda::api::{array::*, context::*, memory::*};
use softcuda::types::*;
use std::ptr::null_mut;

pub fn ctx() -> CUcontext {
    let mut c = null_mut();
    // SAFETY: a valid out-pointer.
    ok(unsafe { cuCtxCreate_v2(&mut c, 0, 0) });
    c
}

pub fn desc3(
    w: usize,
    h: usize,
    d: usize,
    format: u32,
    ch: u32,
    flags: u32,
) -> CUDA_ARRAY3D_DESCRIPTOR {
    CUDA_ARRAY3D_DESCRIPTOR {
        Width: w,
        Height: h,
        Depth: d,
        Format: format,
        NumChannels: ch,
        Flags: flags,
    }
}

pub fn try_create(d: CUDA_ARRAY3D_DESCRIPTOR) -> Result<CUarray, CUresult> {
    let mut a = null_mut();
    // SAFETY: valid pointers.
    match unsafe { cuArray3DCreate_v2(&mut a, &d) } {
        0 => Ok(a),
        e => Err(e),
    }
}

#[track_caller]
pub fn create(d: CUDA_ARRAY3D_DESCRIPTOR) -> CUarray {
    try_create(d).expect("cuArray3DCreate")
}

pub fn destroy(a: CUarray) {
    // SAFETY: softcuda's export.
    ok(unsafe { cuArrayDestroy(a) });
}

pub fn requirements(a: CUarray) -> CUDA_ARRAY_MEMORY_REQUIREMENTS {
    let mut r = CUDA_ARRAY_MEMORY_REQUIREMENTS::default();
    // SAFETY: a valid out-pointer.
    ok(unsafe { cuArrayGetMemoryRequirements(&mut r, a, 0) });
    r
}

pub fn free_mem() -> usize {
    let (mut f, mut t) = (0, 0);
    // SAFETY: valid out-pointers.
    ok(unsafe { cuMemGetInfo_v2(&mut f, &mut t) });
    f
}

/// A `CUDA_MEMCPY3D` of `w` bytes × `h` × `d`, everything else zero.
pub fn m3(w: usize, h: usize, d: usize) -> CUDA_MEMCPY3D {
    let mut c = softcuda_zeroed_3d();
    c.WidthInBytes = w;
    c.Height = h;
    c.Depth = d;
    c
}

pub fn softcuda_zeroed_3d() -> CUDA_MEMCPY3D {
    CUDA_MEMCPY3D {
        srcXInBytes: 0,
        srcY: 0,
        srcZ: 0,
        srcLOD: 0,
        srcMemoryType: 0,
        srcHost: std::ptr::null(),
        srcDevice: 0,
        srcArray: null_mut(),
        reserved0: null_mut(),
        srcPitch: 0,
        srcHeight: 0,
        dstXInBytes: 0,
        dstY: 0,
        dstZ: 0,
        dstLOD: 0,
        dstMemoryType: 0,
        dstHost: null_mut(),
        dstDevice: 0,
        dstArray: null_mut(),
        reserved1: null_mut(),
        dstPitch: 0,
        dstHeight: 0,
        WidthInBytes: 0,
        Height: 0,
        Depth: 0,
    }
}

pub fn m2(w: usize, h: usize) -> CUDA_MEMCPY2D {
    CUDA_MEMCPY2D {
        srcXInBytes: 0,
        srcY: 0,
        srcMemoryType: 0,
        srcHost: std::ptr::null(),
        srcDevice: 0,
        srcArray: null_mut(),
        srcPitch: 0,
        dstXInBytes: 0,
        dstY: 0,
        dstMemoryType: 0,
        dstHost: null_mut(),
        dstDevice: 0,
        dstArray: null_mut(),
        dstPitch: 0,
        WidthInBytes: w,
        Height: h,
    }
}

/// Writes all of `a` (`bytes` per row, `rows` × `slices`) from `src` (tightly packed).
pub fn fill(a: CUarray, src: &[u8], row: usize, rows: usize, slices: usize) {
    let mut c = m3(row, rows, slices);
    c.srcMemoryType = CU_MEMORYTYPE_HOST;
    c.srcHost = src.as_ptr().cast();
    c.dstMemoryType = CU_MEMORYTYPE_ARRAY;
    c.dstArray = a;
    // SAFETY: a valid descriptor of live buffers.
    ok(unsafe { cuMemcpy3D_v2(&c) });
}

/// Reads all of `a` back (tightly packed).
pub fn dump(a: CUarray, row: usize, rows: usize, slices: usize) -> Vec<u8> {
    let mut out = vec![0u8; row * rows * slices];
    let mut c = m3(row, rows, slices);
    c.srcMemoryType = CU_MEMORYTYPE_ARRAY;
    c.srcArray = a;
    c.dstMemoryType = CU_MEMORYTYPE_HOST;
    c.dstHost = out.as_mut_ptr().cast();
    // SAFETY: a valid descriptor of live buffers.
    ok(unsafe { cuMemcpy3D_v2(&c) });
    out
}

pub fn pattern(n: usize, seed: u8) -> Vec<u8> {
    (0..n)
        .map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed))
        .collect()
}

//! CUDA arrays and mipmapped arrays through the C ABI: creation, descriptors,
//! memory requirements, destruction, and the 1-D copies to and from arrays
//! (`cuMemcpyHtoA`, `AtoH`, `AtoD`, `DtoA`, `AtoA` and the `Async` forms). The
//! model is `crate::array`; 2-D/3-D copies with arrays go through `crate::copy`
//! like every other 2-D/3-D copy.

use super::out;
use crate::copy::copy3d;
use crate::state;
use crate::state::R;
use crate::stream;
use crate::types::*;
use core::ffi::{c_uint, c_void};

/// `cuArrayCreate_v2`: a 1-D (`Height` 0) or 2-D array.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuArrayCreate_v2(
    handle: *mut CUarray,
    desc: *const CUDA_ARRAY_DESCRIPTOR,
) -> CUresult {
    api!("cuArrayCreate", {
        if handle.is_null() || desc.is_null() {
            return Err(code::INVALID_VALUE);
        }
        // SAFETY: a valid descriptor, by the C contract.
        let d = unsafe { *desc };
        let d3 = CUDA_ARRAY3D_DESCRIPTOR {
            Width: d.Width,
            Height: d.Height,
            Depth: 0,
            Format: d.Format,
            NumChannels: d.NumChannels,
            Flags: 0,
        };
        let mut s = state::state();
        let h = crate::array::create(&mut s, &d3)?;
        out(handle, h)
    })
}

/// `cuArray3DCreate_v2`: a 1-D, 2-D, 3-D, layered or cubemap array.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuArray3DCreate_v2(
    handle: *mut CUarray,
    desc: *const CUDA_ARRAY3D_DESCRIPTOR,
) -> CUresult {
    api!("cuArray3DCreate", {
        if handle.is_null() || desc.is_null() {
            return Err(code::INVALID_VALUE);
        }
        // SAFETY: a valid descriptor, by the C contract.
        let d = unsafe { *desc };
        let mut s = state::state();
        let h = crate::array::create(&mut s, &d)?;
        out(handle, h)
    })
}

/// `cuArrayDestroy`: waits for the current context's queued work first, like
/// `cuMemFree`. A mipmapped array's level is `INVALID_HANDLE`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuArrayDestroy(h: CUarray) -> CUresult {
    api!("cuArrayDestroy", {
        state::current_ctx(&state::state())?;
        stream::drain_current();
        let mut s = state::state();
        crate::array::destroy(&mut s, h)
    })
}

/// `cuArrayGetDescriptor_v2`: of a 1-D or 2-D array (a 3-D, layered or cubemap
/// array is `INVALID_VALUE`: see `cuArray3DGetDescriptor`).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuArrayGetDescriptor_v2(
    desc: *mut CUDA_ARRAY_DESCRIPTOR,
    h: CUarray,
) -> CUresult {
    api!("cuArrayGetDescriptor", {
        state::current_ctx(&state::state())?;
        if desc.is_null() {
            return Err(code::INVALID_VALUE);
        }
        let d = crate::array::shape(h)?.desc;
        if d.Depth != 0 {
            return Err(code::INVALID_VALUE);
        }
        out(
            desc,
            CUDA_ARRAY_DESCRIPTOR {
                Width: d.Width,
                Height: d.Height,
                Format: d.Format,
                NumChannels: d.NumChannels,
            },
        )
    })
}

/// `cuArray3DGetDescriptor_v2`: the descriptor the array was created with (a
/// mipmap level's: its own dimensions).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuArray3DGetDescriptor_v2(
    desc: *mut CUDA_ARRAY3D_DESCRIPTOR,
    h: CUarray,
) -> CUresult {
    api!("cuArray3DGetDescriptor", {
        state::current_ctx(&state::state())?;
        if desc.is_null() {
            return Err(code::INVALID_VALUE);
        }
        out(desc, crate::array::shape(h)?.desc)
    })
}

/// Checks `device` (an ordinal) and writes `size` bytes, aligned to
/// `crate::array::ALIGN`, to `req`.
fn requirements(req: *mut CUDA_ARRAY_MEMORY_REQUIREMENTS, device: CUdevice, size: u64) -> R {
    if req.is_null() {
        return Err(code::INVALID_VALUE);
    }
    super::device::device(&state::state(), device)?;
    out(
        req,
        CUDA_ARRAY_MEMORY_REQUIREMENTS {
            size: usize::try_from(size).map_err(|_| code::INVALID_VALUE)?,
            alignment: crate::array::ALIGN as usize,
            reserved: [0; 4],
        },
    )
}

/// `cuArrayGetMemoryRequirements`: the bytes the array is accounted for.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuArrayGetMemoryRequirements(
    req: *mut CUDA_ARRAY_MEMORY_REQUIREMENTS,
    h: CUarray,
    device: CUdevice,
) -> CUresult {
    api!("cuArrayGetMemoryRequirements", {
        state::current_ctx(&state::state())?;
        let shape = crate::array::shape(h)?;
        requirements(req, device, crate::array::accounted(&shape))
    })
}

/// `cuMipmappedArrayCreate`: `levels` levels (clamped to [1, 1 + floor(log2 of the
/// largest dimension)], as documented), each halving the one before.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuMipmappedArrayCreate(
    handle: *mut CUmipmappedArray,
    desc: *const CUDA_ARRAY3D_DESCRIPTOR,
    levels: c_uint,
) -> CUresult {
    api!("cuMipmappedArrayCreate", {
        if handle.is_null() || desc.is_null() {
            return Err(code::INVALID_VALUE);
        }
        // SAFETY: a valid descriptor, by the C contract.
        let d = unsafe { *desc };
        let mut s = state::state();
        let h = crate::array::create_mipmapped(&mut s, &d, levels)?;
        out(handle, h)
    })
}

/// `cuMipmappedArrayGetLevel`: the level's array, owned by the mipmapped array.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuMipmappedArrayGetLevel(
    level_array: *mut CUarray,
    h: CUmipmappedArray,
    level: c_uint,
) -> CUresult {
    api!("cuMipmappedArrayGetLevel", {
        state::current_ctx(&state::state())?;
        if level_array.is_null() {
            return Err(code::INVALID_VALUE);
        }
        out(level_array, crate::array::level(h, level)?)
    })
}

/// `cuMipmappedArrayDestroy`: with its levels; waits for the current context's
/// queued work first.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuMipmappedArrayDestroy(h: CUmipmappedArray) -> CUresult {
    api!("cuMipmappedArrayDestroy", {
        state::current_ctx(&state::state())?;
        stream::drain_current();
        let mut s = state::state();
        crate::array::destroy_mipmapped(&mut s, h)
    })
}

/// `cuMipmappedArrayGetMemoryRequirements`: the bytes of all its levels.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuMipmappedArrayGetMemoryRequirements(
    req: *mut CUDA_ARRAY_MEMORY_REQUIREMENTS,
    h: CUmipmappedArray,
    device: CUdevice,
) -> CUresult {
    api!("cuMipmappedArrayGetMemoryRequirements", {
        state::current_ctx(&state::state())?;
        let (_, total) = crate::array::mipmapped_requirements(h)?;
        requirements(req, device, total)
    })
}

/// One end of a 1-D copy with an array.
#[derive(Clone, Copy)]
enum End {
    Host(*const c_void),
    Device(CUdeviceptr),
    /// An array and a byte offset into its first row.
    Array(CUarray, usize),
}

/// The 1-D copy of `n` bytes from `src` to `dst` as a `CUDA_MEMCPY3D` of one row
/// (an array end: bytes `[offset, offset + n)` of its first row, of its first
/// layer), checked and queued on `stream_h` like any 3-D copy.
fn copy_1d(dst: End, src: End, n: usize, stream_h: CUstream) -> R {
    let null = core::ptr::null_mut();
    let mut c = crate::copy::linear_copy(0, false, 0, false, n);
    match src {
        End::Host(p) => (c.srcMemoryType, c.srcHost) = (CU_MEMORYTYPE_HOST, p),
        End::Device(d) => (c.srcMemoryType, c.srcDevice) = (CU_MEMORYTYPE_DEVICE, d),
        End::Array(a, off) => {
            (c.srcMemoryType, c.srcArray, c.srcXInBytes) = (CU_MEMORYTYPE_ARRAY, a, off);
            c.srcHost = null;
        }
    }
    match dst {
        End::Host(p) => (c.dstMemoryType, c.dstHost) = (CU_MEMORYTYPE_HOST, p.cast_mut()),
        End::Device(d) => (c.dstMemoryType, c.dstDevice) = (CU_MEMORYTYPE_DEVICE, d),
        End::Array(a, off) => {
            (c.dstMemoryType, c.dstArray, c.dstXInBytes) = (CU_MEMORYTYPE_ARRAY, a, off);
            c.dstHost = null;
        }
    }
    copy3d(c, stream_h)
}

fn null_stream() -> CUstream {
    core::ptr::null_mut()
}

/// `cuMemcpyHtoA_v2`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuMemcpyHtoA_v2(
    dst: CUarray,
    dst_offset: usize,
    src: *const c_void,
    n: usize,
) -> CUresult {
    api!("cuMemcpyHtoA", {
        copy_1d(
            End::Array(dst, dst_offset),
            End::Host(src),
            n,
            null_stream(),
        )
    })
}

/// `cuMemcpyHtoAAsync_v2`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuMemcpyHtoAAsync_v2(
    dst: CUarray,
    dst_offset: usize,
    src: *const c_void,
    n: usize,
    s: CUstream,
) -> CUresult {
    api!("cuMemcpyHtoAAsync", {
        copy_1d(End::Array(dst, dst_offset), End::Host(src), n, s)
    })
}

/// `cuMemcpyAtoH_v2`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuMemcpyAtoH_v2(
    dst: *mut c_void,
    src: CUarray,
    src_offset: usize,
    n: usize,
) -> CUresult {
    api!("cuMemcpyAtoH", {
        copy_1d(
            End::Host(dst),
            End::Array(src, src_offset),
            n,
            null_stream(),
        )
    })
}

/// `cuMemcpyAtoHAsync_v2`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuMemcpyAtoHAsync_v2(
    dst: *mut c_void,
    src: CUarray,
    src_offset: usize,
    n: usize,
    s: CUstream,
) -> CUresult {
    api!("cuMemcpyAtoHAsync", {
        copy_1d(End::Host(dst), End::Array(src, src_offset), n, s)
    })
}

/// `cuMemcpyAtoD_v2`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuMemcpyAtoD_v2(
    dst: CUdeviceptr,
    src: CUarray,
    src_offset: usize,
    n: usize,
) -> CUresult {
    api!("cuMemcpyAtoD", {
        copy_1d(
            End::Device(dst),
            End::Array(src, src_offset),
            n,
            null_stream(),
        )
    })
}

/// `cuMemcpyDtoA_v2`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuMemcpyDtoA_v2(
    dst: CUarray,
    dst_offset: usize,
    src: CUdeviceptr,
    n: usize,
) -> CUresult {
    api!("cuMemcpyDtoA", {
        copy_1d(
            End::Array(dst, dst_offset),
            End::Device(src),
            n,
            null_stream(),
        )
    })
}

/// `cuMemcpyAtoA_v2`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuMemcpyAtoA_v2(
    dst: CUarray,
    dst_offset: usize,
    src: CUarray,
    src_offset: usize,
    n: usize,
) -> CUresult {
    api!("cuMemcpyAtoA", {
        copy_1d(
            End::Array(dst, dst_offset),
            End::Array(src, src_offset),
            n,
            null_stream(),
        )
    })
}

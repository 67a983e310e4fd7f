//! Memory pools shared between processes: `cuMemPoolExportToShareableHandle`,
//! `cuMemPoolImportFromShareableHandle`, `cuMemPoolExportPointer` and
//! `cuMemPoolImportPointer`. The model (pool files, the export data's layout,
//! imported pools and pointers) is `crate::ipc::pool`; freeing an imported pointer
//! is `cuMemFree` (`crate::api::memory`) or `cuMemFreeAsync` (`crate::api::pool`).
//! Linux only: elsewhere each is `CUDA_ERROR_NOT_SUPPORTED`.

use super::out;
use super::pool::CUmemoryPool;
use crate::ipc;
use crate::pool::pools;
use crate::state::{self, R};
use crate::types::*;
use core::ffi::{c_int, c_ulonglong, c_void};
use std::os::fd::IntoRawFd;

/// `CUmemPoolPtrExportData`: 64 opaque bytes naming an allocation of an exported
/// pool (softcuda's layout: `crate::ipc::pool`).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CUmemPoolPtrExportData {
    /// The bytes.
    pub reserved: [u8; 64],
}

/// A handle type for export or import: POSIX file descriptors (Linux); Win32 and
/// fabric handles `NOT_SUPPORTED`; anything else `INVALID_VALUE`.
fn posix_fd(t: CUmemAllocationHandleType) -> R {
    match t {
        CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR if ipc::SUPPORTED => Ok(()),
        CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR
        | CU_MEM_HANDLE_TYPE_WIN32
        | CU_MEM_HANDLE_TYPE_WIN32_KMT
        | CU_MEM_HANDLE_TYPE_FABRIC => Err(code::NOT_SUPPORTED),
        _ => Err(code::INVALID_VALUE),
    }
}

/// `cuMemPoolExportToShareableHandle`: writes to `handle_out` (an `int`) a new
/// close-on-exec descriptor of the pool's memory file, the caller's to close.
/// The pool must be a live pool created with `CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR`
/// and `flags` 0 (else `INVALID_VALUE`); other handle types as `posix_fd` says.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuMemPoolExportToShareableHandle(
    handle_out: *mut c_void,
    pool: CUmemoryPool,
    handle_type: CUmemAllocationHandleType,
    flags: c_ulonglong,
) -> CUresult {
    api!("cuMemPoolExportToShareableHandle", {
        state::require_init(&state::state())?;
        posix_fd(handle_type)?;
        if handle_out.is_null() || flags != 0 {
            return Err(code::INVALID_VALUE);
        }
        let file = {
            let mut p = pools();
            let (_, pl) = p.live(pool)?;
            pl.file.clone().ok_or(code::INVALID_VALUE)?
        };
        let fd = file.export()?;
        out(handle_out.cast::<c_int>(), fd.into_raw_fd())
    })
}

/// `cuMemPoolImportFromShareableHandle`: `handle` is the descriptor (cast to a
/// pointer) of a pool file, from `cuMemPoolExportToShareableHandle` in this or
/// another softcuda process. The descriptor stays the caller's (softcuda keeps a
/// duplicate). The imported pool only imports pointers and is destroyed with
/// `cuMemPoolDestroy`; allocating from it, or any other pool call, is
/// `INVALID_VALUE`. A descriptor that is no pool file, `flags` ≠ 0: `INVALID_VALUE`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuMemPoolImportFromShareableHandle(
    pool_out: *mut CUmemoryPool,
    handle: *mut c_void,
    handle_type: CUmemAllocationHandleType,
    flags: c_ulonglong,
) -> CUresult {
    api!("cuMemPoolImportFromShareableHandle", {
        state::require_init(&state::state())?;
        posix_fd(handle_type)?;
        let fd = c_int::try_from(handle as usize as isize).map_err(|_| code::INVALID_VALUE)?;
        if pool_out.is_null() || flags != 0 || fd < 0 {
            return Err(code::INVALID_VALUE);
        }
        let h = ipc::pool::import_pool(fd)?;
        out(pool_out, h)
    })
}

/// `cuMemPoolExportPointer`: `ptr` must be the base of an allocation of an
/// exportable pool whose free has not been called (else `INVALID_VALUE`); the data
/// names the pool file, the allocation's range in it and its id.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuMemPoolExportPointer(
    share_data_out: *mut CUmemPoolPtrExportData,
    ptr: CUdeviceptr,
) -> CUresult {
    api!("cuMemPoolExportPointer", {
        state::require_init(&state::state())?;
        if !ipc::SUPPORTED {
            return Err(code::NOT_SUPPORTED);
        }
        if share_data_out.is_null() {
            return Err(code::INVALID_VALUE);
        }
        let d = ipc::pool::export_pointer(ptr)?;
        out(
            share_data_out,
            CUmemPoolPtrExportData {
                reserved: d.encode(),
            },
        )
    })
}

/// `cuMemPoolImportPointer`: maps the allocation `share_data` names from imported
/// pool `pool` into this process: device memory of the current context, the
/// exporter's pages. The same data again in the same context: the same address,
/// one more import (each undone by one `cuMemFree` or `cuMemFreeAsync`). A pool
/// that is no live imported pool, data that is not softcuda's pool-pointer data,
/// names another pool or a range outside its file: `INVALID_VALUE`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuMemPoolImportPointer(
    ptr_out: *mut CUdeviceptr,
    pool: CUmemoryPool,
    share_data: *mut CUmemPoolPtrExportData,
) -> CUresult {
    api!("cuMemPoolImportPointer", {
        let (ctx, device) = {
            let s = state::state();
            let ctx = state::current_ctx(&s)?;
            (ctx, s.context(ctx)?.device)
        };
        if !ipc::SUPPORTED {
            return Err(code::NOT_SUPPORTED);
        }
        if ptr_out.is_null() || share_data.is_null() {
            return Err(code::INVALID_VALUE);
        }
        // SAFETY: a valid `CUmemPoolPtrExportData`, by the C contract (non-null).
        let data = unsafe { *share_data };
        let base = ipc::pool::import_pointer(pool, &data.reserved, ctx, device)?;
        out(ptr_out, base)
    })
}

//! Virtual memory management exports: physical allocations (`cuMemCreate`,
//! `cuMemRelease`, `cuMemRetainAllocationHandle`,
//! `cuMemGetAllocationPropertiesFromHandle`, `cuMemGetAllocationGranularity`),
//! shareable handles (`cuMemExportToShareableHandle`,
//! `cuMemImportFromShareableHandle`: POSIX file descriptors), reservations
//! (`cuMemAddressReserve`, `cuMemAddressFree`) and mappings (`cuMemMap`,
//! `cuMemSetAccess`, `cuMemGetAccess`, `cuMemUnmap`). The bookkeeping, and how
//! softcuda does it (memory files mapped into its device address space), is
//! `crate::vmm`. Linux only: elsewhere each is `CUDA_ERROR_NOT_SUPPORTED`.
//!
//! Every entry point holds the VMM lock for its whole body, taken before the state
//! lock (see `crate::vmm` for the lock order).

use super::out;
use crate::graph;
use crate::state::{self, R, State};
use crate::types::*;
use crate::vmm::{self, GRANULARITY, granular};
use core::ffi::{c_int, c_void};

/// `NOT_SUPPORTED` where softcuda has no virtual memory management.
fn supported() -> R {
    if vmm::SUPPORTED {
        Ok(())
    } else {
        Err(code::NOT_SUPPORTED)
    }
}

/// A device ordinal, or `INVALID_DEVICE`.
fn device_index(s: &State, id: c_int) -> R<usize> {
    usize::try_from(id)
        .ok()
        .filter(|&d| d < s.config.devices.len())
        .ok_or(code::INVALID_DEVICE)
}

/// The device a `CUmemLocation` names: a device location with a valid ordinal (host
/// locations are not supported).
fn location(s: &State, l: &CUmemLocation) -> R<usize> {
    match l.type_ {
        CU_MEM_LOCATION_TYPE_DEVICE => device_index(s, l.id),
        CU_MEM_LOCATION_TYPE_HOST
        | CU_MEM_LOCATION_TYPE_HOST_NUMA
        | CU_MEM_LOCATION_TYPE_HOST_NUMA_CURRENT => Err(code::NOT_SUPPORTED),
        _ => Err(code::INVALID_VALUE),
    }
}

/// The current context if it lives, else 0: the owner recorded for mapped memory
/// entering the memory map (VMM memory belongs to no context; see `crate::vmm`).
fn current_ctx(s: &State) -> u64 {
    state::current()
        .filter(|c| s.contexts.contains_key(c))
        .unwrap_or(0)
}

/// Checks one shareable handle type (export, import): POSIX file descriptors only.
fn one_handle_type(t: CUmemAllocationHandleType) -> R {
    match t {
        CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR => Ok(()),
        CU_MEM_HANDLE_TYPE_WIN32 | CU_MEM_HANDLE_TYPE_WIN32_KMT | CU_MEM_HANDLE_TYPE_FABRIC => {
            Err(code::NOT_SUPPORTED)
        }
        _ => Err(code::INVALID_VALUE),
    }
}

/// Reads and checks allocation properties: pinned memory on a device, requesting no
/// shareable handle type or POSIX file descriptors. `allocFlags` (compression, RDMA,
/// usage hints) are ignored, as a device without those features does. Returns the
/// device and the requested handle types.
fn allocation_prop(s: &State, prop: *const CUmemAllocationProp) -> R<(usize, u32)> {
    if prop.is_null() {
        return Err(code::INVALID_VALUE);
    }
    // SAFETY: a valid `CUmemAllocationProp`, by the C contract.
    let p = unsafe { *prop };
    if p.type_ != CU_MEM_ALLOCATION_TYPE_PINNED {
        return Err(code::INVALID_VALUE);
    }
    let device = location(s, &p.location)?;
    let t = p.requestedHandleTypes;
    let known = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR
        | CU_MEM_HANDLE_TYPE_WIN32
        | CU_MEM_HANDLE_TYPE_WIN32_KMT
        | CU_MEM_HANDLE_TYPE_FABRIC;
    if t & !known != 0 {
        return Err(code::INVALID_VALUE);
    }
    if t & !CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR != 0 {
        return Err(code::NOT_SUPPORTED);
    }
    Ok((device, t))
}

/// `cuMemGetAllocationGranularity`: 2 MiB, the minimum and the recommended alike.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuMemGetAllocationGranularity(
    granularity: *mut usize,
    prop: *const CUmemAllocationProp,
    option: CUmemAllocationGranularity_flags,
) -> CUresult {
    api!("cuMemGetAllocationGranularity", {
        supported()?;
        let _v = vmm::lock();
        let s = state::state();
        state::require_init(&s)?;
        if granularity.is_null() {
            return Err(code::INVALID_VALUE);
        }
        allocation_prop(&s, prop)?;
        if !matches!(
            option,
            CU_MEM_ALLOC_GRANULARITY_MINIMUM | CU_MEM_ALLOC_GRANULARITY_RECOMMENDED
        ) {
            return Err(code::INVALID_VALUE);
        }
        out(granularity, GRANULARITY as usize)
    })
}

/// `cuMemCreate`: physical memory of `size` bytes (a multiple of the granularity) on
/// the device of `prop`, counted against its memory.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuMemCreate(
    handle: *mut CUmemGenericAllocationHandle,
    size: usize,
    prop: *const CUmemAllocationProp,
    flags: u64,
) -> CUresult {
    api!("cuMemCreate", {
        supported()?;
        if handle.is_null() || flags != 0 {
            return Err(code::INVALID_VALUE);
        }
        graph::capture::unsafe_call()?;
        let mut v = vmm::lock();
        let mut s = state::state();
        state::require_init(&s)?;
        let (device, types) = allocation_prop(&s, prop)?;
        if !granular(size as u64) {
            return Err(code::INVALID_VALUE);
        }
        let h = v.create(&mut s, device, size as u64, types)?;
        out(handle, h)
    })
}

/// `cuMemRelease`: drops one hold on the handle (which is invalid once none is left);
/// the memory goes once it is also unmapped everywhere.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuMemRelease(handle: CUmemGenericAllocationHandle) -> CUresult {
    api!("cuMemRelease", {
        supported()?;
        graph::capture::unsafe_call()?;
        let mut v = vmm::lock();
        state::require_init(&state::state())?;
        v.release(handle)
    })
}

/// `cuMemAddressReserve`: `size` bytes of device addresses (a multiple of the
/// granularity), aligned to `alignment` (0: the granularity; else a power of two
/// that is a multiple of it). The hint `addr` is not followed.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuMemAddressReserve(
    ptr: *mut CUdeviceptr,
    size: usize,
    alignment: usize,
    _addr: CUdeviceptr,
    flags: u64,
) -> CUresult {
    api!("cuMemAddressReserve", {
        supported()?;
        if ptr.is_null() || flags != 0 || !granular(size as u64) {
            return Err(code::INVALID_VALUE);
        }
        let align = match alignment as u64 {
            0 => GRANULARITY,
            a if a.is_power_of_two() && a.is_multiple_of(GRANULARITY) => a,
            _ => return Err(code::INVALID_VALUE),
        };
        let mut v = vmm::lock();
        state::require_init(&state::state())?;
        let base = v.reserve(size as u64, align)?;
        out(ptr, base)
    })
}

/// `cuMemAddressFree`: exactly one reservation, with nothing mapped in it any more.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuMemAddressFree(ptr: CUdeviceptr, size: usize) -> CUresult {
    api!("cuMemAddressFree", {
        supported()?;
        let mut v = vmm::lock();
        state::require_init(&state::state())?;
        v.free_reservation(ptr, size as u64)
    })
}

/// `cuMemMap`: the first `size` bytes of the allocation at `ptr` (granular, inside
/// one reservation, overlapping no mapping); `offset` must be 0. Inaccessible until
/// `cuMemSetAccess`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuMemMap(
    ptr: CUdeviceptr,
    size: usize,
    offset: usize,
    handle: CUmemGenericAllocationHandle,
    flags: u64,
) -> CUresult {
    api!("cuMemMap", {
        supported()?;
        if offset != 0 || flags != 0 {
            return Err(code::INVALID_VALUE);
        }
        let mut v = vmm::lock();
        state::require_init(&state::state())?;
        v.map(ptr, size as u64, handle)
    })
}

/// `cuMemSetAccess`: over whole mappings, read-write access (`PROT_READWRITE`) or
/// none (`PROT_NONE`) per device; read-only access is not supported.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuMemSetAccess(
    ptr: CUdeviceptr,
    size: usize,
    desc: *const CUmemAccessDesc,
    count: usize,
) -> CUresult {
    api!("cuMemSetAccess", {
        supported()?;
        if desc.is_null() || count == 0 {
            return Err(code::INVALID_VALUE);
        }
        let mut v = vmm::lock();
        let s = state::state();
        state::require_init(&s)?;
        let mut changes = Vec::new();
        for i in 0..count {
            // SAFETY: `count` descriptors, by the C contract.
            let d = unsafe { *desc.add(i) };
            let device = location(&s, &d.location)?;
            changes.push(match d.flags {
                CU_MEM_ACCESS_FLAGS_PROT_NONE => (device, false),
                CU_MEM_ACCESS_FLAGS_PROT_READWRITE => (device, true),
                CU_MEM_ACCESS_FLAGS_PROT_READ => return Err(code::NOT_SUPPORTED),
                _ => return Err(code::INVALID_VALUE),
            });
        }
        let ctx = current_ctx(&s);
        drop(s);
        v.set_access(ptr, size as u64, &changes, ctx)
    })
}

/// `cuMemGetAccess`: `PROT_READWRITE` if the location's device has access to the
/// mapping holding `ptr`, else `PROT_NONE`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuMemGetAccess(
    flags: *mut u64,
    location_: *const CUmemLocation,
    ptr: CUdeviceptr,
) -> CUresult {
    api!("cuMemGetAccess", {
        supported()?;
        if flags.is_null() || location_.is_null() {
            return Err(code::INVALID_VALUE);
        }
        let v = vmm::lock();
        let s = state::state();
        state::require_init(&s)?;
        // SAFETY: a valid `CUmemLocation`, by the C contract.
        let device = location(&s, &unsafe { *location_ })?;
        drop(s);
        let rw = v.access(ptr, device)?;
        out(
            flags,
            u64::from(if rw {
                CU_MEM_ACCESS_FLAGS_PROT_READWRITE
            } else {
                CU_MEM_ACCESS_FLAGS_PROT_NONE
            }),
        )
    })
}

/// `cuMemUnmap`: whole mappings; waits for every running operation that may touch
/// them (not for queued work, which then finds them gone: an illegal address).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuMemUnmap(ptr: CUdeviceptr, size: usize) -> CUresult {
    api!("cuMemUnmap", {
        supported()?;
        graph::capture::unsafe_call()?;
        let mut v = vmm::lock();
        let ctx = {
            let s = state::state();
            state::require_init(&s)?;
            current_ctx(&s)
        };
        v.unmap(ptr, size as u64, ctx)
    })
}

/// `cuMemRetainAllocationHandle`: the handle of the allocation mapped at `addr`,
/// held once more (to be released with `cuMemRelease`).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuMemRetainAllocationHandle(
    handle: *mut CUmemGenericAllocationHandle,
    addr: *mut c_void,
) -> CUresult {
    api!("cuMemRetainAllocationHandle", {
        supported()?;
        if handle.is_null() {
            return Err(code::INVALID_VALUE);
        }
        let mut v = vmm::lock();
        state::require_init(&state::state())?;
        let h = v.retain(addr as u64)?;
        out(handle, h)
    })
}

/// `cuMemGetAllocationPropertiesFromHandle`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuMemGetAllocationPropertiesFromHandle(
    prop: *mut CUmemAllocationProp,
    handle: CUmemGenericAllocationHandle,
) -> CUresult {
    api!("cuMemGetAllocationPropertiesFromHandle", {
        supported()?;
        if prop.is_null() {
            return Err(code::INVALID_VALUE);
        }
        let v = vmm::lock();
        state::require_init(&state::state())?;
        let p = v.properties(handle)?;
        out(
            prop,
            CUmemAllocationProp {
                type_: CU_MEM_ALLOCATION_TYPE_PINNED,
                requestedHandleTypes: p.handle_types,
                location: CUmemLocation {
                    type_: CU_MEM_LOCATION_TYPE_DEVICE,
                    id: c_int::try_from(p.device).map_err(|_| code::INVALID_VALUE)?,
                },
                win32HandleMetaData: core::ptr::null_mut(),
                allocFlags: CUmemAllocationProp_allocFlags::default(),
            },
        )
    })
}

/// `cuMemExportToShareableHandle`: a new POSIX file descriptor (an `int` written to
/// `shareable`; close-on-exec, the caller's to close) for memory created with that
/// handle type requested.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuMemExportToShareableHandle(
    shareable: *mut c_void,
    handle: CUmemGenericAllocationHandle,
    handle_type: CUmemAllocationHandleType,
    flags: u64,
) -> CUresult {
    api!("cuMemExportToShareableHandle", {
        supported()?;
        if shareable.is_null() || flags != 0 {
            return Err(code::INVALID_VALUE);
        }
        one_handle_type(handle_type)?;
        let v = vmm::lock();
        state::require_init(&state::state())?;
        let fd = v.export_fd(handle)?;
        out(shareable.cast::<c_int>(), fd)
    })
}

/// `cuMemImportFromShareableHandle`: `os_handle` is a POSIX file descriptor cast to a
/// pointer, as CUDA passes it; it must be softcuda VMM memory (exported by this
/// process or another softcuda process). The caller keeps its descriptor.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuMemImportFromShareableHandle(
    handle: *mut CUmemGenericAllocationHandle,
    os_handle: *mut c_void,
    handle_type: CUmemAllocationHandleType,
) -> CUresult {
    api!("cuMemImportFromShareableHandle", {
        supported()?;
        if handle.is_null() {
            return Err(code::INVALID_VALUE);
        }
        one_handle_type(handle_type)?;
        let fd = c_int::try_from(os_handle as usize).map_err(|_| code::INVALID_VALUE)?;
        let mut v = vmm::lock();
        let devices = {
            let s = state::state();
            state::require_init(&s)?;
            s.config.devices.len()
        };
        let h = v.import_fd(fd, devices)?;
        out(handle, h)
    })
}

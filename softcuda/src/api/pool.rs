//! Stream-ordered memory exports: memory pools (`cuMemPool*`, `cuDevice{Get,Set}MemPool`,
//! `cuDeviceGetDefaultMemPool`) and allocation and free ordered on a stream
//! (`cuMemAllocAsync`, `cuMemAllocFromPoolAsync`, `cuMemFreeAsync`). The pools
//! themselves — blocks, mapping, release — are `crate::pool`.

use super::out;
pub use crate::pool::CUmemoryPool;
use crate::pool::*;
use crate::state::{self, Alloc, AllocKind, R, State};
use crate::stream::{self, Work};
use crate::types::*;
use core::ffi::{c_int, c_uint, c_void};

/// Allocates `size` bytes from pool `pool` (the current pool of the context's device
/// if `None`), mapped when `stream` reaches the allocation.
fn alloc_async(dptr: *mut CUdeviceptr, size: usize, pool: Option<CUmemoryPool>, h: CUstream) -> R {
    if dptr.is_null() || size == 0 {
        return Err(code::INVALID_VALUE);
    }
    let ctx = state::current_ctx(&state::state())?;
    let target = stream::target(ctx, h)?;
    crate::graph::capture::refuse_on(h)?;
    let (base, b, device) = {
        let mut s = state::state();
        let device = s.context(ctx)?.device;
        let devices = s.config.devices.len();
        let mut p = pools();
        let pid = match pool {
            Some(h) => {
                let (pid, pool) = p.live(h)?;
                if pool.device != device && pool.access.get(device).copied() != Some(PROT_READWRITE)
                {
                    return Err(code::INVALID_VALUE);
                }
                pid
            }
            None => p.current_of(device, devices),
        };
        let pool_device = p.pools.get(&pid).map_or(device, |p| p.device);
        let (base, b) = take(&mut s, &mut p, pid, size as u64)?;
        (base, b, pool_device)
    };
    out(dptr, base)?;
    let map = Box::new(move || {
        // Only if not given back meanwhile (a free on another stream, unordered, may
        // have run first): the pools' lock is held while mapping, as while unmapping.
        let p = pools();
        if p.blocks.get(&base).is_some_and(|x| x.id == b.id) {
            state::memory_mut().insert(
                base,
                Alloc {
                    size: b.len,
                    ctx,
                    device,
                    kind: AllocKind::Device,
                    id: b.id,
                    reach: state::Reach::Pool(b.pool),
                },
            );
        }
        Ok(())
    });
    target.run(Work::Op(map))
}

/// `cuMemAllocAsync`: from the current pool of the context's device.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuMemAllocAsync(
    dptr: *mut CUdeviceptr,
    size: usize,
    stream: CUstream,
) -> CUresult {
    api!("cuMemAllocAsync", { alloc_async(dptr, size, None, stream) })
}

/// `cuMemAllocFromPoolAsync`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuMemAllocFromPoolAsync(
    dptr: *mut CUdeviceptr,
    size: usize,
    pool: CUmemoryPool,
    stream: CUstream,
) -> CUresult {
    api!("cuMemAllocFromPoolAsync", {
        alloc_async(dptr, size, Some(pool), stream)
    })
}

/// `cuMemFreeAsync`: `ptr` must be the address of a pool allocation not yet freed,
/// or of a pointer imported from a pool (`cuMemPoolImportPointer`) not freed as
/// often as imported: its last free unmaps it when the stream reaches the free.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuMemFreeAsync(ptr: CUdeviceptr, stream: CUstream) -> CUresult {
    api!("cuMemFreeAsync", {
        let ctx = state::current_ctx(&state::state())?;
        let target = stream::target(ctx, stream)?;
        crate::graph::capture::refuse_on(stream)?;
        if let Some(last) = crate::ipc::pool::release(ptr) {
            if !last? {
                return Ok(());
            }
            return target.run(Work::Op(Box::new(move || {
                crate::ipc::pool::unmap_now(ptr);
                Ok(())
            })));
        }
        {
            let mut p = pools();
            let b = p.blocks.get_mut(&ptr).ok_or(code::INVALID_VALUE)?;
            if b.freeing {
                return Err(code::INVALID_VALUE);
            }
            b.freeing = true;
        }
        target.run(Work::Op(Box::new(move || {
            give_back(ptr);
            Ok(())
        })))
    })
}

/// A device ordinal, or `INVALID_DEVICE`.
fn device_index(s: &State, dev: CUdevice) -> R<usize> {
    usize::try_from(dev)
        .ok()
        .filter(|&d| d < s.config.devices.len())
        .ok_or(code::INVALID_DEVICE)
}

/// `cuDeviceGetDefaultMemPool`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuDeviceGetDefaultMemPool(
    pool: *mut CUmemoryPool,
    dev: CUdevice,
) -> CUresult {
    api!("cuDeviceGetDefaultMemPool", {
        let s = state::state();
        state::require_init(&s)?;
        let d = device_index(&s, dev)?;
        let id = pools().default_of(d, s.config.devices.len());
        out(pool, handle(id))
    })
}

/// `cuDeviceGetMemPool`: the device's current pool.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuDeviceGetMemPool(pool: *mut CUmemoryPool, dev: CUdevice) -> CUresult {
    api!("cuDeviceGetMemPool", {
        let s = state::state();
        state::require_init(&s)?;
        let d = device_index(&s, dev)?;
        let id = pools().current_of(d, s.config.devices.len());
        out(pool, handle(id))
    })
}

/// `cuDeviceSetMemPool`: a pool located on `dev`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuDeviceSetMemPool(dev: CUdevice, pool: CUmemoryPool) -> CUresult {
    api!("cuDeviceSetMemPool", {
        let s = state::state();
        state::require_init(&s)?;
        let d = device_index(&s, dev)?;
        let mut p = pools();
        let (id, pool) = p.live(pool)?;
        if pool.device != d {
            return Err(code::INVALID_DEVICE);
        }
        p.current.insert(d, id);
        Ok(())
    })
}

/// `cuMemPoolCreate`: pinned device memory; handle types none, or (Linux) POSIX
/// file descriptors: an exportable pool (`crate::ipc::pool`). Win32 and fabric
/// handles, host locations: `NOT_SUPPORTED`; unknown handle-type bits:
/// `INVALID_VALUE`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuMemPoolCreate(
    pool: *mut CUmemoryPool,
    props: *const CUmemPoolProps,
) -> CUresult {
    api!("cuMemPoolCreate", {
        if pool.is_null() || props.is_null() {
            return Err(code::INVALID_VALUE);
        }
        // SAFETY: a valid `CUmemPoolProps`, by the C contract.
        let props = unsafe { *props };
        let s = state::state();
        state::require_init(&s)?;
        if props.allocType != CU_MEM_ALLOCATION_TYPE_PINNED {
            return Err(code::INVALID_VALUE);
        }
        let known = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR
            | CU_MEM_HANDLE_TYPE_WIN32
            | CU_MEM_HANDLE_TYPE_WIN32_KMT
            | CU_MEM_HANDLE_TYPE_FABRIC;
        if props.handleTypes & !known != 0 {
            return Err(code::INVALID_VALUE);
        }
        let exportable = props.handleTypes == CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
        if props.location.type_ != CU_MEM_LOCATION_TYPE_DEVICE
            || !(props.handleTypes == CU_MEM_HANDLE_TYPE_NONE
                || exportable && crate::ipc::SUPPORTED)
        {
            return Err(code::NOT_SUPPORTED);
        }
        let d = device_index(&s, props.location.id)?;
        let max = match props.maxSize {
            0 => u64::MAX,
            m => m as u64,
        };
        let file = match exportable {
            true => Some(crate::ipc::pool::PoolFile::create()?),
            false => None,
        };
        let mut p = pools();
        p.next += 1;
        let id = p.next;
        let mut created = Pool::new(d, s.config.devices.len(), false, max);
        created.file = file;
        p.pools.insert(id, created);
        out(pool, handle(id))
    })
}

/// `cuMemPoolDestroy`: a created pool. Outstanding allocations stay valid; the pool
/// goes once they are freed. A pool that was a device's current one is replaced by
/// the device's default pool. An imported pool (`cuMemPoolImportFromShareableHandle`)
/// is released at once; pointers imported from it stay mapped until freed.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuMemPoolDestroy(pool: CUmemoryPool) -> CUresult {
    api!("cuMemPoolDestroy", {
        if crate::ipc::pool::is_imported(pool) {
            state::require_init(&state::state())?;
            return crate::ipc::pool::destroy_pool(pool);
        }
        let mut release = Release::default();
        {
            let mut s = state::state();
            state::require_init(&s)?;
            let mut p = pools();
            let (id, pl) = p.live(pool)?;
            if pl.default {
                return Err(code::INVALID_VALUE);
            }
            pl.destroyed = true;
            shrink(&mut s, pl, 0, &mut release);
            let gone = pl.outstanding == 0;
            p.current.retain(|_, c| *c != id);
            if gone {
                p.pools.remove(&id);
            }
        }
        release.finish();
        Ok(())
    })
}

/// `cuMemPoolTrimTo`: gives back free blocks until at most `keep` bytes are reserved
/// (or only blocks in use remain).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuMemPoolTrimTo(pool: CUmemoryPool, keep: usize) -> CUresult {
    api!("cuMemPoolTrimTo", {
        let mut release = Release::default();
        {
            let mut s = state::state();
            state::require_init(&s)?;
            let mut p = pools();
            let (_, pl) = p.live(pool)?;
            shrink(&mut s, pl, keep as u64, &mut release);
        }
        release.finish();
        Ok(())
    })
}

/// `cuMemPoolSetAttribute`: the reuse policies (`int`), the release threshold
/// (`cuuint64_t`), and the high watermarks (`cuuint64_t`, reset to zero only).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuMemPoolSetAttribute(
    pool: CUmemoryPool,
    attr: c_uint,
    value: *mut c_void,
) -> CUresult {
    api!("cuMemPoolSetAttribute", {
        if value.is_null() {
            return Err(code::INVALID_VALUE);
        }
        let mut p = pools();
        let (_, pl) = p.live(pool)?;
        match attr {
            1..=3 => {
                // SAFETY: an `int`, by the C contract for these attributes.
                let v = unsafe { *value.cast::<c_int>() };
                pl.reuse[attr as usize - 1] = v != 0;
            }
            // SAFETY (below): a `cuuint64_t`, by the C contract.
            4 => pl.threshold = unsafe { *value.cast::<u64>() },
            6 | 8 => {
                // SAFETY: as above.
                if unsafe { *value.cast::<u64>() } != 0 {
                    return Err(code::INVALID_VALUE);
                }
                if attr == 6 {
                    pl.reserved_high = 0;
                } else {
                    pl.used_high = 0;
                }
            }
            _ => return Err(code::INVALID_VALUE),
        }
        Ok(())
    })
}

/// `cuMemPoolGetAttribute`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuMemPoolGetAttribute(
    pool: CUmemoryPool,
    attr: c_uint,
    value: *mut c_void,
) -> CUresult {
    api!("cuMemPoolGetAttribute", {
        let mut p = pools();
        let (_, pl) = p.live(pool)?;
        match attr {
            1..=3 => out(value.cast::<c_int>(), pl.reuse[attr as usize - 1] as c_int),
            4 => out(value.cast::<u64>(), pl.threshold),
            5 => out(value.cast::<u64>(), pl.reserved),
            6 => out(value.cast::<u64>(), pl.reserved_high),
            7 => out(value.cast::<u64>(), pl.used),
            8 => out(value.cast::<u64>(), pl.used_high),
            _ => Err(code::INVALID_VALUE),
        }
    })
}

/// `cuMemPoolSetAccess`: for each descriptor, a device and `PROT_NONE`, `PROT_READ`
/// or `PROT_READWRITE`; the owner's access cannot change, and a peer needs a link
/// to the owner in the peer topology (`INVALID_DEVICE`). Nothing changes unless every
/// descriptor is valid.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuMemPoolSetAccess(
    pool: CUmemoryPool,
    map: *const CUmemAccessDesc,
    count: usize,
) -> CUresult {
    api!("cuMemPoolSetAccess", {
        if map.is_null() && count > 0 {
            return Err(code::INVALID_VALUE);
        }
        let s = state::state();
        state::require_init(&s)?;
        let descs: Vec<CUmemAccessDesc> = (0..count)
            // SAFETY: `count` descriptors, by the C contract.
            .map(|i| unsafe { *map.add(i) })
            .collect();
        let mut p = pools();
        let (_, pl) = p.live(pool)?;
        let mut changes = Vec::new();
        for d in descs {
            if d.location.type_ != CU_MEM_LOCATION_TYPE_DEVICE
                || !matches!(d.flags, PROT_NONE | PROT_READ | PROT_READWRITE)
            {
                return Err(code::INVALID_VALUE);
            }
            let dev = device_index(&s, d.location.id)?;
            if dev == pl.device {
                if d.flags != PROT_READWRITE {
                    return Err(code::INVALID_VALUE);
                }
                continue;
            }
            if d.flags != PROT_NONE && !s.config.peer(dev, pl.device) {
                return Err(code::INVALID_DEVICE);
            }
            changes.push((dev, d.flags));
        }
        for (dev, f) in changes {
            if let Some(a) = pl.access.get_mut(dev) {
                *a = f;
            }
        }
        Ok(())
    })
}

/// `cuMemPoolGetAccess`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuMemPoolGetAccess(
    flags: *mut c_uint,
    pool: CUmemoryPool,
    location: *mut CUmemLocation,
) -> CUresult {
    api!("cuMemPoolGetAccess", {
        if location.is_null() {
            return Err(code::INVALID_VALUE);
        }
        // SAFETY: a valid `CUmemLocation`, by the C contract.
        let loc = unsafe { *location };
        let s = state::state();
        state::require_init(&s)?;
        if loc.type_ != CU_MEM_LOCATION_TYPE_DEVICE {
            return Err(code::INVALID_VALUE);
        }
        let dev = device_index(&s, loc.id)?;
        let mut p = pools();
        let (_, pl) = p.live(pool)?;
        out(flags, pl.access.get(dev).copied().unwrap_or(PROT_NONE))
    })
}

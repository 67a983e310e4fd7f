//! Managed memory: `cuMemAllocManaged`, `cuStreamAttachMemAsync`, `cuMemPrefetchAsync`
//! (and `_v2`), `cuMemAdvise` (and `_v2`), `cuMemRangeGetAttribute(s)`.
//!
//! softcuda has one address space: device memory *is* host memory, so a managed
//! allocation is a device allocation (in the memory map, counted as one) that the host
//! may also read and write at the same address — host and device see the same bytes,
//! and nothing ever migrates. What the program says about the memory is recorded and
//! answered: the attach flags and stream (when the stream reaches the attach), advice
//! (read-mostly, preferred location, accessed-by; at the call, per byte range) and the
//! last prefetch location (when the stream reaches the prefetch). A range queried or
//! advised must lie inside one managed allocation (`INVALID_VALUE` otherwise).
//! Host NUMA locations are not modelled (`CUDA_ERROR_NOT_SUPPORTED`). Devices of
//! compute capability below 6.0 have no concurrent managed access: prefetching to them
//! is refused (`INVALID_DEVICE`), as on the driver.

use super::out;
pub use crate::managed::attachment;
use crate::managed::*;
use crate::state::{self, R, State};
use crate::stream::{self, Work};
use crate::types::*;
use core::ffi::{c_int, c_uint, c_void};

/// A device ordinal, or `INVALID_DEVICE`.
fn device(s: &State, d: c_int) -> R<usize> {
    usize::try_from(d)
        .ok()
        .filter(|&d| d < s.config.devices.len())
        .ok_or(code::INVALID_DEVICE)
}

/// A v2 location as a v1 one: a device, or the host.
fn from_location(s: &State, l: CUmemLocation) -> R<Loc> {
    match l.type_ {
        CU_MEM_LOCATION_TYPE_DEVICE => device(s, l.id).map(|d| d as Loc),
        LOC_HOST => Ok(CPU),
        3 | 4 => Err(code::NOT_SUPPORTED), // host NUMA locations: not modelled
        _ => Err(code::INVALID_VALUE),
    }
}

/// `cuMemAllocManaged`: `flags` is `CU_MEM_ATTACH_GLOBAL` or `CU_MEM_ATTACH_HOST`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuMemAllocManaged(
    dptr: *mut CUdeviceptr,
    size: usize,
    flags: c_uint,
) -> CUresult {
    api!("cuMemAllocManaged", {
        if dptr.is_null() || size == 0 || !matches!(flags, ATTACH_GLOBAL | ATTACH_HOST) {
            return Err(code::INVALID_VALUE);
        }
        let mut s = state::state();
        let ctx = state::current_ctx(&s)?;
        let p = crate::devalloc::allocate(&mut s, ctx, size as u64, state::AllocKind::Device)?;
        // Managed memory is accessible from every device.
        let id = state::memory_mut().get_mut(&p).map_or(0, |a| {
            a.reach = state::Reach::Everywhere;
            a.id
        });
        table().insert(
            p,
            Managed {
                id,
                size: size as u64,
                attach: (flags, 0),
                segments: vec![(0, size as u64, Attrs::default())],
            },
        );
        out(dptr, p)
    })
}

/// `cuStreamAttachMemAsync`: `length` is 0 or the whole allocation, `dptr` its base;
/// recorded when the stream reaches it. `CU_MEM_ATTACH_SINGLE` needs a created stream.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuStreamAttachMemAsync(
    h: CUstream,
    dptr: CUdeviceptr,
    length: usize,
    flags: c_uint,
) -> CUresult {
    api!("cuStreamAttachMemAsync", {
        let ctx = state::current_ctx(&state::state())?;
        if !matches!(flags, ATTACH_GLOBAL | ATTACH_HOST | ATTACH_SINGLE) {
            return Err(code::INVALID_VALUE);
        }
        let single = (h as usize != 0 && h as usize != CU_STREAM_LEGACY)
            .then_some(h as usize)
            .filter(|&h| h != CU_STREAM_PER_THREAD);
        if flags == ATTACH_SINGLE && single.is_none() {
            return Err(code::INVALID_VALUE);
        }
        let (base, off) = locate(dptr, 1)?;
        let size = table().get(&base).map_or(0, |m| m.size);
        if off != 0 || (length != 0 && length as u64 != size) {
            return Err(code::INVALID_VALUE);
        }
        let target = stream::target(ctx, h)?;
        crate::graph::capture::refuse_on(h)?;
        let record = (
            flags,
            if flags == ATTACH_SINGLE {
                h as usize
            } else {
                0
            },
        );
        let id = table().get(&base).map_or(0, |m| m.id);
        target.run(Work::Op(Box::new(move || {
            if let Some(m) = table().get_mut(&base).filter(|m| m.id == id) {
                m.attach = record;
            }
            Ok(())
        })))
    })
}

/// A prefetch of `[ptr, ptr + count)` to `to`, recorded when the stream reaches it.
fn prefetch(ptr: CUdeviceptr, count: usize, to: Loc, h: CUstream) -> R {
    let ctx = state::current_ctx(&state::state())?;
    let (base, off) = locate(ptr, count as u64)?;
    if to >= 0 {
        let s = state::state();
        let d = device(&s, to)?;
        if s.config.devices.get(d).is_none_or(|p| p.cc.0 < 6) {
            return Err(code::INVALID_DEVICE);
        }
    }
    let target = stream::target(ctx, h)?;
    crate::graph::capture::refuse_on(h)?;
    let id = table().get(&base).map_or(0, |m| m.id);
    target.run(Work::Op(Box::new(move || {
        if let Some(m) = table().get_mut(&base).filter(|m| m.id == id) {
            m.apply(off, count as u64, |a| a.last_prefetch = to);
        }
        Ok(())
    })))
}

/// `cuMemPrefetchAsync` (v1): to a device, or `CU_DEVICE_CPU`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuMemPrefetchAsync(
    ptr: CUdeviceptr,
    count: usize,
    dst: CUdevice,
    h: CUstream,
) -> CUresult {
    api!("cuMemPrefetchAsync", {
        if dst != CPU {
            device(&state::state(), dst)?;
        }
        prefetch(ptr, count, dst, h)
    })
}

/// `cuMemPrefetchAsync_v2`: to a device or the host; `flags` must be 0.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuMemPrefetchAsync_v2(
    ptr: CUdeviceptr,
    count: usize,
    location: CUmemLocation,
    flags: c_uint,
    h: CUstream,
) -> CUresult {
    api!("cuMemPrefetchAsync", {
        if flags != 0 {
            return Err(code::INVALID_VALUE);
        }
        let to = from_location(&state::state(), location)?;
        prefetch(ptr, count, to, h)
    })
}

/// Records `advice` for `[ptr, ptr + count)` at location `at`.
fn advise(ptr: CUdeviceptr, count: usize, advice: c_uint, at: Loc) -> R {
    state::current_ctx(&state::state())?;
    let (base, off) = locate(ptr, count as u64)?;
    let mut t = table();
    let m = t.get_mut(&base).ok_or(code::INVALID_VALUE)?;
    let len = count as u64;
    match advice {
        1 => m.apply(off, len, |a| a.read_mostly = true),
        2 => m.apply(off, len, |a| a.read_mostly = false),
        3 => m.apply(off, len, |a| a.preferred = at),
        4 => m.apply(off, len, |a| a.preferred = INVALID),
        5 => m.apply(off, len, |a| {
            if !a.accessed_by.contains(&at) {
                a.accessed_by.push(at);
            }
        }),
        6 => m.apply(off, len, |a| a.accessed_by.retain(|&d| d != at)),
        _ => return Err(code::INVALID_VALUE),
    }
    Ok(())
}

/// Whether `advice` names a location (preferred location, accessed-by).
fn needs_location(advice: c_uint) -> bool {
    matches!(advice, 3 | 5 | 6)
}

/// `cuMemAdvise` (v1): `device` is an ordinal or `CU_DEVICE_CPU`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuMemAdvise(
    ptr: CUdeviceptr,
    count: usize,
    advice: c_uint,
    dev: CUdevice,
) -> CUresult {
    api!("cuMemAdvise", {
        let at = if !needs_location(advice) || dev == CPU {
            dev.max(CPU)
        } else {
            device(&state::state(), dev)? as Loc
        };
        advise(ptr, count, advice, at)
    })
}

/// `cuMemAdvise_v2`: at a device or the host.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuMemAdvise_v2(
    ptr: CUdeviceptr,
    count: usize,
    advice: c_uint,
    location: CUmemLocation,
) -> CUresult {
    api!("cuMemAdvise", {
        let at = if needs_location(advice) {
            from_location(&state::state(), location)?
        } else {
            CPU
        };
        advise(ptr, count, advice, at)
    })
}

/// One location, if every attribute set agrees on it, else [`INVALID`].
fn common<'a>(mut it: impl Iterator<Item = &'a Attrs>, f: fn(&Attrs) -> Loc) -> Loc {
    let first = it.next().map_or(INVALID, f);
    if it.all(|a| f(a) == first) {
        first
    } else {
        INVALID
    }
}

/// A v1 location as (`CUmemLocationType`, id).
fn location_of(l: Loc) -> (c_uint, c_int) {
    match l {
        CPU => (LOC_HOST, 0),
        d if d >= 0 => (CU_MEM_LOCATION_TYPE_DEVICE, d),
        _ => (0, 0),
    }
}

/// Writes range attribute `attr` of `[ptr, ptr + count)` to `data` (`size` bytes).
fn range_attribute(
    data: *mut c_void,
    size: usize,
    attr: c_uint,
    ptr: CUdeviceptr,
    count: usize,
) -> R {
    if data.is_null() || !size.is_multiple_of(4) || size == 0 {
        return Err(code::INVALID_VALUE);
    }
    let (base, off) = locate(ptr, count as u64)?;
    let t = table();
    let m = t.get(&base).ok_or(code::INVALID_VALUE)?;
    let len = count as u64;
    let one = |v: c_int| {
        if size != 4 {
            return Err(code::INVALID_VALUE);
        }
        out(data.cast::<c_int>(), v)
    };
    match attr {
        1 => one(m.over(off, len).all(|a| a.read_mostly) as c_int),
        2 => one(common(m.over(off, len), |a| a.preferred)),
        3 => {
            let mut all: Vec<c_int> = m
                .over(off, len)
                .next()
                .map(|a| a.accessed_by.clone())
                .unwrap_or_default();
            all.retain(|d| m.over(off, len).all(|a| a.accessed_by.contains(d)));
            let slots = size / 4;
            for i in 0..slots {
                let v = all.get(i).copied().unwrap_or(INVALID);
                // SAFETY: `data` holds `size` bytes (`slots` ints), by the C contract.
                unsafe { data.cast::<c_int>().add(i).write_unaligned(v) };
            }
            Ok(())
        }
        4 => one(common(m.over(off, len), |a| a.last_prefetch)),
        5 => one(location_of(common(m.over(off, len), |a| a.preferred)).0 as c_int),
        6 => one(location_of(common(m.over(off, len), |a| a.preferred)).1),
        7 => one(location_of(common(m.over(off, len), |a| a.last_prefetch)).0 as c_int),
        8 => one(location_of(common(m.over(off, len), |a| a.last_prefetch)).1),
        _ => Err(code::INVALID_VALUE),
    }
}

/// `cuMemRangeGetAttribute`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuMemRangeGetAttribute(
    data: *mut c_void,
    size: usize,
    attr: c_uint,
    ptr: CUdeviceptr,
    count: usize,
) -> CUresult {
    api!("cuMemRangeGetAttribute", {
        state::current_ctx(&state::state())?;
        range_attribute(data, size, attr, ptr, count)
    })
}

/// `cuMemRangeGetAttributes`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuMemRangeGetAttributes(
    data: *mut *mut c_void,
    sizes: *mut usize,
    attrs: *mut c_uint,
    n: usize,
    ptr: CUdeviceptr,
    count: usize,
) -> CUresult {
    api!("cuMemRangeGetAttributes", {
        state::current_ctx(&state::state())?;
        if n == 0 || data.is_null() || sizes.is_null() || attrs.is_null() {
            return Err(code::INVALID_VALUE);
        }
        for i in 0..n {
            // SAFETY: three arrays of `n` entries, by the C contract.
            let (d, sz, a) = unsafe { (*data.add(i), *sizes.add(i), *attrs.add(i)) };
            range_attribute(d, sz, a, ptr, count)?;
        }
        Ok(())
    })
}

//! Memory: device allocations (in softcuda's own device address space, apart from
//! host memory: `crate::devspace`; bounded by the device's profile), pinned and
//! registered host memory, copies and sets in every direction, synchronous and
//! stream-ordered, and pointer attributes (IPC handles: `crate::api::ipc`).

use super::out;
use crate::copy::*;
use crate::devalloc::*;
use crate::graph;
use crate::state::{self, Alloc, AllocKind, Kind, R};
use crate::stream;
use crate::types::*;
use core::ffi::{c_int, c_uint, c_void};
use std::sync::atomic::Ordering;

fn null() -> CUstream {
    core::ptr::null_mut()
}

/// `cuMemAlloc_v2`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuMemAlloc_v2(dptr: *mut CUdeviceptr, size: usize) -> CUresult {
    api!("cuMemAlloc", {
        if dptr.is_null() {
            return Err(code::INVALID_VALUE);
        }
        graph::capture::unsafe_call()?;
        let mut s = state::state();
        let ctx = state::current_ctx(&s)?;
        let p = allocate(&mut s, ctx, size as u64, AllocKind::Device)?;
        crate::sanitize::initcheck::track(p, size as u64);
        out(dptr, p)
    })
}

/// `cuMemAllocPitch_v2`: rows padded to 512 bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuMemAllocPitch_v2(
    dptr: *mut CUdeviceptr,
    pitch: *mut usize,
    width: usize,
    height: usize,
    elem: c_uint,
) -> CUresult {
    api!("cuMemAllocPitch", {
        if dptr.is_null()
            || pitch.is_null()
            || !matches!(elem, 4 | 8 | 16)
            || width == 0
            || height == 0
        {
            return Err(code::INVALID_VALUE);
        }
        let p = width
            .div_ceil(512)
            .checked_mul(512)
            .ok_or(code::INVALID_VALUE)?;
        let bytes = p.checked_mul(height).ok_or(code::INVALID_VALUE)?;
        let mut s = state::state();
        let ctx = state::current_ctx(&s)?;
        let d = allocate(&mut s, ctx, bytes as u64, AllocKind::Device)?;
        crate::sanitize::initcheck::track(d, bytes as u64);
        out(pitch, p)?;
        out(dptr, d)
    })
}

/// `cuMemFree_v2`: `ptr` must be the base of a live device allocation (`cuMemAlloc`
/// memory, or a buffer mapped from external memory).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuMemFree_v2(ptr: CUdeviceptr) -> CUresult {
    api!("cuMemFree", {
        graph::capture::unsafe_call()?;
        stream::drain_current();
        if crate::pool::owns(ptr) {
            state::current_ctx(&state::state())?;
            return crate::pool::free_now(ptr);
        }
        if crate::ipc::pool::is_pointer(ptr) {
            // A pointer imported from a pool: unmapped by its last free.
            state::current_ctx(&state::state())?;
            if crate::ipc::pool::release(ptr).unwrap_or(Err(code::INVALID_VALUE))? {
                crate::ipc::pool::unmap_now(ptr);
            }
            return Ok(());
        }
        let mut s = state::state();
        state::current_ctx(&s)?;
        graph::mem::check_free(ptr)?;
        let size = state::memory().get(&ptr).map(|a| a.size);
        let removed = match release(&mut s, ptr, |k| {
            matches!(k, AllocKind::Device | AllocKind::External)
        }) {
            Ok(r) => r,
            Err(e) => {
                drop(s);
                bad_free("cuMemFree", ptr);
                return Err(e);
            }
        };
        drop(s);
        removed.finish();
        if let Some(size) = size {
            crate::sanitize::memcheck::freed(ptr, size);
        }
        crate::managed::forget(ptr);
        graph::mem::freed(ptr);
        graph::mem::reap();
        Ok(())
    })
}

/// Tells memcheck of a refused free of `ptr` by `call`: what the address is.
fn bad_free(call: &str, ptr: CUdeviceptr) {
    use crate::sanitize::memcheck::{BadFree, Block};
    if !crate::sanitize::on(crate::sanitize::MEMCHECK) {
        return;
    }
    let why = state::find_alloc(&state::memory(), ptr, 0)
        .filter(|(_, a)| a.kind == AllocKind::Device)
        .map_or(BadFree::Nowhere, |(base, a)| {
            BadFree::Inside(Block { base, size: a.size })
        });
    crate::sanitize::memcheck::bad_free(call, ptr, why);
}

/// `cuMemGetInfo_v2`: of the current context's device.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuMemGetInfo_v2(free: *mut usize, total: *mut usize) -> CUresult {
    api!("cuMemGetInfo", {
        let s = state::state();
        let ctx = state::current_ctx(&s)?;
        let d = s.context(ctx)?.device;
        let t = s.config.devices[d].total_mem;
        out(free, (t - s.used[d].min(t)) as usize)?;
        out(total, t as usize)
    })
}

/// `cuMemGetAddressRange_v2`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuMemGetAddressRange_v2(
    base: *mut CUdeviceptr,
    size: *mut usize,
    ptr: CUdeviceptr,
) -> CUresult {
    api!("cuMemGetAddressRange", {
        state::current_ctx(&state::state())?;
        let (b, a) = state::find_alloc(&state::memory(), ptr, 1).ok_or(code::NOT_FOUND)?;
        if !base.is_null() {
            out(base, b)?;
        }
        if !size.is_null() {
            out(size, a.size as usize)?;
        }
        Ok(())
    })
}

/// `cuMemHostAlloc`: pinned host memory, device-accessible at the same address.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuMemHostAlloc(
    pp: *mut *mut c_void,
    size: usize,
    flags: c_uint,
) -> CUresult {
    api!("cuMemHostAlloc", {
        if pp.is_null() || flags & !0x7 != 0 {
            return Err(code::INVALID_VALUE);
        }
        let mut s = state::state();
        let ctx = state::current_ctx(&s)?;
        let p = allocate(&mut s, ctx, size as u64, AllocKind::PinnedHost(flags))?;
        out(pp, p as *mut c_void)
    })
}

/// `cuMemAllocHost_v2`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuMemAllocHost_v2(pp: *mut *mut c_void, size: usize) -> CUresult {
    // SAFETY: the same contract, passed on.
    unsafe { cuMemHostAlloc(pp, size, 0) }
}

/// `cuMemFreeHost`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuMemFreeHost(p: *mut c_void) -> CUresult {
    api!("cuMemFreeHost", {
        stream::drain_current();
        let mut s = state::state();
        state::current_ctx(&s)?;
        let removed = release(&mut s, p as u64, |k| matches!(k, AllocKind::PinnedHost(_)))?;
        drop(s);
        removed.finish();
        Ok(())
    })
}

/// `cuMemHostGetDevicePointer_v2`: the same address (unified addressing).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuMemHostGetDevicePointer_v2(
    dptr: *mut CUdeviceptr,
    p: *mut c_void,
    flags: c_uint,
) -> CUresult {
    api!("cuMemHostGetDevicePointer", {
        if flags != 0 {
            return Err(code::INVALID_VALUE);
        }
        state::current_ctx(&state::state())?;
        let (_, a) = state::find_alloc(&state::memory(), p as u64, 1).ok_or(code::INVALID_VALUE)?;
        if !matches!(a.kind, AllocKind::PinnedHost(_) | AllocKind::Registered(_)) {
            return Err(code::INVALID_VALUE);
        }
        out(dptr, p as u64)
    })
}

/// `cuMemHostGetFlags`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuMemHostGetFlags(flags: *mut c_uint, p: *mut c_void) -> CUresult {
    api!("cuMemHostGetFlags", {
        state::current_ctx(&state::state())?;
        let (_, a) = state::find_alloc(&state::memory(), p as u64, 1).ok_or(code::INVALID_VALUE)?;
        match a.kind {
            AllocKind::PinnedHost(f) | AllocKind::Registered(f) => out(flags, f),
            AllocKind::Device
            | AllocKind::Mapped
            | AllocKind::External
            | AllocKind::IpcImported => Err(code::INVALID_VALUE),
        }
    })
}

/// `cuMemHostRegister_v2`: the range becomes device-accessible; it stays the caller's.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuMemHostRegister_v2(
    p: *mut c_void,
    size: usize,
    flags: c_uint,
) -> CUresult {
    api!("cuMemHostRegister", {
        if p.is_null() || size == 0 || flags & !0xF != 0 {
            return Err(code::INVALID_VALUE);
        }
        let s = state::state();
        let ctx = state::current_ctx(&s)?;
        let device = s.context(ctx)?.device;
        let mut map = state::memory_mut();
        let start = p as u64;
        let end = start.checked_add(size as u64).ok_or(code::INVALID_VALUE)?;
        if crate::devspace::overlaps(start, size as u64) {
            // Device addresses, live or freed, are never host memory.
            return Err(code::INVALID_VALUE);
        }
        if map
            .range(..end)
            .next_back()
            .is_some_and(|(b, a)| b.saturating_add(a.size.max(1)) > start)
        {
            return Err(code::HOST_MEMORY_ALREADY_REGISTERED);
        }
        let id = NEXT_BUFFER_ID.fetch_add(1, Ordering::Relaxed);
        map.insert(
            start,
            Alloc {
                size: size as u64,
                ctx,
                device,
                kind: AllocKind::Registered(flags),
                id,
                reach: state::Reach::Everywhere,
            },
        );
        Ok(())
    })
}

/// `cuMemHostUnregister`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuMemHostUnregister(p: *mut c_void) -> CUresult {
    api!("cuMemHostUnregister", {
        stream::drain_current();
        let mut s = state::state();
        state::current_ctx(&s)?;
        let removed = release(&mut s, p as u64, |k| matches!(k, AllocKind::Registered(_)))
            .map_err(|_| code::HOST_MEMORY_NOT_REGISTERED)?;
        drop(s);
        removed.finish(); // the range goes back to its owner only once unused
        Ok(())
    })
}

macro_rules! copies {
    ($($(#[$doc:meta])* $name:ident $label:literal ($($arg:ident: $ty:ty),*) => ($dst:expr, $dd:expr, $src:expr, $sd:expr, $n:expr, $stream:expr);)*) => {$(
        $(#[$doc])*
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $name($($arg: $ty),*) -> CUresult {
            api!($label, { copy($dst, $dd, $src, $sd, $n, $stream) })
        }
    )*};
}

copies! {
    /// `cuMemcpy` (unified addressing: either side may be host or device memory).
    cuMemcpy "cuMemcpy" (dst: CUdeviceptr, src: CUdeviceptr, n: usize) => (dst, false, src, false, n, null());
    /// `cuMemcpyAsync`.
    cuMemcpyAsync "cuMemcpyAsync" (dst: CUdeviceptr, src: CUdeviceptr, n: usize, s: CUstream) => (dst, false, src, false, n, s);
    /// `cuMemcpyHtoD_v2`.
    cuMemcpyHtoD_v2 "cuMemcpyHtoD" (dst: CUdeviceptr, src: *const c_void, n: usize) => (dst, true, src as u64, false, n, null());
    /// `cuMemcpyHtoDAsync_v2`.
    cuMemcpyHtoDAsync_v2 "cuMemcpyHtoDAsync" (dst: CUdeviceptr, src: *const c_void, n: usize, s: CUstream) => (dst, true, src as u64, false, n, s);
    /// `cuMemcpyDtoH_v2`.
    cuMemcpyDtoH_v2 "cuMemcpyDtoH" (dst: *mut c_void, src: CUdeviceptr, n: usize) => (dst as u64, false, src, true, n, null());
    /// `cuMemcpyDtoHAsync_v2`.
    cuMemcpyDtoHAsync_v2 "cuMemcpyDtoHAsync" (dst: *mut c_void, src: CUdeviceptr, n: usize, s: CUstream) => (dst as u64, false, src, true, n, s);
    /// `cuMemcpyDtoD_v2`.
    cuMemcpyDtoD_v2 "cuMemcpyDtoD" (dst: CUdeviceptr, src: CUdeviceptr, n: usize) => (dst, true, src, true, n, null());
    /// `cuMemcpyDtoDAsync_v2`.
    cuMemcpyDtoDAsync_v2 "cuMemcpyDtoDAsync" (dst: CUdeviceptr, src: CUdeviceptr, n: usize, s: CUstream) => (dst, true, src, true, n, s);
    /// `cuMemcpyPeer`: all devices share host memory.
    cuMemcpyPeer "cuMemcpyPeer" (dst: CUdeviceptr, _dc: CUcontext, src: CUdeviceptr, _sc: CUcontext, n: usize) => (dst, true, src, true, n, null());
    /// `cuMemcpyPeerAsync`.
    cuMemcpyPeerAsync "cuMemcpyPeerAsync" (dst: CUdeviceptr, _dc: CUcontext, src: CUdeviceptr, _sc: CUcontext, n: usize, s: CUstream) => (dst, true, src, true, n, s);
}

macro_rules! sets {
    ($($(#[$doc:meta])* $name:ident $label:literal ($($arg:ident: $ty:ty),*) => ($dst:expr, $pitch:expr, $v:expr, $elem:expr, $w:expr, $h:expr, $s:expr);)*) => {$(
        $(#[$doc])*
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $name($($arg: $ty),*) -> CUresult {
            api!($label, { set($dst, $pitch, $v as u32, $elem, $w, $h, $s) })
        }
    )*};
}

sets! {
    /// `cuMemsetD8_v2`.
    cuMemsetD8_v2 "cuMemsetD8" (d: CUdeviceptr, v: u8, n: usize) => (d, 0, v, 1, n, 1, null());
    /// `cuMemsetD16_v2`.
    cuMemsetD16_v2 "cuMemsetD16" (d: CUdeviceptr, v: u16, n: usize) => (d, 0, v, 2, n, 1, null());
    /// `cuMemsetD32_v2`.
    cuMemsetD32_v2 "cuMemsetD32" (d: CUdeviceptr, v: c_uint, n: usize) => (d, 0, v, 4, n, 1, null());
    /// `cuMemsetD8Async`.
    cuMemsetD8Async "cuMemsetD8Async" (d: CUdeviceptr, v: u8, n: usize, s: CUstream) => (d, 0, v, 1, n, 1, s);
    /// `cuMemsetD16Async`.
    cuMemsetD16Async "cuMemsetD16Async" (d: CUdeviceptr, v: u16, n: usize, s: CUstream) => (d, 0, v, 2, n, 1, s);
    /// `cuMemsetD32Async`.
    cuMemsetD32Async "cuMemsetD32Async" (d: CUdeviceptr, v: c_uint, n: usize, s: CUstream) => (d, 0, v, 4, n, 1, s);
    /// `cuMemsetD2D8_v2`.
    cuMemsetD2D8_v2 "cuMemsetD2D8" (d: CUdeviceptr, p: usize, v: u8, w: usize, h: usize) => (d, p, v, 1, w, h, null());
    /// `cuMemsetD2D16_v2`.
    cuMemsetD2D16_v2 "cuMemsetD2D16" (d: CUdeviceptr, p: usize, v: u16, w: usize, h: usize) => (d, p, v, 2, w, h, null());
    /// `cuMemsetD2D32_v2`.
    cuMemsetD2D32_v2 "cuMemsetD2D32" (d: CUdeviceptr, p: usize, v: c_uint, w: usize, h: usize) => (d, p, v, 4, w, h, null());
    /// `cuMemsetD2D8Async`.
    cuMemsetD2D8Async "cuMemsetD2D8Async" (d: CUdeviceptr, p: usize, v: u8, w: usize, h: usize, s: CUstream) => (d, p, v, 1, w, h, s);
    /// `cuMemsetD2D16Async`.
    cuMemsetD2D16Async "cuMemsetD2D16Async" (d: CUdeviceptr, p: usize, v: u16, w: usize, h: usize, s: CUstream) => (d, p, v, 2, w, h, s);
    /// `cuMemsetD2D32Async`.
    cuMemsetD2D32Async "cuMemsetD2D32Async" (d: CUdeviceptr, p: usize, v: c_uint, w: usize, h: usize, s: CUstream) => (d, p, v, 4, w, h, s);
}

/// `cuMemcpy2D_v2` (host, device and unified memory; CUDA arrays are not supported).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuMemcpy2D_v2(p: *const CUDA_MEMCPY2D) -> CUresult {
    api!("cuMemcpy2D", { memcpy2d(p, null()) })
}

/// `cuMemcpy2DUnaligned_v2`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuMemcpy2DUnaligned_v2(p: *const CUDA_MEMCPY2D) -> CUresult {
    api!("cuMemcpy2DUnaligned", { memcpy2d(p, null()) })
}

/// `cuMemcpy2DAsync_v2`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuMemcpy2DAsync_v2(p: *const CUDA_MEMCPY2D, s: CUstream) -> CUresult {
    api!("cuMemcpy2DAsync", { memcpy2d(p, s) })
}

/// `cuMemcpy3D_v2` (host, device and unified memory; CUDA arrays are not supported).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuMemcpy3D_v2(p: *const CUDA_MEMCPY3D) -> CUresult {
    api!("cuMemcpy3D", { memcpy3d(p, null()) })
}

/// `cuMemcpy3DAsync_v2`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuMemcpy3DAsync_v2(p: *const CUDA_MEMCPY3D, s: CUstream) -> CUresult {
    api!("cuMemcpy3DAsync", { memcpy3d(p, s) })
}

/// Writes one pointer attribute of `ptr` to `data`.
fn pointer_attribute(data: *mut c_void, attr: c_uint, ptr: CUdeviceptr) -> R {
    if data.is_null() {
        return Err(code::INVALID_VALUE);
    }
    let (base, a) = state::find_alloc(&state::memory(), ptr, 1).ok_or(code::INVALID_VALUE)?;
    let managed = crate::managed::is_managed(base, a.id);
    let host = matches!(a.kind, AllocKind::PinnedHost(_) | AllocKind::Registered(_));
    match attr {
        // Virtual-memory mappings belong to no context: the one current when their
        // stretch entered the map (`crate::vmm`), while it lives, else none.
        1 if a.kind == AllocKind::Mapped => out(
            data.cast::<CUcontext>(),
            if state::state().contexts.contains_key(&a.ctx) {
                state::handle(Kind::Context, a.ctx)
            } else {
                core::ptr::null_mut()
            },
        ),
        1 => out(
            data.cast::<CUcontext>(),
            state::handle(Kind::Context, a.ctx),
        ),
        2 => out(
            data.cast::<c_uint>(),
            if host {
                CU_MEMORYTYPE_HOST
            } else {
                CU_MEMORYTYPE_DEVICE
            },
        ),
        3 => out(data.cast::<CUdeviceptr>(), ptr),
        4 => out(
            data.cast::<*mut c_void>(),
            if host || managed {
                ptr as *mut c_void
            } else {
                core::ptr::null_mut()
            },
        ),
        6 => out(data.cast::<c_uint>(), 0),
        7 => out(data.cast::<u64>(), a.id),
        8 => out(data.cast::<c_uint>(), managed as c_uint),
        9 => out(data.cast::<c_int>(), a.device as c_int),
        10 => out(
            data.cast::<c_uint>(),
            (a.kind == AllocKind::Device) as c_uint,
        ),
        11 => out(data.cast::<*mut c_void>(), base as *mut c_void),
        12 => out(data.cast::<usize>(), a.size as usize),
        13 => out(data.cast::<c_uint>(), 1),
        17 => out(
            data.cast::<*mut c_void>(),
            crate::pool::pool_of(base).unwrap_or(core::ptr::null_mut()),
        ),
        _ => Err(code::NOT_SUPPORTED),
    }
}

/// `cuPointerGetAttribute`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuPointerGetAttribute(
    data: *mut c_void,
    attr: c_uint,
    ptr: CUdeviceptr,
) -> CUresult {
    api!("cuPointerGetAttribute", {
        state::require_init(&state::state())?;
        pointer_attribute(data, attr, ptr)
    })
}

/// `cuPointerGetAttributes`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuPointerGetAttributes(
    n: c_uint,
    attrs: *const c_uint,
    data: *mut *mut c_void,
    ptr: CUdeviceptr,
) -> CUresult {
    api!("cuPointerGetAttributes", {
        state::require_init(&state::state())?;
        if attrs.is_null() || data.is_null() {
            return Err(code::INVALID_VALUE);
        }
        for i in 0..n as usize {
            // SAFETY: both arrays hold `n` entries, by the C contract.
            let (attr, slot) = unsafe { (*attrs.add(i), *data.add(i)) };
            pointer_attribute(slot, attr, ptr)?;
        }
        Ok(())
    })
}

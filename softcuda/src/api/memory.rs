//! Memory: device allocations (in softcuda's own device address space, apart from
//! host memory: `crate::devspace`; bounded by the device's profile), pinned and
//! registered host memory, copies and sets in every direction, synchronous and
//! stream-ordered, pointer attributes and IPC handles.

use super::out;
use crate::devmem::{self, Span};
use crate::graph::{self, NodeKind, Raw};
use crate::state::{self, Alloc, AllocKind, Kind, R, State};
use crate::stream;
use crate::types::*;
use core::ffi::{c_int, c_uint, c_void};
use std::alloc::Layout;
use std::sync::atomic::{AtomicU64, Ordering};

/// Device allocations are aligned like the driver's.
const ALIGN: usize = 256;
static NEXT_BUFFER_ID: AtomicU64 = AtomicU64::new(1);

fn layout(size: u64) -> R<Layout> {
    Layout::from_size_align(
        usize::try_from(size.max(1)).map_err(|_| code::OUT_OF_MEMORY)?,
        ALIGN,
    )
    .map_err(|_| code::OUT_OF_MEMORY)
}

/// Allocates `size` bytes for context `ctx` and enters them in the memory map.
pub(crate) fn allocate(s: &mut State, ctx: u64, size: u64, kind: AllocKind) -> R<u64> {
    if size == 0 {
        return Err(code::INVALID_VALUE);
    }
    let device = s.context(ctx)?.device;
    if kind == AllocKind::Device
        && s.used[device].saturating_add(size) > s.config.devices[device].total_mem
    {
        return Err(code::OUT_OF_MEMORY);
    }
    let limit = state::ALLOC_LIMIT.load(Ordering::Relaxed);
    if state::ALLOCATED
        .load(Ordering::Relaxed)
        .saturating_add(size)
        > limit
    {
        return Err(code::OUT_OF_MEMORY);
    }
    let p = if kind == AllocKind::Device {
        crate::devspace::alloc(size).ok_or(code::OUT_OF_MEMORY)? as *mut u8
    } else {
        // Pinned host memory: host memory, from the host allocator.
        // SAFETY: the layout has a non-zero size.
        unsafe { std::alloc::alloc_zeroed(layout(size)?) }
    };
    if p.is_null() {
        return Err(code::OUT_OF_MEMORY);
    }
    if kind == AllocKind::Device {
        s.used[device] += size;
    }
    state::ALLOCATED.fetch_add(size, Ordering::Relaxed);
    let id = NEXT_BUFFER_ID.fetch_add(1, Ordering::Relaxed);
    state::memory_mut().insert(
        p as u64,
        Alloc {
            size,
            ctx,
            device,
            kind,
            id,
            reach: if kind == AllocKind::Device {
                state::Reach::Context
            } else {
                state::Reach::Everywhere
            },
        },
    );
    Ok(p as u64)
}

/// Reserves `size` bytes of zeroed device memory (in the device address space,
/// `crate::devspace`) for a pool block or graph memory (not entered in the map: see
/// `crate::api::pool` and `crate::graph::mem`).
pub(crate) fn reserve(size: u64) -> R<u64> {
    if size == 0 {
        return Err(code::INVALID_VALUE);
    }
    crate::devspace::alloc(size).ok_or(code::OUT_OF_MEMORY)
}

/// Gives back memory [`reserve`] returned (its addresses stay device addresses).
///
/// # Safety
/// `base` came from `reserve(size)`, is given back once, and nothing accesses it
/// any more.
pub(crate) unsafe fn unreserve(base: u64, size: u64) {
    // SAFETY: the caller's promise, passed on.
    unsafe { crate::devspace::free(base, size) };
}

/// A fresh buffer id.
pub(crate) fn new_buffer_id() -> u64 {
    NEXT_BUFFER_ID.fetch_add(1, Ordering::Relaxed)
}

thread_local! {
    /// Set while checking the ranges of a graph's copy or memset node: graph memory
    /// counts as device memory even when not mapped (it is by the time the node
    /// runs, or the node fails then).
    static GRAPH_CHECK: core::cell::Cell<bool> = const { core::cell::Cell::new(false) };
}

/// Runs `f` with graph memory counting as device memory in the range checks.
pub(crate) fn with_graph_memory<T>(f: impl FnOnce() -> T) -> T {
    let old = GRAPH_CHECK.with(|c| c.replace(true));
    let r = f();
    GRAPH_CHECK.with(|c| c.set(old));
    r
}

/// Memory taken out of the map, not yet deallocated: see [`Removed::finish`].
#[must_use = "removed memory is deallocated by `finish`"]
#[derive(Default)]
pub(crate) struct Removed {
    /// Whether anything was removed (registered ranges have nothing to deallocate).
    any: bool,
    /// Allocations softcuda owns: base, size, and whether it is device memory (from
    /// `crate::devspace`; otherwise pinned host memory, from the host allocator).
    owned: Vec<(u64, u64, bool)>,
}

impl Removed {
    /// Adds `other`'s memory to this.
    pub(crate) fn merge(&mut self, other: Removed) {
        self.any |= other.any;
        self.owned.extend(other.owned);
    }

    /// Waits until no operation that may have checked the memory before it left the
    /// map still runs (`devmem::quiesce`), then deallocates what softcuda owns. Call
    /// it without holding the state or memory-map lock. Only then may a registered
    /// range go back to its owner, or a pinned or device allocation be reused.
    pub(crate) fn finish(self) {
        if !self.any {
            return;
        }
        devmem::quiesce();
        for (base, size, device) in self.owned {
            if device {
                // SAFETY: `base` came from `devspace::alloc(size)` and left the map
                // once (so it is freed once); every operation that could still touch
                // it has ended (above), and no later one can find it.
                unsafe { crate::devspace::free(base, size) };
            } else if let Ok(l) = layout(size) {
                // SAFETY: `base` came from `alloc_zeroed` with this layout and left the
                // map once (so it is deallocated once); every operation that could
                // still touch it has ended (above), and no later one can find it.
                unsafe { std::alloc::dealloc(base as *mut u8, l) };
            }
        }
    }
}

/// Removes the allocation at `base` (which must be of a kind `accept` admits) from the
/// map and the accounting. The memory itself goes with [`Removed::finish`].
fn release(s: &mut State, base: u64, accept: fn(&AllocKind) -> bool) -> R<Removed> {
    if super::pool::owns(base) {
        return Err(code::INVALID_VALUE); // pool memory goes back to its pool
    }
    let mut map = state::memory_mut();
    let a = *map
        .get(&base)
        .filter(|a| accept(&a.kind))
        .ok_or(code::INVALID_VALUE)?;
    map.remove(&base);
    drop(map);
    if graph::mem::is_reserved(base) {
        // Graph memory: unmapped only; it stays reserved (`crate::graph::mem`).
        return Ok(Removed {
            any: true,
            owned: Vec::new(),
        });
    }
    if a.kind == AllocKind::Device {
        s.used[a.device] = s.used[a.device].saturating_sub(a.size);
    }
    let mut removed = Removed {
        any: true,
        owned: Vec::new(),
    };
    if !matches!(a.kind, AllocKind::Registered(_)) {
        state::ALLOCATED.fetch_sub(
            a.size.min(state::ALLOCATED.load(Ordering::Relaxed)),
            Ordering::Relaxed,
        );
        removed
            .owned
            .push((base, a.size, a.kind == AllocKind::Device));
    }
    Ok(removed)
}

/// Removes everything context `ctx` owns (at context destruction).
pub(crate) fn free_all_of(s: &mut State, ctx: u64) -> Removed {
    let bases: Vec<u64> = state::memory()
        .iter()
        .filter(|(_, a)| a.ctx == ctx)
        .map(|(b, _)| *b)
        .collect();
    let mut removed = Removed::default();
    for b in bases {
        if let Ok(r) = release(s, b, |_| true) {
            removed.merge(r);
        }
    }
    removed
}

/// Allocates device memory for a module variable of context `ctx`.
pub(crate) fn allocate_global(s: &mut State, ctx: u64, size: u64) -> R<u64> {
    allocate(s, ctx, size.max(1), AllocKind::Device)
}

/// Removes a module variable (deallocated by [`Removed::finish`]).
pub(crate) fn free_global(s: &mut State, base: u64) -> Removed {
    release(s, base, |k| *k == AllocKind::Device).unwrap_or_default()
}

/// Checks one side of a copy or memset: `Some` if it lies in mapped memory (device,
/// pinned or registered), `None` for plain host memory; `INVALID_VALUE` if it
/// straddles mapped memory, if `device` and it is not mapped, or if it touches the
/// device address space without lying in live memory there (a freed device address
/// is never host memory: `crate::devspace`).
fn check_side(addr: u64, len: usize, device: bool) -> R<Option<Span>> {
    let mut span = devmem::classify(&state::memory(), addr, len as u64)?;
    if span.is_none() {
        span = super::pool::pending_span(addr, len as u64);
    }
    if span.is_none() && GRAPH_CHECK.with(core::cell::Cell::get) {
        span = graph::mem::reserved_span(addr, len as u64);
    }
    if span.is_none() && (device || crate::devspace::overlaps(addr, len as u64)) {
        return Err(code::INVALID_VALUE);
    }
    Ok(span)
}

/// A pointer that may cross to a stream's worker: the caller keeps the memory valid
/// until the work completes, as the driver's contract requires.
#[derive(Clone, Copy)]
struct P(*mut u8);
// SAFETY: see the type's doc: the pointee's lifetime is the caller's promise.
unsafe impl Send for P {}

/// Copies `n` bytes on `stream` (default stream: now). The sides are checked now
/// (device sides must be device-accessible memory; any side that is mapped memory is
/// then accessed atomically, see `crate::devmem`) and again when the copy runs.
fn copy(dst: u64, dst_dev: bool, src: u64, src_dev: bool, n: usize, stream_h: CUstream) -> R {
    let ctx = state::current_ctx(&state::state())?;
    if n == 0 {
        return Ok(());
    }
    if dst == 0 || src == 0 {
        return Err(code::INVALID_VALUE);
    }
    let ds = check_side(dst, n, dst_dev)?;
    let ss = check_side(src, n, src_dev)?;
    if let Some(r) = graph::capture::divert(stream_h, || {
        NodeKind::Memcpy(Raw(linear_copy(dst, dst_dev, src, src_dev, n)))
    }) {
        return r;
    }
    let (d, s) = (P(dst as *mut u8), P(src as *mut u8));
    stream::submit(
        ctx,
        stream_h,
        Box::new(move || {
            let (d, s) = (d, s); // move the Send wrappers, not their fields
            let _work = devmem::work();
            devmem::recheck(&[ds, ss])?;
            // SAFETY: mapped sides are alive and stay so while `_work` is held
            // (`crate::devmem`); host sides are the caller's, valid until the copy
            // completes (the driver's contract), and never overlap mapped ones.
            unsafe { devmem::copy(d.0, ds.is_some(), s.0, ss.is_some(), n) };
            Ok(())
        }),
    )
}

/// A 1-D copy of `n` bytes as a `CUDA_MEMCPY3D` (a captured copy's node).
fn linear_copy(dst: u64, dst_dev: bool, src: u64, src_dev: bool, n: usize) -> CUDA_MEMCPY3D {
    let ty = |dev: bool| {
        if dev {
            CU_MEMORYTYPE_DEVICE
        } else {
            CU_MEMORYTYPE_HOST
        }
    };
    let null = core::ptr::null_mut();
    CUDA_MEMCPY3D {
        srcXInBytes: 0,
        srcY: 0,
        srcZ: 0,
        srcLOD: 0,
        srcMemoryType: ty(src_dev),
        srcHost: src as *const c_void,
        srcDevice: src,
        srcArray: null,
        reserved0: null,
        srcPitch: 0,
        srcHeight: 0,
        dstXInBytes: 0,
        dstY: 0,
        dstZ: 0,
        dstLOD: 0,
        dstMemoryType: ty(dst_dev),
        dstHost: dst as *mut c_void,
        dstDevice: dst,
        dstArray: null,
        reserved1: null,
        dstPitch: 0,
        dstHeight: 0,
        WidthInBytes: n,
        Height: 1,
        Depth: 1,
    }
}

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
        out(pitch, p)?;
        out(dptr, d)
    })
}

/// `cuMemFree_v2`: `ptr` must be the base of a live device allocation.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuMemFree_v2(ptr: CUdeviceptr) -> CUresult {
    api!("cuMemFree", {
        graph::capture::unsafe_call()?;
        stream::drain_current();
        if super::pool::owns(ptr) {
            state::current_ctx(&state::state())?;
            return super::pool::free_now(ptr);
        }
        let mut s = state::state();
        state::current_ctx(&s)?;
        graph::mem::check_free(ptr)?;
        let removed = release(&mut s, ptr, |k| *k == AllocKind::Device)?;
        drop(s);
        removed.finish();
        super::managed::forget(ptr);
        graph::mem::freed(ptr);
        graph::mem::reap();
        Ok(())
    })
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
        if a.kind == AllocKind::Device {
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
            AllocKind::Device => Err(code::INVALID_VALUE),
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

/// Fills `width` elements of `elem` bytes in each of `height` rows `pitch` apart.
/// The whole span is checked now and again when the fill runs; the stores are
/// atomic (see `crate::devmem`).
fn set(
    dst: u64,
    pitch: usize,
    value: u32,
    elem: usize,
    width: usize,
    height: usize,
    stream_h: CUstream,
) -> R {
    let ctx = state::current_ctx(&state::state())?;
    let job = set_job(dst, pitch, value, elem, width, height)?;
    if let Some(r) = graph::capture::divert(stream_h, || {
        NodeKind::Memset(CUDA_MEMSET_NODE_PARAMS {
            dst,
            pitch,
            value,
            elementSize: elem as c_uint,
            width,
            height,
        })
    }) {
        return r;
    }
    match job {
        Some(job) => stream::submit(ctx, stream_h, job),
        None => Ok(()),
    }
}

/// The work of a memset (see [`set`]), checked now; `None` if it sets nothing. Also
/// what a graph's memset node runs.
pub(crate) fn set_job(
    dst: u64,
    pitch: usize,
    value: u32,
    elem: usize,
    width: usize,
    height: usize,
) -> R<Option<stream::Job>> {
    if !matches!(elem, 1 | 2 | 4) {
        return Err(code::INVALID_VALUE);
    }
    if width == 0 || height == 0 {
        return Ok(None);
    }
    let row = width.checked_mul(elem).ok_or(code::INVALID_VALUE)?;
    if !dst.is_multiple_of(elem as u64) || (height > 1 && pitch < row) {
        return Err(code::INVALID_VALUE);
    }
    let span = pitch
        .checked_mul(height - 1)
        .and_then(|r| r.checked_add(row))
        .ok_or(code::INVALID_VALUE)?;
    let ds = check_side(dst, span, true)?;
    // One element as it lies in memory.
    let mut unit = [0u8; 4];
    match elem {
        1 => unit[0] = value as u8,
        2 => unit[..2].copy_from_slice(&(value as u16).to_ne_bytes()),
        _ => unit = value.to_ne_bytes(),
    }
    let d = P(dst as *mut u8);
    Ok(Some(Box::new(move || {
        let d = d; // move the Send wrapper, not its field
        let _work = devmem::work();
        devmem::recheck(&[ds])?;
        for r in 0..height {
            // SAFETY: every row lies inside the checked span, alive while `_work`
            // is held (`crate::devmem`).
            unsafe { devmem::fill(d.0.add(r * pitch), &unit[..elem], row) };
        }
        Ok(())
    })))
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

/// One side of a 2-D/3-D copy: its base address and whether it is device memory.
fn side(ty: CUmemorytype, host: *const c_void, dev: CUdeviceptr) -> R<(u64, bool)> {
    match ty {
        CU_MEMORYTYPE_HOST => Ok((host as u64, false)),
        CU_MEMORYTYPE_DEVICE => Ok((dev, true)),
        CU_MEMORYTYPE_UNIFIED => Ok((dev, false)),
        CU_MEMORYTYPE_ARRAY => Err(code::NOT_SUPPORTED), // CUDA arrays: not implemented
        _ => Err(code::INVALID_VALUE),
    }
}

/// The work of a copy of a `width × height × depth` box between two pitched
/// layouts, checked now; `None` if it copies nothing.
fn copy_box_job(
    (src, src_dev, src_pitch, src_height): (u64, bool, usize, usize),
    (dst, dst_dev, dst_pitch, dst_height): (u64, bool, usize, usize),
    width: usize,
    height: usize,
    depth: usize,
) -> R<Option<stream::Job>> {
    if width == 0 || height == 0 || depth == 0 {
        return Ok(None);
    }
    let src_pitch = if src_pitch == 0 { width } else { src_pitch };
    let dst_pitch = if dst_pitch == 0 { width } else { dst_pitch };
    if src_pitch < width || dst_pitch < width || src_height < height || dst_height < height {
        return Err(code::INVALID_VALUE);
    }
    let span = |pitch: usize, rows: usize| {
        pitch
            .checked_mul(rows.checked_mul(depth - 1)?.checked_add(height - 1)?)?
            .checked_add(width)
    };
    let (ss, ds) = (
        span(src_pitch, src_height).ok_or(code::INVALID_VALUE)?,
        span(dst_pitch, dst_height).ok_or(code::INVALID_VALUE)?,
    );
    if src == 0 || dst == 0 {
        return Err(code::INVALID_VALUE);
    }
    let (src_span, dst_span) = (check_side(src, ss, src_dev)?, check_side(dst, ds, dst_dev)?);
    let (s, d) = (P(src as *mut u8), P(dst as *mut u8));
    Ok(Some(Box::new(move || {
        let (s, d) = (s, d); // move the Send wrappers, not their fields
        let _work = devmem::work();
        devmem::recheck(&[src_span, dst_span])?;
        for z in 0..depth {
            for y in 0..height {
                // SAFETY: rows lie inside the checked spans, alive while `_work` is
                // held (mapped sides, `crate::devmem`), or the caller's buffers
                // (host sides, per the C contract; they never overlap mapped ones).
                unsafe {
                    let from = s.0.add((z * src_height + y) * src_pitch);
                    let to = d.0.add((z * dst_height + y) * dst_pitch);
                    devmem::copy(to, dst_span.is_some(), from, src_span.is_some(), width);
                }
            }
        }
        Ok(())
    })))
}

/// Queues `job` (if any) on `stream_h`, or, on a capturing stream, adds a memcpy
/// node doing `c` to the capture instead.
fn issue_copy(stream_h: CUstream, job: Option<stream::Job>, c: CUDA_MEMCPY3D) -> R {
    let ctx = state::current_ctx(&state::state())?;
    if let Some(r) = graph::capture::divert(stream_h, || NodeKind::Memcpy(Raw(c))) {
        return r;
    }
    match job {
        Some(job) => stream::submit(ctx, stream_h, job),
        None => Ok(()),
    }
}

/// `base + (y * pitch + x)`, or `INVALID_VALUE` if it overflows.
fn offset(base: u64, x: usize, y: usize, pitch: usize) -> R<u64> {
    y.checked_mul(pitch)
        .and_then(|o| o.checked_add(x))
        .and_then(|o| base.checked_add(o as u64))
        .ok_or(code::INVALID_VALUE)
}

fn memcpy2d(p: *const CUDA_MEMCPY2D, stream_h: CUstream) -> R {
    if p.is_null() {
        return Err(code::INVALID_VALUE);
    }
    // SAFETY: a valid descriptor, by the C contract.
    let c = unsafe { *p };
    let (src, sd) = side(c.srcMemoryType, c.srcHost, c.srcDevice)?;
    let (dst, dd) = side(c.dstMemoryType, c.dstHost, c.dstDevice)?;
    let src = offset(src, c.srcXInBytes, c.srcY, c.srcPitch.max(c.WidthInBytes))?;
    let dst = offset(dst, c.dstXInBytes, c.dstY, c.dstPitch.max(c.WidthInBytes))?;
    state::current_ctx(&state::state())?;
    let job = copy_box_job(
        (src, sd, c.srcPitch, c.Height),
        (dst, dd, c.dstPitch, c.Height),
        c.WidthInBytes,
        c.Height,
        1,
    )?;
    let null = core::ptr::null_mut();
    let as_3d = CUDA_MEMCPY3D {
        srcXInBytes: c.srcXInBytes,
        srcY: c.srcY,
        srcZ: 0,
        srcLOD: 0,
        srcMemoryType: c.srcMemoryType,
        srcHost: c.srcHost,
        srcDevice: c.srcDevice,
        srcArray: c.srcArray,
        reserved0: null,
        srcPitch: c.srcPitch,
        srcHeight: c.Height,
        dstXInBytes: c.dstXInBytes,
        dstY: c.dstY,
        dstZ: 0,
        dstLOD: 0,
        dstMemoryType: c.dstMemoryType,
        dstHost: c.dstHost,
        dstDevice: c.dstDevice,
        dstArray: c.dstArray,
        reserved1: null,
        dstPitch: c.dstPitch,
        dstHeight: c.Height,
        WidthInBytes: c.WidthInBytes,
        Height: c.Height,
        Depth: 1,
    };
    issue_copy(stream_h, job, as_3d)
}

fn memcpy3d(p: *const CUDA_MEMCPY3D, stream_h: CUstream) -> R {
    if p.is_null() {
        return Err(code::INVALID_VALUE);
    }
    // SAFETY: a valid descriptor, by the C contract.
    let c = unsafe { *p };
    state::current_ctx(&state::state())?;
    let job = memcpy3d_job(&c)?;
    issue_copy(stream_h, job, c)
}

/// The work of the copy `c` describes, checked now (except the context); `None` if
/// it copies nothing. Also what a graph's memcpy node runs.
pub(crate) fn memcpy3d_job(c: &CUDA_MEMCPY3D) -> R<Option<stream::Job>> {
    if c.srcLOD != 0 || c.dstLOD != 0 {
        return Err(code::INVALID_VALUE);
    }
    let (src, sd) = side(c.srcMemoryType, c.srcHost, c.srcDevice)?;
    let (dst, dd) = side(c.dstMemoryType, c.dstHost, c.dstDevice)?;
    let sp = c.srcPitch.max(c.WidthInBytes);
    let dp = c.dstPitch.max(c.WidthInBytes);
    let (sh, dh) = (c.srcHeight.max(c.Height), c.dstHeight.max(c.Height));
    let row = |z: usize, h: usize, y: usize| z.checked_mul(h)?.checked_add(y);
    let src = offset(
        src,
        c.srcXInBytes,
        row(c.srcZ, sh, c.srcY).ok_or(code::INVALID_VALUE)?,
        sp,
    )?;
    let dst = offset(
        dst,
        c.dstXInBytes,
        row(c.dstZ, dh, c.dstY).ok_or(code::INVALID_VALUE)?,
        dp,
    )?;
    copy_box_job(
        (src, sd, sp, sh),
        (dst, dd, dp, dh),
        c.WidthInBytes,
        c.Height,
        c.Depth,
    )
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
    let managed = super::managed::is_managed(base, a.id);
    let host = !matches!(a.kind, AllocKind::Device);
    match attr {
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
            super::pool::pool_of(base).unwrap_or(core::ptr::null_mut()),
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

const IPC_MAGIC: &[u8; 8] = b"softcuda";

/// `cuIpcGetMemHandle`: within this process, a handle names the allocation.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuIpcGetMemHandle(
    handle: *mut CUipcMemHandle,
    ptr: CUdeviceptr,
) -> CUresult {
    api!("cuIpcGetMemHandle", {
        state::current_ctx(&state::state())?;
        let a = *state::memory()
            .get(&ptr)
            .filter(|a| a.kind == AllocKind::Device)
            .ok_or(code::INVALID_VALUE)?;
        let mut h = CUipcMemHandle { reserved: [0; 64] };
        h.reserved[..8].copy_from_slice(IPC_MAGIC);
        h.reserved[8..16].copy_from_slice(&ptr.to_le_bytes());
        h.reserved[16..24].copy_from_slice(&a.id.to_le_bytes());
        out(handle, h)
    })
}

/// `cuIpcOpenMemHandle_v2`: the allocation's own address.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuIpcOpenMemHandle_v2(
    dptr: *mut CUdeviceptr,
    handle: CUipcMemHandle,
    _flags: c_uint,
) -> CUresult {
    api!("cuIpcOpenMemHandle", {
        let mut s = state::state();
        let ctx = state::current_ctx(&s)?;
        let r = &handle.reserved;
        if &r[..8] != IPC_MAGIC {
            return Err(code::INVALID_VALUE);
        }
        let mut word = [0u8; 8];
        word.copy_from_slice(&r[8..16]);
        let ptr = u64::from_le_bytes(word);
        word.copy_from_slice(&r[16..24]);
        let id = u64::from_le_bytes(word);
        state::memory()
            .get(&ptr)
            .filter(|a| a.id == id)
            .ok_or(code::INVALID_VALUE)?;
        out(dptr, ptr)?;
        // Mapped into the opening context: its kernels may touch it.
        s.ipc_opened.insert((ctx, id));
        Ok(())
    })
}

/// `cuIpcCloseMemHandle`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuIpcCloseMemHandle(dptr: CUdeviceptr) -> CUresult {
    api!("cuIpcCloseMemHandle", {
        let mut s = state::state();
        let ctx = state::current_ctx(&s)?;
        let id = state::memory().get(&dptr).ok_or(code::INVALID_VALUE)?.id;
        s.ipc_opened.remove(&(ctx, id));
        Ok(())
    })
}

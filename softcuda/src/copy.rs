//! Copies and memsets as stream work: the range checks of each side (device,
//! mapped or plain host memory) and the jobs that run them, for the copy and memset
//! exports and for graph copy and memset nodes. Either side of a 2-D/3-D copy may
//! be a CUDA array (`crate::array`).

use crate::devmem::{self, Span};
use crate::graph::{self, NodeKind, Raw};
use crate::state::{self, R};
use crate::stream;
use crate::types::*;
use core::ffi::{c_uint, c_void};
use std::sync::Arc;

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

/// Checks one side of a copy or memset: `Some` if it lies in mapped memory (device,
/// pinned or registered), `None` for plain host memory; `INVALID_VALUE` if it
/// straddles mapped memory, if `device` and it is not mapped, or if it touches the
/// device address space without lying in live memory there (a freed device address
/// is never host memory: `crate::devspace`).
pub(crate) fn check_side(addr: u64, len: usize, device: bool) -> R<Option<Span>> {
    let mut span = devmem::classify(&state::memory(), addr, len as u64)?;
    if span.is_none() {
        span = crate::pool::pending_span(addr, len as u64);
    }
    if span.is_none() && GRAPH_CHECK.with(core::cell::Cell::get) {
        span = graph::mem::reserved_span(addr, len as u64);
    }
    if span.is_none() && (device || crate::devspace::overlaps(addr, len as u64)) {
        return Err(code::INVALID_VALUE);
    }
    if span.is_none() {
        crate::sanitize::streamcheck::host_side();
    }
    Ok(span)
}

/// A pointer that may cross to a stream's worker: the caller keeps the memory valid
/// until the work completes, as the driver's contract requires.
#[derive(Clone, Copy)]
pub(crate) struct P(*mut u8);
// SAFETY: see the type's doc: the pointee's lifetime is the caller's promise.
unsafe impl Send for P {}

/// Copies `n` bytes on `stream` (default stream: now). The sides are checked now
/// (device sides must be device-accessible memory; any side that is mapped memory is
/// then accessed atomically, see `crate::devmem`) and again when the copy runs.
pub(crate) fn copy(
    dst: u64,
    dst_dev: bool,
    src: u64,
    src_dev: bool,
    n: usize,
    stream_h: CUstream,
) -> R {
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
    let job: stream::Job = Box::new(move || {
        let (d, s) = (d, s); // move the Send wrappers, not their fields
        let _work = devmem::work();
        devmem::recheck(&[ds, ss])?;
        // SAFETY: mapped sides are alive and stay so while `_work` is held
        // (`crate::devmem`); host sides are the caller's, valid until the copy
        // completes (the driver's contract; a plain host side: until the call
        // returns, see `submit_copy`), and never overlap mapped ones.
        unsafe { devmem::copy(d.0, ds.is_some(), s.0, ss.is_some(), n) };
        Ok(())
    });
    submit_copy(ctx, stream_h, job, ds.is_none() || ss.is_none())
}

/// Queues copy `job` on `stream_h`. `plain`: a side lies in plain (pageable) host
/// memory; on a created stream the call then returns only once the copy has run,
/// after the stream's earlier work (the driver may synchronise with the stream for
/// such a copy, and C callers free or reuse pageable memory once the call returns).
fn submit_copy(ctx: u64, stream_h: CUstream, job: stream::Job, plain: bool) -> R {
    if plain && stream::is_created(stream_h) {
        stream::submit_and_wait(ctx, stream_h, job)
    } else {
        stream::submit(ctx, stream_h, job)
    }
}

/// A 1-D copy of `n` bytes as a `CUDA_MEMCPY3D` (a captured copy's node).
pub(crate) fn linear_copy(
    dst: u64,
    dst_dev: bool,
    src: u64,
    src_dev: bool,
    n: usize,
) -> CUDA_MEMCPY3D {
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

/// Fills `width` elements of `elem` bytes in each of `height` rows `pitch` apart.
/// The whole span is checked now and again when the fill runs; the stores are
/// atomic (see `crate::devmem`).
pub(crate) fn set(
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

/// One side of a 2-D/3-D copy: its base address and whether it is device memory
/// (CUDA arrays: [`plane`]).
pub(crate) fn side(ty: CUmemorytype, host: *const c_void, dev: CUdeviceptr) -> R<(u64, bool)> {
    match ty {
        CU_MEMORYTYPE_HOST => Ok((host as u64, false)),
        CU_MEMORYTYPE_DEVICE => Ok((dev, true)),
        CU_MEMORYTYPE_UNIFIED => Ok((dev, false)),
        _ => Err(code::INVALID_VALUE),
    }
}

/// What one side of a 2-D/3-D copy is: linear memory (device memory if `dev`), or
/// a CUDA array's storage (`crate::array`), held while the copy may run.
pub(crate) enum Mem {
    Linear { dev: bool },
    Array(Arc<crate::array::Store>),
}

/// One side of a 2-D/3-D copy, resolved: the address of its first byte, the bytes
/// from one row to the next, the rows from one slice to the next, and its memory.
pub(crate) struct Plane {
    pub addr: u64,
    pub pitch: usize,
    pub height: usize,
    pub mem: Mem,
}

/// The fields of one side of a `CUDA_MEMCPY3D`.
pub(crate) struct SideDesc {
    pub ty: CUmemorytype,
    pub host: *const c_void,
    pub dev: CUdeviceptr,
    pub array: *mut c_void,
    pub at: (usize, usize, usize),
    pub pitch: usize,
    pub height: usize,
}

/// Resolves one side of a copy of `extent` (width in bytes, height, depth) bytes:
/// a CUDA array's window, checked against its dimensions (`crate::array::window`),
/// or linear memory at `(x, y, z)` of rows `pitch` apart (at least the width) and
/// slices `height` rows apart (at least the copy's). `strict`: a non-zero pitch
/// below the width is refused (2-D copies) rather than widened (3-D copies).
pub(crate) fn plane(d: &SideDesc, extent: (usize, usize, usize), strict: bool) -> R<Plane> {
    let (width, height, _) = extent;
    let (x, y, z) = d.at;
    if d.ty == CU_MEMORYTYPE_ARRAY {
        let w = crate::array::window(d.array, d.at, extent)?;
        return Ok(Plane {
            addr: w.addr,
            pitch: w.pitch,
            height: w.rows,
            mem: Mem::Array(w.store),
        });
    }
    let (base, dev) = side(d.ty, d.host, d.dev)?;
    let step = d.pitch.max(width);
    let rows = d.height.max(height);
    let row = z
        .checked_mul(rows)
        .and_then(|r| r.checked_add(y))
        .ok_or(code::INVALID_VALUE)?;
    Ok(Plane {
        addr: offset(base, x, row, step)?,
        pitch: if strict { d.pitch } else { step },
        height: rows,
        mem: Mem::Linear { dev },
    })
}

/// The work of a copy of a `width × height × depth` box between two planes,
/// checked now, and whether a side is plain host memory; `None` if it copies
/// nothing. Linear sides are checked against the memory map now and again when the
/// copy runs; array sides are held and must still live then
/// (`CUDA_ERROR_ILLEGAL_ADDRESS` otherwise). Array bytes are accessed atomically,
/// like mapped memory.
pub(crate) fn copy_box_job(
    src: Plane,
    dst: Plane,
    width: usize,
    height: usize,
    depth: usize,
) -> R<Option<(stream::Job, bool)>> {
    if width == 0 || height == 0 || depth == 0 {
        return Ok(None);
    }
    let src_pitch = if src.pitch == 0 { width } else { src.pitch };
    let dst_pitch = if dst.pitch == 0 { width } else { dst.pitch };
    let (src_height, dst_height) = (src.height, dst.height);
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
    if src.addr == 0 || dst.addr == 0 {
        return Err(code::INVALID_VALUE);
    }
    // Each side: its span in the memory map (linear), or its array's storage, and
    // whether it is accessed atomically.
    let resolve =
        |p: Plane, len: usize| -> R<(Option<Span>, Option<Arc<crate::array::Store>>, bool)> {
            match p.mem {
                Mem::Linear { dev } => {
                    let span = check_side(p.addr, len, dev)?;
                    let mapped = span.is_some();
                    Ok((span, None, mapped))
                }
                Mem::Array(store) => Ok((None, Some(store), true)),
            }
        };
    let (s, d) = (P(src.addr as *mut u8), P(dst.addr as *mut u8));
    let (src_span, src_store, src_mapped) = resolve(src, ss)?;
    let (dst_span, dst_store, dst_mapped) = resolve(dst, ds)?;
    let job: stream::Job = Box::new(move || {
        let (s, d) = (s, d); // move the Send wrappers, not their fields
        let _work = devmem::work();
        devmem::recheck(&[src_span, dst_span])?;
        if [&src_store, &dst_store]
            .into_iter()
            .flatten()
            .any(|a| !a.alive())
        {
            return Err(code::ILLEGAL_ADDRESS); // an array destroyed meanwhile
        }
        for z in 0..depth {
            for y in 0..height {
                // SAFETY: rows lie inside the checked spans, alive while `_work` is
                // held (mapped sides, `crate::devmem`), inside the held arrays'
                // storage (array sides, checked by `crate::array::window`, accessed
                // atomically), or the caller's buffers (host sides, per the C
                // contract; they never overlap mapped memory or array storage).
                unsafe {
                    let from = s.0.add((z * src_height + y) * src_pitch);
                    let to = d.0.add((z * dst_height + y) * dst_pitch);
                    devmem::copy(to, dst_mapped, from, src_mapped, width);
                }
            }
        }
        Ok(())
    });
    Ok(Some((job, !src_mapped || !dst_mapped)))
}

/// Queues `job` (if any; with whether a side is plain host memory, see
/// `submit_copy`) on `stream_h`, or, on a capturing stream, adds a memcpy node
/// doing `c` to the capture instead.
pub(crate) fn issue_copy(
    stream_h: CUstream,
    job: Option<(stream::Job, bool)>,
    c: CUDA_MEMCPY3D,
) -> R {
    let ctx = state::current_ctx(&state::state())?;
    if let Some(r) = graph::capture::divert(stream_h, || NodeKind::Memcpy(Raw(c))) {
        return r;
    }
    match job {
        Some((job, plain)) => submit_copy(ctx, stream_h, job, plain),
        None => Ok(()),
    }
}

/// `base + (y * pitch + x)`, or `INVALID_VALUE` if it overflows.
pub(crate) fn offset(base: u64, x: usize, y: usize, pitch: usize) -> R<u64> {
    y.checked_mul(pitch)
        .and_then(|o| o.checked_add(x))
        .and_then(|o| base.checked_add(o as u64))
        .ok_or(code::INVALID_VALUE)
}

/// A 2-D copy (`cuMemcpy2D*`): as a 3-D copy of depth 1, except that a non-zero
/// pitch below the width is refused.
pub(crate) fn memcpy2d(p: *const CUDA_MEMCPY2D, stream_h: CUstream) -> R {
    if p.is_null() {
        return Err(code::INVALID_VALUE);
    }
    // SAFETY: a valid descriptor, by the C contract.
    let c = unsafe { *p };
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
    state::current_ctx(&state::state())?;
    let job = box_job(&as_3d, true)?;
    issue_copy(stream_h, job, as_3d)
}

pub(crate) fn memcpy3d(p: *const CUDA_MEMCPY3D, stream_h: CUstream) -> R {
    if p.is_null() {
        return Err(code::INVALID_VALUE);
    }
    // SAFETY: a valid descriptor, by the C contract.
    copy3d(unsafe { *p }, stream_h)
}

/// The copy `c` describes, checked now, queued on `stream_h` (captured on a
/// capturing stream).
pub(crate) fn copy3d(c: CUDA_MEMCPY3D, stream_h: CUstream) -> R {
    state::current_ctx(&state::state())?;
    let job = memcpy3d_job(&c)?;
    issue_copy(stream_h, job, c)
}

/// The work of the copy `c` describes, checked now (except the context), and
/// whether a side is plain host memory; `None` if it copies nothing. Also what a
/// graph's memcpy node runs.
pub(crate) fn memcpy3d_job(c: &CUDA_MEMCPY3D) -> R<Option<(stream::Job, bool)>> {
    box_job(c, false)
}

/// [`memcpy3d_job`]; `strict`: pitches as a 2-D copy takes them (see [`plane`]).
fn box_job(c: &CUDA_MEMCPY3D, strict: bool) -> R<Option<(stream::Job, bool)>> {
    if c.srcLOD != 0 || c.dstLOD != 0 {
        return Err(code::INVALID_VALUE);
    }
    let extent = (c.WidthInBytes, c.Height, c.Depth);
    let src = plane(
        &SideDesc {
            ty: c.srcMemoryType,
            host: c.srcHost,
            dev: c.srcDevice,
            array: c.srcArray,
            at: (c.srcXInBytes, c.srcY, c.srcZ),
            pitch: c.srcPitch,
            height: c.srcHeight,
        },
        extent,
        strict,
    )?;
    let dst = plane(
        &SideDesc {
            ty: c.dstMemoryType,
            host: c.dstHost,
            dev: c.dstDevice,
            array: c.dstArray,
            at: (c.dstXInBytes, c.dstY, c.dstZ),
            pitch: c.dstPitch,
            height: c.dstHeight,
        },
        extent,
        strict,
    )?;
    copy_box_job(src, dst, c.WidthInBytes, c.Height, c.Depth)
}

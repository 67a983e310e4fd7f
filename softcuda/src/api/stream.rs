//! Streams, events and host functions.

use super::out;
use crate::graph::{NodeKind, Raw, capture};
use crate::sanitize::streamcheck;
use crate::state::{self, Kind, R};
use crate::stream::{self as st, Event, Stream};
use crate::types::*;
use core::ffi::{c_float, c_int, c_uint, c_void};
use std::sync::Arc;

fn stream_of(h: CUstream) -> R<Arc<Stream>> {
    let id = state::id_of(Kind::Stream, h).ok_or(code::INVALID_HANDLE)?;
    let s = state::state();
    // A stream of a destroyed green context is `STREAM_DETACHED`.
    s.streams
        .get(&id)
        .cloned()
        .ok_or_else(|| crate::green::missing_stream(&s, id))
}

fn event_of(h: CUevent) -> R<Arc<Event>> {
    let id = state::id_of(Kind::Event, h).ok_or(code::INVALID_HANDLE)?;
    state::state()
        .events
        .get(&id)
        .cloned()
        .ok_or(code::INVALID_HANDLE)
}

fn create_stream(ph: *mut CUstream, flags: c_uint, priority: c_int) -> R {
    if ph.is_null() || flags & !st::NON_BLOCKING != 0 {
        return Err(code::INVALID_VALUE);
    }
    let mut s = state::state();
    let ctx = state::current_ctx(&s)?;
    let sticky = state::sticky_of(&s, ctx)?;
    let stream = Stream::spawn(ctx, sticky, flags, priority.clamp(-5, 0))?;
    // In a green context, the waits of `cuGreenCtxWaitEvent` come first.
    for (e, generation) in crate::green::gates(&s, ctx) {
        stream.submit(st::Work::Wait(e, generation));
    }
    let id = s.next_id();
    s.streams.insert(id, stream);
    out(ph, state::handle(Kind::Stream, id))
}

/// `cuStreamCreate`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuStreamCreate(ph: *mut CUstream, flags: c_uint) -> CUresult {
    api!("cuStreamCreate", { create_stream(ph, flags, 0) })
}

/// `cuStreamCreateWithPriority`: priorities clamp to [-5, 0], as the driver does.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuStreamCreateWithPriority(
    ph: *mut CUstream,
    flags: c_uint,
    priority: c_int,
) -> CUresult {
    api!("cuStreamCreateWithPriority", {
        create_stream(ph, flags, priority)
    })
}

/// `cuStreamDestroy_v2`: returns at once, as on the driver; queued work still
/// completes (or, in a poisoned context, is discarded), and until it has, the stream
/// is "retiring": `cuCtxSynchronize`, the legacy stream and the implicit
/// synchronisation of `cuMemFree` and the other frees wait for it (see
/// `crate::stream::retire`).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuStreamDestroy_v2(h: CUstream) -> CUresult {
    api!("cuStreamDestroy", {
        let id = state::id_of(Kind::Stream, h).ok_or(code::INVALID_HANDLE)?;
        let mut s = state::state();
        state::require_init(&s)?;
        if s.green.detached.remove(&id) {
            return Ok(()); // a stream of a destroyed green context: its worker is gone
        }
        let stream = s.streams.remove(&id).ok_or(code::INVALID_HANDLE)?;
        st::retire(&mut s, stream);
        drop(s);
        capture::stream_destroyed(id);
        Ok(())
    })
}

/// The stream's work on a default stream is always complete (see `stream.rs`).
fn default_stream(h: CUstream) -> bool {
    !st::is_created(h)
}

/// `cuStreamSynchronize`. After a sticky error it reports the error only once the
/// stream's worker has finished the operation it was running and discarded the rest
/// (see `crate::stream`).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuStreamSynchronize(h: CUstream) -> CUresult {
    api!("cuStreamSynchronize", {
        let ctx = state::current_live(&state::state())?;
        capture::sync_check(h, ctx)?;
        if default_stream(h) {
            st::synchronize_default(ctx, h)?;
        } else {
            stream_of(h)?.synchronize()?;
        }
        host_synced(ctx, h);
        Ok(())
    })
}

/// streamcheck: the calling thread knows the work on `h` so far is done.
fn host_synced(ctx: u64, h: CUstream) {
    if streamcheck::on()
        && let Some(q) = st::lane_of(ctx, h)
    {
        streamcheck::host_syncs(&q);
    }
}

/// `cuStreamQuery`: after a sticky error, `NOT_READY` until the stream's worker has
/// stopped, then the error.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuStreamQuery(h: CUstream) -> CUresult {
    api!("cuStreamQuery", {
        let ctx = state::current_live(&state::state())?;
        capture::sync_check(h, ctx)?;
        if default_stream(h) {
            st::query_default(ctx, h)?;
        } else {
            stream_of(h)?.query()?;
        }
        host_synced(ctx, h);
        Ok(())
    })
}

/// `cuStreamGetFlags`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuStreamGetFlags(h: CUstream, flags: *mut c_uint) -> CUresult {
    api!("cuStreamGetFlags", {
        state::current_ctx(&state::state())?;
        let f = if default_stream(h) {
            0
        } else {
            stream_of(h)?.flags
        };
        out(flags, f)
    })
}

/// `cuStreamGetPriority`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuStreamGetPriority(h: CUstream, priority: *mut c_int) -> CUresult {
    api!("cuStreamGetPriority", {
        state::current_ctx(&state::state())?;
        let p = if default_stream(h) {
            0
        } else {
            stream_of(h)?.priority
        };
        out(priority, p)
    })
}

/// `cuStreamGetCtx`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuStreamGetCtx(h: CUstream, pctx: *mut CUcontext) -> CUresult {
    api!("cuStreamGetCtx", {
        let ctx = state::current_ctx(&state::state())?;
        let c = if default_stream(h) {
            ctx
        } else {
            stream_of(h)?.ctx
        };
        out(pctx, state::handle(Kind::Context, c))
    })
}

/// `cuStreamWaitEvent`: later work on `h` waits for the event's last record.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuStreamWaitEvent(h: CUstream, ev: CUevent, flags: c_uint) -> CUresult {
    api!("cuStreamWaitEvent", {
        if flags & !0x1 != 0 {
            return Err(code::INVALID_VALUE);
        }
        let ctx = state::current_ctx(&state::state())?;
        let e = event_of(ev)?;
        let blocking = default_stream(h) || stream_of(h)?.flags & st::NON_BLOCKING == 0;
        let id = state::id_of(Kind::Event, ev).ok_or(code::INVALID_HANDLE)?;
        if let Some(r) = capture::wait(h, id, &e, flags, blocking) {
            return r;
        }
        st::target(ctx, h)?.run(e.waiter())
    })
}

/// A user pointer handed back to a callback on the stream's worker.
#[derive(Clone, Copy)]
struct UserData(*mut c_void);
// SAFETY: the pointer is only passed back to the caller's own callback, as in CUDA.
unsafe impl Send for UserData {}

/// `cuLaunchHostFunc`: `f(data)` runs in stream order. A panic inside it is caught.
/// As on the driver, it is not called once the context has a sticky error.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuLaunchHostFunc(h: CUstream, f: CUhostFn, data: *mut c_void) -> CUresult {
    api!("cuLaunchHostFunc", {
        let f = f.ok_or(code::INVALID_VALUE)?;
        let ctx = state::current_ctx(&state::state())?;
        if let Some(r) = capture::divert(h, || {
            NodeKind::Host(Raw(CUDA_HOST_NODE_PARAMS {
                fn_: Some(f),
                userData: data,
            }))
        }) {
            return r;
        }
        let d = UserData(data);
        st::submit(
            ctx,
            h,
            Box::new(move || {
                let d = d;
                // SAFETY: the caller's host function with its own data pointer.
                unsafe { f(d.0) };
                Ok(())
            }),
        )
    })
}

/// A stream handle passed back to a callback.
#[derive(Clone, Copy)]
struct Handle(CUstream);
// SAFETY: a handle is an opaque number.
unsafe impl Send for Handle {}

/// `cuStreamAddCallback`: called exactly once, in stream order, with `CUDA_SUCCESS` or,
/// once the context has a sticky error, that error (as the driver documents).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuStreamAddCallback(
    h: CUstream,
    cb: CUstreamCallback,
    data: *mut c_void,
    flags: c_uint,
) -> CUresult {
    api!("cuStreamAddCallback", {
        let cb = cb.ok_or(code::INVALID_VALUE)?;
        if flags != 0 {
            return Err(code::INVALID_VALUE);
        }
        let ctx = state::current_ctx(&state::state())?;
        capture::refuse_on(h)?;
        let (d, hh) = (UserData(data), Handle(h));
        st::target(ctx, h)?.run(st::Work::Callback(Box::new(move |status| {
            let (d, hh) = (d, hh);
            // SAFETY: the caller's callback with its own data pointer.
            unsafe { cb(hh.0, status, d.0) };
        })))
    })
}

/// `cuEventCreate`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuEventCreate(ph: *mut CUevent, flags: c_uint) -> CUresult {
    api!("cuEventCreate", {
        // DEFAULT, BLOCKING_SYNC, DISABLE_TIMING; INTERPROCESS needs DISABLE_TIMING.
        if ph.is_null()
            || flags & !0x7 != 0
            || (flags & 0x4 != 0 && flags & st::DISABLE_TIMING == 0)
        {
            return Err(code::INVALID_VALUE);
        }
        let mut s = state::state();
        let ctx = state::current_ctx(&s)?;
        let id = s.next_id();
        let sticky = state::sticky_of(&s, ctx)?;
        // An interprocess event keeps its state in shared memory (Linux; elsewhere
        // it is an ordinary event and `cuIpcGetEventHandle` refuses it).
        let shared = match flags & CU_EVENT_INTERPROCESS != 0 && crate::ipc::SUPPORTED {
            true => Some(crate::ipc::event::Shared::create(id)?),
            false => None,
        };
        s.events
            .insert(id, Event::with_shared(ctx, sticky, flags, shared));
        out(ph, state::handle(Kind::Event, id))
    })
}

/// `cuEventDestroy_v2`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuEventDestroy_v2(h: CUevent) -> CUresult {
    api!("cuEventDestroy", {
        let id = state::id_of(Kind::Event, h).ok_or(code::INVALID_HANDLE)?;
        let mut s = state::state();
        state::require_init(&s)?;
        s.events.remove(&id).map(|_| ()).ok_or(code::INVALID_HANDLE)
    })
}

/// `cuEventRecord`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuEventRecord(h: CUevent, stream: CUstream) -> CUresult {
    api!("cuEventRecord", {
        let ctx = state::current_ctx(&state::state())?;
        record(h, stream, ctx, false)
    })
}

/// Records event `h` on `stream`; in a capturing stream, see `capture::record`.
fn record(h: CUevent, stream: CUstream, ctx: u64, external: bool) -> R {
    let e = event_of(h)?;
    let id = state::id_of(Kind::Event, h).ok_or(code::INVALID_HANDLE)?;
    if let Some(r) = capture::record(id, &e, stream, external) {
        return r;
    }
    e.record(ctx, stream)
}

/// `cuEventRecordWithFlags`: `CU_EVENT_RECORD_EXTERNAL` makes an event-record node
/// in a capturing stream, and is an ordinary record elsewhere.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuEventRecordWithFlags(
    h: CUevent,
    stream: CUstream,
    flags: c_uint,
) -> CUresult {
    api!("cuEventRecordWithFlags", {
        if flags & !CU_EVENT_EXTERNAL != 0 {
            return Err(code::INVALID_VALUE);
        }
        let ctx = state::current_ctx(&state::state())?;
        record(h, stream, ctx, flags == CU_EVENT_EXTERNAL)
    })
}

/// `cuEventQuery`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuEventQuery(h: CUevent) -> CUresult {
    api!("cuEventQuery", {
        state::require_init(&state::state())?;
        let e = event_of(h)?;
        capture::event_check(state::id_of(Kind::Event, h).unwrap_or_default())?;
        e.query()?;
        streamcheck::host_syncs_event(Arc::as_ptr(&e) as usize);
        Ok(())
    })
}

/// `cuEventSynchronize`: after a sticky error, returns (the error) once the record
/// was reached by its stream's worker, which then runs nothing more.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuEventSynchronize(h: CUevent) -> CUresult {
    api!("cuEventSynchronize", {
        state::require_init(&state::state())?;
        let e = event_of(h)?;
        capture::event_check(state::id_of(Kind::Event, h).unwrap_or_default())?;
        e.synchronize()?;
        streamcheck::host_syncs_event(Arc::as_ptr(&e) as usize);
        Ok(())
    })
}

/// `cuEventElapsedTime`: milliseconds of host time between the two records.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuEventElapsedTime(
    ms: *mut c_float,
    start: CUevent,
    end: CUevent,
) -> CUresult {
    api!("cuEventElapsedTime", {
        state::require_init(&state::state())?;
        let (a, b) = (event_of(start)?, event_of(end)?);
        let t = Event::elapsed(&a, &b)?;
        out(ms, t)
    })
}

/// The stream attributes softcuda keeps: access policy window, synchronisation
/// policy, priority, memory sync domain map and domain. They are recorded and read
/// back; none changes how work is scheduled (see docs/softcuda.md).
const STREAM_ATTRIBUTES: [c_uint; 5] = [1, 3, 8, 9, 10];

fn attribute_default(s: &Stream, attr: c_uint) -> [u8; 64] {
    let mut v = [0u8; 64];
    if attr == 8 {
        v[..4].copy_from_slice(&s.priority.to_le_bytes());
    }
    v
}

/// `cuStreamGetAttribute` (`CUstreamAttrValue` is 64 bytes).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuStreamGetAttribute(
    h: CUstream,
    attr: c_uint,
    value: *mut [u8; 64],
) -> CUresult {
    api!("cuStreamGetAttribute", {
        state::current_ctx(&state::state())?;
        if !STREAM_ATTRIBUTES.contains(&attr) {
            return Err(code::INVALID_VALUE);
        }
        let s = stream_of(h)?;
        let v = st::lock(&s.attributes)
            .get(&attr)
            .copied()
            .unwrap_or_else(|| attribute_default(&s, attr));
        out(value, v)
    })
}

/// `cuStreamSetAttribute`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuStreamSetAttribute(
    h: CUstream,
    attr: c_uint,
    value: *const [u8; 64],
) -> CUresult {
    api!("cuStreamSetAttribute", {
        state::current_ctx(&state::state())?;
        if !STREAM_ATTRIBUTES.contains(&attr) || value.is_null() {
            return Err(code::INVALID_VALUE);
        }
        // SAFETY: a CUstreamAttrValue, by the C contract.
        let v = unsafe { *value };
        stream_of(h)?
            .attributes
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .insert(attr, v);
        Ok(())
    })
}

/// `cuStreamCopyAttributes`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuStreamCopyAttributes(dst: CUstream, src: CUstream) -> CUresult {
    api!("cuStreamCopyAttributes", {
        state::current_ctx(&state::state())?;
        let (d, s) = (stream_of(dst)?, stream_of(src)?);
        let copied = st::lock(&s.attributes).clone();
        *st::lock(&d.attributes) = copied;
        Ok(())
    })
}

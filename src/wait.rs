//! Waiting for queued work, and the calls that must not fail because a capture is
//! running elsewhere: a global or thread-local stream capture anywhere in the process
//! may make the driver refuse "potentially unsafe" calls on this thread. Used by the
//! frees of values being dropped and by the waits before memory is released (a
//! scope's, a stream-ordered buffer's, a peer group's, an address range's, an external
//! semaphore's).

use crate::error::{CudaError, check};
use crate::loader::Driver;
use crate::sys::{CUcontext, CUresult, CUstreamCaptureMode};

/// Calls `f`; if the driver refuses the call because a capture forbids it on this
/// thread (`CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED`: a global or thread-local capture
/// forbids "potentially unsafe" calls), calls it once more with this thread in
/// relaxed capture mode, then restores the mode. For the calls that must not fail
/// because a capture is running elsewhere: a scope's wait, and the frees of values
/// being dropped (a refused free would leak, a refused unregistration would leave
/// freed memory registered).
pub(crate) fn retry_relaxed(driver: &'static Driver, mut f: impl FnMut() -> CUresult) -> CUresult {
    let r = f();
    if r != CUresult::CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED {
        return r;
    }
    let Ok(exchange) = driver.table().cuThreadExchangeStreamCaptureMode() else {
        return r;
    };
    let mut mode = CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_RELAXED;
    // SAFETY: a valid in/out pointer to a mode.
    if check(unsafe { exchange(&mut mode) }).is_err() {
        return r;
    }
    let again = f();
    // SAFETY: as above; puts back the mode this thread had.
    let _ = unsafe { exchange(&mut mode) };
    again
}

/// Runs `wait`, a driver call that waits for work which uses memory about to be
/// released (a stream's, a context's). Success, or a sticky error (the context is
/// dead: its work was abandoned, and the driver touches no memory for it any more),
/// lets the caller release it. A capture elsewhere that forbids the wait on this
/// thread is stepped around (relaxed capture mode, for the wait only). Any other
/// failure leaves work possibly in flight with no way to wait for it, so the process
/// aborts rather than release the memory that work uses.
pub(crate) fn settled_or_abort(
    driver: &'static Driver,
    what: &str,
    wait: impl FnMut() -> CUresult,
) -> Result<(), CudaError> {
    match check(retry_relaxed(driver, wait)) {
        Err(e) if !abandoned(&e) => {
            tracing::error!(%e, "cannot wait for {what}; aborting");
            std::process::abort()
        }
        r => r,
    }
}

/// Waits for all work of context `ctx` (`cuCtxSynchronize`, with `ctx` pushed for the
/// wait: code outside the crate may have left another context current), for a value
/// being dropped whose resource that work may still use (an address range's
/// mappings, an external semaphore). Whether the work is done: the wait succeeded, or
/// failed stickily (the context's work was abandoned). Otherwise the caller keeps
/// the resource alive — a logged leak, never a release under running work.
pub(crate) fn context_settled(driver: &'static Driver, ctx: CUcontext) -> bool {
    let t = driver.table();
    let (Ok(push), Ok(pop), Ok(sync)) = (
        t.cuCtxPushCurrent(),
        t.cuCtxPopCurrent(),
        t.cuCtxSynchronize_v2000(),
    ) else {
        return false;
    };
    // SAFETY: `ctx` is alive (the caller's value is tied to its token).
    if check(unsafe { push(ctx) }).is_err() {
        return false;
    }
    // SAFETY: no arguments; `ctx` is current (pushed above).
    let r = retry_relaxed(driver, || unsafe { sync() });
    let mut popped = CUcontext::NULL;
    // SAFETY: a valid out-pointer; pops what was pushed above.
    let _ = unsafe { pop(&mut popped) };
    match check(r) {
        Ok(()) => true,
        Err(e) => abandoned(&e),
    }
}

/// Whether a failed wait's error means the work was abandoned (a sticky error: the
/// context is dead, and the driver touches no memory for it any more) — except
/// `EXTERNAL_DEVICE`, which cuda.h calls sticky only in its asynchronous form: not
/// proof enough.
pub(crate) fn abandoned(e: &CudaError) -> bool {
    e.is_sticky() && e.code() != Some(CUresult::CUDA_ERROR_EXTERNAL_DEVICE)
}

/// Releases handle `raw` of context `ctx` (counted as `kind` by the leak tracker)
/// with `destroy` — `None` where the driver lacks the function — once the context's
/// work is done ([`context_settled`]): the `Drop` of a value whose handle queued work
/// may still use (an array, a texture or surface object). A wait that fails leaves
/// the handle alive and logs it (a leak, never a release under running work); a
/// refused release is logged and leaves it counted.
///
/// # Safety
///
/// The caller owns `raw`, and nothing of this crate uses it after this.
pub(crate) unsafe fn release_settled<H: crate::leaks::Handle + core::fmt::Debug>(
    driver: &'static Driver,
    ctx: CUcontext,
    kind: crate::leaks::Kind,
    raw: H,
    destroy: Option<unsafe extern "C" fn(H) -> CUresult>,
) {
    if !context_settled(driver, ctx) {
        tracing::error!(?raw, %kind, "could not wait for its context's work; leaving it alive");
        return;
    }
    let Some(destroy) = destroy else {
        return;
    };
    // SAFETY: the caller owns `raw`; the work that may use it is done (settled above).
    let r = retry_relaxed(driver, || unsafe { destroy(raw) });
    if check(r).is_err() {
        tracing::warn!(?r, ?raw, %kind, "its release failed");
    } else {
        crate::leaks::destroyed(kind, raw);
    }
}

//! What this thread and this process are doing now, consulted by many modules: the
//! low room for state that is no one concept's own. It sits just above `sys`, below
//! the error type and the table, and uses nothing else: the layers above ask it and
//! make their own errors from the answers.
//!
//! - Whether this thread is running a host callback (a stream's host function or a
//!   graph's host node). CUDA forbids every driver call there, so the table refuses
//!   them all ([`crate::DriverTable`]'s accessors return
//!   [`CudaError::InHostCallback`](crate::CudaError::InHostCallback)) — one guard
//!   that every driver-calling path of the crate goes through, drops included (what
//!   is dropped there is leaked with a warning, never released). The mark is this
//!   copy of the crate's: a callback that another CUDA library, or another version
//!   of this crate, runs is not seen here (the driver gives no way to ask whether
//!   the calling thread is inside a host function).
//! - Which binding is innermost on this thread, and the sticky error reported
//!   during it: a sticky failure marks that binding's handle at once
//!   ([`note_failure`], which every driver error goes through; the context module's
//!   docs tell the rules).
//! - Whether a peer group binding is alive anywhere in the process (the
//!   `multi-gpu` feature): peer access is not disabled meanwhile.

use crate::sys::CUresult;
use core::cell::Cell;
use core::sync::atomic::{AtomicUsize, Ordering};

/// How many threads are inside a host callback now: while none is, the table's guard
/// is one load of this word and a branch (no thread-local lookup on the hot path).
static CALLBACKS_RUNNING: AtomicUsize = AtomicUsize::new(0);

thread_local! {
    /// Whether this thread is running a host callback (a driver thread).
    static IN_HOST_CALLBACK: Cell<bool> = const { Cell::new(false) };
}

/// Whether this thread is running a host callback now: CUDA forbids driver calls
/// there.
#[inline(always)]
pub(crate) fn in_host_callback() -> bool {
    // Relaxed: this thread's own mark is set before its own increment is visible to
    // it; another thread's count only sends us to the thread-local, which is exact.
    CALLBACKS_RUNNING.load(Ordering::Relaxed) != 0 && in_host_callback_slow()
}

#[cold]
#[inline(never)]
fn in_host_callback_slow() -> bool {
    IN_HOST_CALLBACK.with(Cell::get)
}

/// Marks the thread as running a host callback until dropped (also on unwind).
pub(crate) struct InCallback(bool);

impl InCallback {
    /// Enters the mark (nested entries restore the outer one when they end).
    pub(crate) fn enter() -> InCallback {
        CALLBACKS_RUNNING.fetch_add(1, Ordering::Relaxed);
        InCallback(IN_HOST_CALLBACK.with(|c| c.replace(true)))
    }
}

impl Drop for InCallback {
    fn drop(&mut self) {
        IN_HOST_CALLBACK.with(|c| c.set(self.0));
        CALLBACKS_RUNNING.fetch_sub(1, Ordering::Relaxed);
    }
}

thread_local! {
    /// The first sticky error reported on this thread during the innermost binding
    /// in progress (saved and restored around nested bindings).
    static STICKY: Cell<Option<CUresult>> = const { Cell::new(None) };
    /// The sticky-error mark of the handle the innermost binding in progress bound
    /// (null when none): valid while that binding lasts, which borrows the handle;
    /// saved and restored around nested bindings like `STICKY`.
    static BOUND_MARK: Cell<*const Cell<Option<CUresult>>> = const { Cell::new(core::ptr::null()) };
}

/// Notes a failure the driver reported on this thread (every driver error is made
/// through `crate::error::driver_error`, which calls it): a sticky one marks the
/// handle of the binding in progress at once, so that binding it again — a nested
/// push of the same handle included — is refused from then on.
pub(crate) fn note_failure(code: CUresult) {
    if code.is_sticky() {
        STICKY.with(|s| {
            if s.get().is_none() {
                s.set(Some(code));
            }
        });
        let mark = BOUND_MARK.with(Cell::get);
        if !mark.is_null() {
            // SAFETY: a non-null mark is the cell of the handle the innermost binding
            // in progress on this thread borrows (`bind_raw` sets it after the push and
            // restores the enclosing one before the binding ends, also on unwind);
            // handles are `!Sync`, so no other thread touches the cell.
            let mark = unsafe { &*mark };
            if mark.get().is_none() {
                mark.set(Some(code));
            }
        }
    }
}

/// The first sticky error reported on this thread during the innermost binding in
/// progress, if any.
pub(crate) fn sticky() -> Option<CUresult> {
    STICKY.with(Cell::get)
}

/// The enclosing binding's record, kept by a binding while it lasts.
pub(crate) struct Enclosing {
    sticky: Option<CUresult>,
    mark: *const Cell<Option<CUresult>>,
}

/// Makes the binding of the handle whose sticky-error mark is `mark` the innermost
/// one on this thread, with no sticky error yet; gives the enclosing binding's
/// record, for [`leave_binding`]. The caller keeps `mark` borrowed until then.
pub(crate) fn enter_binding(mark: &Cell<Option<CUresult>>) -> Enclosing {
    Enclosing {
        sticky: STICKY.with(|s| s.replace(None)),
        mark: BOUND_MARK.with(|m| m.replace(mark)),
    }
}

/// Ends the innermost binding: the enclosing one is innermost again, with its own
/// record. Gives the sticky error this binding saw, if any.
pub(crate) fn leave_binding(enclosing: &Enclosing) -> Option<CUresult> {
    BOUND_MARK.with(|m| m.set(enclosing.mark));
    STICKY.with(|s| s.replace(enclosing.sticky))
}

/// Peer group bindings alive in this process (any thread): while there is one, peer
/// access is not disabled through this crate.
#[cfg(feature = "multi-gpu")]
static GROUPS_LIVE: AtomicUsize = AtomicUsize::new(0);

/// Whether a peer group binding is alive anywhere in the process.
#[cfg(feature = "multi-gpu")]
pub(crate) fn peer_groups_live() -> bool {
    GROUPS_LIVE.load(Ordering::Acquire) != 0
}

/// Counts a peer group binding as alive until dropped (also on unwind).
#[cfg(feature = "multi-gpu")]
pub(crate) struct GroupLive(());

#[cfg(feature = "multi-gpu")]
impl GroupLive {
    /// Counts one more live group binding.
    pub(crate) fn new() -> GroupLive {
        GROUPS_LIVE.fetch_add(1, Ordering::AcqRel);
        GroupLive(())
    }
}

#[cfg(feature = "multi-gpu")]
impl Drop for GroupLive {
    fn drop(&mut self) {
        GROUPS_LIVE.fetch_sub(1, Ordering::AcqRel);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_mark_holds_inside_and_nests() {
        assert!(!in_host_callback());
        {
            let _outer = InCallback::enter();
            assert!(in_host_callback());
            {
                let _inner = InCallback::enter();
                assert!(in_host_callback());
            }
            assert!(in_host_callback());
            // Another thread is not inside, whatever the count says.
            assert!(!std::thread::spawn(in_host_callback).join().unwrap());
        }
        assert!(!in_host_callback());
    }
}

//! What this thread and this process are doing now, consulted by many modules: the
//! low room for state that is no one concept's own.
//!
//! Today: whether this thread is running a host callback (a stream's host function
//! or a graph's host node). CUDA forbids every driver call there, so the table
//! refuses them all ([`crate::DriverTable`]'s accessors return
//! [`CudaError::InHostCallback`](crate::CudaError::InHostCallback)) — one guard that
//! every driver-calling path of the crate goes through, drops included (what is
//! dropped there is leaked with a warning, never released).
//!
//! The mark is this copy of the crate's: a callback that another CUDA library, or
//! another version of this crate, runs is not seen here (the driver gives no way to
//! ask whether the calling thread is inside a host function).

use crate::error::CudaError;
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

/// [`CudaError::InHostCallback`] on a thread running a host callback: for the entry
/// points that must refuse before anything else (a binding, which would otherwise
/// wait for a lock or report a poisoned context first).
pub(crate) fn refuse_in_host_callback() -> Result<(), CudaError> {
    if in_host_callback() {
        Err(CudaError::InHostCallback)
    } else {
        Ok(())
    }
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

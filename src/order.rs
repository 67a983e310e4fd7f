//! Host order: the [`Mark`] a launch (or a queued copy or memset) leaves on the
//! device memory it uses — the stream the work was queued on — and the wait a
//! synchronous host access to that memory makes for it, so that `to_vec` after a
//! launch on a `CU_STREAM_NON_BLOCKING` stream reads what the kernel wrote, not what
//! was there before. Also this thread's live streams, so that a wait never names a
//! destroyed stream.
//!
//! The synchronous copies and memsets run on the default stream, which does not wait
//! for non-blocking streams (nor, with the per-thread default stream, for other
//! streams at all). The crate knows at each launch which memory the kernel reads and
//! writes: the launch stores the stream in each buffer's mark (one store per memory
//! argument); a host access whose mark is clear does nothing more; one whose mark is
//! set waits for that stream first and clears the mark. A stream that queued marked
//! work waits for it when dropped, so a mark that names a stream no longer alive
//! names finished work. Streams and buffers cannot leave their thread, so the live
//! streams are a thread-local list.

use crate::error::{CudaError, check};
use crate::loader::Driver;
use crate::sys::{CU_STREAM_LEGACY, CU_STREAM_PER_THREAD, CUstream};
use core::cell::{Cell, RefCell};

/// The stream that last queued work using a buffer's memory, or clear (`NULL`: no
/// work to wait for, or work on the legacy default stream, which every synchronous
/// copy follows anyway).
#[derive(Debug)]
pub struct Mark(Cell<CUstream>);

impl Mark {
    /// A clear mark.
    pub(crate) const fn new() -> Mark {
        Mark(Cell::new(CUstream::NULL))
    }

    /// Work queued on `stream` uses the memory.
    #[inline(always)]
    pub(crate) fn set(&self, stream: CUstream) {
        self.0.set(stream);
    }

    /// The marked stream, if any.
    pub(crate) fn get(&self) -> Option<CUstream> {
        let s = self.0.get();
        (!s.is_null()).then_some(s)
    }

    /// Waits for the marked stream's work (if the mark is set) and clears the mark:
    /// before a synchronous host access to the memory. A stream destroyed since it
    /// was marked waited for its work when dropped ([`Stream`](crate::stream::Stream)
    /// does): nothing to wait for. A failed wait (a sticky error) is returned and the
    /// mark kept.
    #[inline(always)]
    pub(crate) fn wait(&self, driver: &'static Driver) -> Result<(), CudaError> {
        match self.get() {
            None => Ok(()),
            Some(stream) => self.wait_for(driver, stream),
        }
    }

    #[inline(never)]
    fn wait_for(&self, driver: &'static Driver, stream: CUstream) -> Result<(), CudaError> {
        if is_live(stream) {
            // SAFETY: a live stream: a default stream (never destroyed) or one a
            // `Stream` of this thread owns.
            check(unsafe { driver.table().cuStreamSynchronize()?(stream) })?;
        }
        self.0.set(CUstream::NULL);
        Ok(())
    }
}

thread_local! {
    /// The streams this thread's `Stream` values own, while they live.
    static LIVE: RefCell<Vec<CUstream>> = const { RefCell::new(Vec::new()) };
}

/// Whether `stream` may be waited for: a default stream, or one still owned here.
fn is_live(stream: CUstream) -> bool {
    stream == CU_STREAM_LEGACY
        || stream == CU_STREAM_PER_THREAD
        || LIVE
            .try_with(|live| live.borrow().contains(&stream))
            .unwrap_or(false)
}

/// A created stream now owned by a `Stream` of this thread.
pub(crate) fn stream_created(stream: CUstream) {
    let _ = LIVE.try_with(|live| live.borrow_mut().push(stream));
}

/// The stream is about to be destroyed (its marked work, if any, waited for).
pub(crate) fn stream_destroyed(stream: CUstream) {
    let _ = LIVE.try_with(|live| {
        let mut live = live.borrow_mut();
        if let Some(i) = live.iter().rposition(|s| *s == stream) {
            live.swap_remove(i);
        }
    });
}

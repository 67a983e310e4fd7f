//! Host order: the [`Mark`] a launch (or a queued copy or memset, or a graph's launch)
//! leaves on the device memory it uses — the stream the work was queued on — and the
//! wait a synchronous host access to that memory makes for it, so that `to_vec` after
//! a launch on a `CU_STREAM_NON_BLOCKING` stream reads what the kernel wrote, not what
//! was there before. Also this thread's live streams, so that a wait never names a
//! destroyed stream.
//!
//! The synchronous copies and memsets run on the default stream, which does not wait
//! for non-blocking streams. The crate knows at each launch which memory the kernel
//! reads and writes: the launch records the stream in each buffer's mark (a compare
//! and a store per memory argument). A host access whose mark is clear does nothing
//! more; one whose mark names a stream waits for it first and clears the mark; one
//! whose memory was used by two streams since waits for every live
//! stream of this thread. Work on the default streams (`NULL`, `CU_STREAM_LEGACY`,
//! `CU_STREAM_PER_THREAD`) needs no mark: the synchronous copies follow it anyway.
//!
//! Streams are named by a process-unique number as well as their handle: the driver
//! may give a destroyed stream's handle to a new one, and a `Stream` leaked with
//! `mem::forget` may be destroyed with its context. A mark names a stream by both, and
//! waits only for a stream still on this thread's list under that number; a stream
//! whose work marked memory waits for it when dropped, so a mark naming a stream no
//! longer listed names finished work. A stream that is capturing is not waited for:
//! its captured work does not run, and a capture starts only after the stream's marked
//! work (the capture waits for it). Streams and buffers cannot leave their thread, so
//! the list is thread-local.

use crate::error::{CudaError, check};
use crate::loader::Driver;
use crate::sys::{CUstream, CUstreamCaptureStatus};
use core::cell::{Cell, RefCell};
use core::sync::atomic::{AtomicU64, Ordering};

/// The number a mark holds for "work on more than one stream since the last wait".
const MANY: u64 = u64::MAX;

/// The streams whose work uses a buffer's memory, since the last host access waited:
/// none (number 0), one (its number and handle), or many ([`MANY`]).
#[derive(Debug)]
pub struct Mark {
    number: Cell<u64>,
    handle: Cell<CUstream>,
}

impl Mark {
    /// A clear mark.
    pub(crate) const fn new() -> Mark {
        Mark {
            number: Cell::new(0),
            handle: Cell::new(CUstream::NULL),
        }
    }

    /// Work queued on `stream` (handle and number, [`StreamId`]) uses the memory.
    #[inline(always)]
    pub(crate) fn set(&self, stream: StreamId) {
        if stream.number == 0 {
            return; // a default stream: the synchronous copies follow it
        }
        let n = self.number.get();
        if n == stream.number {
            return; // marked by this stream already: the common case, a load and a compare
        }
        if n == 0 {
            self.number.set(stream.number);
            self.handle.set(stream.handle);
        } else {
            self.number.set(MANY);
        }
    }

    /// Waits for the work the mark names (if any) and clears it: before a synchronous
    /// host access to the memory. A failed wait (a sticky error) is returned and the
    /// mark kept.
    #[inline(always)]
    pub(crate) fn wait(&self, driver: &'static Driver) -> Result<(), CudaError> {
        if self.number.get() == 0 {
            return Ok(());
        }
        self.wait_for(driver)
    }

    #[inline(never)]
    fn wait_for(&self, driver: &'static Driver) -> Result<(), CudaError> {
        match self.number.get() {
            0 => {}
            MANY => {
                for handle in live_streams() {
                    sync(driver, handle)?;
                }
            }
            number => {
                if is_live(number) {
                    sync(driver, self.handle.get())?;
                }
            }
        }
        self.number.set(0);
        Ok(())
    }
}

/// A stream as marks name it: its handle and its process-unique number (0 for the
/// default streams, which are never destroyed and need no mark).
#[derive(Debug, Clone, Copy)]
pub struct StreamId {
    pub(crate) handle: CUstream,
    pub(crate) number: u64,
}

impl StreamId {
    /// A default stream (`NULL`, legacy, per-thread).
    pub(crate) const fn default_stream(handle: CUstream) -> StreamId {
        StreamId { handle, number: 0 }
    }
}

/// Waits for a live stream of this thread, unless it is capturing (its captured work
/// does not run, and what it ran before the capture was waited for when the capture
/// began). A capture elsewhere that forbids the wait is stepped around.
fn sync(driver: &'static Driver, handle: CUstream) -> Result<(), CudaError> {
    let t = driver.table();
    if let Ok(is_capturing) = t.cuStreamIsCapturing() {
        let mut status = CUstreamCaptureStatus::CU_STREAM_CAPTURE_STATUS_NONE;
        // SAFETY: a live stream and a valid out-pointer.
        let r = unsafe { is_capturing(handle, &mut status) };
        if check(r).is_ok() && status != CUstreamCaptureStatus::CU_STREAM_CAPTURE_STATUS_NONE {
            return Ok(());
        }
    }
    let wait = t.cuStreamSynchronize()?;
    // SAFETY: a live stream of this thread (the caller checked it is listed).
    check(crate::wait::retry_relaxed(driver, || unsafe {
        wait(handle)
    }))
}

static NEXT_STREAM: AtomicU64 = AtomicU64::new(1);

thread_local! {
    /// The streams this thread's `Stream` values own, while they live: (number, handle).
    static LIVE: RefCell<Vec<(u64, CUstream)>> = const { RefCell::new(Vec::new()) };
}

/// Whether the stream numbered `number` is still owned by a `Stream` of this thread.
fn is_live(number: u64) -> bool {
    LIVE.try_with(|live| live.borrow().iter().any(|(n, _)| *n == number))
        .unwrap_or(false)
}

/// The handles of this thread's live streams.
fn live_streams() -> Vec<CUstream> {
    LIVE.try_with(|live| live.borrow().iter().map(|(_, h)| *h).collect())
        .unwrap_or_default()
}

/// A created stream, now owned by a `Stream` of this thread: its number.
pub(crate) fn stream_created(handle: CUstream) -> StreamId {
    let number = NEXT_STREAM.fetch_add(1, Ordering::Relaxed);
    let _ = LIVE.try_with(|live| live.borrow_mut().push((number, handle)));
    StreamId { handle, number }
}

/// The stream is about to be destroyed (its marked work, if any, waited for).
pub(crate) fn stream_destroyed(stream: StreamId) {
    let _ = LIVE.try_with(|live| {
        let mut live = live.borrow_mut();
        if let Some(i) = live.iter().position(|(n, _)| *n == stream.number) {
            live.swap_remove(i);
        }
    });
}

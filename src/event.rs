//! Events: markers recorded on a stream, for ordering streams and timing work. They
//! are made under a [`CurrentContext`] token and borrow it, like streams (CF2, CF3,
//! CF5), and are typed by whether they record time: only [`Event<Timing>`] has
//! [`elapsed_since`](Event::elapsed_since) (CF18).
//!
//! ```compile_fail
//! # use oxicuda_driver::{CurrentContext, event::{Event, NoTiming}};
//! // CF18: elapsed time only between timing events.
//! fn f(a: &Event<'_, NoTiming>, b: &Event<'_, NoTiming>) { let _ = b.elapsed_since(a); }
//! ```

use crate::context::CurrentContext;
use crate::context::Tied;
use crate::error::{CudaError, check};
use crate::loader::Driver;
use crate::sys::{CUevent, CUevent_flags, CUresult};
use core::marker::PhantomData;

/// A query's answer: done, not yet (`NOT_READY`), or an error.
#[inline]
pub(crate) fn done(r: CUresult) -> Result<bool, CudaError> {
    match r {
        CUresult::CUDA_SUCCESS => Ok(true),
        CUresult::CUDA_ERROR_NOT_READY => Ok(false),
        e => Err(crate::error::driver_error(e)),
    }
}

/// Whether an event records time: [`Timing`] or [`NoTiming`].
pub trait EventKind: sealed::Sealed {
    /// The creation flags.
    const FLAGS: CUevent_flags;
}

/// An event that records time (and is slower to record).
#[derive(Debug)]
pub enum Timing {}
/// An event that does not record time (`CU_EVENT_DISABLE_TIMING`).
#[derive(Debug)]
pub enum NoTiming {}
/// An event another process may open (`CU_EVENT_INTERPROCESS`, which needs
/// `CU_EVENT_DISABLE_TIMING`): only it has an [`ipc_handle`](Event::ipc_handle), and
/// an opened handle ([`CurrentContext::open_ipc_event`]) is one again.
#[derive(Debug)]
pub enum Interprocess {}

impl EventKind for Timing {
    const FLAGS: CUevent_flags = CUevent_flags::CU_EVENT_DEFAULT;
}
impl EventKind for NoTiming {
    const FLAGS: CUevent_flags = CUevent_flags::CU_EVENT_DISABLE_TIMING;
}
impl EventKind for Interprocess {
    const FLAGS: CUevent_flags =
        CUevent_flags::CU_EVENT_INTERPROCESS.union(CUevent_flags::CU_EVENT_DISABLE_TIMING);
}

mod sealed {
    pub trait Sealed {}
    impl Sealed for super::Timing {}
    impl Sealed for super::NoTiming {}
    impl Sealed for super::Interprocess {}
}

/// An event of the current context.
pub struct Event<'a, K: EventKind> {
    driver: &'static Driver,
    raw: CUevent,
    _tied: Tied<'a>,
    _kind: PhantomData<K>,
}

impl<K: EventKind> core::fmt::Debug for Event<'_, K> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        let kind = crate::memory::short_type_name::<K>();
        write!(f, "Event<{kind}>({:?})", self.raw)
    }
}

impl<'ctx> CurrentContext<'ctx> {
    /// Creates an event: `create_event::<Timing>()` or `create_event::<NoTiming>()`.
    pub fn create_event<K: EventKind>(&self) -> Result<Event<'_, K>, CudaError> {
        let mut raw = CUevent::NULL;
        // SAFETY: a valid out-pointer; the context is current.
        check(unsafe { self.driver().table().cuEventCreate()?(&mut raw, K::FLAGS.bits()) })?;
        // SAFETY: the event just made, owned by nothing else.
        Ok(unsafe { Event::from_raw_parts(self.driver(), raw) })
    }
}

impl<K: EventKind> Event<'_, K> {
    /// Owns `raw`, an event of kind `K`, destroying it when dropped.
    ///
    /// # Safety
    /// `raw` is a live event of `driver`, made with `K::FLAGS` (or opened as such),
    /// owned by nothing else.
    pub(crate) unsafe fn from_raw_parts(driver: &'static Driver, raw: CUevent) -> Self {
        crate::leaks::created(crate::leaks::Kind::Events, raw);
        Event {
            driver,
            raw,
            _tied: PhantomData,
            _kind: PhantomData,
        }
    }

    /// Its driver.
    pub(crate) fn driver(&self) -> &'static Driver {
        self.driver
    }

    /// The driver's handle.
    pub fn raw(&self) -> CUevent {
        self.raw
    }

    /// Waits for the last record.
    pub fn synchronize(&self) -> Result<(), CudaError> {
        // SAFETY: a live event.
        check(unsafe { self.driver.table().cuEventSynchronize()?(self.raw) })
    }

    /// Whether the last record is complete.
    #[inline]
    pub fn is_done(&self) -> Result<bool, CudaError> {
        // SAFETY: a live event.
        done(unsafe { self.driver.table().cuEventQuery()?(self.raw) })
    }
}

impl Event<'_, Timing> {
    /// Milliseconds from `start`'s record to this event's (CF18: timing events only).
    pub fn elapsed_since(&self, start: &Event<'_, Timing>) -> Result<f32, CudaError> {
        let mut ms = 0f32;
        let t = self.driver.table();
        // SAFETY: a valid out-pointer and two live timing events; the 2.0 ABI where the
        // driver has no other.
        let r = match t.cuEventElapsedTime() {
            Ok(f) => unsafe { f(&mut ms, start.raw, self.raw) },
            Err(_) => unsafe { t.cuEventElapsedTime_v2000()?(&mut ms, start.raw, self.raw) },
        };
        check(r)?;
        Ok(ms)
    }
}

impl<K: EventKind> Drop for Event<'_, K> {
    fn drop(&mut self) {
        if let Ok(destroy) = self.driver.table().cuEventDestroy() {
            // SAFETY: this value owns the event.
            let r = unsafe { destroy(self.raw) };
            if check(r).is_err() {
                tracing::warn!(?r, "cuEventDestroy failed");
            } else {
                crate::leaks::destroyed(crate::leaks::Kind::Events, self.raw);
            }
        }
    }
}

static_assertions::assert_not_impl_any!(Event<'static, Timing>: Send, Sync);
static_assertions::assert_not_impl_any!(Event<'static, NoTiming>: Send, Sync);
static_assertions::assert_not_impl_any!(Event<'static, Interprocess>: Send, Sync);

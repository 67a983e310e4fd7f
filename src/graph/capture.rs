//! Stream capture: the work queued on a stream becomes a graph instead of running.

use super::{Graph, KeptFns, host_params};
use crate::error::{CudaError, check};
use crate::event::{Event, EventKind};
use crate::launch::{Dim3, GraphArgs, Signature};
use crate::loader::Driver;
use crate::memory::{DeviceCopy, DeviceRead, MemsetValue, same_len};
use crate::module::Function;
use crate::stream::Stream;
use crate::sys::{
    CUevent, CUevent_flags, CUevent_record_flags, CUevent_wait_flags, CUgraph, CUstream,
    CUstreamCaptureMode, CUstreamCaptureStatus,
};
use core::cell::RefCell;
use core::marker::PhantomData;
use std::rc::Rc;

/// How a capture treats potentially unsafe API calls of other threads
/// (`CUstreamCaptureMode`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CaptureMode {
    /// Unsafe calls are refused in every thread while any global capture runs.
    Global,
    /// Unsafe calls are refused in this thread while it captures.
    ThreadLocal,
    /// Nothing is refused on the capture's behalf.
    Relaxed,
}

impl CaptureMode {
    fn raw(self) -> CUstreamCaptureMode {
        match self {
            CaptureMode::Global => CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_GLOBAL,
            CaptureMode::ThreadLocal => CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL,
            CaptureMode::Relaxed => CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_RELAXED,
        }
    }
}

/// A stream being captured (CF13): it is borrowed mutably, so it can be neither
/// synchronised nor queried until the capture ends, and this guard offers only what
/// is legal under capture. [`end`](Capturing::end) consumes it (CF16) and yields the
/// graph; dropping it instead ends the capture and discards the graph. What the
/// captured work borrows is borrowed for `'g`, the graph's lifetime.
pub struct Capturing<'s, 'g> {
    ops: Ops<'g>,
    ended: bool,
    _stream: PhantomData<&'s mut ()>,
}

/// Another stream joined to a capture ([`Capturing::fork`]): what is queued on it is
/// captured into the same graph, concurrent with the capturing stream's work until
/// [`Capturing::join`]. Its stream stays mutably borrowed meanwhile, and it borrows
/// the capture: the capture cannot end while a fork is outstanding, so nothing queued
/// through a fork ever runs outside the capture.
pub struct Forked<'c, 'g> {
    ops: Ops<'g>,
    _stream: PhantomData<&'c mut ()>,
}

/// The operations legal under capture, on one stream of the capture.
struct Ops<'g> {
    driver: &'static Driver,
    stream: CUstream,
    /// Host functions of captured host nodes, shared by every stream of the capture.
    host_fns: Rc<RefCell<KeptFns<'g>>>,
    _tied: PhantomData<(&'g (), *const ())>,
}

/// Makes the operations of `Ops` methods of a capture type.
macro_rules! capture_ops {
    ($ty:ident) => {
        impl<'g> $ty<'_, 'g> {
            /// Captures a launch of `function` (the arguments are checked by the
            /// compiler against `S`; the memory they name is borrowed for `'g`).
            pub fn launch<S: Signature>(
                &self,
                function: &'g Function<'_, S>,
                grid: impl Into<Dim3>,
                block: impl Into<Dim3>,
                shared_bytes: u32,
                args: impl GraphArgs<S> + 'g,
            ) -> Result<(), CudaError> {
                self.ops
                    .launch(function, grid.into(), block.into(), shared_bytes, args)
            }

            /// Captures a copy of host memory into device memory (same length).
            pub fn copy_to_device<T: DeviceCopy>(
                &self,
                dst: &'g impl DeviceRead<T>,
                src: &'g [T],
            ) -> Result<(), CudaError> {
                self.ops.copy_to_device(dst, src)
            }

            /// Captures a copy of device memory into host memory (same length).
            pub fn copy_to_host<T: DeviceCopy>(
                &self,
                dst: &'g mut [T],
                src: &'g impl DeviceRead<T>,
            ) -> Result<(), CudaError> {
                self.ops.copy_to_host(dst, src)
            }

            /// Captures setting every element of `dst` to `value`.
            pub fn fill<T: MemsetValue>(
                &self,
                dst: &'g impl DeviceRead<T>,
                value: T,
            ) -> Result<(), CudaError> {
                self.ops.fill(dst, value)
            }

            /// Captures a call of `f` on a driver thread, each time the graph runs
            /// (a panic is caught and counted; no binding can be made inside).
            pub fn host_fn(&self, f: impl Fn() + Send + Sync + 'g) -> Result<(), CudaError> {
                self.ops.host_fn(f)
            }

            /// Captures a record of `event` (an event-record node).
            pub fn record<K: EventKind>(&self, event: &'g Event<'_, K>) -> Result<(), CudaError> {
                self.ops.record(event.raw())
            }

            /// Captures a wait for `event`'s last record (an event-wait node).
            pub fn wait<K: EventKind>(&self, event: &'g Event<'_, K>) -> Result<(), CudaError> {
                self.ops.wait(event.raw())
            }
        }
    };
}

capture_ops!(Capturing);
capture_ops!(Forked);

impl<'g> Ops<'g> {
    fn launch<S: Signature>(
        &self,
        function: &'g Function<'_, S>,
        grid: Dim3,
        block: Dim3,
        shared_bytes: u32,
        args: impl GraphArgs<S> + 'g,
    ) -> Result<(), CudaError> {
        let launch = self.driver.table().cuLaunchKernel()?;
        crate::launch::with_params::<S, _, _>(args, |params| {
            // SAFETY: one pointer per declared parameter, each to a value of its
            // declared size (checked at lookup); captured, the values are copied now.
            check(unsafe {
                launch(
                    function.raw,
                    grid.0,
                    grid.1,
                    grid.2,
                    block.0,
                    block.1,
                    block.2,
                    shared_bytes,
                    self.stream,
                    params.as_mut_ptr(),
                    core::ptr::null_mut(),
                )
            })
        })
    }

    fn copy_to_device<T: DeviceCopy>(
        &self,
        dst: &'g impl DeviceRead<T>,
        src: &'g [T],
    ) -> Result<(), CudaError> {
        let d = dst.view();
        same_len(d.len(), src.len())?;
        // SAFETY: both ranges hold `len` elements, borrowed for the graph's lifetime.
        check(unsafe {
            self.driver.table().cuMemcpyHtoDAsync()?(
                d.device_ptr(),
                src.as_ptr().cast(),
                size_of_val(src),
                self.stream,
            )
        })
    }

    fn copy_to_host<T: DeviceCopy>(
        &self,
        dst: &'g mut [T],
        src: &'g impl DeviceRead<T>,
    ) -> Result<(), CudaError> {
        let s = src.view();
        same_len(dst.len(), s.len())?;
        // SAFETY: as above; `T: DeviceCopy` makes any bytes written valid.
        check(unsafe {
            self.driver.table().cuMemcpyDtoHAsync()?(
                dst.as_mut_ptr().cast(),
                s.device_ptr(),
                size_of_val(dst),
                self.stream,
            )
        })
    }

    fn fill<T: MemsetValue>(&self, dst: &'g impl DeviceRead<T>, value: T) -> Result<(), CudaError> {
        let d = dst.view();
        // SAFETY: the view's elements, captured (never written outside the graph) and
        // borrowed for the graph's lifetime.
        unsafe {
            crate::memory::memset(
                self.driver,
                d.device_ptr(),
                d.len(),
                value,
                Some(self.stream),
            )
        }
    }

    fn host_fn(&self, f: impl Fn() + Send + Sync + 'g) -> Result<(), CudaError> {
        let launch = self.driver.table().cuLaunchHostFunc()?;
        let p = host_params(&mut self.host_fns.borrow_mut(), f);
        // SAFETY: the function's data lives as long as the captured graph and every
        // graph made from it (their `host_fns`).
        check(unsafe { launch(self.stream, p.fn_, p.userData) })
    }

    fn record(&self, event: CUevent) -> Result<(), CudaError> {
        let flags = CUevent_record_flags::CU_EVENT_RECORD_EXTERNAL;
        // SAFETY: a live event and the capturing stream.
        check(unsafe {
            self.driver.table().cuEventRecordWithFlags()?(event, self.stream, flags.bits())
        })
    }

    fn wait(&self, event: CUevent) -> Result<(), CudaError> {
        let flags = CUevent_wait_flags::CU_EVENT_WAIT_EXTERNAL;
        // SAFETY: a live event and the capturing stream.
        check(unsafe { self.driver.table().cuStreamWaitEvent()?(self.stream, event, flags.bits()) })
    }

    /// An internal event ordering `from` before `to`: recorded on one, waited on by
    /// the other, destroyed at once (the capture keeps the edge, not the event).
    fn order(driver: &'static Driver, from: CUstream, to: CUstream) -> Result<(), CudaError> {
        let t = driver.table();
        let mut e = CUevent::NULL;
        // SAFETY: a valid out-pointer.
        check(unsafe {
            t.cuEventCreate()?(&mut e, CUevent_flags::CU_EVENT_DISABLE_TIMING.bits())
        })?;
        // SAFETY: a live event and two streams of the current context.
        let r = unsafe {
            check(t.cuEventRecord()?(e, from))
                .and_then(|()| check(t.cuStreamWaitEvent()?(to, e, 0)))
        };
        // SAFETY: the event is ours; its use above is complete as far as capture goes.
        let destroyed = check(unsafe { t.cuEventDestroy()?(e) });
        r.and(destroyed)
    }
}

impl<'a> Stream<'a> {
    /// Starts capturing this stream (CF13): until the returned guard ends, the stream
    /// is borrowed mutably and work goes through the guard, into a graph that borrows
    /// what the work borrows for `'g`. The legacy default stream cannot be captured
    /// (the driver's error).
    pub fn begin_capture<'s, 'g>(
        &'s mut self,
        mode: CaptureMode,
    ) -> Result<Capturing<'s, 'g>, CudaError>
    where
        'a: 'g,
    {
        let driver = self.driver();
        // SAFETY: a live stream of the current context.
        check(unsafe { driver.table().cuStreamBeginCapture()?(self.raw(), mode.raw()) })?;
        let guard = Capturing {
            ops: Ops {
                driver,
                stream: self.raw(),
                host_fns: Rc::new(RefCell::new(Vec::new())),
                _tied: PhantomData,
            },
            ended: false,
            _stream: PhantomData,
        };
        // Checked once: work through the guard must be captured, never run, because
        // what it borrows is borrowed only as long as the graph lives.
        ensure_capturing(driver, guard.ops.stream)?;
        Ok(guard)
    }
}

/// [`CudaError::CaptureNotActive`] unless the driver reports `stream` as capturing.
fn ensure_capturing(driver: &'static Driver, stream: CUstream) -> Result<(), CudaError> {
    let mut status = CUstreamCaptureStatus::CU_STREAM_CAPTURE_STATUS_NONE;
    // SAFETY: a live stream and a valid out-pointer.
    check(unsafe { driver.table().cuStreamIsCapturing()?(stream, &mut status) })?;
    if status == CUstreamCaptureStatus::CU_STREAM_CAPTURE_STATUS_ACTIVE {
        Ok(())
    } else {
        Err(CudaError::CaptureNotActive { status })
    }
}

impl<'s, 'g> Capturing<'s, 'g> {
    /// Joins `other` to the capture: work queued through the returned handle is
    /// captured after what this stream has queued so far, concurrently with what it
    /// queues next, until [`join`](Self::join). Ending the capture with a fork not
    /// joined is the driver's `CUDA_ERROR_STREAM_CAPTURE_UNJOINED`.
    pub fn fork<'c>(&'c self, other: &'c mut Stream<'_>) -> Result<Forked<'c, 'g>, CudaError> {
        Ops::order(self.ops.driver, self.ops.stream, other.raw())?;
        ensure_capturing(self.ops.driver, other.raw())?;
        Ok(Forked {
            ops: Ops {
                driver: self.ops.driver,
                stream: other.raw(),
                host_fns: Rc::clone(&self.ops.host_fns),
                _tied: PhantomData,
            },
            _stream: PhantomData,
        })
    }

    /// Joins a forked stream back: what this stream queues next waits for its work.
    pub fn join(&self, forked: Forked<'_, 'g>) -> Result<(), CudaError> {
        Ops::order(self.ops.driver, forked.ops.stream, self.ops.stream)
    }

    /// Ends the capture (CF16: once, by value) and returns the graph. An operation the
    /// driver refused during the capture invalidates it: the error here is then
    /// `CUDA_ERROR_STREAM_CAPTURE_INVALIDATED`.
    pub fn end(mut self) -> Result<Graph<'g>, CudaError> {
        self.ended = true;
        let raw = end_capture(self.ops.driver, self.ops.stream)?;
        let fns = core::mem::take(&mut *self.ops.host_fns.borrow_mut());
        Ok(Graph::from_raw(self.ops.driver, raw, fns))
    }
}

/// `cuStreamEndCapture`: the graph, or the capture's error (then no graph is left).
fn end_capture(driver: &'static Driver, stream: CUstream) -> Result<CUgraph, CudaError> {
    let mut raw = CUgraph::NULL;
    // SAFETY: a capturing stream and a valid out-pointer.
    let r = check(unsafe { driver.table().cuStreamEndCapture()?(stream, &mut raw) });
    if r.is_err() && !raw.is_null() {
        // SAFETY: a graph the driver handed back despite the error: ours to destroy.
        let _ = unsafe { driver.table().cuGraphDestroy().map(|f| f(raw)) };
    }
    r.map(|()| raw)
}

impl Drop for Capturing<'_, '_> {
    fn drop(&mut self) {
        if self.ended {
            return;
        }
        match end_capture(self.ops.driver, self.ops.stream) {
            Ok(raw) => {
                // SAFETY: the graph just captured, never shared: ours to destroy.
                let _ = unsafe { self.ops.driver.table().cuGraphDestroy().map(|f| f(raw)) };
            }
            Err(e) => tracing::warn!(%e, "a capture dropped without end() failed to end"),
        }
    }
}

static_assertions::assert_not_impl_any!(Capturing<'static, 'static>: Send, Sync);
static_assertions::assert_not_impl_any!(Forked<'static, 'static>: Send, Sync);

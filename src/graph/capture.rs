//! Stream capture: the work queued on a stream becomes a graph instead of running.

use super::{Graph, Kept, host_params};
use crate::error::{CudaError, check};
use crate::event::{Event, EventKind};
use crate::launch::sealed::GraphRef;
use crate::launch::{Dim3, GraphArgs, Signature};
use crate::loader::Driver;
use crate::memory::{DeviceCopy, DeviceRead, MemsetValue};
use crate::module::Function;
use crate::stream::{Stream, queue_to_device, queue_to_host};
use crate::sys::{
    CU_STREAM_LEGACY, CU_STREAM_PER_THREAD, CUevent, CUevent_flags, CUevent_record_flags,
    CUevent_wait_flags, CUgraph, CUstream, CUstream_flags, CUstreamCaptureMode,
    CUstreamCaptureStatus,
};
use core::cell::{Cell, RefCell};
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

/// A stream being captured (CF13), handed by reference to the closure of
/// [`Stream::capture`]: the stream is borrowed mutably meanwhile, so it can be
/// neither synchronised nor queried, and this guard offers only what is legal under
/// capture. The capture ends once, when the closure returns (CF16) — the guard cannot
/// escape the closure, so no `mem::forget` or early drop can leave a stream capturing
/// outside the crate's hands. What the captured work borrows is borrowed for `'g`, the
/// graph's lifetime. Forks into other streams ([`fork`](Capturing::fork)) need those
/// streams borrowed for the whole capture ([`Stream::capture_with`]), and are
/// rejoined by the crate.
pub struct Capturing<'c, 'g> {
    ops: Ops<'g>,
    /// The capture's identity (`cuStreamGetCaptureInfo`), shared by its forks.
    id: u64,
    /// Set when a fork could not be rejoined: the capture's graph is then discarded.
    broken: Rc<Cell<bool>>,
    _scope: PhantomData<&'c mut &'c ()>,
}

impl core::fmt::Debug for Capturing<'_, '_> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Capturing")
            .field("stream", &self.ops.stream)
            .field("id", &self.id)
            .finish()
    }
}

/// The operations legal under capture, on one stream of the capture.
struct Ops<'g> {
    driver: &'static Driver,
    stream: CUstream,
    /// Host functions of captured host nodes, shared by every stream of the capture.
    kept: Rc<RefCell<Kept<'g>>>,
    /// Whether a captured node writes host memory (the graph then cannot be copied).
    writes_host: Rc<Cell<bool>>,
    _tied: PhantomData<(&'g (), *const ())>,
}

/// Makes the operations of `Ops` methods of a capture type.
macro_rules! capture_ops {
    ($ty:ident) => {
        impl<'g> $ty<'_, 'g> {
            /// Captures a launch of `function` (the arguments are checked by the
            /// compiler against `S`; the memory they name is borrowed for `'g`).
            ///
            /// A raw-pointer signature's [`Len`](crate::launch::Len) is checked
            /// against the views as for [`Function::launch`]; an unbounded one is
            /// captured through [`launch_unchecked`](Self::launch_unchecked).
            pub fn launch<S: crate::launch::Bounded>(
                &self,
                function: &'g Function<'_, S>,
                grid: impl Into<Dim3>,
                block: impl Into<Dim3>,
                shared_bytes: u32,
                args: impl GraphArgs<S> + 'g,
            ) -> Result<(), CudaError> {
                let (grid, block) = (grid.into(), block.into());
                crate::launch::check_bounds::<S, _>(
                    &args,
                    crate::launch::launch_threads(grid, block),
                )?;
                self.ops.launch(function, grid, block, shared_bytes, args)
            }

            /// [`launch`](Self::launch) for every signature, raw pointers without a
            /// [`Len`](crate::launch::Len) included; no length is checked.
            ///
            /// # Safety
            /// As for [`Function::launch_unchecked`], for every launch of the graph
            /// made from this capture: the kernel stays inside the view passed for
            /// each raw pointer argument.
            pub unsafe fn launch_unchecked<S: Signature>(
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
            /// (a panic is caught and counted; no driver call is made inside).
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

impl<'g> Ops<'g> {
    fn launch<S: Signature>(
        &self,
        function: &'g Function<'_, S>,
        grid: Dim3,
        block: Dim3,
        shared_bytes: u32,
        args: impl GraphArgs<S> + 'g,
    ) -> Result<(), CudaError> {
        match crate::launch::graph_refs::<S, _>(&args).first() {
            Some(GraphRef::Memory(_, index)) => {
                return Err(CudaError::GraphMemory {
                    allocation: *index,
                    rule: "memory a graph allocates is used only by that graph's nodes",
                });
            }
            Some(GraphRef::Condition(_)) => return Err(CudaError::ForeignCondition),
            Some(GraphRef::Buffer(_, index)) => {
                return Err(CudaError::GraphBuffer {
                    buffer: Some(*index),
                    rule: "a buffer a graph owns is used only by that graph's nodes, not in a capture",
                });
            }
            None => {}
        }
        if !crate::launch::fits_every_device(grid, block) {
            return Err(crate::launch::shape_error(grid, block));
        }
        crate::launch::check_streams::<S, _>(&args, None)?;
        // The arguments outlive `'g`: their memory is borrowed for it.
        self.kept
            .borrow_mut()
            .note_raw(crate::launch::marks::<S, _>(&args));
        let launch = self.driver.table().cuLaunchKernel()?;
        crate::launch::with_params::<S, _, _>(args, |params| {
            // SAFETY: one pointer per declared parameter, each to a value of its
            // declared size (checked at lookup); captured, the values are copied now.
            let r = unsafe {
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
            };
            if r == crate::sys::CUresult::CUDA_SUCCESS {
                Ok(())
            } else {
                let f = function.raw;
                let (g, b, d) = (grid, block, self.driver);
                let e = crate::launch::launch_failed(
                    d,
                    f,
                    g.0,
                    g.1,
                    g.2,
                    b.0,
                    b.1,
                    b.2,
                    shared_bytes,
                    r,
                );
                Err(e)
            }
        })
    }

    fn copy_to_device<T: DeviceCopy>(
        &self,
        dst: &'g impl DeviceRead<T>,
        src: &'g [T],
    ) -> Result<(), CudaError> {
        let d = dst.view();
        crate::memory::check_stream(d.stream_order(), None, None)?;
        self.kept.borrow_mut().note(d.host_mark());
        // SAFETY: the view's elements; both sides borrowed for the graph's lifetime,
        // and captured work runs only as the graph.
        unsafe { queue_to_device(self.driver, self.stream, d.device_ptr(), d.len(), src) }
    }

    fn copy_to_host<T: DeviceCopy>(
        &self,
        dst: &'g mut [T],
        src: &'g impl DeviceRead<T>,
    ) -> Result<(), CudaError> {
        let s = src.view();
        crate::memory::check_stream(s.stream_order(), None, None)?;
        self.writes_host.set(true);
        self.kept.borrow_mut().note(s.host_mark());
        // SAFETY: as above.
        unsafe { queue_to_host(self.driver, self.stream, dst, s.device_ptr(), s.len()) }
    }

    fn fill<T: MemsetValue>(&self, dst: &'g impl DeviceRead<T>, value: T) -> Result<(), CudaError> {
        let d = dst.view();
        crate::memory::check_stream(d.stream_order(), None, None)?;
        self.kept.borrow_mut().note(d.host_mark());
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
        let launch = self.driver.table().cuLaunchHostFunc_v10000()?;
        let p = host_params(&mut self.kept.borrow_mut(), f);
        // SAFETY: the function's data lives as long as the captured graph and every
        // graph made from it (their `kept`).
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
    /// Captures into a graph the work `f` queues through the guard it is given (CF13):
    /// the stream is borrowed mutably until the capture ends, which happens once,
    /// when `f` returns — or unwinds (CF16). Returns the graph, which borrows what the
    /// captured work borrows for `'g`. If `f` fails, or a call inside it invalidated
    /// the capture, the graph is discarded and the error returned
    /// (`CUDA_ERROR_STREAM_CAPTURE_INVALIDATED` for an invalidated capture).
    ///
    /// Only created, non-blocking streams are captured ([`CudaError::CaptureRefused`]
    /// otherwise): a blocking stream under capture would make every use of the legacy
    /// default stream an error, and the special streams have more than one name. To
    /// capture work on more than one stream, see [`capture_with`](Self::capture_with).
    pub fn capture<'g>(
        &mut self,
        mode: CaptureMode,
        f: impl for<'c> FnOnce(&'c Capturing<'c, 'g>) -> Result<(), CudaError>,
    ) -> Result<Graph<'g>, CudaError>
    where
        'a: 'g,
    {
        self.capture_with(mode, &mut [], |cap, _| f(cap))
    }

    /// [`capture`](Self::capture), with other streams the capture may fork into
    /// ([`Capturing::fork`]): they are borrowed mutably for the whole capture — a
    /// stream forked into a capture stays part of it until the capture ends — and
    /// `f` gets a [`Branch`] for each, in order.
    pub fn capture_with<'g>(
        &mut self,
        mode: CaptureMode,
        others: &mut [&mut Stream<'_>],
        f: impl for<'c> FnOnce(&'c Capturing<'c, 'g>, &'c mut [Branch<'c>]) -> Result<(), CudaError>,
    ) -> Result<Graph<'g>, CudaError>
    where
        'a: 'g,
    {
        let driver = self.driver();
        let stream = self.raw();
        capturable(driver, stream)?;
        for other in others.iter() {
            capturable(driver, other.raw())?;
        }
        // Work that marked memory runs before the capture: a host access that finds
        // the stream capturing then has nothing of it to wait for (`crate::order`).
        self.settle_marked()?;
        for other in others.iter() {
            other.settle_marked()?;
        }
        // SAFETY: a live stream of the current context.
        check(unsafe { driver.table().cuStreamBeginCapture()?(stream, mode.raw()) })?;
        // From here the capture ends in this frame, also on unwind.
        let mut ending = EndOnDrop {
            driver,
            stream,
            armed: true,
        };
        // On an error `ending` ends the capture.
        let id = capture_id(driver, stream)?;
        // Each branch names this capture: a guard of another capture (an outer one,
        // still reachable inside this closure) cannot fork into it, since the stream
        // would stay in that capture after this one returns it to the caller.
        let mut branches: Vec<Branch<'_>> = others
            .iter()
            .map(|other| Branch {
                stream: other.raw(),
                capture: id,
                _borrowed: PhantomData,
            })
            .collect();
        let kept = Rc::new(RefCell::new(Kept::default()));
        let writes_host = Rc::new(Cell::new(false));
        let cap = Capturing {
            ops: Ops {
                driver,
                stream,
                kept: Rc::clone(&kept),
                writes_host: Rc::clone(&writes_host),
                _tied: PhantomData,
            },
            id,
            broken: Rc::new(Cell::new(false)),
            _scope: PhantomData,
        };
        let r = f(&cap, &mut branches);
        ending.armed = false;
        let ended = end_capture(driver, stream);
        let raw = match (r, ended) {
            (Ok(()), Ok(raw)) if !cap.broken.get() => raw,
            (r, ended) => {
                let ended = ended.map(|raw| destroy_graph(driver, raw));
                r?;
                ended?;
                return Err(CudaError::CaptureRefused(
                    "a forked stream could not be rejoined; the capture was discarded",
                ));
            }
        };
        let graph = Graph::from_raw(driver, raw, kept);
        graph.writes_host.set(writes_host.get());
        Ok(graph)
    }
}

/// One of the streams a capture may fork into ([`Stream::capture_with`]), borrowed
/// for the whole capture.
pub struct Branch<'c> {
    stream: CUstream,
    /// The capture it belongs to (`cuStreamGetCaptureInfo`'s identity).
    capture: u64,
    _borrowed: PhantomData<&'c mut ()>,
}

impl core::fmt::Debug for Branch<'_> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Branch")
            .field("stream", &self.stream)
            .field("capture", &self.capture)
            .finish()
    }
}

/// Ends a capture when dropped (on unwind, or an early return), discarding its graph.
struct EndOnDrop {
    driver: &'static Driver,
    stream: CUstream,
    armed: bool,
}

impl Drop for EndOnDrop {
    fn drop(&mut self) {
        if !self.armed {
            return;
        }
        match end_capture(self.driver, self.stream) {
            Ok(raw) => destroy_graph(self.driver, raw),
            Err(e) => tracing::debug!(%e, "a capture ended without its graph"),
        }
    }
}

/// Refuses the streams a capture must not use: the special handles (the legacy and
/// per-thread default streams have other names a capture cannot borrow) and blocking
/// streams.
fn capturable(driver: &'static Driver, stream: CUstream) -> Result<(), CudaError> {
    if [CUstream::NULL, CU_STREAM_LEGACY, CU_STREAM_PER_THREAD].contains(&stream) {
        return Err(CudaError::CaptureRefused(
            "a default stream cannot be captured: capture a created stream",
        ));
    }
    let mut flags = 0;
    // SAFETY: a live stream and a valid out-pointer.
    check(unsafe { driver.table().cuStreamGetFlags()?(stream, &mut flags) })?;
    if flags & CUstream_flags::CU_STREAM_NON_BLOCKING.bits() == 0 {
        return Err(CudaError::CaptureRefused(
            "only a CU_STREAM_NON_BLOCKING stream can be captured",
        ));
    }
    Ok(())
}

/// The identity of the capture `stream` is part of; [`CudaError::CaptureNotActive`]
/// unless it is actively capturing.
fn capture_id(driver: &'static Driver, stream: CUstream) -> Result<u64, CudaError> {
    let mut status = CUstreamCaptureStatus::CU_STREAM_CAPTURE_STATUS_NONE;
    let mut id = 0u64;
    // SAFETY: a live stream and valid out-pointers.
    check(unsafe {
        driver.table().cuStreamGetCaptureInfo_v10010()?(stream, &mut status, &mut id)
    })?;
    if status == CUstreamCaptureStatus::CU_STREAM_CAPTURE_STATUS_ACTIVE {
        Ok(id)
    } else {
        Err(CudaError::CaptureNotActive { status })
    }
}

impl<'c, 'g> Capturing<'c, 'g> {
    /// Joins the branch's stream to the capture for the duration of `f`: what `f`
    /// queues through the guard it is given is captured after what this stream queued
    /// so far, and concurrently with what this stream queues meanwhile; when `f`
    /// returns (or unwinds) the crate joins it back, so that what this stream queues
    /// afterwards waits for it. The branch's stream stays in the capture, borrowed,
    /// until the capture ends.
    pub fn fork(
        &self,
        branch: &mut Branch<'_>,
        f: impl for<'f> FnOnce(&'f Capturing<'f, 'g>) -> Result<(), CudaError>,
    ) -> Result<(), CudaError> {
        let (driver, origin, stream) = (self.ops.driver, self.ops.stream, branch.stream);
        if branch.capture != self.id {
            return Err(CudaError::CaptureRefused(
                "the branch belongs to another capture: fork it from that capture's guards",
            ));
        }
        Ops::order(driver, origin, stream)?;
        // From here the branch is in the capture: it is joined back in this frame.
        let joining = JoinOnDrop {
            driver,
            from: stream,
            to: origin,
            broken: Rc::clone(&self.broken),
            pending: true,
        };
        if capture_id(driver, stream)? != self.id {
            return Err(CudaError::CaptureRefused(
                "the forked stream did not join this capture",
            ));
        }
        let forked = Capturing {
            ops: Ops {
                driver,
                stream,
                kept: Rc::clone(&self.ops.kept),
                writes_host: Rc::clone(&self.ops.writes_host),
                _tied: PhantomData,
            },
            id: self.id,
            broken: Rc::clone(&self.broken),
            _scope: PhantomData,
        };
        let r = f(&forked);
        joining.join()?;
        r
    }
}

/// Joins a forked stream back into its capture when dropped (on unwind, or an early
/// return); a join that fails marks the capture broken, so its graph is discarded.
struct JoinOnDrop {
    driver: &'static Driver,
    from: CUstream,
    to: CUstream,
    broken: Rc<Cell<bool>>,
    /// Cleared once joined: the drop then does nothing (nothing is forgotten, so the
    /// fields are released either way).
    pending: bool,
}

impl JoinOnDrop {
    /// Joins now, reporting the driver's answer.
    fn join(mut self) -> Result<(), CudaError> {
        self.pending = false;
        let r = Ops::order(self.driver, self.from, self.to);
        if r.is_err() {
            self.broken.set(true);
        }
        r
    }
}

impl Drop for JoinOnDrop {
    fn drop(&mut self) {
        if self.pending && Ops::order(self.driver, self.from, self.to).is_err() {
            self.broken.set(true);
        }
    }
}

/// `cuStreamEndCapture`: the graph, or the capture's error (then no graph is left).
fn end_capture(driver: &'static Driver, stream: CUstream) -> Result<CUgraph, CudaError> {
    let mut raw = CUgraph::NULL;
    // SAFETY: a capturing stream and a valid out-pointer.
    let r = check(unsafe { driver.table().cuStreamEndCapture()?(stream, &mut raw) });
    if r.is_err() && !raw.is_null() {
        destroy_graph(driver, raw);
    }
    r.map(|()| raw)
}

/// Destroys a graph a capture produced that nobody will use.
fn destroy_graph(driver: &'static Driver, raw: CUgraph) {
    if let Ok(destroy) = driver.table().cuGraphDestroy() {
        // SAFETY: a graph just produced by a capture, never shared: ours to destroy.
        let r = unsafe { destroy(raw) };
        if check(r).is_err() {
            tracing::warn!(?r, "cuGraphDestroy of a discarded capture failed");
        }
    }
}

static_assertions::assert_not_impl_any!(Capturing<'static, 'static>: Send, Sync);

//! Streams and events, made under a [`CurrentContext`] token and borrowing it: they
//! cannot outlive the binding (CF2), cannot be used while another context is pushed
//! (CF3: pushing needs the token mutably), and cannot leave the thread (CF5).
//!
//! Besides created streams there are the context's default stream, the legacy
//! default stream and this thread's per-thread default stream (never destroyed);
//! host callbacks ([`Stream::launch_host_fn`]), queued memsets ([`Stream::fill`]) and
//! asynchronous copies of host memory inside [`Stream::scope`] (CF11).
//!
//! Events live in [`event`](crate::event) (re-exported here).

use crate::context::{CurrentContext, Tied};
use crate::error::{CudaError, check};
use crate::event::done;
pub use crate::event::{Event, EventKind, NoTiming, Timing};
use crate::loader::Driver;
use crate::memory::{DeviceCopy, DeviceRead, DeviceWrite, MemsetValue, same_len};
use crate::order::StreamId;
use crate::sys::{
    CU_STREAM_LEGACY, CU_STREAM_PER_THREAD, CUdeviceptr, CUresult, CUstream, CUstream_flags,
    CUstreamCaptureStatus,
};
use core::cell::Cell;
use core::ffi::c_void;
use core::marker::PhantomData;
use core::sync::atomic::{AtomicUsize, Ordering};

/// A stream of the current context.
pub struct Stream<'a> {
    driver: &'static Driver,
    raw: CUstream,
    /// How marks name it ([`crate::order`]).
    id: StreamId,
    /// Whether work queued here marked memory ([`crate::order`]): dropping the
    /// stream, or capturing it, then waits for that work first.
    marked: Cell<bool>,
    _tied: Tied<'a>,
}

impl core::fmt::Debug for Stream<'_> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "Stream({:?})", self.raw)
    }
}

impl<'ctx> CurrentContext<'ctx> {
    /// Creates a stream (`CU_STREAM_NON_BLOCKING` to not synchronise with the legacy
    /// default stream).
    pub fn create_stream(&self, flags: CUstream_flags) -> Result<Stream<'_>, CudaError> {
        let mut raw = CUstream::NULL;
        // SAFETY: a valid out-pointer; the context is current (the token proves it).
        check(unsafe { self.driver().table().cuStreamCreate()?(&mut raw, flags.bits()) })?;
        Ok(Stream::owned(self.driver(), raw))
    }

    /// Creates a stream with a priority (lower is more urgent; see
    /// [`stream_priority_range`](CurrentContext::stream_priority_range)).
    pub fn create_stream_with_priority(
        &self,
        flags: CUstream_flags,
        priority: i32,
    ) -> Result<Stream<'_>, CudaError> {
        let mut raw = CUstream::NULL;
        // SAFETY: a valid out-pointer; the context is current.
        check(unsafe {
            self.driver().table().cuStreamCreateWithPriority()?(&mut raw, flags.bits(), priority)
        })?;
        Ok(Stream::owned(self.driver(), raw))
    }

    /// The default stream of this context (never destroyed): the legacy default
    /// stream, or the per-thread one when the driver was loaded with
    /// [`DriverOptions::per_thread_default_stream`](crate::DriverOptions).
    pub fn default_stream(&self) -> Stream<'_> {
        self.special_stream(CUstream::NULL)
    }

    /// The legacy default stream (`CU_STREAM_LEGACY`): it waits for, and is waited
    /// for by, every blocking stream of the context.
    pub fn legacy_stream(&self) -> Stream<'_> {
        self.special_stream(CU_STREAM_LEGACY)
    }

    /// This thread's default stream (`CU_STREAM_PER_THREAD`): it synchronises with
    /// nothing but the legacy default stream.
    pub fn per_thread_stream(&self) -> Stream<'_> {
        self.special_stream(CU_STREAM_PER_THREAD)
    }

    fn special_stream(&self, raw: CUstream) -> Stream<'_> {
        Stream {
            driver: self.driver(),
            raw,
            id: StreamId::default_stream(raw),
            marked: Cell::new(false),
            _tied: PhantomData,
        }
    }
}

impl Stream<'_> {
    /// A stream just created, which the value owns and destroys.
    fn owned(driver: &'static Driver, raw: CUstream) -> Self {
        crate::leaks::created(crate::leaks::Kind::Streams, raw);
        Stream {
            driver,
            raw,
            id: crate::order::stream_created(raw),
            marked: Cell::new(false),
            _tied: PhantomData,
        }
    }

    /// The handle, for work queued here that marks the memory it uses
    /// ([`crate::order`]): the stream then waits for its work when dropped.
    #[inline(always)]
    pub(crate) fn marking(&self) -> StreamId {
        self.marked.set(true);
        self.id
    }

    /// How marks name this stream.
    #[inline(always)]
    pub(crate) fn id(&self) -> StreamId {
        self.id
    }

    /// Work queued here marked memory: the stream waits for it when dropped.
    #[inline(always)]
    pub(crate) fn note_marked(&self) {
        self.marked.set(true);
    }

    /// Waits for the work queued here that marked memory, if any: before a capture
    /// begins, so that a host access that finds this stream capturing has nothing of
    /// it to wait for.
    pub(crate) fn settle_marked(&self) -> Result<(), CudaError> {
        if self.marked.get() {
            self.synchronize()?;
            self.marked.set(false);
        }
        Ok(())
    }
}

impl Stream<'_> {
    /// The driver's handle.
    pub fn raw(&self) -> CUstream {
        self.raw
    }

    pub(crate) fn driver(&self) -> &'static Driver {
        self.driver
    }

    /// Waits for all work queued on the stream.
    #[inline]
    pub fn synchronize(&self) -> Result<(), CudaError> {
        // SAFETY: a live stream of the current context.
        check(unsafe { self.driver.table().cuStreamSynchronize()?(self.raw) })
    }

    /// Whether all queued work is done.
    pub fn is_done(&self) -> Result<bool, CudaError> {
        // SAFETY: a live stream.
        done(unsafe { self.driver.table().cuStreamQuery()?(self.raw) })
    }

    /// Makes later work on this stream wait for `event`'s last record.
    pub fn wait<K: EventKind>(&self, event: &Event<'_, K>) -> Result<(), CudaError> {
        // SAFETY: live stream and event.
        check(unsafe { self.driver.table().cuStreamWaitEvent()?(self.raw, event.raw(), 0) })
    }

    /// Runs `f` on a driver thread once the work queued before it is done (CF20: `f`
    /// is `Send + 'static`; a closure borrowing a local is rejected). A panic inside
    /// `f` is caught — it never unwinds into the driver — logged, and counted by
    /// [`host_callback_panics`]. If the context fails (a sticky error) before `f`'s
    /// turn, `f` is dropped without running — never leaked. Inside `f` every driver
    /// call is refused ([`CudaError::InHostCallback`]): CUDA forbids them there. What
    /// `f` drops there is leaked with a warning, not released.
    ///
    /// Queued with `cuStreamAddCallback`, which the driver calls exactly once, with
    /// the stream's status (`cuLaunchHostFunc` skips its function after an error,
    /// leaking what the closure owns).
    pub fn launch_host_fn<F: FnOnce() + Send + 'static>(&self, f: F) -> Result<(), CudaError> {
        let add_callback = self.driver.table().cuStreamAddCallback()?;
        let data = Box::into_raw(Box::new(Box::new(f) as HostFn)).cast::<c_void>();
        // SAFETY: `data` is a leaked `Box<HostFn>` that `host_fn_trampoline` takes back
        // exactly once, when the driver calls it; flags must be 0.
        let r = unsafe { add_callback(self.raw, Some(host_fn_trampoline), data, 0) };
        if let Err(e) = check(r) {
            // SAFETY: the driver refused the call, so it will never run the trampoline.
            drop(unsafe { Box::from_raw(data.cast::<HostFn>()) });
            return Err(e);
        }
        Ok(())
    }

    /// Queues setting every element of `dst` to `value` (device memory is borrowed
    /// only for the call: later work on the stream sees the result, in stream order).
    pub fn fill<T: MemsetValue>(
        &self,
        dst: &mut impl DeviceWrite<T>,
        value: T,
    ) -> Result<(), CudaError> {
        let mut dst = dst.view_mut();
        dst.set(value, Some(self.raw))?;
        dst.mark_used(self.marking());
        Ok(())
    }

    /// Queues a copy of `src` into `dst`, device to device (same element type, CF12,
    /// and same length, else [`CudaError::LengthMismatch`]), in this stream's order
    /// (`cuMemcpyDtoDAsync`): later work on the stream sees the result; the host does
    /// not wait. Device memory is borrowed only for the call, as for
    /// [`fill`](Self::fill). A stream-ordered buffer's memory only on its own stream
    /// ([`CudaError::WrongStream`]); nothing to copy (no bytes) queues nothing.
    pub fn copy<T: DeviceCopy>(
        &self,
        dst: &mut impl DeviceWrite<T>,
        src: &impl DeviceRead<T>,
    ) -> Result<(), CudaError> {
        let (dst, src) = (dst.view_mut(), src.view());
        same_len(dst.len(), src.len())?;
        crate::memory::check_stream(dst.stream_order(), Some(self.raw), None)?;
        crate::memory::check_stream(src.stream_order(), Some(self.raw), None)?;
        let bytes = crate::memory::bytes::<T>(dst.len())?;
        if bytes == 0 {
            return Ok(());
        }
        // SAFETY: two live ranges of `bytes` bytes (the source borrowed shared, so it
        // is not the destination), queued on a live stream of the current context.
        check(unsafe {
            self.driver.table().cuMemcpyDtoDAsync()?(
                dst.device_ptr(),
                src.device_ptr(),
                bytes,
                self.raw,
            )
        })?;
        dst.mark_used(self.marking());
        src.mark_used(self.marking());
        Ok(())
    }

    /// The stream's priority.
    pub fn priority(&self) -> Result<i32, CudaError> {
        let mut p = 0;
        // SAFETY: a valid out-pointer.
        check(unsafe { self.driver.table().cuStreamGetPriority()?(self.raw, &mut p) })?;
        Ok(p)
    }
}

impl<K: EventKind> Event<'_, K> {
    /// Records the event on `stream`: it completes when the work queued before it has.
    /// (Here rather than in `event`, which streams are built on.)
    #[inline]
    pub fn record(&self, stream: &Stream<'_>) -> Result<(), CudaError> {
        // SAFETY: live event and stream of the current context.
        check(unsafe { stream.driver.table().cuEventRecord()?(self.raw(), stream.raw()) })
    }
}

impl Drop for Stream<'_> {
    fn drop(&mut self) {
        if [CUstream::NULL, CU_STREAM_LEGACY, CU_STREAM_PER_THREAD].contains(&self.raw) {
            return;
        }
        crate::order::stream_destroyed(self.id);
        if self.marked.get() {
            // Memory may carry this stream's mark: its work must be over before the
            // handle dies, so that a mark naming a dead stream names finished work.
            if let Err(e) = self.synchronize() {
                tracing::warn!(%e, "a stream being dropped could not finish its work");
            }
        }
        if let Ok(destroy) = self.driver.table().cuStreamDestroy() {
            // SAFETY: this value owns the stream.
            let r = unsafe { destroy(self.raw) };
            if check(r).is_err() {
                tracing::warn!(?r, "cuStreamDestroy failed");
            } else {
                crate::leaks::destroyed(crate::leaks::Kind::Streams, self.raw);
            }
        }
    }
}

type HostFn = Box<dyn FnOnce() + Send>;

static HOST_CALLBACK_PANICS: AtomicUsize = AtomicUsize::new(0);

/// How many host callbacks have panicked (each panic was caught and logged).
pub fn host_callback_panics() -> usize {
    HOST_CALLBACK_PANICS.load(Ordering::Relaxed)
}

unsafe extern "C" fn host_fn_trampoline(_stream: CUstream, status: CUresult, data: *mut c_void) {
    // SAFETY: `data` came from `Box::into_raw` in `launch_host_fn`; the driver calls
    // each stream callback exactly once.
    let f = unsafe { Box::from_raw(data.cast::<HostFn>()) };
    run_host_code(|| {
        if status == CUresult::CUDA_SUCCESS {
            f();
        } else {
            tracing::warn!(
                ?status,
                "the stream failed before a host callback's turn; it is dropped without running"
            );
            drop(f);
        }
    });
}

/// Runs host code the driver called (a stream callback, a graph's host node): marked
/// as inside a host callback, and with any panic caught, counted and logged — a panic
/// never unwinds into the driver.
pub(crate) fn run_host_code(f: impl FnOnce()) {
    let _marked = crate::activity::InCallback::enter();
    let ran = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f));
    if let Err(payload) = ran {
        HOST_CALLBACK_PANICS.fetch_add(1, Ordering::Relaxed);
        tracing::error!("a host callback panicked; the panic was caught at the driver boundary");
        // The payload's own `Drop` may panic too; that must not unwind into the
        // driver either: such a second payload is forgotten.
        let dropped = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| drop(payload)));
        if let Err(again) = dropped {
            core::mem::forget(again);
        }
    }
}

static_assertions::assert_not_impl_any!(Stream<'static>: Send, Sync);

/// Asynchronous work on a stream that borrows host memory: see [`Stream::scope`].
pub struct AsyncScope<'scope, 'env: 'scope> {
    driver: &'static Driver,
    stream: CUstream,
    id: StreamId,
    _scope: PhantomData<&'scope mut &'scope ()>,
    _env: PhantomData<(&'env mut &'env (), *const ())>,
}

/// `cuStreamSynchronize`, resolved before a scope starts.
type SyncFn = crate::table::pfn::cuStreamSynchronize;

/// Waits for the stream's work (see [`settled_or_abort`](crate::wait::settled_or_abort)).
fn wait_or_abort(driver: &'static Driver, sync: SyncFn, stream: CUstream) -> Result<(), CudaError> {
    // SAFETY: a live stream.
    crate::wait::settled_or_abort(driver, "an async scope's copies", || unsafe {
        sync(stream)
    })
}

/// Waits when dropped: a scope never unwinds while its copies may still touch host
/// memory.
struct WaitOnDrop {
    driver: &'static Driver,
    sync: SyncFn,
    stream: CUstream,
}

impl Drop for WaitOnDrop {
    fn drop(&mut self) {
        if let Err(e) = wait_or_abort(self.driver, self.sync, self.stream) {
            tracing::error!(%e, "the stream failed while an async scope unwound");
        }
    }
}

impl Stream<'_> {
    /// Runs `f`, in which copies may be queued on this stream that read or write host
    /// memory borrowed for `'env`; returns only after the stream has finished them —
    /// also when `f` panics (CF11: the host memory can be neither freed nor touched
    /// until then). The scope lives inside this call, so no `mem::forget` can skip the
    /// wait. If the stream fails with a sticky error the scope returns it (the
    /// context's work is abandoned); if the wait itself is impossible for another
    /// reason, the process aborts rather than free memory a copy may still use.
    ///
    /// ```
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let driver = oxicuda_driver::driver_with(oxicuda_driver::DriverOptions::software())?;
    /// # driver.init()?;
    /// # let ctx = oxicuda_driver::Context::new(&driver.best_device()?, oxicuda_driver::sys::CUctx_flags::empty())?;
    /// use oxicuda_driver::CudaError;
    /// use oxicuda_driver::sys::CUstream_flags;
    ///
    /// ctx.bind(|cur| -> Result<(), CudaError> {
    ///     let stream = cur.create_stream(CUstream_flags::CU_STREAM_NON_BLOCKING)?;
    ///     let input = vec![5u32; 1024];
    ///     let mut buf = cur.alloc::<u32>(1024)?;
    ///     let mut back = vec![0u32; 1024];
    ///     stream.scope(|s| -> Result<(), CudaError> {
    ///         s.copy_to_device(&mut buf, &input)?; // queued, not yet done
    ///         s.copy_to_host(&mut back, &buf) // queued after it on the same stream
    ///     })??; // returns once the stream has run both
    ///     assert_eq!(back, input);
    ///     Ok(())
    /// })??;
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// ```compile_fail
    /// # use oxicuda_driver::{memory::DeviceBuffer, stream::Stream};
    /// # fn f(stream: &Stream<'_>, buf: &DeviceBuffer<'_, f32>) {
    /// let mut host = vec![0f32; 4];
    /// stream.scope(|s| {
    ///     s.copy_to_host(&mut host, buf).unwrap();
    ///     host[0] = 1.0; // CF11: touched while the copy may be in flight
    /// }).unwrap();
    /// # }
    /// ```
    pub fn scope<'env, R>(
        &'env self,
        f: impl for<'scope> FnOnce(&'scope AsyncScope<'scope, 'env>) -> R,
    ) -> Result<R, CudaError> {
        let sync = self.driver.table().cuStreamSynchronize()?;
        // A capturing stream would record the copies instead of running them, and the
        // scope's wait would fail: refuse before anything is queued. (The crate's own
        // captures borrow their streams; this catches other code's.)
        if let Ok(is_capturing) = self.driver.table().cuStreamIsCapturing() {
            let mut status = CUstreamCaptureStatus::CU_STREAM_CAPTURE_STATUS_NONE;
            // SAFETY: a live stream and a valid out-pointer.
            check(unsafe { is_capturing(self.raw, &mut status) })?;
            if status != CUstreamCaptureStatus::CU_STREAM_CAPTURE_STATUS_NONE {
                return Err(CudaError::CaptureRefused(
                    "a scope cannot run on a stream that is being captured",
                ));
            }
        }
        let scope = AsyncScope {
            driver: self.driver,
            stream: self.raw,
            id: self.id,
            _scope: PhantomData,
            _env: PhantomData,
        };
        let guard = WaitOnDrop {
            driver: self.driver,
            sync,
            stream: self.raw,
        };
        let r = f(&scope);
        core::mem::forget(guard); // the wait below reports its error instead
        wait_or_abort(self.driver, sync, self.raw)?;
        Ok(r)
    }
}

impl<'env> AsyncScope<'_, 'env> {
    pub(crate) fn driver(&self) -> &'static Driver {
        self.driver
    }

    pub(crate) fn stream(&self) -> CUstream {
        self.stream
    }

    /// The scope's stream as marks name it ([`crate::order`]).
    pub(crate) fn stream_id(&self) -> StreamId {
        self.id
    }

    /// Queues a copy of `src` into `dst` (same length).
    pub fn copy_to_device<T: DeviceCopy>(
        &self,
        dst: &mut impl DeviceWrite<T>,
        src: &'env [T],
    ) -> Result<(), CudaError> {
        let dst = dst.view_mut();
        crate::memory::check_stream(dst.stream_order(), Some(self.stream), None)?;
        // SAFETY: the view's elements; the host side stays borrowed until the scope
        // has synchronised the stream (device memory is not Rust memory: it is borrowed
        // only for the call, and stream order keeps its uses in sequence).
        unsafe { queue_to_device(self.driver, self.stream, dst.device_ptr(), dst.len(), src) }?;
        // The scope waits for the stream before it ends (and the stream outlives it).
        dst.mark_used(self.id);
        Ok(())
    }

    /// Queues a copy of `src` into `dst` (same length).
    pub fn copy_to_host<T: DeviceCopy>(
        &self,
        dst: &'env mut [T],
        src: &impl DeviceRead<T>,
    ) -> Result<(), CudaError> {
        let src = src.view();
        crate::memory::check_stream(src.stream_order(), Some(self.stream), None)?;
        // SAFETY: as above.
        unsafe { queue_to_host(self.driver, self.stream, dst, src.device_ptr(), src.len()) }?;
        src.mark_used(self.id);
        Ok(())
    }
}

/// `cuMemcpyHtoDAsync` of `src` into the `dst_len` elements at `dst`, on `stream`
/// (`LengthMismatch` unless the lengths agree).
///
/// # Safety
/// `dst` holds `dst_len` elements of device memory, and `src` stays alive and
/// unwritten until the copy has run (a scope's wait; for captured work, the graph's
/// life).
pub(crate) unsafe fn queue_to_device<T: DeviceCopy>(
    driver: &'static Driver,
    stream: CUstream,
    dst: CUdeviceptr,
    dst_len: usize,
    src: &[T],
) -> Result<(), CudaError> {
    same_len(dst_len, src.len())?;
    if size_of_val(src) == 0 {
        return Ok(()); // nothing to copy (an empty buffer's address is 0)
    }
    // SAFETY: the caller's contract; both ranges hold `src.len()` elements.
    check(unsafe {
        driver.table().cuMemcpyHtoDAsync()?(dst, src.as_ptr().cast(), size_of_val(src), stream)
    })
}

/// `cuMemcpyDtoHAsync` of the `src_len` elements at `src` into `dst`, on `stream`
/// (`LengthMismatch` unless the lengths agree).
///
/// # Safety
/// `src` holds `src_len` elements of device memory, and `dst` stays alive and
/// untouched until the copy has run (as for [`queue_to_device`]). `T: DeviceCopy`
/// makes any bytes written valid.
pub(crate) unsafe fn queue_to_host<T: DeviceCopy>(
    driver: &'static Driver,
    stream: CUstream,
    dst: &mut [T],
    src: CUdeviceptr,
    src_len: usize,
) -> Result<(), CudaError> {
    same_len(dst.len(), src_len)?;
    if size_of_val(dst) == 0 {
        return Ok(());
    }
    // SAFETY: the caller's contract; both ranges hold `dst.len()` elements.
    check(unsafe {
        driver.table().cuMemcpyDtoHAsync()?(dst.as_mut_ptr().cast(), src, size_of_val(dst), stream)
    })
}
static_assertions::assert_not_impl_any!(AsyncScope<'static, 'static>: Send, Sync);

impl core::fmt::Debug for AsyncScope<'_, '_> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "AsyncScope({:?})", self.stream)
    }
}

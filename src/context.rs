//! Contexts, and the token that proves one is current.
//!
//! A [`Context`] (created) or [`PrimaryContext`] (retained) is an owned handle: it may
//! move between threads (`Send`), but not be shared (`!Sync`). To do work in it you
//! *bind* it: [`Context::bind`] pushes it on this thread's context stack, hands a
//! [`CurrentContext<'ctx>`] token to a closure, and pops it when the closure returns —
//! or unwinds. The token is the proof that the context is current on this thread, so
//! nothing that takes it checks again:
//!
//! - it is neither `Send` nor `Sync` (CF1): the proof holds for this thread only;
//! - its lifetime `'ctx` is an invariant brand made fresh by each binding (the closure
//!   is generic over it), so nothing carrying it escapes the binding (CF2);
//! - a nested binding ([`CurrentContext::push`]) borrows the outer token mutably, so
//!   the outer context's objects cannot be used while another is current (CF3).
//!
//! Checked at run time, at the edges, never per call:
//!
//! - a root binding needs a thread with no current context — neither a binding of
//!   this crate (of any driver) nor a context that other code (another copy of the
//!   crate, the CUDA runtime, another library) left current in the driver's own
//!   per-thread stack; otherwise [`CudaError::ContextAlreadyBound`];
//! - a binding's end checks that the context it pops is its own; code that changed
//!   the stack meanwhile is reported as [`CudaError::ContextMismatch`] (and the
//!   stack restored as far as possible);
//! - page-locked allocation and host registration re-check that the token's
//!   context is current, because memory made in a wrong context would be freed
//!   with that context under safe code;
//! - a nested binding, and peer access, refuse a context of another [`Driver`]
//!   ([`CudaError::ForeignDriver`]), and no binding is made inside a host callback
//!   ([`CudaError::InHostCallback`]).
//!
//! Sticky errors: a failure the driver documents as leaving the context unusable
//! ([`CUresult::is_sticky`]: an illegal address, a launch failure, ...) marks the
//! handle of the context bound when it was reported (or whose binding's push
//! answered with it): [`Context::sticky_error`] (and
//! [`PrimaryContext::sticky_error`], [`CurrentContext::sticky_error`]) then name it,
//! and binding the handle again — root or nested — is refused at once with
//! [`CudaError::ContextPoisoned`], whose message says to drop it and make a new
//! context. Dropping the handle still destroys (releases) the context. Only the
//! handle bound when the error came back is marked: the driver itself reports the
//! error to the other users of the context (on NVIDIA's driver an illegal address
//! leaves the whole process unable to use CUDA; softcuda confines it to the context).
//! [`PrimaryContext::reset`] clears its handle's mark (softcuda recovers there;
//! NVIDIA documents these errors as needing a new process). What is marked is the
//! innermost binding on the thread when a sticky code came back, also for calls not
//! about that context (dropping another `Context`, retaining a primary context, a
//! second driver's calls): on NVIDIA's driver the error is process-wide anyway. A
//! sticky answer to a nested push marks the pushed handle only.
//!
//! Mixing with other CUDA libraries on one thread: inside a binding, other code
//! must leave the context stack as it found it (push and pop in pairs; no
//! `cuCtxSetCurrent`, `cudaSetDevice` or `bind_to_thread` without restoring).

use crate::device::Device;
use crate::error::{CudaError, check};
use crate::loader::Driver;
use crate::sys::{CUcontext, CUctx_flags, CUdevice, CUfunc_cache, CUlimit, CUresult};
use core::cell::Cell;
use core::ffi::{c_int, c_uint};
use core::marker::PhantomData;

thread_local! {
    /// Whether a root binding of this copy of the crate is active on this thread
    /// (whatever its driver: two drivers' tokens never coexist on one thread).
    static ROOT_BOUND: Cell<bool> = const { Cell::new(false) };
}

/// The proof that a context is current on this thread, for the binding's lifetime
/// `'ctx`.
///
/// A binding ([`Context::bind`], [`PrimaryContext::bind`]) lends it to its closure;
/// buffers, streams, modules and graphs are made through it and borrow it, so none
/// outlives the binding or leaves the thread. Code that needs a current context takes
/// `&CurrentContext<'_>`, and cannot be called without one:
///
/// ```
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// # let driver = oxicuda_driver::driver_with(oxicuda_driver::DriverOptions::software())?;
/// # driver.init()?;
/// # let ctx = oxicuda_driver::Context::new(&driver.best_device()?, oxicuda_driver::sys::CUctx_flags::empty())?;
/// use oxicuda_driver::{CudaError, CurrentContext, memory::DeviceBuffer};
/// fn squares<'c>(cur: &'c CurrentContext<'_>, n: u32) -> Result<DeviceBuffer<'c, u32>, CudaError> {
///     cur.alloc_from(&(0..n).map(|i| i * i).collect::<Vec<_>>())
/// }
/// let v = ctx.bind(|cur| -> Result<Vec<u32>, CudaError> { squares(cur, 4)?.to_vec() })??;
/// assert_eq!(v, [0, 1, 4, 9]);
/// # Ok(()) }
/// ```
///
/// ```compile_fail
/// // CF1: the proof cannot cross threads.
/// fn send<T: Send>() {}
/// send::<oxicuda_driver::CurrentContext<'static>>();
/// ```
pub struct CurrentContext<'ctx> {
    driver: &'static Driver,
    raw: CUcontext,
    _brand: Brand<'ctx>,
}

/// Ties an object to the borrow `'a` of its token; not `Send`, not `Sync`.
pub(crate) type Tied<'a> = PhantomData<(&'a (), *const ())>;

/// Invariant in `'ctx` (a brand made fresh by each binding), and neither `Send` nor
/// `Sync`.
type Brand<'ctx> = PhantomData<(fn(&'ctx ()) -> &'ctx (), *const ())>;

/// The context current on this thread in `driver`'s per-thread stack (null if none).
pub(crate) fn current(driver: &Driver) -> Result<CUcontext, CudaError> {
    let mut c = CUcontext::NULL;
    // SAFETY: a valid out-pointer.
    check(unsafe { driver.table().cuCtxGetCurrent()?(&mut c) })?;
    Ok(c)
}

/// `CudaError::ContextMismatch` for an expected and a found context.
fn mismatch(expected: CUcontext, found: CUcontext) -> CudaError {
    CudaError::ContextMismatch {
        expected: expected.0 as usize,
        found: found.0 as usize,
    }
}

/// Ends a binding: pops its context, also on unwind, and checks that the context
/// popped was the binding's.
struct Unbind<'p> {
    driver: &'static Driver,
    raw: CUcontext,
    root: bool,
    /// The bound handle's sticky-error mark, and the enclosing binding's record.
    poisoned: &'p Cell<Option<CUresult>>,
    /// `cuCtxPopCurrent`, resolved before the push so that the binding can end.
    pop: crate::table::pfn::cuCtxPopCurrent,
    /// The enclosing binding's sticky error and handle mark.
    enclosing: crate::activity::Enclosing,
}

impl Unbind<'_> {
    /// Marks the handle with a sticky error this binding saw, and gives the enclosing
    /// binding its record back.
    fn settle(&self) {
        if let Some(code) = crate::activity::leave_binding(&self.enclosing)
            && self.poisoned.get().is_none()
        {
            self.poisoned.set(Some(code));
        }
    }

    /// Pops the binding's context. If code outside this crate changed the driver's
    /// stack during the binding (replaced or pushed over the binding's context), the
    /// stack is restored as far as it can be — down to what was current before the
    /// binding — and the change is reported.
    fn pop(&self) -> Result<(), CudaError> {
        let pop = self.pop;
        let mut popped = CUcontext::NULL;
        // SAFETY: a valid out-pointer; this binding pushed a context.
        check(unsafe { pop(&mut popped) })?;
        if popped == self.raw {
            return Ok(());
        }
        // Something was pushed over ours and left there: ours is below it.
        if current(self.driver)? == self.raw {
            let mut again = CUcontext::NULL;
            // SAFETY: as above; the binding's own context is on top now.
            check(unsafe { pop(&mut again) })?;
        }
        Err(mismatch(self.raw, popped))
    }

    /// Ends the binding on the normal path, reporting a failure to pop cleanly.
    fn end(self) -> Result<(), CudaError> {
        let r = self.pop();
        self.settle();
        self.release_root();
        core::mem::forget(self);
        r
    }

    fn release_root(&self) {
        if self.root {
            ROOT_BOUND.with(|b| b.set(false));
        }
    }
}

impl Drop for Unbind<'_> {
    // Only on unwind: `end` forgets the guard.
    fn drop(&mut self) {
        if let Err(e) = self.pop() {
            tracing::error!(%e, "a binding could not be ended cleanly while unwinding");
        }
        self.settle();
        self.release_root();
    }
}

pub(crate) fn bind_raw<R>(
    driver: &'static Driver,
    raw: CUcontext,
    root: bool,
    poisoned: &Cell<Option<CUresult>>,
    f: impl for<'ctx> FnOnce(&mut CurrentContext<'ctx>) -> R,
) -> Result<R, CudaError> {
    crate::error::refuse_in_host_callback()?;
    if let Some(code) = poisoned.get() {
        return Err(CudaError::ContextPoisoned { code });
    }
    if root {
        // This crate's root binding of any driver, or a context current in the
        // driver's own per-thread stack — left by another copy of this crate, the
        // CUDA runtime or another library — would be frozen under this binding
        // without the compiler knowing.
        if ROOT_BOUND.with(Cell::get) || !current(driver)?.is_null() {
            return Err(CudaError::ContextAlreadyBound);
        }
    }
    // Resolved first: a binding that could not pop would leave the thread stuck.
    let pop = driver.table().cuCtxPopCurrent()?;
    // SAFETY: `raw` is a live context of `driver` (its owner is borrowed for the
    // binding; the callers check it belongs to `driver`).
    let pushed = unsafe { driver.table().cuCtxPushCurrent()?(raw) };
    if pushed != CUresult::CUDA_SUCCESS {
        // A sticky answer to the push marks this context only — not through `check`,
        // which would record it for the enclosing binding's context as well.
        if pushed.is_sticky() {
            poisoned.set(Some(pushed));
        }
        return Err(CudaError::Driver(pushed));
    }
    if root {
        ROOT_BOUND.with(|b| b.set(true));
    }
    let unbind = Unbind {
        driver,
        raw,
        root,
        poisoned,
        pop,
        enclosing: crate::activity::enter_binding(poisoned),
    };
    let mut token = CurrentContext {
        driver,
        raw,
        _brand: PhantomData,
    };
    let r = f(&mut token);
    unbind.end()?;
    Ok(r)
}

/// Whether this thread has a root binding of this crate (any driver).
#[cfg(feature = "multi-gpu")]
pub(crate) fn root_bound() -> bool {
    ROOT_BOUND.with(Cell::get)
}

/// Refuses a context of another driver than `driver` ([`CudaError::ForeignDriver`]).
pub(crate) fn same_driver(
    driver: &'static Driver,
    other: &'static Driver,
) -> Result<(), CudaError> {
    if core::ptr::eq(driver, other) {
        Ok(())
    } else {
        Err(CudaError::ForeignDriver)
    }
}

/// A root binding of this crate held for a multi-context binding (`peer`):
/// claimed only on a thread with no binding and no current context, released when
/// dropped (also on unwind).
#[cfg(feature = "multi-gpu")]
pub(crate) struct RootClaim(());

#[cfg(feature = "multi-gpu")]
impl RootClaim {
    /// Claims the thread as [`bind_raw`]'s root check does
    /// ([`CudaError::ContextAlreadyBound`] otherwise).
    pub(crate) fn claim(driver: &'static Driver) -> Result<RootClaim, CudaError> {
        if ROOT_BOUND.with(Cell::get) || !current(driver)?.is_null() {
            return Err(CudaError::ContextAlreadyBound);
        }
        ROOT_BOUND.with(|b| b.set(true));
        Ok(RootClaim(()))
    }
}

#[cfg(feature = "multi-gpu")]
impl Drop for RootClaim {
    fn drop(&mut self) {
        ROOT_BOUND.with(|b| b.set(false));
    }
}

/// A context this program created; destroyed when dropped — except inside a host
/// callback, where CUDA forbids driver calls: a `Context` dropped there is leaked
/// (and logged), because destroying it would wait for the stream running the
/// callback.
pub struct Context {
    driver: &'static Driver,
    raw: CUcontext,
    /// The sticky error a binding of this handle saw (see the module docs).
    poisoned: Cell<Option<CUresult>>,
    _not_sync: PhantomData<Cell<()>>,
}

// SAFETY: a CUDA context may be used from any thread, by one binding at a time; the
// handle is `!Sync` and binding borrows it, so two threads never bind it at once.
unsafe impl Send for Context {}

impl Context {
    /// Creates a context on `device` with `flags`. It is not left current: bind it.
    pub fn new(device: &Device, flags: CUctx_flags) -> Result<Context, CudaError> {
        crate::error::refuse_in_host_callback()?;
        let driver = device.driver();
        let t = driver.table();
        // Resolved first: the new context is left current and must be popped.
        let pop = t.cuCtxPopCurrent()?;
        let mut raw = CUcontext::NULL;
        // SAFETY: a valid out-pointer; the flags are the typed set the driver defines.
        check(unsafe { t.cuCtxCreate_v3020()?(&mut raw, flags.bits(), device.raw()) })?;
        let ctx = Context {
            driver,
            raw,
            poisoned: Cell::new(None),
            _not_sync: PhantomData,
        };
        crate::leaks::created(crate::leaks::Kind::Contexts, raw);
        // cuCtxCreate made it current: restore the previous context.
        let mut popped = CUcontext::NULL;
        // SAFETY: a valid out-pointer; the context just pushed is popped.
        check(unsafe { pop(&mut popped) })?;
        Ok(ctx)
    }

    /// Takes ownership of a raw context (CF21: only `unsafe` code can make one).
    ///
    /// # Safety
    /// `raw` must be a live context created with `cuCtxCreate` of `driver`, owned by
    /// nobody else: the returned value destroys it.
    pub unsafe fn from_raw(driver: &'static Driver, raw: CUcontext) -> Context {
        crate::leaks::created(crate::leaks::Kind::Contexts, raw);
        Context {
            driver,
            raw,
            poisoned: Cell::new(None),
            _not_sync: PhantomData,
        }
    }

    /// The driver's handle.
    pub fn raw(&self) -> CUcontext {
        self.raw
    }

    /// Makes the context current on this thread for the duration of `f`.
    /// [`CudaError::ContextAlreadyBound`] if this thread already has a root binding:
    /// nest with [`CurrentContext::push`] instead.
    ///
    /// `f` gets the [`CurrentContext`] token; what it makes with it stays inside the
    /// call. The outer `Result` is the binding's own (made current, and released
    /// without a sticky error), the inner one `f`'s:
    ///
    /// ```
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// use oxicuda_driver::sys::CUctx_flags;
    /// use oxicuda_driver::{Context, CudaError, DriverOptions};
    ///
    /// let driver = oxicuda_driver::driver_with(DriverOptions::software())?; // or `init()?`
    /// driver.init()?;
    /// let ctx = Context::new(&driver.best_device()?, CUctx_flags::empty())?;
    /// let sum = ctx.bind(|cur| -> Result<f32, CudaError> {
    ///     let buf = cur.alloc_from(&[1.0f32, 2.0, 3.0])?;
    ///     Ok(buf.to_vec()?.iter().sum())
    /// })??;
    /// assert_eq!(sum, 6.0);
    /// // One root binding per thread at a time.
    /// ctx.bind(|_| assert!(matches!(ctx.bind(|_| ()), Err(CudaError::ContextAlreadyBound))))?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn bind<R>(
        &self,
        f: impl for<'ctx> FnOnce(&mut CurrentContext<'ctx>) -> R,
    ) -> Result<R, CudaError> {
        bind_raw(self.driver, self.raw, true, &self.poisoned, f)
    }

    /// The sticky error a binding of this context reported, if any: the context is
    /// then unusable, and binding it is refused ([`CudaError::ContextPoisoned`]).
    pub fn sticky_error(&self) -> Option<CUresult> {
        self.poisoned.get()
    }

    /// Its driver, handle and sticky-error mark, for a binding made elsewhere in the
    /// crate (`peer`).
    #[cfg(feature = "multi-gpu")]
    pub(crate) fn parts(&self) -> (&'static Driver, CUcontext, &Cell<Option<CUresult>>) {
        (self.driver, self.raw, &self.poisoned)
    }
}

impl Drop for Context {
    fn drop(&mut self) {
        if crate::activity::in_host_callback() {
            // Destroying a context waits for its streams — one of which is running
            // this callback: a hang. A leaked context is the lesser harm.
            tracing::error!(ctx = ?self.raw, "a Context dropped inside a host callback is leaked, not destroyed (CUDA forbids driver calls there)");
            return;
        }
        if let Ok(destroy) = self.driver.table().cuCtxDestroy() {
            // SAFETY: this value owns the context; no binding borrows it any more.
            let r = unsafe { destroy(self.raw) };
            if check(r).is_err() {
                tracing::warn!(?r, "cuCtxDestroy failed");
            } else {
                crate::leaks::destroyed(crate::leaks::Kind::Contexts, self.raw);
            }
        }
    }
}

impl core::fmt::Debug for Context {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "Context({:?})", self.raw)
    }
}

impl core::fmt::Debug for PrimaryContext {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "PrimaryContext({:?}, {:?})", self.raw, self.device)
    }
}

impl core::fmt::Debug for CurrentContext<'_> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "CurrentContext({:?})", self.raw)
    }
}

/// The state of a device's primary context.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PrimaryState {
    /// The flags it is (or will be) created with.
    pub flags: CUctx_flags,
    /// Whether it exists (someone retains it).
    pub active: bool,
}

/// A retained primary context; released when dropped (not inside a host callback:
/// see [`Context`]).
pub struct PrimaryContext {
    device: Device,
    raw: CUcontext,
    /// The sticky error a binding of this handle saw (see the module docs).
    poisoned: Cell<Option<CUresult>>,
    _not_sync: PhantomData<Cell<()>>,
}

// SAFETY: as for `Context`: used by one binding at a time, from any thread.
unsafe impl Send for PrimaryContext {}

impl PrimaryContext {
    /// Retains `device`'s primary context (creating it if nobody retains it).
    pub fn retain(device: &Device) -> Result<PrimaryContext, CudaError> {
        crate::error::refuse_in_host_callback()?;
        let mut raw = CUcontext::NULL;
        // SAFETY: a valid out-pointer.
        check(unsafe {
            device.driver().table().cuDevicePrimaryCtxRetain()?(&mut raw, device.raw())
        })?;
        crate::leaks::created(crate::leaks::Kind::PrimaryRetains, raw);
        Ok(PrimaryContext {
            device: *device,
            raw,
            poisoned: Cell::new(None),
            _not_sync: PhantomData,
        })
    }

    /// The driver's handle.
    pub fn raw(&self) -> CUcontext {
        self.raw
    }

    /// Its device.
    pub fn device(&self) -> Device {
        self.device
    }

    /// Makes the context current on this thread for the duration of `f` (see
    /// [`Context::bind`]).
    pub fn bind<R>(
        &self,
        f: impl for<'ctx> FnOnce(&mut CurrentContext<'ctx>) -> R,
    ) -> Result<R, CudaError> {
        bind_raw(self.device.driver(), self.raw, true, &self.poisoned, f)
    }

    /// The sticky error a binding of this handle reported, if any (see
    /// [`Context::sticky_error`]); [`reset`](Self::reset) clears it.
    pub fn sticky_error(&self) -> Option<CUresult> {
        self.poisoned.get()
    }

    /// Its driver, handle and sticky-error mark (see `Context::parts`).
    #[cfg(feature = "multi-gpu")]
    pub(crate) fn parts(&self) -> (&'static Driver, CUcontext, &Cell<Option<CUresult>>) {
        (self.device.driver(), self.raw, &self.poisoned)
    }

    /// Flags and whether it is active.
    pub fn state(&self) -> Result<PrimaryState, CudaError> {
        let (mut flags, mut active): (c_uint, c_int) = (0, 0);
        // SAFETY: valid out-pointers.
        check(unsafe {
            self.device.driver().table().cuDevicePrimaryCtxGetState()?(
                self.device.raw(),
                &mut flags,
                &mut active,
            )
        })?;
        Ok(PrimaryState {
            flags: CUctx_flags::from_bits_retain(flags),
            active: active != 0,
        })
    }

    /// Sets the flags it is created with (scheduling, ...).
    pub fn set_flags(&mut self, flags: CUctx_flags) -> Result<(), CudaError> {
        // SAFETY: plain values.
        check(unsafe {
            self.device.driver().table().cuDevicePrimaryCtxSetFlags()?(
                self.device.raw(),
                flags.bits(),
            )
        })
    }

    /// Destroys every allocation and resets all state of the device's primary context
    /// (`cuDevicePrimaryCtxReset`). CF19: `unsafe`, because the driver frees
    /// everything made in the context — by every handle to it, in every thread and
    /// every library of the process — and no handle can prove that nothing else uses
    /// it: [`retain`](PrimaryContext::retain) hands out any number of owners.
    ///
    /// # Safety
    /// Nothing else in the process may use the device's primary context while it is
    /// reset or afterwards through what it held: no binding of it may be active on
    /// any thread (through this or another `PrimaryContext`, this or another copy
    /// of the crate, or another library such as the CUDA runtime), and no object made
    /// under such a binding — buffers, page-locked host memory, streams, events,
    /// modules — may be alive, and no [`GreenContext`](crate::green::GreenContext) of
    /// the device (it retains the primary context, and memory made in a green
    /// binding is the primary context's). The usual way to keep this: reset only from a program
    /// that retains the primary context in one place and has dropped everything made
    /// with it.
    pub unsafe fn reset(&mut self) -> Result<(), CudaError> {
        // SAFETY: a plain value; the caller promises nothing uses the context.
        check(unsafe {
            self.device.driver().table().cuDevicePrimaryCtxReset()?(self.device.raw())
        })?;
        // A fresh primary context: the sticky error went with the old one.
        self.poisoned.set(None);
        Ok(())
    }
}

impl Drop for PrimaryContext {
    fn drop(&mut self) {
        if crate::activity::in_host_callback() {
            // The last release destroys the context, which waits for its streams: as
            // for `Context`, a leaked retain rather than a hang.
            tracing::error!(
                device = self.device.ordinal(),
                "a PrimaryContext dropped inside a host callback is not released (CUDA forbids driver calls there)"
            );
            return;
        }
        if let Ok(release) = self.device.driver().table().cuDevicePrimaryCtxRelease() {
            // SAFETY: this value holds one retain.
            let r = unsafe { release(self.device.raw()) };
            if check(r).is_err() {
                tracing::warn!(?r, "cuDevicePrimaryCtxRelease failed");
            } else {
                crate::leaks::destroyed(crate::leaks::Kind::PrimaryRetains, self.raw);
            }
        }
    }
}

impl<'ctx> CurrentContext<'ctx> {
    /// The driver's handle of the current context.
    pub fn raw(&self) -> CUcontext {
        self.raw
    }

    /// The driver.
    pub fn driver(&self) -> &'static Driver {
        self.driver
    }

    /// A second token of this binding, for a wrapper that hands it on in place of the
    /// original (`peer::Entered`); the caller leaves the original unused.
    #[cfg(feature = "multi-gpu")]
    pub(crate) fn twin(&self) -> CurrentContext<'ctx> {
        CurrentContext {
            driver: self.driver,
            raw: self.raw,
            _brand: PhantomData,
        }
    }

    /// The first sticky error reported on this thread during this binding, if any:
    /// the context is unusable from then on (every later call fails), and its handle
    /// is marked when the binding ends (see the module docs).
    pub fn sticky_error(&self) -> Option<CUresult> {
        crate::activity::sticky()
    }

    /// Checks that the driver still has this token's context current on this thread:
    /// code outside the crate (another copy of it, the CUDA runtime, another binding
    /// library) may have changed the per-thread stack during the binding.
    /// [`CudaError::ContextMismatch`] if so. Called where a wrong context would later
    /// free host memory that safe code still uses (page-locked allocation and host
    /// registration) — never on the launch path.
    pub(crate) fn ensure_current(&self) -> Result<(), CudaError> {
        match current(self.driver)? {
            c if c == self.raw => Ok(()),
            c => Err(mismatch(self.raw, c)),
        }
    }

    /// Makes `ctx` current for the duration of `f`; this context is current again
    /// afterwards. The outer token is borrowed mutably meanwhile, so its objects
    /// cannot be used (CF3). A context of another [`Driver`] is
    /// [`CudaError::ForeignDriver`]: its handle means nothing to this one.
    pub fn push<R>(
        &mut self,
        ctx: &Context,
        f: impl for<'inner> FnOnce(&mut CurrentContext<'inner>) -> R,
    ) -> Result<R, CudaError> {
        same_driver(self.driver, ctx.driver)?;
        bind_raw(self.driver, ctx.raw, false, &ctx.poisoned, f)
    }

    /// [`push`](Self::push) for a primary context.
    pub fn push_primary<R>(
        &mut self,
        ctx: &PrimaryContext,
        f: impl for<'inner> FnOnce(&mut CurrentContext<'inner>) -> R,
    ) -> Result<R, CudaError> {
        same_driver(self.driver, ctx.device.driver())?;
        bind_raw(self.driver, ctx.raw, false, &ctx.poisoned, f)
    }

    /// Lets this context access `peer`'s memory ([`CudaError::ForeignDriver`] if
    /// `peer` was made by another driver). Enabling twice is
    /// `CudaError::Driver(CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED)`.
    pub fn enable_peer_access(&self, peer: &Context) -> Result<(), CudaError> {
        same_driver(self.driver, peer.driver)?;
        // SAFETY: a live context; flags must be 0.
        check(unsafe { self.driver.table().cuCtxEnablePeerAccess()?(peer.raw, 0) })
    }

    /// Stops this context accessing `peer`'s memory
    /// (`CUDA_ERROR_PEER_ACCESS_NOT_ENABLED` if it could not). Refused with
    /// [`CudaError::PeerGroupsLive`] while a `PeerGroup` binding (the `multi-gpu`
    /// feature) is active anywhere in the process: its kernels may be reading a peer's
    /// memory through the access this would take away.
    pub fn disable_peer_access(&self, peer: &Context) -> Result<(), CudaError> {
        same_driver(self.driver, peer.driver)?;
        #[cfg(feature = "multi-gpu")]
        if crate::activity::peer_groups_live() {
            return Err(CudaError::PeerGroupsLive);
        }
        // SAFETY: a live context.
        check(unsafe { self.driver.table().cuCtxDisablePeerAccess()?(peer.raw) })
    }

    /// Waits for all work of the context.
    pub fn synchronize(&self) -> Result<(), CudaError> {
        // SAFETY: the context is current (the token proves it).
        check(unsafe { self.driver.table().cuCtxSynchronize_v2000()?() })
    }

    /// The context's device.
    pub fn device(&self) -> Result<Device, CudaError> {
        let mut d: CUdevice = 0;
        // SAFETY: a valid out-pointer.
        check(unsafe { self.driver.table().cuCtxGetDevice_v2000()?(&mut d) })?;
        // A negative ordinal is no device: refused rather than read as device 0.
        match usize::try_from(d) {
            Ok(d) => self.driver.device(d),
            Err(_) => Err(CudaError::Driver(CUresult::CUDA_ERROR_INVALID_DEVICE)),
        }
    }

    /// The context's flags.
    pub fn flags(&self) -> Result<CUctx_flags, CudaError> {
        let mut f: c_uint = 0;
        // SAFETY: a valid out-pointer.
        check(unsafe { self.driver.table().cuCtxGetFlags()?(&mut f) })?;
        Ok(CUctx_flags::from_bits_retain(f))
    }

    /// A limit (stack size, printf FIFO, malloc heap, ...).
    pub fn limit(&self, limit: CUlimit) -> Result<usize, CudaError> {
        let mut v = 0usize;
        // SAFETY: a valid out-pointer.
        check(unsafe { self.driver.table().cuCtxGetLimit()?(&mut v, limit) })?;
        Ok(v)
    }

    /// Sets a limit.
    pub fn set_limit(&mut self, limit: CUlimit, value: usize) -> Result<(), CudaError> {
        // SAFETY: plain values.
        check(unsafe { self.driver.table().cuCtxSetLimit()?(limit, value) })
    }

    /// The L1/shared-memory preference.
    pub fn cache_config(&self) -> Result<CUfunc_cache, CudaError> {
        let mut c = CUfunc_cache::default();
        // SAFETY: a valid out-pointer.
        check(unsafe { self.driver.table().cuCtxGetCacheConfig()?(&mut c) })?;
        Ok(c)
    }

    /// Sets the L1/shared-memory preference.
    pub fn set_cache_config(&mut self, config: CUfunc_cache) -> Result<(), CudaError> {
        // SAFETY: a plain value.
        check(unsafe { self.driver.table().cuCtxSetCacheConfig()?(config) })
    }

    /// (least, greatest) stream priority: numerically, greatest ≤ least.
    pub fn stream_priority_range(&self) -> Result<(i32, i32), CudaError> {
        let (mut least, mut greatest) = (0, 0);
        // SAFETY: valid out-pointers.
        check(unsafe {
            self.driver.table().cuCtxGetStreamPriorityRange()?(&mut least, &mut greatest)
        })?;
        Ok((least, greatest))
    }

    /// The context's API version (3020 for contexts of the current ABI).
    pub fn api_version(&self) -> Result<u32, CudaError> {
        let mut v: c_uint = 0;
        // SAFETY: a valid out-pointer.
        check(unsafe { self.driver.table().cuCtxGetApiVersion()?(self.raw, &mut v) })?;
        Ok(v)
    }
}

static_assertions::assert_impl_all!(Context: Send);
static_assertions::assert_not_impl_any!(Context: Sync);
static_assertions::assert_impl_all!(PrimaryContext: Send);
static_assertions::assert_not_impl_any!(PrimaryContext: Sync);
static_assertions::assert_not_impl_any!(CurrentContext<'static>: Send, Sync);
static_assertions::assert_impl_all!(Device: Send, Sync, Copy);
static_assertions::assert_impl_all!(PrimaryState: Send, Sync);

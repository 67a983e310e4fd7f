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
//! One root binding per thread is allowed at a time; a second is refused once, at
//! bind time, with [`CudaError::ContextAlreadyBound`] — the only run-time context
//! check in the crate.

use crate::device::Device;
use crate::error::{CudaError, check};
use crate::loader::Driver;
use crate::sys::{CUcontext, CUctx_flags, CUdevice, CUfunc_cache, CUlimit};
use core::cell::Cell;
use core::ffi::{c_int, c_uint};
use core::marker::PhantomData;

thread_local! {
    /// Whether a root binding is active on this thread.
    static ROOT_BOUND: Cell<bool> = const { Cell::new(false) };
}

/// The proof that a context is current on this thread, for the binding's lifetime
/// `'ctx`.
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

/// Invariant in `'ctx` (a brand made fresh by each binding), and neither `Send` nor
/// `Sync`.
type Brand<'ctx> = PhantomData<(fn(&'ctx ()) -> &'ctx (), *const ())>;

/// Pops the binding's context when the binding ends, also on unwind.
struct Unbind {
    driver: &'static Driver,
    root: bool,
}

impl Drop for Unbind {
    fn drop(&mut self) {
        let mut popped = CUcontext::NULL;
        if let Ok(pop) = self.driver.table().cuCtxPopCurrent() {
            // SAFETY: a valid out-pointer; this binding pushed the context being popped.
            let r = unsafe { pop(&mut popped) };
            if check(r).is_err() {
                tracing::warn!(?r, "cuCtxPopCurrent failed at the end of a binding");
            }
        }
        if self.root {
            ROOT_BOUND.with(|b| b.set(false));
        }
    }
}

fn bind_raw<R>(
    driver: &'static Driver,
    raw: CUcontext,
    root: bool,
    f: impl for<'ctx> FnOnce(&mut CurrentContext<'ctx>) -> R,
) -> Result<R, CudaError> {
    if root && ROOT_BOUND.with(Cell::get) {
        return Err(CudaError::ContextAlreadyBound);
    }
    // SAFETY: `raw` is a live context (its owner is borrowed for the binding).
    check(unsafe { driver.table().cuCtxPushCurrent()?(raw) })?;
    if root {
        ROOT_BOUND.with(|b| b.set(true));
    }
    let _unbind = Unbind { driver, root };
    let mut token = CurrentContext {
        driver,
        raw,
        _brand: PhantomData,
    };
    Ok(f(&mut token))
}

/// A context this program created; destroyed when dropped.
pub struct Context {
    driver: &'static Driver,
    raw: CUcontext,
    _not_sync: PhantomData<Cell<()>>,
}

// SAFETY: a CUDA context may be used from any thread, by one binding at a time; the
// handle is `!Sync` and binding borrows it, so two threads never bind it at once.
unsafe impl Send for Context {}

impl Context {
    /// Creates a context on `device` with `flags`. It is not left current: bind it.
    pub fn new(device: &Device, flags: CUctx_flags) -> Result<Context, CudaError> {
        let driver = device.driver();
        let t = driver.table();
        let mut raw = CUcontext::NULL;
        // SAFETY: a valid out-pointer; the flags are the typed set the driver defines.
        check(unsafe { t.cuCtxCreate_v3020()?(&mut raw, flags.bits(), device.raw()) })?;
        let ctx = Context {
            driver,
            raw,
            _not_sync: PhantomData,
        };
        // cuCtxCreate made it current: restore the previous context.
        let mut popped = CUcontext::NULL;
        // SAFETY: a valid out-pointer; the context just pushed is popped.
        check(unsafe { t.cuCtxPopCurrent()?(&mut popped) })?;
        Ok(ctx)
    }

    /// Takes ownership of a raw context (CF21: only `unsafe` code can make one).
    ///
    /// # Safety
    /// `raw` must be a live context created with `cuCtxCreate` of `driver`, owned by
    /// nobody else: the returned value destroys it.
    pub unsafe fn from_raw(driver: &'static Driver, raw: CUcontext) -> Context {
        Context {
            driver,
            raw,
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
    pub fn bind<R>(
        &self,
        f: impl for<'ctx> FnOnce(&mut CurrentContext<'ctx>) -> R,
    ) -> Result<R, CudaError> {
        bind_raw(self.driver, self.raw, true, f)
    }
}

impl Drop for Context {
    fn drop(&mut self) {
        if let Ok(destroy) = self.driver.table().cuCtxDestroy() {
            // SAFETY: this value owns the context; no binding borrows it any more.
            let r = unsafe { destroy(self.raw) };
            if check(r).is_err() {
                tracing::warn!(?r, "cuCtxDestroy failed");
            }
        }
    }
}

impl core::fmt::Debug for Context {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "Context({:?})", self.raw)
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

/// A retained primary context; released when dropped.
pub struct PrimaryContext {
    device: Device,
    raw: CUcontext,
    _not_sync: PhantomData<Cell<()>>,
}

// SAFETY: as for `Context`: used by one binding at a time, from any thread.
unsafe impl Send for PrimaryContext {}

impl PrimaryContext {
    /// Retains `device`'s primary context (creating it if nobody retains it).
    pub fn retain(device: &Device) -> Result<PrimaryContext, CudaError> {
        let mut raw = CUcontext::NULL;
        // SAFETY: a valid out-pointer.
        check(unsafe {
            device.driver().table().cuDevicePrimaryCtxRetain()?(&mut raw, device.raw())
        })?;
        Ok(PrimaryContext {
            device: *device,
            raw,
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
        bind_raw(self.device.driver(), self.raw, true, f)
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

    /// Destroys every allocation and resets all state of the primary context (CF19:
    /// needs exclusive ownership, so no binding of it is alive).
    pub fn reset(&mut self) -> Result<(), CudaError> {
        // SAFETY: a plain value; no binding borrows this context.
        check(unsafe { self.device.driver().table().cuDevicePrimaryCtxReset()?(self.device.raw()) })
    }
}

impl Drop for PrimaryContext {
    fn drop(&mut self) {
        if let Ok(release) = self.device.driver().table().cuDevicePrimaryCtxRelease() {
            // SAFETY: this value holds one retain.
            let r = unsafe { release(self.device.raw()) };
            if check(r).is_err() {
                tracing::warn!(?r, "cuDevicePrimaryCtxRelease failed");
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

    /// Makes `ctx` current for the duration of `f`; this context is current again
    /// afterwards. The outer token is borrowed mutably meanwhile, so its objects
    /// cannot be used (CF3).
    pub fn push<R>(
        &mut self,
        ctx: &Context,
        f: impl for<'inner> FnOnce(&mut CurrentContext<'inner>) -> R,
    ) -> Result<R, CudaError> {
        bind_raw(self.driver, ctx.raw, false, f)
    }

    /// [`push`](Self::push) for a primary context.
    pub fn push_primary<R>(
        &mut self,
        ctx: &PrimaryContext,
        f: impl for<'inner> FnOnce(&mut CurrentContext<'inner>) -> R,
    ) -> Result<R, CudaError> {
        bind_raw(self.driver, ctx.raw, false, f)
    }

    /// Lets this context access `peer`'s memory. Enabling twice is
    /// `CudaError::Driver(CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED)`.
    pub fn enable_peer_access(&self, peer: &Context) -> Result<(), CudaError> {
        // SAFETY: a live context; flags must be 0.
        check(unsafe { self.driver.table().cuCtxEnablePeerAccess()?(peer.raw, 0) })
    }

    /// Stops this context accessing `peer`'s memory
    /// (`CUDA_ERROR_PEER_ACCESS_NOT_ENABLED` if it could not).
    pub fn disable_peer_access(&self, peer: &Context) -> Result<(), CudaError> {
        // SAFETY: a live context.
        check(unsafe { self.driver.table().cuCtxDisablePeerAccess()?(peer.raw) })
    }

    /// Waits for all work of the context.
    pub fn synchronize(&self) -> Result<(), CudaError> {
        // SAFETY: the context is current (the token proves it).
        check(unsafe { self.driver.table().cuCtxSynchronize()?() })
    }

    /// The context's device.
    pub fn device(&self) -> Result<Device, CudaError> {
        let mut d: CUdevice = 0;
        // SAFETY: a valid out-pointer.
        check(unsafe { self.driver.table().cuCtxGetDevice()?(&mut d) })?;
        self.driver.device(d.max(0) as usize)
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

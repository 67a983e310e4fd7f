//! Green contexts: a context that runs its work on a partition of a device's SMs
//! (CUDA 12.4+; `cuGreenCtxCreate`, `cuCtxFromGreenCtx`, `cuGreenCtxDestroy`), so that
//! two workloads on one GPU do not take each other's SMs.
//!
//! The flow: take the device's SMs ([`Device::sm_resource`]), split them
//! ([`SmResource::split`]) into disjoint [`SmPartition`]s, make a [`GreenContext`] of
//! one or more partitions of that split, and bind it like any context
//! ([`GreenContext::bind`], or [`CurrentContext::push_green`] inside another
//! binding). The binding lends the same [`CurrentContext`] token as every other
//! context, so everything the crate does with a token works in a green context:
//! buffers, modules, streams (`cuStreamCreate` in a green context makes a stream of
//! it), launches, graphs. Launches run on the partition's SMs only; the crate's own
//! cooperative grid check uses the partition's SM count (other SM-dependent answers,
//! such as occupancy of clusters, are whatever the driver gives).
//!
//! What is checked, and where:
//!
//! - A partition cannot be split again: [`SmPartition`] has no `split` (it does not
//!   compile; the driver would refuse it). Split a green context's resource instead
//!   ([`GreenContext::sm_resource`]).
//! - A green context's partitions come from one split, each at most once, of its
//!   device: checked before the driver ([`CudaError::InvalidArgument`] naming
//!   `partitions`; [`CudaError::ForeignDriver`] for a partition of another driver's
//!   device).
//! - The handle is `Send` but not `Sync`, and binding borrows it: NVIDIA allows a
//!   green context to be current on one thread at a time.
//! - The token's context is the green context's converted handle
//!   (`cuCtxFromGreenCtx`), which lives as long as the green context; the binding
//!   borrows the `GreenContext`, so it cannot be destroyed while bound, and nothing
//!   made in the binding outlives it (CF2).
//! - Memory made in a green context belongs to the device's primary context, which
//!   the green context retains (NVIDIA: the converted context "will be treated as if
//!   it were a primary context"); the crate frees it within the binding anyway. So
//!   [`PrimaryContext::reset`](crate::PrimaryContext::reset)'s contract covers green
//!   contexts of the device: none may be alive.
//! - The drop waits for the green context's work (`cuCtxSynchronize` of its converted
//!   handle) before `cuGreenCtxDestroy`, which NVIDIA documents as detaching its
//!   streams, not as waiting for them: a host callback queued on one still runs, and
//!   no kernel outlives the resources it runs on. When the wait fails (not stickily)
//!   the green context is left alive, logged.

mod resource;

pub use resource::{SmPartition, SmResource, SmSplit, SplitFlags};

use crate::context::{CurrentContext, bind_raw, same_driver};
use crate::device::Device;
use crate::error::{CudaError, check};
use crate::sys::{
    CUcontext, CUdevResource, CUdevResourceDesc, CUdevResourceType, CUgreenCtx,
    CUgreenCtxCreate_flags, CUresult,
};
use core::cell::Cell;
use core::marker::PhantomData;

/// A green context: a context of some of a device's SMs. Destroyed when dropped —
/// except inside a host callback, where it is leaked and logged, as a
/// [`Context`](crate::Context) is.
pub struct GreenContext {
    device: Device,
    raw: CUgreenCtx,
    /// The context handle the driver converts it to (`cuCtxFromGreenCtx`): what a
    /// binding pushes. Valid as long as `raw`.
    ctx: CUcontext,
    /// The sticky error a binding of this handle saw (see [`crate::context`]).
    poisoned: Cell<Option<CUresult>>,
    _not_sync: PhantomData<Cell<()>>,
}

// SAFETY: as for `Context`: a green context may be used from any thread, by one
// binding at a time; the handle is `!Sync` and binding borrows it.
unsafe impl Send for GreenContext {}

impl core::fmt::Debug for GreenContext {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "GreenContext({:?}, {:?})", self.raw, self.ctx)
    }
}

/// Checks that `partitions` may make one green context on `device`.
fn check_partitions(device: &Device, partitions: &[SmPartition]) -> Result<(), CudaError> {
    let Some(first) = partitions.first() else {
        return Err(CudaError::InvalidArgument {
            parameter: "partitions",
            rule: "a green context needs at least one partition",
        });
    };
    let mut seen = Vec::with_capacity(partitions.len());
    for p in partitions {
        same_driver(device.driver(), p.device().driver())?;
        if p.device().raw() != device.raw() {
            return Err(CudaError::InvalidArgument {
                parameter: "partitions",
                rule: "a partition of another device",
            });
        }
        let (split, index) = p.origin();
        if split != first.origin().0 {
            return Err(CudaError::InvalidArgument {
                parameter: "partitions",
                rule: "the partitions of one green context must come from one split",
            });
        }
        if seen.contains(&index) {
            return Err(CudaError::InvalidArgument {
                parameter: "partitions",
                rule: "a partition appears twice",
            });
        }
        seen.push(index);
    }
    Ok(())
}

impl GreenContext {
    /// Makes a green context on `device` of the SMs of `partitions` — one or more
    /// partitions of one split (`cuDevResourceGenerateDesc`, then `cuGreenCtxCreate`
    /// with its own default stream). It is not left current: bind it.
    ///
    /// The driver retains the device's primary context for the green context's
    /// lifetime. [`CudaError::NotSupported`] on drivers before CUDA 12.4.
    pub fn new(device: &Device, partitions: &[SmPartition]) -> Result<GreenContext, CudaError> {
        crate::error::refuse_in_host_callback()?;
        check_partitions(device, partitions)?;
        let t = device.driver().table();
        let (generate, create, convert, destroy) = (
            t.cuDevResourceGenerateDesc()?,
            t.cuGreenCtxCreate()?,
            t.cuCtxFromGreenCtx()?,
            t.cuGreenCtxDestroy()?,
        );
        let mut resources: Vec<CUdevResource> = partitions.iter().map(|p| *p.raw()).collect();
        let count = u32::try_from(resources.len()).map_err(|_| CudaError::InvalidArgument {
            parameter: "partitions",
            rule: "too many partitions",
        })?;
        let mut desc = CUdevResourceDesc::NULL;
        // SAFETY: `resources` holds `count` resources the driver filled; a valid
        // out-pointer. The driver copies what it needs.
        check(unsafe { generate(&mut desc, resources.as_mut_ptr(), count) })?;
        let mut raw = CUgreenCtx::NULL;
        // SAFETY: a descriptor the driver just made; a valid out-pointer.
        check(unsafe {
            create(
                &mut raw,
                desc,
                device.raw(),
                CUgreenCtxCreate_flags::CU_GREEN_CTX_DEFAULT_STREAM.0,
            )
        })?;
        let mut ctx = CUcontext::NULL;
        // SAFETY: a live green context; a valid out-pointer.
        let converted = check(unsafe { convert(&mut ctx, raw) });
        if let Err(e) = converted {
            // SAFETY: the green context just made, used by nothing.
            let r = unsafe { destroy(raw) };
            if check(r).is_err() {
                tracing::warn!(?r, "cuGreenCtxDestroy failed after a failed conversion");
            }
            return Err(e);
        }
        crate::leaks::created(crate::leaks::Kind::GreenContexts, raw);
        Ok(GreenContext {
            device: *device,
            raw,
            ctx,
            poisoned: Cell::new(None),
            _not_sync: PhantomData,
        })
    }

    /// The driver's green-context handle.
    pub fn raw(&self) -> CUgreenCtx {
        self.raw
    }

    /// The context handle a binding makes current (`cuCtxFromGreenCtx`).
    pub fn raw_context(&self) -> CUcontext {
        self.ctx
    }

    /// Its device.
    pub fn device(&self) -> Device {
        self.device
    }

    /// The SMs it runs on (`cuGreenCtxGetDevResource`): a resource that may be split
    /// again, into partitions for green contexts of its own.
    pub fn sm_resource(&self) -> Result<SmResource, CudaError> {
        let mut raw = CUdevResource::default();
        // SAFETY: a live green context; a valid out-pointer.
        check(unsafe {
            self.device.driver().table().cuGreenCtxGetDevResource()?(
                self.raw,
                &mut raw,
                CUdevResourceType::CU_DEV_RESOURCE_TYPE_SM,
            )
        })?;
        Ok(SmResource::new(self.device, raw))
    }

    /// Makes the green context current on this thread for the duration of `f`, as
    /// [`Context::bind`](crate::Context::bind) does (the same token, the same rules:
    /// [`CudaError::ContextAlreadyBound`] if this thread has a root binding).
    ///
    /// ```
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// use oxicuda_driver::green::{GreenContext, SplitFlags};
    /// use oxicuda_driver::{CudaError, DriverOptions};
    ///
    /// let driver = oxicuda_driver::driver_with(DriverOptions::software())?;
    /// driver.init()?;
    /// let device = driver.best_device()?;
    /// let split = device.sm_resource()?.split(2, 8, SplitFlags::empty())?;
    /// let green = GreenContext::new(&device, &split.groups[..1])?;
    /// let sms = green.bind(|cur| -> Result<u32, CudaError> {
    ///     let buf = cur.alloc_from(&[1u32, 2, 3])?;
    ///     assert_eq!(buf.to_vec()?, [1, 2, 3]);
    ///     Ok(cur.sm_resource()?.sm_count())
    /// })??;
    /// assert_eq!(sms, split.groups[0].sm_count());
    /// # Ok(()) }
    /// ```
    pub fn bind<R>(
        &self,
        f: impl for<'ctx> FnOnce(&mut CurrentContext<'ctx>) -> R,
    ) -> Result<R, CudaError> {
        bind_raw(self.device.driver(), self.ctx, true, &self.poisoned, f)
    }

    /// The sticky error a binding of this handle reported, if any (see
    /// [`Context::sticky_error`](crate::Context::sticky_error)).
    pub fn sticky_error(&self) -> Option<CUresult> {
        self.poisoned.get()
    }
}

impl CurrentContext<'_> {
    /// [`push`](Self::push) for a green context: it is current for the duration of
    /// `f`, and this context again afterwards. [`CudaError::ForeignDriver`] for a
    /// green context of another driver.
    pub fn push_green<R>(
        &mut self,
        green: &GreenContext,
        f: impl for<'inner> FnOnce(&mut CurrentContext<'inner>) -> R,
    ) -> Result<R, CudaError> {
        same_driver(self.driver(), green.device.driver())?;
        bind_raw(self.driver(), green.ctx, false, &green.poisoned, f)
    }
}

impl Drop for GreenContext {
    fn drop(&mut self) {
        if crate::activity::in_host_callback() {
            // Destroying it waits for its streams — one of which may be running this
            // callback: a hang. A leaked green context is the lesser harm.
            tracing::error!(green = ?self.raw, "a GreenContext dropped inside a host callback is leaked, not destroyed (CUDA forbids driver calls there)");
            return;
        }
        if !crate::wait::context_settled(self.device.driver(), self.ctx) {
            // Work of its streams may still be queued: destroying it would detach them
            // with that work (and any host callback's closure) in limbo.
            tracing::error!(green = ?self.raw, "could not wait for a green context's work; leaving it alive");
            return;
        }
        if let Ok(destroy) = self.device.driver().table().cuGreenCtxDestroy() {
            // SAFETY: this value owns the green context; no binding borrows it any
            // more, everything made in a binding of it is gone with the binding, and
            // its work is done (settled above).
            let r = unsafe { destroy(self.raw) };
            if check(r).is_err() {
                tracing::warn!(?r, "cuGreenCtxDestroy failed");
            } else {
                crate::leaks::destroyed(crate::leaks::Kind::GreenContexts, self.raw);
            }
        }
    }
}

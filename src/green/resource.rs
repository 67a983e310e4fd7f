//! Streaming multiprocessors as a resource: the set a device (or a context) has
//! ([`SmResource`], `cuDeviceGetDevResource`, `cuCtxGetDevResource`), and the disjoint
//! partitions a split makes of it ([`SmPartition`], `cuDevSmResourceSplitByCount`).
//!
//! The two kinds are two types because the driver treats them differently: a
//! resource can be split, a partition cannot (NVIDIA: "the output results cannot be
//! split again without first creating a descriptor and a green context"). So
//! splitting a partition does not compile; it is split again through the green
//! context made of it ([`GreenContext::sm_resource`](super::GreenContext::sm_resource)).

use crate::context::CurrentContext;
use crate::device::Device;
use crate::error::{CudaError, check};
use crate::sys::{CUdevResource, CUdevResourceType};
use core::ffi::c_uint;
use core::sync::atomic::{AtomicU64, Ordering};

bitflags::bitflags! {
    /// How a split may place SMs (`CUdevSmResourceSplitByCount_flags`).
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
    pub struct SplitFlags: u32 {
        /// Ignore the SM co-scheduling (cluster) constraints of the architecture:
        /// groups may be smaller and more, but clusters may not fit in them.
        const IGNORE_SM_COSCHEDULING = 1;
        /// Make groups that can run the largest clusters the device allows
        /// (CUDA 12.8+).
        const MAX_POTENTIAL_CLUSTER_SIZE = 2;
    }
}

/// The streaming multiprocessors of a device or of a context: split it into
/// partitions ([`split`](Self::split)), or make a green context of all of it
/// ([`SmPartition::from`]).
#[derive(Clone)]
pub struct SmResource {
    device: Device,
    raw: CUdevResource,
}

/// A group of SMs a split made: disjoint from the other groups of its split. A
/// green context is made of one or more partitions of one split
/// ([`GreenContext::new`](super::GreenContext::new)).
#[derive(Clone)]
pub struct SmPartition {
    device: Device,
    raw: CUdevResource,
    /// Which split made it (unique in the process), and its place there: a green
    /// context takes partitions of one split, each once.
    split: u64,
    index: u32,
}

/// What [`SmResource::split`] made: the groups, and the SMs left over.
#[derive(Debug)]
pub struct SmSplit {
    /// The groups, each of at least the requested SM count (rounded up to the
    /// architecture's granularity). Possibly fewer than asked for.
    pub groups: Vec<SmPartition>,
    /// The SMs no group took; `None` when none are left.
    pub remainder: Option<SmPartition>,
}

/// A fresh id for each split (and each whole resource turned into a partition).
fn next_split() -> u64 {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    NEXT.fetch_add(1, Ordering::Relaxed)
}

/// The SM count a resource the driver filled in says it holds.
fn sm_count(raw: &CUdevResource) -> u32 {
    // SAFETY: the driver filled an SM resource, whose union member is `sm`
    // (every bit pattern of its `c_uint` is valid anyway).
    unsafe { raw.anon_0.sm.smCount }
}

impl core::fmt::Debug for SmResource {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("SmResource")
            .field("device", &self.device)
            .field("sm_count", &self.sm_count())
            .finish()
    }
}

impl core::fmt::Debug for SmPartition {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("SmPartition")
            .field("device", &self.device)
            .field("sm_count", &self.sm_count())
            .field("split", &self.split)
            .field("index", &self.index)
            .finish()
    }
}

impl Device {
    /// All of this device's SMs (`cuDeviceGetDevResource`; CUDA 12.4+, otherwise
    /// [`CudaError::NotSupported`]).
    pub fn sm_resource(&self) -> Result<SmResource, CudaError> {
        let mut raw = CUdevResource::default();
        // SAFETY: a valid out-pointer to a whole `CUdevResource`; a plain device.
        check(unsafe {
            self.driver().table().cuDeviceGetDevResource()?(
                self.raw(),
                &mut raw,
                CUdevResourceType::CU_DEV_RESOURCE_TYPE_SM,
            )
        })?;
        Ok(SmResource { device: *self, raw })
    }
}

impl CurrentContext<'_> {
    /// The SMs this context runs on (`cuCtxGetDevResource`): a green context's
    /// partition, the whole device for any other context.
    pub fn sm_resource(&self) -> Result<SmResource, CudaError> {
        let device = self.device()?;
        let mut raw = CUdevResource::default();
        // SAFETY: the token's context is live and current; a valid out-pointer.
        check(unsafe {
            self.driver().table().cuCtxGetDevResource()?(
                self.raw(),
                &mut raw,
                CUdevResourceType::CU_DEV_RESOURCE_TYPE_SM,
            )
        })?;
        Ok(SmResource { device, raw })
    }
}

impl SmResource {
    /// Wraps a resource the driver filled (a green context's query).
    pub(super) fn new(device: Device, raw: CUdevResource) -> SmResource {
        SmResource { device, raw }
    }

    /// How many SMs it holds.
    pub fn sm_count(&self) -> u32 {
        sm_count(&self.raw)
    }

    /// Its device.
    pub fn device(&self) -> Device {
        self.device
    }

    /// The driver's struct, for calls this crate does not wrap.
    pub fn raw(&self) -> &CUdevResource {
        &self.raw
    }

    /// Checks a split's arguments before the driver sees them.
    fn check_split(&self, min_sms: u32) -> Result<(), CudaError> {
        if min_sms == 0 {
            return Err(CudaError::InvalidArgument {
                parameter: "min_sms",
                rule: "a group needs at least one SM",
            });
        }
        if min_sms > self.sm_count() {
            return Err(CudaError::InvalidArgument {
                parameter: "min_sms",
                rule: "more SMs per group than the resource holds",
            });
        }
        Ok(())
    }

    /// How many groups of at least `min_sms` SMs a [`split`](Self::split) with
    /// `flags` would make (the driver's dry run).
    pub fn groups_possible(&self, min_sms: u32, flags: SplitFlags) -> Result<u32, CudaError> {
        self.check_split(min_sms)?;
        let mut groups: c_uint = 0;
        let mut remainder = CUdevResource::default();
        // SAFETY: a null result asks for the count only; the input is a resource the
        // driver filled; valid out-pointers.
        check(unsafe {
            self.device.driver().table().cuDevSmResourceSplitByCount()?(
                core::ptr::null_mut(),
                &mut groups,
                &self.raw,
                &mut remainder,
                flags.bits(),
                min_sms,
            )
        })?;
        Ok(groups)
    }

    /// Splits the SMs into at most `groups` disjoint groups of at least `min_sms`
    /// SMs each (`cuDevSmResourceSplitByCount`). The driver rounds `min_sms` up to
    /// its architecture's granularity and may make fewer groups than asked; what no
    /// group took is the remainder.
    ///
    /// Refused before the driver is called: `groups == 0` and `min_sms == 0`
    /// ([`CudaError::InvalidArgument`]), `min_sms` above [`sm_count`](Self::sm_count).
    /// `groups` above what the SMs allow (`sm_count / min_sms`) asks for that many.
    pub fn split(
        &self,
        groups: u32,
        min_sms: u32,
        flags: SplitFlags,
    ) -> Result<SmSplit, CudaError> {
        if groups == 0 {
            return Err(CudaError::InvalidArgument {
                parameter: "groups",
                rule: "a split makes at least one group",
            });
        }
        self.check_split(min_sms)?;
        // No split makes more groups than the SMs allow (`min_sms` is at most the
        // count, checked above): room for more would only be memory asked for nothing.
        let room = groups.min(self.sm_count() / min_sms).max(1);
        let len = usize::try_from(room).map_err(|_| CudaError::InvalidArgument {
            parameter: "groups",
            rule: "more groups than this platform can hold",
        })?;
        let mut result = vec![CUdevResource::default(); len];
        let mut made: c_uint = room;
        let mut remainder = CUdevResource::default();
        // SAFETY: `result` holds `made` elements, as the count says; the input is a
        // resource the driver filled; valid out-pointers.
        check(unsafe {
            self.device.driver().table().cuDevSmResourceSplitByCount()?(
                result.as_mut_ptr(),
                &mut made,
                &self.raw,
                &mut remainder,
                flags.bits(),
                min_sms,
            )
        })?;
        // The driver never reports more than it was given room for.
        result.truncate(usize::try_from(made).unwrap_or(0).min(len));
        let split = next_split();
        let device = self.device;
        let part = |(index, raw): (usize, CUdevResource)| SmPartition {
            device,
            raw,
            split,
            index: u32::try_from(index).unwrap_or(u32::MAX),
        };
        let groups: Vec<SmPartition> = result.into_iter().enumerate().map(part).collect();
        let remainder = (sm_count(&remainder) > 0).then(|| part((groups.len(), remainder)));
        Ok(SmSplit { groups, remainder })
    }
}

/// The whole resource as one partition of a split of its own: a green context of
/// every SM the resource holds.
impl From<SmResource> for SmPartition {
    fn from(r: SmResource) -> SmPartition {
        SmPartition {
            device: r.device,
            raw: r.raw,
            split: next_split(),
            index: 0,
        }
    }
}

impl SmPartition {
    /// How many SMs it holds.
    pub fn sm_count(&self) -> u32 {
        sm_count(&self.raw)
    }

    /// Its device.
    pub fn device(&self) -> Device {
        self.device
    }

    /// The driver's struct, for calls this crate does not wrap.
    pub fn raw(&self) -> &CUdevResource {
        &self.raw
    }

    /// Which split made it, and its place there.
    pub(super) fn origin(&self) -> (u64, u32) {
        (self.split, self.index)
    }
}

//! Virtual memory management: device address space reserved apart from the memory
//! behind it, so that an allocator can grow a buffer in place — reserve a large
//! range once, map physical memory into it piece by piece, never copy.
//!
//! Three objects, each tied to the token it was made under like every device buffer:
//!
//! - [`PhysicalMemory`]: memory on a device with no address (`cuMemCreate`), released
//!   when dropped (`cuMemRelease`). Its size is a multiple of the device's
//!   [`Granularity`].
//! - [`AddressRange`]: a reserved range of device addresses (`cuMemAddressReserve`)
//!   that owns what is mapped into it. [`AddressRange::map`] takes a
//!   `PhysicalMemory` *by value*, maps it at an offset (`cuMemMap`) and grants this
//!   context's device read-write access (`cuMemSetAccess`);
//!   [`AddressRange::unmap`] hands it back. Dropping the range unmaps everything,
//!   releases the memory and frees the addresses (`cuMemAddressFree`).
//! - Views: [`AddressRange::slice`] / [`slice_mut`](AddressRange::slice_mut) lend the
//!   mapped bytes as ordinary [`DeviceSlice`](crate::memory::DeviceSlice) /
//!   [`DeviceSliceMut`](crate::memory::DeviceSliceMut) — kernel arguments, copies,
//!   memsets — checked once to lie entirely in mapped memory
//!   ([`CudaError::NotMapped`]).
//!
//! What the types rule out:
//!
//! - **Unmapped while in use.** A view borrows the range; `unmap` and `map` borrow it
//!   mutably. So no view — and no graph holding one — outlives a mapping, and a
//!   mapping cannot change under a view. Kernels already queued are another matter:
//!   unlike `cuMemFree`, `cuMemUnmap` does not wait for the work that uses the memory
//!   (the device would fault on it, or reach memory mapped there later). So `unmap`
//!   and the range's drop first wait for all work of the range's context
//!   (`cuCtxSynchronize`) — the only context whose work can name the range's views,
//!   since the range is tied to its token, as long as code outside the crate keeps
//!   the rule of the trust boundary: a context it pushes is popped before the
//!   token is used again (work queued on a default stream through the token while
//!   another context is pushed goes to that context, which this wait does not
//!   cover). After a sticky error the context's work was abandoned: the drop goes
//!   ahead, and `unmap` releases the memory and returns the error.
//! - **Physical memory released while mapped.** The range owns what it maps; the
//!   memory goes back only through `unmap` (returned to the caller) or the range's
//!   drop (after the unmap).
//! - **Two views of one byte.** A `PhysicalMemory` is mapped at most once: `map`
//!   consumes it. `cuMemRetainAllocationHandle`, which would make a second owner of
//!   mapped memory, is not offered. Memory imported from a shareable handle
//!   ([`CurrentContext::import_physical`]) may be mapped elsewhere too — in this
//!   process or another — which is why importing is `unsafe`.
//! - **Bad geometry.** Sizes and offsets are checked against the granularity, the
//!   range's end and the pieces already mapped before the driver is called, and the
//!   error says which argument broke which rule.
//!
//! A failed map hands the physical memory back ([`MapError`]): nothing is lost (if
//! the driver refuses both to grant access and to undo the mapping, the range keeps
//! the memory, unusable, for `unmap` or its drop to retry). A wait that cannot be
//! made while the range is dropped (the driver refuses it for a reason other than a
//! dead context) leaves the mappings and the addresses in place — a leak, logged,
//! never an unmap under running work. Virtual memory belongs to no context, so such a
//! leak lasts until the process ends. The one way to cause it in safe code: dropping
//! a range with memory mapped while a stream capture of its context is in progress
//! (the driver refuses the wait, and invalidates the capture, as for any wait inside
//! a capture). Drop ranges outside captures.

mod physical;
mod range;

pub use physical::PhysicalMemory;
pub use range::{AddressRange, MapError};

use crate::context::CurrentContext;
use crate::error::{CudaError, check};
use crate::sys::{
    CUmemAllocationGranularity_flags, CUmemAllocationHandleType, CUmemAllocationProp,
    CUmemAllocationProp_st__allocFlags, CUmemAllocationType, CUmemLocation, CUmemLocationType,
};

/// The sizes physical memory and address ranges come in on a device
/// (`cuMemGetAllocationGranularity`): every size and offset is a multiple of
/// [`minimum`](Self::minimum); [`recommended`](Self::recommended) is the one the driver
/// prefers for speed. 2 MiB on current GPUs and on softcuda.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Granularity {
    minimum: usize,
    recommended: usize,
}

impl Granularity {
    /// The size every allocation, mapping and offset is a multiple of.
    pub fn minimum(&self) -> usize {
        self.minimum
    }

    /// The size the driver recommends allocating in.
    pub fn recommended(&self) -> usize {
        self.recommended
    }

    /// `bytes` rounded up to a multiple of the minimum, or `None` on overflow.
    pub fn round_up(&self, bytes: usize) -> Option<usize> {
        bytes.checked_next_multiple_of(self.minimum)
    }
}

/// The allocation properties of pinned device memory on `device`, shareable as
/// `handles`.
fn properties(device: i32, handles: CUmemAllocationHandleType) -> CUmemAllocationProp {
    CUmemAllocationProp {
        type_: CUmemAllocationType::CU_MEM_ALLOCATION_TYPE_PINNED,
        requestedHandleTypes: handles,
        location: CUmemLocation {
            type_: CUmemLocationType::CU_MEM_LOCATION_TYPE_DEVICE,
            id: device,
        },
        win32HandleMetaData: core::ptr::null_mut(),
        allocFlags: CUmemAllocationProp_st__allocFlags {
            compressionType: 0,
            gpuDirectRDMACapable: 0,
            usage: 0,
            reserved: [0; 4],
        },
    }
}

/// The rule every size and offset obeys.
const MULTIPLE: &str = "must be a non-zero multiple of the allocation granularity";

/// `size`, if it is a non-zero multiple of `granularity`; otherwise the typed error
/// naming `parameter`.
fn whole(size: usize, granularity: usize, parameter: &'static str) -> Result<usize, CudaError> {
    if size == 0 || granularity == 0 || !size.is_multiple_of(granularity) {
        return Err(CudaError::InvalidArgument {
            parameter,
            rule: MULTIPLE,
        });
    }
    Ok(size)
}

impl<'ctx> CurrentContext<'ctx> {
    /// The allocation granularity of this context's device for pinned device memory
    /// (`cuMemGetAllocationGranularity`, minimum and recommended).
    pub fn granularity(&self) -> Result<Granularity, CudaError> {
        let device = self.device()?.raw();
        let prop = properties(device, CUmemAllocationHandleType::CU_MEM_HANDLE_TYPE_NONE);
        let get = self.driver().table().cuMemGetAllocationGranularity()?;
        let mut out = [0usize; 2];
        for (slot, option) in out.iter_mut().zip([
            CUmemAllocationGranularity_flags::CU_MEM_ALLOC_GRANULARITY_MINIMUM,
            CUmemAllocationGranularity_flags::CU_MEM_ALLOC_GRANULARITY_RECOMMENDED,
        ]) {
            // SAFETY: a valid out-pointer and a valid properties struct.
            check(unsafe { get(slot, &prop, option) })?;
        }
        let [minimum, recommended] = out;
        if minimum == 0 || !minimum.is_power_of_two() {
            // A granularity every check divides by: refused rather than trusted.
            return Err(CudaError::Driver(
                crate::sys::CUresult::CUDA_ERROR_INVALID_VALUE,
            ));
        }
        Ok(Granularity {
            minimum,
            recommended: recommended.max(minimum),
        })
    }
}

static_assertions::assert_not_impl_any!(PhysicalMemory<'static>: Send, Sync);
static_assertions::assert_not_impl_any!(AddressRange<'static>: Send, Sync);

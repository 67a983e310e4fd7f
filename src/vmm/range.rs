//! A reserved range of device addresses and the physical memory mapped into it
//! ([`AddressRange`]: `cuMemAddressReserve`, `cuMemMap`, `cuMemSetAccess`,
//! `cuMemUnmap`, `cuMemAddressFree`), and the views it lends.

use super::{PhysicalMemory, whole};
use crate::context::{CurrentContext, Tied};
use crate::error::{CudaError, check};
use crate::loader::Driver;
use crate::memory::{DeviceCopy, DeviceSlice, DeviceSliceMut, bounds, exclusive, shared};
use crate::order::Mark;
use crate::sys::{
    CUcontext, CUdeviceptr, CUmemAccess_flags, CUmemAccessDesc, CUmemLocation, CUmemLocationType,
    CUresult,
};
use core::marker::PhantomData;
use core::ops::RangeBounds;
use std::collections::BTreeMap;

/// A range of `size` device addresses, and the physical memory mapped into it,
/// which it owns. See the [module docs](super).
pub struct AddressRange<'a> {
    driver: &'static Driver,
    /// The context it was reserved under: its work is what an unmap waits for.
    ctx: CUcontext,
    /// That context's device: the one granted access to what is mapped.
    device: i32,
    base: CUdeviceptr,
    size: usize,
    granularity: usize,
    /// What is mapped, by offset; each piece spans its memory's size. A piece is
    /// usable unless its access could be neither granted nor its mapping undone (a
    /// failed `map`): then it stays, inaccessible, for `unmap` or the drop to retry.
    pieces: BTreeMap<usize, Piece<'a>>,
    /// Work queued on a stream through its views marks it ([`crate::order`]).
    mark: Mark,
    _tied: Tied<'a>,
}

/// Physical memory mapped into a range, and whether it may be used.
struct Piece<'a> {
    physical: PhysicalMemory<'a>,
    usable: bool,
}

/// Its addresses and what is mapped; never the contents.
impl core::fmt::Debug for AddressRange<'_> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        let mapped: Vec<(usize, usize)> = self
            .pieces
            .iter()
            .map(|(o, p)| (*o, p.physical.size))
            .collect();
        f.debug_struct("AddressRange")
            .field("base", &format_args!("{:#x}", self.base))
            .field("size", &self.size)
            .field("mapped", &mapped)
            .finish()
    }
}

/// A failed [`AddressRange::map`]: why, and the physical memory, handed back unmapped.
///
/// It borrows from the token as the memory does, so `?` turns it into a
/// [`CudaError`] (releasing the memory), not into a `Box<dyn Error + 'static>`: take
/// [`error`](Self::error) for that.
#[derive(Debug, thiserror::Error)]
#[error("could not map physical memory: {error}")]
pub struct MapError<'a> {
    /// Why.
    pub error: CudaError,
    /// The memory that was to be mapped, still the caller's — `None` only when the
    /// driver refused both to grant access to it and to undo its mapping: the range
    /// then keeps it, unusable (views over it fail with [`CudaError::NotMapped`]),
    /// until [`unmap`](AddressRange::unmap) or the range's drop retries.
    pub physical: Option<PhysicalMemory<'a>>,
}

/// How a failed map left the memory.
enum Undo {
    /// Not mapped (never, or undone): the caller gets it back.
    NotMapped(CudaError),
    /// Mapped without access, and the unmap was refused: the range keeps it.
    StillMapped(CudaError),
}

/// The error alone (the memory is released): for `?` in functions returning
/// [`CudaError`].
impl From<Box<MapError<'_>>> for CudaError {
    fn from(e: Box<MapError<'_>>) -> CudaError {
        e.error
    }
}

impl<'ctx> CurrentContext<'ctx> {
    /// Reserves `size` bytes of device address space (`cuMemAddressReserve`), aligned
    /// to the granularity; `size` must be a non-zero multiple of the
    /// [`granularity`](Self::granularity) ([`CudaError::InvalidArgument`] naming
    /// `size`). Nothing is mapped: views of it fail with [`CudaError::NotMapped`]
    /// until [`AddressRange::map`] puts memory there. Reserving costs no memory, so
    /// reserve for the largest size a buffer may grow to.
    pub fn reserve_addresses(&self, size: usize) -> Result<AddressRange<'_>, CudaError> {
        let granularity = self.granularity()?.minimum();
        let size = whole(size, granularity, "size")?;
        let device = self.device()?.raw();
        let mut base: CUdeviceptr = 0;
        // SAFETY: a valid out-pointer; no address hint; flags must be 0.
        check(unsafe {
            self.driver().table().cuMemAddressReserve()?(&mut base, size, granularity, 0, 0)
        })?;
        crate::leaks::created(crate::leaks::Kind::AddressRanges, base);
        Ok(AddressRange {
            driver: self.driver(),
            ctx: self.raw(),
            device,
            base,
            size,
            granularity,
            pieces: BTreeMap::new(),
            mark: Mark::new(),
            _tied: PhantomData,
        })
    }
}

impl<'a> AddressRange<'a> {
    /// The first address of the range.
    pub fn device_ptr(&self) -> CUdeviceptr {
        self.base
    }

    /// Bytes of address space reserved.
    pub fn size(&self) -> usize {
        self.size
    }

    /// The granularity every offset and size is a multiple of.
    pub fn granularity(&self) -> usize {
        self.granularity
    }

    /// Bytes mapped without a gap from the start of the range (what a buffer growing
    /// from offset 0 may use).
    pub fn mapped_prefix(&self) -> usize {
        let mut end = 0;
        for (&offset, p) in &self.pieces {
            if offset != end || !p.usable {
                break;
            }
            end += p.physical.size;
        }
        end
    }

    /// Whether bytes `start..end` lie entirely in mapped memory.
    fn covered(&self, start: usize, end: usize) -> bool {
        if start == end {
            return true;
        }
        let mut at = start;
        // The piece holding `start` begins at or before it; the next ones follow.
        let first = self
            .pieces
            .range(..=start)
            .next_back()
            .map_or(start, |(&o, _)| o);
        for (&offset, p) in self.pieces.range(first..) {
            if offset > at || (!p.usable && offset + p.physical.size > at) {
                return false; // a gap, or memory that cannot be used
            }
            at = at.max(offset + p.physical.size);
            if at >= end {
                return true;
            }
        }
        false
    }

    /// Maps `physical` at byte `offset` of the range (`cuMemMap`) and grants this
    /// context's device read and write access to it (`cuMemSetAccess`); the range owns
    /// it from then on. Checked first: the memory is of this range's driver and device,
    /// `offset` is a multiple of the granularity, the memory fits before the range's
    /// end ([`CudaError::BytesOutOfRange`]) and overlaps nothing mapped
    /// ([`CudaError::AlreadyMapped`]). On any failure the memory comes back in the
    /// [`MapError`].
    pub fn map(
        &mut self,
        offset: usize,
        physical: PhysicalMemory<'a>,
    ) -> Result<(), Box<MapError<'a>>> {
        match self.try_map(offset, &physical) {
            Ok(()) => {
                let usable = true;
                self.pieces.insert(offset, Piece { physical, usable });
                Ok(())
            }
            Err(Undo::NotMapped(error)) => Err(Box::new(MapError {
                error,
                physical: Some(physical),
            })),
            Err(Undo::StillMapped(error)) => {
                tracing::error!(
                    %error,
                    offset,
                    "access to freshly mapped memory could not be granted nor the mapping undone; it stays in the range, unusable, until unmapped"
                );
                let usable = false;
                self.pieces.insert(offset, Piece { physical, usable });
                Err(Box::new(MapError {
                    error,
                    physical: None,
                }))
            }
        }
    }

    fn try_map(&self, offset: usize, physical: &PhysicalMemory<'a>) -> Result<(), Undo> {
        self.check_map(offset, physical).map_err(Undo::NotMapped)?;
        let t = self.driver.table();
        let (map, set_access, unmap) = match (t.cuMemMap(), t.cuMemSetAccess(), t.cuMemUnmap()) {
            (Ok(m), Ok(s), Ok(u)) => (m, s, u),
            (Err(e), _, _) | (_, Err(e), _) | (_, _, Err(e)) => return Err(Undo::NotMapped(e)),
        };
        let at = self.base + offset as u64;
        // SAFETY: `[at, at + size)` lies in this range's reservation and overlaps no
        // mapping (checked above: every mapping the range made is among its pieces);
        // a live handle of at least `size` bytes; offset into it and flags 0.
        check(unsafe { map(at, physical.size, 0, physical.handle, 0) }).map_err(Undo::NotMapped)?;
        let access = CUmemAccessDesc {
            location: CUmemLocation {
                type_: CUmemLocationType::CU_MEM_LOCATION_TYPE_DEVICE,
                id: self.device,
            },
            flags: CUmemAccess_flags::CU_MEM_ACCESS_FLAGS_PROT_READWRITE,
        };
        // SAFETY: the mapping just made; one valid descriptor.
        if let Err(e) = check(unsafe { set_access(at, physical.size, &access, 1) }) {
            // Nothing can use it yet (no access, no view): undone at once.
            // SAFETY: the mapping just made, unused.
            return match check(unsafe { unmap(at, physical.size) }) {
                Ok(()) => Err(Undo::NotMapped(e)),
                Err(_) => Err(Undo::StillMapped(e)),
            };
        }
        Ok(())
    }

    /// The checks of [`map`](Self::map) made before the driver is called.
    fn check_map(&self, offset: usize, physical: &PhysicalMemory<'a>) -> Result<(), CudaError> {
        if !core::ptr::eq(physical.driver, self.driver) {
            return Err(CudaError::ForeignDriver);
        }
        if physical.device != self.device {
            return Err(CudaError::InvalidArgument {
                parameter: "physical",
                rule: "must be memory of the range's device",
            });
        }
        if !offset.is_multiple_of(self.granularity) {
            return Err(CudaError::InvalidArgument {
                parameter: "offset",
                rule: "must be a multiple of the allocation granularity",
            });
        }
        let end = offset
            .checked_add(physical.size)
            .filter(|&e| e <= self.size)
            .ok_or(CudaError::BytesOutOfRange {
                start: offset as u64,
                end: (offset as u64).saturating_add(physical.size as u64),
                len: self.size as u64,
            })?;
        let before = self.pieces.range(..end).next_back();
        if let Some((&o, p)) = before
            && o + p.physical.size > offset
        {
            return Err(CudaError::AlreadyMapped {
                start: o,
                end: o + p.physical.size,
            });
        }
        Ok(())
    }

    /// Unmaps the memory mapped at byte `offset` (`cuMemUnmap`) and hands it back, to
    /// map again here or elsewhere, or to drop. First waits for all work of the
    /// range's context, since the driver would not: no kernel or copy queued earlier
    /// through a view can reach the addresses afterwards. [`CudaError::NotMapped`] if
    /// no piece starts at `offset`; [`CudaError::ContextMismatch`] if code outside the
    /// crate made another context current (the wait would be for the wrong work). A
    /// failed wait or unmap is returned, and the memory stays mapped.
    ///
    /// After a sticky error the context's work was abandoned: the memory is unmapped
    /// and released, and the sticky error returned. Inside a stream capture of this
    /// context the wait is illegal, as in CUDA: the driver refuses it and invalidates
    /// the capture. Unmap outside.
    pub fn unmap(&mut self, offset: usize) -> Result<PhysicalMemory<'a>, CudaError> {
        let size = match self.pieces.get(&offset) {
            Some(p) => p.physical.size,
            None => {
                return Err(CudaError::NotMapped {
                    start: offset,
                    end: offset.saturating_add(self.granularity),
                });
            }
        };
        let found = crate::context::current(self.driver)?;
        if found != self.ctx {
            return Err(CudaError::ContextMismatch {
                expected: self.ctx.0 as usize,
                found: found.0 as usize,
            });
        }
        // SAFETY: the range's context is current (checked above).
        let waited = check(unsafe { self.driver.table().cuCtxSynchronize_v2000()?() });
        if let Err(e) = &waited
            && !crate::wait::abandoned(e)
        {
            return Err(e.clone());
        }
        // SAFETY: a whole mapping of this range; no work uses it (waited above, or
        // abandoned after a sticky error) and no view of it exists (`&mut self`).
        check(unsafe { self.driver.table().cuMemUnmap()?(self.base + offset as u64, size) })?;
        if let Err(e) = waited {
            // The context is dead: the memory is unmapped and released, the error
            // reported.
            self.pieces.remove(&offset);
            return Err(e);
        }
        self.pieces
            .remove(&offset)
            .map(|p| p.physical)
            .ok_or(CudaError::NotMapped {
                start: offset,
                end: offset + size,
            })
    }

    /// The bytes `start..end`, checked to be mapped.
    fn mapped_bytes<T>(
        &self,
        range: impl RangeBounds<usize>,
    ) -> Result<(CUdeviceptr, usize), CudaError> {
        let elem = core::mem::size_of::<T>();
        let capacity = self.size.checked_div(elem).unwrap_or(0);
        let (start, end) = bounds(range, capacity)?;
        let (from, to) = (start * elem, end * elem);
        if !self.covered(from, to) {
            return Err(CudaError::NotMapped {
                start: from,
                end: to,
            });
        }
        Ok((self.base + from as u64, end - start))
    }

    /// A shared view of elements `range` of the range seen as `T`s (element `i` at
    /// byte `i * size_of::<T>()`): [`CudaError::OutOfRange`] past the reserved size,
    /// [`CudaError::NotMapped`] (in bytes) unless every byte is mapped.
    pub fn slice<T: DeviceCopy>(
        &self,
        range: impl RangeBounds<usize>,
    ) -> Result<DeviceSlice<'_, T>, CudaError> {
        let (ptr, len) = self.mapped_bytes::<T>(range)?;
        Ok(shared(self.driver, ptr, len).marked(Some(&self.mark)))
    }

    /// An exclusive view of elements `range`, as [`slice`](Self::slice).
    pub fn slice_mut<T: DeviceCopy>(
        &mut self,
        range: impl RangeBounds<usize>,
    ) -> Result<DeviceSliceMut<'_, T>, CudaError> {
        let (ptr, len) = self.mapped_bytes::<T>(range)?;
        Ok(exclusive(self.driver, ptr, len).marked(Some(&self.mark)))
    }
}

impl Drop for AddressRange<'_> {
    fn drop(&mut self) {
        if !self.pieces.is_empty() && !crate::wait::context_settled(self.driver, self.ctx) {
            // Work that may use the memory could not be waited for: unmapping now could
            // let it reach other memory mapped here later. Leave everything in place.
            tracing::error!(
                base = self.base,
                size = self.size,
                "could not wait for the work of an address range's context; leaving its mappings and addresses in place"
            );
            core::mem::forget(core::mem::take(&mut self.pieces));
            return;
        }
        let t = self.driver.table();
        let mut all_unmapped = true;
        for (offset, Piece { physical, .. }) in core::mem::take(&mut self.pieces) {
            let r = match t.cuMemUnmap() {
                // SAFETY: a whole mapping of this range; its work has finished (settled
                // above) and no view exists (the range is being dropped).
                Ok(unmap) => crate::wait::retry_relaxed(self.driver, || unsafe {
                    unmap(self.base + offset as u64, physical.size)
                }),
                Err(_) => CUresult::CUDA_ERROR_NOT_FOUND,
            };
            if check(r).is_err() {
                tracing::warn!(?r, "cuMemUnmap failed; the memory stays mapped");
                all_unmapped = false;
                core::mem::forget(physical);
            }
            // Otherwise `physical` is released here.
        }
        if !all_unmapped {
            return; // addresses still mapped are not freed
        }
        if let Ok(free) = t.cuMemAddressFree() {
            let (base, size) = (self.base, self.size);
            // SAFETY: this value owns the reservation, and nothing is mapped in it.
            let r = crate::wait::retry_relaxed(self.driver, || unsafe { free(base, size) });
            if check(r).is_err() {
                tracing::warn!(?r, "cuMemAddressFree failed");
            } else {
                crate::leaks::destroyed(crate::leaks::Kind::AddressRanges, base);
            }
        }
    }
}

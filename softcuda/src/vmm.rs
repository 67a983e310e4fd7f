//! Virtual memory management: physical allocations (`cuMemCreate`, or imported from a
//! shareable handle), reservations of device address space (`cuMemAddressReserve`),
//! and the mappings of the one into the other (`cuMemMap`, `cuMemSetAccess`,
//! `cuMemUnmap`). The C entry points are `crate::api::vmm`. Linux only: elsewhere
//! every entry point is `CUDA_ERROR_NOT_SUPPORTED` ([`SUPPORTED`]).
//!
//! - A **physical allocation** is a memory file (`memfd_create`, named
//!   `softcuda-vmm-dev<N>` for device N) of its size, sealed against shrinking and
//!   growing (so no mapping of it can ever fault on a missing page). It counts against
//!   its device's memory like `cuMemAlloc` memory, unless imported. It lives while its
//!   handle is held (`handle_refs`: `cuMemCreate`, `cuMemRetainAllocationHandle`,
//!   less `cuMemRelease`) or while it is mapped; then its file is closed.
//! - A **reservation** is an inaccessible block of softcuda's device address space
//!   (`crate::devspace::alloc_reserved`): device addresses that no allocation of any
//!   other kind can take, and that nothing reaches while unmapped.
//! - A **mapping** lays the file (from offset 0) over part of one reservation, shared
//!   (`mmap` with `MAP_SHARED | MAP_FIXED`): two mappings of one allocation alias the
//!   same bytes, as on a GPU. It is inaccessible until `cuMemSetAccess` grants some
//!   device read-write access; then its pages become readable and writable and it
//!   enters the memory map as `AllocKind::Mapped`, where kernels and copies find it —
//!   joined with the accessible mappings next to it in the same reservation (and of
//!   the same device) into one entry, a *stretch*, so that a copy or a kernel may run
//!   from one mapping into the next as on a GPU. Taking the last access away, or
//!   unmapping, first removes it from the memory map (its stretch shrinks or splits),
//!   then waits for every operation that may have checked it before
//!   (`crate::devmem::quiesce`), and only then makes the pages inaccessible (or
//!   replaces them with fresh inaccessible ones: `crate::devspace::discard`) — the
//!   order of `crate::devalloc::Removed::finish`. A stretch keeps its buffer id while
//!   its base stays, so queued work stays valid as long as its range stays mapped
//!   (`crate::devmem::Span` checks the range too).
//!
//! **Lock order.** The VMM lock ([`lock`]) is held for the whole of every VMM entry
//! point, so that no other VMM call (a `cuMemMap` of the same addresses, say) comes
//! between the bookkeeping and the page changes. It is taken before the state lock and
//! the memory map's lock, never after: nothing that holds `crate::devmem::Work`, the
//! state lock or the memory map's lock takes it. Waiting with `devmem::quiesce` while
//! holding it therefore cannot deadlock (it is never called holding the state or
//! memory-map lock).

use crate::devmem;
use crate::state::{self, Alloc, AllocKind, R, State};
use crate::types::code;
use core::ffi::c_int;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::Ordering;
use std::sync::{Mutex, MutexGuard, PoisonError};

/// Whether softcuda implements virtual memory management here (Linux: memory files).
pub(crate) const SUPPORTED: bool = cfg!(target_os = "linux");

/// The granularity of sizes, addresses and alignments: 2 MiB, as on current GPUs (the
/// minimum and the recommended one alike).
pub(crate) const GRANULARITY: u64 = 2 << 20;

/// Handles are `TAG | id`: a number that is never a small integer or a pointer.
const TAG: u64 = 0x5643 << 48;

/// A physical allocation.
#[derive(Debug)]
struct Physical {
    /// Its memory file (owned).
    fd: c_int,
    size: u64,
    device: usize,
    /// `CUmemAllocationHandleType` bits it may be exported as.
    handle_types: u32,
    /// Holders of the handle; 0: the handle is invalid (the memory lives on while
    /// mapped).
    handle_refs: u64,
    /// Mappings of it.
    mappings: u64,
    /// Imported from a shareable handle: not counted against the device's memory.
    imported: bool,
}

/// A mapping of (the start of) a physical allocation.
#[derive(Debug)]
struct Mapping {
    size: u64,
    /// The allocation's handle.
    handle: u64,
    /// Devices granted read-write access; accessible (its pages readable and
    /// writable, in a stretch of the memory map) while not empty.
    access: BTreeSet<usize>,
}

/// A stretch entered in the memory map: adjacent accessible mappings (see
/// [`Vmm::wanted`]).
#[derive(Debug, Clone, Copy)]
struct Stretch {
    /// Its buffer id in the memory map (which holds its size).
    id: u64,
    device: usize,
}

/// Every VMM object.
#[derive(Debug)]
pub(crate) struct Vmm {
    next: u64,
    /// By handle.
    physical: BTreeMap<u64, Physical>,
    /// Base → size.
    reservations: BTreeMap<u64, u64>,
    /// Base → mapping.
    mappings: BTreeMap<u64, Mapping>,
    /// Base → stretch: what the memory map holds of the mappings.
    stretches: BTreeMap<u64, Stretch>,
}

static VMM: Mutex<Vmm> = Mutex::new(Vmm {
    next: 0,
    physical: BTreeMap::new(),
    reservations: BTreeMap::new(),
    mappings: BTreeMap::new(),
    stretches: BTreeMap::new(),
});

/// The VMM objects, locked (see the module's lock order: before the state lock,
/// never while holding it).
pub(crate) fn lock() -> MutexGuard<'static, Vmm> {
    VMM.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Whether `v` is a positive multiple of the granularity.
pub(crate) fn granular(v: u64) -> bool {
    v > 0 && v.is_multiple_of(GRANULARITY)
}

/// What a physical allocation reports (`cuMemGetAllocationPropertiesFromHandle`).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Properties {
    pub(crate) device: usize,
    pub(crate) handle_types: u32,
}

impl Vmm {
    fn fresh_handle(&mut self) -> u64 {
        self.next += 1;
        TAG | self.next
    }

    /// The allocation of a valid handle (held at least once).
    fn live(&self, handle: u64) -> R<&Physical> {
        self.physical
            .get(&handle)
            .filter(|p| p.handle_refs > 0)
            .ok_or(code::INVALID_VALUE)
    }

    /// Makes a physical allocation of `size` bytes (a multiple of the granularity) on
    /// `device`, counted against its memory.
    pub(crate) fn create(
        &mut self,
        s: &mut State,
        device: usize,
        size: u64,
        handle_types: u32,
    ) -> R<u64> {
        let total = s
            .config
            .devices
            .get(device)
            .ok_or(code::INVALID_DEVICE)?
            .total_mem;
        let used = s.used.get(device).copied().unwrap_or(0);
        if used.saturating_add(size) > total {
            return Err(code::OUT_OF_MEMORY);
        }
        let limit = state::ALLOC_LIMIT.load(Ordering::Relaxed);
        if state::ALLOCATED
            .load(Ordering::Relaxed)
            .saturating_add(size)
            > limit
        {
            return Err(code::OUT_OF_MEMORY);
        }
        let fd = os::create(device, size).ok_or(code::OUT_OF_MEMORY)?;
        if let Some(u) = s.used.get_mut(device) {
            *u += size;
        }
        state::ALLOCATED.fetch_add(size, Ordering::Relaxed);
        let h = self.fresh_handle();
        self.physical.insert(
            h,
            Physical {
                fd,
                size,
                device,
                handle_types,
                handle_refs: 1,
                mappings: 0,
                imported: false,
            },
        );
        Ok(h)
    }

    /// Drops one hold on `handle` (`cuMemRelease`); the memory goes once it is
    /// neither held nor mapped. Takes the state lock: call it without holding it.
    pub(crate) fn release(&mut self, handle: u64) -> R {
        self.live(handle)?;
        if let Some(p) = self.physical.get_mut(&handle) {
            p.handle_refs -= 1;
        }
        self.reap(handle);
        Ok(())
    }

    /// Frees allocation `handle` if it is neither held nor mapped: its file closed,
    /// its memory given back to its device (unless imported). Takes the state lock.
    fn reap(&mut self, handle: u64) {
        if !self
            .physical
            .get(&handle)
            .is_some_and(|p| p.handle_refs == 0 && p.mappings == 0)
        {
            return;
        }
        if let Some(p) = self.physical.remove(&handle) {
            give_back(&p);
        }
    }

    /// The properties of a valid handle.
    pub(crate) fn properties(&self, handle: u64) -> R<Properties> {
        let p = self.live(handle)?;
        Ok(Properties {
            device: p.device,
            handle_types: p.handle_types,
        })
    }

    /// A new file descriptor (close-on-exec) for the memory of `handle`, which must
    /// have been made exportable as one.
    pub(crate) fn export_fd(&self, handle: u64) -> R<c_int> {
        let p = self.live(handle)?;
        if p.handle_types & crate::types::CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR == 0 {
            return Err(code::INVALID_VALUE);
        }
        os::dup(p.fd).ok_or(code::OUT_OF_MEMORY)
    }

    /// A new allocation (handle) for the memory behind the caller's descriptor `fd`,
    /// which must be softcuda VMM memory (exported here or by another softcuda
    /// process) of a device of `devices`. The caller keeps its descriptor.
    pub(crate) fn import_fd(&mut self, fd: c_int, devices: usize) -> R<u64> {
        let (device, size) = os::identify(fd).ok_or(code::INVALID_VALUE)?;
        if device >= devices || !granular(size) {
            return Err(code::INVALID_VALUE);
        }
        let own = os::dup(fd).ok_or(code::OUT_OF_MEMORY)?;
        let h = self.fresh_handle();
        self.physical.insert(
            h,
            Physical {
                fd: own,
                size,
                device,
                handle_types: crate::types::CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR,
                handle_refs: 1,
                mappings: 0,
                imported: true,
            },
        );
        Ok(h)
    }

    /// Reserves `size` bytes of device addresses aligned to `align` (both multiples
    /// of the granularity, `align` a power of two).
    pub(crate) fn reserve(&mut self, size: u64, align: u64) -> R<u64> {
        let base = crate::devspace::alloc_reserved(size, align).ok_or(code::OUT_OF_MEMORY)?;
        self.reservations.insert(base, size);
        Ok(base)
    }

    /// Frees the reservation `[ptr, ptr + size)` exactly; refused while anything is
    /// mapped inside it.
    pub(crate) fn free_reservation(&mut self, ptr: u64, size: u64) -> R {
        if self.reservations.get(&ptr) != Some(&size) {
            return Err(code::INVALID_VALUE);
        }
        let end = ptr + size;
        if self.mappings.range(ptr..end).next().is_some() {
            return Err(code::INVALID_VALUE);
        }
        self.reservations.remove(&ptr);
        // SAFETY: the block came from `alloc_reserved(size, _)` (the reservation's
        // record, removed once just now); nothing is mapped in it, so nothing
        // accesses it.
        unsafe { crate::devspace::free(ptr, size) };
        Ok(())
    }

    /// Maps allocation `handle` (from its start) at `[ptr, ptr + size)`, which must
    /// lie inside one reservation and overlap no mapping; inaccessible until
    /// [`set_access`](Self::set_access).
    pub(crate) fn map(&mut self, ptr: u64, size: u64, handle: u64) -> R {
        let p = self.live(handle)?;
        if !granular(size) || !ptr.is_multiple_of(GRANULARITY) || size > p.size {
            return Err(code::INVALID_VALUE);
        }
        let end = ptr.checked_add(size).ok_or(code::INVALID_VALUE)?;
        let inside = self
            .reservations
            .range(..=ptr)
            .next_back()
            .is_some_and(|(&b, &l)| end <= b + l);
        let overlaps = self
            .mappings
            .range(..end)
            .next_back()
            .is_some_and(|(&b, m)| b + m.size > ptr);
        if !inside || overlaps {
            return Err(code::INVALID_VALUE);
        }
        // SAFETY: `[ptr, end)` lies inside a reservation (checked above), whose block
        // this module owns, and no mapping covers it, so nothing accesses it; the
        // file is at least `size` bytes long and sealed against shrinking.
        if !unsafe { os::map(ptr, size, p.fd) } {
            return Err(code::OUT_OF_MEMORY);
        }
        if let Some(p) = self.physical.get_mut(&handle) {
            p.mappings += 1;
        }
        self.mappings.insert(
            ptr,
            Mapping {
                size,
                handle,
                access: BTreeSet::new(),
            },
        );
        Ok(())
    }

    /// The bases of the mappings that cover `[ptr, ptr + size)` exactly (whole and
    /// adjacent); `INVALID_VALUE` if they do not.
    fn cover(&self, ptr: u64, size: u64) -> R<Vec<u64>> {
        let end = ptr.checked_add(size).ok_or(code::INVALID_VALUE)?;
        if size == 0 {
            return Err(code::INVALID_VALUE);
        }
        let mut bases = Vec::new();
        let mut at = ptr;
        while at < end {
            let m = self.mappings.get(&at).ok_or(code::INVALID_VALUE)?;
            bases.push(at);
            at += m.size;
        }
        if at == end {
            Ok(bases)
        } else {
            Err(code::INVALID_VALUE)
        }
    }

    /// The mapping holding `addr`: its base and itself.
    fn mapping_at(&self, addr: u64) -> Option<(u64, &Mapping)> {
        self.mappings
            .range(..=addr)
            .next_back()
            .filter(|&(&b, m)| addr < b + m.size)
            .map(|(&b, m)| (b, m))
    }

    /// Grants (`true`) or takes away (`false`) read-write access for each listed
    /// device (a later entry for the same device wins) over the mappings covering
    /// `[ptr, ptr + size)` exactly. A mapping that gains its first access becomes
    /// accessible and then enters the memory map (in a stretch: [`sync_map`], new
    /// entries for context `ctx`, 0 for none); one that loses its last leaves the map
    /// and, once no operation that may have found it there still runs, becomes
    /// inaccessible.
    ///
    /// [`sync_map`]: Self::sync_map
    pub(crate) fn set_access(
        &mut self,
        ptr: u64,
        size: u64,
        changes: &[(usize, bool)],
        ctx: u64,
    ) -> R {
        let bases = self.cover(ptr, size)?;
        // (base, size, access after, accessible before)
        let mut after = Vec::new();
        for b in bases {
            let Some(m) = self.mappings.get(&b) else {
                continue;
            };
            let mut access = m.access.clone();
            for &(d, rw) in changes {
                if rw {
                    access.insert(d);
                } else {
                    access.remove(&d);
                }
            }
            after.push((b, m.size, access, !m.access.is_empty()));
        }
        // Pages that become accessible do so before anything can find them.
        let mut opened: Vec<(u64, u64)> = Vec::new();
        for (b, size, access, was) in &after {
            if *was || access.is_empty() {
                continue;
            }
            // SAFETY: the mapping's pages are this module's (inside a reservation);
            // making them accessible touches nothing else.
            if !unsafe { crate::devspace::protect(*b, *size, true) } {
                for &(b, size) in &opened {
                    // SAFETY: not in the memory map yet: nothing accesses them.
                    unsafe { crate::devspace::protect(b, size, false) };
                }
                return Err(code::OUT_OF_MEMORY);
            }
            opened.push((*b, *size));
        }
        let mut closing = Vec::new();
        for (b, size, access, was) in after {
            if was && access.is_empty() {
                closing.push((b, size));
            }
            if let Some(m) = self.mappings.get_mut(&b) {
                m.access = access;
            }
        }
        for &(b, size) in &opened {
            crate::sanitize::memcheck::reused(b, size);
            crate::sanitize::initcheck::forget(b, size);
        }
        self.sync_map(ctx);
        if closing.is_empty() {
            return Ok(());
        }
        devmem::quiesce();
        let mut result = Ok(());
        for (b, size) in closing {
            crate::sanitize::initcheck::forget(b, size);
            // SAFETY: the mapping left the memory map and every operation that may
            // have found it there has ended (above): nothing accesses it.
            if !unsafe { crate::devspace::protect(b, size, false) } {
                result = Err(code::OUT_OF_MEMORY);
            }
        }
        result
    }

    /// The reservation holding `addr`: its base.
    fn reservation_of(&self, addr: u64) -> Option<u64> {
        self.reservations
            .range(..=addr)
            .next_back()
            .filter(|&(&b, &l)| addr < b + l)
            .map(|(&b, _)| b)
    }

    /// The stretches the memory map should hold, by address: (base, size, device).
    /// A stretch is a run of adjacent accessible mappings of one reservation and one
    /// device, so that a copy or a kernel may cross from one mapping into the next,
    /// as on a GPU.
    fn wanted(&self) -> Vec<(u64, u64, usize)> {
        let mut runs: Vec<(u64, u64, usize, Option<u64>)> = Vec::new();
        for (&b, m) in &self.mappings {
            if m.access.is_empty() {
                continue;
            }
            let device = self.physical.get(&m.handle).map_or(0, |p| p.device);
            let res = self.reservation_of(b);
            match runs.last_mut() {
                Some(r) if r.0 + r.1 == b && r.2 == device && r.3 == res => r.1 += m.size,
                _ => runs.push((b, m.size, device, res)),
            }
        }
        runs.into_iter().map(|(b, l, d, _)| (b, l, d)).collect()
    }

    /// Brings the memory map in line with the accessible mappings, in one step under
    /// its lock, so that no address that stays accessible is ever missing from it. A
    /// stretch that keeps its base and device keeps its buffer id, grown or shrunk:
    /// work queued on it stays valid while the stretch still holds its range
    /// (`devmem::Span`). Other stretches leave the map and new ones enter it with
    /// fresh ids (for context `ctx`). Call it after newly accessible pages have been
    /// made accessible, and make pages no longer accessible inaccessible only after
    /// it and a `devmem::quiesce`.
    fn sync_map(&mut self, ctx: u64) {
        let wanted = self.wanted();
        let mut next = BTreeMap::new();
        let mut map = state::memory_mut();
        for (&b, st) in &self.stretches {
            let keep = wanted.iter().find(|w| w.0 == b && w.2 == st.device);
            match (keep, map.get_mut(&b).filter(|a| a.id == st.id)) {
                (Some(&(_, size, device)), Some(a)) => {
                    a.size = size;
                    next.insert(b, Stretch { id: st.id, device });
                }
                (None, Some(_)) => {
                    map.remove(&b);
                }
                _ => {}
            }
        }
        for (b, size, device) in wanted {
            if next.contains_key(&b) {
                continue;
            }
            let id = crate::devalloc::new_buffer_id();
            map.insert(
                b,
                Alloc {
                    size,
                    ctx,
                    device,
                    kind: AllocKind::Mapped,
                    id,
                    reach: state::Reach::Everywhere,
                },
            );
            next.insert(b, Stretch { id, device });
        }
        self.stretches = next;
    }

    /// Whether `device` has read-write access to the mapping holding `ptr`.
    pub(crate) fn access(&self, ptr: u64, device: usize) -> R<bool> {
        let (_, m) = self.mapping_at(ptr).ok_or(code::INVALID_VALUE)?;
        Ok(m.access.contains(&device))
    }

    /// Unmaps the mappings covering `[ptr, ptr + size)` exactly: they leave the
    /// memory map (what stays of their stretches enters it for context `ctx`), then,
    /// once no operation that may have found them there still runs, their pages are
    /// replaced by fresh inaccessible ones, and each allocation goes if neither held
    /// nor mapped any more. Takes the state lock: call it without holding it.
    pub(crate) fn unmap(&mut self, ptr: u64, size: u64, ctx: u64) -> R {
        let bases = self.cover(ptr, size)?;
        let mut accessible = false;
        for &b in &bases {
            let Some(m) = self.mappings.get_mut(&b) else {
                continue;
            };
            if !m.access.is_empty() {
                m.access.clear();
                crate::sanitize::memcheck::freed(b, m.size);
                crate::sanitize::initcheck::forget(b, m.size);
                accessible = true;
            }
        }
        if accessible {
            self.sync_map(ctx);
            devmem::quiesce();
        }
        let mut result = Ok(());
        for b in bases {
            let Some(size) = self.mappings.get(&b).map(|m| m.size) else {
                continue;
            };
            // SAFETY: the mapping is this module's, inside a reservation; it left the
            // memory map and every operation that may have found it there has ended
            // (above): nothing accesses it.
            if !unsafe { crate::devspace::discard(b, size) } {
                // Still mapped (the system refused): kept, inaccessible, for a retry.
                // SAFETY: as above.
                unsafe { crate::devspace::protect(b, size, false) };
                result = Err(code::OUT_OF_MEMORY);
                continue;
            }
            if let Some(m) = self.mappings.remove(&b) {
                if let Some(p) = self.physical.get_mut(&m.handle) {
                    p.mappings -= 1;
                }
                self.reap(m.handle);
            }
        }
        result
    }

    /// The handle of the allocation mapped at `addr`, held once more
    /// (`cuMemRetainAllocationHandle`): valid again even if it had been released.
    pub(crate) fn retain(&mut self, addr: u64) -> R<u64> {
        let (_, m) = self.mapping_at(addr).ok_or(code::INVALID_VALUE)?;
        let h = m.handle;
        let p = self.physical.get_mut(&h).ok_or(code::INVALID_VALUE)?;
        p.handle_refs += 1;
        Ok(h)
    }
}

/// Closes a freed allocation's file and gives its memory back to its device (unless
/// imported). Takes the state lock.
fn give_back(p: &Physical) {
    os::close_fd(p.fd);
    if p.imported {
        return;
    }
    let mut s = state::state();
    if let Some(u) = s.used.get_mut(p.device) {
        *u = u.saturating_sub(p.size);
    }
    drop(s);
    state::ALLOCATED.fetch_sub(
        p.size.min(state::ALLOCATED.load(Ordering::Relaxed)),
        Ordering::Relaxed,
    );
}

/// Live VMM objects: (physical allocations, reservations, mappings). Takes the VMM
/// lock: call it before the state lock.
pub(crate) fn live_counts() -> (usize, usize, usize) {
    let v = lock();
    (v.physical.len(), v.reservations.len(), v.mappings.len())
}

/// Forgets every VMM object (`control::reset`): the mappings out of the memory map,
/// then (once no operation that may have found them runs) every reservation's
/// addresses given back, every allocation's file closed and its memory given back.
/// Takes the VMM lock, then the state lock: call it holding neither.
pub(crate) fn reset() {
    let mut v = lock();
    for m in v.mappings.values_mut() {
        m.access.clear();
    }
    if !v.stretches.is_empty() {
        v.sync_map(0);
        devmem::quiesce();
    }
    v.mappings.clear();
    for (base, size) in std::mem::take(&mut v.reservations) {
        // SAFETY: the block came from `alloc_reserved(size, _)` and is given back
        // once (its record is gone); the mappings in it left the memory map and every
        // operation that may have found them has ended (above). `free` replaces all
        // its pages, mapped ones included.
        unsafe { crate::devspace::free(base, size) };
    }
    for (_, p) in std::mem::take(&mut v.physical) {
        give_back(&p);
    }
}

/// The device and size of `fd` if it is a softcuda memory file (`softcuda-vmm-dev<N>`:
/// exported by `cuMemExportToShareableHandle`, here or in another softcuda process,
/// or made by `crate::control::external_memory_fd`), sealed against shrinking and
/// open for reading and writing; `None` otherwise.
pub(crate) fn identify(fd: c_int) -> Option<(usize, u64)> {
    os::identify(fd)
}

/// A fresh softcuda memory file of device 0 (as [`identify`] recognises), of `size`
/// bytes (zero), sealed at that size; the caller owns the descriptor.
pub(crate) fn memory_file(size: u64) -> Option<c_int> {
    os::create(0, size)
}

pub(crate) use os::{create_named, named};

/// The memory files (Linux).
#[cfg(target_os = "linux")]
mod os {
    use core::ffi::{c_char, c_int, c_long, c_uint};

    unsafe extern "C" {
        fn memfd_create(name: *const c_char, flags: c_uint) -> c_int;
        fn ftruncate(fd: c_int, len: c_long) -> c_int;
        fn fcntl(fd: c_int, cmd: c_int, ...) -> c_int;
        fn close(fd: c_int) -> c_int;
        fn readlink(path: *const c_char, buf: *mut c_char, len: usize) -> isize;
        fn lseek(fd: c_int, off: c_long, whence: c_int) -> c_long;
    }

    const MFD_CLOEXEC: c_uint = 1;
    const MFD_ALLOW_SEALING: c_uint = 2;
    const F_GETFL: c_int = 3;
    const O_ACCMODE: c_int = 3;
    const O_RDWR: c_int = 2;
    const F_DUPFD_CLOEXEC: c_int = 1030;
    const F_ADD_SEALS: c_int = 1033;
    const F_GET_SEALS: c_int = 1034;
    const F_SEAL_SEAL: c_int = 1;
    const F_SEAL_SHRINK: c_int = 2;
    const F_SEAL_GROW: c_int = 4;
    const SEEK_SET: c_int = 0;
    const SEEK_CUR: c_int = 1;
    const SEEK_END: c_int = 2;

    /// What a softcuda memory file's name starts with (then the device ordinal).
    pub(super) const PREFIX: &str = "softcuda-vmm-dev";

    /// A fresh memory file of `size` bytes (zero) for device `device`, sealed at that
    /// size.
    pub(super) fn create(device: usize, size: u64) -> Option<c_int> {
        create_named(&format!("{PREFIX}{device}"), size)
    }

    /// A fresh memory file named `name`, of `size` bytes (zero), sealed at that size
    /// (against shrinking and growing), close-on-exec.
    pub(crate) fn create_named(name: &str, size: u64) -> Option<c_int> {
        let len = c_long::try_from(size).ok()?;
        let name = std::ffi::CString::new(name).ok()?;
        // SAFETY: a NUL-terminated name; the call only creates a file.
        let fd = unsafe { memfd_create(name.as_ptr(), MFD_CLOEXEC | MFD_ALLOW_SEALING) };
        if fd < 0 {
            return None;
        }
        // SAFETY: `fd` is the file just created, ours.
        let sized = unsafe { ftruncate(fd, len) } == 0
            // SAFETY: as above; sealing changes only the file's seals.
            && unsafe { fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) } == 0;
        if !sized {
            close_fd(fd);
            return None;
        }
        Some(fd)
    }

    /// A duplicate of `fd`, close-on-exec.
    pub(super) fn dup(fd: c_int) -> Option<c_int> {
        // SAFETY: duplicating a descriptor touches no memory; a bad `fd` fails.
        let d = unsafe { fcntl(fd, F_DUPFD_CLOEXEC, 0 as c_int) };
        (d >= 0).then_some(d)
    }

    /// Closes `fd`, which the caller owns and gives up.
    pub(super) fn close_fd(fd: c_int) {
        // SAFETY: closing a descriptor the caller owns touches no memory.
        unsafe { close(fd) };
    }

    /// The device and size of the softcuda memory file `fd` (sealed against
    /// shrinking); `None` if it is not one.
    pub(super) fn identify(fd: c_int) -> Option<(usize, u64)> {
        let (name, size) = named(fd)?;
        let digits = name.strip_prefix(PREFIX)?;
        if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        Some((digits.parse().ok()?, size))
    }

    /// The name and size of the memory file `fd` if it is one (`memfd_create`),
    /// sealed against shrinking (no page of a mapping of it can go missing) and open
    /// for reading and writing; `None` otherwise.
    pub(crate) fn named(fd: c_int) -> Option<(String, u64)> {
        if fd < 0 {
            return None;
        }
        let path = std::ffi::CString::new(format!("/proc/self/fd/{fd}")).ok()?;
        let mut buf = [0u8; 256];
        // SAFETY: a NUL-terminated path and a buffer of `buf.len()` bytes, ours.
        let n = unsafe { readlink(path.as_ptr(), buf.as_mut_ptr().cast(), buf.len()) };
        let n = usize::try_from(n).ok().filter(|&n| n < buf.len())?;
        let target = core::str::from_utf8(&buf[..n]).ok()?;
        let rest = target.strip_prefix("/memfd:")?;
        let name = rest.strip_suffix(" (deleted)").unwrap_or(rest);
        if name.contains(' ') {
            return None;
        }
        // SAFETY: reading a descriptor's seals and flags touches no memory.
        let (seals, flags) = unsafe { (fcntl(fd, F_GET_SEALS), fcntl(fd, F_GETFL)) };
        if seals < 0 || seals & F_SEAL_SHRINK == 0 || flags < 0 || flags & O_ACCMODE != O_RDWR {
            return None;
        }
        // The size, leaving the (shared) file offset where it was.
        // SAFETY (the three calls): moving a descriptor's offset touches no memory.
        let at = unsafe { lseek(fd, 0, SEEK_CUR) };
        let end = unsafe { lseek(fd, 0, SEEK_END) };
        if at >= 0 {
            unsafe { lseek(fd, at, SEEK_SET) };
        }
        Some((name.to_owned(), u64::try_from(end).ok()?))
    }

    /// Maps `len` bytes of `fd` at `addr`, inaccessible.
    ///
    /// # Safety
    /// As `crate::devspace::map_shared`.
    pub(super) unsafe fn map(addr: u64, len: u64, fd: c_int) -> bool {
        // SAFETY: the caller's promise, passed on.
        unsafe { crate::devspace::map_shared(addr, len, fd) }
    }
}

/// Elsewhere: no memory files, so nothing is ever made (every entry point refuses
/// first: [`SUPPORTED`]).
#[cfg(not(target_os = "linux"))]
mod os {
    use core::ffi::c_int;

    pub(super) fn create(_device: usize, _size: u64) -> Option<c_int> {
        None
    }

    pub(super) fn dup(_fd: c_int) -> Option<c_int> {
        None
    }

    pub(super) fn close_fd(_fd: c_int) {}

    pub(super) fn identify(_fd: c_int) -> Option<(usize, u64)> {
        None
    }

    pub(crate) fn create_named(_name: &str, _size: u64) -> Option<c_int> {
        None
    }

    pub(crate) fn named(_fd: c_int) -> Option<(String, u64)> {
        None
    }

    /// # Safety
    /// Never maps anything.
    pub(super) unsafe fn map(_addr: u64, _len: u64, _fd: c_int) -> bool {
        false
    }
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    #[test]
    fn memory_files_are_recognised_by_name_and_seal() {
        let fd = os::create(1, GRANULARITY).unwrap();
        assert_eq!(os::identify(fd), Some((1, GRANULARITY)));
        let d = os::dup(fd).unwrap();
        assert_eq!(os::identify(d), Some((1, GRANULARITY)));
        os::close_fd(d);
        os::close_fd(fd);
        assert_eq!(os::identify(fd), None, "a closed descriptor");
        assert_eq!(os::identify(0), None, "standard input is no memory file");
        // Reopened read-only through /proc: not writable, refused.
        let fd = os::create(0, GRANULARITY).unwrap();
        let ro = std::fs::File::open(format!("/proc/self/fd/{fd}")).unwrap();
        let ro_fd = std::os::fd::AsRawFd::as_raw_fd(&ro);
        assert_eq!(os::identify(ro_fd), None);
        drop(ro);
        assert_eq!(os::identify(fd), Some((0, GRANULARITY)));
        os::close_fd(fd);
    }
}

#[cfg(all(test, not(target_os = "linux")))]
mod unsupported {
    use crate::api::vmm::*;
    use crate::types::code;
    use core::ptr::{null, null_mut};

    #[test]
    fn every_entry_point_refuses() {
        // SAFETY (all below): each refuses before reading any argument.
        unsafe {
            let mut g = 0usize;
            let refusals = [
                cuMemGetAllocationGranularity(&mut g, null(), 0),
                cuMemCreate(null_mut(), 0, null(), 0),
                cuMemRelease(1),
                cuMemAddressReserve(null_mut(), 0, 0, 0, 0),
                cuMemAddressFree(0, 0),
                cuMemMap(0, 0, 0, 1, 0),
                cuMemSetAccess(0, 0, null(), 0),
                cuMemGetAccess(null_mut(), null(), 0),
                cuMemUnmap(0, 0),
                cuMemRetainAllocationHandle(null_mut(), null_mut()),
                cuMemGetAllocationPropertiesFromHandle(null_mut(), 1),
                cuMemExportToShareableHandle(null_mut(), 1, 1, 0),
                cuMemImportFromShareableHandle(null_mut(), null_mut(), 1),
            ];
            assert_eq!(refusals, [code::NOT_SUPPORTED; 13]);
        }
    }
}

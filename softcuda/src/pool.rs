//! Stream-ordered memory: memory pools (`cuMemPool*`, `cuDevice{Get,Set}MemPool`,
//! `cuDeviceGetDefaultMemPool`) and allocation and free ordered on a stream
//! (`cuMemAllocAsync`, `cuMemAllocFromPoolAsync`, `cuMemFreeAsync`).
//!
//! A pool owns *blocks* of memory it has reserved (counted as used device memory by
//! `cuMemGetInfo`). An allocation takes a free block (or reserves a new one) when it
//! is called — so its address is returned at once — but the block is *mapped* (entered
//! in the memory map, where kernels and copies find it) only when the stream reaches
//! the allocation. A free unmaps it when the stream reaches the free, and the block
//! goes back to the pool's free list; from then on an access is an access to unmapped
//! memory (`CUDA_ERROR_ILLEGAL_ADDRESS`, as `crate::devmem` reports it). Every
//! mapping has a fresh buffer id, so work checked against an earlier mapping of the
//! same block fails its run-time recheck. A copy or memset queued between the
//! allocation and the free is checked, when queued, against the block (see
//! `pending_span`), and again when it runs.
//!
//! Because a block returns to the free list only once its free has run, reusing it
//! never depends on the reuse policies: they are recorded and answered. Free blocks
//! above the release threshold are given back when a free runs, at `cuMemPoolTrimTo`
//! and when a pool is destroyed — deallocated only after every running operation has
//! ended (`devmem::quiesce`), as frees are.
//!
//! Allocation, free (and prefetch) on a capturing stream are refused with
//! `CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED` (the capture invalidated): softcuda does
//! not turn them into graph memory nodes. Pools live on devices (`CU_MEM_LOCATION_TYPE_DEVICE`)
//! only. A pool created with `CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR` (Linux) keeps
//! its blocks in one shared memory file (`Pool::file`, `crate::ipc::pool`), which
//! other processes import; other pools are unchanged. Access (`cuMemPoolSetAccess`) is recorded,
//! answered (and refused where the peer topology has no link) and enforced on kernel
//! accesses: a kernel on a device the pool does not serve faults
//! (`state::KernelMemory`); read-only access is treated as read-write there.
//!
//! Locks, in this order: the state lock, this table's, the memory map.

use crate::devmem::{self, Span};
use crate::state::{self, R, State};
use crate::types::*;
use core::ffi::{c_uint, c_void};
use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::Ordering;
use std::sync::{LazyLock, Mutex, MutexGuard, PoisonError};

/// A memory pool handle (`CUmemoryPool`).
pub type CUmemoryPool = *mut c_void;

/// The tag of pool handles (`tag << 48 | id`), apart from `state::Kind`'s.
pub(crate) const TAG: u64 = 0x50;

pub(crate) fn handle(id: u64) -> CUmemoryPool {
    ((TAG << 48) | id) as usize as CUmemoryPool
}

pub(crate) fn id_of(h: CUmemoryPool) -> Option<u64> {
    let v = h as usize as u64;
    (v >> 48 == TAG && v & 0xFFFF_FFFF_FFFF != 0).then_some(v & 0xFFFF_FFFF_FFFF)
}

pub(crate) const PROT_NONE: c_uint = 0;
pub(crate) const PROT_READ: c_uint = 1;
pub(crate) const PROT_READWRITE: c_uint = 3;

#[derive(Debug)]
pub(crate) struct Pool {
    pub(crate) device: usize,
    pub(crate) default: bool,
    /// `cuMemPoolDestroy` was called; it goes once no allocation is outstanding.
    pub(crate) destroyed: bool,
    pub(crate) reuse: [bool; 3],
    pub(crate) threshold: u64,
    pub(crate) max_size: u64,
    pub(crate) reserved: u64,
    pub(crate) reserved_high: u64,
    pub(crate) used: u64,
    pub(crate) used_high: u64,
    /// Free blocks: (base, size).
    pub(crate) free: Vec<(u64, u64)>,
    /// Blocks allocated and not yet given back (their free has not run).
    pub(crate) outstanding: usize,
    /// Access of each device (the owner's is always read-write).
    pub(crate) access: Vec<c_uint>,
    /// The memory file of an exportable pool (`crate::ipc::pool`): its blocks are
    /// ranges of it; `None` for other pools (blocks from `devalloc::reserve`).
    pub(crate) file: Option<std::sync::Arc<crate::ipc::pool::PoolFile>>,
}

impl Pool {
    pub(crate) fn new(device: usize, devices: usize, default: bool, max_size: u64) -> Pool {
        let mut access = vec![PROT_NONE; devices];
        if let Some(a) = access.get_mut(device) {
            *a = PROT_READWRITE;
        }
        Pool {
            device,
            default,
            destroyed: false,
            reuse: [true; 3],
            threshold: 0,
            max_size,
            reserved: 0,
            reserved_high: 0,
            used: 0,
            used_high: 0,
            free: Vec::new(),
            outstanding: 0,
            access,
            file: None,
        }
    }
}

/// An allocation from a pool, from the call until its free has run.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Block {
    pub(crate) pool: u64,
    /// The block's size (at least `len`).
    pub(crate) size: u64,
    /// The bytes asked for (the mapped range).
    pub(crate) len: u64,
    /// The buffer id of its mapping.
    pub(crate) id: u64,
    /// Whether `cuMemFreeAsync` was called for it.
    pub(crate) freeing: bool,
}

#[derive(Default)]
pub(crate) struct Pools {
    pub(crate) pools: HashMap<u64, Pool>,
    /// Each device's default pool, made on first use.
    pub(crate) defaults: HashMap<usize, u64>,
    /// Each device's current pool (its default unless set).
    pub(crate) current: HashMap<usize, u64>,
    pub(crate) blocks: BTreeMap<u64, Block>,
    pub(crate) next: u64,
}

pub(crate) static POOLS: LazyLock<Mutex<Pools>> = LazyLock::new(|| Mutex::new(Pools::default()));

pub(crate) fn pools() -> MutexGuard<'static, Pools> {
    POOLS.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The pools whose allocations kernels on `device` may access: the device's own
/// pools and those that grant it access (read-only or read-write; softcuda does not
/// tell reads from writes here). Takes the pools' lock.
pub(crate) fn open_to(device: usize) -> Vec<u64> {
    pools()
        .pools
        .iter()
        .filter(|(_, p)| {
            p.device == device || p.access.get(device).is_some_and(|a| *a != PROT_NONE)
        })
        .map(|(&id, _)| id)
        .collect()
}

impl Pools {
    pub(crate) fn default_of(&mut self, device: usize, devices: usize) -> u64 {
        if let Some(&id) = self.defaults.get(&device) {
            return id;
        }
        self.next += 1;
        let id = self.next;
        self.pools
            .insert(id, Pool::new(device, devices, true, u64::MAX));
        self.defaults.insert(device, id);
        id
    }

    pub(crate) fn current_of(&mut self, device: usize, devices: usize) -> u64 {
        match self.current.get(&device) {
            Some(&id) => id,
            None => self.default_of(device, devices),
        }
    }

    /// A live (not destroyed) pool.
    pub(crate) fn live(&mut self, h: CUmemoryPool) -> R<(u64, &mut Pool)> {
        let id = id_of(h).ok_or(code::INVALID_VALUE)?;
        self.pools
            .get_mut(&id)
            .filter(|p| !p.destroyed)
            .map(|p| (id, p))
            .ok_or(code::INVALID_VALUE)
    }
}

/// Memory to deallocate once every running operation has ended: (base, size, the
/// pool file of an exportable pool's block).
#[must_use]
#[derive(Default)]
pub(crate) struct Release(Vec<(u64, u64, Option<std::sync::Arc<crate::ipc::pool::PoolFile>>)>);

impl Release {
    pub(crate) fn finish(self) {
        if self.0.is_empty() {
            return;
        }
        devmem::quiesce();
        for (base, size, file) in self.0 {
            match file {
                // SAFETY: as below, the block from `file.reserve(size)`.
                Some(f) => unsafe { f.unreserve(base, size) },
                // SAFETY: the block came from `devalloc::reserve(size)`, left its pool's
                // free list once (so it goes back once), is not mapped (free blocks
                // never are), and every operation that could have checked an earlier
                // mapping has ended.
                None => unsafe { crate::devalloc::unreserve(base, size) },
            }
        }
    }
}

/// Gives back free blocks of pool `p` while it holds more than `keep` bytes.
pub(crate) fn shrink(s: &mut State, p: &mut Pool, keep: u64, out: &mut Release) {
    while p.reserved > keep {
        let Some((base, size)) = p.free.pop() else {
            break;
        };
        p.reserved -= size;
        if let Some(u) = s.used.get_mut(p.device) {
            *u = u.saturating_sub(size);
        }
        let a = state::ALLOCATED.load(Ordering::Relaxed);
        state::ALLOCATED.fetch_sub(size.min(a), Ordering::Relaxed);
        out.0.push((base, size, p.file.clone()));
    }
}

/// Whether `base` is memory of a pool (allocated and not yet given back).
pub(crate) fn owns(base: u64) -> bool {
    pools().blocks.contains_key(&base)
}

/// The span of `[addr, addr + len)` inside an allocation not yet given back: for
/// the checks of copies and memsets queued before the stream maps it (alive, when the
/// work runs, only while mapped).
pub(crate) fn pending_span(addr: u64, len: u64) -> Option<Span> {
    let p = pools();
    let (&base, b) = p.blocks.range(..=addr).next_back()?;
    let end = addr.checked_add(len)?;
    (end <= base + b.len).then(|| devmem::span(base, b.id, end))
}

/// Created pools alive (default pools are not counted: they are never destroyed).
pub(crate) fn live_count() -> usize {
    pools()
        .pools
        .values()
        .filter(|p| !p.default && !p.destroyed)
        .count()
}

/// Forgets every pool and gives back all their memory (`control::reset`, after the
/// streams are drained and the contexts destroyed).
pub(crate) fn reset() {
    let mut release = Release::default();
    {
        let mut s = state::state();
        let mut p = pools();
        let blocks = core::mem::take(&mut p.blocks);
        {
            let mut map = state::memory_mut();
            for (base, b) in &blocks {
                if map.get(base).is_some_and(|a| a.id == b.id) {
                    map.remove(base);
                }
            }
        }
        for (base, b) in blocks {
            if let Some(pool) = p.pools.get_mut(&b.pool) {
                pool.free.push((base, b.size));
            }
        }
        for (_, mut pool) in core::mem::take(&mut p.pools) {
            shrink(&mut s, &mut pool, 0, &mut release);
        }
        *p = Pools::default();
    }
    release.finish();
}

/// Takes a block of `size` bytes from pool `pid` for context `ctx` (checked now).
pub(crate) fn take(s: &mut State, p: &mut Pools, pid: u64, size: u64) -> R<(u64, Block)> {
    let pool = p.pools.get_mut(&pid).ok_or(code::INVALID_VALUE)?;
    let id = crate::devalloc::new_buffer_id();
    let reuse = pool
        .free
        .iter()
        .position(|&(_, b)| b >= size && b / 2 <= size);
    let (base, bsize) = match reuse {
        Some(i) => pool.free.swap_remove(i),
        None => {
            let device = pool.device;
            let total = s.config.devices.get(device).map_or(0, |d| d.total_mem);
            let used = s.used.get(device).copied().unwrap_or(u64::MAX);
            let limit = state::ALLOC_LIMIT.load(Ordering::Relaxed);
            if used.saturating_add(size) > total
                || pool.reserved.saturating_add(size) > pool.max_size
                || state::ALLOCATED
                    .load(Ordering::Relaxed)
                    .saturating_add(size)
                    > limit
            {
                return Err(code::OUT_OF_MEMORY);
            }
            let base = match &pool.file {
                Some(f) => f.reserve(size)?,
                None => crate::devalloc::reserve(size)?,
            };
            if let Some(u) = s.used.get_mut(device) {
                *u += size;
            }
            state::ALLOCATED.fetch_add(size, Ordering::Relaxed);
            pool.reserved += size;
            pool.reserved_high = pool.reserved_high.max(pool.reserved);
            (base, size)
        }
    };
    pool.used += bsize;
    pool.used_high = pool.used_high.max(pool.used);
    pool.outstanding += 1;
    let b = Block {
        pool: pid,
        size: bsize,
        len: size,
        id,
        freeing: false,
    };
    p.blocks.insert(base, b);
    Ok((base, b))
}

/// Unmaps the allocation at `base` and gives its block back to its pool (the work of
/// a free, when the stream reaches it).
pub(crate) fn give_back(base: u64) {
    let mut release = Release::default();
    {
        let mut s = state::state();
        let mut p = pools();
        let Some(b) = p.blocks.remove(&base) else {
            return;
        };
        {
            let mut map = state::memory_mut();
            if map.get(&base).is_some_and(|a| a.id == b.id) {
                map.remove(&base);
            }
        }
        let mut gone = false;
        if let Some(pool) = p.pools.get_mut(&b.pool) {
            pool.used = pool.used.saturating_sub(b.size);
            pool.outstanding = pool.outstanding.saturating_sub(1);
            pool.free.push((base, b.size));
            let keep = if pool.destroyed { 0 } else { pool.threshold };
            shrink(&mut s, pool, keep, &mut release);
            gone = pool.destroyed && pool.outstanding == 0;
        }
        if gone {
            p.pools.remove(&b.pool);
        }
    }
    release.finish();
}

/// `cuMemFree` of pool memory: the caller has drained the context's work.
pub(crate) fn free_now(base: u64) -> R {
    {
        let mut p = pools();
        let b = p.blocks.get_mut(&base).ok_or(code::INVALID_VALUE)?;
        if b.freeing {
            return Err(code::INVALID_VALUE);
        }
        b.freeing = true;
    }
    give_back(base);
    Ok(())
}

/// The pool handle of the pool allocation holding `base` (`CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE`).
pub(crate) fn pool_of(base: u64) -> Option<CUmemoryPool> {
    pools().blocks.get(&base).map(|b| handle(b.pool))
}

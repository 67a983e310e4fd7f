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
//! only, with no shareable handle types. Access (`cuMemPoolSetAccess`) is recorded,
//! answered (and refused where the peer topology has no link) and enforced on kernel
//! accesses: a kernel on a device the pool does not serve faults
//! (`state::KernelMemory`); read-only access is treated as read-write there.
//!
//! Locks, in this order: the state lock, this table's, the memory map.

use super::out;
use crate::devmem::{self, Span};
use crate::state::{self, Alloc, AllocKind, R, State};
use crate::stream::{self, Work};
use crate::types::*;
use core::ffi::{c_int, c_uint, c_void};
use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::Ordering;
use std::sync::{LazyLock, Mutex, MutexGuard, PoisonError};

/// A memory pool handle (`CUmemoryPool`).
pub type CUmemoryPool = *mut c_void;

/// The tag of pool handles (`tag << 48 | id`), apart from `state::Kind`'s.
const TAG: u64 = 0x50;

fn handle(id: u64) -> CUmemoryPool {
    ((TAG << 48) | id) as usize as CUmemoryPool
}

fn id_of(h: CUmemoryPool) -> Option<u64> {
    let v = h as usize as u64;
    (v >> 48 == TAG && v & 0xFFFF_FFFF_FFFF != 0).then_some(v & 0xFFFF_FFFF_FFFF)
}

const PROT_NONE: c_uint = 0;
const PROT_READ: c_uint = 1;
const PROT_READWRITE: c_uint = 3;

#[derive(Debug)]
struct Pool {
    device: usize,
    default: bool,
    /// `cuMemPoolDestroy` was called; it goes once no allocation is outstanding.
    destroyed: bool,
    reuse: [bool; 3],
    threshold: u64,
    max_size: u64,
    reserved: u64,
    reserved_high: u64,
    used: u64,
    used_high: u64,
    /// Free blocks: (base, size).
    free: Vec<(u64, u64)>,
    /// Blocks allocated and not yet given back (their free has not run).
    outstanding: usize,
    /// Access of each device (the owner's is always read-write).
    access: Vec<c_uint>,
}

impl Pool {
    fn new(device: usize, devices: usize, default: bool, max_size: u64) -> Pool {
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
        }
    }
}

/// An allocation from a pool, from the call until its free has run.
#[derive(Debug, Clone, Copy)]
struct Block {
    pool: u64,
    /// The block's size (at least `len`).
    size: u64,
    /// The bytes asked for (the mapped range).
    len: u64,
    /// The buffer id of its mapping.
    id: u64,
    /// Whether `cuMemFreeAsync` was called for it.
    freeing: bool,
}

#[derive(Default)]
struct Pools {
    pools: HashMap<u64, Pool>,
    /// Each device's default pool, made on first use.
    defaults: HashMap<usize, u64>,
    /// Each device's current pool (its default unless set).
    current: HashMap<usize, u64>,
    blocks: BTreeMap<u64, Block>,
    next: u64,
}

static POOLS: LazyLock<Mutex<Pools>> = LazyLock::new(|| Mutex::new(Pools::default()));

fn pools() -> MutexGuard<'static, Pools> {
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
    fn default_of(&mut self, device: usize, devices: usize) -> u64 {
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

    fn current_of(&mut self, device: usize, devices: usize) -> u64 {
        match self.current.get(&device) {
            Some(&id) => id,
            None => self.default_of(device, devices),
        }
    }

    /// A live (not destroyed) pool.
    fn live(&mut self, h: CUmemoryPool) -> R<(u64, &mut Pool)> {
        let id = id_of(h).ok_or(code::INVALID_VALUE)?;
        self.pools
            .get_mut(&id)
            .filter(|p| !p.destroyed)
            .map(|p| (id, p))
            .ok_or(code::INVALID_VALUE)
    }
}

/// Memory to deallocate once every running operation has ended.
#[must_use]
#[derive(Default)]
struct Release(Vec<(u64, u64)>);

impl Release {
    fn finish(self) {
        if self.0.is_empty() {
            return;
        }
        devmem::quiesce();
        for (base, size) in self.0 {
            // SAFETY: the block came from `memory::reserve(size)`, left its pool's free
            // list once (so it goes back once), is not mapped (free blocks never are),
            // and every operation that could have checked an earlier mapping has ended.
            unsafe { super::memory::unreserve(base, size) };
        }
    }
}

/// Gives back free blocks of pool `p` while it holds more than `keep` bytes.
fn shrink(s: &mut State, p: &mut Pool, keep: u64, out: &mut Release) {
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
        out.0.push((base, size));
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
    (end <= base + b.len).then(|| devmem::span(base, b.id))
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
fn take(s: &mut State, p: &mut Pools, pid: u64, size: u64) -> R<(u64, Block)> {
    let pool = p.pools.get_mut(&pid).ok_or(code::INVALID_VALUE)?;
    let id = super::memory::new_buffer_id();
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
            let base = super::memory::reserve(size)?;
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

/// Allocates `size` bytes from pool `pool` (the current pool of the context's device
/// if `None`), mapped when `stream` reaches the allocation.
fn alloc_async(dptr: *mut CUdeviceptr, size: usize, pool: Option<CUmemoryPool>, h: CUstream) -> R {
    if dptr.is_null() || size == 0 {
        return Err(code::INVALID_VALUE);
    }
    let ctx = state::current_ctx(&state::state())?;
    let target = stream::target(ctx, h)?;
    crate::graph::capture::refuse_on(h)?;
    let (base, b, device) = {
        let mut s = state::state();
        let device = s.context(ctx)?.device;
        let devices = s.config.devices.len();
        let mut p = pools();
        let pid = match pool {
            Some(h) => {
                let (pid, pool) = p.live(h)?;
                if pool.device != device && pool.access.get(device).copied() != Some(PROT_READWRITE)
                {
                    return Err(code::INVALID_VALUE);
                }
                pid
            }
            None => p.current_of(device, devices),
        };
        let pool_device = p.pools.get(&pid).map_or(device, |p| p.device);
        let (base, b) = take(&mut s, &mut p, pid, size as u64)?;
        (base, b, pool_device)
    };
    out(dptr, base)?;
    let map = Box::new(move || {
        // Only if not given back meanwhile (a free on another stream, unordered, may
        // have run first): the pools' lock is held while mapping, as while unmapping.
        let p = pools();
        if p.blocks.get(&base).is_some_and(|x| x.id == b.id) {
            state::memory_mut().insert(
                base,
                Alloc {
                    size: b.len,
                    ctx,
                    device,
                    kind: AllocKind::Device,
                    id: b.id,
                    reach: state::Reach::Pool(b.pool),
                },
            );
        }
        Ok(())
    });
    target.run(Work::Op(map))
}

/// Unmaps the allocation at `base` and gives its block back to its pool (the work of
/// a free, when the stream reaches it).
fn give_back(base: u64) {
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

/// `cuMemAllocAsync`: from the current pool of the context's device.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuMemAllocAsync(
    dptr: *mut CUdeviceptr,
    size: usize,
    stream: CUstream,
) -> CUresult {
    api!("cuMemAllocAsync", { alloc_async(dptr, size, None, stream) })
}

/// `cuMemAllocFromPoolAsync`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuMemAllocFromPoolAsync(
    dptr: *mut CUdeviceptr,
    size: usize,
    pool: CUmemoryPool,
    stream: CUstream,
) -> CUresult {
    api!("cuMemAllocFromPoolAsync", {
        alloc_async(dptr, size, Some(pool), stream)
    })
}

/// `cuMemFreeAsync`: `ptr` must be the address of a pool allocation not yet freed.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuMemFreeAsync(ptr: CUdeviceptr, stream: CUstream) -> CUresult {
    api!("cuMemFreeAsync", {
        let ctx = state::current_ctx(&state::state())?;
        let target = stream::target(ctx, stream)?;
        crate::graph::capture::refuse_on(stream)?;
        {
            let mut p = pools();
            let b = p.blocks.get_mut(&ptr).ok_or(code::INVALID_VALUE)?;
            if b.freeing {
                return Err(code::INVALID_VALUE);
            }
            b.freeing = true;
        }
        target.run(Work::Op(Box::new(move || {
            give_back(ptr);
            Ok(())
        })))
    })
}

/// A device ordinal, or `INVALID_DEVICE`.
fn device_index(s: &State, dev: CUdevice) -> R<usize> {
    usize::try_from(dev)
        .ok()
        .filter(|&d| d < s.config.devices.len())
        .ok_or(code::INVALID_DEVICE)
}

/// `cuDeviceGetDefaultMemPool`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuDeviceGetDefaultMemPool(
    pool: *mut CUmemoryPool,
    dev: CUdevice,
) -> CUresult {
    api!("cuDeviceGetDefaultMemPool", {
        let s = state::state();
        state::require_init(&s)?;
        let d = device_index(&s, dev)?;
        let id = pools().default_of(d, s.config.devices.len());
        out(pool, handle(id))
    })
}

/// `cuDeviceGetMemPool`: the device's current pool.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuDeviceGetMemPool(pool: *mut CUmemoryPool, dev: CUdevice) -> CUresult {
    api!("cuDeviceGetMemPool", {
        let s = state::state();
        state::require_init(&s)?;
        let d = device_index(&s, dev)?;
        let id = pools().current_of(d, s.config.devices.len());
        out(pool, handle(id))
    })
}

/// `cuDeviceSetMemPool`: a pool located on `dev`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuDeviceSetMemPool(dev: CUdevice, pool: CUmemoryPool) -> CUresult {
    api!("cuDeviceSetMemPool", {
        let s = state::state();
        state::require_init(&s)?;
        let d = device_index(&s, dev)?;
        let mut p = pools();
        let (id, pool) = p.live(pool)?;
        if pool.device != d {
            return Err(code::INVALID_DEVICE);
        }
        p.current.insert(d, id);
        Ok(())
    })
}

/// `cuMemPoolCreate`: pinned device memory, no shareable handle types.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuMemPoolCreate(
    pool: *mut CUmemoryPool,
    props: *const CUmemPoolProps,
) -> CUresult {
    api!("cuMemPoolCreate", {
        if pool.is_null() || props.is_null() {
            return Err(code::INVALID_VALUE);
        }
        // SAFETY: a valid `CUmemPoolProps`, by the C contract.
        let props = unsafe { *props };
        let s = state::state();
        state::require_init(&s)?;
        if props.allocType != CU_MEM_ALLOCATION_TYPE_PINNED {
            return Err(code::INVALID_VALUE);
        }
        if props.location.type_ != CU_MEM_LOCATION_TYPE_DEVICE
            || props.handleTypes != CU_MEM_HANDLE_TYPE_NONE
        {
            return Err(code::NOT_SUPPORTED);
        }
        let d = device_index(&s, props.location.id)?;
        let max = match props.maxSize {
            0 => u64::MAX,
            m => m as u64,
        };
        let mut p = pools();
        p.next += 1;
        let id = p.next;
        p.pools
            .insert(id, Pool::new(d, s.config.devices.len(), false, max));
        out(pool, handle(id))
    })
}

/// `cuMemPoolDestroy`: a created pool. Outstanding allocations stay valid; the pool
/// goes once they are freed. A pool that was a device's current one is replaced by
/// the device's default pool.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuMemPoolDestroy(pool: CUmemoryPool) -> CUresult {
    api!("cuMemPoolDestroy", {
        let mut release = Release::default();
        {
            let mut s = state::state();
            state::require_init(&s)?;
            let mut p = pools();
            let (id, pl) = p.live(pool)?;
            if pl.default {
                return Err(code::INVALID_VALUE);
            }
            pl.destroyed = true;
            shrink(&mut s, pl, 0, &mut release);
            let gone = pl.outstanding == 0;
            p.current.retain(|_, c| *c != id);
            if gone {
                p.pools.remove(&id);
            }
        }
        release.finish();
        Ok(())
    })
}

/// `cuMemPoolTrimTo`: gives back free blocks until at most `keep` bytes are reserved
/// (or only blocks in use remain).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuMemPoolTrimTo(pool: CUmemoryPool, keep: usize) -> CUresult {
    api!("cuMemPoolTrimTo", {
        let mut release = Release::default();
        {
            let mut s = state::state();
            state::require_init(&s)?;
            let mut p = pools();
            let (_, pl) = p.live(pool)?;
            shrink(&mut s, pl, keep as u64, &mut release);
        }
        release.finish();
        Ok(())
    })
}

/// `cuMemPoolSetAttribute`: the reuse policies (`int`), the release threshold
/// (`cuuint64_t`), and the high watermarks (`cuuint64_t`, reset to zero only).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuMemPoolSetAttribute(
    pool: CUmemoryPool,
    attr: c_uint,
    value: *mut c_void,
) -> CUresult {
    api!("cuMemPoolSetAttribute", {
        if value.is_null() {
            return Err(code::INVALID_VALUE);
        }
        let mut p = pools();
        let (_, pl) = p.live(pool)?;
        match attr {
            1..=3 => {
                // SAFETY: an `int`, by the C contract for these attributes.
                let v = unsafe { *value.cast::<c_int>() };
                pl.reuse[attr as usize - 1] = v != 0;
            }
            // SAFETY (below): a `cuuint64_t`, by the C contract.
            4 => pl.threshold = unsafe { *value.cast::<u64>() },
            6 | 8 => {
                // SAFETY: as above.
                if unsafe { *value.cast::<u64>() } != 0 {
                    return Err(code::INVALID_VALUE);
                }
                if attr == 6 {
                    pl.reserved_high = 0;
                } else {
                    pl.used_high = 0;
                }
            }
            _ => return Err(code::INVALID_VALUE),
        }
        Ok(())
    })
}

/// `cuMemPoolGetAttribute`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuMemPoolGetAttribute(
    pool: CUmemoryPool,
    attr: c_uint,
    value: *mut c_void,
) -> CUresult {
    api!("cuMemPoolGetAttribute", {
        let mut p = pools();
        let (_, pl) = p.live(pool)?;
        match attr {
            1..=3 => out(value.cast::<c_int>(), pl.reuse[attr as usize - 1] as c_int),
            4 => out(value.cast::<u64>(), pl.threshold),
            5 => out(value.cast::<u64>(), pl.reserved),
            6 => out(value.cast::<u64>(), pl.reserved_high),
            7 => out(value.cast::<u64>(), pl.used),
            8 => out(value.cast::<u64>(), pl.used_high),
            _ => Err(code::INVALID_VALUE),
        }
    })
}

/// `cuMemPoolSetAccess`: for each descriptor, a device and `PROT_NONE`, `PROT_READ`
/// or `PROT_READWRITE`; the owner's access cannot change, and a peer needs a link
/// to the owner in the peer topology (`INVALID_DEVICE`). Nothing changes unless every
/// descriptor is valid.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuMemPoolSetAccess(
    pool: CUmemoryPool,
    map: *const CUmemAccessDesc,
    count: usize,
) -> CUresult {
    api!("cuMemPoolSetAccess", {
        if map.is_null() && count > 0 {
            return Err(code::INVALID_VALUE);
        }
        let s = state::state();
        state::require_init(&s)?;
        let descs: Vec<CUmemAccessDesc> = (0..count)
            // SAFETY: `count` descriptors, by the C contract.
            .map(|i| unsafe { *map.add(i) })
            .collect();
        let mut p = pools();
        let (_, pl) = p.live(pool)?;
        let mut changes = Vec::new();
        for d in descs {
            if d.location.type_ != CU_MEM_LOCATION_TYPE_DEVICE
                || !matches!(d.flags, PROT_NONE | PROT_READ | PROT_READWRITE)
            {
                return Err(code::INVALID_VALUE);
            }
            let dev = device_index(&s, d.location.id)?;
            if dev == pl.device {
                if d.flags != PROT_READWRITE {
                    return Err(code::INVALID_VALUE);
                }
                continue;
            }
            if d.flags != PROT_NONE && !s.config.peer(dev, pl.device) {
                return Err(code::INVALID_DEVICE);
            }
            changes.push((dev, d.flags));
        }
        for (dev, f) in changes {
            if let Some(a) = pl.access.get_mut(dev) {
                *a = f;
            }
        }
        Ok(())
    })
}

/// `cuMemPoolGetAccess`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuMemPoolGetAccess(
    flags: *mut c_uint,
    pool: CUmemoryPool,
    location: *mut CUmemLocation,
) -> CUresult {
    api!("cuMemPoolGetAccess", {
        if location.is_null() {
            return Err(code::INVALID_VALUE);
        }
        // SAFETY: a valid `CUmemLocation`, by the C contract.
        let loc = unsafe { *location };
        let s = state::state();
        state::require_init(&s)?;
        if loc.type_ != CU_MEM_LOCATION_TYPE_DEVICE {
            return Err(code::INVALID_VALUE);
        }
        let dev = device_index(&s, loc.id)?;
        let mut p = pools();
        let (_, pl) = p.live(pool)?;
        out(flags, pl.access.get(dev).copied().unwrap_or(PROT_NONE))
    })
}

/// The pool handle of the pool allocation holding `base` (`CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE`).
pub(crate) fn pool_of(base: u64) -> Option<CUmemoryPool> {
    pools().blocks.get(&base).map(|b| handle(b.pool))
}

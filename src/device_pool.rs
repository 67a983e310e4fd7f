//! A pool of devices, one context each, shared by many threads: binding a device's
//! context, choosing a device (round robin, or the one with most free memory), and
//! splitting a batch across every device.
//!
//! # Why a mutex per device
//!
//! A [`PrimaryContext`] or [`Context`] is `Send` but not `Sync`: one binding at a
//! time may use it. The pool keeps each behind its own [`Mutex`], so the pool itself
//! is `Sync` (share it by reference with `std::thread::scope` threads, or in an
//! `Arc`): [`DevicePool::bind`] locks device *i*'s context for the binding, binds it
//! on the calling thread, and unlocks when the closure returns — the context migrates
//! between threads, one at a time. Different devices are used concurrently. The
//! rules of [`crate::context`] still hold inside: a thread that already has a root
//! binding gets [`CudaError::ContextAlreadyBound`].
//!
//! A panic inside a binding poisons that device's mutex; the pool recovers the lock
//! (the binding itself was ended cleanly by the unwinding) and goes on: the context's
//! own sticky-error mark, not the mutex's poison flag, says whether it is usable.
//!
//! # Deadlock freedom
//!
//! A thread holds at most one pool lock at a time, except in
//! [`DevicePool::with_all`], which takes every lock in pool order (the order of
//! [`DevicePool::devices`]). A thread that holds a pool lock — inside a pool binding
//! or inside `with_all`, of this or any other pool — cannot take another: `bind`,
//! `bind_best`, `bind_next`, `with_all` and `distribute` refuse there with
//! [`CudaError::ContextAlreadyBound`] instead of waiting, so no two threads can wait
//! for each other's devices. [`DevicePool::best_available`] never waits for a lock.
//! Refusals that would only come after the wait are made before it: inside a host
//! callback (its stream's owner may hold the lock and synchronise) `bind`,
//! `with_all` and `distribute` are [`CudaError::InHostCallback`], and on a thread
//! with a root binding `bind` and `with_all` are [`CudaError::ContextAlreadyBound`].
//!
//! The marks are per thread: code holding a pool lock must not wait for another
//! thread that uses the same device (a scoped thread, a channel, a
//! [`PeerGroup::enter`](crate::peer::PeerGroup::enter) waiting out a capture in the
//! same context): that is a deadlock the pool cannot see.
//!
//! # Primary contexts by default
//!
//! [`DevicePool::new`] and [`DevicePool::with_devices`] retain each device's primary
//! context: the context the CUDA runtime and most libraries use, so memory and
//! modules are shared with them, and retaining an already active one costs nothing.
//! [`DevicePool::with_created_contexts`] makes contexts of the pool's own instead
//! (with chosen flags, isolated from other libraries).

use crate::context::{Context, CurrentContext, PrimaryContext};
use crate::device::Device;
use crate::error::CudaError;
use crate::loader::Driver;
use crate::sys::{CUcontext, CUctx_flags, CUresult};
use std::cell::Cell;
use std::sync::atomic::{AtomicU32, AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard, PoisonError, TryLockError};

thread_local! {
    /// Whether this thread holds a lock of a device pool (any pool).
    static HELD: Cell<bool> = const { Cell::new(false) };
}

/// A device's context in a [`DevicePool`]: its retained primary context, or a
/// context the pool created.
pub enum PoolContext {
    /// The device's primary context, retained by the pool.
    Primary(PrimaryContext),
    /// A context the pool created ([`DevicePool::with_created_contexts`]).
    Created(Context),
}

impl PoolContext {
    /// The driver's handle.
    pub fn raw(&self) -> CUcontext {
        match self {
            PoolContext::Primary(c) => c.raw(),
            PoolContext::Created(c) => c.raw(),
        }
    }

    /// The sticky error a binding of this context reported, if any (see
    /// [`Context::sticky_error`]).
    pub fn sticky_error(&self) -> Option<CUresult> {
        match self {
            PoolContext::Primary(c) => c.sticky_error(),
            PoolContext::Created(c) => c.sticky_error(),
        }
    }

    /// Binds the context on this thread for the duration of `f` (see
    /// [`Context::bind`]).
    pub fn bind<R>(
        &self,
        f: impl for<'ctx> FnOnce(&mut CurrentContext<'ctx>) -> R,
    ) -> Result<R, CudaError> {
        match self {
            PoolContext::Primary(c) => c.bind(f),
            PoolContext::Created(c) => c.bind(f),
        }
    }

    /// The primary context, if it is one.
    pub fn as_primary(&self) -> Option<&PrimaryContext> {
        match self {
            PoolContext::Primary(c) => Some(c),
            PoolContext::Created(_) => None,
        }
    }

    /// The created context, if it is one.
    pub fn as_created(&self) -> Option<&Context> {
        match self {
            PoolContext::Created(c) => Some(c),
            PoolContext::Primary(_) => None,
        }
    }
}

impl core::fmt::Debug for PoolContext {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            PoolContext::Primary(c) => write!(f, "Primary({:?})", c.raw()),
            PoolContext::Created(c) => write!(f, "Created({:?})", c.raw()),
        }
    }
}

/// One device of the pool.
#[derive(Debug)]
struct Slot {
    ctx: Mutex<PoolContext>,
    /// Threads bound to this device, or waiting for its lock, through the pool.
    load: AtomicUsize,
    /// Free device memory, in bytes, at the last measurement.
    free: AtomicUsize,
    /// The sticky error the context reported (`CUDA_SUCCESS`: none).
    poisoned: AtomicU32,
}

impl Slot {
    /// Records what the context's handle says about its health.
    fn note(&self, ctx: &PoolContext) {
        let code = ctx.sticky_error().unwrap_or(CUresult::CUDA_SUCCESS);
        self.poisoned.store(code.0, Ordering::Relaxed);
    }

    /// The sticky error recorded for the context, if any.
    fn sticky(&self) -> Option<CUresult> {
        match self.poisoned.load(Ordering::Relaxed) {
            0 => None,
            code => Some(CUresult(code)),
        }
    }

    /// Measures free memory in the bound context; a failure keeps the last figure.
    fn measure(&self, cur: &CurrentContext<'_>) {
        if let Ok((free, _)) = cur.memory_info() {
            self.free.store(free, Ordering::Relaxed);
        }
    }
}

/// Marks this thread as holding a pool lock while alive.
struct Held;

impl Held {
    /// [`CudaError::ContextAlreadyBound`] if the thread already holds one.
    fn enter() -> Result<Held, CudaError> {
        if HELD.with(Cell::get) {
            return Err(CudaError::ContextAlreadyBound);
        }
        HELD.with(|h| h.set(true));
        Ok(Held)
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        HELD.with(|h| h.set(false));
    }
}

/// Counts a thread bound to (or waiting for) a device while alive.
struct Load<'a>(&'a AtomicUsize);

impl<'a> Load<'a> {
    fn new(load: &'a AtomicUsize) -> Load<'a> {
        load.fetch_add(1, Ordering::Relaxed);
        Load(load)
    }
}

impl Drop for Load<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

/// The refusals that must come before a pool lock is waited for: a host callback
/// (its stream's owner may hold the lock and wait for the callback) and a thread
/// with a root binding (it would be refused after the wait anyway).
fn may_wait(root_too: bool) -> Result<(), CudaError> {
    crate::error::refuse_in_host_callback()?;
    if root_too && crate::context::root_bound() {
        return Err(CudaError::ContextAlreadyBound);
    }
    Ok(())
}

/// The lock of `m`, recovered if a panic inside an earlier binding poisoned it.
fn lock(m: &Mutex<PoolContext>) -> MutexGuard<'_, PoolContext> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The lock of `m` if it is free now.
fn try_lock(m: &Mutex<PoolContext>) -> Option<MutexGuard<'_, PoolContext>> {
    match m.try_lock() {
        Ok(g) => Some(g),
        Err(TryLockError::Poisoned(p)) => Some(p.into_inner()),
        Err(TryLockError::WouldBlock) => None,
    }
}

/// The refusal of an index outside the pool.
fn no_such_index() -> CudaError {
    CudaError::InvalidArgument {
        parameter: "index",
        rule: "must be below the pool's length (DevicePool::len)",
    }
}

/// Devices, one context each, usable from many threads at once (see the module
/// docs). Dropping the pool releases (destroys) its contexts.
#[derive(Debug)]
pub struct DevicePool {
    driver: &'static Driver,
    devices: Vec<Device>,
    slots: Vec<Slot>,
    next: AtomicUsize,
}

impl DevicePool {
    /// A pool of every device of `driver`, each with its primary context.
    /// `CudaError::Driver(CUDA_ERROR_NO_DEVICE)` if there is none. Binds each context
    /// once to measure its free memory, so the calling thread must have no binding
    /// ([`CudaError::ContextAlreadyBound`]).
    pub fn new(driver: &'static Driver) -> Result<DevicePool, CudaError> {
        let n = driver.device_count()?;
        if n == 0 {
            return Err(CudaError::Driver(CUresult::CUDA_ERROR_NO_DEVICE));
        }
        let ordinals: Vec<usize> = (0..n).collect();
        Self::with_devices(driver, &ordinals)
    }

    /// A pool of the devices `ordinals` (in that order: pool index *i* is device
    /// `ordinals[i]`), each with its primary context. Refused with
    /// [`CudaError::InvalidArgument`] if `ordinals` is empty or names a device twice;
    /// an ordinal the driver does not know is its error. See [`DevicePool::new`].
    pub fn with_devices(
        driver: &'static Driver,
        ordinals: &[usize],
    ) -> Result<DevicePool, CudaError> {
        Self::build(driver, ordinals, |d| {
            PrimaryContext::retain(d).map(PoolContext::Primary)
        })
    }

    /// As [`with_devices`](Self::with_devices), with a context the pool creates on
    /// each device (with `flags`) instead of the primary context.
    pub fn with_created_contexts(
        driver: &'static Driver,
        ordinals: &[usize],
        flags: CUctx_flags,
    ) -> Result<DevicePool, CudaError> {
        Self::build(driver, ordinals, |d| {
            Context::new(d, flags).map(PoolContext::Created)
        })
    }

    fn build(
        driver: &'static Driver,
        ordinals: &[usize],
        make: impl Fn(&Device) -> Result<PoolContext, CudaError>,
    ) -> Result<DevicePool, CudaError> {
        if ordinals.is_empty() {
            return Err(CudaError::InvalidArgument {
                parameter: "ordinals",
                rule: "a device pool needs at least one device",
            });
        }
        if ordinals
            .iter()
            .enumerate()
            .any(|(i, o)| ordinals[..i].contains(o))
        {
            return Err(CudaError::InvalidArgument {
                parameter: "ordinals",
                rule: "each device may appear once (the pool holds one context per device)",
            });
        }
        let devices = ordinals
            .iter()
            .map(|&o| driver.device(o))
            .collect::<Result<Vec<_>, _>>()?;
        let mut slots = Vec::with_capacity(devices.len());
        for d in &devices {
            let ctx = make(d)?;
            let slot = Slot {
                ctx: Mutex::new(ctx),
                load: AtomicUsize::new(0),
                free: AtomicUsize::new(0),
                poisoned: AtomicU32::new(0),
            };
            lock(&slot.ctx).bind(|cur| slot.measure(cur))?;
            slots.push(slot);
        }
        Ok(DevicePool {
            driver,
            devices,
            slots,
            next: AtomicUsize::new(0),
        })
    }

    /// The driver.
    pub fn driver(&self) -> &'static Driver {
        self.driver
    }

    /// The number of devices (at least 1).
    pub fn len(&self) -> usize {
        self.slots.len()
    }

    /// Always `false`: a pool has at least one device.
    pub fn is_empty(&self) -> bool {
        self.slots.is_empty()
    }

    /// The devices, by pool index.
    pub fn devices(&self) -> &[Device] {
        &self.devices
    }

    fn slot(&self, i: usize) -> Result<&Slot, CudaError> {
        self.slots.get(i).ok_or_else(no_such_index)
    }

    /// Threads bound to device `i` through the pool, or waiting to be, now.
    pub fn load(&self, i: usize) -> Result<usize, CudaError> {
        Ok(self.slot(i)?.load.load(Ordering::Relaxed))
    }

    /// The sticky error device `i`'s context reported, if any (as of its last binding
    /// through the pool, or the last [`best_available`](Self::best_available) that
    /// found it idle). Such a context stays unusable: binding it is
    /// [`CudaError::ContextPoisoned`].
    pub fn sticky_error(&self, i: usize) -> Result<Option<CUresult>, CudaError> {
        Ok(self.slot(i)?.sticky())
    }

    /// Binds device `i`'s context on this thread for the duration of `f`, waiting
    /// while another thread has it bound. Refused with
    /// [`CudaError::ContextAlreadyBound`] on a thread that already has a binding or
    /// holds a pool lock (see the module docs), [`CudaError::ContextPoisoned`] if the
    /// context reported a sticky error, [`CudaError::InvalidArgument`] for an index
    /// outside the pool. After `f` the binding measures the device's free memory
    /// (one `cuMemGetInfo`), for [`best_available`](Self::best_available).
    pub fn bind<R>(
        &self,
        i: usize,
        f: impl for<'ctx> FnOnce(&mut CurrentContext<'ctx>) -> R,
    ) -> Result<R, CudaError> {
        let slot = self.slot(i)?;
        may_wait(true)?;
        let _held = Held::enter()?;
        let _load = Load::new(&slot.load);
        let ctx = lock(&slot.ctx);
        let r = ctx.bind(|cur| {
            let r = f(cur);
            slot.measure(cur);
            r
        });
        slot.note(&ctx);
        r
    }

    /// The next pool index in round-robin order (an atomic counter: concurrent
    /// callers get successive indices).
    pub fn next_round_robin(&self) -> usize {
        self.next.fetch_add(1, Ordering::Relaxed) % self.slots.len().max(1)
    }

    /// The pool index of the device to use now:
    ///
    /// 1. contexts that reported a sticky error are skipped;
    /// 2. the most free device memory (`cuMemGetInfo`, which counts every user of
    ///    the device) wins;
    /// 3. among equals, the fewest threads bound or waiting through the pool
    ///    ([`load`](Self::load));
    /// 4. among equals, the lowest pool index.
    ///
    /// Never waits: a device whose context is free now is measured on the spot (a
    /// short binding, only on a thread without a binding or pool lock); one that is
    /// bound elsewhere counts with the figure measured when its last binding ended.
    /// [`CudaError::ContextPoisoned`] (the first device's code) if every context is
    /// poisoned.
    pub fn best_available(&self) -> Result<usize, CudaError> {
        let probe = !HELD.with(Cell::get);
        let mut best: Option<(usize, usize, usize)> = None; // (free, load, index)
        let mut first_poison = None;
        for (i, slot) in self.slots.iter().enumerate() {
            if let Some(ctx) = try_lock(&slot.ctx) {
                if probe && ctx.sticky_error().is_none() {
                    // A thread with a binding of its own is refused: the last figure
                    // stands.
                    let _ = ctx.bind(|cur| slot.measure(cur));
                }
                slot.note(&ctx);
            }
            if let Some(code) = slot.sticky() {
                first_poison.get_or_insert(code);
                continue;
            }
            let free = slot.free.load(Ordering::Relaxed);
            let load = slot.load.load(Ordering::Relaxed);
            let better = match best {
                None => true,
                Some((bf, bl, _)) => free > bf || (free == bf && load < bl),
            };
            if better {
                best = Some((free, load, i));
            }
        }
        match best {
            Some((_, _, i)) => Ok(i),
            None => Err(CudaError::ContextPoisoned {
                code: first_poison.unwrap_or(CUresult::CUDA_ERROR_ILLEGAL_ADDRESS),
            }),
        }
    }

    /// Binds the [`best_available`](Self::best_available) device's context and
    /// calls `f` with its pool index. Another thread may have chosen the same device
    /// meanwhile: then this one waits for it.
    pub fn bind_best<R>(
        &self,
        f: impl for<'ctx> FnOnce(usize, &mut CurrentContext<'ctx>) -> R,
    ) -> Result<R, CudaError> {
        let i = self.best_available()?;
        self.bind(i, |cur| f(i, cur))
    }

    /// Binds the [`next_round_robin`](Self::next_round_robin) device's context and
    /// calls `f` with its pool index.
    pub fn bind_next<R>(
        &self,
        f: impl for<'ctx> FnOnce(usize, &mut CurrentContext<'ctx>) -> R,
    ) -> Result<R, CudaError> {
        let i = self.next_round_robin();
        self.bind(i, |cur| f(i, cur))
    }

    /// Locks every device's context, in pool order, and lends them all to `f` at
    /// once (by pool index), for work that spans devices (peer access, a peer
    /// group). Nothing is bound: `f` binds what it needs. Waits for the bindings in
    /// progress on other threads; refused with [`CudaError::ContextAlreadyBound`] on
    /// a thread that holds a pool lock (inside a pool binding or another
    /// `with_all`). Inside `f` the pool's own binding methods are refused likewise.
    pub fn with_all<R>(&self, f: impl FnOnce(&[&PoolContext]) -> R) -> Result<R, CudaError> {
        may_wait(true)?;
        let _held = Held::enter()?;
        let _loads: Vec<Load<'_>> = self.slots.iter().map(|s| Load::new(&s.load)).collect();
        let guards: Vec<MutexGuard<'_, PoolContext>> =
            self.slots.iter().map(|s| lock(&s.ctx)).collect();
        let contexts: Vec<&PoolContext> = guards.iter().map(|g| &**g).collect();
        let r = f(&contexts);
        for (slot, ctx) in self.slots.iter().zip(&guards) {
            slot.note(ctx);
        }
        Ok(r)
    }

    /// Splits `items` across every device and returns the results in item order.
    ///
    /// The split is equal: with *n* items and *k* devices, device *i* gets the
    /// *i*-th run of ⌊n/k⌋ items, one more for the first *n* mod *k* devices
    /// (devices are assumed alike; use [`bind_best`](Self::bind_best) per piece of
    /// work where they are not). Each non-empty chunk runs on a scoped thread of its
    /// own that binds its device's context (waiting while another thread has it) and
    /// calls `f(pool_index, current_context, chunk)`, which returns one result per
    /// item of the chunk, in order. An empty batch returns at once.
    ///
    /// Every thread is joined before this returns. Then, if a call of `f` panicked,
    /// its panic is resumed on the calling thread (`std::panic::resume_unwind`, as
    /// `std::thread::scope` does — the payload is the caller's own panic, not one of
    /// this crate); otherwise, if any chunk failed, the error of the lowest pool
    /// index is returned (the other chunks' results are dropped); a binding refused
    /// by the pool (e.g. [`CudaError::ContextPoisoned`]) is such an error, and so is
    /// [`CudaError::InvalidArgument`] if `f` returns another number of results than
    /// its chunk has items. If a thread cannot be spawned, its chunk runs on the
    /// calling thread (which then needs no binding of its own: on a thread with one,
    /// that chunk fails with [`CudaError::ContextAlreadyBound`]). Refused with [`CudaError::ContextAlreadyBound`] on a thread
    /// that holds a pool lock (its workers would wait for it forever).
    pub fn distribute<T, R, E, F>(&self, items: &[T], f: F) -> Result<Vec<R>, E>
    where
        T: Sync,
        R: Send,
        E: From<CudaError> + Send,
        F: for<'ctx> Fn(usize, &mut CurrentContext<'ctx>, &[T]) -> Result<Vec<R>, E> + Sync,
    {
        if HELD.with(Cell::get) {
            return Err(CudaError::ContextAlreadyBound.into());
        }
        may_wait(false)?;
        if items.is_empty() {
            return Ok(Vec::new());
        }
        let chunks = split(items, self.slots.len());
        let f = &f;
        let run = |i: usize, chunk: &[T]| -> Result<Vec<R>, E> {
            let out = self.bind(i, |cur| f(i, cur, chunk))??;
            if out.len() != chunk.len() {
                return Err(CudaError::InvalidArgument {
                    parameter: "f",
                    rule: "must return one result per item of the chunk it is given",
                }
                .into());
            }
            Ok(out)
        };
        let run = &run;
        let outcomes: Vec<std::thread::Result<Result<Vec<R>, E>>> = std::thread::scope(|s| {
            let mut spawned = Vec::new();
            let mut inline = Vec::new();
            for (i, chunk) in chunks.into_iter().enumerate() {
                if chunk.is_empty() {
                    continue;
                }
                let worker = std::thread::Builder::new()
                    .name(format!("device-pool-{i}"))
                    .spawn_scoped(s, move || run(i, chunk));
                match worker {
                    Ok(h) => spawned.push((i, h)),
                    Err(_) => inline.push((i, chunk)),
                }
            }
            let mut outcomes: Vec<(usize, std::thread::Result<_>)> = inline
                .into_iter()
                .map(|(i, chunk)| {
                    let r =
                        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| run(i, chunk)));
                    (i, r)
                })
                .collect();
            outcomes.extend(spawned.into_iter().map(|(i, h)| (i, h.join())));
            outcomes.sort_by_key(|(i, _)| *i);
            outcomes.into_iter().map(|(_, o)| o).collect()
        });
        let mut results = Vec::with_capacity(outcomes.len());
        let mut panic = None;
        for o in outcomes {
            match o {
                Ok(r) => results.push(r),
                Err(payload) => {
                    panic.get_or_insert(payload);
                }
            }
        }
        if let Some(payload) = panic {
            std::panic::resume_unwind(payload);
        }
        let mut out = Vec::with_capacity(items.len());
        for r in results {
            out.extend(r?);
        }
        Ok(out)
    }
}

/// `items` in `k` runs, the first `len % k` one longer than the others.
fn split<T>(items: &[T], k: usize) -> Vec<&[T]> {
    let k = k.max(1);
    let (base, extra) = (items.len() / k, items.len() % k);
    let mut rest = items;
    (0..k)
        .map(|i| {
            let (chunk, tail) = rest.split_at((base + usize::from(i < extra)).min(rest.len()));
            rest = tail;
            chunk
        })
        .collect()
}

static_assertions::assert_impl_all!(DevicePool: Send, Sync);
static_assertions::assert_impl_all!(PoolContext: Send);
static_assertions::assert_not_impl_any!(PoolContext: Sync);

#[cfg(test)]
mod tests {
    use super::split;

    #[test]
    fn split_is_equal_in_order_and_complete() {
        for n in 0..20usize {
            for k in 1..6 {
                let items: Vec<usize> = (0..n).collect();
                let chunks = split(&items, k);
                assert_eq!(chunks.len(), k);
                let lens: Vec<usize> = chunks.iter().map(|c| c.len()).collect();
                assert!(lens.iter().max().unwrap() - lens.iter().min().unwrap() <= 1);
                assert!(lens.windows(2).all(|w| w[0] >= w[1]), "longer runs first");
                let joined: Vec<usize> = chunks.concat();
                assert_eq!(joined, items);
            }
        }
    }
}

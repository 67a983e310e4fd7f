//! streamcheck: races between streams on device memory — two operations on
//! different streams that touch the same bytes of one allocation, at least one
//! writing, with nothing ordering them.
//!
//! Ordering is kept as vector clocks, one per *agent*: each queue work runs in
//! order on (a created stream, a context's legacy default stream, a thread's
//! per-thread default stream) and each host thread. Submitting work happens after
//! what its host thread knows ([`submit`]); the legacy stream's work waits for the
//! blocking streams' work before it, and theirs for the legacy stream's
//! ([`Lane::blocking`]); an event record takes its stream's clock, a wait joins
//! it ([`record`], [`wait`]); a host synchronisation joins what it waited for
//! ([`host_syncs`], [`host_syncs_event`], [`host_syncs_context`]), and a synchronous
//! copy or memset is complete when its call returns. These are the rules of a GPU,
//! not softcuda's own scheduling (which runs default-stream work at once and so
//! orders more than a GPU does): a race is reported whenever a GPU may run the two
//! operations in either order.
//!
//! Each operation carries the clock it was submitted with ([`Stamp`], set for the
//! thread that runs it by [`running`]); its accesses to mapped memory — copies and
//! memsets ([`touch`]), a kernel's global loads, stores and atomics gathered per
//! allocation while it runs ([`Touches`]) — are checked, when they are made,
//! against the last [`KEEP`] accesses of other operations to that allocation
//! (keyed by its buffer id, fresh for every allocation), so a race is found
//! whichever of the two runs first. A kernel's accesses to one allocation count as
//! the range from its lowest to its highest byte, reads and writes apart: two
//! kernels writing interleaved elements of one buffer on two streams are reported.

use std::cell::RefCell;
use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::thread::ThreadId;

use super::report;

/// Accesses kept per allocation.
pub const KEEP: usize = 32;
/// Allocations whose accesses are kept (the oldest buffer ids are forgotten first).
const ALLOCATIONS: usize = 1 << 14;

/// A lane work runs in order on: a queue.
#[derive(Debug, Clone, Copy)]
pub enum Lane {
    /// A created stream: `key` names it (a number no other stream has), `handle`
    /// is what the program knows it by.
    Stream {
        /// Its identity.
        key: u64,
        /// Its `CUstream`.
        handle: u64,
        /// Its context.
        ctx: u64,
        /// Whether it synchronises with the legacy default stream (not
        /// `CU_STREAM_NON_BLOCKING`).
        blocking: bool,
    },
    /// A context's legacy default stream (`NULL`, `CU_STREAM_LEGACY`).
    Legacy {
        /// The context.
        ctx: u64,
    },
    /// The calling thread's per-thread default stream of a context.
    PerThread {
        /// The context.
        ctx: u64,
    },
}

impl Lane {
    /// Whether work on it orders with the legacy default stream's.
    fn blocking(&self) -> bool {
        match *self {
            Lane::Stream { blocking, .. } => blocking,
            Lane::Legacy { .. } | Lane::PerThread { .. } => true,
        }
    }

    fn ctx(&self) -> u64 {
        match *self {
            Lane::Stream { ctx, .. } | Lane::Legacy { ctx } | Lane::PerThread { ctx } => ctx,
        }
    }

    fn key(&self) -> Key {
        match *self {
            Lane::Stream { key, .. } => Key::Stream(key),
            Lane::Legacy { ctx } => Key::Legacy(ctx),
            Lane::PerThread { ctx } => Key::PerThread(ctx, std::thread::current().id()),
        }
    }

    fn name(&self) -> String {
        match *self {
            Lane::Stream { handle, .. } => format!("stream {handle:#x}"),
            Lane::Legacy { .. } => "the legacy default stream".to_owned(),
            Lane::PerThread { .. } => format!(
                "the per-thread default stream of thread {:?}",
                std::thread::current().id()
            ),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Key {
    Stream(u64),
    Legacy(u64),
    PerThread(u64, ThreadId),
    Host(ThreadId),
}

struct Agent {
    /// The context of a queue (0 for a host thread).
    ctx: u64,
    /// A queue that orders with the legacy default stream.
    blocking: bool,
    legacy: bool,
    name: Arc<str>,
    clock: Vec<u64>,
}

/// One operation's access to an allocation.
struct Access {
    agent: usize,
    tick: u64,
    start: u64,
    end: u64,
    write: bool,
    what: Arc<str>,
    on: Arc<str>,
}

#[derive(Default)]
struct Clocks {
    agents: Vec<Agent>,
    index: HashMap<Key, usize>,
    /// Each event's clock as of its last record (by its address).
    events: HashMap<usize, Vec<u64>>,
    /// Buffer id → the latest accesses.
    history: BTreeMap<u64, VecDeque<Access>>,
}

static CLOCKS: Mutex<Option<Clocks>> = Mutex::new(None);

fn clocks() -> MutexGuard<'static, Option<Clocks>> {
    CLOCKS.lock().unwrap_or_else(PoisonError::into_inner)
}

fn join(into: &mut Vec<u64>, from: &[u64]) {
    if into.len() < from.len() {
        into.resize(from.len(), 0);
    }
    for (a, &b) in into.iter_mut().zip(from) {
        *a = (*a).max(b);
    }
}

impl Clocks {
    fn agent(&mut self, key: Key, make: impl FnOnce() -> Agent) -> usize {
        if let Some(&i) = self.index.get(&key) {
            return i;
        }
        let i = self.agents.len();
        self.agents.push(make());
        self.index.insert(key, i);
        i
    }

    fn host(&mut self) -> usize {
        let id = std::thread::current().id();
        self.agent(Key::Host(id), || Agent {
            ctx: 0,
            blocking: false,
            legacy: false,
            name: format!("host thread {id:?}").into(),
            clock: Vec::new(),
        })
    }

    fn queue(&mut self, q: &Lane) -> usize {
        self.agent(q.key(), || Agent {
            ctx: q.ctx(),
            blocking: q.blocking(),
            legacy: matches!(q, Lane::Legacy { .. }),
            name: q.name().into(),
            clock: Vec::new(),
        })
    }

    fn join_agent(&mut self, into: usize, from: usize) {
        if into != from {
            let c = std::mem::take(&mut self.agents[from].clock);
            join(&mut self.agents[into].clock, &c);
            self.agents[from].clock = c;
        }
    }

    /// Brings queue `q` up to what must come before new work on it: its host
    /// thread's knowledge and the legacy stream's rules. Returns its agent.
    fn before_work(&mut self, q: &Lane) -> usize {
        let a = self.queue(q);
        let h = self.host();
        self.join_agent(a, h);
        let ctx = q.ctx();
        if matches!(q, Lane::Legacy { .. }) {
            let blocking: Vec<usize> = (0..self.agents.len())
                .filter(|&i| self.agents[i].ctx == ctx && self.agents[i].blocking && i != a)
                .collect();
            for b in blocking {
                self.join_agent(a, b);
            }
        } else if q.blocking() {
            let legacy = self.queue(&Lane::Legacy { ctx });
            self.join_agent(a, legacy);
        }
        a
    }
}

/// The operation running on this thread: who submitted it and with what clock.
pub struct Stamp {
    agent: usize,
    clock: Vec<u64>,
    /// The call that made it (`cuMemcpyHtoDAsync`, `cuLaunchKernel`).
    what: &'static str,
    /// The queue's name.
    on: Arc<str>,
}

thread_local! {
    /// The driver function this thread is in, and whether it copies from or to
    /// plain host memory.
    static CALL: std::cell::Cell<(&'static str, bool)> = const { std::cell::Cell::new(("", false)) };
    static CURRENT: RefCell<Option<Arc<Stamp>>> = const { RefCell::new(None) };
}

/// Notes the driver function this thread is in (every export's prologue).
#[inline]
pub fn calling(function: &'static str) {
    CALL.with(|c| c.set((function, false)));
}

/// The call in progress copies from or to plain (pageable) host memory.
pub fn host_side() {
    CALL.with(|c| c.set((c.get().0, true)));
}

/// Whether streamcheck is on.
pub fn on() -> bool {
    super::on(super::STREAMCHECK)
}

/// Whether the call in progress returns only once its default-stream work is done:
/// a synchronous copy or memset, or a copy from or to plain host memory (which the
/// driver stages, or finishes, before it returns).
pub fn waits_on_return() -> bool {
    let (call, host) = CALL.with(std::cell::Cell::get);
    host || synchronous(call)
}

/// A synchronous copy or memset: complete when its call returns.
fn synchronous(call: &str) -> bool {
    (call.starts_with("cuMemcpy") || call.starts_with("cuMemset")) && !call.contains("Async")
}

/// Work submitted to `q` now: its stamp, or `None` while streamcheck is off.
pub fn submit(q: &Lane) -> Option<Arc<Stamp>> {
    if !on() {
        return None;
    }
    let call = CALL.with(std::cell::Cell::get).0;
    let mut g = clocks();
    let c = g.get_or_insert_with(Clocks::default);
    let a = c.before_work(q);
    let agent = &mut c.agents[a];
    if agent.clock.len() <= a {
        agent.clock.resize(a + 1, 0);
    }
    agent.clock[a] += 1;
    let stamp = Stamp {
        agent: a,
        clock: agent.clock.clone(),
        what: call,
        on: Arc::clone(&agent.name),
    };
    if synchronous(call) {
        let h = c.host();
        join(&mut c.agents[h].clock, &stamp.clock);
    }
    Some(Arc::new(stamp))
}

/// Event `event` (its address) recorded on `q`: it completes after the work
/// submitted to `q` so far.
pub fn record(event: usize, q: &Lane) {
    if !on() {
        return;
    }
    let mut g = clocks();
    let c = g.get_or_insert_with(Clocks::default);
    let a = c.before_work(q);
    let clock = c.agents[a].clock.clone();
    c.events.insert(event, clock);
}

/// `q` waits for event `event`'s last record: its later work comes after it.
pub fn wait(q: &Lane, event: usize) {
    if !on() {
        return;
    }
    let mut g = clocks();
    let c = g.get_or_insert_with(Clocks::default);
    let a = c.before_work(q);
    if let Some(e) = c.events.get(&event).cloned() {
        join(&mut c.agents[a].clock, &e);
    }
}

/// The calling thread synchronised with `q` (`cuStreamSynchronize`, a query that
/// said done): it knows all of `q`'s work so far has run — for the legacy stream,
/// the blocking streams' before it too.
pub fn host_syncs(q: &Lane) {
    if !on() {
        return;
    }
    let mut g = clocks();
    let c = g.get_or_insert_with(Clocks::default);
    let a = if matches!(q, Lane::Legacy { .. }) {
        c.before_work(q)
    } else {
        c.queue(q)
    };
    let h = c.host();
    c.join_agent(h, a);
}

/// The calling thread synchronised with event `event` (`cuEventSynchronize`, a
/// query that said done).
pub fn host_syncs_event(event: usize) {
    if !on() {
        return;
    }
    let mut g = clocks();
    let c = g.get_or_insert_with(Clocks::default);
    let h = c.host();
    if let Some(e) = c.events.get(&event).cloned() {
        join(&mut c.agents[h].clock, &e);
    }
}

/// The calling thread synchronised with every queue of context `ctx`
/// (`cuCtxSynchronize`).
pub fn host_syncs_context(ctx: u64) {
    if !on() {
        return;
    }
    let mut g = clocks();
    let c = g.get_or_insert_with(Clocks::default);
    let h = c.host();
    let queues: Vec<usize> = (0..c.agents.len())
        .filter(|&i| c.agents[i].ctx == ctx && (c.agents[i].legacy || i != h))
        .collect();
    for q in queues {
        c.join_agent(h, q);
    }
}

/// While the returned guard lives, this thread runs the operation `stamp` (a
/// stream's job): its accesses are checked as that operation's.
pub fn running(stamp: Option<Arc<Stamp>>) -> Running {
    Running(stamp.map(|s| CURRENT.with(|c| c.replace(Some(s)))))
}

/// See [`running`]: restores what ran before (a graph's kernels run inside its
/// launch).
pub struct Running(Option<Option<Arc<Stamp>>>);

impl Drop for Running {
    fn drop(&mut self) {
        if let Some(old) = self.0.take() {
            CURRENT.with(|c| *c.borrow_mut() = old);
        }
    }
}

/// An allocation, as the layers above know it.
#[derive(Debug, Clone, Copy)]
pub struct Block {
    /// Its base address.
    pub base: u64,
    /// Its size in bytes.
    pub size: u64,
    /// Its buffer id (never reused).
    pub id: u64,
}

/// The running operation touched `[start, end)` of `block` (`write`: stored to it);
/// `kernel`, the kernel that did. Checked against other operations' accesses.
pub fn touch(block: Block, start: u64, end: u64, write: bool, kernel: Option<&str>) {
    let Some(stamp) = CURRENT.with(|c| c.borrow().clone()) else {
        return;
    };
    let what: Arc<str> = match kernel {
        Some(k) => format!("{} (kernel {k})", stamp.what).into(),
        None => stamp.what.into(),
    };
    let mut g = clocks();
    let c = g.get_or_insert_with(Clocks::default);
    let tick = stamp.clock.get(stamp.agent).copied().unwrap_or(0);
    let past = c.history.entry(block.id).or_default();
    let mut found = Vec::new();
    for p in past.iter() {
        let ordered =
            p.agent == stamp.agent || stamp.clock.get(p.agent).is_some_and(|&t| t >= p.tick);
        if !ordered && (p.write || write) && p.start < end && start < p.end {
            found.push((
                Arc::clone(&p.what),
                Arc::clone(&p.on),
                p.write,
                p.start.max(start),
                p.end.min(end),
            ));
        }
    }
    if let Some(same) = past
        .iter_mut()
        .find(|p| p.agent == stamp.agent && p.tick == tick && p.write == write)
    {
        same.start = same.start.min(start);
        same.end = same.end.max(end);
    } else {
        if past.len() == KEEP {
            past.pop_front();
        }
        past.push_back(Access {
            agent: stamp.agent,
            tick,
            start,
            end,
            write,
            what: Arc::clone(&what),
            on: Arc::clone(&stamp.on),
        });
    }
    while c.history.len() > ALLOCATIONS {
        c.history.pop_first();
    }
    drop(g);
    for (pwhat, pon, pwrite, s, e) in found {
        report_race(
            block,
            (&pwhat, &pon, pwrite),
            (&what, &stamp.on, write),
            s,
            e,
        );
    }
}

fn report_race(
    block: Block,
    first: (&str, &str, bool),
    second: (&str, &str, bool),
    start: u64,
    end: u64,
) {
    let kind = |w: bool| if w { "Write" } else { "Read" };
    let hazard = match (first.2, second.2) {
        (true, true) => "write-after-write",
        (true, false) => "read-after-write",
        _ => "write-after-read",
    };
    let lines = vec![
        format!(
            "Error: Race reported between {} access by {} on {} and {} access by {} on {}",
            kind(first.2),
            first.0,
            first.1,
            kind(second.2),
            second.0,
            second.1
        ),
        format!(
            "    {hazard} hazard on __global__ memory at {start:#x} ({} bytes), {} bytes inside the allocation at {:#x} of size {} bytes",
            end - start,
            start - block.base,
            block.base,
            block.size
        ),
        "    with nothing ordering them: not the same stream, no event recorded after the first and waited for before the second, no synchronisation of the host between".to_owned(),
    ];
    report::finding(
        &format!("{}@{}/{}@{}", first.0, first.1, second.0, second.1),
        &lines,
    );
}

/// A kernel's accesses to global memory, gathered while it runs (one range per
/// allocation, reads and writes apart) and checked when it ends ([`Touches::flush`]).
#[derive(Default)]
pub struct Touches(Mutex<Vec<Gathered>>);

struct Gathered {
    block: Block,
    read: Option<(u64, u64)>,
    written: Option<(u64, u64)>,
}

fn widen(r: &mut Option<(u64, u64)>, start: u64, end: u64) {
    *r = Some(match *r {
        Some((s, e)) => (s.min(start), e.max(end)),
        None => (start, end),
    });
}

impl Touches {
    /// Whether an operation is running on this thread (else nothing is gathered).
    pub fn wanted() -> bool {
        on() && CURRENT.with(|c| c.borrow().is_some())
    }

    /// The kernel accessed `len` bytes at `addr`; `find` names the allocation
    /// holding them (asked only the first time the kernel touches it).
    pub fn note(&self, addr: u64, len: u64, write: bool, find: impl FnOnce() -> Option<Block>) {
        let mut v = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        let end = addr.saturating_add(len);
        let i = match v
            .iter()
            .position(|g| addr >= g.block.base && addr - g.block.base < g.block.size)
        {
            Some(i) => i,
            None => {
                let Some(block) = find() else { return };
                v.push(Gathered {
                    block,
                    read: None,
                    written: None,
                });
                v.len() - 1
            }
        };
        let g = &mut v[i];
        widen(if write { &mut g.written } else { &mut g.read }, addr, end);
    }

    /// Checks what the kernel `kernel` touched (once it has ended).
    pub fn flush(&self, kernel: &str) {
        let v = std::mem::take(&mut *self.0.lock().unwrap_or_else(PoisonError::into_inner));
        for g in v {
            if let Some((s, e)) = g.written {
                touch(g.block, s, e, true, Some(kernel));
            }
            if let Some((s, e)) = g.read {
                touch(g.block, s, e, false, Some(kernel));
            }
        }
    }
}

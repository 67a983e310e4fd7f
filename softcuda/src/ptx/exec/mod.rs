//! The interpreter: launch checks, the block scheduler, warp collectives, barriers,
//! memory access and the per-thread operation loop.
//!
//! A launch runs blocks one after another on the calling thread. Within a block,
//! [`run_block`] goes warp by warp: it runs each ready thread ([`run_thread`]) until
//! the thread exits or stops at a barrier or a warp collective, then evaluates the
//! warp's collectives whose lanes have all arrived ([`fire_warp`]); once every warp
//! is stuck, barriers whose arrivals are complete are released. A round without
//! progress is a deadlock, reported as an error: every live thread waits at a
//! barrier (`bar`, `barrier.cluster`) or a warp collective that no thread left can
//! complete. What is not detected: threads that spin. A thread yields after
//! `YIELD_AFTER` backward branches and a yield counts as progress, so a loop waiting
//! for a write that never comes runs until the process ends (as on a GPU without a
//! watchdog). Blocks of a cluster or of a cooperative grid run interleaved, the
//! same way; their memory is bounded by [`resident_limit`].
//!
//! Per-launch buffers (threads' registers and stacks, shared memory) are kept in a
//! thread-local scratch area and reused by the next launch on the same host thread.
//!
//! The sanitizer's checks the driver asks for ([`DeviceMemory::checks`]) are read
//! once per launch into the context: synccheck's run at barrier releases and
//! collectives (`warp.rs`), initcheck's and racecheck's at loads and stores behind
//! a copy of the flag taken when a thread starts running (`thread.rs`, `race.rs`);
//! a faulting access is described from the stopped thread (`memory.rs`).

use std::cell::Cell;
use std::io::Write;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU8, AtomicU16, AtomicU32, AtomicU64, Ordering, fence};
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use super::arith::{self, atom_apply, mask, sext};
use super::ir::{
    Addr, AtomOp, BarKind, BoolOp, Cmp, FOp, Func, Inst, Int3Op, IntOp, MemSpace, NO_REG, Op,
    Program, Reg, ShflMode, Sreg, Ty, VoteMode,
};
use super::printf;
use super::{
    AccessKind, AccessSpace, CHECK_GLOBAL, CHECK_INIT, CHECK_RACE, CHECK_SYNC, DeviceMemory, Fault,
    Hazard, Kernel, LaunchConfig, LaunchError, LaunchExtras, Module, Race, Site, SyncError,
    SyncFault,
};

mod checks;
mod lanecols;
pub(crate) mod lanes;
mod memory;
mod race;
mod texture;
mod thread;
mod warp;

pub use checks::{check_cluster, check_launch};
use memory::*;
use thread::*;
use warp::*;

/// Generic-address window of shared memory (top byte 0xFE).
const SHARED_WIN: u64 = 0xFE00_0000_0000_0000;
/// Generic-address window of local memory (top byte 0xFD).
const LOCAL_WIN: u64 = 0xFD00_0000_0000_0000;
/// Generic-address window of the kernel parameters (top byte 0xFC).
const PARAM_WIN: u64 = 0xFC00_0000_0000_0000;
const WIN_MASK: u64 = 0xFF00_0000_0000_0000;

/// Largest per-thread stack (CUDA's limit on local memory per thread).
pub const MAX_STACK: usize = 512 * 1024;
/// Deepest call chain.
const MAX_CALL_DEPTH: usize = 4096;
/// Shared memory per block (sm_90's 227 KiB).
const MAX_SHARED: u64 = 227 * 1024;
/// Shared memory the driver reserves per block (after the kernel's own), read
/// through `%reserved_smem_offset_*` (cooperative groups' tile scratch).
const RESERVED_SMEM: u32 = 1024;
/// The most blocks in a cluster (the non-portable limit of compute capability 9.0).
pub const MAX_CLUSTER: u64 = 16;
/// The default of [`resident_limit`]: 2 GiB.
const DEFAULT_RESIDENT_LIMIT: u64 = 2 << 30;
static RESIDENT_LIMIT: AtomicU64 = AtomicU64::new(DEFAULT_RESIDENT_LIMIT);

/// The most host memory the co-resident blocks of one interleaved launch (a
/// cluster, or a cooperative grid) may take: threads' registers and stacks and the
/// blocks' shared memory. A launch that would need more fails with
/// [`LaunchError::OutOfResources`] before anything is allocated.
pub fn resident_limit() -> u64 {
    RESIDENT_LIMIT.load(Ordering::Relaxed)
}

/// Sets [`resident_limit`] (`None`: the default, 2 GiB). A test knob.
pub fn set_resident_limit(bytes: Option<u64>) {
    RESIDENT_LIMIT.store(bytes.unwrap_or(DEFAULT_RESIDENT_LIMIT), Ordering::Relaxed);
}

/// The host memory the co-resident blocks of a launch of `kernel` with `cfg` and
/// `ex` take at once (what [`resident_limit`] bounds): every block of the grid for a
/// cooperative launch, a cluster's blocks for a cluster launch, 0 for a launch that
/// runs block by block. Saturating: no input overflows.
pub fn resident_bytes(
    module: &Module,
    kernel: &Kernel,
    cfg: &LaunchConfig,
    ex: &LaunchExtras,
) -> u64 {
    let cluster = ex.cluster.or(kernel.cluster_dims);
    let blocks = if ex.cooperative {
        wide_product(cfg.grid)
    } else if let Some(c) = cluster {
        wide_product(c)
    } else {
        return 0;
    };
    let (regs, frame) = module
        .prog
        .funcs
        .get(kernel.func as usize)
        .map_or((0, 0), |f| {
            (f.template.len() as u64, u64::from(f.frame_bytes))
        });
    let per_thread = (size_of::<Thread>() as u64)
        .saturating_add(regs.saturating_mul(8))
        .saturating_add(frame);
    let threads = wide_product(cfg.block);
    let shared = u64::from(kernel.dyn_shared_offset)
        .saturating_add(u64::from(cfg.dynamic_shared_bytes))
        .saturating_add(u64::from(RESERVED_SMEM) + 16);
    threads
        .saturating_mul(per_thread)
        .saturating_add(shared)
        .saturating_mul(blocks)
}

/// The product of three dimensions, saturating.
fn wide_product(d: [u32; 3]) -> u64 {
    d.iter().fold(1u64, |n, &x| n.saturating_mul(u64::from(x)))
}

/// Backward branches a thread takes before it yields to the others: a thread that
/// spins on memory another thread (or block) will write must not run forever.
const YIELD_AFTER: u32 = 1024;

/// Why a thread stopped running.
enum Stop {
    Exit,
    Barrier(u8),
    Warp,
    /// Used its slice (`YIELD_AFTER` backward branches); ready to go on.
    Yield,
    /// At `barrier.cluster.wait` before its cluster's phase completed.
    ClusterWait,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
enum Status {
    #[default]
    Ready,
    /// Waiting at barrier `n` (pc at the `bar`).
    Barrier(u8),
    /// Waiting at a warp collective (pc at it).
    Warp,
    /// Waiting at `barrier.cluster.wait` (pc at it).
    ClusterWait,
    Exited,
}

/// A caller's state saved by `call`.
#[derive(Debug, Clone, Copy)]
struct Frame {
    ret_pc: u32,
    func: u32,
    reg_base: u32,
    stack_base: u32,
    site: u32,
}

/// One thread of the running block.
#[derive(Debug, Default)]
struct Thread {
    pc: u32,
    func: u32,
    status: Status,
    tid: [u32; 3],
    lane: u32,
    warp: u32,
    reg_base: u32,
    stack_base: u32,
    carry: bool,
    /// The cluster barrier phase this thread's last `barrier.cluster.arrive`
    /// completes.
    cluster_target: u32,
    /// Register frames, the current one at `reg_base`.
    regs: Vec<u64>,
    /// Local memory: stack frames, the current one at `stack_base`.
    stack: Vec<u8>,
    frames: Vec<Frame>,
}

impl Thread {
    fn reg(&self, r: Reg) -> u64 {
        self.regs
            .get(self.reg_base as usize + r as usize)
            .copied()
            .unwrap_or(0)
    }

    fn set(&mut self, r: Reg, v: u64) {
        if let Some(x) = self.regs.get_mut(self.reg_base as usize + r as usize) {
            *x = v;
        }
    }
}

/// A named barrier's state.
#[derive(Debug, Clone, Copy, Default)]
struct Bar {
    /// Arrivals (`bar.sync`, `bar.red` and `bar.arrive`).
    arrived: u32,
    /// Threads waiting.
    waiting: u32,
    /// Expected arrivals, 0 for "every live thread".
    count: u32,
    /// `bar.red`: arrivals and true predicates.
    nred: u32,
    ptrue: u32,
}

/// A cluster's barrier (`barrier.cluster.arrive/wait`): arrivals in the current
/// phase, and the phases completed.
#[derive(Debug, Clone, Copy, Default)]
struct ClusterBar {
    arrived: u32,
    phase: u32,
}

/// Buffers reused from launch to launch on one host thread.
#[derive(Debug, Default)]
struct Scratch {
    threads: Vec<Thread>,
    shared: Vec<u8>,
}

thread_local! {
    static SCRATCH: Cell<Option<Box<Scratch>>> = const { Cell::new(None) };
}

/// A few accessible global-memory ranges (from [`DeviceMemory::region`]).
struct RegionCache {
    ranges: [(u64, u64); 4],
    next: usize,
    /// Memory of the launch itself (a cooperative grid's workspace).
    own: (u64, u64),
    /// Texture and surface objects looked up in this launch: (handle, surface, view).
    tex: Vec<(u64, bool, std::sync::Arc<super::sampler::TexView>)>,
}

impl RegionCache {
    fn new() -> Self {
        RegionCache {
            ranges: [(1, 0); 4],
            next: 0,
            own: (1, 0),
            tex: Vec::new(),
        }
    }

    /// The cached range holding `addr`, if any.
    fn range_of(&self, addr: u64) -> Option<(u64, u64)> {
        self.ranges
            .iter()
            .chain([&self.own])
            .find(|&&(s, e)| addr >= s && addr < e)
            .copied()
    }

    #[inline]
    fn check(&mut self, mem: &dyn DeviceMemory, addr: u64, len: u64) -> bool {
        let Some(end) = addr.checked_add(len) else {
            return false;
        };
        if self.ranges.iter().any(|&(s, e)| addr >= s && end <= e) {
            return true;
        }
        if addr >= self.own.0 && end <= self.own.1 {
            return true;
        }
        if let Some((s, e)) = mem.region(addr)
            && addr >= s
            && end <= e
        {
            self.ranges[self.next] = (s, e);
            self.next = (self.next + 1) % self.ranges.len();
            return true;
        }
        mem.accessible(addr, len)
    }
}

/// Where a checked access goes.
#[derive(Clone, Copy)]
enum Loc {
    /// A host address (global or constant memory).
    Host(u64),
    Shared(usize),
    /// Shared memory of another block of the cluster: (rank, offset).
    Peer(usize, usize),
    Local(usize),
    Param(usize),
}

/// Everything a launch needs that does not change while it runs.
#[derive(Clone)]
struct Ctx<'a> {
    prog: &'a Program,
    code: &'a [Inst],
    kernel: &'a Kernel,
    params: &'a [u8],
    gaddrs: &'a [u64],
    mem: &'a dyn DeviceMemory,
    grid: [u32; 3],
    block: [u32; 3],
    ctaid: [u32; 3],
    nthreads: u32,
    dyn_bytes: u32,
    shared_bytes: u32,
    gridid: u64,
    /// Blocks per cluster (1, 1, 1 without an explicit cluster).
    cluster: [u32; 3],
    explicit_cluster: bool,
    /// The cooperative grid's workspace (`%envreg1`, `%envreg2`), 0 otherwise.
    workspace: u64,
    /// Where the driver-reserved shared memory begins.
    reserved_smem: u32,
    /// Its size: `RESERVED_SMEM` if the module reads `%reserved_smem_offset_*`,
    /// else 0.
    reserved_len: u32,
    /// The sanitizer checks asked for ([`DeviceMemory::checks`], read once here).
    checks: u8,
}

/// Runs `kernel` of `module` to completion.
///
/// `params` is the packed parameter buffer (laid out per [`Kernel::params`]);
/// `global_addrs[i]` is the device address of `module.globals()[i]`; every global
/// memory access is checked with `mem`.
pub fn launch(
    module: &Module,
    kernel: &Kernel,
    cfg: &LaunchConfig,
    params: &[u8],
    global_addrs: &[u64],
    mem: &dyn DeviceMemory,
) -> Result<(), LaunchError> {
    launch_ex(
        module,
        kernel,
        cfg,
        &LaunchExtras::default(),
        params,
        global_addrs,
        mem,
    )
}

/// [`launch`] with a cluster shape and/or as a cooperative launch.
///
/// The blocks of a cluster are co-resident: they run interleaved (each runs until
/// all its threads wait, exit or use their slice), so `barrier.cluster` works
/// across them; clusters run one after another. A cooperative launch makes the
/// whole grid co-resident the same way and gives it the grid workspace that
/// `cooperative_groups::this_grid().sync()` reads through `%envreg1/2`.
pub fn launch_ex(
    module: &Module,
    kernel: &Kernel,
    cfg: &LaunchConfig,
    ex: &LaunchExtras,
    params: &[u8],
    global_addrs: &[u64],
    mem: &dyn DeviceMemory,
) -> Result<(), LaunchError> {
    let prog = &module.prog;
    let func = prog
        .funcs
        .get(kernel.func as usize)
        .filter(|f| f.is_entry && f.name == kernel.name)
        .ok_or_else(|| {
            LaunchError::InvalidValue(format!("kernel '{}' is not from this module", kernel.name))
        })?;
    check_launch(kernel, cfg)?;
    if params.len() < kernel.param_bytes as usize {
        return Err(LaunchError::InvalidValue(format!(
            "parameter buffer of {} bytes, kernel '{}' needs {}",
            params.len(),
            kernel.name,
            kernel.param_bytes
        )));
    }
    if global_addrs.len() != module.globals.len() {
        return Err(LaunchError::InvalidValue(format!(
            "{} global addresses given, module has {} globals",
            global_addrs.len(),
            module.globals.len()
        )));
    }
    let explicit = ex.cluster.or(kernel.cluster_dims);
    check_cluster(kernel, cfg, explicit)?;
    let resident = resident_bytes(module, kernel, cfg, ex);
    if resident > resident_limit() {
        return Err(LaunchError::OutOfResources(format!(
            "{resident} bytes of host memory for the co-resident blocks (at most {})",
            resident_limit()
        )));
    }
    let cluster = explicit.unwrap_or([1, 1, 1]);
    // The grid workspace of a cooperative launch: { wsSize, barrier } (driver_abi.h).
    let workspace: Box<[AtomicU32; 4]> = Box::default();
    workspace[0].store(8, Ordering::Relaxed);
    let ws_addr = workspace.as_ptr() as u64;
    let shared = u64::from(kernel.dyn_shared_offset) + u64::from(cfg.dynamic_shared_bytes);
    static GRIDS: AtomicU64 = AtomicU64::new(1);
    let mut cx = Ctx {
        prog,
        code: &prog.code,
        kernel,
        params,
        gaddrs: global_addrs,
        mem,
        grid: cfg.grid,
        block: cfg.block,
        ctaid: [0; 3],
        nthreads: cfg.block[0] * cfg.block[1] * cfg.block[2],
        dyn_bytes: cfg.dynamic_shared_bytes,
        shared_bytes: shared as u32,
        gridid: GRIDS.fetch_add(1, Ordering::Relaxed),
        cluster,
        explicit_cluster: explicit.is_some(),
        workspace: if ex.cooperative { ws_addr } else { 0 },
        reserved_smem: (shared as u32).next_multiple_of(16),
        reserved_len: if module.reserved_smem {
            RESERVED_SMEM
        } else {
            0
        },
        checks: mem.checks(),
    };
    let mut cache = RegionCache::new();
    if ex.cooperative {
        cache.own = (ws_addr, ws_addr + 16);
    }
    if cx.checks & CHECK_RACE != 0 {
        race::reset();
    }
    let result = run_grid(&mut cx, func, &mut cache, ex, cfg);
    if cx.checks & CHECK_RACE != 0 {
        race::reset();
    }
    result
}

/// Runs every block of the launch (see [`launch_ex`]).
fn run_grid(
    cx: &mut Ctx,
    func: &Func,
    cache: &mut RegionCache,
    ex: &LaunchExtras,
    cfg: &LaunchConfig,
) -> Result<(), LaunchError> {
    if ex.cooperative || cx.explicit_cluster {
        return run_interleaved(cx, func, cache, ex.cooperative);
    }
    if cx.kernel.lanes && cx.checks == 0 && lanes::enabled() {
        return lanes::run_grid(cx, func, cache);
    }
    let mut scratch = SCRATCH.with(|c| c.take()).unwrap_or_default();
    let mut result = Ok(());
    'grid: for z in 0..cfg.grid[2] {
        for y in 0..cfg.grid[1] {
            for x in 0..cfg.grid[0] {
                cx.ctaid = [x, y, z];
                let fresh = [x, y, z] == [0, 0, 0];
                if cx.checks & CHECK_RACE != 0 {
                    race::reset(); // the blocks before have ended: their shadows go
                }
                if let Err(e) = run_block(cx, func, &mut scratch, cache, fresh) {
                    result = Err(e);
                    break 'grid;
                }
            }
        }
    }
    SCRATCH.with(|c| c.set(Some(scratch)));
    result
}

/// Runs one block to completion.
///
/// `fresh` (the launch's first block) initialises every thread's registers from the
/// kernel's template and zeroes local memory. Later blocks reuse them as they are:
/// constant registers are never written, and PTX leaves other registers and local
/// memory undefined until written, as the hardware does.
fn run_block(
    cx: &Ctx,
    f: &Func,
    s: &mut Scratch,
    cache: &mut RegionCache,
    fresh: bool,
) -> Result<(), LaunchError> {
    init_block(cx, f, &mut s.threads, &mut s.shared, fresh);
    let mut bars = [Bar::default(); 16];
    let mut live = cx.nthreads;
    let mut cb = ClusterBar::default();
    loop {
        let mut progress = match step_block(
            cx,
            cache,
            &mut s.threads,
            &mut s.shared,
            &mut bars,
            &mut live,
            &mut cb,
            &mut [],
        )? {
            Step::Done => return Ok(()),
            Step::Progress => true,
            Step::Stuck => false,
        };
        if release_cluster(&mut cb, live, &mut [&mut s.threads[..]]) {
            if cx.checks & CHECK_RACE != 0 {
                race::all_blocks();
            }
            progress = true;
        }
        if !progress {
            return Err(deadlock(cx, &s.threads));
        }
    }
}

/// Sets up the threads and shared memory of a block.
fn init_block(cx: &Ctx, f: &Func, threads: &mut Vec<Thread>, shared: &mut Vec<u8>, fresh: bool) {
    let n = cx.nthreads as usize;
    threads.truncate(n);
    threads.resize_with(n, Thread::default);
    let [bx, by, _] = cx.block;
    for (i, t) in threads.iter_mut().enumerate() {
        let i = i as u32;
        t.pc = f.entry;
        t.func = cx.kernel.func;
        t.status = Status::Ready;
        t.tid = [i % bx, (i / bx) % by, i / (bx * by)];
        t.lane = i % 32;
        t.warp = i / 32;
        t.reg_base = 0;
        t.stack_base = 0;
        t.carry = false;
        t.cluster_target = 0;
        if fresh {
            t.regs.clear();
            t.regs.extend_from_slice(&f.template);
            t.stack.clear();
            t.stack.resize(f.frame_bytes as usize, 0);
        }
        t.frames.clear();
    }
    shared.clear();
    let len = if cx.reserved_len > 0 {
        cx.reserved_smem + cx.reserved_len
    } else {
        cx.shared_bytes
    };
    shared.resize(len as usize, 0);
}

/// What one round of a block did.
enum Step {
    /// Every thread has exited.
    Done,
    /// Some thread ran or some barrier released.
    Progress,
    /// Every live thread waits (at a barrier nothing in the block can release).
    Stuck,
}

/// One round of a block: each ready thread runs until it stops, warp by warp (warp
/// collectives fire as their lanes arrive), then complete barriers release.
#[allow(clippy::too_many_arguments)]
fn step_block(
    cx: &Ctx,
    cache: &mut RegionCache,
    threads: &mut [Thread],
    shared: &mut [u8],
    bars: &mut [Bar; 16],
    live: &mut u32,
    cb: &mut ClusterBar,
    peers: &mut [Vec<u8>],
) -> Result<Step, LaunchError> {
    let n = threads.len();
    let nwarps = n.div_ceil(32);
    let mut progress = false;
    for w in 0..nwarps {
        let (lo, hi) = (w * 32, (w * 32 + 32).min(n));
        loop {
            for t in &mut threads[lo..hi] {
                if t.status != Status::Ready {
                    continue;
                }
                progress = true;
                let run = run_thread(cx, cache, t, shared, bars, cb, peers);
                let stop = match run {
                    Ok(stop) => stop,
                    Err(e) => {
                        report_fault(cx, t, shared.len(), &e);
                        return Err(e);
                    }
                };
                t.status = match stop {
                    Stop::Exit => {
                        *live -= 1;
                        Status::Exited
                    }
                    Stop::Barrier(b) => Status::Barrier(b),
                    Stop::Warp => Status::Warp,
                    Stop::Yield => Status::Ready,
                    Stop::ClusterWait => Status::ClusterWait,
                };
            }
            if !fire_warp(cx, &mut threads[lo..hi]) {
                break;
            }
            progress = true;
        }
    }
    if *live == 0 {
        return Ok(Step::Done);
    }
    if release_barriers(cx, threads, bars, *live) {
        progress = true;
    }
    Ok(if progress {
        Step::Progress
    } else {
        Step::Stuck
    })
}

/// Completes the cluster barrier's phase once every live thread of the cluster
/// (`live`, over the blocks `blocks`) has arrived, and wakes the threads waiting
/// for it. Returns whether it did.
fn release_cluster(cb: &mut ClusterBar, live: u32, blocks: &mut [&mut [Thread]]) -> bool {
    if cb.arrived == 0 || cb.arrived < live {
        return false;
    }
    cb.arrived = 0;
    cb.phase += 1;
    for t in blocks.iter_mut().flat_map(|b| b.iter_mut()) {
        if t.status == Status::ClusterWait && t.cluster_target <= cb.phase {
            t.pc += 1;
            t.status = Status::Ready;
        }
    }
    true
}

/// A resident block of an interleaved launch.
struct Resident {
    threads: Vec<Thread>,
    bars: [Bar; 16],
    live: u32,
    ctaid: [u32; 3],
    /// Index of its cluster in the group.
    cluster: usize,
}

/// Runs the grid with co-resident blocks: all of it (`cooperative`) or cluster by
/// cluster. The blocks of a group take rounds in turn; a round in which no block
/// of the group progressed and no cluster barrier released is a deadlock.
fn run_interleaved(
    cx: &mut Ctx,
    f: &Func,
    cache: &mut RegionCache,
    cooperative: bool,
) -> Result<(), LaunchError> {
    let [gx, gy, gz] = cx.grid;
    let [cx_, cy_, cz_] = cx.cluster;
    let (ncx, ncy, ncz) = (gx / cx_, gy / cy_, gz / cz_);
    let per_cluster = (cx_ * cy_ * cz_) as usize;
    let (ncx, ncy) = (u64::from(ncx), u64::from(ncy));
    let nclusters = ncx * ncy * u64::from(ncz);
    // The blocks of cluster `i` (clusters in linear order), made when needed: a
    // launch holds only its resident blocks (bounded by `resident_limit`).
    let cluster_blocks = |i: u64| -> Vec<[u32; 3]> {
        let (kx, ky, kz) = (
            (i % ncx) as u32,
            (i / ncx % ncy) as u32,
            (i / (ncx * ncy)) as u32,
        );
        let mut blocks = Vec::with_capacity(per_cluster);
        for z in 0..cz_ {
            for y in 0..cy_ {
                for x in 0..cx_ {
                    blocks.push([kx * cx_ + x, ky * cy_ + y, kz * cz_ + z]);
                }
            }
        }
        blocks
    };
    // A cooperative launch is one group of every cluster; otherwise each cluster is
    // a group of its own.
    let (ngroups, per_group) = if cooperative {
        (1, nclusters)
    } else {
        (nclusters, 1)
    };
    for g in 0..ngroups {
        let group: Vec<Vec<[u32; 3]>> = (g * per_group..(g + 1) * per_group)
            .map(cluster_blocks)
            .collect();
        // Block i's shared memory is shared[i]; the blocks of a cluster, in rank
        // order, are `per_cluster` consecutive ones (distributed shared memory).
        let mut blocks: Vec<Resident> = Vec::new();
        let mut shared: Vec<Vec<u8>> = Vec::new();
        for (ci, c) in group.iter().enumerate() {
            for &ctaid in c {
                let mut r = Resident {
                    threads: Vec::new(),
                    bars: [Bar::default(); 16],
                    live: cx.nthreads,
                    ctaid,
                    cluster: ci,
                };
                let mut s = Vec::new();
                cx.ctaid = ctaid;
                init_block(cx, f, &mut r.threads, &mut s, true);
                blocks.push(r);
                shared.push(s);
            }
        }
        let mut cbs = vec![ClusterBar::default(); group.len()];
        loop {
            let mut progress = false;
            let mut done = true;
            for (i, b) in blocks.iter_mut().enumerate().filter(|(_, b)| b.live > 0) {
                cx.ctaid = b.ctaid;
                let bad = || LaunchError::InvalidValue("cluster index out of range".into());
                let cb = cbs.get_mut(b.cluster).ok_or_else(bad)?;
                let first = b.cluster * per_cluster;
                let peers = shared.get_mut(first..first + per_cluster).ok_or_else(bad)?;
                let slot = peers.get_mut(i - first).ok_or_else(bad)?;
                // The block's own memory is taken out of the cluster's for the round
                // (an access to its own rank goes to `own`).
                let mut own = std::mem::take(slot);
                let step = step_block(
                    cx,
                    cache,
                    &mut b.threads,
                    &mut own,
                    &mut b.bars,
                    &mut b.live,
                    cb,
                    peers,
                );
                if let Some(slot) = peers.get_mut(i - first) {
                    *slot = own;
                }
                match step? {
                    Step::Done => progress = true,
                    Step::Progress => {
                        progress = true;
                        done = false;
                    }
                    Step::Stuck => done = false,
                }
            }
            if done {
                break;
            }
            // The blocks of cluster `ci` are `blocks[ci * per_cluster..][..per_cluster]`.
            for (cb, members) in cbs.iter_mut().zip(blocks.chunks_mut(per_cluster)) {
                if cb.arrived == 0 {
                    continue;
                }
                let live = members.iter().map(|b| b.live).sum();
                let mut threads: Vec<&mut [Thread]> =
                    members.iter_mut().map(|b| &mut b.threads[..]).collect();
                if release_cluster(cb, live, &mut threads) {
                    if cx.checks & CHECK_RACE != 0 {
                        race::all_blocks();
                    }
                    progress = true;
                }
            }
            if !progress {
                let stuck = blocks.iter().find(|b| b.live > 0);
                if let Some(b) = stuck {
                    cx.ctaid = b.ctaid;
                    return Err(deadlock(cx, &b.threads));
                }
                break;
            }
        }
    }
    Ok(())
}

fn deadlock(cx: &Ctx, threads: &[Thread]) -> LaunchError {
    let stuck: Vec<&Thread> = threads
        .iter()
        .filter(|t| t.status != Status::Exited)
        .collect();
    let line = stuck
        .first()
        .and_then(|t| cx.prog.lines.get(t.pc as usize))
        .copied()
        .unwrap_or(0);
    LaunchError::IllegalInstruction(format!(
        "deadlock in block ({}, {}, {}) of '{}': {} threads wait at barriers or warp collectives that can never complete (first at PTX line {line})",
        cx.ctaid[0],
        cx.ctaid[1],
        cx.ctaid[2],
        cx.kernel.name,
        stuck.len()
    ))
}

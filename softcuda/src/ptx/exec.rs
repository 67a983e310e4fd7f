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

use std::cell::Cell;
use std::io::Write;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU8, AtomicU16, AtomicU32, AtomicU64, Ordering, fence};
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use super::arith::{self, atom_apply, mask, sext};
use super::ir::{
    Addr, AtomOp, BarKind, BoolOp, Func, Inst, MemSpace, NO_REG, Op, Program, Reg, ShflMode, Sreg,
    Ty, VoteMode,
};
use super::printf;
use super::{DeviceMemory, Kernel, LaunchConfig, LaunchError, LaunchExtras, Module};

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
}

impl RegionCache {
    fn new() -> Self {
        RegionCache {
            ranges: [(1, 0); 4],
            next: 0,
            own: (1, 0),
        }
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
    };
    let mut cache = RegionCache::new();
    if ex.cooperative {
        cache.own = (ws_addr, ws_addr + 16);
    }
    if ex.cooperative || explicit.is_some() {
        return run_interleaved(&mut cx, func, &mut cache, ex.cooperative);
    }
    let mut scratch = SCRATCH.with(|c| c.take()).unwrap_or_default();
    let mut result = Ok(());
    'grid: for z in 0..cfg.grid[2] {
        for y in 0..cfg.grid[1] {
            for x in 0..cfg.grid[0] {
                cx.ctaid = [x, y, z];
                let fresh = [x, y, z] == [0, 0, 0];
                if let Err(e) = run_block(&cx, func, &mut scratch, &mut cache, fresh) {
                    result = Err(e);
                    break 'grid;
                }
            }
        }
    }
    SCRATCH.with(|c| c.set(Some(scratch)));
    result
}

/// Whether [`launch`] accepts the shape of `cfg` for `kernel`: non-zero dimensions
/// within the architectural limits, the block within `.maxntid`/`.reqntid`, and the
/// shared memory (static, aligned, plus dynamic) within what the interpreter
/// provides. The driver layer calls it before queuing a launch, so that a launch
/// the interpreter would refuse is refused at once.
pub fn check_launch(kernel: &Kernel, cfg: &LaunchConfig) -> Result<(), LaunchError> {
    check_config(kernel, cfg)?;
    if kernel.cluster_dims.is_some() {
        // `.explicitcluster` is checked where the launch's cluster shape is known.
        check_cluster(kernel, cfg, kernel.cluster_dims)?;
    }
    if kernel.local_bytes as usize > MAX_STACK {
        // The deepest chain of frames known before the launch (recursion aside)
        // cannot fit: refused now rather than failing, or allocating, at run time.
        return Err(LaunchError::OutOfResources(format!(
            "{} bytes of local memory per thread (at most {MAX_STACK})",
            kernel.local_bytes
        )));
    }
    let shared = u64::from(kernel.dyn_shared_offset) + u64::from(cfg.dynamic_shared_bytes);
    if shared > MAX_SHARED {
        return Err(LaunchError::OutOfResources(format!(
            "{shared} bytes of shared memory per block (at most {MAX_SHARED})"
        )));
    }
    Ok(())
}

/// The kernel's cluster directives against the launch's cluster shape `cluster`
/// (the launch's, else `.reqnctapercluster`): `.explicitcluster` needs one, a
/// `.reqnctapercluster` shape must be the one used, `.maxclusterrank` bounds its
/// size, and it must divide the grid.
pub fn check_cluster(
    k: &Kernel,
    cfg: &LaunchConfig,
    cluster: Option<[u32; 3]>,
) -> Result<(), LaunchError> {
    let Some(c) = cluster else {
        if k.explicit_cluster {
            return Err(LaunchError::InvalidValue(format!(
                "kernel '{}' is .explicitcluster: the launch needs a cluster shape",
                k.name
            )));
        }
        return Ok(());
    };
    if k.cluster_dims.is_some_and(|r| r != c) {
        return Err(LaunchError::InvalidValue(format!(
            "cluster {c:?} differs from the kernel's .reqnctapercluster {:?}",
            k.cluster_dims
        )));
    }
    let size = wide_product(c);
    if size > MAX_CLUSTER {
        return Err(LaunchError::InvalidValue(format!(
            "cluster of {size} blocks (at most {MAX_CLUSTER})"
        )));
    }
    if k.max_cluster_rank.is_some_and(|m| size > u64::from(m)) {
        return Err(LaunchError::InvalidValue(format!(
            "cluster of {size} blocks exceeds the kernel's .maxclusterrank"
        )));
    }
    if c.contains(&0) || (0..3).any(|i| !cfg.grid[i].is_multiple_of(c[i])) {
        return Err(LaunchError::InvalidValue(format!(
            "cluster {c:?} does not divide the grid {:?}",
            cfg.grid
        )));
    }
    Ok(())
}

fn check_config(k: &Kernel, cfg: &LaunchConfig) -> Result<(), LaunchError> {
    let [bx, by, bz] = cfg.block;
    let [gx, gy, gz] = cfg.grid;
    if bx == 0 || by == 0 || bz == 0 || gx == 0 || gy == 0 || gz == 0 {
        return Err(LaunchError::InvalidValue(
            "grid and block dimensions must be non-zero".into(),
        ));
    }
    if bx > 1024 || by > 1024 || bz > 64 {
        return Err(LaunchError::InvalidValue(format!(
            "block {bx}x{by}x{bz} exceeds 1024x1024x64"
        )));
    }
    let threads = u64::from(bx) * u64::from(by) * u64::from(bz);
    if threads > 1024 {
        return Err(LaunchError::InvalidValue(format!(
            "{threads} threads per block (at most 1024)"
        )));
    }
    if gx > i32::MAX as u32 || gy > 65535 || gz > 65535 {
        return Err(LaunchError::InvalidValue(format!(
            "grid {gx}x{gy}x{gz} too large"
        )));
    }
    if let Some(r) = k.reqntid
        && r != cfg.block
    {
        return Err(LaunchError::InvalidValue(format!(
            "block {bx}x{by}x{bz} differs from .reqntid {}x{}x{}",
            r[0], r[1], r[2]
        )));
    }
    if let Some(m) = k.max_threads_per_block
        && threads > u64::from(m)
    {
        return Err(LaunchError::OutOfResources(format!(
            "{threads} threads per block, kernel allows {m}"
        )));
    }
    Ok(())
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
                t.status = match run_thread(cx, cache, t, shared, bars, cb, peers)? {
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

/// Releases every barrier whose arrivals are complete. Returns whether any was.
fn release_barriers(cx: &Ctx, threads: &mut [Thread], bars: &mut [Bar; 16], live: u32) -> bool {
    let mut any = false;
    for (id, bar) in bars.iter_mut().enumerate() {
        let b = *bar;
        if b.waiting == 0 || !((b.count > 0 && b.arrived >= b.count) || b.waiting >= live) {
            continue;
        }
        for t in threads.iter_mut() {
            if t.status != Status::Barrier(id as u8) {
                continue;
            }
            if let Some(Inst {
                op: Op::Bar { kind, d, .. },
                ..
            }) = cx.code.get(t.pc as usize)
            {
                let v = match kind {
                    BarKind::RedPopc => Some(u64::from(b.ptrue)),
                    BarKind::RedAnd => Some(u64::from(b.ptrue == b.nred)),
                    BarKind::RedOr => Some(u64::from(b.ptrue > 0)),
                    _ => None,
                };
                if let Some(v) = v {
                    t.set(*d, v);
                }
            }
            t.pc += 1;
            t.status = Status::Ready;
        }
        *bar = Bar::default();
        any = true;
    }
    any
}

/// What a lane waiting at a warp collective waits for: the kind of collective and
/// its member mask (the lane itself included). Lanes match when both are equal.
fn collective_key(cx: &Ctx, t: &Thread, lane: usize) -> Option<(u8, u32)> {
    let (kind, mask) = match cx.code.get(t.pc as usize).map(|i| &i.op)? {
        Op::Shfl { mask, .. } => (0, *mask),
        Op::Vote { mask, .. } => (1, *mask),
        Op::Redux { mask, .. } => (2, *mask),
        Op::MatchAny { mask, .. } | Op::MatchAll { mask, .. } => (3, *mask),
        Op::WarpSync { mask } => (4, *mask),
        _ => return None,
    };
    Some((kind, (t.reg(mask) as u32) | (1 << lane)))
}

/// Evaluates the warp collectives whose member lanes have all arrived. Returns
/// whether any was evaluated.
///
/// A group is the set of lanes waiting at the same kind of collective with the same
/// member mask (PTX pairs `shfl.sync` and friends by mask, not by instruction); it
/// fires once every live lane of the mask is in it. `activemask` instead groups the
/// lanes waiting at the same instruction: they are the ones that are converged.
fn fire_warp(cx: &Ctx, lanes: &mut [Thread]) -> bool {
    let mut live = 0u32;
    let mut keys: [Option<(u8, u32)>; 32] = [None; 32];
    let mut any_waiting = false;
    for (l, t) in lanes.iter().enumerate() {
        if t.status != Status::Exited {
            live |= 1 << l;
        }
        if t.status == Status::Warp {
            any_waiting = true;
            keys[l] = collective_key(cx, t, l);
        }
    }
    if !any_waiting {
        return false;
    }
    let mut done = 0u32;
    for l in 0..lanes.len() {
        let bit = 1u32 << l;
        if lanes[l].status != Status::Warp || done & bit != 0 {
            continue;
        }
        let pc = lanes[l].pc;
        let group = match keys[l] {
            Some(key) => {
                let same = (0..lanes.len())
                    .filter(|&k| keys[k] == Some(key))
                    .fold(0u32, |g, k| g | (1 << k));
                if key.1 & live & !same != 0 {
                    continue;
                }
                same
            }
            None => (0..lanes.len())
                .filter(|&k| lanes[k].status == Status::Warp && lanes[k].pc == pc)
                .fold(0u32, |g, k| g | (1 << k)),
        };
        let group = group & !done;
        eval_collective(cx, lanes, group);
        done |= group;
    }
    done != 0
}

/// Evaluates the collectives of the lanes in `group` together, each with its own
/// operation, then moves them past it.
fn eval_collective(cx: &Ctx, lanes: &mut [Thread], group: u32) {
    let mut val = [0u64; 32];
    for (l, t) in lanes.iter().enumerate() {
        if group & (1 << l) == 0 {
            continue;
        }
        val[l] = match cx.code.get(t.pc as usize).map(|i| &i.op) {
            Some(Op::Shfl { a, .. } | Op::Redux { a, .. }) => t.reg(*a) & 0xffff_ffff,
            Some(Op::Vote { a, .. }) => t.reg(*a) & 1,
            Some(Op::MatchAny { a, bits64, .. } | Op::MatchAll { a, bits64, .. }) => {
                t.reg(*a) & if *bits64 { u64::MAX } else { 0xffff_ffff }
            }
            _ => 0,
        };
    }
    let ballot = (0..32)
        .filter(|&l| group & (1 << l) != 0 && val[l] != 0)
        .fold(0u32, |b, l| b | (1 << l));
    for (l, t) in lanes.iter_mut().enumerate() {
        if group & (1 << l) == 0 {
            continue;
        }
        match cx.code.get(t.pc as usize).map(|i| &i.op) {
            Some(&Op::Shfl {
                mode, d, p, b, c, ..
            }) => {
                let lane = l as i32;
                let bval = (t.reg(b) & 0x1f) as i32;
                let cv = t.reg(c);
                let seg = ((cv >> 8) & 0x1f) as i32;
                let clamp = (cv & 0x1f) as i32;
                let max_lane = (lane & seg) | (clamp & !seg);
                let min_lane = lane & seg;
                let (j, ok) = match mode {
                    ShflMode::Up => (lane - bval, lane - bval >= max_lane),
                    ShflMode::Down => (lane + bval, lane + bval <= max_lane),
                    ShflMode::Bfly => (lane ^ bval, (lane ^ bval) <= max_lane),
                    ShflMode::Idx => {
                        let j = min_lane | (bval & !seg);
                        (j, j <= max_lane)
                    }
                };
                let j = if ok && (0..32).contains(&j) && group & (1 << j) != 0 {
                    j as usize
                } else {
                    l
                };
                t.set(d, val[j]);
                if p != NO_REG {
                    t.set(p, u64::from(ok));
                }
            }
            Some(&Op::Vote { mode, d, .. }) => {
                let v = match mode {
                    VoteMode::All => u64::from(ballot == group),
                    VoteMode::Any => u64::from(ballot != 0),
                    VoteMode::Uni => u64::from(ballot == 0 || ballot == group),
                    VoteMode::Ballot => u64::from(ballot),
                };
                t.set(d, v);
            }
            Some(&Op::Activemask { d }) => t.set(d, u64::from(group)),
            Some(&Op::Redux { op, signed, d, .. }) => {
                let mut acc: Option<u64> = None;
                for (k, &v) in val.iter().enumerate() {
                    if group & (1 << k) != 0 {
                        acc = Some(acc.map_or(v, |x| arith::redux(op, signed, x, v)));
                    }
                }
                t.set(d, acc.unwrap_or(0));
            }
            Some(&Op::MatchAny { d, .. }) => {
                let m = (0..32)
                    .filter(|&k| group & (1 << k) != 0 && val[k] == val[l])
                    .fold(0u32, |b, k| b | (1 << k));
                t.set(d, u64::from(m));
            }
            Some(&Op::MatchAll { d, p, .. }) => {
                let same = (0..32).all(|k| group & (1 << k) == 0 || val[k] == val[l]);
                t.set(d, if same { u64::from(group) } else { 0 });
                if p != NO_REG {
                    t.set(p, u64::from(same));
                }
            }
            _ => {}
        }
        t.pc += 1;
        t.status = Status::Ready;
    }
}

fn clock() -> u64 {
    static START: OnceLock<Instant> = OnceLock::new();
    START.get_or_init(Instant::now).elapsed().as_nanos() as u64
}

fn globaltimer() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64)
}

/// Splits an address of `space` into its real space and offset (generic addresses
/// by their window; space addresses given in generic form are accepted too).
#[inline(always)]
fn resolve(space: MemSpace, addr: u64) -> (MemSpace, u64) {
    let win = addr & WIN_MASK;
    match space {
        MemSpace::Generic => match win {
            SHARED_WIN => (MemSpace::Shared, addr - SHARED_WIN),
            LOCAL_WIN => (MemSpace::Local, addr - LOCAL_WIN),
            PARAM_WIN => (MemSpace::KParam, addr - PARAM_WIN),
            _ => (MemSpace::Global, addr),
        },
        MemSpace::Shared if win == SHARED_WIN => (space, addr - SHARED_WIN),
        MemSpace::Local if win == LOCAL_WIN => (space, addr - LOCAL_WIN),
        MemSpace::KParam if win == PARAM_WIN => (space, addr - PARAM_WIN),
        _ => (space, addr),
    }
}

/// Checks an access of `len` bytes (a power of two) at `addr` and says where it goes.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn locate(
    cx: &Ctx,
    cache: &mut RegionCache,
    stack_len: usize,
    shared_len: usize,
    peers: &[Vec<u8>],
    space: MemSpace,
    addr: u64,
    len: u32,
) -> Result<Loc, LaunchError> {
    let len64 = u64::from(len);
    if addr & (len64 - 1) != 0 {
        return Err(LaunchError::MisalignedAddress { addr });
    }
    let bad = LaunchError::IllegalAddress { addr, len: len64 };
    let (sp, a) = resolve(space, addr);
    let within = |size: usize| a.checked_add(len64).is_some_and(|end| end <= size as u64);
    match sp {
        MemSpace::Shared if within(shared_len) => Ok(Loc::Shared(a as usize)),
        MemSpace::Local if within(stack_len) => Ok(Loc::Local(a as usize)),
        MemSpace::KParam if within(cx.params.len()) => Ok(Loc::Param(a as usize)),
        MemSpace::Global | MemSpace::Const | MemSpace::Generic if cache.check(cx.mem, a, len64) => {
            Ok(Loc::Host(a))
        }
        MemSpace::Shared if a >> 24 != 0 => peer(cx, peers, shared_len, a, len64).ok_or(bad),
        _ => Err(bad),
    }
}

/// A cluster address (`mapa`): rank + 1 in bits 24.., the offset below.
const CLUSTER_RANK_SHIFT: u32 = 24;

/// The rank `mapa` gives an address of a block outside the cluster: above any
/// cluster's (at most `MAX_CLUSTER` blocks), and `+ 1` still fits the 8 bits above
/// `CLUSTER_RANK_SHIFT` of a 32-bit shared address.
const POISON_RANK: u64 = 0xfe;

/// The blocks of the running block's cluster (1 without a cluster).
fn own_cluster_size(cx: &Ctx) -> u64 {
    cx.cluster.iter().map(|&d| u64::from(d.max(1))).product()
}

/// The block's rank in its cluster.
fn own_rank(cx: &Ctx) -> u64 {
    let [x, y, z] = [0, 1, 2].map(|i| cx.ctaid[i] % cx.cluster[i].max(1));
    u64::from(x + cx.cluster[0] * (y + cx.cluster[1] * z))
}

/// Where a cluster shared-memory address goes: the block's own memory or a peer's.
#[cold]
fn peer(cx: &Ctx, peers: &[Vec<u8>], shared_len: usize, a: u64, len: u64) -> Option<Loc> {
    let rank = (a >> CLUSTER_RANK_SHIFT).checked_sub(1)?;
    let off = a & ((1 << CLUSTER_RANK_SHIFT) - 1);
    let end = off.checked_add(len)?;
    if rank == own_rank(cx) {
        return (end <= shared_len as u64).then_some(Loc::Shared(off as usize));
    }
    let buf = peers.get(usize::try_from(rank).ok()?)?;
    (end <= buf.len() as u64).then_some(Loc::Peer(rank as usize, off as usize))
}

#[inline(always)]
fn rd(s: &[u8], off: usize, size: u32) -> u64 {
    let mut b = [0u8; 8];
    let n = size as usize;
    if let Some(src) = s.get(off..off + n) {
        b[..n].copy_from_slice(src);
    }
    u64::from_le_bytes(b)
}

#[inline(always)]
fn wr(s: &mut [u8], off: usize, size: u32, v: u64) {
    let n = size as usize;
    if let Some(dst) = s.get_mut(off..off + n) {
        dst.copy_from_slice(&v.to_le_bytes()[..n]);
    }
}

// SAFETY (the four host-memory functions below): `locate` has checked, through the
// driver's `DeviceMemory`, that [addr, addr+size) is accessible memory that stays
// allocated until the launch ends (the trait's contract: softcuda's driver makes
// every free wait for running launches, see its `devmem` module), and that `addr` is
// aligned to `size` (1, 2, 4 or 8), the
// size and alignment of the atomic type used. Accessing it through atomics keeps
// concurrent kernels on other host threads free of data races.

#[inline(always)]
fn host_read(addr: u64, size: u32) -> u64 {
    match size {
        // SAFETY: see above.
        1 => u64::from(unsafe { AtomicU8::from_ptr(addr as *mut u8) }.load(Ordering::Relaxed)),
        // SAFETY: see above.
        2 => u64::from(unsafe { AtomicU16::from_ptr(addr as *mut u16) }.load(Ordering::Relaxed)),
        // SAFETY: see above.
        4 => u64::from(unsafe { AtomicU32::from_ptr(addr as *mut u32) }.load(Ordering::Relaxed)),
        // SAFETY: see above.
        _ => unsafe { AtomicU64::from_ptr(addr as *mut u64) }.load(Ordering::Relaxed),
    }
}

#[inline(always)]
fn host_write(addr: u64, size: u32, v: u64) {
    match size {
        // SAFETY: see above.
        1 => unsafe { AtomicU8::from_ptr(addr as *mut u8) }.store(v as u8, Ordering::Relaxed),
        // SAFETY: see above.
        2 => unsafe { AtomicU16::from_ptr(addr as *mut u16) }.store(v as u16, Ordering::Relaxed),
        // SAFETY: see above.
        4 => unsafe { AtomicU32::from_ptr(addr as *mut u32) }.store(v as u32, Ordering::Relaxed),
        // SAFETY: see above.
        _ => unsafe { AtomicU64::from_ptr(addr as *mut u64) }.store(v, Ordering::Relaxed),
    }
}

/// A read-modify-write on host memory (4 or 8 bytes); returns the old value.
fn host_atomic(addr: u64, size: u32, op: AtomOp, ty: Ty, b: u64, c: u64) -> u64 {
    if size == 4 {
        // SAFETY: see above.
        let a = unsafe { AtomicU32::from_ptr(addr as *mut u32) };
        let mut old = a.load(Ordering::Relaxed);
        loop {
            let new = atom_apply(op, ty, u64::from(old), b, c) as u32;
            match a.compare_exchange_weak(old, new, Ordering::AcqRel, Ordering::Relaxed) {
                Ok(_) => return u64::from(old),
                Err(x) => old = x,
            }
        }
    } else {
        // SAFETY: see above.
        let a = unsafe { AtomicU64::from_ptr(addr as *mut u64) };
        let mut old = a.load(Ordering::Relaxed);
        loop {
            let new = atom_apply(op, ty, old, b, c);
            match a.compare_exchange_weak(old, new, Ordering::AcqRel, Ordering::Relaxed) {
                Ok(_) => return old,
                Err(x) => old = x,
            }
        }
    }
}

#[inline(always)]
fn read(
    cx: &Ctx,
    loc: Loc,
    stack: &[u8],
    shared: &[u8],
    peers: &[Vec<u8>],
    off: u32,
    size: u32,
) -> u64 {
    match loc {
        Loc::Host(a) => host_read(a + u64::from(off), size),
        Loc::Shared(a) => rd(shared, a + off as usize, size),
        Loc::Peer(r, a) => peers.get(r).map_or(0, |p| rd(p, a + off as usize, size)),
        Loc::Local(a) => rd(stack, a + off as usize, size),
        Loc::Param(a) => rd(cx.params, a + off as usize, size),
    }
}

/// Sign-extends a loaded value of type `ty` to a destination register of `dbits`.
#[inline(always)]
fn extend(v: u64, ty: Ty, dbits: u8) -> u64 {
    let dbits = u32::from(dbits);
    if ty.is_signed() && ty.bits() < dbits {
        (sext(v, ty.bits()) as u64) & mask(dbits)
    } else {
        v
    }
}

#[inline(always)]
fn addr_value(cx: &Ctx, t: &Thread, base: usize, a: &Addr) -> u64 {
    match *a {
        Addr::Reg(r, off) => t.regs[base + r as usize].wrapping_add(off as i64 as u64),
        Addr::Frame(off) => u64::from(t.stack_base) + u64::from(off),
        Addr::Global(i, off) => cx
            .gaddrs
            .get(i as usize)
            .copied()
            .unwrap_or(0)
            .wrapping_add(off as i64 as u64),
        Addr::Shared(i, off) => {
            let base = cx
                .kernel
                .shared_offsets
                .get(i as usize)
                .copied()
                .unwrap_or(u32::MAX);
            u64::from(base).wrapping_add(off as i64 as u64)
        }
        Addr::Abs(v) => u64::from(v),
    }
}

fn special(cx: &Ctx, t: &Thread, sr: Sreg) -> u64 {
    let lane = t.lane;
    let k = |d: u8| usize::from(d.min(2));
    match sr {
        Sreg::Tid(d) => u64::from(t.tid[k(d)]),
        Sreg::Ntid(d) => u64::from(cx.block[k(d)]),
        Sreg::Ctaid(d) => u64::from(cx.ctaid[k(d)]),
        Sreg::Nctaid(d) => u64::from(cx.grid[k(d)]),
        Sreg::LaneId => u64::from(lane),
        Sreg::WarpId => u64::from(t.warp),
        Sreg::NWarpId => u64::from(cx.nthreads.div_ceil(32)),
        Sreg::SmId => 0,
        Sreg::NSmId => 1,
        Sreg::GridId => cx.gridid,
        Sreg::Clock => clock() & 0xffff_ffff,
        Sreg::ClockHi => clock() >> 32,
        Sreg::Clock64 => clock(),
        Sreg::GlobalTimer => globaltimer(),
        Sreg::GlobalTimerLo => globaltimer() & 0xffff_ffff,
        Sreg::GlobalTimerHi => globaltimer() >> 32,
        Sreg::LanemaskEq => 1 << lane,
        Sreg::LanemaskLe => (2u64 << lane) - 1,
        Sreg::LanemaskLt => (1u64 << lane) - 1,
        Sreg::LanemaskGe => !((1u64 << lane) - 1) & 0xffff_ffff,
        Sreg::LanemaskGt => !((2u64 << lane) - 1) & 0xffff_ffff,
        Sreg::DynSmem => u64::from(cx.dyn_bytes),
        Sreg::TotalSmem => u64::from(cx.shared_bytes),
        Sreg::ClusterId(d) => u64::from(cx.ctaid[k(d)] / cx.cluster[k(d)]),
        Sreg::NClusterId(d) => u64::from(cx.grid[k(d)] / cx.cluster[k(d)]),
        Sreg::ClusterCtaid(d) => u64::from(cx.ctaid[k(d)] % cx.cluster[k(d)]),
        Sreg::ClusterNctaid(d) => u64::from(cx.cluster[k(d)]),
        Sreg::ClusterCtarank => {
            let [x, y, z] = [0, 1, 2].map(|i| cx.ctaid[i] % cx.cluster[i]);
            u64::from(x + cx.cluster[0] * (y + cx.cluster[1] * z))
        }
        Sreg::ClusterNctarank => u64::from(cx.cluster[0] * cx.cluster[1] * cx.cluster[2]),
        Sreg::IsExplicitCluster => u64::from(cx.explicit_cluster),
        // driver_abi.h: load_env_reg64<1, 2>, high word in %envreg1.
        Sreg::EnvReg(1) => cx.workspace >> 32,
        Sreg::EnvReg(2) => cx.workspace & 0xffff_ffff,
        Sreg::EnvReg(_) => 0,
        Sreg::ReservedSmem(w) => u64::from(match w {
            0 | 3 => cx.reserved_smem,
            1 => cx.reserved_smem + RESERVED_SMEM,
            2 => RESERVED_SMEM,
            _ => cx.reserved_smem + 16,
        }),
    }
}

/// Device memory as `printf` reads it: arguments from the buffer at `args`, strings
/// at generic addresses.
struct PrintfSource<'a, 'b> {
    cx: &'a Ctx<'b>,
    cache: &'a mut RegionCache,
    stack: &'a [u8],
    shared: &'a [u8],
    args: u64,
    pos: u64,
    err: Option<LaunchError>,
}

impl PrintfSource<'_, '_> {
    fn load(&mut self, addr: u64, size: u32) -> Option<u64> {
        let (stack, shared) = (self.stack, self.shared);
        match locate(
            self.cx,
            self.cache,
            stack.len(),
            shared.len(),
            &[],
            MemSpace::Generic,
            addr,
            size,
        ) {
            Ok(loc) => Some(read(self.cx, loc, stack, shared, &[], 0, size)),
            Err(e) => {
                self.err = Some(e);
                None
            }
        }
    }
}

impl printf::Source for PrintfSource<'_, '_> {
    fn arg(&mut self, size: u32) -> Option<u64> {
        self.pos = self.pos.next_multiple_of(u64::from(size));
        let v = self.load(self.args.wrapping_add(self.pos), size)?;
        self.pos += u64::from(size);
        Some(v)
    }

    fn string(&mut self, addr: u64, max: usize) -> Option<Vec<u8>> {
        let mut s = Vec::new();
        while s.len() < max {
            match self.load(addr.wrapping_add(s.len() as u64), 1)? as u8 {
                0 => break,
                c => s.push(c),
            }
        }
        Some(s)
    }
}

/// `vprintf(format, args)`: prints, returns the number of arguments used.
fn device_printf(
    cx: &Ctx,
    cache: &mut RegionCache,
    t: &Thread,
    shared: &[u8],
    site: u32,
) -> Result<i32, LaunchError> {
    let Some(cs) = cx.prog.calls.get(site as usize) else {
        return Err(LaunchError::IllegalInstruction("bad call site".into()));
    };
    let sb = t.stack_base as usize;
    let arg = |k: usize| {
        cs.args
            .get(k)
            .map_or(0, |&(off, _)| rd(&t.stack, sb + off as usize, 8))
    };
    let (fmt_addr, args) = (arg(0), arg(1));
    if fmt_addr == 0 {
        return Ok(-1);
    }
    let mut src = PrintfSource {
        cx,
        cache,
        stack: &t.stack,
        shared,
        args,
        pos: 0,
        err: None,
    };
    let formatted = printf::Source::string(&mut src, fmt_addr, 1 << 16)
        .and_then(|f| printf::format(&f, &mut src));
    match (formatted, src.err) {
        (Some((text, n)), _) => {
            let mut out = std::io::stdout().lock();
            // Output errors (a closed stdout) must not fail the kernel.
            let _ = out.write_all(&text).and_then(|()| out.flush());
            Ok(n)
        }
        (None, Some(e)) => Err(e),
        (None, None) => Ok(-2),
    }
}

/// Runs one thread until it exits or stops at a barrier or warp collective.
fn run_thread(
    cx: &Ctx,
    cache: &mut RegionCache,
    t: &mut Thread,
    shared: &mut [u8],
    bars: &mut [Bar; 16],
    cb: &mut ClusterBar,
    peers: &mut [Vec<u8>],
) -> Result<Stop, LaunchError> {
    let code = cx.code;
    let mut budget = YIELD_AFTER;
    let funcs = &cx.prog.funcs;
    let mut pc = t.pc as usize;
    let mut base = t.reg_base as usize;
    macro_rules! r {
        ($x:expr) => {
            t.regs[base + $x as usize]
        };
    }
    // Where `len` bytes at `addr` of `space` are, for this thread.
    macro_rules! locate {
        ($space:expr, $addr:expr, $len:expr) => {
            locate(
                cx,
                cache,
                t.stack.len(),
                shared.len(),
                peers,
                $space,
                $addr,
                $len,
            )
        };
    }
    // Saves the position and stops.
    macro_rules! stop {
        ($s:expr) => {{
            t.pc = pc as u32;
            t.reg_base = base as u32;
            return Ok($s);
        }};
    }
    loop {
        let Some(inst) = code.get(pc) else {
            return Err(LaunchError::IllegalInstruction(format!(
                "jump outside the code (operation {pc})"
            )));
        };
        if inst.guard != NO_REG && (r!(inst.guard) != 0) == inst.neg {
            pc += 1;
            continue;
        }
        match &inst.op {
            Op::Nop => {}
            &Op::Mov { d, a, bits } => r!(d) = r!(a) & mask(u32::from(bits)),
            &Op::Special { d, sr } => r!(d) = special(cx, t, sr),
            Op::AddrOf {
                d,
                a,
                space,
                generic,
                bits32,
            } => {
                let mut v = addr_value(cx, t, base, a);
                if *generic {
                    v = v.wrapping_add(match space {
                        MemSpace::Shared => SHARED_WIN,
                        MemSpace::Local => LOCAL_WIN,
                        MemSpace::KParam => PARAM_WIN,
                        _ => 0,
                    });
                }
                r!(*d) = if *bits32 { v & 0xffff_ffff } else { v };
            }
            &Op::Pack { d, parts, n, bits } => {
                let mut v = 0u64;
                for (k, &p) in parts.iter().take(usize::from(n)).enumerate() {
                    v |= (r!(p) & mask(u32::from(bits))) << (k as u32 * u32::from(bits));
                }
                r!(d) = v;
            }
            &Op::Unpack { d, n, bits, a } => {
                let v = r!(a);
                for (k, &x) in d.iter().take(usize::from(n)).enumerate() {
                    r!(x) = (v >> (k as u32 * u32::from(bits))) & mask(u32::from(bits));
                }
            }
            &Op::Int { op, ty, d, a, b } => {
                r!(d) = arith::int_bin(op, ty, r!(a), r!(b), &mut t.carry);
            }
            &Op::IntUn { op, ty, d, a } => r!(d) = arith::int_un(op, ty, r!(a)),
            &Op::Int3 { op, ty, d, a, b, c } => r!(d) = arith::int3(op, ty, r!(a), r!(b), r!(c)),
            &Op::Bfi {
                bits,
                d,
                a,
                b,
                pos,
                len,
            } => {
                r!(d) = arith::bfi(u32::from(bits), r!(a), r!(b), r!(pos), r!(len));
            }
            &Op::Prmt { d, a, b, c } => r!(d) = arith::prmt(r!(a), r!(b), r!(c)),
            &Op::Shf {
                left,
                clamp,
                d,
                a,
                b,
                c,
            } => r!(d) = arith::shf(left, clamp, r!(a), r!(b), r!(c)),
            &Op::Lop3 { d, a, b, c, lut } => r!(d) = arith::lop3(r!(a), r!(b), r!(c), lut),
            &Op::Float {
                op,
                f64,
                ftz,
                sat,
                d,
                a,
                b,
            } => {
                r!(d) = arith::float_bin(op, f64, ftz, sat, r!(a), r!(b));
            }
            &Op::FloatUn {
                op,
                f64,
                ftz,
                sat,
                d,
                a,
            } => r!(d) = arith::float_un(op, f64, ftz, sat, r!(a)),
            &Op::Fma {
                f64,
                ftz,
                sat,
                d,
                a,
                b,
                c,
            } => r!(d) = arith::fma(f64, ftz, sat, r!(a), r!(b), r!(c)),
            &Op::FloatDir {
                op,
                f64,
                ftz,
                sat,
                rnd,
                d,
                a,
                b,
            } => {
                r!(d) = arith::float_dir(op, f64, ftz, sat, rnd, r!(a), r!(b));
            }
            &Op::Fma32Dir {
                ftz,
                sat,
                rnd,
                d,
                a,
                b,
                c,
            } => {
                r!(d) = arith::fma32_dir(ftz, sat, rnd, r!(a), r!(b), r!(c));
            }
            &Op::MadCc {
                mode,
                ty,
                d,
                a,
                b,
                c,
            } => {
                r!(d) = arith::mad_cc(mode, ty, r!(a), r!(b), r!(c), &mut t.carry);
            }
            &Op::Testp { t: tp, f64, d, a } => r!(d) = u64::from(arith::testp(tp, f64, r!(a))),
            &Op::Setp {
                cmp,
                ty,
                ftz,
                bop,
                p,
                q,
                a,
                b,
                c,
            } => {
                let x = arith::compare(cmp, ty, ftz, r!(a), r!(b));
                let (v, w) = match bop {
                    BoolOp::None => (x, !x),
                    BoolOp::And => (x && r!(c) != 0, !x && r!(c) != 0),
                    BoolOp::Or => (x || r!(c) != 0, !x || r!(c) != 0),
                    BoolOp::Xor => (x ^ (r!(c) != 0), !x ^ (r!(c) != 0)),
                };
                r!(p) = u64::from(v);
                if q != NO_REG {
                    r!(q) = u64::from(w);
                }
            }
            &Op::Selp { d, a, b, c } => r!(d) = if r!(c) != 0 { r!(a) } else { r!(b) },
            &Op::Ext {
                d,
                a,
                from,
                signed,
                to,
            } => {
                let v = if signed {
                    sext(r!(a), u32::from(from)) as u64
                } else {
                    r!(a) & mask(u32::from(from))
                };
                r!(d) = v & mask(u32::from(to));
            }
            &Op::Cvt {
                dty,
                sty,
                rnd,
                sat,
                ftz,
                dbits,
                d,
                a,
            } => {
                r!(d) = arith::cvt(dty, sty, rnd, sat, ftz, u32::from(dbits), r!(a));
            }
            &Op::Cvta {
                to,
                space,
                bits32,
                d,
                a,
            } => {
                let v = r!(a);
                let win = match space {
                    MemSpace::Shared => SHARED_WIN,
                    MemSpace::Local => LOCAL_WIN,
                    MemSpace::KParam => PARAM_WIN,
                    _ => 0,
                };
                let out = if win == 0 {
                    v
                } else if to {
                    if v & WIN_MASK == win { v - win } else { v }
                } else {
                    v.wrapping_add(win)
                };
                r!(d) = if bits32 { out & 0xffff_ffff } else { out };
            }
            &Op::Isspacep { space, d, a } => {
                let win = r!(a) & WIN_MASK;
                r!(d) = u64::from(match space {
                    MemSpace::Shared => win == SHARED_WIN,
                    MemSpace::Local => win == LOCAL_WIN,
                    MemSpace::KParam => win == PARAM_WIN,
                    MemSpace::Global => !matches!(win, SHARED_WIN | LOCAL_WIN | PARAM_WIN),
                    _ => false,
                });
            }
            Op::Ld {
                space,
                ty,
                n,
                dbits,
                d,
                a,
            } => {
                let addr = addr_value(cx, t, base, a);
                let size = ty.bytes();
                let loc = locate!(*space, addr, size * u32::from(*n))?;
                for (k, &x) in d.iter().take(usize::from(*n)).enumerate() {
                    let v = read(cx, loc, &t.stack, shared, peers, k as u32 * size, size);
                    r!(x) = extend(v, *ty, *dbits);
                }
            }
            Op::St { space, ty, n, s, a } => {
                let addr = addr_value(cx, t, base, a);
                let size = ty.bytes();
                let loc = locate!(*space, addr, size * u32::from(*n))?;
                for (k, &x) in s.iter().take(usize::from(*n)).enumerate() {
                    let v = r!(x);
                    let off = k as u32 * size;
                    match loc {
                        Loc::Host(h) => host_write(h + u64::from(off), size, v),
                        Loc::Shared(o) => wr(shared, o + off as usize, size, v),
                        Loc::Peer(r, o) => {
                            if let Some(p) = peers.get_mut(r) {
                                wr(p, o + off as usize, size, v);
                            }
                        }
                        Loc::Local(o) => wr(&mut t.stack, o + off as usize, size, v),
                        Loc::Param(_) => {
                            return Err(LaunchError::IllegalAddress {
                                addr,
                                len: u64::from(size),
                            });
                        }
                    }
                }
            }
            Op::Atom {
                space,
                op,
                ty,
                d,
                a,
                b,
                c,
            } => {
                let addr = addr_value(cx, t, base, a);
                let size = ty.bytes();
                let loc = locate!(*space, addr, size)?;
                let bv = r!(*b);
                let cv = if *c == NO_REG { 0 } else { r!(*c) };
                let old = match loc {
                    Loc::Host(h) => host_atomic(h, size, *op, *ty, bv, cv),
                    Loc::Shared(o) => {
                        let old = rd(shared, o, size);
                        wr(shared, o, size, atom_apply(*op, *ty, old, bv, cv));
                        old
                    }
                    Loc::Peer(r, o) => match peers.get_mut(r) {
                        Some(p) => {
                            let old = rd(p, o, size);
                            wr(p, o, size, atom_apply(*op, *ty, old, bv, cv));
                            old
                        }
                        None => 0,
                    },
                    Loc::Local(o) => {
                        let old = rd(&t.stack, o, size);
                        wr(&mut t.stack, o, size, atom_apply(*op, *ty, old, bv, cv));
                        old
                    }
                    Loc::Param(_) => {
                        return Err(LaunchError::IllegalAddress {
                            addr,
                            len: u64::from(size),
                        });
                    }
                };
                if *d != NO_REG {
                    r!(*d) = old;
                }
            }
            &Op::Bra { target } => {
                let back = target as usize <= pc;
                pc = target as usize;
                if back {
                    budget -= 1;
                    if budget == 0 {
                        stop!(Stop::Yield);
                    }
                }
                continue;
            }
            &Op::Call { site } => {
                let Some(cs) = cx.prog.calls.get(site as usize) else {
                    return Err(LaunchError::IllegalInstruction("bad call site".into()));
                };
                let callee = &funcs[cs.func as usize];
                let caller = &funcs[t.func as usize];
                if t.frames.len() >= MAX_CALL_DEPTH {
                    return Err(LaunchError::OutOfResources(format!(
                        "call depth over {MAX_CALL_DEPTH}"
                    )));
                }
                let new_base = base + caller.template.len();
                let caller_sb = t.stack_base as usize;
                let new_sb = (caller_sb + caller.frame_bytes as usize)
                    .next_multiple_of(callee.frame_align as usize);
                let top = new_sb + callee.frame_bytes as usize;
                if top > MAX_STACK {
                    return Err(LaunchError::OutOfResources(format!(
                        "stack overflow ({top} bytes of local memory)"
                    )));
                }
                if t.stack.len() < top {
                    t.stack.resize(top, 0);
                }
                let need = new_base + callee.template.len();
                if t.regs.len() < need {
                    t.regs.resize(need, 0);
                }
                t.regs[new_base..need].copy_from_slice(&callee.template);
                for (&(aoff, asize), &(poff, psize)) in cs.args.iter().zip(&callee.params) {
                    let src = caller_sb + aoff as usize;
                    t.stack
                        .copy_within(src..src + asize.min(psize) as usize, new_sb + poff as usize);
                }
                t.frames.push(Frame {
                    ret_pc: pc as u32 + 1,
                    func: t.func,
                    reg_base: base as u32,
                    stack_base: t.stack_base,
                    site,
                });
                t.func = cs.func;
                t.stack_base = new_sb as u32;
                base = new_base;
                pc = callee.entry as usize;
                continue;
            }
            &Op::Printf { site } => {
                let ret = device_printf(cx, cache, t, shared, site)?;
                if let Some(&(roff, rsize)) = cx
                    .prog
                    .calls
                    .get(site as usize)
                    .and_then(|cs| cs.rets.first())
                {
                    let off = t.stack_base as usize + roff as usize;
                    wr(&mut t.stack, off, rsize.min(4), u64::from(ret as u32));
                }
            }
            &Op::SetConditional { site } => {
                let Some(cs) = cx.prog.calls.get(site as usize) else {
                    return Err(LaunchError::IllegalInstruction("bad call site".into()));
                };
                let sb = t.stack_base as usize;
                let arg = |k: usize, size: u32| {
                    cs.args
                        .get(k)
                        .map_or(0, |&(off, _)| rd(&t.stack, sb + off as usize, size))
                };
                let (handle, value) = (arg(0, 8), arg(1, 4) as u32);
                if !cx.mem.set_conditional(handle, value) {
                    return Err(LaunchError::IllegalAddress {
                        addr: handle,
                        len: 4,
                    });
                }
            }
            Op::Ret => match t.frames.pop() {
                None => stop!(Stop::Exit),
                Some(fr) => {
                    let callee = &funcs[t.func as usize];
                    if let Some(cs) = cx.prog.calls.get(fr.site as usize) {
                        for (&(roff, rsize), &(coff, csize)) in cs.rets.iter().zip(&callee.rets) {
                            let src = t.stack_base as usize + coff as usize;
                            let len = rsize.min(csize) as usize;
                            t.stack.copy_within(
                                src..src + len,
                                fr.stack_base as usize + roff as usize,
                            );
                        }
                    }
                    t.func = fr.func;
                    t.stack_base = fr.stack_base;
                    base = fr.reg_base as usize;
                    pc = fr.ret_pc as usize;
                    continue;
                }
            },
            Op::Exit => stop!(Stop::Exit),
            Op::Trap => return Err(LaunchError::Trap),
            &Op::Bar {
                kind, id, count, p, ..
            } => {
                let idv = r!(id);
                if idv >= 16 {
                    return Err(LaunchError::IllegalInstruction(format!(
                        "barrier {idv} out of range 0..16"
                    )));
                }
                let b = &mut bars[idv as usize];
                if count != NO_REG {
                    b.count = r!(count) as u32;
                }
                b.arrived += 1;
                if kind != BarKind::Arrive {
                    if matches!(kind, BarKind::RedPopc | BarKind::RedAnd | BarKind::RedOr) {
                        b.nred += 1;
                        b.ptrue += u32::from(r!(p) != 0);
                    }
                    b.waiting += 1;
                    stop!(Stop::Barrier(idv as u8));
                }
            }
            Op::WarpSync { .. }
            | Op::Shfl { .. }
            | Op::Vote { .. }
            | Op::Activemask { .. }
            | Op::Redux { .. }
            | Op::MatchAny { .. }
            | Op::MatchAll { .. } => stop!(Stop::Warp),
            Op::Fence => fence(Ordering::SeqCst),
            &Op::Mapa {
                d,
                a,
                rank,
                generic,
                bits32,
            } => {
                let v = r!(a);
                let off = if generic {
                    if v & WIN_MASK != SHARED_WIN {
                        return Err(LaunchError::IllegalAddress { addr: v, len: 0 });
                    }
                    v - SHARED_WIN
                } else {
                    v
                } & ((1 << CLUSTER_RANK_SHIFT) - 1);
                // The full rank: one outside the cluster (at most 16 blocks) maps to
                // `POISON_RANK`, which no cluster has, so an access through it is an
                // illegal address instead of aliasing a real rank.
                let rank = r!(rank) & 0xffff_ffff;
                let rank = if rank < own_cluster_size(cx) {
                    rank
                } else {
                    POISON_RANK
                };
                let c = (rank + 1) << CLUSTER_RANK_SHIFT | off;
                let out = if generic { SHARED_WIN | c } else { c };
                r!(d) = if bits32 { out & 0xffff_ffff } else { out };
            }
            &Op::GetCtaRank { d, a, generic } => {
                let v = r!(a);
                let v = if generic {
                    v.wrapping_sub(SHARED_WIN)
                } else {
                    v
                };
                let hi = (v >> CLUSTER_RANK_SHIFT) & 0xff;
                r!(d) = if hi == 0 { own_rank(cx) } else { hi - 1 };
            }
            &Op::ClusterBar { arrive: true } => {
                cb.arrived += 1;
                t.cluster_target = cb.phase + 1;
            }
            &Op::ClusterBar { arrive: false } => {
                if cb.phase < t.cluster_target {
                    stop!(Stop::ClusterWait);
                }
            }
        }
        pc += 1;
    }
}

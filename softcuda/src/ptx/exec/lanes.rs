//! The lane engine: runs all the threads of a block together, one operation at a
//! time for every thread at that operation, with registers laid out lane by lane
//! (register `r` of thread `l` at `r * n + l`), so that decoding an operation is
//! paid once per block instead of once per thread.
//!
//! Threads that agree on where they are ("converged": the common case) run as one
//! group; a branch some take and some do not splits them, and then each step runs
//! the group at the lowest operation index (the threads behind catch up first, so
//! they meet again after an `if`/`else` or a loop whose trip counts differ). A
//! block-wide `bar.sync` holds the threads that reach it until no thread can run,
//! then releases them all. A warp collective (`shfl`, `vote`, `redux`, `match`,
//! `bar.warp.sync`) that every live lane of each warp reaches together, with one
//! mask, is evaluated at once for the whole group; otherwise the lanes that reach it
//! wait there until every live lane their mask names has arrived with the same
//! mask (or exited), as the reference pairs them (`warp::eval_lanes` computes the
//! results for both engines). A thread that keeps taking backward branches while
//! others wait (a spin loop waiting for another thread of the block) yields: the
//! group furthest ahead runs for a while.
//!
//! It runs only what it can run exactly as the reference interpreter
//! (`thread.rs`) does, with the same arithmetic (`arith`) and the same checked
//! memory access (`locate`, `read`, `host_write`, `host_atomic`): kernels whose
//! every reachable operation is one it knows ([`eligible`]: no calls, local
//! memory, `activemask`, barriers with a thread count or a reduction, cluster
//! operations or `printf`),
//! launched without a cluster or cooperation and with no sanitizer check asked for
//! (a checked launch, and every other kernel, runs on the reference path, one
//! thread at a time). Results are the reference's wherever PTX defines them;
//! accesses racing without a barrier may see other values (as on a GPU). A
//! faulting access stops the launch with the error of the first faulting thread
//! (in thread order) at the earliest operation, where the reference reports thread
//! 0's first fault after thread 0's earlier effects; [`DeviceMemory::fault`] is
//! not called here (a memory that wants faults described asks for
//! [`crate::ptx::CHECK_FAULT`], which selects the reference). A thread spinning on memory
//! another thread of its block writes makes the engine run the other groups in
//! turn, one operation each, for a while (`turn`).

use super::*;

mod collective;
mod ops;

use collective::{converged_collective, fire_warps_of};
use ops::step;

/// Whether eligible kernels run on the lane engine (`SOFTCUDA_ENGINE=reference`,
/// or [`set_enabled`], turns it off: every launch then runs one thread at a time).
static ENABLED: std::sync::atomic::AtomicU8 = std::sync::atomic::AtomicU8::new(UNSET);
const UNSET: u8 = 2;

/// Whether the lane engine runs eligible kernels (reads `SOFTCUDA_ENGINE` once).
pub fn enabled() -> bool {
    match ENABLED.load(Ordering::Relaxed) {
        UNSET => {
            let on = std::env::var("SOFTCUDA_ENGINE").map_or(true, |v| v != "reference");
            ENABLED.store(u8::from(on), Ordering::Relaxed);
            on
        }
        v => v == 1,
    }
}

/// Turns the lane engine on or off for every later launch (overrides
/// `SOFTCUDA_ENGINE`): off, every kernel runs on the reference interpreter.
pub fn set_enabled(on: bool) {
    ENABLED.store(u8::from(on), Ordering::Relaxed);
}

const RUN: u8 = 0;
const BAR: u8 = 1;
const EXIT: u8 = 2;
/// Waiting at a warp collective for the other lanes its mask names.
const WARP: u8 = 3;

/// Whether every operation reachable from function `fi`'s entry is one the lane
/// engine runs (see the module's doc). Decided once, when the kernel is compiled.
pub(crate) fn eligible(prog: &Program, fi: u32) -> bool {
    let Some(f) = prog.funcs.get(fi as usize) else {
        return false;
    };
    if f.frame_bytes != 0 {
        return false;
    }
    let mut seen = vec![false; prog.code.len()];
    let mut todo = vec![f.entry as usize];
    while let Some(pc) = todo.pop() {
        let Some(inst) = prog.code.get(pc) else {
            return false;
        };
        if std::mem::replace(&mut seen[pc], true) {
            continue;
        }
        let mut next = true;
        match &inst.op {
            Op::Nop
            | Op::Mov { .. }
            | Op::Pack { .. }
            | Op::Unpack { .. }
            | Op::Int { .. }
            | Op::IntUn { .. }
            | Op::Int3 { .. }
            | Op::Bfi { .. }
            | Op::Prmt { .. }
            | Op::Shf { .. }
            | Op::Lop3 { .. }
            | Op::Float { .. }
            | Op::FloatUn { .. }
            | Op::Fma { .. }
            | Op::FloatDir { .. }
            | Op::Fma32Dir { .. }
            | Op::MadCc { .. }
            | Op::Testp { .. }
            | Op::Setp { .. }
            | Op::Selp { .. }
            | Op::Ext { .. }
            | Op::Cvt { .. }
            | Op::Cvta { .. }
            | Op::Isspacep { .. }
            | Op::Shfl { .. }
            | Op::Vote { .. }
            | Op::Redux { .. }
            | Op::MatchAny { .. }
            | Op::MatchAll { .. }
            | Op::WarpSync { .. }
            | Op::Fence => {}
            Op::Special { sr, .. } => {
                if matches!(sr, Sreg::ReservedSmem(_)) {
                    return false;
                }
            }
            Op::AddrOf { a, space, .. } => {
                if matches!(a, Addr::Frame(_)) || *space == MemSpace::Local {
                    return false;
                }
            }
            Op::Ld { space, a, .. } | Op::St { space, a, .. } | Op::Atom { space, a, .. } => {
                if matches!(a, Addr::Frame(_)) || *space == MemSpace::Local {
                    return false;
                }
            }
            &Op::Bra { target } => {
                todo.push(target as usize);
                next = inst.guard != NO_REG;
            }
            Op::Ret | Op::Exit | Op::Trap => next = inst.guard != NO_REG,
            &Op::Bar {
                kind: BarKind::Sync,
                count,
                ..
            } if count == NO_REG => {}
            _ => return false,
        }
        if next {
            todo.push(pc + 1);
        }
    }
    true
}

/// Registers and positions of a block's lanes, reused from block to block.
#[derive(Default)]
pub(super) struct Lanes {
    regs: Vec<u64>,
    pc: Vec<u32>,
    state: Vec<u8>,
    carry: Vec<bool>,
    /// The barrier each lane waits at.
    bar: Vec<u8>,
    /// Per register: whether every lane `0..n` holds the same value (then an
    /// operation whose sources all are is computed once and its result copied).
    uni: Vec<bool>,
    /// A global range every access inside which is allowed (from the launch's
    /// region cache): the loads' and stores' fast path.
    hot: (u64, u64),
    /// The lanes of the group running now (when not every lane).
    act: Vec<u32>,
    /// The group's lanes whose guard holds.
    guarded: Vec<u32>,
    shared: Vec<u8>,
    /// A copy of a register column an operation both reads and writes.
    tmp: Vec<u64>,
}

/// Which lanes an operation runs for.
#[derive(Clone, Copy)]
enum Group<'a> {
    /// Every lane `0..n`.
    All(usize),
    Some(&'a [u32]),
}

impl Group<'_> {
    #[inline(always)]
    fn each(self, mut f: impl FnMut(usize)) {
        match self {
            Group::All(n) => (0..n).for_each(f),
            Group::Some(v) => v.iter().for_each(|&l| f(l as usize)),
        }
    }
}

/// What the group does next.
enum Flow {
    Next,
    /// A branch: the lanes in the group go to `target` (guards already applied).
    Jump(u32),
    Exit,
    /// A block-wide barrier; whether every lane of the group named the same one.
    Barrier(bool),
    /// A warp collective (`shfl`, `vote`, `redux`, `match`, `bar.warp.sync`).
    Collective,
}

/// Runs one block (`cx.ctaid`) on the lane engine. `fresh`: the lanes' registers
/// are not yet initialised for this kernel (a worker's first block).
pub(super) fn run_block(
    cx: &Ctx,
    f: &Func,
    s: &mut Lanes,
    cache: &mut RegionCache,
    fresh: bool,
) -> Result<(), LaunchError> {
    let n = cx.nthreads as usize;
    let nregs = f.template.len();
    if fresh || s.regs.len() != nregs * n {
        s.regs.clear();
        for &v in &f.template {
            s.regs.extend(std::iter::repeat_n(v, n));
        }
        s.uni.clear();
        s.uni.resize(nregs, true);
        s.hot = (1, 0);
    }
    s.pc.clear();
    s.pc.resize(n, f.entry);
    s.state.clear();
    s.state.resize(n, RUN);
    s.carry.clear();
    s.carry.resize(n, false);
    s.bar.clear();
    s.bar.resize(n, 0);
    s.shared.clear();
    // As the reference sizes it (`init_block`).
    let shared_len = if cx.reserved_len > 0 {
        cx.reserved_smem + cx.reserved_len
    } else {
        cx.shared_bytes
    };
    s.shared.resize(shared_len as usize, 0);
    let mut live = n;
    // Converged: every live lane runs, at `cpc`.
    let mut conv = true;
    let mut cpc = f.entry;
    let mut all = true; // converged with no lane exited: the group is 0..n
    let mut spins = 0u32;
    let mut ahead = 0u32;
    let mut turn = 0u32;
    let mut act = std::mem::take(&mut s.act);
    let mut guarded = std::mem::take(&mut s.guarded);
    // Diverged: the group runs on without a new scan of the lanes (`keep`: its
    // operation) while it stays behind every other runnable lane (`other_min`).
    let mut keep: Option<u32> = None;
    let mut other_min = u32::MAX;
    // Diverged by one branch of the converged group into two groups: the one
    // running (`act`, kept) and the other, every other live lane, runnable at
    // `other_min`. When the running group gets there, every live lane is there:
    // converged again, without a scan of the lanes.
    let mut pair = false;
    // Lanes waiting at warp collectives.
    let mut waiting = 0usize;
    let result = loop {
        // The group: its operation, its lanes.
        let pc = if conv {
            cpc
        } else if let Some(p) = keep {
            p
        } else if pair {
            pair = false;
            conv = true;
            cpc = other_min;
            all = live == n;
            if !all {
                act.clear();
                act.extend((0..n as u32).filter(|&l| s.state[l as usize] == RUN));
            }
            continue;
        } else {
            // Converged again: every live lane runnable, at one operation.
            let mut pcs = (0..n).filter(|&l| s.state[l] != EXIT);
            let first = pcs.next().map(|l| (s.state[l], s.pc[l]));
            if let Some((RUN, p)) = first
                && pcs.all(|l| s.state[l] == RUN && s.pc[l] == p)
            {
                conv = true;
                cpc = p;
                all = live == n;
                act.clear();
                act.extend((0..n as u32).filter(|&l| s.state[l as usize] == RUN));
                continue;
            }
            let pick = if ahead > 0 {
                // Yielding: each group in turn, in operation order, from the one
                // after the last picked (so a producer between two spinning groups
                // runs too).
                ahead -= 1;
                let runnable = || (0..n).filter(|&l| s.state[l] == RUN).map(|l| s.pc[l]);
                let next = runnable()
                    .filter(|&p| p > turn)
                    .min()
                    .or_else(|| runnable().min());
                turn = next.unwrap_or(0);
                next
            } else {
                (0..n).filter(|&l| s.state[l] == RUN).map(|l| s.pc[l]).min()
            };
            let Some(pc) = pick else {
                break Ok(()); // unreachable: a block with no runnable lane ends below
            };
            act.clear();
            act.extend(
                (0..n as u32).filter(|&l| s.state[l as usize] == RUN && s.pc[l as usize] == pc),
            );
            other_min = (0..n)
                .filter(|&l| s.state[l] == RUN && s.pc[l] != pc)
                .map(|l| s.pc[l])
                .min()
                .unwrap_or(u32::MAX);
            pc
        };
        keep = None;
        let group = if conv && all {
            Group::All(n)
        } else {
            Group::Some(&act)
        };
        let Some(inst) = cx.code.get(pc as usize) else {
            break Err(LaunchError::IllegalInstruction(format!(
                "jump outside the code (operation {pc})"
            )));
        };
        let whole = conv && all;
        let mut group = group;
        if inst.guard != NO_REG && s.uni.get(inst.guard as usize).copied().unwrap_or(false) {
            // A guard every lane agrees on: all run, or none.
            if (s.regs[inst.guard as usize * n] != 0) == inst.neg {
                if conv {
                    cpc += 1;
                } else {
                    keep = next_of(s, &act, pc, other_min, pair);
                }
                continue;
            }
        } else if inst.guard != NO_REG {
            guarded.clear();
            // Every lane of the block: a guard that holds for all runs the
            // operation as an unguarded one.
            match whole.then(|| lanecols::guarded(&s.regs, n, inst.guard, inst.neg, &mut guarded)) {
                Some(Some(true)) => {}
                Some(Some(false)) => group = Group::Some(&guarded),
                _ => {
                    let g = inst.guard as usize * n;
                    group.each(|l| {
                        if (s.regs[g + l] != 0) != inst.neg {
                            guarded.push(l as u32);
                        }
                    });
                    group = Group::Some(&guarded);
                }
            }
        }
        let unguarded = matches!(group, Group::All(_));
        let (srcs, dsts) = operands(&inst.op);
        if whole
            && unguarded
            && let Some(srcs) = srcs
            && srcs.iter().all(|&r| r == NO_REG || s.uni[r as usize])
        {
            // Every lane would compute the same: lane 0 does, the others copy
            // (unless they hold that value already: a register alike in every
            // lane that gets the value it had, as a constant recomputed in the
            // next block).
            // A loop, not `dsts.map` (an out-of-line call on this hot path).
            let mut had = [None; 4];
            for (h, &d) in had.iter_mut().zip(&dsts) {
                if d != NO_REG && s.uni[d as usize] {
                    *h = Some(s.regs[d as usize * n]);
                }
            }
            if let Err(e) = step(cx, s, cache, n, inst, Group::Some(&[0])) {
                break Err(e);
            }
            for (&d, had) in dsts.iter().zip(had).filter(|&(&d, _)| d != NO_REG) {
                let d = d as usize;
                let v = s.regs[d * n];
                if had != Some(v) {
                    s.regs[d * n..(d + 1) * n].fill(v);
                    s.uni[d] = true;
                }
            }
            cpc += 1;
            continue;
        }
        for &d in dsts.iter().filter(|&&d| d != NO_REG) {
            s.uni[d as usize] = whole && unguarded && uniform_result(&inst.op);
        }
        let flow = match step(cx, s, cache, n, inst, group) {
            Ok(f) => f,
            Err(e) => break Err(e),
        };
        // Where the group's lanes go. `chosen`: the lanes the operation acted for
        // (its guard held), when that is not the whole group.
        let size = if conv && all { n } else { act.len() };
        let (count, chosen): (usize, Option<Vec<u32>>) = match (&flow, group) {
            (Flow::Next, _) => (0, None),
            (_, Group::All(k)) => (k, None),
            (_, Group::Some(v)) if v.len() == size => (v.len(), None),
            (_, Group::Some(v)) => (v.len(), Some(v.to_vec())),
        };
        let everyone = chosen.is_none();
        if !matches!(flow, Flow::Next) {
            pair = false;
        }
        match flow {
            Flow::Next => {
                if conv {
                    cpc += 1;
                } else {
                    keep = next_of(s, &act, pc, other_min, pair);
                }
            }
            Flow::Jump(target) => {
                if target <= pc && !conv {
                    spins += 1;
                    if spins >= YIELD_AFTER {
                        spins = 0;
                        ahead = 256;
                        turn = pc;
                    }
                }
                match chosen {
                    _ if conv && everyone => cpc = target,
                    _ if conv && count == 0 => cpc += 1,
                    // The converged group splits in two (`v` to `target`, the
                    // others one on): the one behind runs on, as the scan would
                    // pick it (unless a spin loop is yielding, `ahead`), the
                    // other waits for it.
                    Some(v) if conv && ahead == 0 && target != pc + 1 => {
                        let rest = others(if all { None } else { Some(&act) }, n, &v);
                        let (run, park, at) = if target <= pc {
                            (v, rest, pc + 1)
                        } else {
                            (rest, v, target)
                        };
                        for &l in &park {
                            s.pc[l as usize] = at;
                        }
                        act = run;
                        other_min = at;
                        keep = Some(target.min(pc + 1));
                        pair = true;
                        conv = false;
                    }
                    chosen => {
                        if conv {
                            diverge(s, &mut act, n, all, cpc);
                            conv = false;
                        }
                        for &l in &act {
                            s.pc[l as usize] = pc + 1;
                        }
                        match &chosen {
                            None => act.iter().for_each(|&l| s.pc[l as usize] = target),
                            Some(v) => v.iter().for_each(|&l| s.pc[l as usize] = target),
                        }
                    }
                }
            }
            Flow::Exit => {
                if everyone && conv {
                    break Ok(()); // the group is every live lane
                }
                if conv {
                    // Those left stay together, one operation on.
                    if all {
                        act.clear();
                        act.extend(0..n as u32);
                    }
                    cpc += 1;
                } else {
                    for &l in &act {
                        s.pc[l as usize] = pc + 1;
                    }
                }
                let exited = chosen.unwrap_or_else(|| act.clone());
                for &l in &exited {
                    s.state[l as usize] = EXIT;
                }
                live -= exited.len();
                if live == 0 {
                    break Ok(());
                }
                act.retain(|&l| s.state[l as usize] != EXIT);
                all = false;
                if waiting > 0 {
                    // A collective may wait for no one now.
                    waiting -= fire_warps_of(cx, s, n, &exited);
                }
                // The last runnable lanes exited: those waiting at a barrier are all
                // the live ones now (exited threads do not block barriers).
                if let Err(e) = release(cx, s, n) {
                    break Err(e);
                }
            }
            Flow::Collective => {
                let at_once = conv && {
                    let arriving = match &chosen {
                        Some(v) => Group::Some(v),
                        None if all => Group::All(n),
                        None => Group::Some(&act),
                    };
                    converged_collective(cx, s, n, pc, arriving, &act, all)
                };
                if at_once {
                    cpc += 1;
                } else {
                    if conv {
                        diverge(s, &mut act, n, all, cpc);
                        conv = false;
                    }
                    let arriving = chosen.unwrap_or_else(|| act.clone());
                    for &l in &act {
                        s.pc[l as usize] = pc + 1;
                    }
                    for &l in &arriving {
                        s.pc[l as usize] = pc;
                        s.state[l as usize] = WARP;
                    }
                    waiting += arriving.len();
                    waiting -= fire_warps_of(cx, s, n, &arriving);
                    if let Err(e) = release(cx, s, n) {
                        break Err(e);
                    }
                }
            }
            Flow::Barrier(uniform) => {
                if conv && everyone && uniform {
                    cpc += 1; // every live lane arrived: released at once
                } else {
                    if conv {
                        diverge(s, &mut act, n, all, cpc);
                        conv = false;
                    }
                    for &l in &act {
                        s.pc[l as usize] = pc + 1;
                    }
                    let waiting = chosen.unwrap_or_else(|| act.clone());
                    for &l in &waiting {
                        s.state[l as usize] = BAR;
                    }
                    if let Err(e) = release(cx, s, n) {
                        break Err(e);
                    }
                }
            }
        }
        if !conv && keep.is_none() && !s.state.contains(&RUN) {
            break Ok(());
        }
    };
    s.act = act;
    s.guarded = guarded;
    result
}

/// An operation's source registers, if it may be computed once for lanes that
/// agree on them (no memory written, no per-lane state such as the carry), and the
/// registers it writes (`NO_REG` for none).
fn operands(op: &Op) -> (Option<[Reg; 5]>, [Reg; 4]) {
    const X: Reg = NO_REG;
    let addr = |a: &Addr| match *a {
        Addr::Reg(r, _) => r,
        _ => X,
    };
    match *op {
        Op::Mov { d, a, .. } => (Some([a, X, X, X, X]), [d, X, X, X]),
        Op::AddrOf { d, ref a, .. } => (Some([addr(a), X, X, X, X]), [d, X, X, X]),
        Op::Pack { d, parts, n, .. } => {
            let mut s = [X; 5];
            for (k, &p) in parts.iter().take(usize::from(n)).enumerate() {
                s[k] = p;
            }
            (Some(s), [d, X, X, X])
        }
        Op::Unpack { d, n, a, .. } => {
            let mut o = [X; 4];
            o[..usize::from(n).min(4)].copy_from_slice(&d[..usize::from(n).min(4)]);
            (Some([a, X, X, X, X]), o)
        }
        Op::Int { op, d, a, b, .. } => {
            let carry = matches!(
                op,
                IntOp::AddCc
                    | IntOp::AddC
                    | IntOp::AddCCc
                    | IntOp::SubCc
                    | IntOp::SubC
                    | IntOp::SubCCc
            );
            ((!carry).then_some([a, b, X, X, X]), [d, X, X, X])
        }
        Op::IntUn { d, a, .. } | Op::FloatUn { d, a, .. } | Op::Testp { d, a, .. } => {
            (Some([a, X, X, X, X]), [d, X, X, X])
        }
        Op::Ext { d, a, .. } | Op::Cvt { d, a, .. } | Op::Cvta { d, a, .. } => {
            (Some([a, X, X, X, X]), [d, X, X, X])
        }
        Op::Isspacep { d, a, .. } => (Some([a, X, X, X, X]), [d, X, X, X]),
        Op::Int3 { d, a, b, c, .. }
        | Op::Prmt { d, a, b, c }
        | Op::Shf { d, a, b, c, .. }
        | Op::Lop3 { d, a, b, c, .. }
        | Op::Fma { d, a, b, c, .. }
        | Op::Fma32Dir { d, a, b, c, .. }
        | Op::Selp { d, a, b, c } => (Some([a, b, c, X, X]), [d, X, X, X]),
        Op::Bfi {
            d, a, b, pos, len, ..
        } => (Some([a, b, pos, len, X]), [d, X, X, X]),
        Op::Float { d, a, b, .. } | Op::FloatDir { d, a, b, .. } => {
            (Some([a, b, X, X, X]), [d, X, X, X])
        }
        Op::MadCc { d, .. } | Op::Special { d, .. } => (None, [d, X, X, X]),
        Op::Setp { p, q, a, b, c, .. } => (Some([a, b, c, X, X]), [p, q, X, X]),
        Op::Ld { n, d, ref a, .. } => {
            let mut o = [X; 4];
            o[..usize::from(n).min(4)].copy_from_slice(&d[..usize::from(n).min(4)]);
            (Some([addr(a), X, X, X, X]), o)
        }
        Op::Atom { d, .. } | Op::Vote { d, .. } | Op::Redux { d, .. } | Op::MatchAny { d, .. } => {
            (None, [d, X, X, X])
        }
        Op::Shfl { d, p, .. } | Op::MatchAll { d, p, .. } => (None, [d, p, X, X]),
        _ => (None, [X; 4]),
    }
}

/// Whether special register `sr` differs from thread to thread of a block.
fn per_thread(sr: Sreg) -> bool {
    matches!(
        sr,
        Sreg::Tid(_)
            | Sreg::LaneId
            | Sreg::WarpId
            | Sreg::LanemaskEq
            | Sreg::LanemaskLe
            | Sreg::LanemaskLt
            | Sreg::LanemaskGe
            | Sreg::LanemaskGt
    )
}

/// Whether `op`, run for every lane, leaves the same value in each (a special
/// register that does not depend on the thread).
fn uniform_result(op: &Op) -> bool {
    matches!(
        op,
        &Op::Special { sr, .. } if !per_thread(sr) && !matches!(
            sr,
            Sreg::Clock
                | Sreg::ClockHi
                | Sreg::Clock64
                | Sreg::GlobalTimer
                | Sreg::GlobalTimerLo
                | Sreg::GlobalTimerHi
        )
    )
}

/// When no lane can run and some wait at a barrier: releases them if they all wait
/// at one barrier, else the block is deadlocked (two barriers never complete).
fn release(cx: &Ctx, s: &mut Lanes, n: usize) -> Result<(), LaunchError> {
    if s.state.contains(&RUN) {
        return Ok(());
    }
    if s.state.contains(&WARP) {
        // A collective waits for a lane that waits at a barrier (or another
        // collective): neither can complete.
        return Err(deadlock(cx, s, n));
    }
    let mut ids = (0..n).filter(|&l| s.state[l] == BAR).map(|l| s.bar[l]);
    let first = ids.next();
    if !ids.all(|b| Some(b) == first) {
        return Err(deadlock(cx, s, n));
    }
    for st in s.state.iter_mut().filter(|st| **st == BAR) {
        *st = RUN;
    }
    Ok(())
}

/// The error of a block whose live lanes all wait at barriers that cannot complete
/// (the reference's `deadlock`).
fn deadlock(cx: &Ctx, s: &Lanes, n: usize) -> LaunchError {
    let stuck: Vec<usize> = (0..n).filter(|&l| s.state[l] != EXIT).collect();
    // A lane at a barrier has moved past it; one at a collective waits on it.
    let at = |l: usize| s.pc[l].saturating_sub(u32::from(s.state[l] == BAR));
    let line = stuck
        .first()
        .and_then(|&l| cx.prog.lines.get(at(l) as usize))
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

/// Where a diverged group (`act`, at `pc`) goes on to `pc + 1`: it is kept running
/// (`Some`) while it stays behind every other runnable lane (`other_min`), and its
/// lanes' own positions (`s.pc`) are written only when it stops: here, unless it
/// meets the group that waits for it (`pair`: converged again), or by the flow that
/// stops it (which writes them whole, `pc + 1`, not one on from what they hold).
fn next_of(s: &mut Lanes, act: &[u32], pc: u32, other_min: u32, pair: bool) -> Option<u32> {
    let keep = (pc + 1 < other_min).then_some(pc + 1);
    if keep.is_none() && !pair {
        for &l in act {
            s.pc[l as usize] = pc + 1;
        }
    }
    keep
}

/// The lanes of a converged group (`act`, or every lane `0..n` if `None`) not in
/// `chosen` (a subset of them, both in lane order), in lane order.
fn others(act: Option<&[u32]>, n: usize, chosen: &[u32]) -> Vec<u32> {
    let len = act.map_or(n, <[u32]>::len);
    let mut rest = Vec::with_capacity(len.saturating_sub(chosen.len()));
    let mut c = chosen.iter().copied().peekable();
    let mut take = |l: u32| {
        if c.next_if_eq(&l).is_none() {
            rest.push(l);
        }
    };
    match act {
        Some(a) => a.iter().for_each(|&l| take(l)),
        None => (0..n as u32).for_each(take),
    }
    rest
}

/// Leaves converged mode: every live lane's own position is `cpc`, `act` lists the
/// live lanes (all of `0..n` if `all`).
fn diverge(s: &mut Lanes, act: &mut Vec<u32>, n: usize, all: bool, cpc: u32) {
    if all {
        act.clear();
        act.extend(0..n as u32);
    }
    for &l in act.iter() {
        s.pc[l as usize] = cpc;
    }
}

/// Whether an access of `len` bytes at `addr` lies inside `hot` (memory the launch
/// may touch) and is aligned: then it needs no other check.
#[inline(always)]
pub(super) fn fast(hot: (u64, u64), addr: u64, len: u32) -> bool {
    let len = u64::from(len);
    addr >= hot.0 && addr.checked_add(len).is_some_and(|e| e <= hot.1) && addr & (len - 1) == 0
}

/// Threads a launch must have before its blocks are spread over host threads
/// (below it, starting them costs more than it saves).
const PARALLEL_FROM: u64 = 1 << 15;
/// The most host threads one launch uses.
const MAX_WORKERS: u64 = 16;

thread_local! {
    static LANES: std::cell::Cell<Option<Box<Lanes>>> = const { std::cell::Cell::new(None) };
}

/// Runs every block of the launch on the lane engine: blocks in order, spread in
/// contiguous runs over the host's cores when the launch is large enough (the
/// blocks of a launch may run in any order, so results that do not depend on that
/// order are the same). The error is the first faulting block's, in block order.
pub(super) fn run_grid(cx: &Ctx, f: &Func, cache: &mut RegionCache) -> Result<(), LaunchError> {
    let [gx, gy, gz] = cx.grid.map(u64::from);
    let blocks = gx * gy * gz;
    let threads = blocks * u64::from(cx.nthreads);
    let workers = if threads >= PARALLEL_FROM {
        static CORES: std::sync::OnceLock<u64> = std::sync::OnceLock::new();
        let cores = *CORES
            .get_or_init(|| std::thread::available_parallelism().map_or(1, |c| c.get() as u64));
        cores.min(MAX_WORKERS).min(blocks).max(1)
    } else {
        1
    };
    if workers == 1 {
        return run_range(cx, f, cache, 0..blocks).map_err(|(_, e)| e);
    }
    let per = blocks.div_ceil(workers);
    let results: Vec<Result<(), (u64, LaunchError)>> = std::thread::scope(|sc| {
        let others: Vec<_> = (1..workers)
            .map(|w| {
                let range = (w * per).min(blocks)..((w + 1) * per).min(blocks);
                let own = cache.own;
                let work = range.clone();
                let spawned = std::thread::Builder::new().spawn_scoped(sc, move || {
                    let mut cache = RegionCache::new();
                    cache.own = own;
                    run_range(cx, f, &mut cache, work)
                });
                // No thread to be had: this thread runs the range after its own.
                spawned.map_err(|_| range)
            })
            .collect();
        let mut all = vec![run_range(cx, f, cache, 0..per.min(blocks))];
        for h in others {
            all.push(match h {
                Ok(h) => h.join().unwrap_or_else(|_| {
                    Err((
                        u64::MAX,
                        LaunchError::IllegalInstruction("a lane engine worker panicked".into()),
                    ))
                }),
                Err(range) => run_range(cx, f, cache, range),
            });
        }
        all
    });
    results
        .into_iter()
        .filter_map(Result::err)
        .min_by_key(|(b, _)| *b)
        .map_or(Ok(()), |(_, e)| Err(e))
}

/// Runs blocks `range` (linear indices, x fastest) on this host thread.
fn run_range(
    cx: &Ctx,
    f: &Func,
    cache: &mut RegionCache,
    range: std::ops::Range<u64>,
) -> Result<(), (u64, LaunchError)> {
    let [gx, gy, _] = cx.grid.map(u64::from);
    let mut lanes = LANES.with(std::cell::Cell::take).unwrap_or_default();
    let mut bcx = cx.clone();
    let first = range.start;
    let mut result = Ok(());
    for b in range {
        bcx.ctaid = [b % gx, (b / gx) % gy, b / (gx * gy)].map(|v| v as u32);
        if let Err(e) = run_block(&bcx, f, &mut lanes, cache, b == first) {
            result = Err((b, e));
            break;
        }
    }
    LANES.with(|c| c.set(Some(lanes)));
    result
}

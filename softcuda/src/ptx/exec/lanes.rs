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
    // Lanes waiting at warp collectives.
    let mut waiting = 0usize;
    let result = loop {
        // The group: its operation, its lanes.
        let pc = if conv {
            cpc
        } else if let Some(p) = keep {
            p
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
                    for &l in &act {
                        s.pc[l as usize] += 1;
                    }
                    keep = (pc + 1 < other_min).then_some(pc + 1);
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
            let had =
                dsts.map(|d| (d != NO_REG && s.uni[d as usize]).then(|| s.regs[d as usize * n]));
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
        match flow {
            Flow::Next => {
                if conv {
                    cpc += 1;
                } else {
                    for &l in &act {
                        s.pc[l as usize] += 1;
                    }
                    keep = (pc + 1 < other_min).then_some(pc + 1);
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
                if conv && everyone {
                    cpc = target;
                } else if conv && count == 0 {
                    cpc += 1;
                } else {
                    if conv {
                        diverge(s, &mut act, n, all, cpc);
                        conv = false;
                    }
                    for &l in &act {
                        s.pc[l as usize] += 1;
                    }
                    match &chosen {
                        None => act.iter().for_each(|&l| s.pc[l as usize] = target),
                        Some(v) => v.iter().for_each(|&l| s.pc[l as usize] = target),
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
                        s.pc[l as usize] += 1;
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
                        s.pc[l as usize] += 1;
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
                        s.pc[l as usize] += 1;
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

/// Whether `op`, run for every lane, leaves the same value in each (a special
/// register that does not depend on the thread).
fn uniform_result(op: &Op) -> bool {
    matches!(
        op,
        Op::Special { sr, .. } if !matches!(
            sr,
            Sreg::Tid(_)
                | Sreg::LaneId
                | Sreg::WarpId
                | Sreg::LanemaskEq
                | Sreg::LanemaskLe
                | Sreg::LanemaskLt
                | Sreg::LanemaskGe
                | Sreg::LanemaskGt
                | Sreg::Clock
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

/// One warp of the block (lanes `base..base + 32`, of `n`), as the collectives'
/// evaluation (`eval_lanes`) sees it; `at`: the operation every lane is at, when
/// the lanes are converged (their own positions are not kept then).
struct WarpView<'a> {
    regs: &'a mut [u64],
    pcs: &'a [u32],
    at: Option<u32>,
    n: usize,
    base: usize,
}

impl WarpLanes for WarpView<'_> {
    fn pc(&self, l: usize) -> u32 {
        self.at.unwrap_or_else(|| self.pcs[self.base + l])
    }
    fn get(&self, l: usize, r: Reg) -> u64 {
        self.regs[r as usize * self.n + self.base + l]
    }
    fn put(&mut self, l: usize, r: Reg, v: u64) {
        self.regs[r as usize * self.n + self.base + l] = v;
    }
}

/// The key lane `l` waits with at collective `pc` (`collective_key`'s).
fn key_at(cx: &Ctx, s: &Lanes, n: usize, l: usize, pc: u32) -> Option<(u8, u32)> {
    let (kind, mask) = collective_kind(&cx.code.get(pc as usize)?.op)?;
    let m = s.regs.get(mask as usize * n + l).copied().unwrap_or(0) as u32;
    Some((kind, m | (1 << (l % 32))))
}

/// Converged lanes (`act`, or every lane if `all`) at collective `pc`, `arriving`
/// the ones whose guard holds: when, in every warp, every live lane arrives with
/// one key, evaluates each warp's collective at once and returns true (the group
/// stays converged). Otherwise changes nothing.
fn converged_collective(
    cx: &Ctx,
    s: &mut Lanes,
    n: usize,
    pc: u32,
    arriving: Group,
    act: &[u32],
    all: bool,
) -> bool {
    let Some(op) = cx.code.get(pc as usize).map(|i| &i.op) else {
        return false;
    };
    let Some((_, mreg)) = collective_kind(op) else {
        return false;
    };
    let nwarps = n.div_ceil(32);
    let mut got = [0u32; 32];
    if let Group::All(_) = arriving {
        // Every lane (so every live one): whole words.
        for (w, g) in got.iter_mut().enumerate().take(nwarps) {
            *g = u32::MAX >> (32 - (n - w * 32).min(32));
        }
    } else {
        let mut live = [0u32; 32];
        let bits = |v: &mut [u32; 32], l: u32| v[l as usize / 32] |= 1 << (l % 32);
        if all {
            (0..n as u32).for_each(|l| bits(&mut live, l));
        } else {
            act.iter().for_each(|&l| bits(&mut live, l));
        }
        arriving.each(|l| bits(&mut got, l as u32));
        if live[..nwarps] != got[..nwarps] {
            return false;
        }
    }
    // One key per warp: a mask every lane holds alike that names all the warp's
    // lanes (the common `0xffffffff`), else each lane's key compared.
    let one_key = if s.uni[mreg as usize] {
        let m = s.regs[mreg as usize * n] as u32;
        got[..nwarps]
            .iter()
            .all(|&g| g & !m == 0 || g.count_ones() == 1)
    } else {
        let mut key: [Option<(u8, u32)>; 32] = [None; 32];
        let mut same = true;
        arriving.each(|l| {
            let k = key_at(cx, s, n, l, pc);
            same &= k.is_some_and(|k| *key[l / 32].get_or_insert(k) == k);
        });
        same
    };
    if !one_key {
        return false;
    }
    if let &Op::Shfl {
        mode,
        d,
        p,
        a,
        b,
        c,
        ..
    } = op
        && s.uni[b as usize]
        && s.uni[c as usize]
    {
        shfl_uniform(s, n, &got[..nwarps], mode, [d, p, a, b, c]);
        return true;
    }
    for (w, &group) in got.iter().enumerate().take(nwarps) {
        if group == 0 {
            continue;
        }
        let mut view = WarpView {
            regs: &mut s.regs,
            pcs: &s.pc,
            at: Some(pc),
            n,
            base: w * 32,
        };
        eval_lanes(cx, &mut view, group);
    }
    true
}

/// `shfl` for every lane of the warps in `groups` (bit `l` of `groups[w]`: lane
/// `l` of warp `w` takes part) when its lane and clamp operands are alike in every
/// lane: where each lane reads from is computed once. The same results as
/// `eval_lanes`.
fn shfl_uniform(s: &mut Lanes, n: usize, groups: &[u32], mode: ShflMode, ops: [Reg; 5]) {
    let [d, p, a, b, c] = ops.map(|r| r as usize);
    let from: [(Option<usize>, bool); 32] =
        std::array::from_fn(|l| shfl_source(mode, l, s.regs[b * n], s.regs[c * n]));
    let mut val = [0u64; 32];
    for (w, &group) in groups.iter().enumerate() {
        let base = w * 32;
        for (l, v) in val.iter_mut().enumerate() {
            if group & (1 << l) != 0 {
                *v = s.regs[a * n + base + l] & 0xffff_ffff;
            }
        }
        for (l, &(j, ok)) in from.iter().enumerate() {
            if group & (1 << l) == 0 {
                continue;
            }
            let j = j.filter(|&j| group & (1 << j) != 0).unwrap_or(l);
            s.regs[d * n + base + l] = val[j];
            if p != NO_REG as usize {
                s.regs[p * n + base + l] = u64::from(ok);
            }
        }
    }
}

/// [`fire`] for each warp of `lanes` (in ascending order). Returns how many lanes
/// it released.
fn fire_warps_of(cx: &Ctx, s: &mut Lanes, n: usize, lanes: &[u32]) -> usize {
    let mut last = usize::MAX;
    let mut released = 0;
    for &l in lanes {
        let w = l as usize / 32;
        if w != last {
            released += fire(cx, s, n, w);
            last = w;
        }
    }
    released
}

/// Evaluates the collectives of warp `w` whose member lanes have all arrived (the
/// reference's `fire_warp`, on the lanes' columns) and moves their lanes on.
/// Returns how many lanes it released.
fn fire(cx: &Ctx, s: &mut Lanes, n: usize, w: usize) -> usize {
    let base = w * 32;
    let len = n.saturating_sub(base).min(32);
    let mut live = 0u32;
    let mut keys: [Option<(u8, u32)>; 32] = [None; 32];
    for (k, key) in keys.iter_mut().enumerate().take(len) {
        let l = base + k;
        if s.state[l] != EXIT {
            live |= 1 << k;
        }
        if s.state[l] == WARP {
            *key = key_at(cx, s, n, l, s.pc[l]);
        }
    }
    let mut done = 0u32;
    for (k, key) in keys.iter().enumerate().take(len) {
        let &Some(key) = key else {
            continue;
        };
        if done & (1 << k) != 0 {
            continue;
        }
        let same = (0..len)
            .filter(|&j| keys[j] == Some(key))
            .fold(0u32, |g, j| g | (1 << j));
        if key.1 & live & !same != 0 {
            continue;
        }
        let mut view = WarpView {
            regs: &mut s.regs,
            pcs: &s.pc,
            at: None,
            n,
            base,
        };
        eval_lanes(cx, &mut view, same);
        for j in (0..len).filter(|&j| same & (1 << j) != 0) {
            s.pc[base + j] += 1;
            s.state[base + j] = RUN;
        }
        done |= same;
    }
    done.count_ones() as usize
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

/// The value of `a` (an address operand) for lane `l`.
#[inline(always)]
fn addr_of(cx: &Ctx, regs: &[u64], n: usize, l: usize, a: &Addr) -> u64 {
    addr_with(cx, a, |r| regs[r as usize * n + l], 0)
}

/// Runs `inst` for the lanes of `group` (guards applied).
#[allow(clippy::too_many_lines)]
fn step(
    cx: &Ctx,
    s: &mut Lanes,
    cache: &mut RegionCache,
    n: usize,
    inst: &Inst,
    group: Group,
) -> Result<Flow, LaunchError> {
    let regs = &mut s.regs;
    macro_rules! r {
        ($x:expr, $l:expr) => {
            regs[$x as usize * n + $l]
        };
    }
    // Every lane `0..n` runs: the operand columns may be taken as slices
    // (`lanecols`), one check per operation instead of one per lane.
    let whole = matches!(group, Group::All(k) if k == n);
    let tmp = &mut s.tmp;
    // `d = e` of sources `x` (registers `a`...) for every lane of the group: over
    // columns for the whole block, else lane by lane.
    macro_rules! map {
        ($d:expr, |$x:ident = $a:ident| $e:expr) => {
            if !(whole && lanecols::map1(regs, tmp, n, $d, $a, |$x| $e)) {
                lanes!(|l| r!($d, l) = {
                    let $x = r!($a, l);
                    $e
                });
            }
        };
        ($d:expr, |$x:ident = $a:ident, $y:ident = $b:ident| $e:expr) => {
            if !(whole && lanecols::map2(regs, tmp, n, $d, [$a, $b], |$x, $y| $e)) {
                lanes!(|l| r!($d, l) = {
                    let ($x, $y) = (r!($a, l), r!($b, l));
                    $e
                });
            }
        };
        ($d:expr, |$x:ident = $a:ident, $y:ident = $b:ident, $z:ident = $c:ident| $e:expr) => {
            if !(whole && lanecols::map3(regs, tmp, n, $d, [$a, $b, $c], |$x, $y, $z| $e)) {
                lanes!(|l| r!($d, l) = {
                    let ($x, $y, $z) = (r!($a, l), r!($b, l), r!($c, l));
                    $e
                });
            }
        };
    }
    // The body, for every lane of the group: loops written out, not a closure
    // called per lane.
    macro_rules! lanes {
        (|$l:ident| $body:expr) => {
            match group {
                Group::All(k) => {
                    for $l in 0..k {
                        $body;
                    }
                }
                Group::Some(v) => {
                    for &li in v {
                        let $l = li as usize;
                        $body;
                    }
                }
            }
        };
    }
    match &inst.op {
        Op::Nop => {}
        Op::Fence => fence(Ordering::SeqCst),
        &Op::Mov { d, a, bits } => {
            let m = mask(u32::from(bits));
            map!(d, |x = a| x & m);
        }
        &Op::Special { d, sr } => {
            let [bx, by, _] = cx.block;
            let mut t = Thread::default();
            let uniform = !matches!(
                sr,
                Sreg::Tid(_)
                    | Sreg::LaneId
                    | Sreg::WarpId
                    | Sreg::LanemaskEq
                    | Sreg::LanemaskLe
                    | Sreg::LanemaskLt
                    | Sreg::LanemaskGe
                    | Sreg::LanemaskGt
            );
            if uniform {
                let v = special(cx, &t, sr);
                match regs.get_mut(d as usize * n..(d as usize + 1) * n) {
                    Some(col) if whole => col.fill(v),
                    _ => lanes!(|l| r!(d, l) = v),
                }
            } else {
                if let (Sreg::Tid(0), true) = (sr, bx == cx.nthreads) {
                    if !(whole && lanecols::iota(regs, n, d)) {
                        lanes!(|l| r!(d, l) = l as u64);
                    }
                    return Ok(Flow::Next);
                }
                lanes!(|l| {
                    let i = l as u32;
                    t.tid = [i % bx, (i / bx) % by, i / (bx * by)];
                    t.lane = i % 32;
                    t.warp = i / 32;
                    r!(d, l) = special(cx, &t, sr)
                });
            }
        }
        Op::AddrOf {
            d,
            a,
            space,
            generic,
            bits32,
        } => {
            let win = if *generic {
                match space {
                    MemSpace::Shared => SHARED_WIN,
                    MemSpace::KParam => PARAM_WIN,
                    _ => 0,
                }
            } else {
                0
            };
            lanes!(|l| {
                let v = addr_of(cx, regs, n, l, a).wrapping_add(win);
                r!(*d, l) = if *bits32 { v & 0xffff_ffff } else { v }
            });
        }
        &Op::Pack {
            d,
            parts,
            n: k,
            bits,
        } => lanes!(|l| {
            let mut v = 0u64;
            for (j, &p) in parts.iter().take(usize::from(k)).enumerate() {
                v |= (r!(p, l) & mask(u32::from(bits))) << (j as u32 * u32::from(bits));
            }
            r!(d, l) = v
        }),
        &Op::Unpack { d, n: k, bits, a } => lanes!(|l| {
            let v = r!(a, l);
            for (j, &x) in d.iter().take(usize::from(k)).enumerate() {
                r!(x, l) = (v >> (j as u32 * u32::from(bits))) & mask(u32::from(bits));
            }
        }),
        &Op::Int { op, ty, d, a, b } => {
            // The common ones written out (each exactly `arith::int_bin`'s result:
            // `tests/lane_engine.rs` compares), the rest through it.
            macro_rules! bin {
                (|$x:ident, $y:ident| $e:expr) => {
                    map!(d, |$x = a, $y = b| $e)
                };
            }
            const M32: u64 = 0xffff_ffff;
            match (op, ty.bits, ty.signed) {
                (IntOp::Add, 32, _) => bin!(|x, y| x.wrapping_add(y) & M32),
                (IntOp::Add, 64, _) => bin!(|x, y| x.wrapping_add(y)),
                (IntOp::Sub, 32, _) => bin!(|x, y| x.wrapping_sub(y) & M32),
                (IntOp::Sub, 64, _) => bin!(|x, y| x.wrapping_sub(y)),
                (IntOp::MulLo, 32, _) => bin!(|x, y| x.wrapping_mul(y) & M32),
                (IntOp::MulLo, 64, _) => bin!(|x, y| x.wrapping_mul(y)),
                (IntOp::MulWide, 32, false) => bin!(|x, y| (x & M32) * (y & M32)),
                (IntOp::MulWide, 32, true) => {
                    bin!(|x, y| (i64::from(x as i32) * i64::from(y as i32)) as u64)
                }
                (IntOp::And, 32, _) => bin!(|x, y| x & y & M32),
                (IntOp::And, 64, _) => bin!(|x, y| x & y),
                (IntOp::Or, 64, _) => bin!(|x, y| x | y),
                (IntOp::Shl, 64, _) => bin!(|x, y| {
                    let k = y & M32;
                    if k >= 64 { 0 } else { x << k }
                }),
                _ => {
                    let carry = &mut s.carry;
                    lanes!(|l| r!(d, l) = arith::int_bin(op, ty, r!(a, l), r!(b, l), &mut carry[l]));
                }
            }
        }
        &Op::IntUn { op, ty, d, a } => map!(d, |x = a| arith::int_un(op, ty, x)),
        &Op::Int3 { op, ty, d, a, b, c } => match (op, ty.bits) {
            (Int3Op::MadLo, 32) => {
                map!(d, |x = a, y = b, z = c| x.wrapping_mul(y).wrapping_add(z) & 0xffff_ffff);
            }
            (Int3Op::MadLo, 64) => map!(d, |x = a, y = b, z = c| x.wrapping_mul(y).wrapping_add(z)),
            _ => map!(d, |x = a, y = b, z = c| arith::int3(op, ty, x, y, z)),
        },
        &Op::Bfi {
            bits,
            d,
            a,
            b,
            pos,
            len,
        } => lanes!(|l| {
            r!(d, l) = arith::bfi(u32::from(bits), r!(a, l), r!(b, l), r!(pos, l), r!(len, l))
        }),
        &Op::Prmt { d, a, b, c } => map!(d, |x = a, y = b, z = c| arith::prmt(x, y, z)),
        &Op::Shf {
            left,
            clamp,
            d,
            a,
            b,
            c,
        } => map!(d, |x = a, y = b, z = c| arith::shf(left, clamp, x, y, z)),
        &Op::Lop3 { d, a, b, c, lut } => map!(d, |x = a, y = b, z = c| arith::lop3(x, y, z, lut)),
        &Op::Float {
            op,
            f64,
            ftz,
            sat,
            d,
            a,
            b,
        } => {
            // f32 add, sub, mul without `.ftz`/`.sat`: the result, NaN made canonical
            // (`arith::out32`); f64 ones as they are.
            macro_rules! f32op {
                ($op:tt) => {
                    map!(d, |x = a, y = b| {
                        let v = f32::from_bits(x as u32) $op f32::from_bits(y as u32);
                        if v.is_nan() { 0x7fff_ffff } else { u64::from(v.to_bits()) }
                    })
                };
            }
            macro_rules! f64op {
                ($op:tt) => {
                    map!(d, |x = a, y = b| (f64::from_bits(x) $op f64::from_bits(y)).to_bits())
                };
            }
            match (op, f64, ftz || sat) {
                (FOp::Add, false, false) => f32op!(+),
                (FOp::Sub, false, false) => f32op!(-),
                (FOp::Mul, false, false) => f32op!(*),
                (FOp::Add, true, false) => f64op!(+),
                (FOp::Sub, true, false) => f64op!(-),
                (FOp::Mul, true, false) => f64op!(*),
                _ => map!(d, |x = a, y = b| arith::float_bin(op, f64, ftz, sat, x, y)),
            }
        }
        &Op::FloatUn {
            op,
            f64,
            ftz,
            sat,
            d,
            a,
        } => map!(d, |x = a| arith::float_un(op, f64, ftz, sat, x)),
        &Op::Fma {
            f64,
            ftz,
            sat,
            d,
            a,
            b,
            c,
        } => match (f64, ftz || sat) {
            (false, false) => map!(d, |x = a, y = b, z = c| {
                let v = f32::from_bits(x as u32)
                    .mul_add(f32::from_bits(y as u32), f32::from_bits(z as u32));
                if v.is_nan() {
                    0x7fff_ffff
                } else {
                    u64::from(v.to_bits())
                }
            }),
            (true, false) => map!(d, |x = a, y = b, z = c| f64::from_bits(x)
                .mul_add(f64::from_bits(y), f64::from_bits(z))
                .to_bits()),
            _ => map!(d, |x = a, y = b, z = c| arith::fma(f64, ftz, sat, x, y, z)),
        },
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
            map!(d, |x = a, y = b| arith::float_dir(op, f64, ftz, sat, rnd, x, y))
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
            map!(d, |x = a, y = b, z = c| arith::fma32_dir(ftz, sat, rnd, x, y, z))
        }
        &Op::MadCc {
            mode,
            ty,
            d,
            a,
            b,
            c,
        } => {
            let carry = &mut s.carry;
            lanes!(|l| {
                r!(d, l) = arith::mad_cc(mode, ty, r!(a, l), r!(b, l), r!(c, l), &mut carry[l])
            });
        }
        &Op::Testp { t: tp, f64, d, a } => {
            map!(d, |x = a| u64::from(arith::testp(tp, f64, x)));
        }
        &Op::Setp {
            cmp,
            ty,
            ftz,
            bop,
            p,
            q,
            a,
            b,
            c: _,
        } if bop == BoolOp::None && q == NO_REG && !ty.is_float() && ty.bits() == 32 => {
            // 32-bit integer compares into one predicate.
            macro_rules! cmp {
                (|$x:ident, $y:ident| $e:expr) => {
                    map!(p, |$x = a, $y = b| u64::from($e))
                };
            }
            match (cmp, ty.is_signed()) {
                (Cmp::Eq, _) => cmp!(|x, y| x as u32 == y as u32),
                (Cmp::Ne, _) => cmp!(|x, y| x as u32 != y as u32),
                (Cmp::Lt, true) => cmp!(|x, y| (x as i32) < (y as i32)),
                (Cmp::Ge, true) => cmp!(|x, y| (x as i32) >= (y as i32)),
                (Cmp::Lt | Cmp::Lo, false) => cmp!(|x, y| (x as u32) < (y as u32)),
                (Cmp::Ge | Cmp::Hs, false) => cmp!(|x, y| (x as u32) >= (y as u32)),
                (Cmp::Gt | Cmp::Hi, false) => cmp!(|x, y| (x as u32) > (y as u32)),
                (Cmp::Le | Cmp::Ls, false) => cmp!(|x, y| (x as u32) <= (y as u32)),
                _ => map!(p, |x = a, y = b| u64::from(arith::compare(cmp, ty, ftz, x, y))),
            }
        }
        &Op::Setp {
            cmp,
            ty,
            ftz,
            bop: BoolOp::None,
            p,
            q,
            a,
            b,
            c: _,
        } if q == NO_REG => map!(p, |x = a, y = b| u64::from(arith::compare(cmp, ty, ftz, x, y))),
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
        } => lanes!(|l| {
            let x = arith::compare(cmp, ty, ftz, r!(a, l), r!(b, l));
            let (v, w) = match bop {
                BoolOp::None => (x, !x),
                BoolOp::And => (x && r!(c, l) != 0, !x && r!(c, l) != 0),
                BoolOp::Or => (x || r!(c, l) != 0, !x || r!(c, l) != 0),
                BoolOp::Xor => (x ^ (r!(c, l) != 0), !x ^ (r!(c, l) != 0)),
            };
            r!(p, l) = u64::from(v);
            if q != NO_REG {
                r!(q, l) = u64::from(w);
            }
        }),
        &Op::Selp { d, a, b, c } => map!(d, |x = a, y = b, z = c| if z != 0 { x } else { y }),
        &Op::Ext {
            d,
            a,
            from,
            signed,
            to,
        } => {
            let (fm, tm) = (mask(u32::from(from)), mask(u32::from(to)));
            if signed {
                map!(d, |x = a| sext(x, u32::from(from)) as u64 & tm);
            } else {
                map!(d, |x = a| x & fm & tm);
            }
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
        } => map!(d, |x = a| arith::cvt(dty, sty, rnd, sat, ftz, u32::from(dbits), x)),
        &Op::Cvta {
            to,
            space,
            bits32,
            d,
            a,
        } => {
            let win = match space {
                MemSpace::Shared => SHARED_WIN,
                MemSpace::Local => LOCAL_WIN,
                MemSpace::KParam => PARAM_WIN,
                _ => 0,
            };
            map!(d, |v = a| {
                let out = if win == 0 {
                    v
                } else if to {
                    if v & WIN_MASK == win { v - win } else { v }
                } else {
                    v.wrapping_add(win)
                };
                if bits32 { out & 0xffff_ffff } else { out }
            });
        }
        &Op::Isspacep { space, d, a } => lanes!(|l| {
            let win = r!(a, l) & WIN_MASK;
            r!(d, l) = u64::from(match space {
                MemSpace::Shared => win == SHARED_WIN,
                MemSpace::Local => win == LOCAL_WIN,
                MemSpace::KParam => win == PARAM_WIN,
                MemSpace::Global => !matches!(win, SHARED_WIN | LOCAL_WIN | PARAM_WIN),
                _ => false,
            })
        }),
        Op::Ld {
            space,
            ty,
            n: k,
            dbits,
            d,
            a,
        } => {
            let size = ty.bytes();
            let len = size * u32::from(*k);
            let shared = &s.shared;
            let hot = &mut s.hot;
            let global = matches!(space, MemSpace::Global | MemSpace::Generic);
            let sh = *space == MemSpace::Shared;
            if let (true, true, 1, &Addr::Reg(r, off)) = (whole, global, *k, a) {
                // As `extend`: sign-extended to `dbits` or kept as read.
                let db = u32::from(*dbits);
                let sext = (ty.is_signed() && ty.bits() < db).then(|| mask(db));
                let at = (d[0], r, off as i64 as u64);
                lanecols::rehot(hot, cache, regs, n, at, len);
                if lanecols::load(regs, tmp, n, *hot, at, size, sext) {
                    return Ok(Flow::Next);
                }
            }
            if let (true, true, 1, &Addr::Reg(r, off)) = (whole, sh, *k, a) {
                let db = u32::from(*dbits);
                let sext = (ty.is_signed() && ty.bits() < db).then(|| mask(db));
                let at = (d[0], r, off as i64 as u64);
                if lanecols::load_shared(regs, tmp, n, shared, at, size, sext) {
                    return Ok(Flow::Next);
                }
            }
            lanes!(|l| {
                let addr = addr_of(cx, regs, n, l, a);
                if global && fast(*hot, addr, len) {
                    for (j, &x) in d.iter().take(usize::from(*k)).enumerate() {
                        let v = host_read(addr + u64::from(j as u32 * size), size);
                        r!(x, l) = extend(v, *ty, *dbits);
                    }
                    continue;
                }
                if sh && fast((0, shared.len() as u64), addr, len) {
                    for (j, &x) in d.iter().take(usize::from(*k)).enumerate() {
                        let v = rd(shared, addr as usize + (j as u32 * size) as usize, size);
                        r!(x, l) = extend(v, *ty, *dbits);
                    }
                    continue;
                }
                let loc = locate(cx, cache, 0, shared.len(), &[], *space, addr, len)?;
                if let Loc::Host(h) = loc
                    && let Some(r) = cache.range_of(h)
                {
                    *hot = r;
                }
                for (j, &x) in d.iter().take(usize::from(*k)).enumerate() {
                    let v = read(cx, loc, &[], shared, &[], j as u32 * size, size);
                    r!(x, l) = extend(v, *ty, *dbits);
                }
            });
        }
        Op::St {
            space,
            ty,
            n: k,
            s: src,
            a,
        } => {
            let size = ty.bytes();
            let len = size * u32::from(*k);
            let shared = &mut s.shared;
            let hot = &mut s.hot;
            let global = matches!(space, MemSpace::Global | MemSpace::Generic);
            let sh = *space == MemSpace::Shared;
            if let (true, true, 1, &Addr::Reg(r, off)) = (whole, global, *k, a) {
                let at = (src[0], r, off as i64 as u64);
                lanecols::rehot(hot, cache, regs, n, at, len);
                if lanecols::store(regs, n, *hot, at, size) {
                    return Ok(Flow::Next);
                }
            }
            if let (true, true, 1, &Addr::Reg(r, off)) = (whole, sh, *k, a)
                && lanecols::store_shared(regs, n, shared, (src[0], r, off as i64 as u64), size)
            {
                return Ok(Flow::Next);
            }
            lanes!(|l| {
                let addr = addr_of(cx, regs, n, l, a);
                if global && fast(*hot, addr, len) {
                    for (j, &x) in src.iter().take(usize::from(*k)).enumerate() {
                        host_write(addr + u64::from(j as u32 * size), size, r!(x, l));
                    }
                    continue;
                }
                if sh && fast((0, shared.len() as u64), addr, len) {
                    for (j, &x) in src.iter().take(usize::from(*k)).enumerate() {
                        wr(
                            shared,
                            addr as usize + (j as u32 * size) as usize,
                            size,
                            r!(x, l),
                        );
                    }
                    continue;
                }
                let loc = locate(cx, cache, 0, shared.len(), &[], *space, addr, len)?;
                if let Loc::Host(h) = loc
                    && let Some(r) = cache.range_of(h)
                {
                    *hot = r;
                }
                for (j, &x) in src.iter().take(usize::from(*k)).enumerate() {
                    let v = r!(x, l);
                    let off = j as u32 * size;
                    match loc {
                        Loc::Host(h) => host_write(h + u64::from(off), size, v),
                        Loc::Shared(o) => wr(shared, o + off as usize, size, v),
                        _ => {
                            return Err(LaunchError::IllegalAddress {
                                addr,
                                len: u64::from(size),
                            });
                        }
                    }
                }
            });
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
            let size = ty.bytes();
            let shared = &mut s.shared;
            let sh = *space == MemSpace::Shared;
            lanes!(|l| {
                let addr = addr_of(cx, regs, n, l, a);
                if sh && fast((0, shared.len() as u64), addr, size) {
                    let o = addr as usize;
                    let old = rd(shared, o, size);
                    let cv = if *c == NO_REG { 0 } else { r!(*c, l) };
                    wr(shared, o, size, atom_apply(*op, *ty, old, r!(*b, l), cv));
                    if *d != NO_REG {
                        r!(*d, l) = old;
                    }
                    continue;
                }
                let loc = locate(cx, cache, 0, shared.len(), &[], *space, addr, size)?;
                let bv = r!(*b, l);
                let cv = if *c == NO_REG { 0 } else { r!(*c, l) };
                let old = match loc {
                    Loc::Host(h) => host_atomic(h, size, *op, *ty, bv, cv),
                    Loc::Shared(o) => {
                        let old = rd(shared, o, size);
                        wr(shared, o, size, atom_apply(*op, *ty, old, bv, cv));
                        old
                    }
                    _ => {
                        return Err(LaunchError::IllegalAddress {
                            addr,
                            len: u64::from(size),
                        });
                    }
                };
                if *d != NO_REG {
                    r!(*d, l) = old;
                }
            });
        }
        &Op::Bra { target } => return Ok(Flow::Jump(target)),
        Op::Shfl { .. }
        | Op::Vote { .. }
        | Op::Redux { .. }
        | Op::MatchAny { .. }
        | Op::MatchAll { .. }
        | Op::WarpSync { .. } => {
            if matches!(group, Group::Some(v) if v.is_empty()) {
                return Ok(Flow::Next);
            }
            return Ok(Flow::Collective);
        }
        Op::Ret | Op::Exit => {
            if matches!(group, Group::Some(v) if v.is_empty()) {
                return Ok(Flow::Next);
            }
            return Ok(Flow::Exit);
        }
        Op::Trap => {
            if matches!(group, Group::Some(v) if v.is_empty()) {
                return Ok(Flow::Next);
            }
            return Err(LaunchError::Trap);
        }
        &Op::Bar { id, .. } => {
            let mut bad = None;
            let mut first = None;
            let mut uniform = true;
            let bars = &mut s.bar;
            group.each(|l| {
                let v = r!(id, l);
                if v >= 16 {
                    bad = Some(v);
                }
                bars[l] = v as u8;
                uniform &= *first.get_or_insert(v) == v;
            });
            if let Some(idv) = bad {
                return Err(LaunchError::IllegalInstruction(format!(
                    "barrier {idv} out of range 0..16"
                )));
            }
            if matches!(group, Group::Some(v) if v.is_empty()) {
                return Ok(Flow::Next);
            }
            return Ok(Flow::Barrier(uniform));
        }
        other => {
            return Err(LaunchError::IllegalInstruction(format!(
                "the lane engine cannot run {other:?}"
            )));
        }
    }
    Ok(Flow::Next)
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

//! Barriers and warp collectives: releasing `bar`/`barrier` when every thread of
//! the block (or the named count) has arrived, and evaluating `vote`, `shfl`,
//! `match`, `redux` and friends once every lane of the group has reached them.

use super::*;

/// The site of operation `pc` (in the function of thread `t`).
pub(super) fn site_of<'a>(cx: &Ctx<'a>, t: &Thread, pc: u32) -> Site<'a> {
    site_at(cx, t.func, pc)
}

/// The site of operation `pc` of function `func`.
pub(super) fn site_at<'a>(cx: &Ctx<'a>, func: u32, pc: u32) -> Site<'a> {
    let func = cx.prog.funcs.get(func as usize);
    Site {
        function: func.map_or("?", |f| f.name.as_str()),
        offset: pc.wrapping_sub(func.map_or(0, |f| f.entry)),
        line: cx.prog.lines.get(pc as usize).copied().unwrap_or(0),
        loc: loc_of(cx, pc),
    }
}

/// The source file and line of the `.loc` in force at operation `pc`, if any (a
/// file the module's `.file` directives name).
pub(super) fn loc_of<'a>(cx: &Ctx<'a>, pc: u32) -> Option<(&'a str, u32)> {
    let &(file, line) = cx.prog.locs.get(pc as usize)?;
    let name = cx.prog.files.iter().find(|(n, _)| *n == file)?;
    Some((name.1.as_str(), line))
}

/// synccheck at the release of block-wide barrier `id`: every thread of the block
/// should wait at it, at one instruction.
#[cold]
fn check_barrier(cx: &Ctx, threads: &[Thread], id: usize, b: &Bar, live: u32) {
    let mut waiting = threads
        .iter()
        .filter(|t| t.status == Status::Barrier(id as u8));
    let Some(first) = waiting.next() else {
        return;
    };
    let other = waiting.find(|t| t.pc != first.pc || t.func != first.func);
    let exited = cx.nthreads.saturating_sub(live);
    if other.is_none() && exited == 0 {
        return;
    }
    cx.mem.sync_fault(&SyncFault {
        kernel: &cx.kernel.name,
        site: site_of(cx, first, first.pc),
        tid: first.tid,
        ctaid: cx.ctaid,
        error: SyncError::DivergentBarrier {
            barrier: id as u32,
            waiting: b.waiting,
            threads: cx.nthreads,
            exited,
            other: other.map(|t| site_of(cx, t, t.pc)),
        },
    });
}

/// synccheck when a warp collective fires for the lanes `group` (lane `l` first)
/// with member mask `mask`: every lane it names should take part.
#[cold]
fn check_mask(cx: &Ctx, lanes: &[Thread], l: usize, mask: u32, live: u32) {
    let exists = if lanes.len() >= 32 {
        u32::MAX
    } else {
        (1u32 << lanes.len()) - 1
    };
    let (exited, missing) = (mask & exists & !live, mask & !exists);
    if exited | missing == 0 {
        return;
    }
    let Some(t) = lanes.get(l) else {
        return;
    };
    let op = match cx.code.get(t.pc as usize).map(|i| &i.op) {
        Some(Op::Shfl { .. }) => "shfl.sync",
        Some(Op::Vote { .. }) => "vote.sync",
        Some(Op::Redux { .. }) => "redux.sync",
        Some(Op::MatchAny { .. } | Op::MatchAll { .. }) => "match.sync",
        Some(Op::WarpSync { .. }) => "bar.warp.sync",
        _ => "a warp-synchronous instruction",
    };
    cx.mem.sync_fault(&SyncFault {
        kernel: &cx.kernel.name,
        site: site_of(cx, t, t.pc),
        tid: t.tid,
        ctaid: cx.ctaid,
        error: SyncError::BadMask {
            op,
            mask,
            exited,
            missing,
        },
    });
}

/// Releases every barrier whose arrivals are complete. Returns whether any was.
pub(super) fn release_barriers(
    cx: &Ctx,
    threads: &mut [Thread],
    bars: &mut [Bar; 16],
    live: u32,
) -> bool {
    let mut any = false;
    for (id, bar) in bars.iter_mut().enumerate() {
        let b = *bar;
        if b.waiting == 0 || !((b.count > 0 && b.arrived >= b.count) || b.waiting >= live) {
            continue;
        }
        if cx.checks & CHECK_SYNC != 0 && b.count == 0 {
            check_barrier(cx, threads, id, &b, live);
        }
        if cx.checks & CHECK_RACE != 0 {
            race::barrier(cx);
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

/// The kind of warp collective `op` is (lanes pair only with lanes at the same
/// kind) and the register holding its member mask; `None` for other operations
/// (and `activemask`, which has no mask).
pub(super) fn collective_kind(op: &Op) -> Option<(u8, Reg)> {
    Some(match op {
        Op::Shfl { mask, .. } => (0, *mask),
        Op::Vote { mask, .. } => (1, *mask),
        Op::Redux { mask, .. } => (2, *mask),
        Op::MatchAny { mask, .. } | Op::MatchAll { mask, .. } => (3, *mask),
        Op::WarpSync { mask } => (4, *mask),
        _ => return None,
    })
}

/// What a lane waiting at a warp collective waits for: the kind of collective and
/// its member mask (the lane itself included). Lanes match when both are equal.
pub(super) fn collective_key(cx: &Ctx, t: &Thread, lane: usize) -> Option<(u8, u32)> {
    let (kind, mask) = collective_kind(&cx.code.get(t.pc as usize)?.op)?;
    Some((kind, (t.reg(mask) as u32) | (1 << lane)))
}

/// Evaluates the warp collectives whose member lanes have all arrived. Returns
/// whether any was evaluated.
///
/// A group is the set of lanes waiting at the same kind of collective with the same
/// member mask (PTX pairs `shfl.sync` and friends by mask, not by instruction); it
/// fires once every live lane of the mask is in it. `activemask` instead groups the
/// lanes waiting at the same instruction: they are the ones that are converged.
pub(super) fn fire_warp(cx: &Ctx, lanes: &mut [Thread]) -> bool {
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
                if cx.checks & CHECK_SYNC != 0 && key.1 & !live != 0 {
                    check_mask(cx, lanes, l, key.1, live);
                }
                same
            }
            None => (0..lanes.len())
                .filter(|&k| lanes[k].status == Status::Warp && lanes[k].pc == pc)
                .fold(0u32, |g, k| g | (1 << k)),
        };
        let group = group & !done;
        if cx.checks & CHECK_RACE != 0 {
            race::warp(cx, lanes[l].warp);
        }
        eval_collective(cx, lanes, group);
        done |= group;
    }
    done != 0
}

/// Evaluates the collectives of the lanes in `group` together, each with its own
/// operation, then moves them past it.
pub(super) fn eval_collective(cx: &Ctx, lanes: &mut [Thread], group: u32) {
    eval_lanes(cx, lanes, group);
    for (l, t) in lanes.iter_mut().enumerate() {
        if group & (1 << l) != 0 {
            t.pc += 1;
            t.status = Status::Ready;
        }
    }
}

/// The lanes of one warp as a collective sees them: where each is and its
/// registers (the reference's threads, or the lane engine's columns).
pub(super) trait WarpLanes {
    /// The operation lane `l` is at.
    fn pc(&self, l: usize) -> u32;
    /// Register `r` of lane `l`.
    fn get(&self, l: usize, r: Reg) -> u64;
    /// Sets register `r` of lane `l`.
    fn put(&mut self, l: usize, r: Reg, v: u64);
}

impl WarpLanes for [Thread] {
    fn pc(&self, l: usize) -> u32 {
        self.get(l).map_or(u32::MAX, |t| t.pc)
    }
    fn get(&self, l: usize, r: Reg) -> u64 {
        <[Thread]>::get(self, l).map_or(0, |t| t.reg(r))
    }
    fn put(&mut self, l: usize, r: Reg, v: u64) {
        if let Some(t) = self.get_mut(l) {
            t.set(r, v);
        }
    }
}

/// The lane that lane `lane` of a `shfl` in `mode` reads, from its lane operand
/// `b` and its clamp and segment operand `c` (`None`: out of range, it keeps its
/// own value; a lane that takes no part is the caller's to refuse), and the
/// predicate it gets.
pub(super) fn shfl_source(mode: ShflMode, lane: usize, b: u64, c: u64) -> (Option<usize>, bool) {
    let lane = lane as i32;
    let bval = (b & 0x1f) as i32;
    let seg = ((c >> 8) & 0x1f) as i32;
    let clamp = (c & 0x1f) as i32;
    let max_lane = (lane & seg) | (clamp & !seg);
    let (j, ok) = match mode {
        ShflMode::Up => (lane - bval, lane - bval >= max_lane),
        ShflMode::Down => (lane + bval, lane + bval <= max_lane),
        ShflMode::Bfly => (lane ^ bval, (lane ^ bval) <= max_lane),
        ShflMode::Idx => {
            let j = (lane & seg) | (bval & !seg);
            (j, j <= max_lane)
        }
    };
    ((ok && (0..32).contains(&j)).then_some(j as usize), ok)
}

/// Computes the results of the collectives of the lanes in `group` (bit `l`: lane
/// `l` of the warp), each lane at its own operation: the one definition both
/// engines use. Positions are left to the caller.
pub(super) fn eval_lanes<W: WarpLanes + ?Sized>(cx: &Ctx, lanes: &mut W, group: u32) {
    let op_of = |lanes: &W, l: usize| cx.code.get(lanes.pc(l) as usize).map(|i| &i.op);
    let members = || (0..32usize).filter(move |&l| group & (1 << l) != 0);
    let mut val = [0u64; 32];
    for l in members() {
        val[l] = match op_of(lanes, l) {
            Some(Op::Shfl { a, .. } | Op::Redux { a, .. }) => lanes.get(l, *a) & 0xffff_ffff,
            Some(Op::Vote { a, .. }) => lanes.get(l, *a) & 1,
            Some(Op::MatchAny { a, bits64, .. } | Op::MatchAll { a, bits64, .. }) => {
                lanes.get(l, *a) & if *bits64 { u64::MAX } else { 0xffff_ffff }
            }
            _ => 0,
        };
    }
    let ballot = members()
        .filter(|&l| val[l] != 0)
        .fold(0u32, |b, l| b | (1 << l));
    for l in members() {
        match op_of(lanes, l) {
            Some(&Op::Shfl {
                mode, d, p, b, c, ..
            }) => {
                let (from, ok) = shfl_source(mode, l, lanes.get(l, b), lanes.get(l, c));
                let j = from.filter(|&j| group & (1 << j) != 0).unwrap_or(l);
                lanes.put(l, d, val[j]);
                if p != NO_REG {
                    lanes.put(l, p, u64::from(ok));
                }
            }
            Some(&Op::Vote { mode, d, .. }) => {
                let v = match mode {
                    VoteMode::All => u64::from(ballot == group),
                    VoteMode::Any => u64::from(ballot != 0),
                    VoteMode::Uni => u64::from(ballot == 0 || ballot == group),
                    VoteMode::Ballot => u64::from(ballot),
                };
                lanes.put(l, d, v);
            }
            Some(&Op::Activemask { d }) => lanes.put(l, d, u64::from(group)),
            Some(&Op::Redux { op, signed, d, .. }) => {
                let acc = members()
                    .map(|k| val[k])
                    .reduce(|x, v| arith::redux(op, signed, x, v));
                lanes.put(l, d, acc.unwrap_or(0));
            }
            Some(&Op::MatchAny { d, .. }) => {
                let m = members()
                    .filter(|&k| val[k] == val[l])
                    .fold(0u32, |b, k| b | (1 << k));
                lanes.put(l, d, u64::from(m));
            }
            Some(&Op::MatchAll { d, p, .. }) => {
                let same = members().all(|k| val[k] == val[l]);
                lanes.put(l, d, if same { u64::from(group) } else { 0 });
                if p != NO_REG {
                    lanes.put(l, p, u64::from(same));
                }
            }
            _ => {}
        }
    }
}

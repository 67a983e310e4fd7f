//! racecheck's shadow of shared memory: for each byte of a block's shared memory,
//! the last store and the loads since, each with its thread, instruction and the
//! synchronisation epoch it happened in; an access by another thread in the same
//! epoch is a hazard, reported through [`DeviceMemory::race`].
//!
//! A block's epoch advances when one of its barriers releases (any barrier: a
//! barrier with a thread count is taken as syncing the whole block, so races
//! across it are missed rather than invented) and when a cluster barrier
//! completes; a warp's own epoch advances when one of its warp collectives fires
//! (`bar.warp.sync`, `shfl.sync`, ...), which orders accesses of lanes of that warp.
//! Atomics are not hazards and are not recorded. Only the block's own shared
//! memory is shadowed (not a cluster peer's). The shadow is kept per host thread,
//! per resident block (one at a time, except in a cluster or cooperative launch),
//! and made only when racecheck is on.

use super::*;
use std::cell::RefCell;
use std::collections::HashMap;

/// No thread (ids are stored + 1).
const NONE: u32 = 0;

#[derive(Debug, Clone, Copy, Default)]
struct Access {
    /// Block epoch, and the accessing warp's epoch then.
    epoch: u64,
    wepoch: u64,
    /// Thread (linear id + 1; `NONE`: no access), its function and pc.
    thread: u32,
    func: u32,
    pc: u32,
}

#[derive(Debug, Clone, Copy, Default)]
struct Byte {
    store: Access,
    /// The first load since the store, in the current epoch.
    load: Access,
    /// Another thread's load since (thread + 1, function, pc), if any.
    load2: (u32, u32, u32),
}

#[derive(Debug, Default)]
struct Block {
    /// Starts at 1: a zeroed record (epoch 0) is no access.
    epoch: u64,
    warps: Vec<u64>,
    bytes: Vec<Byte>,
}

thread_local! {
    /// The blocks of the running launch: (grid id, ctaid) → shadow.
    static SHADOW: RefCell<HashMap<(u64, [u32; 3]), Block>> = RefCell::new(HashMap::new());
}

/// Forgets every shadow (at the start and the end of a launch with racecheck).
pub(super) fn reset() {
    SHADOW.with_borrow_mut(HashMap::clear);
}

fn with_block<T>(cx: &Ctx, f: impl FnOnce(&mut Block) -> T) -> T {
    SHADOW.with_borrow_mut(|m| {
        let b = m.entry((cx.gridid, cx.ctaid)).or_insert_with(|| Block {
            epoch: 1,
            ..Block::default()
        });
        f(b)
    })
}

/// A barrier of the running block released.
pub(super) fn barrier(cx: &Ctx) {
    with_block(cx, |b| b.epoch += 1);
}

/// A thread of the running block made a fence (also `ld.acquire`, `st.release` and
/// atomics with `.acquire`/`.release`/`.acq_rel`): taken as ordering every access
/// of the block before it with every access after it, so that synchronisation
/// through memory (cooperative groups' tiles of more than a warp) is no hazard.
/// Races across a fence are missed rather than invented.
pub(super) fn fence(cx: &Ctx) {
    with_block(cx, |b| b.epoch += 1);
}

/// A cluster barrier completed: every block of the launch is synchronised.
pub(super) fn all_blocks() {
    SHADOW.with_borrow_mut(|m| m.values_mut().for_each(|b| b.epoch += 1));
}

/// A warp collective of warp `w` of the running block fired.
pub(super) fn warp(cx: &Ctx, w: u32) {
    with_block(cx, |b| {
        let w = w as usize;
        if b.warps.len() <= w {
            b.warps.resize(w + 1, 0);
        }
        b.warps[w] += 1;
    });
}

/// The `%tid` of linear thread `id` of the block.
fn tid_of(cx: &Ctx, id: u32) -> [u32; 3] {
    let [bx, by, _] = cx.block;
    [id % bx, (id / bx) % by.max(1), id / (bx * by.max(1)).max(1)]
}

/// Whether an earlier access `a` (by another thread) is unordered with one by warp
/// `w` at `(func, pc)` now: same block epoch, and for a lane of the same warp not
/// ordered by one of its collectives nor the same instruction (a warp executes one
/// instruction for all its lanes at once).
fn unordered(b: &Block, a: &Access, me: u32, w: u32, (func, pc): (u32, u32)) -> bool {
    if a.thread == NONE || a.thread == me || a.epoch != b.epoch {
        return false;
    }
    if (a.thread - 1) / 32 == w {
        let now = b.warps.get(w as usize).copied().unwrap_or(0);
        return now == a.wepoch && (a.func, a.pc) != (func, pc);
    }
    true
}

/// Records a load (`store == false`) or store of `len` bytes at shared offset
/// `off` by thread `t` at `pc`, reporting the first hazard it makes.
#[cold]
#[inline(never)]
pub(super) fn access(cx: &Ctx, t: &Thread, pc: usize, off: usize, len: u32, store: bool) {
    let me = t.warp * 32 + t.lane + 1;
    let here = (t.func, pc as u32);
    let mut found: Option<(Hazard, Access, usize)> = None;
    with_block(cx, |b| {
        let end = off + len as usize;
        if b.bytes.len() < end {
            b.bytes
                .resize(end.max(cx.shared_bytes as usize), Byte::default());
        }
        let wepoch = b.warps.get(t.warp as usize).copied().unwrap_or(0);
        let now = Access {
            epoch: b.epoch,
            wepoch,
            thread: me,
            func: t.func,
            pc: pc as u32,
        };
        for i in off..end {
            let Some(&byte) = b.bytes.get(i) else { break };
            if found.is_none() {
                if unordered(b, &byte.store, me, t.warp, here) {
                    let h = if store {
                        Hazard::WriteAfterWrite
                    } else {
                        Hazard::ReadAfterWrite
                    };
                    found = Some((h, byte.store, i));
                } else if store && unordered(b, &byte.load, me, t.warp, here) {
                    found = Some((Hazard::WriteAfterRead, byte.load, i));
                } else if store && byte.load.epoch == b.epoch && byte.load2.0 != NONE {
                    // The first load was this thread's own; another thread's
                    // followed it.
                    let (thread, func, pc) = byte.load2;
                    let other = Access {
                        thread,
                        func,
                        pc,
                        ..byte.load
                    };
                    if unordered(b, &other, me, t.warp, here) {
                        found = Some((Hazard::WriteAfterRead, other, i));
                    }
                }
            }
            let Some(slot) = b.bytes.get_mut(i) else {
                break;
            };
            if store {
                *slot = Byte {
                    store: now,
                    ..Byte::default()
                };
            } else if byte.load.epoch != b.epoch || byte.load.thread == NONE {
                slot.load = now;
                slot.load2 = (NONE, 0, 0);
            } else if byte.load.thread != me && byte.load2.0 == NONE {
                slot.load2 = (me, t.func, pc as u32);
            }
        }
    });
    let Some((hazard, first, at)) = found else {
        return;
    };
    let first_thread = first.thread - 1;
    cx.mem.race(&Race {
        kernel: &cx.kernel.name,
        ctaid: cx.ctaid,
        hazard,
        addr: at as u64,
        size: len,
        first: (tid_of(cx, first_thread), site_at(cx, first.func, first.pc)),
        second: (t.tid, site_at(cx, t.func, pc as u32)),
    });
}

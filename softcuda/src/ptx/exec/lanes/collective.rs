//! The lane engine's warp collectives (`shfl`, `vote`, `redux`, `match`,
//! `bar.warp.sync`): evaluated at once for a converged block whose every warp
//! arrives together with one mask, else fired warp by warp once the lanes a mask
//! names have all arrived (the results from `warp::eval_lanes`, as the reference's).

use super::*;

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
pub(super) fn converged_collective(
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
pub(super) fn fire_warps_of(cx: &Ctx, s: &mut Lanes, n: usize, lanes: &[u32]) -> usize {
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

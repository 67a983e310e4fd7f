//! The lane engine's per-operation loops over whole register columns: when an
//! operation runs for every lane `0..n` of a block (the common, converged case),
//! its registers are taken once as slices of `n` lanes (register `r` at
//! `r * n..(r + 1) * n`), so that the loop over the lanes is one tight loop with no
//! bounds check per lane, which the compiler can vectorise.
//!
//! Each function returns false, having done nothing, where it cannot take the
//! columns (a register out of range): the caller then runs its per-lane loop,
//! which is the reference for what these compute.

use super::RegionCache;
use super::lanes::fast;
use super::memory::{host_atomic, host_read, host_write, rd, wr};
use crate::ptx::ir::{AtomOp, NO_REG, Reg, Ty};

/// Column `r` (lanes `0..n`) of `regs`, or `None` if out of range.
#[inline(always)]
fn col(regs: &[u64], n: usize, r: Reg) -> Option<&[u64]> {
    let start = (r as usize).checked_mul(n)?;
    regs.get(start..start.checked_add(n)?)
}

/// Column `r` (lanes `0..n`) of `regs`, mutable, or `None` if out of range.
#[inline(always)]
fn col_mut(regs: &mut [u64], n: usize, r: Reg) -> Option<&mut [u64]> {
    let start = (r as usize).checked_mul(n)?;
    regs.get_mut(start..start.checked_add(n)?)
}

/// The destination column `d`, mutable, and the source columns `srcs`, read-only:
/// a source that is `d` itself is read from a copy in `tmp` (the result of lane
/// `l` depends only on lane `l`'s sources, so reading the old values is what the
/// per-lane loop does). `None` if a register is out of range.
#[inline(always)]
fn split<'a, const K: usize>(
    regs: &'a mut [u64],
    tmp: &'a mut Vec<u64>,
    n: usize,
    d: Reg,
    srcs: [Reg; K],
) -> Option<(&'a mut [u64], [&'a [u64]; K])> {
    let start = (d as usize).checked_mul(n)?;
    let end = start.checked_add(n)?;
    if end > regs.len() {
        return None;
    }
    if srcs.contains(&d) {
        tmp.clear();
        tmp.extend_from_slice(regs.get(start..end)?);
    }
    let (lo, rest) = regs.split_at_mut(start);
    let (dst, hi) = rest.split_at_mut(n);
    let (lo, hi, tmp): (&[u64], &[u64], &[u64]) = (lo, hi, tmp);
    let mut out: [&[u64]; K] = [&[]; K];
    for (o, &s) in out.iter_mut().zip(&srcs) {
        *o = match (s as usize).cmp(&(d as usize)) {
            std::cmp::Ordering::Less => col(lo, n, s)?,
            std::cmp::Ordering::Equal => tmp,
            std::cmp::Ordering::Greater => col(hi, n, s - d - 1)?,
        };
    }
    Some((dst, out))
}

/// `d[l] = f(a[l])` for every lane.
#[inline(always)]
pub(super) fn map1(
    regs: &mut [u64],
    tmp: &mut Vec<u64>,
    n: usize,
    d: Reg,
    a: Reg,
    f: impl Fn(u64) -> u64,
) -> bool {
    if a == d {
        // In place: lane `l` reads its own old value before it writes it.
        let Some(dst) = col_mut(regs, n, d) else {
            return false;
        };
        for o in dst {
            *o = f(*o);
        }
        return true;
    }
    let Some((dst, [a])) = split(regs, tmp, n, d, [a]) else {
        return false;
    };
    for (o, &x) in dst.iter_mut().zip(a) {
        *o = f(x);
    }
    true
}

/// `d[l] = f(a[l], b[l])` for every lane.
#[inline(always)]
pub(super) fn map2(
    regs: &mut [u64],
    tmp: &mut Vec<u64>,
    n: usize,
    d: Reg,
    [a, b]: [Reg; 2],
    f: impl Fn(u64, u64) -> u64,
) -> bool {
    // One source the destination itself (a loop counter, an accumulator): in
    // place, with no copy of the column.
    if (a == d) != (b == d) {
        let other = if a == d { b } else { a };
        let Some((dst, [y])) = split(regs, tmp, n, d, [other]) else {
            return false;
        };
        if a == d {
            for (o, &y) in dst.iter_mut().zip(y) {
                *o = f(*o, y);
            }
        } else {
            for (o, &x) in dst.iter_mut().zip(y) {
                *o = f(x, *o);
            }
        }
        return true;
    }
    let Some((dst, [a, b])) = split(regs, tmp, n, d, [a, b]) else {
        return false;
    };
    for ((o, &x), &y) in dst.iter_mut().zip(a).zip(b) {
        *o = f(x, y);
    }
    true
}

/// `d[l] = f(a[l], b[l], c[l])` for every lane.
#[inline(always)]
pub(super) fn map3(
    regs: &mut [u64],
    tmp: &mut Vec<u64>,
    n: usize,
    d: Reg,
    [a, b, c]: [Reg; 3],
    f: impl Fn(u64, u64, u64) -> u64,
) -> bool {
    let Some((dst, [a, b, c])) = split(regs, tmp, n, d, [a, b, c]) else {
        return false;
    };
    for (((o, &x), &y), &z) in dst.iter_mut().zip(a).zip(b).zip(c) {
        *o = f(x, y, z);
    }
    true
}

/// `d[l] = l` for every lane.
pub(super) fn iota(regs: &mut [u64], n: usize, d: Reg) -> bool {
    let start = (d as usize).saturating_mul(n);
    let Some(dst) = regs.get_mut(start..start.saturating_add(n)) else {
        return false;
    };
    for (l, o) in dst.iter_mut().enumerate() {
        *o = l as u64;
    }
    true
}

/// Whether, for every lane, `a[l] + off` is the address of an access of `len`
/// bytes inside `hot` and aligned (the engine's `fast` check, for all lanes at
/// once).
#[inline(always)]
fn all_fast(hot: (u64, u64), a: &[u64], off: u64, len: u32) -> bool {
    let len = u64::from(len);
    // An aligned access of `len` (a power of two) bytes that starts inside
    // `[lo, hi - len]` ends inside `hot`.
    let Some(last) = hot.1.checked_sub(len) else {
        return false;
    };
    let Some(span) = last.checked_sub(hot.0) else {
        return false;
    };
    // `p` in `[lo, last]` is `p - lo <= span` (wrapping): one compare a lane.
    let (mut out, mut bits) = (false, 0u64);
    for &x in a {
        let p = x.wrapping_add(off);
        out |= p.wrapping_sub(hot.0) > span;
        bits |= p;
    }
    !out && bits & (len - 1) == 0
}

/// A global load of `size` bytes at `a[l] + off` into `d[l]` for every lane, each
/// value sign-extended from `size` bytes and masked to `sext` (bits kept) where
/// that is given, when every access is inside `hot` (memory the launch may touch)
/// and aligned. False, having done nothing, otherwise.
#[inline(always)]
pub(super) fn load(
    regs: &mut [u64],
    tmp: &mut Vec<u64>,
    n: usize,
    hot: (u64, u64),
    (d, a, off): (Reg, Reg, u64),
    size: u32,
    sext: Option<u64>,
) -> bool {
    let Some((dst, [a])) = split(regs, tmp, n, d, [a]) else {
        return false;
    };
    if !all_fast(hot, a, off, size) {
        return false;
    }
    // The accesses are checked; `host_read` of each (one width per loop).
    macro_rules! go {
        ($size:literal) => {
            if let Some(keep) = sext {
                let sh = 64 - 8 * $size;
                for (o, &x) in dst.iter_mut().zip(a) {
                    let v = host_read(x.wrapping_add(off), $size);
                    *o = (((v << sh) as i64 >> sh) as u64) & keep;
                }
            } else {
                for (o, &x) in dst.iter_mut().zip(a) {
                    *o = host_read(x.wrapping_add(off), $size);
                }
            }
        };
    }
    match size {
        4 => go!(4),
        8 => go!(8),
        2 => go!(2),
        1 => go!(1),
        _ => return false,
    }
    true
}

/// A global store of `size` bytes of `v[l]` at `a[l] + off` for every lane, in
/// lane order, when every access is inside `hot` and aligned. False, having done
/// nothing, otherwise.
#[inline(always)]
pub(super) fn store(
    regs: &[u64],
    n: usize,
    hot: (u64, u64),
    (v, a, off): (Reg, Reg, u64),
    size: u32,
) -> bool {
    let (Some(v), Some(a)) = (col(regs, n, v), col(regs, n, a)) else {
        return false;
    };
    if !all_fast(hot, a, off, size) {
        return false;
    }
    macro_rules! go {
        ($size:literal) => {
            for (&x, &p) in v.iter().zip(a) {
                host_write(p.wrapping_add(off), $size, x);
            }
        };
    }
    match size {
        4 => go!(4),
        8 => go!(8),
        2 => go!(2),
        1 => go!(1),
        _ => return false,
    }
    true
}

/// The lanes `0..n` whose guard (register `g`, negated if `neg`) holds, into
/// `out` (empty on entry): `Some(true)`, `out` left empty, if it holds for every
/// lane; `None` if the register is out of range.
pub(super) fn guarded(
    regs: &[u64],
    n: usize,
    g: Reg,
    neg: bool,
    out: &mut Vec<u32>,
) -> Option<bool> {
    let c = col(regs, n, g)?;
    // Counted first (a loop the compiler vectorises): most guards hold for all
    // lanes or for none (a branch over a kernel's body).
    match c.iter().filter(|&&v| (v != 0) != neg).count() {
        0 => {}
        h if h == n => return Some(true),
        _ => out.extend(
            (0..n as u32)
                .zip(c)
                .filter(|&(_, &v)| (v != 0) != neg)
                .map(|(l, _)| l),
        ),
    }
    Some(false)
}

/// Before a whole-block access at register `at.1` plus `at.2`: if lane 0's
/// address is outside `hot`, the cached range holding it (if any) becomes `hot`
/// (the range the per-lane loop would switch to at lane 0).
#[inline(always)]
pub(super) fn rehot(
    hot: &mut (u64, u64),
    cache: &RegionCache,
    regs: &[u64],
    n: usize,
    at: (Reg, Reg, u64),
    len: u32,
) {
    if let Some(&v) = regs.get(at.1 as usize * n) {
        let a0 = v.wrapping_add(at.2);
        if !fast(*hot, a0, len)
            && let Some(r) = cache.range_of(a0)
        {
            *hot = r;
        }
    }
}

/// A shared load of `size` bytes at `a[l] + off` into `d[l]` for every lane (as
/// [`load`], `sext` the same), when every access is inside `shared` and aligned.
/// False, having done nothing, otherwise.
#[inline(always)]
pub(super) fn load_shared(
    regs: &mut [u64],
    tmp: &mut Vec<u64>,
    n: usize,
    shared: &[u8],
    (d, a, off): (Reg, Reg, u64),
    size: u32,
    sext: Option<u64>,
) -> bool {
    let Some((dst, [a])) = split(regs, tmp, n, d, [a]) else {
        return false;
    };
    if !matches!(size, 1 | 2 | 4 | 8) || !all_fast((0, shared.len() as u64), a, off, size) {
        return false;
    }
    let sh = 64 - 8 * size;
    for (o, &x) in dst.iter_mut().zip(a) {
        let v = rd(shared, x.wrapping_add(off) as usize, size);
        *o = match sext {
            Some(keep) => (((v << sh) as i64 >> sh) as u64) & keep,
            None => v,
        };
    }
    true
}

/// A shared store of `size` bytes of `v[l]` at `a[l] + off` for every lane, in
/// lane order, when every access is inside `shared` and aligned. False, having
/// done nothing, otherwise.
#[inline(always)]
pub(super) fn store_shared(
    regs: &[u64],
    n: usize,
    shared: &mut [u8],
    (v, a, off): (Reg, Reg, u64),
    size: u32,
) -> bool {
    let (Some(v), Some(a)) = (col(regs, n, v), col(regs, n, a)) else {
        return false;
    };
    if !matches!(size, 1 | 2 | 4 | 8) || !all_fast((0, shared.len() as u64), a, off, size) {
        return false;
    }
    for (&x, &p) in v.iter().zip(a) {
        wr(shared, p.wrapping_add(off) as usize, size, x);
    }
    true
}

/// The columns `regs[r * n..][..n]` of the registers an atomic operation reads
/// (address `a`, operand `b`, the `cas` value `c` if it names one) and writes (`d`
/// if it names one) are all in range.
#[inline(always)]
fn atom_cols(regs: &[u64], n: usize, d: Reg, [a, b, c]: [Reg; 3]) -> bool {
    [a, b].iter().all(|&r| col(regs, n, r).is_some())
        && [c, d]
            .iter()
            .all(|&r| r == NO_REG || col(regs, n, r).is_some())
}

/// An atomic operation for every lane, in lane order (as the per-lane loop: lane
/// `l` sees the stores of lanes `0..l`): `apply(a[l] + off, b[l], c[l])` (`c` 0
/// where it names no register) does it and returns the old value, which goes to
/// `d[l]` if `d` names a register; when every access of `size` bytes is inside
/// `range` and aligned. False, having done nothing, otherwise.
#[inline(always)]
fn atom_lanes(
    regs: &mut [u64],
    n: usize,
    range: (u64, u64),
    (d, a, off): (Reg, Reg, u64),
    [b, c]: [Reg; 2],
    size: u32,
    mut apply: impl FnMut(u64, u64, u64) -> u64,
) -> bool {
    if !atom_cols(regs, n, d, [a, b, c])
        || !col(regs, n, a).is_some_and(|a| all_fast(range, a, off, size))
    {
        return false;
    }
    let (a, b) = (a as usize * n, b as usize * n);
    let c = (c != NO_REG).then(|| c as usize * n);
    let d = (d != NO_REG).then(|| d as usize * n);
    // Lane `l` reads its sources before it writes `d[l]` (`d` may be one of them).
    for l in 0..n {
        let cv = c.map_or(0, |c| regs[c + l]);
        let old = apply(regs[a + l].wrapping_add(off), regs[b + l], cv);
        if let Some(d) = d {
            regs[d + l] = old;
        }
    }
    true
}

/// An atomic operation on shared memory of `size` (4 or 8) bytes for every lane
/// ([`atom_lanes`]): the value becomes `f(old, b[l], c[l])`.
#[inline(always)]
pub(super) fn atom_shared(
    regs: &mut [u64],
    n: usize,
    shared: &mut [u8],
    at: (Reg, Reg, u64),
    srcs: [Reg; 2],
    size: u32,
    f: impl Fn(u64, u64, u64) -> u64,
) -> bool {
    let range = (0, shared.len() as u64);
    // One loop per width.
    macro_rules! go {
        ($size:literal) => {
            atom_lanes(regs, n, range, at, srcs, $size, |p, x, y| {
                let old = rd(shared, p as usize, $size);
                wr(shared, p as usize, $size, f(old, x, y));
                old
            })
        };
    }
    match size {
        4 => go!(4),
        8 => go!(8),
        _ => false,
    }
}

/// An atomic operation on global memory for every lane ([`atom_lanes`]) through
/// `host_atomic` (other blocks run at the same time on other host threads), when
/// every access is inside `hot`.
#[inline(always)]
pub(super) fn atom_global(
    regs: &mut [u64],
    n: usize,
    hot: (u64, u64),
    at: (Reg, Reg, u64),
    srcs: [Reg; 2],
    (op, ty): (AtomOp, Ty),
) -> bool {
    let size = ty.bytes();
    matches!(size, 4 | 8)
        && atom_lanes(regs, n, hot, at, srcs, size, |p, x, y| {
            host_atomic(p, size, op, ty, x, y)
        })
}

/// `fma.rn` without `.ftz` or `.sat` for every lane: `d[l] = a[l] * b[l] + c[l]`
/// rounded once, in f32 (a NaN result the canonical `0x7fff_ffff`) or, if
/// `f64`, in f64, with the processor's FMA instruction. The build targets the
/// baseline x86-64, where `mul_add` is a library call per lane; this loop is
/// compiled with FMA enabled and chosen at run time where the processor has it.
/// False, having done nothing, where it does not (or a register is out of
/// range): the caller's loop then computes the same bits (a fused multiply-add
/// has one correctly rounded result; which operand's payload an f64 NaN result
/// carries is the one thing the instruction may choose differently, so a NaN is
/// recomputed the caller's way, [`fma64_lib`]).
#[inline(always)]
pub(super) fn fma(
    regs: &mut [u64],
    tmp: &mut Vec<u64>,
    n: usize,
    d: Reg,
    srcs: [Reg; 3],
    f64: bool,
) -> bool {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("fma") {
        let Some((dst, [a, b, c])) = split(regs, tmp, n, d, srcs) else {
            return false;
        };
        // SAFETY: the processor has FMA (checked just above), the one condition
        // for calling a function compiled with it enabled.
        unsafe { fma_hw(dst, a, b, c, f64) };
        return true;
    }
    let _ = (regs, tmp, n, d, srcs, f64);
    false
}

/// [`fma`]'s loops, compiled with FMA enabled (`mul_add` becomes one instruction).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "fma")]
fn fma_hw(dst: &mut [u64], a: &[u64], b: &[u64], c: &[u64], f64: bool) {
    let lanes = dst.iter_mut().zip(a).zip(b).zip(c);
    if f64 {
        for (((o, &x), &y), &z) in lanes {
            let v = f64::from_bits(x).mul_add(f64::from_bits(y), f64::from_bits(z));
            *o = if v.is_nan() {
                fma64_lib(x, y, z)
            } else {
                v.to_bits()
            };
        }
    } else {
        for (((o, &x), &y), &z) in lanes {
            let v = f32::from_bits(x as u32)
                .mul_add(f32::from_bits(y as u32), f32::from_bits(z as u32));
            *o = if v.is_nan() {
                0x7fff_ffff
            } else {
                u64::from(v.to_bits())
            };
        }
    }
}

/// An f64 `fma` as the per-lane loop computes it (`mul_add` of the baseline
/// build, the library's): not inlined, so not compiled with FMA enabled.
#[inline(never)]
fn fma64_lib(x: u64, y: u64, z: u64) -> u64 {
    f64::from_bits(x)
        .mul_add(f64::from_bits(y), f64::from_bits(z))
        .to_bits()
}

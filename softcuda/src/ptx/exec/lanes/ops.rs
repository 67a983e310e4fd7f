//! The lane engine's operations: one decoded instruction run for a group of a
//! block's lanes (every lane `0..n` through the whole-column loops of `lanecols`,
//! else lane by lane), with the reference's arithmetic and checked memory access.

use super::*;

/// The value of `a` (an address operand) for lane `l`.
#[inline(always)]
fn addr_of(cx: &Ctx, regs: &[u64], n: usize, l: usize, a: &Addr) -> u64 {
    addr_with(cx, a, |r| regs[r as usize * n + l], 0)
}

/// Runs `inst` for the lanes of `group` (guards applied). On an x86-64 processor
/// with AVX2, through a copy of the operations compiled with it enabled, so that
/// the column loops take four 64-bit lanes at a time instead of two. The results
/// are the same: integer and IEEE floating-point operations do not depend on the
/// instruction set, and FMA is not enabled here (`mul_add` stays the library's, as
/// in the reference; `fma.rn` has its own loop, [`lanecols::fma`]).
pub(super) fn step(
    cx: &Ctx,
    s: &mut Lanes,
    cache: &mut RegionCache,
    n: usize,
    inst: &Inst,
    group: Group,
) -> Result<Flow, LaunchError> {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: the processor has AVX2 (checked just above), the one condition
        // for calling a function compiled with it enabled.
        return unsafe { step_avx2(cx, s, cache, n, inst, group) };
    }
    operation(cx, s, cache, n, inst, group)
}

/// [`step`] compiled with AVX2 enabled.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn step_avx2(
    cx: &Ctx,
    s: &mut Lanes,
    cache: &mut RegionCache,
    n: usize,
    inst: &Inst,
    group: Group,
) -> Result<Flow, LaunchError> {
    operation(cx, s, cache, n, inst, group)
}

/// [`step`]'s body, inlined into each of its copies.
#[allow(clippy::too_many_lines)]
#[inline(always)]
fn operation(
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
            let uniform = !per_thread(sr);
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
                    map!(d, |x = a, y = b| {
                        let (x, y) = (f64::from_bits(x), f64::from_bits(y));
                        arith::nan64(x $op y, x, y)
                    })
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
            // With the processor's FMA over whole columns where it has one.
            (_, false) if whole && lanecols::fma(regs, tmp, n, d, [a, b, c], f64) => {}
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
            if let (true, &Addr::Reg(r, off)) = (whole, a) {
                let at = (*d, r, off as i64 as u64);
                let done = if sh {
                    match (op, ty) {
                        // As `atom_apply`'s integer add (the old value is read
                        // 32 bits wide).
                        (AtomOp::Add, Ty::U32 | Ty::S32) => {
                            lanecols::atom_shared(regs, n, shared, at, [*b, *c], size, |o, x, _| {
                                o.wrapping_add(x) & 0xffff_ffff
                            })
                        }
                        _ => {
                            lanecols::atom_shared(regs, n, shared, at, [*b, *c], size, |o, x, y| {
                                atom_apply(*op, *ty, o, x, y)
                            })
                        }
                    }
                } else if matches!(space, MemSpace::Global | MemSpace::Generic) {
                    lanecols::rehot(&mut s.hot, cache, regs, n, at, size);
                    lanecols::atom_global(regs, n, s.hot, at, [*b, *c], (*op, *ty))
                } else {
                    false
                };
                if done {
                    return Ok(Flow::Next);
                }
            }
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
            // A loop, not a closure: the flags stay in registers.
            lanes!(|l| {
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

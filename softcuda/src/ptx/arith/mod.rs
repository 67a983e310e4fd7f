//! Numeric semantics of PTX operations on register values.
//!
//! Every function takes and returns raw register contents (`u64` bit patterns, a
//! narrower value in the low bits) and returns results zero-extended to the width
//! of the operation's type. Float operations round to nearest even (the only
//! rounding the compiler accepts for arithmetic); `cvt` implements all four IEEE
//! rounding directions and the integer roundings exactly.
//!
//! Some 950 lines, kept together on purpose: the integer, float and conversion
//! semantics share the rounding and saturation helpers, and splitting them would
//! scatter those across files. The tests are `tests.rs`.

use super::ir::{
    AtomOp, CarryMode, Cmp, FOp, FUnOp, Int3Op, IntOp, IntTy, IntUnOp, ReduxOp, Rnd, TestP, Ty,
};

/// The low `bits` bits set.
#[inline]
pub(crate) fn mask(bits: u32) -> u64 {
    if bits >= 64 {
        u64::MAX
    } else {
        (1u64 << bits) - 1
    }
}

/// `v`'s low `bits` bits, sign-extended.
#[inline]
pub(crate) fn sext(v: u64, bits: u32) -> i64 {
    if bits >= 64 {
        v as i64
    } else {
        let s = 64 - bits;
        ((v << s) as i64) >> s
    }
}

/// The range of an integer type, as i128.
fn int_range(bits: u32, signed: bool) -> (i128, i128) {
    if signed {
        (-(1i128 << (bits - 1)), (1i128 << (bits - 1)) - 1)
    } else {
        (0, (1i128 << bits) - 1)
    }
}

/// An integer operand's value (sign- or zero-extended from the type's width).
#[inline]
fn ival(v: u64, ty: IntTy) -> i128 {
    let bits = u32::from(ty.bits);
    if ty.signed {
        i128::from(sext(v, bits))
    } else {
        i128::from(v & mask(bits))
    }
}

/// Two-operand integer operation. `carry` is the thread's carry flag (`.cc`).
#[inline]
pub(crate) fn int_bin(op: IntOp, ty: IntTy, a: u64, b: u64, carry: &mut bool) -> u64 {
    let bits = u32::from(ty.bits);
    let m = mask(bits);
    let (am, bm) = (a & m, b & m);
    let cf = u64::from(*carry);
    match op {
        IntOp::Add => am.wrapping_add(bm) & m,
        IntOp::Sub => am.wrapping_sub(bm) & m,
        IntOp::AddSat | IntOp::SubSat => {
            let (lo, hi) = int_range(bits, true);
            let (x, y) = (ival(a, ty), ival(b, ty));
            let r = if op == IntOp::AddSat { x + y } else { x - y };
            (r.clamp(lo, hi) as u64) & m
        }
        IntOp::AddCc | IntOp::AddC | IntOp::AddCCc => {
            let cin = if op == IntOp::AddCc { 0 } else { cf };
            let s = u128::from(am) + u128::from(bm) + u128::from(cin);
            if op != IntOp::AddC {
                *carry = s > u128::from(m);
            }
            (s as u64) & m
        }
        IntOp::SubCc | IntOp::SubC | IntOp::SubCCc => {
            let bin = if op == IntOp::SubCc { 0 } else { cf };
            let sub = u128::from(bm) + u128::from(bin);
            if op != IntOp::SubC {
                *carry = u128::from(am) < sub;
            }
            (u128::from(am).wrapping_sub(sub) as u64) & m
        }
        IntOp::MulLo => am.wrapping_mul(bm) & m,
        IntOp::MulHi => {
            let p = ival(a, ty).wrapping_mul(ival(b, ty));
            ((p >> bits) as u64) & m
        }
        IntOp::MulWide => {
            let p = ival(a, ty) * ival(b, ty);
            (p as u64) & mask(2 * bits)
        }
        IntOp::Mul24Lo | IntOp::Mul24Hi => {
            let t24 = IntTy {
                bits: 24,
                signed: ty.signed,
            };
            let p = ival(a, t24) * ival(b, t24);
            if op == IntOp::Mul24Lo {
                (p as u64) & m
            } else {
                ((p >> 16) as u64) & m
            }
        }
        IntOp::Div => {
            if bm == 0 {
                m
            } else if ty.signed {
                (ival(a, ty).wrapping_div(ival(b, ty)) as u64) & m
            } else {
                am / bm
            }
        }
        IntOp::Rem => {
            if bm == 0 {
                am
            } else if ty.signed {
                (ival(a, ty).wrapping_rem(ival(b, ty)) as u64) & m
            } else {
                am % bm
            }
        }
        IntOp::Min => {
            if ival(a, ty) <= ival(b, ty) {
                am
            } else {
                bm
            }
        }
        IntOp::Max => {
            if ival(a, ty) >= ival(b, ty) {
                am
            } else {
                bm
            }
        }
        IntOp::And => am & bm,
        IntOp::Or => am | bm,
        IntOp::Xor => am ^ bm,
        IntOp::Shl => {
            let n = b & 0xffff_ffff;
            if n >= u64::from(bits) {
                0
            } else {
                (am << n) & m
            }
        }
        IntOp::Shr => {
            let n = (b & 0xffff_ffff).min(u64::from(bits) - 1);
            let full = (b & 0xffff_ffff) >= u64::from(bits);
            if ty.signed {
                ((sext(a, bits) >> n) as u64) & m
            } else if full {
                0
            } else {
                am >> n
            }
        }
    }
}

/// One-operand integer operation.
pub(crate) fn int_un(op: IntUnOp, ty: IntTy, a: u64) -> u64 {
    let bits = u32::from(ty.bits);
    let m = mask(bits);
    let am = a & m;
    match op {
        IntUnOp::Neg => am.wrapping_neg() & m,
        IntUnOp::Abs => (sext(a, bits).wrapping_abs() as u64) & m,
        IntUnOp::Not => !am & m,
        IntUnOp::Cnot => u64::from(am == 0),
        IntUnOp::Popc => u64::from(am.count_ones()),
        IntUnOp::Clz => u64::from(am.leading_zeros() - (64 - bits)),
        IntUnOp::Brev => am.reverse_bits() >> (64 - bits),
        IntUnOp::Bfind | IntUnOp::BfindShift => {
            let x = if ty.signed && sext(a, bits) < 0 {
                !am & m
            } else {
                am
            };
            if x == 0 {
                0xffff_ffff
            } else {
                let pos = 63 - x.leading_zeros();
                u64::from(if op == IntUnOp::Bfind {
                    pos
                } else {
                    bits - 1 - pos
                })
            }
        }
    }
}

/// Three-operand integer operation.
pub(crate) fn int3(op: Int3Op, ty: IntTy, a: u64, b: u64, c: u64) -> u64 {
    let bits = u32::from(ty.bits);
    let m = mask(bits);
    let mut unused = false;
    match op {
        Int3Op::MadLo => a.wrapping_mul(b).wrapping_add(c) & m,
        Int3Op::MadHi => int_bin(IntOp::MulHi, ty, a, b, &mut unused).wrapping_add(c) & m,
        Int3Op::MadWide => {
            int_bin(IntOp::MulWide, ty, a, b, &mut unused).wrapping_add(c) & mask(2 * bits)
        }
        Int3Op::Mad24Lo => int_bin(IntOp::Mul24Lo, ty, a, b, &mut unused).wrapping_add(c) & m,
        Int3Op::Sad => {
            let d = (ival(a, ty) - ival(b, ty)).unsigned_abs() as u64;
            d.wrapping_add(c) & m
        }
        Int3Op::Bfe => {
            let pos = (b & 0xff) as u32;
            let len = (c & 0xff) as u32;
            if len == 0 {
                return 0;
            }
            let msb = bits - 1;
            let sbit = if ty.signed {
                (a >> (pos + len - 1).min(msb)) & 1
            } else {
                0
            };
            let mut d = 0u64;
            for i in 0..bits {
                let bit = if i < len && pos + i <= msb {
                    (a >> (pos + i)) & 1
                } else {
                    sbit
                };
                d |= bit << i;
            }
            d
        }
    }
}

/// `bfi`: insert the low `len` bits of `a` into `b` at `pos`.
pub(crate) fn bfi(bits: u32, a: u64, b: u64, pos: u64, len: u64) -> u64 {
    let pos = (pos & 0xff) as u32;
    let len = (len & 0xff) as u32;
    let mut d = b & mask(bits);
    for i in 0..len {
        if pos + i >= bits {
            break;
        }
        d = (d & !(1 << (pos + i))) | (((a >> i) & 1) << (pos + i));
    }
    d
}

/// `prmt.b32` (default mode): byte `i` of the result is selected by nibble `i` of `c`.
pub(crate) fn prmt(a: u64, b: u64, c: u64) -> u64 {
    let src = (a & 0xffff_ffff) | ((b & 0xffff_ffff) << 32);
    let mut d = 0u64;
    for i in 0..4 {
        let sel = (c >> (4 * i)) & 0xf;
        let mut byte = (src >> (8 * (sel & 7))) & 0xff;
        if sel & 8 != 0 {
            byte = if byte & 0x80 != 0 { 0xff } else { 0 };
        }
        d |= byte << (8 * i);
    }
    d
}

/// `shf.{l,r}.{wrap,clamp}.b32 d, a, b, c`: funnel shift of the 64-bit value b:a.
pub(crate) fn shf(left: bool, clamp: bool, a: u64, b: u64, c: u64) -> u64 {
    let n = if clamp {
        (c & 0xffff_ffff).min(32)
    } else {
        c & 31
    };
    let v = ((b & 0xffff_ffff) << 32) | (a & 0xffff_ffff);
    if left {
        ((v << n) >> 32) & 0xffff_ffff
    } else {
        (v >> n) & 0xffff_ffff
    }
}

/// `lop3.b32`: the boolean function `lut` of three operands, bit by bit.
pub(crate) fn lop3(a: u64, b: u64, c: u64, lut: u8) -> u64 {
    let mut d = 0u64;
    for i in 0..8u32 {
        if (lut >> i) & 1 != 0 {
            let x = if i & 4 != 0 { a } else { !a };
            let y = if i & 2 != 0 { b } else { !b };
            let z = if i & 1 != 0 { c } else { !c };
            d |= x & y & z;
        }
    }
    d & 0xffff_ffff
}

/// Canonical NaN of f32 results, as the GPU produces it.
const NAN32: u32 = 0x7fff_ffff;

#[inline]
fn ftz32(x: f32) -> f32 {
    if x.is_subnormal() {
        0.0f32.copysign(x)
    } else {
        x
    }
}

#[inline]
fn out32(x: f32, ftz: bool, sat: bool) -> u64 {
    let x = if ftz { ftz32(x) } else { x };
    let x = if sat { sat_f(f64::from(x)) as f32 } else { x };
    if x.is_nan() {
        u64::from(NAN32)
    } else {
        u64::from(x.to_bits())
    }
}

#[inline]
fn out64(x: f64, sat: bool) -> u64 {
    let x = if sat { sat_f(x) } else { x };
    x.to_bits()
}

/// The bits of `r`, the result of an f64 operation on `x` and `y`, with its NaN
/// independent of code generation: the compiler may commute an `add` or `mul`
/// (differently in each copy it compiles), and which NaN operand the processor
/// then propagates changes with it. The first NaN operand, quieted; else `r`'s.
#[inline(always)]
pub(crate) fn nan64(r: f64, x: f64, y: f64) -> u64 {
    if !r.is_nan() {
        r.to_bits()
    } else if x.is_nan() {
        x.to_bits() | 1 << 51
    } else if y.is_nan() {
        y.to_bits() | 1 << 51
    } else {
        r.to_bits()
    }
}

/// `.sat` of floats: clamp to [0, 1], NaN to 0.
fn sat_f(x: f64) -> f64 {
    if x.is_nan() { 0.0 } else { x.clamp(0.0, 1.0) }
}

/// IEEE minNum-like `min`: a NaN operand yields the other; -0 < +0.
macro_rules! fminmax {
    ($x:expr, $y:expr, $min:expr) => {{
        let (x, y) = ($x, $y);
        if x.is_nan() {
            y
        } else if y.is_nan() {
            x
        } else if x == y {
            if x.is_sign_negative() == $min { x } else { y }
        } else if (x < y) == $min {
            x
        } else {
            y
        }
    }};
}

/// Two-operand float operation on f32 (`f64 == false`) or f64.
#[inline]
pub(crate) fn float_bin(op: FOp, f64: bool, ftz: bool, sat: bool, a: u64, b: u64) -> u64 {
    if f64 {
        let (x, y) = (f64::from_bits(a), f64::from_bits(b));
        let r = match op {
            FOp::Add => x + y,
            FOp::Sub => x - y,
            FOp::Mul => x * y,
            FOp::Div => x / y,
            FOp::Min => fminmax!(x, y, true),
            FOp::Max => fminmax!(x, y, false),
            FOp::Copysign => y.copysign(x),
        };
        let r = match op {
            FOp::Add | FOp::Sub | FOp::Mul | FOp::Div => f64::from_bits(nan64(r, x, y)),
            _ => r,
        };
        out64(r, sat)
    } else {
        let (mut x, mut y) = (f32::from_bits(a as u32), f32::from_bits(b as u32));
        if ftz {
            x = ftz32(x);
            y = ftz32(y);
        }
        let r = match op {
            FOp::Add => x + y,
            FOp::Sub => x - y,
            FOp::Mul => x * y,
            FOp::Div => x / y,
            FOp::Min => fminmax!(x, y, true),
            FOp::Max => fminmax!(x, y, false),
            FOp::Copysign => return u64::from(y.copysign(x).to_bits()),
        };
        out32(r, ftz, sat)
    }
}

/// One-operand float operation.
pub(crate) fn float_un(op: FUnOp, f64: bool, ftz: bool, sat: bool, a: u64) -> u64 {
    if f64 {
        let x = f64::from_bits(a);
        let r = match op {
            FUnOp::Neg => -x,
            FUnOp::Abs => x.abs(),
            FUnOp::Sqrt => x.sqrt(),
            FUnOp::Rsqrt => 1.0 / x.sqrt(),
            FUnOp::Rcp => 1.0 / x,
            FUnOp::Sin => x.sin(),
            FUnOp::Cos => x.cos(),
            FUnOp::Ex2 => x.exp2(),
            FUnOp::Lg2 => x.log2(),
            FUnOp::Tanh => x.tanh(),
        };
        out64(r, sat)
    } else {
        let x = f32::from_bits(a as u32);
        let x = if ftz { ftz32(x) } else { x };
        let r = match op {
            FUnOp::Neg => return out_sign(-x, ftz, sat),
            FUnOp::Abs => return out_sign(x.abs(), ftz, sat),
            FUnOp::Sqrt => x.sqrt(),
            FUnOp::Rsqrt => 1.0 / x.sqrt(),
            FUnOp::Rcp => 1.0 / x,
            FUnOp::Sin => x.sin(),
            FUnOp::Cos => x.cos(),
            FUnOp::Ex2 => x.exp2(),
            FUnOp::Lg2 => x.log2(),
            FUnOp::Tanh => x.tanh(),
        };
        out32(r, ftz, sat)
    }
}

/// `neg`/`abs` only touch the sign bit, NaN payloads included.
fn out_sign(x: f32, ftz: bool, sat: bool) -> u64 {
    if x.is_nan() && !sat {
        u64::from(x.to_bits())
    } else {
        out32(x, ftz, sat)
    }
}

/// `fma.rn` (and `mad.rn` of floats): a * b + c with one rounding.
#[inline]
pub(crate) fn fma(f64: bool, ftz: bool, sat: bool, a: u64, b: u64, c: u64) -> u64 {
    if f64 {
        out64(
            f64::from_bits(a).mul_add(f64::from_bits(b), f64::from_bits(c)),
            sat,
        )
    } else {
        let f = |v: u64| {
            let x = f32::from_bits(v as u32);
            if ftz { ftz32(x) } else { x }
        };
        out32(f(a).mul_add(f(b), f(c)), ftz, sat)
    }
}

/// Error-free sum: `s + e == a + b` exactly, `s` rounded to nearest.
fn two_sum(a: f64, b: f64) -> (f64, f64) {
    let s = a + b;
    let bb = s - a;
    (s, (a - (s - bb)) + (b - bb))
}

/// The value a finite result that overflowed takes under a directed rounding.
fn overflow_dir(negative: bool, rnd: Rnd, max: f64) -> f64 {
    let to_inf = match rnd {
        Rnd::Rm => negative,
        Rnd::Rp => !negative,
        Rnd::Rz => false,
        _ => true,
    };
    let mag = if to_inf { f64::INFINITY } else { max };
    if negative { -mag } else { mag }
}

/// Rounds the exact value `s + e` (`s` its f64 rounding) to f32 in direction `rnd`.
fn round32_dir(s: f64, e: f64, rnd: Rnd) -> f32 {
    let r = s as f32;
    if !s.is_finite() {
        return r;
    }
    if r.is_infinite() {
        return overflow_dir(s < 0.0, rnd, f64::from(f32::MAX)) as f32;
    }
    let rv = f64::from(r);
    let (above, below) = if rv != s {
        (rv > s, rv < s)
    } else {
        (e < 0.0, e > 0.0)
    };
    match rnd {
        Rnd::Rz if rv > 0.0 && above => r.next_down(),
        Rnd::Rz if rv < 0.0 && below => r.next_up(),
        Rnd::Rm if above => r.next_down(),
        Rnd::Rp if below => r.next_up(),
        _ => r,
    }
}

/// `add`, `sub`, `mul` with `.rz`, `.rm` or `.rp` (exact: error-free transformations).
pub(crate) fn float_dir(op: FOp, f64: bool, ftz: bool, sat: bool, rnd: Rnd, a: u64, b: u64) -> u64 {
    if f64 {
        let (x, y) = (f64::from_bits(a), f64::from_bits(b));
        let (s, e) = match op {
            FOp::Add => two_sum(x, y),
            FOp::Sub => two_sum(x, -y),
            _ => {
                let p = x * y;
                (p, x.mul_add(y, -p))
            }
        };
        let r = if s.is_nan() {
            f64::from_bits(nan64(s, x, y))
        } else if s.is_infinite() {
            if x.is_finite() && y.is_finite() {
                overflow_dir(s < 0.0, rnd, f64::MAX)
            } else {
                s
            }
        } else {
            match rnd {
                Rnd::Rz if s > 0.0 && e < 0.0 => s.next_down(),
                Rnd::Rz if s < 0.0 && e > 0.0 => s.next_up(),
                Rnd::Rm if e < 0.0 => s.next_down(),
                Rnd::Rp if e > 0.0 => s.next_up(),
                _ => s,
            }
        };
        out64(r, sat)
    } else {
        let f = |v: u64| {
            let x = f32::from_bits(v as u32);
            f64::from(if ftz { ftz32(x) } else { x })
        };
        let (x, y) = (f(a), f(b));
        // Sums and products of two f32 are exact in f64 except for far-apart sums.
        let (s, e) = match op {
            FOp::Add => two_sum(x, y),
            FOp::Sub => two_sum(x, -y),
            _ => (x * y, 0.0),
        };
        out32(round32_dir(s, e, rnd), ftz, sat)
    }
}

/// `fma.rz/rm/rp.f32`: the product is exact in f64, the sum error-free.
pub(crate) fn fma32_dir(ftz: bool, sat: bool, rnd: Rnd, a: u64, b: u64, c: u64) -> u64 {
    let f = |v: u64| {
        let x = f32::from_bits(v as u32);
        f64::from(if ftz { ftz32(x) } else { x })
    };
    let (s, e) = two_sum(f(a) * f(b), f(c));
    out32(round32_dir(s, e, rnd), ftz, sat)
}

/// `mad{c}.{lo,hi}{.cc}`: low or high half of a * b, plus c, plus the carry flag if
/// `cin`; sets the carry flag from the addition if `cout`.
pub(crate) fn mad_cc(mode: CarryMode, ty: IntTy, a: u64, b: u64, c: u64, carry: &mut bool) -> u64 {
    let CarryMode { hi, cin, cout } = mode;
    let bits = u32::from(ty.bits);
    let m = mask(bits);
    let prod = ival(a, ty).wrapping_mul(ival(b, ty));
    let half = if hi {
        ((prod >> bits) as u64) & m
    } else {
        (prod as u64) & m
    };
    let sum = u128::from(half) + u128::from(c & m) + u128::from(cin && *carry);
    if cout {
        *carry = sum > u128::from(m);
    }
    (sum as u64) & m
}

/// `testp`.
pub(crate) fn testp(t: TestP, f64: bool, a: u64) -> bool {
    let x = if f64 {
        f64::from_bits(a)
    } else {
        f64::from(f32::from_bits(a as u32))
    };
    let sub32 = !f64 && f32::from_bits(a as u32).is_subnormal();
    match t {
        TestP::Finite => x.is_finite(),
        TestP::Infinite => x.is_infinite(),
        TestP::Number => !x.is_nan(),
        TestP::NotANumber => x.is_nan(),
        TestP::Normal => {
            if f64 {
                x.is_normal()
            } else {
                f32::from_bits(a as u32).is_normal()
            }
        }
        TestP::Subnormal => {
            if f64 {
                x.is_subnormal()
            } else {
                sub32
            }
        }
    }
}

/// A float register value of type `ty` as f64 (exact), flushing f32 subnormals if `ftz`.
fn fval(ty: Ty, ftz: bool, v: u64) -> f64 {
    match ty {
        Ty::F64 => f64::from_bits(v),
        Ty::F16 => f16_to_f64(v as u16),
        _ => {
            let x = f32::from_bits(v as u32);
            f64::from(if ftz { ftz32(x) } else { x })
        }
    }
}

/// The comparison of `setp`.
#[inline]
pub(crate) fn compare(cmp: Cmp, ty: Ty, ftz: bool, a: u64, b: u64) -> bool {
    if ty.is_float() {
        let (x, y) = (fval(ty, ftz, a), fval(ty, ftz, b));
        let nan = x.is_nan() || y.is_nan();
        match cmp {
            Cmp::Eq => x == y,
            Cmp::Ne => x != y && !nan,
            Cmp::Lt => x < y,
            Cmp::Le => x <= y,
            Cmp::Gt => x > y,
            Cmp::Ge => x >= y,
            Cmp::Equ => x == y || nan,
            Cmp::Neu => x != y,
            Cmp::Ltu => x < y || nan,
            Cmp::Leu => x <= y || nan,
            Cmp::Gtu => x > y || nan,
            Cmp::Geu => x >= y || nan,
            Cmp::Num => !nan,
            Cmp::Nan => nan,
            Cmp::Lo | Cmp::Ls | Cmp::Hi | Cmp::Hs => false,
        }
    } else {
        let bits = ty.bits();
        let (ua, ub) = (a & mask(bits), b & mask(bits));
        let (sa, sb) = if ty.is_signed() {
            (i128::from(sext(a, bits)), i128::from(sext(b, bits)))
        } else {
            (i128::from(ua), i128::from(ub))
        };
        match cmp {
            Cmp::Eq => ua == ub,
            Cmp::Ne => ua != ub,
            Cmp::Lt => sa < sb,
            Cmp::Le => sa <= sb,
            Cmp::Gt => sa > sb,
            Cmp::Ge => sa >= sb,
            Cmp::Lo => ua < ub,
            Cmp::Ls => ua <= ub,
            Cmp::Hi => ua > ub,
            Cmp::Hs => ua >= ub,
            _ => false,
        }
    }
}

/// f16 bits to f64 (exact).
pub(crate) fn f16_to_f64(h: u16) -> f64 {
    let sign = if h & 0x8000 != 0 { -1.0 } else { 1.0 };
    let exp = i32::from((h >> 10) & 0x1f);
    let mant = f64::from(h & 0x3ff);
    let mag = match exp {
        0 => mant * 2f64.powi(-24),
        31 if mant == 0.0 => f64::INFINITY,
        31 => f64::NAN,
        _ => (1024.0 + mant) * 2f64.powi(exp - 25),
    };
    sign * mag
}

/// Whether a value that lies strictly between two representable numbers is rounded
/// away from zero (to the larger magnitude), given the fraction beyond the smaller
/// magnitude (`frac` in (0, 1)), whether the smaller magnitude is odd, and the sign.
fn round_up_mag(rnd: Rnd, frac: f64, odd: bool, negative: bool) -> bool {
    if frac == 0.0 {
        return false;
    }
    match rnd {
        Rnd::Rz => false,
        Rnd::Rm => negative,
        Rnd::Rp => !negative,
        _ => frac > 0.5 || (frac == 0.5 && odd),
    }
}

/// f64 to f16 bits with the given rounding (.rn, .rz, .rm, .rp).
pub(crate) fn f64_to_f16(x: f64, rnd: Rnd) -> u16 {
    if x.is_nan() {
        return 0x7fff;
    }
    let neg = x.is_sign_negative();
    let sign: u16 = if neg { 0x8000 } else { 0 };
    let ax = x.abs();
    if ax.is_infinite() {
        return sign | 0x7c00;
    }
    if ax == 0.0 {
        return sign;
    }
    let overflow = || -> u16 {
        let to_inf = match rnd {
            Rnd::Rz => false,
            Rnd::Rm => neg,
            Rnd::Rp => !neg,
            _ => true,
        };
        sign | if to_inf { 0x7c00 } else { 0x7bff }
    };
    let e = (((ax.to_bits() >> 52) & 0x7ff) as i32 - 1023).max(-15);
    if e > 15 {
        return overflow();
    }
    let q = 2f64.powi(e.max(-14) - 10);
    let m = ax / q;
    let mut mi = m.floor();
    if round_up_mag(rnd, m - mi, mi % 2.0 == 1.0, neg) {
        mi += 1.0;
    }
    let mi = mi as u32;
    let bits = if e < -14 {
        mi
    } else {
        (((e + 15) as u32) << 10) + (mi - 1024)
    };
    if bits >= 0x7c00 {
        return overflow();
    }
    sign | bits as u16
}

/// f64 to f32 with the given rounding (.rn, .rz, .rm, .rp).
fn f64_to_f32(x: f64, rnd: Rnd) -> f32 {
    let r = x as f32;
    if x.is_nan() || matches!(rnd, Rnd::Rn | Rnd::None) {
        return r;
    }
    if r.is_infinite() && x.is_finite() {
        let neg = x < 0.0;
        let to_inf = match rnd {
            Rnd::Rm => neg,
            Rnd::Rp => !neg,
            _ => false,
        };
        let mag = if to_inf { f32::INFINITY } else { f32::MAX };
        return if neg { -mag } else { mag };
    }
    adjust(f64::from(r), x, rnd, r, f32::next_up, f32::next_down)
}

/// Moves a round-to-nearest result `r` (whose exact value is `rv`) one step in the
/// direction `rnd` asks, if it went the wrong way from the exact value `x`.
fn adjust<T: Copy>(rv: f64, x: f64, rnd: Rnd, r: T, up: fn(T) -> T, down: fn(T) -> T) -> T {
    match rnd {
        Rnd::Rz if rv.abs() > x.abs() => {
            if rv > 0.0 {
                down(r)
            } else {
                up(r)
            }
        }
        Rnd::Rm if rv > x => down(r),
        Rnd::Rp if rv < x => up(r),
        _ => r,
    }
}

/// The same, comparing exactly against an integer.
fn adjust_int<T: Copy>(rv: i128, v: i128, rnd: Rnd, r: T, up: fn(T) -> T, down: fn(T) -> T) -> T {
    match rnd {
        Rnd::Rz if rv.abs() > v.abs() => {
            if rv > 0 {
                down(r)
            } else {
                up(r)
            }
        }
        Rnd::Rm if rv > v => down(r),
        Rnd::Rp if rv < v => up(r),
        _ => r,
    }
}

/// Integer rounding of a float (`.rni`, `.rzi`, `.rmi`, `.rpi`).
fn round_int(x: f64, rnd: Rnd) -> f64 {
    match rnd {
        Rnd::Rzi => x.trunc(),
        Rnd::Rmi => x.floor(),
        Rnd::Rpi => x.ceil(),
        _ => x.round_ties_even(),
    }
}

/// `cvt`. `dbits` is the destination register's width: sub-word signed results are
/// sign-extended to it.
pub(crate) fn cvt(dty: Ty, sty: Ty, rnd: Rnd, sat: bool, ftz: bool, dbits: u32, a: u64) -> u64 {
    let r = match (dty.is_float(), sty.is_float()) {
        (false, false) => {
            let v = ival(
                a,
                IntTy {
                    bits: sty.bits() as u8,
                    signed: sty.is_signed(),
                },
            );
            let v = if sat {
                let (lo, hi) = int_range(dty.bits(), dty.is_signed());
                v.clamp(lo, hi)
            } else {
                v
            };
            (v as u64) & mask(dty.bits())
        }
        (false, true) => {
            let x = round_int(fval(sty, ftz, a), rnd);
            if x.is_nan() {
                0
            } else {
                let (lo, hi) = int_range(dty.bits(), dty.is_signed());
                ((x as i128).clamp(lo, hi) as u64) & mask(dty.bits())
            }
        }
        (true, false) => {
            let v = ival(
                a,
                IntTy {
                    bits: sty.bits() as u8,
                    signed: sty.is_signed(),
                },
            );
            let r = match dty {
                Ty::F64 => {
                    let r = adjust_int(
                        v as f64 as i128,
                        v,
                        rnd,
                        v as f64,
                        f64::next_up,
                        f64::next_down,
                    );
                    r.to_bits()
                }
                Ty::F32 => {
                    let r = adjust_int(
                        v as f32 as i128,
                        v,
                        rnd,
                        v as f32,
                        f32::next_up,
                        f32::next_down,
                    );
                    u64::from(r.to_bits())
                }
                _ => u64::from(f64_to_f16(v as f64, rnd)),
            };
            float_out(dty, r, sat, false)
        }
        (true, true) => {
            let x = fval(sty, ftz, a);
            let r = match (dty, rnd) {
                (_, Rnd::Rni | Rnd::Rzi | Rnd::Rmi | Rnd::Rpi) => {
                    let y = round_int(x, rnd);
                    match dty {
                        Ty::F64 => y.to_bits(),
                        Ty::F32 => u64::from((y as f32).to_bits()),
                        _ => u64::from(f64_to_f16(y, Rnd::Rn)),
                    }
                }
                (Ty::F64, _) => x.to_bits(),
                (Ty::F32, _) => {
                    let y = f64_to_f32(x, rnd);
                    if y.is_nan() {
                        u64::from(NAN32)
                    } else {
                        u64::from(y.to_bits())
                    }
                }
                _ => u64::from(f64_to_f16(x, rnd)),
            };
            float_out(dty, r, sat, ftz)
        }
    };
    if !dty.is_float() && dty.is_signed() && dty.bits() < dbits {
        (sext(r, dty.bits()) as u64) & mask(dbits)
    } else {
        r
    }
}

/// Applies `.sat` and `.ftz` to a float result of type `ty` (given as bits).
fn float_out(ty: Ty, bits: u64, sat: bool, ftz: bool) -> u64 {
    match ty {
        Ty::F64 if sat => sat_f(f64::from_bits(bits)).to_bits(),
        Ty::F32 if sat || ftz => out32(f32::from_bits(bits as u32), ftz, sat),
        Ty::F16 if sat => u64::from(f64_to_f16(sat_f(f16_to_f64(bits as u16)), Rnd::Rn)),
        _ => bits,
    }
}

/// The new value an atomic operation stores, given the old one.
#[inline]
pub(crate) fn atom_apply(op: AtomOp, ty: Ty, old: u64, b: u64, c: u64) -> u64 {
    let bits = ty.bits();
    let m = mask(bits);
    let (om, bm) = (old & m, b & m);
    let ity = IntTy {
        bits: bits as u8,
        signed: ty.is_signed(),
    };
    match op {
        AtomOp::Add => match ty {
            // atom.add.f32 flushes subnormal inputs and results (PTX ISA).
            Ty::F32 => float_bin(FOp::Add, false, true, false, old, b),
            Ty::F64 => float_bin(FOp::Add, true, false, false, old, b),
            _ => om.wrapping_add(bm) & m,
        },
        AtomOp::Min => {
            if ival(old, ity) <= ival(b, ity) {
                om
            } else {
                bm
            }
        }
        AtomOp::Max => {
            if ival(old, ity) >= ival(b, ity) {
                om
            } else {
                bm
            }
        }
        AtomOp::Exch => bm,
        AtomOp::Cas => {
            if om == bm {
                c & m
            } else {
                om
            }
        }
        AtomOp::And => om & bm,
        AtomOp::Or => om | bm,
        AtomOp::Xor => om ^ bm,
        AtomOp::Inc => {
            if om >= bm {
                0
            } else {
                om + 1
            }
        }
        AtomOp::Dec => {
            if om == 0 || om > bm {
                bm
            } else {
                om - 1
            }
        }
    }
}

/// Combines two lanes' values for `redux.sync`.
pub(crate) fn redux(op: ReduxOp, signed: bool, x: u64, y: u64) -> u64 {
    let ty = IntTy { bits: 32, signed };
    let mut unused = false;
    match op {
        ReduxOp::Add => int_bin(IntOp::Add, ty, x, y, &mut unused),
        ReduxOp::Min => int_bin(IntOp::Min, ty, x, y, &mut unused),
        ReduxOp::Max => int_bin(IntOp::Max, ty, x, y, &mut unused),
        ReduxOp::And => x & y,
        ReduxOp::Or => x | y,
        ReduxOp::Xor => x ^ y,
    }
}

#[cfg(test)]
mod tests;

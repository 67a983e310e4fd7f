//! Tests of the numeric semantics against hand-checked values and IEEE corner cases.

use super::*;

const U32: IntTy = IntTy {
    bits: 32,
    signed: false,
};
const S32: IntTy = IntTy {
    bits: 32,
    signed: true,
};

fn ib(op: IntOp, ty: IntTy, a: i64, b: i64) -> u64 {
    int_bin(
        op,
        ty,
        a as u64 & mask(u32::from(ty.bits)),
        b as u64 & mask(u32::from(ty.bits)),
        &mut false,
    )
}

#[test]
fn integer_arithmetic() {
    assert_eq!(ib(IntOp::Add, U32, 0xffff_ffff, 1), 0);
    assert_eq!(ib(IntOp::Div, S32, -7, 2), (-3i32) as u32 as u64);
    assert_eq!(ib(IntOp::Rem, S32, -7, 2), (-1i32) as u32 as u64);
    assert_eq!(
        ib(IntOp::Div, S32, i32::MIN.into(), -1),
        i32::MIN as u32 as u64
    );
    assert_eq!(ib(IntOp::Div, U32, 5, 0), 0xffff_ffff);
    assert_eq!(ib(IntOp::MulHi, S32, -2, 3), 0xffff_ffff);
    assert_eq!(ib(IntOp::MulHi, U32, 0x8000_0000, 4), 2);
    assert_eq!(ib(IntOp::MulWide, S32, -2, 3), (-6i64) as u64);
    assert_eq!(ib(IntOp::Shr, S32, -8, 1), (-4i32) as u32 as u64);
    assert_eq!(ib(IntOp::Shr, S32, -8, 40), 0xffff_ffff);
    assert_eq!(ib(IntOp::Shr, U32, 0x8000_0000, 31), 1);
    assert_eq!(ib(IntOp::Shl, U32, 1, 32), 0);
    assert_eq!(ib(IntOp::Min, S32, -1, 1), 0xffff_ffff);
    assert_eq!(ib(IntOp::Min, U32, 0xffff_ffff, 1), 1);
    assert_eq!(ib(IntOp::AddSat, S32, i32::MAX.into(), 1), i32::MAX as u64);
    let mut c = false;
    assert_eq!(int_bin(IntOp::AddCc, U32, 0xffff_ffff, 2, &mut c), 1);
    assert!(c);
    assert_eq!(int_bin(IntOp::AddC, U32, 1, 1, &mut c), 3);
}

#[test]
fn bit_operations() {
    assert_eq!(int_un(IntUnOp::Clz, U32, 1), 31);
    assert_eq!(int_un(IntUnOp::Clz, U32, 0), 32);
    assert_eq!(int_un(IntUnOp::Brev, U32, 1), 0x8000_0000);
    assert_eq!(
        int_un(
            IntUnOp::Popc,
            IntTy {
                bits: 64,
                signed: false
            },
            u64::MAX
        ),
        64
    );
    assert_eq!(int_un(IntUnOp::Bfind, U32, 0x10), 4);
    assert_eq!(int_un(IntUnOp::BfindShift, U32, 0x10), 27);
    assert_eq!(int_un(IntUnOp::Bfind, S32, 0xffff_ffff), 0xffff_ffff);
    assert_eq!(int3(Int3Op::Bfe, U32, 0xabcd, 4, 8), 0xbc);
    assert_eq!(int3(Int3Op::Bfe, S32, 0x80, 4, 4), 0xffff_fff8);
    assert_eq!(bfi(32, 0xf, 0, 4, 4), 0xf0);
    assert_eq!(prmt(0x4433_2211, 0x8877_6655, 0x5140), 0x6622_5511);
    assert_eq!(prmt(0x0000_0080, 0, 0x4448), 0xff);
    assert_eq!(shf(true, false, 0x8000_0000, 1, 1), 3);
    assert_eq!(shf(false, true, 0, 1, 32), 1);
    assert_eq!(lop3(0xf0, 0xcc, 0xaa, 0x80), 0x80);
}

#[test]
fn float_semantics() {
    let f = |x: f32| u64::from(x.to_bits());
    let g = |v: u64| f32::from_bits(v as u32);
    assert_eq!(
        g(float_bin(
            FOp::Min,
            false,
            false,
            false,
            f(f32::NAN),
            f(2.0)
        )),
        2.0
    );
    assert!(g(float_bin(FOp::Min, false, false, false, f(-0.0), f(0.0))).is_sign_negative());
    assert_eq!(
        float_bin(
            FOp::Add,
            false,
            false,
            false,
            f(f32::INFINITY),
            f(f32::NEG_INFINITY)
        ),
        0x7fff_ffff
    );
    assert_eq!(
        g(float_bin(FOp::Mul, false, true, false, f(1e-40), f(1.0))),
        0.0
    );
    assert_eq!(
        g(float_bin(FOp::Add, false, false, true, f(3.0), f(1.0))),
        1.0
    );
    assert!(compare(Cmp::Neu, Ty::F32, false, f(f32::NAN), f(1.0)));
    assert!(!compare(Cmp::Ne, Ty::F32, false, f(f32::NAN), f(1.0)));
    assert!(compare(Cmp::Lt, Ty::S32, false, 0xffff_ffff, 0));
    assert!(!compare(Cmp::Lo, Ty::U32, false, 0xffff_ffff, 0));
}

#[test]
fn conversions() {
    let f = |x: f32| u64::from(x.to_bits());
    assert_eq!(cvt(Ty::S32, Ty::F32, Rnd::Rni, false, false, 32, f(2.5)), 2);
    assert_eq!(
        cvt(Ty::S32, Ty::F32, Rnd::Rni, false, false, 32, f(-3.5)),
        (-4i32) as u32 as u64
    );
    assert_eq!(
        cvt(Ty::U32, Ty::F32, Rnd::Rzi, false, false, 32, f(-3.5)),
        0
    );
    assert_eq!(
        cvt(Ty::S32, Ty::F32, Rnd::Rzi, false, false, 32, f(1e20)),
        i32::MAX as u64
    );
    assert_eq!(
        cvt(Ty::S32, Ty::F32, Rnd::Rzi, false, false, 32, f(f32::NAN)),
        0
    );
    assert_eq!(
        cvt(Ty::S64, Ty::S32, Rnd::None, false, false, 64, 0xffff_ffff),
        u64::MAX
    );
    assert_eq!(cvt(Ty::U8, Ty::S32, Rnd::None, true, false, 16, 300), 255);
    assert_eq!(
        cvt(Ty::S8, Ty::S32, Rnd::None, false, false, 16, 0x80),
        0xff80
    );
    let big = (1u64 << 24) + 1;
    assert_eq!(
        cvt(Ty::F32, Ty::U32, Rnd::Rn, false, false, 32, big),
        f(16_777_216.0)
    );
    assert_eq!(
        cvt(Ty::F32, Ty::U32, Rnd::Rp, false, false, 32, big),
        f(16_777_218.0)
    );
    assert_eq!(
        cvt(
            Ty::F32,
            Ty::S32,
            Rnd::Rm,
            false,
            false,
            32,
            (-(big as i64)) as u64 & 0xffff_ffff
        ),
        f(-16_777_218.0)
    );
    let x = 1.0f64 + 2f64.powi(-30);
    assert_eq!(
        cvt(Ty::F32, Ty::F64, Rnd::Rp, false, false, 32, x.to_bits()),
        f(1.0f32.next_up())
    );
    assert_eq!(
        cvt(Ty::F32, Ty::F64, Rnd::Rz, false, false, 32, x.to_bits()),
        f(1.0)
    );
    assert_eq!(
        cvt(
            Ty::F32,
            Ty::F64,
            Rnd::Rz,
            false,
            false,
            32,
            1e300f64.to_bits()
        ),
        f(f32::MAX)
    );
    assert_eq!(
        cvt(Ty::F32, Ty::F32, Rnd::Rmi, false, false, 32, f(-1.5)),
        f(-2.0)
    );
}

#[test]
fn directed_rounding() {
    let f = |x: f32| u64::from(x.to_bits());
    let g = |v: u64| f32::from_bits(v as u32);
    let one = f(1.0);
    let tiny = f(2f32.powi(-30));
    assert_eq!(
        g(float_dir(FOp::Add, false, false, false, Rnd::Rp, one, tiny)),
        1.0f32.next_up()
    );
    assert_eq!(
        g(float_dir(FOp::Add, false, false, false, Rnd::Rz, one, tiny)),
        1.0
    );
    assert_eq!(
        g(float_dir(FOp::Sub, false, false, false, Rnd::Rm, one, tiny)),
        1.0f32.next_down()
    );
    assert_eq!(
        g(float_dir(FOp::Sub, false, false, false, Rnd::Rz, one, tiny)),
        1.0f32.next_down()
    );
    assert_eq!(
        g(float_dir(
            FOp::Mul,
            false,
            false,
            false,
            Rnd::Rz,
            f(f32::MAX),
            f(2.0)
        )),
        f32::MAX
    );
    assert_eq!(
        g(fma32_dir(
            false,
            false,
            Rnd::Rm,
            one,
            one,
            f(-(2f32.powi(-40)))
        )),
        1.0f32.next_down()
    );
    assert_eq!(
        g(fma32_dir(
            false,
            false,
            Rnd::Rp,
            one,
            one,
            f(2f32.powi(-40))
        )),
        1.0f32.next_up()
    );
    let d = |x: f64| x.to_bits();
    let t = 2f64.powi(-60);
    assert_eq!(
        f64::from_bits(float_dir(
            FOp::Add,
            true,
            false,
            false,
            Rnd::Rp,
            d(1.0),
            d(t)
        )),
        1.0f64.next_up()
    );
    assert_eq!(
        f64::from_bits(float_dir(
            FOp::Add,
            true,
            false,
            false,
            Rnd::Rm,
            d(-1.0),
            d(-t)
        )),
        (-1.0f64).next_down()
    );
    assert_eq!(
        f64::from_bits(float_dir(
            FOp::Mul,
            true,
            false,
            false,
            Rnd::Rz,
            d(1.0 + t * 2f64.powi(10)),
            d(1.0 - t * 2f64.powi(10))
        )),
        1.0f64.next_down()
    );
    let mut c = false;
    let u = IntTy {
        bits: 32,
        signed: false,
    };
    assert_eq!(
        mad_cc(
            CarryMode {
                hi: false,
                cin: false,
                cout: true
            },
            u,
            0x8000_0001,
            2,
            0xffff_ffff,
            &mut c
        ),
        1
    );
    assert!(c);
    assert_eq!(
        mad_cc(
            CarryMode {
                hi: true,
                cin: true,
                cout: false
            },
            u,
            0x8000_0000,
            2,
            5,
            &mut c
        ),
        7
    );
}

#[test]
fn half_precision() {
    assert_eq!(f64_to_f16(1.0, Rnd::Rn), 0x3c00);
    assert_eq!(f64_to_f16(-2.0, Rnd::Rn), 0xc000);
    assert_eq!(f64_to_f16(65504.0, Rnd::Rn), 0x7bff);
    assert_eq!(f64_to_f16(65520.0, Rnd::Rn), 0x7c00);
    assert_eq!(f64_to_f16(65520.0, Rnd::Rz), 0x7bff);
    assert_eq!(f64_to_f16(2f64.powi(-24), Rnd::Rn), 1);
    assert_eq!(f64_to_f16(2f64.powi(-26), Rnd::Rp), 1);
    assert_eq!(f64_to_f16(2f64.powi(-14), Rnd::Rn), 0x0400);
    assert_eq!(f64_to_f16(1.0 + 2f64.powi(-11), Rnd::Rn), 0x3c00);
    assert_eq!(f64_to_f16(1.0 + 3.0 * 2f64.powi(-11), Rnd::Rn), 0x3c02);
    for h in [0x0001u16, 0x03ff, 0x0400, 0x3c00, 0x7bff, 0xbc01] {
        assert_eq!(f64_to_f16(f16_to_f64(h), Rnd::Rn), h);
    }
}

#[test]
fn atomics() {
    assert_eq!(atom_apply(AtomOp::Inc, Ty::U32, 5, 5, 0), 0);
    assert_eq!(atom_apply(AtomOp::Inc, Ty::U32, 4, 5, 0), 5);
    assert_eq!(atom_apply(AtomOp::Dec, Ty::U32, 0, 5, 0), 5);
    assert_eq!(atom_apply(AtomOp::Cas, Ty::B32, 7, 7, 9), 9);
    assert_eq!(atom_apply(AtomOp::Cas, Ty::B32, 7, 8, 9), 7);
    assert_eq!(
        atom_apply(AtomOp::Min, Ty::S32, 0xffff_ffff, 3, 0),
        0xffff_ffff
    );
    let f = |x: f32| u64::from(x.to_bits());
    assert_eq!(atom_apply(AtomOp::Add, Ty::F32, f(1.5), f(2.0), 0), f(3.5));
}

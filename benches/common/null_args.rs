//! The null kernels of `kernels/null_args.ptx` (4 and 16 `u32` parameters, 4
//! pointers and a `Len`) as the
//! launch benchmarks declare and call them: one place for their signatures and the
//! 16-value argument tuple.

/// `kernels/null_args.ptx`.
pub const NULL_ARGS: &str = include_str!("../../kernels/null_args.ptx");

/// `null4`'s signature.
pub type Sig4 = (u32, u32, u32, u32);
/// `null_ptr4`'s signature: four pointers bounded by a length.
#[allow(dead_code)]
pub type SigPtr4 = (
    oxicuda_driver::launch::Ptr<u32>,
    oxicuda_driver::launch::Ptr<u32>,
    oxicuda_driver::launch::PtrMut<u32>,
    oxicuda_driver::launch::PtrMut<u32>,
    oxicuda_driver::launch::Len<u32>,
);
/// `null16`'s signature.
pub type Sig16 = (
    u32,
    u32,
    u32,
    u32,
    u32,
    u32,
    u32,
    u32,
    u32,
    u32,
    u32,
    u32,
    u32,
    u32,
    u32,
    u32,
);

/// The 16 arguments, the first one opaque to the optimiser (as in the 4-argument
/// launches) so that the tuple is built at each call.
#[inline(always)]
pub fn args16() -> Sig16 {
    (
        std::hint::black_box(1u32),
        2,
        3,
        4,
        5,
        6,
        7,
        8,
        9,
        10,
        11,
        12,
        13,
        14,
        15,
        16,
    )
}

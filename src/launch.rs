//! Typed kernel launch.
//!
//! A kernel's signature is a tuple of parameter kinds (up to 16): [`In<T>`] (a device
//! buffer the kernel reads), [`Out<T>`] (one it writes) and plain scalars. Launching
//! takes the matching values — `&DeviceBuffer<T>` for `In<T>`, `&mut DeviceBuffer<T>`
//! for `Out<T>`, the scalar itself — so the compiler rejects wrong types (CF6), wrong
//! arity (CF7), host references, `Vec`s and slices (CF8: they are not parameter
//! kinds), a buffer of another element type (CF9), and the same buffer passed mutably
//! twice or mutably and shared (CF10: borrowing rules). The parameter-pointer array
//! lives on the stack; a launch allocates nothing.
//!
//! ```compile_fail
//! # use oxicuda_driver::{launch::{In, Out}, memory::DeviceBuffer, module::Function, stream::Stream};
//! # fn f(k: &Function<'_, (In<f32>, Out<f32>, u32)>, s: &Stream<'_>, a: &DeviceBuffer<'_, i32>, b: &mut DeviceBuffer<'_, f32>) {
//! // CF9: an i32 buffer where the kernel declares f32.
//! k.launch(s, 1, 32, 0, (a, b, 1u32)).unwrap();
//! # }
//! ```

use crate::error::{CudaError, check};
use crate::memory::{DeviceBuffer, DeviceCopy};
use crate::module::Function;
use crate::stream::Stream;
use core::ffi::c_void;
use core::marker::PhantomData;

/// A kernel parameter of type `T` that the kernel reads: a device buffer.
pub struct In<T>(PhantomData<T>);
/// A kernel parameter that the kernel writes: a device buffer.
pub struct Out<T>(PhantomData<T>);

/// One kind of kernel parameter.
///
/// # Safety
/// `param` must return a pointer to `SIZE` bytes holding the parameter's value as the
/// kernel's ABI expects it, valid while `value` and `scratch` are borrowed.
pub unsafe trait KernelParam {
    /// What a launch passes for it: borrowed for `'b` from objects of a binding `'a`.
    type Value<'b, 'a: 'b>;
    /// Its size in the parameter buffer.
    const SIZE: usize;
    /// Its alignment in the parameter buffer.
    const ALIGN: usize;
    /// A pointer to the parameter's bytes; `scratch` may hold them.
    fn param<'b, 'a: 'b>(value: &Self::Value<'b, 'a>, scratch: &mut u64) -> *mut c_void;
}

// SAFETY: the device address, a 64-bit value, is written to `scratch`.
unsafe impl<T: DeviceCopy> KernelParam for In<T> {
    type Value<'b, 'a: 'b> = &'b DeviceBuffer<'b, T>;
    const SIZE: usize = 8;
    const ALIGN: usize = 8;
    fn param<'b, 'a: 'b>(value: &Self::Value<'b, 'a>, scratch: &mut u64) -> *mut c_void {
        *scratch = value.device_ptr();
        (scratch as *mut u64).cast()
    }
}

// SAFETY: as for `In`.
unsafe impl<T: DeviceCopy> KernelParam for Out<T> {
    type Value<'b, 'a: 'b> = &'b mut DeviceBuffer<'a, T>;
    const SIZE: usize = 8;
    const ALIGN: usize = 8;
    fn param<'b, 'a: 'b>(value: &Self::Value<'b, 'a>, scratch: &mut u64) -> *mut c_void {
        *scratch = value.device_ptr();
        (scratch as *mut u64).cast()
    }
}

macro_rules! scalar_params {
    ($($t:ty),*) => {$(
        // SAFETY: the scalar itself, borrowed for the launch.
        unsafe impl KernelParam for $t {
            type Value<'b, 'a: 'b> = $t;
            const SIZE: usize = size_of::<$t>();
            const ALIGN: usize = align_of::<$t>();
            fn param<'b, 'a: 'b>(value: &Self::Value<'b, 'a>, _scratch: &mut u64) -> *mut c_void {
                (value as *const $t).cast_mut().cast()
            }
        }
    )*};
}
scalar_params!(u8, i8, u16, i16, u32, i32, u64, i64, f32, f64);

/// A kernel's parameter list: a tuple of [`KernelParam`]s.
pub trait Signature {
    /// The values a launch passes.
    type Args<'b, 'a: 'b>;
    /// (offset, size) of each parameter in the kernel's parameter buffer.
    fn layout() -> Vec<(usize, usize)>;
    /// Calls `f` with the parameter-pointer array for `args` (on the stack).
    fn with_params<'b, 'a: 'b, R>(
        args: &Self::Args<'b, 'a>,
        f: impl FnOnce(&mut [*mut c_void]) -> R,
    ) -> R;
}

macro_rules! count {
    () => { 0 };
    ($x:ident $($rest:ident)*) => { 1 + count!($($rest)*) };
}

macro_rules! signatures {
    ($(($($P:ident $i:tt),*))*) => {$(
        impl<$($P: KernelParam),*> Signature for ($($P,)*) {
            type Args<'b, 'a: 'b> = ($($P::Value<'b, 'a>,)*);

            #[allow(unused_mut, unused_assignments, unused_variables)]
            fn layout() -> Vec<(usize, usize)> {
                let mut offset = 0usize;
                let mut out = Vec::new();
                $(
                    offset = offset.div_ceil($P::ALIGN) * $P::ALIGN;
                    out.push((offset, $P::SIZE));
                    offset += $P::SIZE;
                )*
                out
            }

            #[allow(unused_variables, clippy::unused_unit)]
            fn with_params<'b, 'a: 'b, R>(args: &Self::Args<'b, 'a>, f: impl FnOnce(&mut [*mut c_void]) -> R) -> R {
                let mut scratch = [0u64; 16];
                let s = scratch.as_mut_ptr();
                // SAFETY (each element): distinct indices below 16 of `scratch`, which
                // outlives the call of `f`.
                let mut params: [*mut c_void; count!($($P)*)] = [$($P::param(&args.$i, unsafe { &mut *s.add($i) })),*];
                f(&mut params)
            }
        }
    )*};
}

signatures! {
    ()
    (A 0)
    (A 0, B 1)
    (A 0, B 1, C 2)
    (A 0, B 1, C 2, D 3)
    (A 0, B 1, C 2, D 3, E 4)
    (A 0, B 1, C 2, D 3, E 4, F 5)
    (A 0, B 1, C 2, D 3, E 4, F 5, G 6)
    (A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7)
    (A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8)
    (A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8, J 9)
    (A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8, J 9, K 10)
    (A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8, J 9, K 10, L 11)
    (A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8, J 9, K 10, L 11, M 12)
    (A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8, J 9, K 10, L 11, M 12, N 13)
    (A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8, J 9, K 10, L 11, M 12, N 13, O 14)
    (A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8, J 9, K 10, L 11, M 12, N 13, O 14, P 15)
}

/// Grid or block dimensions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Dim3(pub u32, pub u32, pub u32);

impl From<u32> for Dim3 {
    fn from(x: u32) -> Self {
        Dim3(x, 1, 1)
    }
}
impl From<(u32, u32)> for Dim3 {
    fn from((x, y): (u32, u32)) -> Self {
        Dim3(x, y, 1)
    }
}
impl From<(u32, u32, u32)> for Dim3 {
    fn from((x, y, z): (u32, u32, u32)) -> Self {
        Dim3(x, y, z)
    }
}

impl<S: Signature> Function<'_, S> {
    /// Launches the kernel on `stream` with `grid × block` threads, `shared_bytes` of
    /// dynamic shared memory, and `args` — checked by the compiler against `S`.
    pub fn launch(
        &self,
        stream: &Stream<'_>,
        grid: impl Into<Dim3>,
        block: impl Into<Dim3>,
        shared_bytes: u32,
        args: S::Args<'_, '_>,
    ) -> Result<(), CudaError> {
        let (g, b) = (grid.into(), block.into());
        let launch = self.driver.table().cuLaunchKernel()?;
        S::with_params(&args, |params| {
            // SAFETY: `params` holds one pointer per declared parameter, each to a value
            // of its declared size (the signature was checked at lookup); the function
            // and stream belong to the current context.
            check(unsafe {
                launch(
                    self.raw,
                    g.0,
                    g.1,
                    g.2,
                    b.0,
                    b.1,
                    b.2,
                    shared_bytes,
                    stream.raw(),
                    params.as_mut_ptr(),
                    core::ptr::null_mut(),
                )
            })
        })
    }
}

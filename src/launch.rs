//! Typed kernel launch.
//!
//! A kernel's signature is a tuple of parameter kinds (up to 16): [`In<T>`] (device
//! memory the kernel reads), [`Out<T>`] (device memory it writes) and values passed
//! by value — numbers, or your own `#[repr(C)]` structs that implement
//! [`DeviceCopy`] — or tensor maps ([`TensorMapIn<L>`](crate::tensor_map::TensorMapIn),
//! [`TensorMapOut<L>`](crate::tensor_map::TensorMapOut): 128 bytes aligned to 64, passed
//! as `&map`/`&mut map` of a map of layout `L`). A launch takes a tuple of arguments,
//! one per parameter, each checked by the compiler ([`Arg`]): for `In<T>`, `&buffer` or a [`DeviceSlice<T>`];
//! for `Out<T>`, `&mut buffer` or a [`DeviceSliceMut<T>`]; for a value, the value. So
//! the compiler rejects wrong types (CF6), wrong arity (CF7), host references, `Vec`s
//! and slices (CF8: they are not device memory), memory of another element type
//! (CF9), and the same buffer passed mutably twice or mutably and shared (CF10:
//! borrowing rules). The parameter-pointer array lives on the stack; a launch
//! allocates nothing.
//!
//! # Buffers reach the kernel with their length
//!
//! An `In<T>` or `Out<T>` parameter is passed as a pointer *and* the number of
//! elements behind it — 16 bytes, aligned to 8 — so the kernel can stay inside the
//! memory it was given whatever view the caller picks. In CUDA C++ the parameter is
//! a struct of the same layout:
//!
//! ```c++
//! template <typename T> struct Slice { T *ptr; unsigned long long len; };
//!
//! extern "C" __global__ void vector_add(Slice<const float> a, Slice<const float> b,
//!                                       Slice<float> c) {
//!     unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;
//!     if (i < c.len && i < a.len && i < b.len) c.ptr[i] = a.ptr[i] + b.ptr[i];
//! }
//! ```
//!
//! The launcher fills both fields from the view; safe code cannot pick a length that
//! is not the memory's. This is what makes the declaration's contract
//! ([`Module::function`](crate::module::Module::function)) one a real kernel can keep:
//! it must hold for *every* argument tuple the signature accepts, and a kernel that
//! learns its bounds from a free number (`n`) cannot promise that.
//!
//! # Kernels that synchronise the grid
//!
//! A kernel that waits for every block of its grid (`this_grid().sync()`) is correct
//! only when all of them are resident at once: launched normally with a large grid it
//! hangs or traps. No plain declaration ("correct for every grid") can be true of it,
//! so it has a declaration of its own,
//! [`Module::cooperative_function`](crate::module::Module::cooperative_function),
//! which makes a `Function<'_, S, Cooperative>` ([`Cooperative`]): its only launches
//! are cooperative ones, which check that the grid fits
//! ([`Function::launch_cooperative`], [`Function::launch_with`] with a cooperative
//! [`LaunchConfig`](crate::launch_config::LaunchConfig)). [`Function::launch`],
//! graph kernel nodes and captured launches take only [`Plain`] functions (CF31). A
//! plain kernel may be launched cooperatively too.
//!
//! ```compile_fail
//! # use oxicuda_driver::{launch::{Cooperative, Out}, memory::DeviceBuffer, module::Function, stream::Stream};
//! # fn f(k: &Function<'_, (Out<u32>,), Cooperative>, s: &Stream<'_>, b: &mut DeviceBuffer<'_, u32>) {
//! // CF31: a cooperative kernel has no plain launch.
//! k.launch(s, 1, 32, 0, (b,)).unwrap();
//! # }
//! ```
//!
//! [`Signature`], [`Args`] and [`Arg`] are sealed: no type outside this crate can
//! hand the driver a parameter array, so every pointer the driver reads comes from
//! the implementations here.
//!
//! ```compile_fail
//! # use oxicuda_driver::{launch::{In, Out}, memory::DeviceBuffer, module::Function, stream::Stream};
//! # fn f(k: &Function<'_, (In<f32>, Out<f32>, u32)>, s: &Stream<'_>, a: &DeviceBuffer<'_, i32>, b: &mut DeviceBuffer<'_, f32>) {
//! // CF9: an i32 buffer where the kernel declares f32.
//! k.launch(s, 1, 32, 0, (a, b, 1u32)).unwrap();
//! # }
//! ```

use crate::error::{CudaError, check};
use crate::memory::{DeviceCopy, DeviceRead, DeviceSlice, DeviceSliceMut, DeviceWrite};
use crate::module::Function;
use crate::stream::Stream;
use core::ffi::c_void;
use core::marker::PhantomData;

/// How a declared kernel may be launched: [`Plain`] (in every way) or
/// [`Cooperative`] (only by a cooperative launch). The second type parameter of
/// [`Function`]; sealed.
pub trait LaunchKind: sealed::LaunchKind {}

/// A kernel declared correct for every grid, block and dynamic shared memory size
/// ([`Module::function`](crate::module::Module::function)): launched in every way —
/// [`Function::launch`], [`Function::launch_with`], [`Function::launch_cooperative`],
/// graph kernel nodes and captured launches. The default kind of a [`Function`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Plain;

/// A kernel that must run cooperatively — it synchronises the whole grid
/// (`this_grid().sync()`), which only a grid whose blocks are all resident at once
/// survives — declared with
/// [`Module::cooperative_function`](crate::module::Module::cooperative_function).
/// Its only launches are cooperative ones: [`Function::launch_cooperative`], or
/// [`Function::launch_with`] with a [`LaunchConfig`](crate::launch_config::LaunchConfig)
/// that sets [`cooperative`](crate::launch_config::LaunchConfig::cooperative) (a
/// configuration that does not is refused before the driver is called), each
/// checking that the grid can be resident ([`CudaError::CooperativeGridTooLarge`]).
/// [`Function::launch`], graph kernel nodes and captured launches do not take it
/// (they cannot promise co-residency): the compiler refuses them (CF31).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cooperative;

impl LaunchKind for Plain {}
impl LaunchKind for Cooperative {}
impl sealed::LaunchKind for Plain {
    const COOPERATIVE: bool = false;
}
impl sealed::LaunchKind for Cooperative {
    const COOPERATIVE: bool = true;
}

/// A kernel parameter that the kernel reads: device memory of `T`s, passed as a
/// pointer and its length in elements (`Slice<const T>` in the module docs).
pub struct In<T>(PhantomData<T>);
/// A kernel parameter that the kernel reads and writes: device memory of `T`s, passed
/// as a pointer and its length in elements (`Slice<T>` in the module docs).
pub struct Out<T>(PhantomData<T>);

/// One kind of kernel parameter: [`In<T>`], [`Out<T>`], a [`DeviceCopy`] value, or a
/// tensor map ([`TensorMapIn`](crate::tensor_map::TensorMapIn),
/// [`TensorMapOut`](crate::tensor_map::TensorMapOut)). Sealed.
pub trait KernelParam: sealed::Param {
    /// Its size in the parameter buffer.
    const SIZE: usize;
    /// Its alignment in the parameter buffer.
    const ALIGN: usize;
}

impl<T: DeviceCopy> KernelParam for In<T> {
    const SIZE: usize = 16;
    const ALIGN: usize = 8;
}
impl<T: DeviceCopy> KernelParam for Out<T> {
    const SIZE: usize = 16;
    const ALIGN: usize = 8;
}
impl<T: DeviceCopy> KernelParam for T {
    const SIZE: usize = size_of::<T>();
    const ALIGN: usize = align_of::<T>();
}

/// Room for one argument's bytes when the argument does not hold them itself: a
/// buffer's (address, length).
type Scratch = [u64; 2];

pub(crate) mod sealed {
    use super::Scratch;
    use core::ffi::c_void;

    /// A graph's own object an argument names, which only that graph (and, for a
    /// condition, its conditional bodies) may use.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub enum GraphRef {
        /// Memory the graph allocates: (graph identity, allocation index).
        Memory(u64, usize),
        /// The condition of a conditional node of the graph with this identity.
        Condition(u64),
    }

    pub trait Param {}

    pub trait LaunchKind {
        /// Whether the kernel must be launched cooperatively.
        const COOPERATIVE: bool;
    }
    impl<T: crate::memory::DeviceCopy> Param for super::In<T> {}
    impl<T: crate::memory::DeviceCopy> Param for super::Out<T> {}
    impl<T: crate::memory::DeviceCopy> Param for T {}

    pub trait Layout {
        /// (offset, size) of each parameter in the kernel's parameter buffer.
        fn layout() -> Vec<(usize, usize)>;
    }

    pub trait ArgBytes<P> {
        /// A pointer to the argument's bytes as the kernel's ABI expects them — in
        /// `self` or written to `scratch` — valid while both are borrowed. For
        /// `Out`, the address comes from an exclusive view.
        fn param(&mut self, scratch: &mut Scratch) -> *mut c_void;
        /// The one stream the memory it passes may be used on, if any (a stream-ordered
        /// buffer's: [`crate::pool`]).
        #[inline(always)]
        fn stream_order(&self) -> Option<crate::sys::CUstream> {
            None
        }
        /// The graph object this argument names, if any.
        fn graph_ref(&self) -> Option<GraphRef> {
            None
        }
    }

    pub trait Params<S> {
        /// Calls `f` with the parameter-pointer array (on the stack).
        fn with_params<R>(self, f: impl FnOnce(&mut [*mut c_void]) -> R) -> R;
        /// The first argument whose memory may not be used on `stream` (`None`: by a
        /// graph's node), if any.
        fn foreign_to(&self, stream: Option<crate::sys::CUstream>) -> Option<usize>;
        /// Every graph object the arguments name.
        fn graph_refs(&self, out: &mut Vec<GraphRef>);
    }
}

/// A launch argument for a parameter declared `P`. Sealed: implemented for device
/// memory (`&buffer`, `&mut buffer`, views), for values of `DeviceCopy` types, and for
/// encoded tensor maps ([`crate::tensor_map`]).
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be passed for a kernel parameter declared `{P}`",
    label = "not an argument for `{P}`",
    note = "`In<T>` takes `&DeviceBuffer<T>` or a `DeviceSlice<T>`; `Out<T>` takes `&mut DeviceBuffer<T>` or a `DeviceSliceMut<T>`; a value parameter takes a value of its own type"
)]
pub trait Arg<P: KernelParam>: sealed::ArgBytes<P> {}

/// Writes a view's (address, length) into `scratch`.
fn slice(scratch: &mut Scratch, ptr: u64, len: usize) -> *mut c_void {
    *scratch = [ptr, len as u64];
    scratch.as_mut_ptr().cast()
}

impl<T: DeviceCopy, B: DeviceRead<T> + ?Sized> Arg<In<T>> for &B {}
impl<T: DeviceCopy, B: DeviceRead<T> + ?Sized> sealed::ArgBytes<In<T>> for &B {
    fn param(&mut self, scratch: &mut Scratch) -> *mut c_void {
        let v = self.view();
        slice(scratch, v.device_ptr(), v.len())
    }
    #[inline(always)]
    fn stream_order(&self) -> Option<crate::sys::CUstream> {
        self.view().stream_order()
    }
}
impl<T: DeviceCopy> Arg<In<T>> for DeviceSlice<'_, T> {}
impl<T: DeviceCopy> sealed::ArgBytes<In<T>> for DeviceSlice<'_, T> {
    fn param(&mut self, scratch: &mut Scratch) -> *mut c_void {
        slice(scratch, self.device_ptr(), self.len())
    }
    #[inline(always)]
    fn stream_order(&self) -> Option<crate::sys::CUstream> {
        DeviceSlice::stream_order(self)
    }
}
impl<T: DeviceCopy, B: DeviceWrite<T> + ?Sized> Arg<Out<T>> for &mut B {}
impl<T: DeviceCopy, B: DeviceWrite<T> + ?Sized> sealed::ArgBytes<Out<T>> for &mut B {
    fn param(&mut self, scratch: &mut Scratch) -> *mut c_void {
        let v = self.view_mut();
        slice(scratch, v.device_ptr(), v.len())
    }
    #[inline(always)]
    fn stream_order(&self) -> Option<crate::sys::CUstream> {
        self.view().stream_order()
    }
}
impl<T: DeviceCopy> Arg<Out<T>> for DeviceSliceMut<'_, T> {}
impl<T: DeviceCopy> sealed::ArgBytes<Out<T>> for DeviceSliceMut<'_, T> {
    fn param(&mut self, scratch: &mut Scratch) -> *mut c_void {
        slice(scratch, self.device_ptr(), self.len())
    }
    #[inline(always)]
    fn stream_order(&self) -> Option<crate::sys::CUstream> {
        DeviceSliceMut::stream_order(self)
    }
}
/// A kernel-node argument of a graph for a parameter declared `P`: what [`Arg`]
/// accepts, and, because a graph holds what it uses borrowed for its whole life, device memory
/// borrowed *shared* for an `Out<T>` parameter too (`&buffer`, a [`DeviceSlice<T>`]):
/// so one node can write what another reads, in the order of their dependencies.
/// Sealed.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be passed for a graph kernel node's parameter declared `{P}`",
    label = "not an argument for `{P}`",
    note = "`In<T>` and `Out<T>` take `&DeviceBuffer<T>` or a view; a value parameter takes a value of its own type"
)]
pub trait GraphArg<P: KernelParam>: sealed::ArgBytes<P> {}
impl<T: DeviceCopy, B: DeviceRead<T> + ?Sized> GraphArg<In<T>> for &B {}
impl<T: DeviceCopy> GraphArg<In<T>> for DeviceSlice<'_, T> {}
impl<T: DeviceCopy, B: DeviceWrite<T> + ?Sized> GraphArg<Out<T>> for &mut B {}
impl<T: DeviceCopy> GraphArg<Out<T>> for DeviceSliceMut<'_, T> {}
impl<T: DeviceCopy> GraphArg<T> for T {}
impl<T: DeviceCopy, B: DeviceRead<T> + ?Sized> GraphArg<Out<T>> for &B {}
impl<T: DeviceCopy, B: DeviceRead<T> + ?Sized> sealed::ArgBytes<Out<T>> for &B {
    fn param(&mut self, scratch: &mut Scratch) -> *mut c_void {
        let v = self.view();
        slice(scratch, v.device_ptr(), v.len())
    }
    #[inline(always)]
    fn stream_order(&self) -> Option<crate::sys::CUstream> {
        self.view().stream_order()
    }
}
impl<T: DeviceCopy> GraphArg<Out<T>> for DeviceSlice<'_, T> {}
impl<T: DeviceCopy> sealed::ArgBytes<Out<T>> for DeviceSlice<'_, T> {
    fn param(&mut self, scratch: &mut Scratch) -> *mut c_void {
        slice(scratch, self.device_ptr(), self.len())
    }
    #[inline(always)]
    fn stream_order(&self) -> Option<crate::sys::CUstream> {
        DeviceSlice::stream_order(self)
    }
}

impl<T: DeviceCopy> Arg<T> for T {}
impl<T: DeviceCopy> sealed::ArgBytes<T> for T {
    fn param(&mut self, _scratch: &mut Scratch) -> *mut c_void {
        (self as *mut T).cast()
    }
}

/// A kernel's parameter list: a tuple of up to 16 [`KernelParam`]s. Sealed.
pub trait Signature: sealed::Layout {}

/// A tuple of launch arguments matching the signature `S`, one [`Arg`] per
/// parameter. Sealed.
#[diagnostic::on_unimplemented(
    message = "these launch arguments do not match the kernel's signature `{S}`",
    label = "one argument per declared parameter, in order",
    note = "the arguments are a tuple: `(&input, &mut output, x)`; a single argument is `(x,)`"
)]
pub trait Args<S: Signature>: sealed::Params<S> {}

/// A tuple of graph kernel-node arguments matching the signature `S`, one
/// [`GraphArg`] per parameter. Sealed.
#[diagnostic::on_unimplemented(
    message = "these graph node arguments do not match the kernel's signature `{S}`",
    label = "one argument per declared parameter, in order",
    note = "the arguments are a tuple: `(&input, &output, x)`; a single argument is `(x,)`"
)]
pub trait GraphArgs<S: Signature>: sealed::Params<S> {}

/// Every graph object (allocated memory, condition) that `args` name.
pub(crate) fn graph_refs<S: Signature, A: sealed::Params<S>>(args: &A) -> Vec<sealed::GraphRef> {
    let mut out = Vec::new();
    args.graph_refs(&mut out);
    out
}

/// [`CudaError::WrongStream`] naming the first of `args` whose memory may not be used
/// by a launch on `stream` (a stream-ordered buffer of another stream), or, with
/// `None`, by a graph's kernel node (any stream-ordered buffer: the graph may run on
/// any stream, before the allocation).
#[inline(always)]
pub(crate) fn check_streams<S: Signature, A: sealed::Params<S>>(
    args: &A,
    stream: Option<crate::sys::CUstream>,
) -> Result<(), CudaError> {
    match args.foreign_to(stream) {
        None => Ok(()),
        Some(i) => Err(CudaError::WrongStream { argument: Some(i) }),
    }
}

/// Calls `f` with the parameter-pointer array of `args` (on the stack): one pointer
/// per parameter of `S`, each to a value of its declared size.
pub(crate) fn with_params<S: Signature, A: sealed::Params<S>, R>(
    args: A,
    f: impl FnOnce(&mut [*mut c_void]) -> R,
) -> R {
    sealed::Params::<S>::with_params(args, f)
}

/// (offset, size) of each of `S`'s parameters, as the kernel's parameter buffer lays
/// them out.
pub(crate) fn layout<S: Signature>() -> Vec<(usize, usize)> {
    <S as sealed::Layout>::layout()
}

macro_rules! count {
    () => { 0 };
    ($x:ident $($rest:ident)*) => { 1 + count!($($rest)*) };
}

macro_rules! signatures {
    ($(($($P:ident $A:ident $i:tt),*))*) => {$(
        impl<$($P: KernelParam),*> Signature for ($($P,)*) {}
        impl<$($P: KernelParam),*> sealed::Layout for ($($P,)*) {
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
        }

        impl<$($P: KernelParam, $A: Arg<$P>),*> Args<($($P,)*)> for ($($A,)*) {}
        impl<$($P: KernelParam, $A: GraphArg<$P>),*> GraphArgs<($($P,)*)> for ($($A,)*) {}
        impl<$($P: KernelParam, $A: sealed::ArgBytes<$P>),*> sealed::Params<($($P,)*)> for ($($A,)*) {
            #[allow(unused_variables, unused_mut, clippy::unused_unit)]
            #[inline]
            fn with_params<R>(mut self, f: impl FnOnce(&mut [*mut c_void]) -> R) -> R {
                let mut scratch = [[0u64; 2]; count!($($P)*)];
                let mut params: [*mut c_void; count!($($P)*)] =
                    [$(sealed::ArgBytes::<$P>::param(&mut self.$i, &mut scratch[$i])),*];
                f(&mut params)
            }
            #[allow(unused_variables)]
            #[inline(always)]
            fn foreign_to(&self, stream: Option<crate::sys::CUstream>) -> Option<usize> {
                $(
                    if !crate::memory::usable_on(sealed::ArgBytes::<$P>::stream_order(&self.$i), stream) {
                        return Some($i);
                    }
                )*
                None
            }
            #[allow(unused_variables)]
            fn graph_refs(&self, out: &mut Vec<sealed::GraphRef>) {
                $(out.extend(sealed::ArgBytes::<$P>::graph_ref(&self.$i));)*
            }
        }
    )*};
}

signatures! {
    ()
    (A0 X0 0)
    (A0 X0 0, A1 X1 1)
    (A0 X0 0, A1 X1 1, A2 X2 2)
    (A0 X0 0, A1 X1 1, A2 X2 2, A3 X3 3)
    (A0 X0 0, A1 X1 1, A2 X2 2, A3 X3 3, A4 X4 4)
    (A0 X0 0, A1 X1 1, A2 X2 2, A3 X3 3, A4 X4 4, A5 X5 5)
    (A0 X0 0, A1 X1 1, A2 X2 2, A3 X3 3, A4 X4 4, A5 X5 5, A6 X6 6)
    (A0 X0 0, A1 X1 1, A2 X2 2, A3 X3 3, A4 X4 4, A5 X5 5, A6 X6 6, A7 X7 7)
    (A0 X0 0, A1 X1 1, A2 X2 2, A3 X3 3, A4 X4 4, A5 X5 5, A6 X6 6, A7 X7 7, A8 X8 8)
    (A0 X0 0, A1 X1 1, A2 X2 2, A3 X3 3, A4 X4 4, A5 X5 5, A6 X6 6, A7 X7 7, A8 X8 8, A9 X9 9)
    (A0 X0 0, A1 X1 1, A2 X2 2, A3 X3 3, A4 X4 4, A5 X5 5, A6 X6 6, A7 X7 7, A8 X8 8, A9 X9 9, A10 X10 10)
    (A0 X0 0, A1 X1 1, A2 X2 2, A3 X3 3, A4 X4 4, A5 X5 5, A6 X6 6, A7 X7 7, A8 X8 8, A9 X9 9, A10 X10 10, A11 X11 11)
    (A0 X0 0, A1 X1 1, A2 X2 2, A3 X3 3, A4 X4 4, A5 X5 5, A6 X6 6, A7 X7 7, A8 X8 8, A9 X9 9, A10 X10 10, A11 X11 11, A12 X12 12)
    (A0 X0 0, A1 X1 1, A2 X2 2, A3 X3 3, A4 X4 4, A5 X5 5, A6 X6 6, A7 X7 7, A8 X8 8, A9 X9 9, A10 X10 10, A11 X11 11, A12 X12 12, A13 X13 13)
    (A0 X0 0, A1 X1 1, A2 X2 2, A3 X3 3, A4 X4 4, A5 X5 5, A6 X6 6, A7 X7 7, A8 X8 8, A9 X9 9, A10 X10 10, A11 X11 11, A12 X12 12, A13 X13 13, A14 X14 14)
    (A0 X0 0, A1 X1 1, A2 X2 2, A3 X3 3, A4 X4 4, A5 X5 5, A6 X6 6, A7 X7 7, A8 X8 8, A9 X9 9, A10 X10 10, A11 X11 11, A12 X12 12, A13 X13 13, A14 X14 14, A15 X15 15)
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
    #[inline]
    pub fn launch(
        &self,
        stream: &Stream<'_>,
        grid: impl Into<Dim3>,
        block: impl Into<Dim3>,
        shared_bytes: u32,
        args: impl Args<S>,
    ) -> Result<(), CudaError> {
        let (g, b) = (grid.into(), block.into());
        check_streams::<S, _>(&args, Some(stream.raw()))?;
        let launch = self.driver.table().cuLaunchKernel()?;
        with_params::<S, _, _>(args, |params| {
            let mut call = move || {
                // SAFETY: `params` holds one pointer per declared parameter, each to a
                // value of its declared size (the signature was checked at lookup); the
                // function and stream belong to the current context.
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
            };
            if crate::trace::may_trace() {
                let l = crate::trace::Launch {
                    driver: self.driver,
                    function: self.raw,
                    api: "cuLaunchKernel",
                    grid: (g.0, g.1, g.2),
                    block: (b.0, b.1, b.2),
                    shared_bytes,
                    stream: stream.raw(),
                    cooperative: false,
                };
                return crate::trace::traced(&l, call);
            }
            call()
        })
    }
}

static_assertions::assert_impl_all!(In<f32>: Send, Sync);
static_assertions::assert_impl_all!(Out<f32>: Send, Sync);
static_assertions::assert_impl_all!(Dim3: Send, Sync, Copy);

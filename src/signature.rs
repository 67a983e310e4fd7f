//! The kernel parameter kinds and signatures: [`In<T>`], [`Out<T>`] and values
//! ([`KernelParam`]), a kernel's parameter tuple ([`Signature`]) and its layout in the
//! parameter buffer, how a kernel may be launched ([`LaunchKind`]: [`Plain`],
//! [`Cooperative`]), and the argument tuples that match a signature ([`Arg`],
//! [`Args`], [`GraphArg`], [`GraphArgs`]) with the parameter-pointer array they make.
//! Below `module`, whose `Function<'m, S, K>` is typed by them; public as
//! `oxicuda_driver::launch::*` (the [`launch`](crate::launch) docs tell the rules).

use crate::error::CudaError;
use crate::memory::{DeviceCopy, DeviceRead, DeviceSlice, DeviceSliceMut, DeviceWrite};
use core::ffi::c_void;
use core::marker::PhantomData;

/// How a declared kernel may be launched: [`Plain`] (in every way) or
/// [`Cooperative`] (only by a cooperative launch). The second type parameter of
/// [`Function`](crate::module::Function); sealed.
pub trait LaunchKind: sealed::LaunchKind {}

/// A kernel declared correct for every grid, block and dynamic shared memory size
/// ([`Module::function`](crate::module::Module::function)): launched in every way —
/// [`Function::launch`](crate::module::Function::launch), [`Function::launch_with`](crate::module::Function::launch_with), [`Function::launch_cooperative`](crate::module::Function::launch_cooperative),
/// graph kernel nodes and captured launches. The default kind of a [`Function`](crate::module::Function).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Plain;

/// A kernel that must run cooperatively — it synchronises the whole grid
/// (`this_grid().sync()`), which only a grid whose blocks are all resident at once
/// survives — declared with
/// [`Module::cooperative_function`](crate::module::Module::cooperative_function).
/// Its only launches are cooperative ones: [`Function::launch_cooperative`](crate::module::Function::launch_cooperative), or
/// [`Function::launch_with`](crate::module::Function::launch_with) with a [`LaunchConfig`](crate::launch_config::LaunchConfig)
/// that sets [`cooperative`](crate::launch_config::LaunchConfig::cooperative) (a
/// configuration that does not is refused before the driver is called), each
/// checking that the grid can be resident ([`CudaError::CooperativeGridTooLarge`](crate::CudaError::CooperativeGridTooLarge)).
/// [`Function::launch`](crate::module::Function::launch), graph kernel nodes and captured launches do not take it
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

/// One kind of kernel parameter: [`In<T>`], [`Out<T>`], a [`DeviceCopy`](crate::memory::DeviceCopy) value, or a
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
/// borrowed *shared* for an `Out<T>` parameter too (`&buffer`, a [`DeviceSlice<T>`](crate::memory::DeviceSlice)):
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

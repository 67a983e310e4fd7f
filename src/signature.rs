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

/// A kernel parameter that is a raw `const T *`, as existing CUDA code declares it
/// (8 bytes): the device address of a view the kernel reads, without its length.
/// Takes what [`In<T>`] takes (`&buffer` or a [`DeviceSlice<T>`]). A signature whose
/// pointers are all bounded by one [`Len`] launches safely (the launch checks each
/// view against the length); otherwise only through the `unsafe`
/// [`Function::launch_unchecked`](crate::module::Function::launch_unchecked).
pub struct Ptr<T>(PhantomData<T>);
/// A kernel parameter that is a raw `T *` (8 bytes): the device address of a view the
/// kernel reads and writes, without its length. Takes what [`Out<T>`] takes
/// (`&mut buffer` or a [`DeviceSliceMut<T>`]); see [`Ptr`] for when its launch is safe.
pub struct PtrMut<T>(PhantomData<T>);
/// A kernel parameter of integer type `I` (`i32`, `u32`, `i64` or `u64`: `int n`,
/// `unsigned n`, `long long n`, `size_t n`) that bounds every [`Ptr`] and [`PtrMut`]
/// parameter of the kernel: a safe launch passes a value of type `I` and checks,
/// before the driver is called, that it is not negative and that every pointer
/// argument's view holds at least that many elements
/// ([`CudaError::NegativeLength`], [`CudaError::ViewTooShort`]).
pub struct Len<I>(PhantomData<I>);

/// `Debug` for the parameter kinds, with no bound on the element type (like
/// `PhantomData`'s): `In<f32>`.
macro_rules! kind_debug {
    ($($kind:ident),*) => {$(
        impl<T> core::fmt::Debug for $kind<T> {
            fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
                f.write_str(&crate::memory::short_type_name::<Self>())
            }
        }
    )*};
}
kind_debug!(In, Out, Ptr, PtrMut, Len);

/// The integer types a [`Len`] parameter may have: `i32`, `u32`, `i64`, `u64`. Sealed.
pub trait LenInt: sealed::LenInt + DeviceCopy {}
impl LenInt for i32 {}
impl LenInt for u32 {}
impl LenInt for i64 {}
impl LenInt for u64 {}

/// One kind of kernel parameter: [`In<T>`], [`Out<T>`], [`Ptr<T>`], [`PtrMut<T>`],
/// [`Len<I>`], a [`DeviceCopy`](crate::memory::DeviceCopy) value, or a
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
impl<T: DeviceCopy> KernelParam for Ptr<T> {
    const SIZE: usize = 8;
    const ALIGN: usize = 8;
}
impl<T: DeviceCopy> KernelParam for PtrMut<T> {
    const SIZE: usize = 8;
    const ALIGN: usize = 8;
}
impl<I: LenInt> KernelParam for Len<I> {
    const SIZE: usize = size_of::<I>();
    const ALIGN: usize = align_of::<I>();
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
        /// A buffer the graph owns: (graph identity, buffer index).
        Buffer(u64, usize),
    }

    pub trait Param {
        /// What the parameter is for a safe launch's bound: [`Free`], [`IsPtr`] or
        /// [`IsLen`].
        type Class: Class;
    }

    /// A parameter that reaches the kernel with its bound, or needs none (a buffer
    /// with its length, a value, a tensor map).
    pub enum Free {}
    /// A raw pointer parameter ([`super::Ptr`], [`super::PtrMut`]).
    pub enum IsPtr {}
    /// A length parameter ([`super::Len`]).
    pub enum IsLen {}

    /// A signature without raw pointers or lengths (so far).
    pub enum NoPointers {}
    /// A signature with raw pointers and no `Len` (so far).
    pub enum PointersWithoutLen {}
    /// A signature with one `Len` and no raw pointers (so far).
    pub enum LenWithoutPointers {}
    /// A signature with raw pointers and one `Len` bounding them.
    pub enum PointersBoundedByLen {}
    /// A signature with more than one `Len`: which one bounds the pointers is unsaid.
    pub enum MoreThanOneLen {}

    /// A state of the fold over a signature's parameters: the state after one more
    /// parameter of each class.
    pub trait State {
        /// After a [`Free`] parameter.
        type OnFree: State;
        /// After an [`IsPtr`] parameter.
        type OnPtr: State;
        /// After an [`IsLen`] parameter.
        type OnLen: State;
    }
    /// A parameter's class: how it moves the fold's state.
    pub trait Class {
        /// The state after a parameter of this class in state `S`.
        type Then<S: State>: State;
        /// Whether it is a raw pointer, whose view a `Len` bounds.
        const IS_PTR: bool = false;
        /// Whether it is a `Len`.
        const IS_LEN: bool = false;
    }
    impl Class for Free {
        type Then<S: State> = S::OnFree;
    }
    impl Class for IsPtr {
        type Then<S: State> = S::OnPtr;
        const IS_PTR: bool = true;
    }
    impl Class for IsLen {
        type Then<S: State> = S::OnLen;
        const IS_LEN: bool = true;
    }
    macro_rules! states {
        ($($s:ident: $free:ident $ptr:ident $len:ident;)*) => {$(
            impl State for $s {
                type OnFree = $free;
                type OnPtr = $ptr;
                type OnLen = $len;
            }
        )*};
    }
    states! {
        NoPointers: NoPointers PointersWithoutLen LenWithoutPointers;
        PointersWithoutLen: PointersWithoutLen PointersWithoutLen PointersBoundedByLen;
        LenWithoutPointers: LenWithoutPointers PointersBoundedByLen MoreThanOneLen;
        PointersBoundedByLen: PointersBoundedByLen PointersBoundedByLen MoreThanOneLen;
        MoreThanOneLen: MoreThanOneLen MoreThanOneLen MoreThanOneLen;
    }

    /// A final state whose launches the launcher can bound: no raw pointer, or raw
    /// pointers and exactly one `Len`.
    #[diagnostic::on_unimplemented(
        message = "this kernel signature has raw pointer parameters (`Ptr`, `PtrMut`) that no single `Len` parameter bounds, so its launch cannot be checked",
        label = "a pointer parameter without exactly one `Len`",
        note = "declare the kernel's length parameter `Len<I>` (the launch then checks every pointer's view against it), or launch with the `unsafe` `launch_unchecked` (`launch_with_unchecked`, `add_kernel_unchecked`, a capture's `launch_unchecked`), promising the kernel stays inside each view"
    )]
    pub trait Checkable {}
    impl Checkable for NoPointers {}
    impl Checkable for LenWithoutPointers {}
    impl Checkable for PointersBoundedByLen {}

    /// The integer of a `Len` parameter.
    pub trait LenInt: Copy {
        /// Its largest value: the most threads a launch it bounds may have, so that a
        /// thread's linear index computed in this type does not wrap.
        const MAX: u64;
        /// Its value, widened.
        fn widen(self) -> i128;
    }
    macro_rules! len_ints {
        ($($t:ty)*) => {$(
            impl LenInt for $t {
                const MAX: u64 = <$t>::MAX as u64;
                #[inline(always)]
                fn widen(self) -> i128 {
                    i128::from(self)
                }
            }
        )*};
    }
    len_ints!(i32 u32 i64 u64);

    pub trait LaunchKind {
        /// Whether the kernel must be launched cooperatively.
        const COOPERATIVE: bool;
    }
    impl<T: crate::memory::DeviceCopy> Param for super::In<T> {
        type Class = Free;
    }
    impl<T: crate::memory::DeviceCopy> Param for super::Out<T> {
        type Class = Free;
    }
    impl<T: crate::memory::DeviceCopy> Param for super::Ptr<T> {
        type Class = IsPtr;
    }
    impl<T: crate::memory::DeviceCopy> Param for super::PtrMut<T> {
        type Class = IsPtr;
    }
    impl<I: super::LenInt> Param for super::Len<I> {
        type Class = IsLen;
    }
    impl<T: crate::memory::DeviceCopy> Param for T {
        type Class = Free;
    }

    pub trait Layout {
        /// The signature's class for a safe launch (a [`Checkable`] one, or not).
        type Bound;
        /// (offset, size) of each parameter in the kernel's parameter buffer.
        fn layout() -> Vec<(usize, usize)>;
        /// Whether each parameter must be one integer in the kernel's ABI: a raw
        /// pointer or a length.
        fn integers() -> Vec<bool>;
    }

    /// What an argument lets a kernel reach, for the launch's checks. Every argument
    /// states it ([`ArgBytes::reach`] has no default), so a new kind of argument
    /// cannot slip past a check by forgetting it.
    #[derive(Debug, Clone, Copy)]
    pub struct Reach<'m> {
        /// The one stream the memory it passes may be used on, if any (a
        /// stream-ordered buffer's: [`crate::pool`]).
        pub order: Option<crate::sys::CUstream>,
        /// The length of the view it passes, in elements (0 for a value).
        pub elements: usize,
        /// The graph object it names, if any.
        pub graph: Option<GraphRef>,
        /// For a `Len` argument: its value, widened, and the most threads a launch
        /// it bounds may have.
        pub length: Option<(i128, u64)>,
        /// The mark of the memory it passes, if it has one: a launch sets it to
        /// its stream ([`crate::order`]).
        pub mark: Option<&'m crate::order::Mark>,
    }

    impl<'m> Reach<'m> {
        /// A value: no memory, no graph object, no length.
        pub const VALUE: Reach<'static> = Reach {
            order: None,
            elements: 0,
            graph: None,
            length: None,
            mark: None,
        };

        /// A view: its length, the stream it is usable on (any, if `None`) and its
        /// mark.
        #[inline(always)]
        pub fn view<T: crate::memory::DeviceCopy>(
            v: &crate::memory::DeviceSlice<'m, T>,
        ) -> Reach<'m> {
            Reach {
                order: v.stream_order(),
                elements: v.len(),
                graph: None,
                length: None,
                mark: v.host_mark(),
            }
        }

        /// As [`view`](Self::view), for an exclusive view.
        #[inline(always)]
        pub fn view_mut<T: crate::memory::DeviceCopy>(
            v: &crate::memory::DeviceSliceMut<'m, T>,
        ) -> Reach<'m> {
            Reach {
                order: v.stream_order(),
                elements: v.len(),
                graph: None,
                length: None,
                mark: v.host_mark(),
            }
        }
    }

    pub trait ArgBytes<P> {
        /// A pointer to the argument's bytes as the kernel's ABI expects them — in
        /// `self` or written to `scratch` — valid while both are borrowed. For
        /// `Out`, the address comes from an exclusive view.
        fn param(&mut self, scratch: &mut Scratch) -> *mut c_void;
        /// What the argument lets the kernel reach. Its mark must lie in the memory
        /// the argument borrows, never in the argument value itself: a graph keeps
        /// the marks of its nodes' arguments for as long as that borrow (`'g`).
        fn reach(&self) -> Reach<'_>;
    }

    pub trait Params<S> {
        /// Calls `f` with the parameter-pointer array (on the stack).
        fn with_params<R>(self, f: impl FnOnce(&mut [*mut c_void]) -> R) -> R;
        /// The first argument whose memory may not be used on `stream` (`None`: by a
        /// graph's node), if any.
        fn foreign_to(&self, stream: Option<crate::sys::CUstream>) -> Option<usize>;
        /// Every graph object the arguments name.
        fn graph_refs(&self, out: &mut Vec<GraphRef>);
        /// Marks the memory the arguments pass with `stream` ([`crate::order`]);
        /// whether any argument has a mark.
        fn mark(&self, stream: crate::order::StreamId) -> bool;
        /// The marks of the memory the arguments pass.
        fn marks(&self, out: &mut Vec<*const crate::order::Mark>);
        /// The `Len` argument, if any: (its index, its value, the most threads a
        /// launch it bounds may have).
        fn len_arg(&self) -> Option<(usize, i128, u64)>;
        /// The first raw pointer argument whose view holds fewer than `n` elements:
        /// (its index, its view's length).
        fn short_view(&self, n: i128) -> Option<(usize, usize)>;
    }
}

/// A launch argument for a parameter declared `P`. Sealed: implemented for device
/// memory (`&buffer`, `&mut buffer`, views), for values of `DeviceCopy` types, and for
/// encoded tensor maps ([`crate::tensor_map`]).
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be passed for a kernel parameter declared `{P}`",
    label = "not an argument for `{P}`",
    note = "`In<T>` and `Ptr<T>` take `&DeviceBuffer<T>` or a `DeviceSlice<T>`; `Out<T>` and `PtrMut<T>` take `&mut DeviceBuffer<T>` or a `DeviceSliceMut<T>`; `Len<I>` and a value parameter take a value of their own type"
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
    fn reach(&self) -> sealed::Reach<'_> {
        sealed::Reach::view(&self.view())
    }
}
impl<T: DeviceCopy> Arg<In<T>> for DeviceSlice<'_, T> {}
impl<T: DeviceCopy> sealed::ArgBytes<In<T>> for DeviceSlice<'_, T> {
    fn param(&mut self, scratch: &mut Scratch) -> *mut c_void {
        slice(scratch, self.device_ptr(), self.len())
    }
    #[inline(always)]
    fn reach(&self) -> sealed::Reach<'_> {
        sealed::Reach::view(self)
    }
}
impl<T: DeviceCopy, B: DeviceWrite<T> + ?Sized> Arg<Out<T>> for &mut B {}
impl<T: DeviceCopy, B: DeviceWrite<T> + ?Sized> sealed::ArgBytes<Out<T>> for &mut B {
    fn param(&mut self, scratch: &mut Scratch) -> *mut c_void {
        let v = self.view_mut();
        slice(scratch, v.device_ptr(), v.len())
    }
    #[inline(always)]
    fn reach(&self) -> sealed::Reach<'_> {
        sealed::Reach::view(&self.view())
    }
}
impl<T: DeviceCopy> Arg<Out<T>> for DeviceSliceMut<'_, T> {}
impl<T: DeviceCopy> sealed::ArgBytes<Out<T>> for DeviceSliceMut<'_, T> {
    fn param(&mut self, scratch: &mut Scratch) -> *mut c_void {
        slice(scratch, self.device_ptr(), self.len())
    }
    #[inline(always)]
    fn reach(&self) -> sealed::Reach<'_> {
        sealed::Reach::view_mut(self)
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
    note = "`In<T>`, `Out<T>`, `Ptr<T>` and `PtrMut<T>` take `&DeviceBuffer<T>` or a view; `Len<I>` and a value parameter take a value of their own type"
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
    fn reach(&self) -> sealed::Reach<'_> {
        sealed::Reach::view(&self.view())
    }
}
impl<T: DeviceCopy> GraphArg<Out<T>> for DeviceSlice<'_, T> {}
impl<T: DeviceCopy> sealed::ArgBytes<Out<T>> for DeviceSlice<'_, T> {
    fn param(&mut self, scratch: &mut Scratch) -> *mut c_void {
        slice(scratch, self.device_ptr(), self.len())
    }
    #[inline(always)]
    fn reach(&self) -> sealed::Reach<'_> {
        sealed::Reach::view(self)
    }
}

/// The device address of a shared borrow of `T`s: for [`Ptr<T>`].
impl<T: DeviceCopy, B: DeviceRead<T> + ?Sized> sealed::ArgBytes<Ptr<T>> for &B {
    fn param(&mut self, scratch: &mut Scratch) -> *mut c_void {
        scratch[0] = self.view().device_ptr();
        scratch.as_mut_ptr().cast()
    }
    #[inline(always)]
    fn reach(&self) -> sealed::Reach<'_> {
        sealed::Reach::view(&self.view())
    }
}
impl<T: DeviceCopy, B: DeviceRead<T> + ?Sized> Arg<Ptr<T>> for &B {}
impl<T: DeviceCopy, B: DeviceRead<T> + ?Sized> GraphArg<Ptr<T>> for &B {}
impl<T: DeviceCopy> sealed::ArgBytes<Ptr<T>> for DeviceSlice<'_, T> {
    fn param(&mut self, scratch: &mut Scratch) -> *mut c_void {
        scratch[0] = self.device_ptr();
        scratch.as_mut_ptr().cast()
    }
    #[inline(always)]
    fn reach(&self) -> sealed::Reach<'_> {
        sealed::Reach::view(self)
    }
}
impl<T: DeviceCopy> Arg<Ptr<T>> for DeviceSlice<'_, T> {}
impl<T: DeviceCopy> GraphArg<Ptr<T>> for DeviceSlice<'_, T> {}
impl<T: DeviceCopy, B: DeviceWrite<T> + ?Sized> sealed::ArgBytes<PtrMut<T>> for &mut B {
    fn param(&mut self, scratch: &mut Scratch) -> *mut c_void {
        scratch[0] = self.view_mut().device_ptr();
        scratch.as_mut_ptr().cast()
    }
    #[inline(always)]
    fn reach(&self) -> sealed::Reach<'_> {
        sealed::Reach::view(&self.view())
    }
}
impl<T: DeviceCopy, B: DeviceWrite<T> + ?Sized> Arg<PtrMut<T>> for &mut B {}
impl<T: DeviceCopy, B: DeviceWrite<T> + ?Sized> GraphArg<PtrMut<T>> for &mut B {}
impl<T: DeviceCopy> sealed::ArgBytes<PtrMut<T>> for DeviceSliceMut<'_, T> {
    fn param(&mut self, scratch: &mut Scratch) -> *mut c_void {
        scratch[0] = self.device_ptr();
        scratch.as_mut_ptr().cast()
    }
    #[inline(always)]
    fn reach(&self) -> sealed::Reach<'_> {
        sealed::Reach::view_mut(self)
    }
}
impl<T: DeviceCopy> Arg<PtrMut<T>> for DeviceSliceMut<'_, T> {}
impl<T: DeviceCopy> GraphArg<PtrMut<T>> for DeviceSliceMut<'_, T> {}
// A graph node may write through memory borrowed shared (see `GraphArg`).
impl<T: DeviceCopy, B: DeviceRead<T> + ?Sized> sealed::ArgBytes<PtrMut<T>> for &B {
    fn param(&mut self, scratch: &mut Scratch) -> *mut c_void {
        scratch[0] = self.view().device_ptr();
        scratch.as_mut_ptr().cast()
    }
    #[inline(always)]
    fn reach(&self) -> sealed::Reach<'_> {
        sealed::Reach::view(&self.view())
    }
}
impl<T: DeviceCopy, B: DeviceRead<T> + ?Sized> GraphArg<PtrMut<T>> for &B {}
impl<T: DeviceCopy> sealed::ArgBytes<PtrMut<T>> for DeviceSlice<'_, T> {
    fn param(&mut self, scratch: &mut Scratch) -> *mut c_void {
        scratch[0] = self.device_ptr();
        scratch.as_mut_ptr().cast()
    }
    #[inline(always)]
    fn reach(&self) -> sealed::Reach<'_> {
        sealed::Reach::view(self)
    }
}
impl<T: DeviceCopy> GraphArg<PtrMut<T>> for DeviceSlice<'_, T> {}

impl<I: LenInt> sealed::ArgBytes<Len<I>> for I {
    fn param(&mut self, _scratch: &mut Scratch) -> *mut c_void {
        (self as *mut I).cast()
    }
    #[inline(always)]
    fn reach(&self) -> sealed::Reach<'_> {
        sealed::Reach {
            length: Some((sealed::LenInt::widen(*self), <I as sealed::LenInt>::MAX)),
            ..sealed::Reach::VALUE
        }
    }
}
impl<I: LenInt> Arg<Len<I>> for I {}
impl<I: LenInt> GraphArg<Len<I>> for I {}

impl<T: DeviceCopy> Arg<T> for T {}
impl<T: DeviceCopy> sealed::ArgBytes<T> for T {
    fn param(&mut self, _scratch: &mut Scratch) -> *mut c_void {
        (self as *mut T).cast()
    }
    #[inline(always)]
    fn reach(&self) -> sealed::Reach<'_> {
        sealed::Reach::VALUE
    }
}

/// A kernel's parameter list: a tuple of up to 16 [`KernelParam`]s. Sealed.
pub trait Signature: sealed::Layout {}

/// A signature whose launches the launcher can bound, so that the safe launches
/// ([`Function::launch`](crate::module::Function::launch), `launch_with`, graph kernel
/// nodes, captured launches) take it: one without raw pointer parameters ([`Ptr`],
/// [`PtrMut`]), or one whose raw pointers are all bounded by exactly one [`Len`]
/// parameter (each launch checks the views against it). Any other signature launches
/// only through the `unsafe` `*_unchecked` forms. Implemented by the crate for every
/// such signature.
#[diagnostic::on_unimplemented(
    message = "the kernel signature `{Self}` has raw pointer parameters that no single `Len` bounds: it has no safe launch",
    label = "pointer parameters without exactly one `Len`",
    note = "declare the kernel's length parameter `Len<I>` (the launch then checks every pointer's view against it), or use the `unsafe` `launch_unchecked` (`launch_with_unchecked`, `add_kernel_unchecked`, a capture's `launch_unchecked`), promising the kernel stays inside each view"
)]
pub trait Bounded: Signature {}
impl<S: Signature> Bounded for S where <S as sealed::Layout>::Bound: sealed::Checkable {}

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

/// The marks of the memory `args` pass ([`crate::order`]), for a graph's node.
pub(crate) fn marks<S: Signature, A: sealed::Params<S>>(
    args: &A,
) -> Vec<*const crate::order::Mark> {
    let mut out = Vec::new();
    args.marks(&mut out);
    out
}

/// [`check_streams`] for a launch on `stream`, then marks the memory `args` pass
/// with it ([`crate::order`]): host accesses to that memory wait for the launch.
#[inline(always)]
pub(crate) fn check_and_mark<S: Signature, A: sealed::Params<S>>(
    args: &A,
    stream: &crate::stream::Stream<'_>,
) -> Result<(), CudaError> {
    check_streams::<S, A>(args, Some(stream.raw()))?;
    if args.mark(stream.id()) {
        stream.note_marked();
    }
    Ok(())
}

/// The bound check of a safe launch of a [`Bounded`] signature with `threads`
/// threads in all (grid × block): the `Len` argument, if any, is not negative
/// ([`CudaError::NegativeLength`]), the launch has no more threads than the `Len`'s
/// type can count ([`CudaError::TooManyThreadsForLen`]: a thread's linear index computed
/// in that type, as `int i = blockIdx.x * blockDim.x + threadIdx.x` does, never
/// wraps), and every raw pointer argument's view holds at least that many elements
/// ([`CudaError::ViewTooShort`]). A few compares; nothing for a signature without a
/// `Len`.
#[inline(always)]
pub(crate) fn check_bounds<S: Bounded, A: sealed::Params<S>>(
    args: &A,
    threads: impl FnOnce() -> u128,
) -> Result<(), CudaError> {
    let Some((parameter, value, max_threads)) = args.len_arg() else {
        return Ok(());
    };
    if value < 0 {
        return Err(CudaError::NegativeLength {
            parameter,
            value: value as i64,
        });
    }
    let threads = threads();
    if threads > u128::from(max_threads) {
        return Err(CudaError::TooManyThreadsForLen {
            parameter,
            threads,
            max: max_threads,
        });
    }
    match args.short_view(value) {
        None => Ok(()),
        Some((parameter, len)) => Err(CudaError::ViewTooShort {
            parameter,
            len,
            value: value as u64,
        }),
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

/// Whether each of `S`'s parameters must be one integer in the kernel's ABI (a raw
/// pointer, a length).
pub(crate) fn integers<S: Signature>() -> Vec<bool> {
    <S as sealed::Layout>::integers()
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

/// The bound class of a parameter list: the state after stepping through each
/// parameter's class from `$s`.
macro_rules! fold {
    ($s:ty;) => { $s };
    ($s:ty; $P:ident $($rest:ident)*) => {
        fold!(<<$P as sealed::Param>::Class as sealed::Class>::Then<$s>; $($rest)*)
    };
}

macro_rules! signatures {
    ($(($($P:ident $A:ident $i:tt),*))*) => {$(
        impl<$($P: KernelParam),*> Signature for ($($P,)*) {}
        impl<$($P: KernelParam),*> sealed::Layout for ($($P,)*) {
            type Bound = fold!(sealed::NoPointers; $($P)*);
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
            fn integers() -> Vec<bool> {
                vec![$(
                    <<$P as sealed::Param>::Class as sealed::Class>::IS_PTR
                        || <<$P as sealed::Param>::Class as sealed::Class>::IS_LEN
                ),*]
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
                    if !crate::memory::usable_on(sealed::ArgBytes::<$P>::reach(&self.$i).order, stream) {
                        return Some($i);
                    }
                )*
                None
            }
            #[allow(unused_variables)]
            fn graph_refs(&self, out: &mut Vec<sealed::GraphRef>) {
                $(out.extend(sealed::ArgBytes::<$P>::reach(&self.$i).graph);)*
            }
            #[allow(unused_variables)]
            fn marks(&self, out: &mut Vec<*const crate::order::Mark>) {
                $(out.extend(sealed::ArgBytes::<$P>::reach(&self.$i).mark.map(|m| m as *const _));)*
            }
            #[allow(unused_variables, unused_mut)]
            #[inline(always)]
            fn mark(&self, stream: crate::order::StreamId) -> bool {
                let mut any = false;
                $(
                    if let Some(m) = sealed::ArgBytes::<$P>::reach(&self.$i).mark {
                        m.set(stream);
                        any = true;
                    }
                )*
                any
            }
            #[allow(unused_mut)]
            #[inline(always)]
            fn len_arg(&self) -> Option<(usize, i128, u64)> {
                let mut found = None;
                $(
                    if <<$P as sealed::Param>::Class as sealed::Class>::IS_LEN {
                        // A `Len` states its value (`length`); one that did not would
                        // bound nothing, so it bounds every pointer to zero elements.
                        let (v, max) = sealed::ArgBytes::<$P>::reach(&self.$i)
                            .length
                            .unwrap_or((i128::MAX, 0));
                        found = Some(($i, v, max));
                    }
                )*
                found
            }
            #[allow(unused_variables)]
            #[inline(always)]
            fn short_view(&self, n: i128) -> Option<(usize, usize)> {
                $(
                    if <<$P as sealed::Param>::Class as sealed::Class>::IS_PTR {
                        let len = sealed::ArgBytes::<$P>::reach(&self.$i).elements;
                        if (len as u128) < n as u128 {
                            return Some(($i, len));
                        }
                    }
                )*
                None
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

#[cfg(test)]
mod tests {
    use super::*;

    fn threads(n: u128) -> impl FnOnce() -> u128 {
        move || n
    }

    #[test]
    fn a_len_bounds_the_launch_to_the_threads_its_type_counts() {
        let i32_max = i32::MAX as u128;
        assert_eq!(
            check_bounds::<(Len<i32>,), _>(&(7i32,), threads(i32_max)),
            Ok(())
        );
        assert_eq!(
            check_bounds::<(Len<i32>,), _>(&(7i32,), threads(i32_max + 1)),
            Err(CudaError::TooManyThreadsForLen {
                parameter: 0,
                threads: i32_max + 1,
                max: i32::MAX as u64
            })
        );
        let u32_max = u32::MAX as u128;
        assert_eq!(
            check_bounds::<(u8, Len<u32>), _>(&(1u8, 7u32), threads(u32_max)),
            Ok(())
        );
        assert!(matches!(
            check_bounds::<(u8, Len<u32>), _>(&(1u8, 7u32), threads(u32_max + 1)),
            Err(CudaError::TooManyThreadsForLen { parameter: 1, .. })
        ));
        // 64-bit lengths: 2^63-1 threads, and not the largest grid the driver
        // describes (2^31-1 x 65535^2 blocks of 1024, about 2^73).
        let i64_max = i64::MAX as u128;
        assert_eq!(
            check_bounds::<(Len<i64>,), _>(&(7i64,), threads(i64_max)),
            Ok(())
        );
        let biggest = i32_max * 65535 * 65535 * 1024;
        assert!(matches!(
            check_bounds::<(Len<i64>,), _>(&(7i64,), threads(biggest)),
            Err(CudaError::TooManyThreadsForLen { .. })
        ));
        // The sign is checked first.
        assert!(matches!(
            check_bounds::<(Len<i64>,), _>(&(-1i64,), threads(1)),
            Err(CudaError::NegativeLength {
                parameter: 0,
                value: -1
            })
        ));
    }

    #[test]
    fn a_signature_without_a_len_is_not_bounded_by_threads() {
        assert_eq!(
            check_bounds::<(u32,), _>(&(7u32,), threads(u128::MAX)),
            Ok(())
        );
    }
}

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
#[cfg(doc)]
use crate::memory::{DeviceCopy, DeviceSlice, DeviceSliceMut};
use crate::module::Function;
pub use crate::signature::{
    Arg, Args, Cooperative, GraphArg, GraphArgs, In, KernelParam, LaunchKind, Out, Plain, Signature,
};
pub(crate) use crate::signature::{check_streams, graph_refs, sealed, with_params};
use crate::stream::Stream;

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

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
//! # Existing kernels: raw pointers and a count
//!
//! Kernels written for CUDA C++ take `const T *`/`T *` and a count. Declare the
//! pointers [`Ptr<T>`] and [`PtrMut<T>`] (8 bytes each, the view's device address;
//! arguments as for `In`/`Out`, with the same borrow and element-type rules), and the
//! count [`Len<I>`] (`I` = `i32`, `u32`, `i64`, `u64`). With exactly one `Len` the
//! signature is [`Bounded`] and [`Function::launch`] takes it: before the driver call
//! it checks that the length is not negative, that the launch has no more threads
//! than `I` can count (so `int i = blockIdx.x * blockDim.x + threadIdx.x` cannot
//! wrap), and that every pointer's view holds at least that many elements
//! ([`CudaError::NegativeLength`], [`CudaError::TooManyThreadsForLen`],
//! [`CudaError::ViewTooShort`]) — a few compares, no allocation — and the declaration
//! promises the kernel touches each pointer only at indices from 0 below that value. Any other pointer
//! signature launches through the `unsafe` [`Function::launch_unchecked`], whose
//! promise is about that one launch. A kernel without `extern "C"` is looked up by
//! its mangled name, as its PTX `.entry` shows it (`_Z9vectorAddPKfS0_Pfi`).
//!
//! ```compile_fail
//! # use oxicuda_driver::{launch::{Ptr, PtrMut}, memory::DeviceBuffer, module::Function, stream::Stream};
//! # fn f(k: &Function<'_, (Ptr<f32>, PtrMut<f32>, u32)>, s: &Stream<'_>, a: &DeviceBuffer<'_, f32>, b: &mut DeviceBuffer<'_, f32>) {
//! // CF32: no `Len` bounds the pointers: only `launch_unchecked`.
//! k.launch(s, 1, 32, 0, (a, b, 32u32)).unwrap();
//! # }
//! ```
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

use crate::error::{CudaError, LaunchDimension, check, driver_error};
use crate::loader::Driver;
#[cfg(doc)]
use crate::memory::{DeviceCopy, DeviceSlice, DeviceSliceMut};
use crate::sys::{CUdevice, CUdevice_attribute, CUfunction, CUfunction_attribute, CUresult};

use crate::module::Function;
pub use crate::signature::{
    Arg, Args, Bounded, Cooperative, GraphArg, GraphArgs, In, KernelParam, LaunchKind, Len, LenInt,
    Out, Plain, Ptr, PtrMut, Signature,
};
pub(crate) use crate::signature::{
    check_and_mark, check_bounds, check_streams, graph_refs, marks, sealed, with_params,
};
use crate::stream::Stream;

/// Grid or block dimensions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Dim3(pub u32, pub u32, pub u32);

/// The threads of a launch of `grid × block`, for `check_bounds`.
#[inline(always)]
pub(crate) fn launch_threads(grid: Dim3, block: Dim3) -> impl FnOnce() -> u128 {
    move || {
        // Six `u32`s can pass 2^128: pairs in `u64` (exact), two of them in `u128`
        // (exact), the third saturating (a count past `u128::MAX` is past every
        // `Len` type's bound too).
        let pair = |a: u32, b: u32| u128::from(u64::from(a) * u64::from(b));
        (pair(grid.0, grid.1) * pair(grid.2, block.0)).saturating_mul(pair(block.1, block.2))
    }
}

impl Dim3 {
    /// The one-dimensional grid that covers `n` elements with blocks of `block`
    /// threads, one element per thread: `ceil(n / block)` blocks (1 for `n == 0`, so
    /// the launch stays valid; the kernel checks its lengths). A `block` of 0 or
    /// beyond 1024 threads, or more blocks than a grid's x dimension holds
    /// (2³¹ − 1), is [`CudaError::LaunchLimit`].
    ///
    /// ```
    /// use oxicuda_driver::launch::Dim3;
    /// assert_eq!(Dim3::grid_for(1000, 256)?, Dim3(4, 1, 1));
    /// assert_eq!(Dim3::grid_for(0, 256)?, Dim3(1, 1, 1));
    /// # Ok::<(), oxicuda_driver::CudaError>(())
    /// ```
    pub fn grid_for(n: usize, block: u32) -> Result<Dim3, CudaError> {
        if block == 0 || u64::from(block) > MAX_THREADS {
            return Err(shape_error(Dim3(1, 1, 1), Dim3(block, 1, 1)));
        }
        let blocks = (n as u64).div_ceil(u64::from(block)).max(1);
        match u32::try_from(blocks) {
            Ok(x) if x <= MAX_GRID.0 => Ok(Dim3(x, 1, 1)),
            _ => Err(CudaError::LaunchLimit {
                what: LaunchDimension::GridX,
                value: blocks,
                limit: u64::from(MAX_GRID.0),
                limit_of: EVERY_DEVICE,
            }),
        }
    }
}

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

/// The largest grid of every CUDA device (`MAX_GRID_DIM_X/Y/Z`, the same on every
/// device since compute capability 3.0).
pub(crate) const MAX_GRID: Dim3 = Dim3(i32::MAX as u32, 65535, 65535);
/// The largest block of every CUDA device (`MAX_BLOCK_DIM_X/Y/Z`).
pub(crate) const MAX_BLOCK: Dim3 = Dim3(1024, 1024, 64);
/// The most threads in a block on every CUDA device (`MAX_THREADS_PER_BLOCK`).
pub(crate) const MAX_THREADS: u64 = 1024;
/// Whose limits [`MAX_GRID`], [`MAX_BLOCK`] and [`MAX_THREADS`] are.
const EVERY_DEVICE: &str = "every CUDA device";

/// Whether a launch of `grid × block` has no dimension 0 and fits the grid and block
/// limits of every CUDA device: the check before each launch's driver call, a few
/// compares (none left when the dimensions are constants).
#[inline(always)]
pub(crate) fn fits_every_device(g: Dim3, b: Dim3) -> bool {
    // `d - 1 < max` (wrapping): 0 wraps to u32::MAX, so it is `1 <= d <= max`.
    let grid = (g.0.wrapping_sub(1) < MAX_GRID.0)
        & (g.1.wrapping_sub(1) < MAX_GRID.1)
        & (g.2.wrapping_sub(1) < MAX_GRID.2);
    let block = (b.0.wrapping_sub(1) < MAX_BLOCK.0)
        & (b.1.wrapping_sub(1) < MAX_BLOCK.1)
        & (b.2.wrapping_sub(1) < MAX_BLOCK.2);
    grid & block & (threads(b) <= MAX_THREADS)
}

/// The threads of block `b` (saturating: no input overflows).
#[inline(always)]
fn threads(b: Dim3) -> u64 {
    (u64::from(b.0) * u64::from(b.1)).saturating_mul(u64::from(b.2))
}

/// The [`CudaError::LaunchLimit`] of a launch that [`fits_every_device`] refused.
#[cold]
#[inline(never)]
pub(crate) fn shape_error(g: Dim3, b: Dim3) -> CudaError {
    let (what, value, limit, limit_of) = shape_limit(g, b);
    CudaError::LaunchLimit {
        what,
        value,
        limit,
        limit_of,
    }
}

/// [`shape_error`] of the grid `gx × gy × gz` and the block `bx × by × bz`, given as
/// scalars (passed in registers by the launch path).
#[cold]
#[inline(never)]
pub(crate) fn shape_error_at(gx: u32, gy: u32, gz: u32, bx: u32, by: u32, bz: u32) -> CudaError {
    shape_error(Dim3(gx, gy, gz), Dim3(bx, by, bz))
}

/// The first dimension of a launch that [`fits_every_device`] refused that is 0 or
/// beyond every device's limit.
fn shape_limit(g: Dim3, b: Dim3) -> Limit {
    use LaunchDimension as D;
    let dims = [
        (D::GridX, g.0, MAX_GRID.0),
        (D::GridY, g.1, MAX_GRID.1),
        (D::GridZ, g.2, MAX_GRID.2),
        (D::BlockX, b.0, MAX_BLOCK.0),
        (D::BlockY, b.1, MAX_BLOCK.1),
        (D::BlockZ, b.2, MAX_BLOCK.2),
    ];
    let (what, value, limit) = dims
        .into_iter()
        .find(|(_, v, max)| *v == 0 || v > max)
        .map_or((D::BlockThreads, threads(b), MAX_THREADS), |(d, v, max)| {
            (d, u64::from(v), u64::from(max))
        });
    (what, value, limit, EVERY_DEVICE)
}

/// What [`CudaError::LaunchLimit`] carries: the dimension, its value, the limit and
/// whose limit it is.
pub(crate) type Limit = (LaunchDimension, u64, u64, &'static str);

/// The error of a launch of `function` (grid `gx × gy × gz`, block `bx × by × bz`,
/// `shared_bytes`) that was not made or that the driver refused with `code`: the
/// [`shape_error`] of a grid or block that does not [fit every
/// device](fits_every_device) (whatever `code` is: such a launch is never made); for
/// `INVALID_VALUE` or `LAUNCH_OUT_OF_RESOURCES`, the [`CudaError::LaunchLimit`] that
/// explains it, found by asking the device's and the function's limits now (this path
/// only: a launch that succeeds asks nothing); otherwise, or when nothing explains it,
/// the driver's code.
///
/// The dimensions come as scalars, not `Dim3`s, so that the launch path passes them in
/// registers and stores nothing for a call it rarely makes; and the error is built
/// here, inline, from what the cold [`explain`] found, so that its variant is known
/// where it is returned and the launch's success path does not test it again.
#[inline(always)]
#[allow(clippy::too_many_arguments)] // see above: scalars on purpose
pub(crate) fn launch_failed(
    driver: &'static Driver,
    function: CUfunction,
    gx: u32,
    gy: u32,
    gz: u32,
    bx: u32,
    by: u32,
    bz: u32,
    shared_bytes: u32,
    code: CUresult,
) -> CudaError {
    match explain(driver, function, gx, gy, gz, bx, by, bz, shared_bytes, code) {
        Some((what, value, limit, limit_of)) => CudaError::LaunchLimit {
            what,
            value,
            limit,
            limit_of,
        },
        None => driver_error(code),
    }
}

/// The limit that explains a launch that was not made or that the driver refused
/// (see [`launch_failed`]), if one does.
#[cold]
#[inline(never)]
#[allow(clippy::too_many_arguments)] // as `launch_failed`
fn explain(
    driver: &'static Driver,
    function: CUfunction,
    gx: u32,
    gy: u32,
    gz: u32,
    bx: u32,
    by: u32,
    bz: u32,
    shared_bytes: u32,
    code: CUresult,
) -> Option<Limit> {
    let (g, b) = (Dim3(gx, gy, gz), Dim3(bx, by, bz));
    if !fits_every_device(g, b) {
        return Some(shape_limit(g, b));
    }
    if code == CUresult::CUDA_ERROR_INVALID_VALUE
        || code == CUresult::CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES
    {
        return beyond_limits(driver, function, g, b, shared_bytes)
            .ok()
            .flatten();
    }
    None
}

/// The first of the launch's dimensions beyond the current device's or `function`'s
/// limits, if any (`Err`: a query failed).
fn beyond_limits(
    driver: &'static Driver,
    function: CUfunction,
    g: Dim3,
    b: Dim3,
    shared_bytes: u32,
) -> Result<Option<Limit>, CudaError> {
    use CUdevice_attribute as A;
    use CUfunction_attribute as F;
    use LaunchDimension as D;
    let t = driver.table();
    let mut dev: CUdevice = 0;
    // SAFETY: a valid out-pointer.
    check(unsafe { t.cuCtxGetDevice_v2000()?(&mut dev) })?;
    let device = |attr: A| -> Result<u64, CudaError> {
        let mut v = 0;
        // SAFETY: a valid out-pointer.
        check(unsafe { t.cuDeviceGetAttribute()?(&mut v, attr, dev) })?;
        Ok(u64::try_from(v).unwrap_or(0))
    };
    let func = |attr: F| -> Result<u64, CudaError> {
        let mut v = 0;
        // SAFETY: a valid out-pointer and a function of the current context.
        check(unsafe { t.cuFuncGetAttribute()?(&mut v, attr, function) })?;
        Ok(u64::try_from(v).unwrap_or(0))
    };
    let limit = |what, value, limit, limit_of| Ok(Some((what, value, limit, limit_of)));
    let dims = [
        (
            D::GridX,
            g.0,
            A::CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X,
            "the device's MAX_GRID_DIM_X",
        ),
        (
            D::GridY,
            g.1,
            A::CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y,
            "the device's MAX_GRID_DIM_Y",
        ),
        (
            D::GridZ,
            g.2,
            A::CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z,
            "the device's MAX_GRID_DIM_Z",
        ),
        (
            D::BlockX,
            b.0,
            A::CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X,
            "the device's MAX_BLOCK_DIM_X",
        ),
        (
            D::BlockY,
            b.1,
            A::CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y,
            "the device's MAX_BLOCK_DIM_Y",
        ),
        (
            D::BlockZ,
            b.2,
            A::CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z,
            "the device's MAX_BLOCK_DIM_Z",
        ),
    ];
    for (what, value, attr, of) in dims {
        let max = device(attr)?;
        if value == 0 || u64::from(value) > max {
            return limit(what, u64::from(value), max, of);
        }
    }
    let n = threads(b);
    let max = device(A::CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK)?;
    if n > max {
        return limit(
            D::BlockThreads,
            n,
            max,
            "the device's MAX_THREADS_PER_BLOCK",
        );
    }
    let max = func(F::CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK)?;
    if n > max {
        return limit(
            D::BlockThreads,
            n,
            max,
            "the function's MAX_THREADS_PER_BLOCK: its registers or its `.maxntid`",
        );
    }
    let shared = u64::from(shared_bytes);
    let optin = device(A::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN)?;
    let fixed = func(F::CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES)?;
    if shared > optin.saturating_sub(fixed) {
        return limit(
            D::SharedBytes,
            shared,
            optin.saturating_sub(fixed),
            "the device's MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, less the function's static shared memory",
        );
    }
    let max = func(F::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES)?;
    if shared > max {
        return limit(
            D::SharedBytes,
            shared,
            max,
            "the function's MAX_DYNAMIC_SHARED_SIZE_BYTES: raise it with `Function::set_max_dynamic_shared_memory`, up to the device's opt-in maximum",
        );
    }
    Ok(None)
}

impl<S: Signature> Function<'_, S> {
    /// Launches the kernel on `stream` with `grid × block` threads, `shared_bytes` of
    /// dynamic shared memory, and `args` — checked by the compiler against `S`.
    ///
    /// A signature with raw pointer parameters ([`Ptr`], [`PtrMut`]) launches here
    /// only when one [`Len`] parameter bounds them ([`Bounded`]); the launch then
    /// checks, before the driver is called, that the length is not negative
    /// ([`CudaError::NegativeLength`]), that the launch's threads (grid × block) are
    /// no more than the `Len`'s type can count ([`CudaError::TooManyThreadsForLen`]),
    /// and that every pointer argument's view holds at least that many elements
    /// ([`CudaError::ViewTooShort`]). Other pointer
    /// signatures launch through [`launch_unchecked`](Self::launch_unchecked).
    ///
    /// A grid or block dimension of 0, or beyond what every CUDA device allows
    /// (blocks of at most 1024 × 1024 × 64 and 1024 threads, grids of at most
    /// (2³¹ − 1) × 65535 × 65535), is [`CudaError::LaunchLimit`] before the driver
    /// call; a launch the driver refuses (`INVALID_VALUE`, `LAUNCH_OUT_OF_RESOURCES`)
    /// is [`CudaError::LaunchLimit`] too when the device's or the function's limits
    /// explain it (threads per block, dynamic shared memory), else the driver's code.
    #[inline]
    pub fn launch(
        &self,
        stream: &Stream<'_>,
        grid: impl Into<Dim3>,
        block: impl Into<Dim3>,
        shared_bytes: u32,
        args: impl Args<S>,
    ) -> Result<(), CudaError>
    where
        S: Bounded,
    {
        let (grid, block) = (grid.into(), block.into());
        check_bounds::<S, _>(&args, launch_threads(grid, block))?;
        self.launch_raw(stream, grid, block, shared_bytes, args)
    }

    /// [`launch`](Self::launch) for every signature, raw pointers without a [`Len`]
    /// included, with the same typed, borrow-checked arguments and the same stream
    /// rule for stream-ordered memory; no length is checked.
    ///
    /// # Safety
    /// For this launch (this grid, block, dynamic shared memory and these arguments)
    /// the kernel reads each [`Ptr`] argument's memory and reads and writes each
    /// [`PtrMut`] argument's memory only inside the view passed for it, never writes
    /// through a `Ptr`, and otherwise keeps the declaration's contract
    /// ([`Module::function`](crate::module::Module::function)).
    #[inline]
    pub unsafe fn launch_unchecked(
        &self,
        stream: &Stream<'_>,
        grid: impl Into<Dim3>,
        block: impl Into<Dim3>,
        shared_bytes: u32,
        args: impl Args<S>,
    ) -> Result<(), CudaError> {
        self.launch_raw(stream, grid.into(), block.into(), shared_bytes, args)
    }

    /// The launch, once the bound (if any) is checked or promised.
    #[inline(always)]
    fn launch_raw(
        &self,
        stream: &Stream<'_>,
        g: Dim3,
        b: Dim3,
        shared_bytes: u32,
        args: impl Args<S>,
    ) -> Result<(), CudaError> {
        if !fits_every_device(g, b) {
            // The dimensions as scalars: nothing stored for a call rarely made.
            return Err(shape_error_at(g.0, g.1, g.2, b.0, b.1, b.2));
        }
        check_and_mark::<S, _>(&args, stream)?;
        let launch = self.driver.table().cuLaunchKernel()?;
        with_params::<S, _, _>(args, |params| {
            let mut call = move || {
                let r = {
                    // SAFETY: `params` holds one pointer per declared parameter, each to
                    // a value of its declared size (the signature was checked at lookup);
                    // the function and stream belong to the current context.
                    unsafe {
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
                    }
                };
                if r == CUresult::CUDA_SUCCESS {
                    Ok(())
                } else {
                    let (d, f) = (self.driver, self.raw);
                    let e = launch_failed(d, f, g.0, g.1, g.2, b.0, b.1, b.2, shared_bytes, r);
                    Err(e)
                }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_thread_count_saturates_instead_of_overflowing() {
        let max = Dim3(u32::MAX, u32::MAX, u32::MAX);
        assert_eq!(launch_threads(max, max)(), u128::MAX);
        assert!(matches!(
            check_bounds::<(Len<u64>,), _>(&(7u64,), launch_threads(max, max)),
            Err(CudaError::TooManyThreadsForLen {
                threads: u128::MAX,
                ..
            })
        ));
    }
}

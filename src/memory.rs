//! Device memory: [`DeviceBuffer<'a, T>`], typed by its element, tied to the token it
//! was allocated under, freed when dropped; the views [`DeviceSlice`] and
//! [`DeviceSliceMut`], which are to a buffer what `&[T]` and `&mut [T]` are to a `Vec`
//! (split a mutable view and the halves can be written independently — by two
//! kernels, say); copies between host slices and device memory of the same element
//! type (CF12) — host copies return when done — and typed memsets; empty buffers,
//! which allocate nothing; [`DeviceBox<T>`], one value on the device.
//!
//! Element types opt in through the `unsafe` marker trait [`DeviceCopy`]: plain data
//! that any bit pattern the device writes leaves valid. Functions that accept any
//! device memory take `impl` [`DeviceRead<T>`] (buffers and both views) or
//! [`DeviceWrite<T>`] (buffers and mutable views).
//!
//! ```compile_fail
//! # fn f(a: &mut oxicuda_driver::memory::DeviceBuffer<'_, f32>, b: &oxicuda_driver::memory::DeviceBuffer<'_, i32>) {
//! // CF12: no copies between buffers of different element types.
//! a.copy_from(b).unwrap();
//! # }
//! ```

mod device_box;
mod views;

pub use device_box::DeviceBox;

use crate::context::CurrentContext;
use crate::context::Tied;
use crate::error::{CudaError, check};
use crate::loader::Driver;
use crate::order::Mark;
use crate::sys::{CUdeviceptr, CUresult, CUstream};
use core::marker::PhantomData;
use core::ops::{Bound, RangeBounds};

/// Plain data that may live in device memory, be copied bit for bit, and be passed
/// to a kernel by value.
///
/// Implemented for the primitive numbers and arrays of them. Implement it for your
/// own `#[repr(C)]` structs to keep them in buffers or pass them as kernel
/// parameters (the kernel's C++ struct must have the same layout; the lookup in
/// [`Module::function`](crate::module::Module::function) checks its size and offset):
///
/// ```
/// #[derive(Clone, Copy)]
/// #[repr(C)]
/// struct Params { scale: f32, offset: f32, n: u32 }
/// // SAFETY: three 4-byte numbers, no padding: every bit pattern is a valid `Params`.
/// unsafe impl oxicuda_driver::memory::DeviceCopy for Params {}
/// ```
///
/// With the `derive` feature, `#[derive(DeviceCopy)]` writes that `unsafe impl` for
/// a `#[repr(C)]` struct after checking its layout attribute and every field (an enum,
/// a union, a struct without `#[repr(C)]` or a field that is not `DeviceCopy` is a
/// compile error).
///
/// # Safety
/// Every bit pattern of `size_of::<T>()` bytes must be a valid `T` (the device may
/// write anything), and `T` must own no host resources (no pointers, references or
/// `Drop`).
pub unsafe trait DeviceCopy: Copy + 'static {}

/// `#[derive(DeviceCopy)]`: the `unsafe impl` [`DeviceCopy`] of a `#[repr(C)]` (or
/// `#[repr(transparent)]`) struct whose every field is `DeviceCopy` (the `derive`
/// feature).
#[cfg(feature = "derive")]
pub use oxicuda_derive::DeviceCopy;

/// Element types the driver can set directly (`cuMemsetD8/16/32`): 1, 2 or 4 bytes.
pub trait MemsetValue: DeviceCopy + sealed::Sealed {
    /// The value's bits.
    #[doc(hidden)]
    fn bits(self) -> u32;
}

macro_rules! memset_value {
    ($($t:ty => $u:ty),*) => {$(
        impl sealed::Sealed for $t {}
        impl MemsetValue for $t {
            fn bits(self) -> u32 {
                <$u>::from_ne_bytes(self.to_ne_bytes()) as u32
            }
        }
    )*};
}
memset_value!(u8 => u8, i8 => u8, u16 => u16, i16 => u16, u32 => u32, i32 => u32, f32 => u32);

pub(crate) mod sealed {
    /// Element types with a direct memset.
    pub trait Sealed {}
    /// This crate's device memory: buffers and views. Sealed because a launch, a copy
    /// or a memset hands the driver the address and length that `view`/`view_mut`
    /// return — a type outside the crate could name memory it does not borrow. Each
    /// memory type implements it in its own module (`pool`'s `StreamBuffer`,
    /// `managed`'s `ManagedBuffer`).
    pub trait Memory {}
    impl<T: super::DeviceCopy> Memory for super::DeviceBuffer<'_, T> {}
    impl<T: super::DeviceCopy> Memory for super::DeviceSlice<'_, T> {}
    impl<T: super::DeviceCopy> Memory for super::DeviceSliceMut<'_, T> {}
}

macro_rules! device_copy {
    ($($t:ty),*) => {$(
        // SAFETY: a primitive: every bit pattern is valid, no host resources.
        unsafe impl DeviceCopy for $t {}
    )*};
}
device_copy!(
    u8, i8, u16, i16, u32, i32, u64, i64, u128, i128, usize, isize, f32, f64
);
// SAFETY: arrays of plain data are plain data.
unsafe impl<T: DeviceCopy, const N: usize> DeviceCopy for [T; N] {}

/// A device allocation of `len` elements of `T`.
///
/// Made under a [`CurrentContext`] token, and borrowing it:
/// [`alloc`](CurrentContext::alloc) (`len` elements, not initialised: the memory's
/// bits are some valid `T`s, as [`DeviceCopy`] promises),
/// [`alloc_zeros`](CurrentContext::alloc_zeros) (every byte zero) or
/// [`alloc_from`](CurrentContext::alloc_from) (a copy of a host slice). Freed when
/// dropped. An empty buffer allocates nothing (its address is 0), and every operation
/// on it works. One value: [`DeviceBox`]. Other allocations have their own types: stream-ordered
/// ([`StreamBuffer`](crate::pool::StreamBuffer)), managed
/// ([`ManagedBuffer`](crate::managed::ManagedBuffer)), page-locked host memory
/// ([`HostBuffer`](crate::pinned::HostBuffer)).
///
/// ```
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// # let driver = oxicuda_driver::driver_with(oxicuda_driver::DriverOptions::software())?;
/// # driver.init()?;
/// # let ctx = oxicuda_driver::Context::new(&driver.best_device()?, oxicuda_driver::sys::CUctx_flags::empty())?;
/// use oxicuda_driver::CudaError;
///
/// ctx.bind(|cur| -> Result<(), CudaError> {
///     let mut buf = cur.alloc::<u32>(8)?;
///     buf.zero()?;
///     let (mut lo, mut hi) = buf.as_mut_slice().split_at(4)?; // two disjoint views
///     lo.copy_from_host(&[1, 2, 3, 4])?;
///     hi.fill(7)?;
///     assert_eq!(buf.to_vec()?, [1, 2, 3, 4, 7, 7, 7, 7]);
///     let copy = cur.alloc_from(&buf.to_vec()?)?; // a second buffer, from host data
///     assert_eq!(copy.len(), 8);
///     Ok(())
/// })??;
/// # Ok(())
/// # }
/// ```
pub struct DeviceBuffer<'a, T: DeviceCopy> {
    driver: &'static Driver,
    ptr: CUdeviceptr,
    len: usize,
    /// The stream last queued work that uses it ([`crate::order`]).
    mark: Mark,
    _tied: Tied<'a>,
    _t: PhantomData<T>,
}

/// A shared view of `len` elements of device memory, borrowed for `'b` (`Copy`, like
/// `&[T]`).
pub struct DeviceSlice<'b, T: DeviceCopy> {
    driver: &'static Driver,
    ptr: CUdeviceptr,
    len: usize,
    /// The one stream work on this memory may be queued on (a [`StreamBuffer`]'s:
    /// see [`crate::pool`]), or `None` for memory any stream may use.
    ///
    /// [`StreamBuffer`]: crate::pool::StreamBuffer
    order: Option<CUstream>,
    /// The mark of the memory it views, if it has one ([`crate::order`]).
    mark: Option<&'b Mark>,
    _b: PhantomData<(&'b [T], *const ())>,
}

/// An exclusive view of `len` elements of device memory, borrowed for `'b` (like
/// `&mut [T]`).
pub struct DeviceSliceMut<'b, T: DeviceCopy> {
    driver: &'static Driver,
    ptr: CUdeviceptr,
    len: usize,
    /// As [`DeviceSlice`]'s.
    order: Option<CUstream>,
    /// As [`DeviceSlice`]'s.
    mark: Option<&'b Mark>,
    _b: PhantomData<(&'b mut [T], *const ())>,
}

impl<T: DeviceCopy> Clone for DeviceSlice<'_, T> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T: DeviceCopy> Copy for DeviceSlice<'_, T> {}

/// Device memory that can be read as `T`s: buffers and both views. Sealed: the
/// address and length it returns reach the driver.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not device memory holding `{T}`",
    label = "expected a `DeviceBuffer<{T}>`, `DeviceSlice<{T}>` or `DeviceSliceMut<{T}>`"
)]
pub trait DeviceRead<T: DeviceCopy>: sealed::Memory {
    /// A shared view of all of it.
    fn view(&self) -> DeviceSlice<'_, T>;
}

/// Device memory that can be written as `T`s: buffers and mutable views. Sealed,
/// like [`DeviceRead`].
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not writable device memory holding `{T}`",
    label = "expected a `DeviceBuffer<{T}>` or `DeviceSliceMut<{T}>`"
)]
pub trait DeviceWrite<T: DeviceCopy>: DeviceRead<T> {
    /// An exclusive view of all of it.
    fn view_mut(&mut self) -> DeviceSliceMut<'_, T>;
}

/// What every kind of device memory has: its extent, and a shared view of all of it;
/// `owned` adds what memory a value owns has besides: an exclusive view of all of it,
/// and the synchronous host copies and memsets through the views.
/// Used here and by the buffers of `managed` and `pool`.
macro_rules! extent {
    ($($ty:ident),*) => {$(
        impl<T: $crate::memory::DeviceCopy> $ty<'_, T> {
            /// Elements.
            pub fn len(&self) -> usize {
                self.len
            }

            /// Whether it holds no element.
            pub fn is_empty(&self) -> bool {
                self.len == 0
            }

            /// The device address of the first element.
            pub fn device_ptr(&self) -> $crate::sys::CUdeviceptr {
                self.ptr
            }

            /// The driver the memory belongs to.
            pub(crate) fn driver(&self) -> &'static $crate::loader::Driver {
                self.driver
            }

            /// A shared view of all of it, borrowing it.
            pub fn as_slice(&self) -> $crate::memory::DeviceSlice<'_, T> {
                $crate::memory::shared(self.driver, self.ptr, self.len).in_order_of(self.stream_order()).marked(self.host_mark())
            }

            /// Element `index`, copied to the host; returns when done, ordered as
            /// `to_vec` is. [`CudaError::OutOfRange`](crate::CudaError::OutOfRange)
            /// past the end.
            pub fn get(&self, index: usize) -> Result<T, $crate::CudaError> {
                self.as_slice().read_one(index)
            }
        }

        /// Its address, length, element type and stream (if any); never its contents
        /// (that would read device memory).
        impl<T: $crate::memory::DeviceCopy> core::fmt::Debug for $ty<'_, T> {
            fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
                $crate::memory::fmt_memory::<T>(f, stringify!($ty), self.ptr, self.len, self.stream_order())
            }
        }
    )*};
    (owned $($ty:ident),*) => {$(
        $crate::memory::extent!($ty);
        impl<T: $crate::memory::DeviceCopy> $ty<'_, T> {
            /// An exclusive view of all of it, borrowing it: slice it, split it, pass
            /// the parts.
            pub fn as_mut_slice(&mut self) -> $crate::memory::DeviceSliceMut<'_, T> {
                $crate::memory::exclusive(self.driver, self.ptr, self.len).in_order_of(self.stream_order()).marked(self.host_mark())
            }

            /// Copies `src` (same length) into the buffer; returns when done.
            #[inline]
            pub fn copy_from_host(&mut self, src: &[T]) -> Result<(), $crate::CudaError> {
                self.as_mut_slice().copy_from_host(src)
            }

            /// Copies the buffer into `dst` (same length); returns when done.
            #[inline]
            pub fn copy_to_host(&self, dst: &mut [T]) -> Result<(), $crate::CudaError> {
                self.as_slice().copy_to_host(dst)
            }

            /// The buffer's contents.
            pub fn to_vec(&self) -> Result<Vec<T>, $crate::CudaError> {
                self.as_slice().to_vec()
            }

            /// Copies device memory of the same element type and length (CF12).
            pub fn copy_from(
                &mut self,
                src: &impl $crate::memory::DeviceRead<T>,
            ) -> Result<(), $crate::CudaError> {
                self.as_mut_slice().copy_from(src)
            }

            /// Sets every element to `value`.
            pub fn fill(&mut self, value: T) -> Result<(), $crate::CudaError>
            where
                T: $crate::memory::MemsetValue,
            {
                self.as_mut_slice().fill(value)
            }

            /// Sets every byte to zero.
            pub fn zero(&mut self) -> Result<(), $crate::CudaError> {
                self.as_mut_slice().zero()
            }
        }
    )*};
}
pub(crate) use extent;

/// `T`'s name without module paths (`In<f32>`, not `oxicuda_driver::signature::In<f32>`),
/// for `Debug` output.
pub(crate) fn short_type_name<T: ?Sized>() -> String {
    let full = core::any::type_name::<T>();
    let mut out = String::with_capacity(full.len());
    let mut word = String::new();
    let mut chars = full.chars().peekable();
    while let Some(c) = chars.next() {
        if c.is_alphanumeric() || c == '_' {
            word.push(c);
        } else if c == ':' && chars.peek() == Some(&':') {
            chars.next();
            word.clear(); // a path segment: dropped
        } else {
            out.push_str(&word);
            word.clear();
            out.push(c);
        }
    }
    out.push_str(&word);
    out
}

/// `Debug` of device memory: `Name<T> { ptr: 0x…, len: n }`, with the stream a
/// stream-ordered buffer's work is queued on. Reads nothing from the device.
pub(crate) fn fmt_memory<T>(
    f: &mut core::fmt::Formatter<'_>,
    name: &str,
    ptr: CUdeviceptr,
    len: usize,
    order: Option<CUstream>,
) -> core::fmt::Result {
    let name = format!("{name}<{}>", short_type_name::<T>());
    let mut d = f.debug_struct(&name);
    d.field("ptr", &format_args!("{ptr:#x}")).field("len", &len);
    if let Some(stream) = order {
        d.field("stream", &stream);
    }
    d.finish()
}
extent!(owned DeviceBuffer);
extent!(DeviceSlice, DeviceSliceMut);

impl<T: DeviceCopy> DeviceBuffer<'_, T> {
    /// Any stream may use it (`cuMemFree` waits for all of them).
    pub(crate) fn stream_order(&self) -> Option<CUstream> {
        None
    }

    /// Its mark: work queued on a stream marks it, host accesses wait for that.
    pub(crate) fn host_mark(&self) -> Option<&Mark> {
        Some(&self.mark)
    }
}

/// The order a view's work must be queued in, and the views tied to one.
macro_rules! ordered_views {
    ($($ty:ident),*) => {$(
        impl<'b, T: DeviceCopy> $ty<'b, T> {
            /// The one stream work on this memory may be queued on, if any.
            pub(crate) fn stream_order(&self) -> Option<CUstream> {
                self.order
            }

            /// The same view, tied to `order` (a stream-ordered buffer's stream).
            pub(crate) fn in_order_of(self, order: Option<CUstream>) -> Self {
                Self { order, ..self }
            }

            /// The same view, carrying the viewed memory's mark.
            pub(crate) fn marked(self, mark: Option<&'b Mark>) -> Self {
                Self { mark, ..self }
            }

            /// The viewed memory's mark, if it has one.
            #[inline(always)]
            pub(crate) fn host_mark(&self) -> Option<&'b Mark> {
                self.mark
            }

            /// Work queued on `stream` uses the viewed memory: its mark (if any)
            /// says so ([`crate::order`]).
            #[inline(always)]
            pub(crate) fn mark_used(&self, stream: crate::order::StreamId) {
                if let Some(m) = self.mark {
                    m.set(stream);
                }
            }
        }
    )*};
}
ordered_views!(DeviceSlice, DeviceSliceMut);

/// Runs `op`, one of the synchronous operations (on the default stream), on memory
/// of stream order `order` and mark `mark`. Memory of no stream: `op`, after the
/// work its mark names, if any ([`crate::order`]). A stream-ordered
/// buffer's: after the work queued on its stream so far (so a read sees what the
/// stream's kernels wrote), and finished before returning (the default stream waited
/// for: a device-to-device copy or memset, which the driver would otherwise leave
/// queued there, and a pageable copy's last DMA, never outlive the call — so the
/// buffer's free, queued on its own stream, comes after them).
#[inline(always)]
pub(crate) fn in_stream_order(
    driver: &'static Driver,
    order: Option<CUstream>,
    mark: Option<&Mark>,
    op: impl FnOnce() -> Result<(), CudaError>,
) -> Result<(), CudaError> {
    match order {
        None => {
            if let Some(mark) = mark {
                mark.wait(driver)?;
            }
            op()
        }
        Some(stream) => ordered_op(driver, stream, op),
    }
}

/// Waits for the default stream (NULL: the legacy or this thread's, as the driver
/// was loaded): after a synchronous device-to-device copy or memset, which the driver
/// leaves queued there, so that work on any stream queued after the call sees it.
#[inline(never)]
pub(crate) fn default_stream_done(driver: &'static Driver) -> Result<(), CudaError> {
    let sync = driver.table().cuStreamSynchronize()?;
    // SAFETY: the default stream of the current context.
    check(crate::wait::retry_relaxed(driver, || unsafe {
        sync(CUstream::NULL)
    }))
}

#[inline(never)]
fn ordered_op(
    driver: &'static Driver,
    stream: CUstream,
    op: impl FnOnce() -> Result<(), CudaError>,
) -> Result<(), CudaError> {
    let sync = driver.table().cuStreamSynchronize()?;
    // SAFETY: a stream-ordered buffer's stream, which the buffer borrows: alive.
    check(unsafe { sync(stream) })?;
    // A copy or memset the driver refused queued nothing (and a sticky error means
    // the context's work is abandoned): there is nothing of it to wait for, and the
    // wait could be refused for the same reason — a blocking stream that foreign
    // code captures makes every use of the legacy stream `STREAM_CAPTURE_IMPLICIT`,
    // the copy's and the wait's alike — which must not abort the process.
    op()?;
    // It ran, and may have left work queued (a device-to-device copy, a memset, a
    // pageable copy's last DMA): wait for the default stream (NULL: the legacy or
    // this thread's, as the driver was loaded). A wait that fails for a reason other
    // than a dead context aborts (`settled_or_abort`).
    // SAFETY: the default stream of the current context.
    crate::wait::settled_or_abort(driver, "a stream-ordered buffer's copy", || unsafe {
        sync(CUstream::NULL)
    })
}

/// Whether memory of stream order `order` may be used by work queued on `stream`
/// (`None`: a graph's node, which may run on any stream): memory of no stream by any
/// work; a stream-ordered buffer's only by its own stream's.
#[inline(always)]
pub(crate) fn usable_on(order: Option<CUstream>, stream: Option<CUstream>) -> bool {
    order.is_none() || order == stream
}

/// [`CudaError::WrongStream`] unless memory of stream order `order` may be used on
/// `stream` ([`usable_on`]); `argument` names the launch argument, if it is one.
pub(crate) fn check_stream(
    order: Option<CUstream>,
    stream: Option<CUstream>,
    argument: Option<usize>,
) -> Result<(), CudaError> {
    if usable_on(order, stream) {
        Ok(())
    } else {
        Err(CudaError::WrongStream { argument })
    }
}

/// The stream two views' work must be queued on: the one of either that has one (both
/// must agree), or `None` when neither has.
fn common_order(a: Option<CUstream>, b: Option<CUstream>) -> Result<Option<CUstream>, CudaError> {
    match (a, b) {
        (Some(x), Some(y)) if x != y => Err(CudaError::WrongStream { argument: None }),
        (Some(x), _) | (_, Some(x)) => Ok(Some(x)),
        (None, None) => Ok(None),
    }
}

// Written out rather than generated: the compiler quotes these impls to users whose
// arguments have the wrong element type.
impl<T: DeviceCopy> DeviceRead<T> for DeviceBuffer<'_, T> {
    fn view(&self) -> DeviceSlice<'_, T> {
        self.as_slice()
    }
}
impl<T: DeviceCopy> DeviceRead<T> for DeviceSlice<'_, T> {
    fn view(&self) -> DeviceSlice<'_, T> {
        self.as_slice()
    }
}
impl<T: DeviceCopy> DeviceRead<T> for DeviceSliceMut<'_, T> {
    fn view(&self) -> DeviceSlice<'_, T> {
        self.as_slice()
    }
}

impl<T: DeviceCopy> DeviceWrite<T> for DeviceBuffer<'_, T> {
    fn view_mut(&mut self) -> DeviceSliceMut<'_, T> {
        self.as_mut_slice()
    }
}
impl<T: DeviceCopy> DeviceWrite<T> for DeviceSliceMut<'_, T> {
    fn view_mut(&mut self) -> DeviceSliceMut<'_, T> {
        self.reborrow()
    }
}

/// A shared view of `len` elements at `ptr`, for the caller to tie to a borrow (the
/// memory must be the caller's for that borrow: device memory it owns).
pub(crate) fn shared<'x, T: DeviceCopy>(
    driver: &'static Driver,
    ptr: CUdeviceptr,
    len: usize,
) -> DeviceSlice<'x, T> {
    DeviceSlice {
        driver,
        ptr,
        len,
        order: None,
        mark: None,
        _b: PhantomData,
    }
}

/// An exclusive view of `len` elements at `ptr`, for the caller to tie to a borrow.
pub(crate) fn exclusive<'x, T: DeviceCopy>(
    driver: &'static Driver,
    ptr: CUdeviceptr,
    len: usize,
) -> DeviceSliceMut<'x, T> {
    DeviceSliceMut {
        driver,
        ptr,
        len,
        order: None,
        mark: None,
        _b: PhantomData,
    }
}

/// `cuMemsetD8/16/32` of `n` elements at `ptr` to `value`, or their `Async` forms on
/// `stream`.
///
/// # Safety
/// `n` elements of `size_of::<T>()` bytes at `ptr` must be device memory the caller
/// may write (now, or in `stream`'s order).
pub(crate) unsafe fn memset<T: MemsetValue>(
    driver: &'static Driver,
    ptr: CUdeviceptr,
    n: usize,
    value: T,
    stream: Option<CUstream>,
) -> Result<(), CudaError> {
    if n == 0 {
        return Ok(()); // nothing to set: no driver call (the address may be 0)
    }
    let t = driver.table();
    let bits = value.bits();
    // SAFETY: the caller's contract.
    check(unsafe {
        match (size_of::<T>(), stream) {
            (1, None) => t.cuMemsetD8()?(ptr, bits as u8, n),
            (2, None) => t.cuMemsetD16()?(ptr, bits as u16, n),
            (_, None) => t.cuMemsetD32()?(ptr, bits, n),
            (1, Some(s)) => t.cuMemsetD8Async()?(ptr, bits as u8, n, s),
            (2, Some(s)) => t.cuMemsetD16Async()?(ptr, bits as u16, n, s),
            (_, Some(s)) => t.cuMemsetD32Async()?(ptr, bits, n, s),
        }
    })
}

pub(crate) fn bytes<T>(len: usize) -> Result<usize, CudaError> {
    // A match, not `ok_or(error)`: the eager error would be dropped on every call (a
    // call to `CudaError`'s drop glue on the copy path; benches/callgrind.rs).
    match len.checked_mul(size_of::<T>()) {
        Some(bytes) => Ok(bytes),
        None => Err(CudaError::Driver(CUresult::CUDA_ERROR_INVALID_VALUE)),
    }
}

/// Views that hold no byte (no element, or zero-sized elements): operations on them
/// return at once, without a driver call — the driver refuses some zero-byte
/// operations, and an empty buffer's address is 0.
macro_rules! empty_bytes {
    ($($ty:ident),*) => {$(
        impl<T: DeviceCopy> $ty<'_, T> {
            #[inline(always)]
            fn is_empty_bytes(&self) -> bool {
                self.len == 0 || size_of::<T>() == 0
            }
        }
    )*};
}
empty_bytes!(DeviceSlice, DeviceSliceMut);

pub(crate) fn same_len(destination_len: usize, source_len: usize) -> Result<(), CudaError> {
    if destination_len == source_len {
        Ok(())
    } else {
        Err(CudaError::LengthMismatch {
            destination_len,
            source_len,
        })
    }
}

/// The address of element `n` from `ptr` (`n` within a live range, so no overflow).
fn element<T>(ptr: CUdeviceptr, n: usize) -> CUdeviceptr {
    ptr + (n * size_of::<T>()) as u64
}

/// `range` as `start..end` within `len`, or [`CudaError::OutOfRange`].
pub(crate) fn bounds(
    range: impl RangeBounds<usize>,
    len: usize,
) -> Result<(usize, usize), CudaError> {
    let start = match range.start_bound() {
        Bound::Included(&s) => s,
        Bound::Excluded(&s) => s.saturating_add(1),
        Bound::Unbounded => 0,
    };
    let end = match range.end_bound() {
        Bound::Included(&e) => e.saturating_add(1),
        Bound::Excluded(&e) => e,
        Bound::Unbounded => len,
    };
    if start <= end && end <= len {
        Ok((start, end))
    } else {
        Err(CudaError::OutOfRange { start, end, len })
    }
}

impl<'ctx> CurrentContext<'ctx> {
    /// Allocates `len` elements (zeroed memory is not promised: use
    /// [`alloc_zeros`](Self::alloc_zeros) or [`DeviceBuffer::zero`]).
    ///
    /// An empty buffer (`len == 0`, or a zero-sized `T`) allocates nothing — the
    /// driver refuses allocations of zero bytes — and has address 0: every operation
    /// on it (copies, views, memsets, launches, graph nodes, drop) does its part of
    /// nothing without asking the driver to touch memory.
    pub fn alloc<T: DeviceCopy>(&self, len: usize) -> Result<DeviceBuffer<'_, T>, CudaError> {
        let bytes = bytes::<T>(len)?;
        let mut ptr = 0;
        if bytes != 0 {
            // SAFETY: a valid out-pointer; the context is current.
            check(unsafe { self.driver().table().cuMemAlloc()?(&mut ptr, bytes) })?;
            crate::leaks::created(crate::leaks::Kind::DeviceAllocations, ptr);
        }
        Ok(DeviceBuffer {
            driver: self.driver(),
            ptr,
            len,
            mark: Mark::new(),
            _tied: PhantomData,
            _t: PhantomData,
        })
    }

    /// Allocates `len` elements, every byte zero (`cuMemAlloc` and `cuMemsetD8`; an
    /// empty buffer allocates nothing, as for [`alloc`](Self::alloc)).
    pub fn alloc_zeros<T: DeviceCopy>(&self, len: usize) -> Result<DeviceBuffer<'_, T>, CudaError> {
        let mut b = self.alloc(len)?;
        b.zero()?;
        Ok(b)
    }

    /// Allocates a buffer holding a copy of `data` (an empty slice: an empty buffer,
    /// no allocation, as for [`alloc`](Self::alloc)).
    pub fn alloc_from<T: DeviceCopy>(&self, data: &[T]) -> Result<DeviceBuffer<'_, T>, CudaError> {
        let mut b = self.alloc(data.len())?;
        b.copy_from_host(data)?;
        Ok(b)
    }

    /// (free, total) bytes of the current device.
    pub fn memory_info(&self) -> Result<(usize, usize), CudaError> {
        let (mut free, mut total) = (0, 0);
        // SAFETY: valid out-pointers.
        check(unsafe { self.driver().table().cuMemGetInfo()?(&mut free, &mut total) })?;
        Ok((free, total))
    }
}

impl<T: DeviceCopy> Drop for DeviceBuffer<'_, T> {
    fn drop(&mut self) {
        if self.ptr == 0 {
            return; // an empty buffer: nothing was allocated
        }
        // SAFETY: this value owns the allocation.
        unsafe { free(self.driver, self.ptr, crate::leaks::Kind::DeviceAllocations) };
    }
}

/// Frees the allocation at `ptr` (`cuMemFree`), logging a refusal: for the `Drop` of
/// a buffer, whose handle the leak tracker counts as `kind`.
///
/// # Safety
///
/// The caller owns the allocation, and nothing uses it after this.
pub(crate) unsafe fn free(driver: &'static Driver, ptr: CUdeviceptr, kind: crate::leaks::Kind) {
    if let Ok(free) = driver.table().cuMemFree() {
        // SAFETY: the caller's promise.
        let r = crate::wait::retry_relaxed(driver, || unsafe { free(ptr) });
        if check(r).is_err() {
            tracing::warn!(?r, "cuMemFree failed");
        } else {
            crate::leaks::destroyed(kind, ptr);
        }
    }
}

static_assertions::assert_not_impl_any!(DeviceBuffer<'static, f32>: Send, Sync);
static_assertions::assert_not_impl_any!(DeviceSlice<'static, f32>: Send, Sync);
static_assertions::assert_not_impl_any!(DeviceSliceMut<'static, f32>: Send, Sync, Copy);

//! CUDA arrays: [`Array<'ctx, E, U>`], device memory in the driver's opaque layout
//! that textures sample and surfaces load and store, typed by its element ([`E`:
//! `ArrayElement`](ArrayElement) fixes the format and the channel count) and by what
//! it may be bound to ([`Sampled`] or [`Storage`]); its shape ([`ArrayShape`]:
//! 1-D, 2-D, 3-D, layered, cubemap); copies between it and host or device memory of
//! the same element type (CF38); mipmapped arrays ([`MipmappedArray`], in
//! `mipmap.rs`). Textures and surfaces over arrays are [`crate::texture`].
//!
//! # Why the element and the usage are in the type
//!
//! The driver describes an array by a format (`CU_AD_FORMAT_FLOAT`, ...) and a
//! channel count (1, 2 or 4), and every copy moves bytes without looking at them.
//! Here the element type says both — `Array<f32>` is one 32-bit float channel,
//! `Array<[u8; 4]>` four 8-bit unsigned ones — so a copy from a `&[f32]` into an
//! `Array<[u8; 4]>`, or a surface of `f32` over it, does not compile.
//! A surface may only be made over an array created with
//! `CUDA_ARRAY3D_SURFACE_LDST` (the driver refuses it otherwise); the usage type
//! parameter records that flag, so [`Array::surface`] exists only on
//! `Array<E, Storage>` (CF38).
//!
//! # Host order and lifetime
//!
//! Every copy returns when it is done: each waits for the default stream after the
//! driver's `cuMemcpy3D` (which leaves a device-to-array copy queued there, and may
//! return from a pageable host copy before its last DMA lands), so work queued on
//! any stream afterwards sees the whole copy. Kernels reach an
//! array only through a texture or a surface object, which borrows it: the launch
//! marks the array (the host-order mark a buffer has), and a host copy waits for those
//! kernels first.
//! The objects wait for their context's work before they are destroyed, so an
//! array outlives every kernel that reads it; dropping an array waits for the
//! context too (a texture leaked with `mem::forget` may still be in use).

pub(crate) mod copy;
mod mipmap;

pub use mipmap::{MipLevel, MipLevelMut, MipmappedArray};

use crate::context::{CurrentContext, Tied};
use crate::error::{CudaError, check};
use crate::loader::Driver;
use crate::order::Mark;
use crate::sys::{CUDA_ARRAY3D_DESCRIPTOR, CUarray, CUarray_format, CUarray3D_flags, CUcontext};
use core::marker::PhantomData;

/// An element of a CUDA array: a format and a channel count the driver knows. The
/// scalars `u8`, `i8`, `u16`, `i16`, `u32`, `i32` and `f32` (one channel) and arrays
/// of 2 or 4 of them (two or four channels, as `uchar4` or `float2`). Sealed: the
/// driver knows no other layouts. (16-bit floats have no stable Rust type; the
/// `HALF` format is not offered.)
pub trait ArrayElement: crate::memory::DeviceCopy + sealed::Element {
    /// The driver's format of one channel.
    const FORMAT: CUarray_format;
    /// Channels per element: 1, 2 or 4.
    const CHANNELS: u32;
    /// Whether a channel is an integer of 8 or 16 bits: a texture may read it as a
    /// normalized float ([`ReadMode::NormalizedFloat`](crate::texture::ReadMode)).
    const NORMALIZABLE: bool;
    /// Whether a channel is a float: a texture reads it as a float, and may filter
    /// it linearly without normalizing.
    const FLOAT: bool;
}

pub(crate) mod sealed {
    pub trait Element {}
    pub trait Usage {
        /// The `CUDA_ARRAY3D_*` flags this usage adds.
        const FLAGS: u32;
    }
}

macro_rules! array_elements {
    ($($t:ty => $format:ident, $norm:expr, $float:expr;)*) => {$(
        impl sealed::Element for $t {}
        impl ArrayElement for $t {
            const FORMAT: CUarray_format = CUarray_format::$format;
            const CHANNELS: u32 = 1;
            const NORMALIZABLE: bool = $norm;
            const FLOAT: bool = $float;
        }
        impl sealed::Element for [$t; 2] {}
        impl ArrayElement for [$t; 2] {
            const FORMAT: CUarray_format = CUarray_format::$format;
            const CHANNELS: u32 = 2;
            const NORMALIZABLE: bool = $norm;
            const FLOAT: bool = $float;
        }
        impl sealed::Element for [$t; 4] {}
        impl ArrayElement for [$t; 4] {
            const FORMAT: CUarray_format = CUarray_format::$format;
            const CHANNELS: u32 = 4;
            const NORMALIZABLE: bool = $norm;
            const FLOAT: bool = $float;
        }
    )*};
}
array_elements! {
    u8 => CU_AD_FORMAT_UNSIGNED_INT8, true, false;
    i8 => CU_AD_FORMAT_SIGNED_INT8, true, false;
    u16 => CU_AD_FORMAT_UNSIGNED_INT16, true, false;
    i16 => CU_AD_FORMAT_SIGNED_INT16, true, false;
    u32 => CU_AD_FORMAT_UNSIGNED_INT32, false, false;
    i32 => CU_AD_FORMAT_SIGNED_INT32, false, false;
    f32 => CU_AD_FORMAT_FLOAT, false, true;
}

/// What an array may be bound to: [`Sampled`] or [`Storage`]. Sealed.
pub trait Usage: sealed::Usage {}

/// An array textures sample (the default): no surface may be made over it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sampled {}
/// An array created for surface load/store (`CUDA_ARRAY3D_SURFACE_LDST`): textures
/// sample it and [`Array::surface`] makes a surface over it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Storage {}
impl Usage for Sampled {}
impl Usage for Storage {}
impl sealed::Usage for Sampled {
    const FLAGS: u32 = 0;
}
impl sealed::Usage for Storage {
    const FLAGS: u32 = CUarray3D_flags::CUDA_ARRAY3D_SURFACE_LDST.bits();
}

/// The geometry of an array, in elements: its width, height (0 for a 1-D array) and
/// depth (0 for 1-D and 2-D; the layers of a layered array; 6 faces per cube of a
/// cubemap), and whether it is layered or a cubemap. Made by the constructors, which
/// keep the combinations the driver accepts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ArrayShape {
    width: usize,
    height: usize,
    depth: usize,
    flags: u32,
    /// Which of height (1) and depth (2) the constructor requires to be nonzero.
    needs: u8,
}

impl ArrayShape {
    /// A 1-D array of `width` elements.
    pub const fn d1(width: usize) -> ArrayShape {
        ArrayShape::with(width, 0, 0, 0, 0)
    }
    /// A 2-D array of `width × height` elements.
    pub const fn d2(width: usize, height: usize) -> ArrayShape {
        ArrayShape::with(width, height, 0, 0, 1)
    }
    /// A 3-D array of `width × height × depth` elements.
    pub const fn d3(width: usize, height: usize, depth: usize) -> ArrayShape {
        ArrayShape::with(width, height, depth, 0, 3)
    }
    /// `layers` 1-D layers of `width` elements (`tex.a1d`).
    pub const fn layered_1d(width: usize, layers: usize) -> ArrayShape {
        ArrayShape::with(
            width,
            0,
            layers,
            CUarray3D_flags::CUDA_ARRAY3D_LAYERED.bits(),
            2,
        )
    }
    /// `layers` 2-D layers of `width × height` elements (`tex.a2d`).
    pub const fn layered_2d(width: usize, height: usize, layers: usize) -> ArrayShape {
        ArrayShape::with(
            width,
            height,
            layers,
            CUarray3D_flags::CUDA_ARRAY3D_LAYERED.bits(),
            3,
        )
    }
    /// A cubemap: six square faces of `side × side` elements.
    pub const fn cubemap(side: usize) -> ArrayShape {
        ArrayShape::with(
            side,
            side,
            6,
            CUarray3D_flags::CUDA_ARRAY3D_CUBEMAP.bits(),
            3,
        )
    }

    const fn with(width: usize, height: usize, depth: usize, flags: u32, needs: u8) -> ArrayShape {
        ArrayShape {
            width,
            height,
            depth,
            flags,
            needs,
        }
    }

    /// Width in elements.
    pub fn width(&self) -> usize {
        self.width
    }
    /// Height in elements (0 for a 1-D array).
    pub fn height(&self) -> usize {
        self.height
    }
    /// Depth in elements, layers or faces (0 for 1-D and 2-D arrays).
    pub fn depth(&self) -> usize {
        self.depth
    }
    /// Whether it is layered.
    pub fn is_layered(&self) -> bool {
        self.flags & CUarray3D_flags::CUDA_ARRAY3D_LAYERED.bits() != 0
    }
    /// Whether it is a cubemap.
    pub fn is_cubemap(&self) -> bool {
        self.flags & CUarray3D_flags::CUDA_ARRAY3D_CUBEMAP.bits() != 0
    }

    /// The elements it holds (height and depth 0 count as 1), or
    /// [`CudaError::InvalidArgument`] naming the dimension that is 0 or makes the
    /// count overflow. Checked before the driver is called.
    pub fn elements(&self) -> Result<usize, CudaError> {
        let zero = |parameter| CudaError::InvalidArgument {
            parameter,
            rule: "an array dimension must not be 0",
        };
        if self.width == 0 {
            return Err(zero("width"));
        }
        if self.needs & 1 != 0 && self.height == 0 {
            return Err(zero("height"));
        }
        if self.needs & 2 != 0 && self.depth == 0 {
            return Err(zero(if self.is_layered() { "layers" } else { "depth" }));
        }
        self.width
            .checked_mul(self.height.max(1))
            .and_then(|n| n.checked_mul(self.depth.max(1)))
            .ok_or(CudaError::InvalidArgument {
                parameter: "shape",
                rule: "width × height × depth must fit in a usize",
            })
    }

    /// The bytes an array of `E`s of this shape holds, checked as
    /// [`elements`](Self::elements) is (and to fit in a `usize`).
    pub(crate) fn bytes<E: ArrayElement>(&self) -> Result<usize, CudaError> {
        self.elements()?
            .checked_mul(size_of::<E>())
            .ok_or(CudaError::InvalidArgument {
                parameter: "shape",
                rule: "the array's bytes must fit in a usize",
            })
    }

    /// The shape of mipmap level `level` of an array of this shape: each dimension
    /// halved `level` times, never below 1 (layers and faces are kept).
    pub(crate) fn level(&self, level: u32) -> ArrayShape {
        let halve = |d: usize| {
            if d == 0 {
                0
            } else {
                (d >> level.min(63)).max(1)
            }
        };
        let keep_depth = self.is_layered() || self.is_cubemap();
        ArrayShape {
            width: halve(self.width),
            height: halve(self.height),
            depth: if keep_depth {
                self.depth
            } else {
                halve(self.depth)
            },
            flags: self.flags,
            needs: self.needs,
        }
    }

    /// The driver's descriptor of an array of `E`s of this shape with `flags` added.
    pub(crate) fn descriptor<E: ArrayElement>(&self, flags: u32) -> CUDA_ARRAY3D_DESCRIPTOR {
        CUDA_ARRAY3D_DESCRIPTOR {
            Width: self.width,
            Height: self.height,
            Depth: self.depth,
            Format: E::FORMAT,
            NumChannels: E::CHANNELS,
            Flags: self.flags | flags,
        }
    }
}

/// A CUDA array of `E`s (`cuArray3DCreate`), tied to the context it was created in,
/// destroyed when dropped (after the context's work). `U` is [`Sampled`] (the
/// default) or [`Storage`] (surfaces may be made over it).
pub struct Array<'ctx, E: ArrayElement, U: Usage = Sampled> {
    driver: &'static Driver,
    ctx: CUcontext,
    raw: CUarray,
    shape: ArrayShape,
    /// The stream last queued a kernel that uses it through a texture or surface.
    mark: Mark,
    _p: PhantomData<(E, U, Tied<'ctx>)>,
}

impl<E: ArrayElement, U: Usage> core::fmt::Debug for Array<'_, E, U> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Array")
            .field("element", &crate::memory::short_type_name::<E>())
            .field("raw", &self.raw)
            .field("shape", &self.shape)
            .finish()
    }
}

impl<'ctx> CurrentContext<'ctx> {
    /// A CUDA array of `E`s of `shape` that textures sample (`cuArray3DCreate`),
    /// zero-filled on softcuda, uninitialized on NVIDIA. Checked first: no dimension
    /// is 0 and the count fits ([`ArrayShape::elements`]); the driver refuses sizes
    /// beyond the device's limits (`CUDA_ERROR_INVALID_VALUE`).
    pub fn array<E: ArrayElement>(
        &self,
        shape: ArrayShape,
    ) -> Result<Array<'_, E, Sampled>, CudaError> {
        Array::create(self, shape)
    }

    /// As [`array`](Self::array), created for surface load/store too
    /// (`CUDA_ARRAY3D_SURFACE_LDST`): [`Array::surface`] works on it.
    pub fn storage_array<E: ArrayElement>(
        &self,
        shape: ArrayShape,
    ) -> Result<Array<'_, E, Storage>, CudaError> {
        Array::create(self, shape)
    }
}

impl<'ctx, E: ArrayElement, U: Usage> Array<'ctx, E, U> {
    fn create(ctx: &CurrentContext<'ctx>, shape: ArrayShape) -> Result<Self, CudaError> {
        shape.bytes::<E>()?;
        let driver = ctx.driver();
        let desc = shape.descriptor::<E>(U::FLAGS);
        let mut raw = CUarray::NULL;
        // SAFETY: valid out- and in-pointers.
        check(unsafe { driver.table().cuArray3DCreate()?(&mut raw, &desc) })?;
        crate::leaks::created(crate::leaks::Kind::Arrays, raw);
        Ok(Array {
            driver,
            ctx: ctx.raw(),
            raw,
            shape,
            mark: Mark::new(),
            _p: PhantomData,
        })
    }

    /// Its shape.
    pub fn shape(&self) -> ArrayShape {
        self.shape
    }

    /// The array handle, for calls this crate does not wrap. Valid while `self` lives;
    /// do not destroy it.
    pub fn raw(&self) -> CUarray {
        self.raw
    }

    /// Its elements in order (x fastest, then y, then z or layer or face).
    pub fn len(&self) -> usize {
        self.shape.elements().unwrap_or(0)
    }

    /// Whether it holds no elements (never: every dimension is at least 1).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub(crate) fn driver(&self) -> &'static Driver {
        self.driver
    }

    pub(crate) fn mark(&self) -> &Mark {
        &self.mark
    }

    pub(crate) fn context(&self) -> CUcontext {
        self.ctx
    }

    pub(crate) fn region(&self) -> copy::Region<'_> {
        copy::Region {
            driver: self.driver,
            raw: self.raw,
            shape: self.shape,
            element_size: size_of::<E>(),
            mark: &self.mark,
        }
    }
}

copy::array_copies!(reads Array<'ctx, E, U>, ['ctx, E: ArrayElement, U: Usage]);
copy::array_copies!(writes Array<'ctx, E, U>, ['ctx, E: ArrayElement, U: Usage]);

impl<E: ArrayElement, U: Usage> Drop for Array<'_, E, U> {
    fn drop(&mut self) {
        // SAFETY: this value owns the array; no texture or surface of it exists (they
        // borrow it).
        unsafe {
            crate::wait::release_settled(
                self.driver,
                self.ctx,
                crate::leaks::Kind::Arrays,
                self.raw,
                self.driver.table().cuArrayDestroy().ok(),
            )
        }
    }
}

// Arrays carry a `Cell` mark and are tied to a binding: they stay on their thread.
static_assertions::assert_not_impl_any!(Array<'static, f32>: Send, Sync);
static_assertions::assert_not_impl_any!(Array<'static, [u8; 4], Storage>: Send, Sync);

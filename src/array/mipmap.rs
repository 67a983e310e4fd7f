//! Mipmapped arrays: [`MipmappedArray<'ctx, E, U>`] (`cuMipmappedArrayCreate`), a
//! chain of levels each half the size of the one before, and its levels as arrays
//! one may copy to and from ([`MipLevel`], [`MipLevelMut`]), which borrow it.

use super::{ArrayElement, ArrayShape, Sampled, Storage, Usage, copy};
use crate::context::{CurrentContext, Tied};
use crate::error::{CudaError, check};
use crate::loader::Driver;
use crate::order::Mark;
use crate::sys::{CUarray, CUcontext, CUmipmappedArray};
use core::marker::PhantomData;

/// A mipmapped array of `E`s: `levels` arrays, level 0 of the shape it was made
/// with, each next one halved in every dimension (layers and faces kept), down to 1.
/// Tied to its context; destroyed when dropped, after the context's work. Textures
/// sample it with mipmap filtering ([`crate::texture`]).
pub struct MipmappedArray<'ctx, E: ArrayElement, U: Usage = Sampled> {
    driver: &'static Driver,
    ctx: CUcontext,
    raw: CUmipmappedArray,
    shape: ArrayShape,
    /// Each level's array (the mipmapped array owns them).
    levels: Vec<CUarray>,
    /// One mark for all levels: a texture reads any of them.
    mark: Mark,
    _p: PhantomData<(E, U, Tied<'ctx>)>,
}

impl<E: ArrayElement, U: Usage> core::fmt::Debug for MipmappedArray<'_, E, U> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("MipmappedArray")
            .field("element", &crate::memory::short_type_name::<E>())
            .field("raw", &self.raw)
            .field("shape", &self.shape)
            .field("levels", &self.levels.len())
            .finish()
    }
}

/// A level of a [`MipmappedArray`], read-only: its copies out.
pub struct MipLevel<'m, E: ArrayElement> {
    driver: &'static Driver,
    raw: CUarray,
    shape: ArrayShape,
    mark: &'m Mark,
    _p: PhantomData<(E, *const ())>,
}

/// A level of a [`MipmappedArray`], borrowed exclusively: its copies in and out.
pub struct MipLevelMut<'m, E: ArrayElement> {
    level: MipLevel<'m, E>,
    _p: PhantomData<&'m mut ()>,
}

impl<E: ArrayElement> core::fmt::Debug for MipLevel<'_, E> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("MipLevel")
            .field("raw", &self.raw)
            .field("shape", &self.shape)
            .finish()
    }
}
impl<E: ArrayElement> core::fmt::Debug for MipLevelMut<'_, E> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        self.level.fmt(f)
    }
}

impl<'ctx> CurrentContext<'ctx> {
    /// A mipmapped array of `E`s whose level 0 has `shape`, with `levels` levels
    /// (`cuMipmappedArrayCreate`). Checked first: the shape ([`ArrayShape::elements`])
    /// and `levels`, from 1 to one more than the base-2 logarithm of the largest
    /// dimension ([`CudaError::InvalidArgument`] naming `levels`).
    pub fn mipmapped_array<E: ArrayElement>(
        &self,
        shape: ArrayShape,
        levels: u32,
    ) -> Result<MipmappedArray<'_, E, Sampled>, CudaError> {
        MipmappedArray::create(self, shape, levels)
    }

    /// As [`mipmapped_array`](Self::mipmapped_array), created for surface
    /// load/store too (`CUDA_ARRAY3D_SURFACE_LDST`).
    pub fn storage_mipmapped_array<E: ArrayElement>(
        &self,
        shape: ArrayShape,
        levels: u32,
    ) -> Result<MipmappedArray<'_, E, Storage>, CudaError> {
        MipmappedArray::create(self, shape, levels)
    }
}

impl<'ctx, E: ArrayElement, U: Usage> MipmappedArray<'ctx, E, U> {
    fn create(
        ctx: &CurrentContext<'ctx>,
        shape: ArrayShape,
        levels: u32,
    ) -> Result<Self, CudaError> {
        shape.bytes::<E>()?;
        let largest = if shape.is_layered() || shape.is_cubemap() {
            shape.width().max(shape.height())
        } else {
            shape.width().max(shape.height()).max(shape.depth())
        };
        let most = usize::BITS - largest.leading_zeros();
        if levels == 0 || levels > most {
            return Err(CudaError::InvalidArgument {
                parameter: "levels",
                rule: "must be from 1 to 1 + log2 of the largest dimension",
            });
        }
        let driver = ctx.driver();
        let table = driver.table();
        let (create, get_level, destroy) = (
            table.cuMipmappedArrayCreate()?,
            table.cuMipmappedArrayGetLevel()?,
            table.cuMipmappedArrayDestroy()?,
        );
        let desc = shape.descriptor::<E>(U::FLAGS);
        let mut raw = CUmipmappedArray::NULL;
        // SAFETY: valid out- and in-pointers.
        check(unsafe { create(&mut raw, &desc, levels) })?;
        let mut arrays = Vec::with_capacity(levels as usize);
        for level in 0..levels {
            let mut a = CUarray::NULL;
            // SAFETY: a live mipmapped array with `levels` levels; a valid out-pointer.
            let r = check(unsafe { get_level(&mut a, raw, level) });
            if let Err(e) = r {
                // SAFETY: made above, never shared.
                let _ = unsafe { destroy(raw) };
                return Err(e);
            }
            arrays.push(a);
        }
        crate::leaks::created(crate::leaks::Kind::MipmappedArrays, raw);
        Ok(MipmappedArray {
            driver,
            ctx: ctx.raw(),
            raw,
            shape,
            levels: arrays,
            mark: Mark::new(),
            _p: PhantomData,
        })
    }

    /// The shape of level 0.
    pub fn shape(&self) -> ArrayShape {
        self.shape
    }

    /// How many levels it has.
    pub fn levels(&self) -> u32 {
        self.levels.len() as u32
    }

    /// The handle, for calls this crate does not wrap. Valid while `self` lives.
    pub fn raw(&self) -> CUmipmappedArray {
        self.raw
    }

    /// Level `level`, to copy out of ([`CudaError::OutOfRange`] past the last).
    pub fn level(&self, level: u32) -> Result<MipLevel<'_, E>, CudaError> {
        let raw = self.level_raw(level)?;
        Ok(MipLevel {
            driver: self.driver,
            raw,
            shape: self.shape.level(level),
            mark: &self.mark,
            _p: PhantomData,
        })
    }

    /// Level `level`, to copy into and out of ([`CudaError::OutOfRange`] past the
    /// last).
    pub fn level_mut(&mut self, level: u32) -> Result<MipLevelMut<'_, E>, CudaError> {
        Ok(MipLevelMut {
            level: self.level(level)?,
            _p: PhantomData,
        })
    }

    fn level_raw(&self, level: u32) -> Result<CUarray, CudaError> {
        self.levels
            .get(level as usize)
            .copied()
            .ok_or(CudaError::OutOfRange {
                start: level as usize,
                end: (level as usize).saturating_add(1),
                len: self.levels.len(),
            })
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
}

impl<'m, E: ArrayElement> MipLevel<'m, E> {
    /// Its shape.
    pub fn shape(&self) -> ArrayShape {
        self.shape
    }
    /// Its elements.
    pub fn len(&self) -> usize {
        self.shape.elements().unwrap_or(0)
    }
    /// Whether it holds no elements (never).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// The level's array handle (owned by the mipmapped array).
    pub fn raw(&self) -> CUarray {
        self.raw
    }
    fn region(&self) -> copy::Region<'_> {
        copy::Region {
            driver: self.driver,
            raw: self.raw,
            shape: self.shape,
            element_size: size_of::<E>(),
            mark: self.mark,
        }
    }
}

impl<'m, E: ArrayElement> MipLevelMut<'m, E> {
    /// Its shape.
    pub fn shape(&self) -> ArrayShape {
        self.level.shape
    }
    /// Its elements.
    pub fn len(&self) -> usize {
        self.level.len()
    }
    /// Whether it holds no elements (never).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    fn region(&self) -> copy::Region<'_> {
        self.level.region()
    }
}

copy::array_copies!(reads MipLevel<'m, E>, ['m, E: ArrayElement]);
copy::array_copies!(reads MipLevelMut<'m, E>, ['m, E: ArrayElement]);
copy::array_copies!(writes MipLevelMut<'m, E>, ['m, E: ArrayElement]);

impl<E: ArrayElement, U: Usage> Drop for MipmappedArray<'_, E, U> {
    fn drop(&mut self) {
        // SAFETY: this value owns the mipmapped array; no level, texture or surface of
        // it exists (they borrow it).
        unsafe {
            crate::wait::release_settled(
                self.driver,
                self.ctx,
                crate::leaks::Kind::MipmappedArrays,
                self.raw,
                self.driver.table().cuMipmappedArrayDestroy().ok(),
            )
        }
    }
}

static_assertions::assert_not_impl_any!(MipmappedArray<'static, f32>: Send, Sync);
static_assertions::assert_not_impl_any!(MipLevel<'static, f32>: Send, Sync);
static_assertions::assert_not_impl_any!(MipLevelMut<'static, f32>: Send, Sync);

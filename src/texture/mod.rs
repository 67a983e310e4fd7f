//! Texture objects and surface objects over CUDA arrays: [`TextureObject<'a, E>`]
//! (`cuTexObjectCreate`), which samples an [`Array`] or a [`MipmappedArray`] as
//! [`TextureDesc`] says (addressing, filtering, read mode, coordinates), and
//! [`SurfaceObject<'a, E>`] (`cuSurfObjectCreate`, in `surface.rs`), through which a
//! kernel loads and stores the elements of an array created for it; their kernel
//! parameter kinds [`Texture<E>`] and [`Surface<E>`] (`params.rs`).
//!
//! # Why objects borrow arrays and are parameters of their own kinds
//!
//! A texture or surface object is a 64-bit handle the hardware resolves to an array;
//! the kernel's `tex`, `suld` and `sust` instructions clip every access to the
//! array's bounds (a `.trap` surface access faults instead), so no coordinate makes
//! them reach other memory. What can go wrong is the handle outliving its array, or
//! a surface writing an array something else reads. So a texture borrows its array
//! shared and a surface borrows it exclusively (`&mut`) for its whole life (CF39):
//! while a surface exists the array cannot be copied to or sampled, and an array
//! cannot be dropped under either. A handle is no pointer: a kernel declares its
//! parameter [`Texture<E>`] or [`Surface<E>`] (8 bytes, `cudaTextureObject_t` /
//! `cudaSurfaceObject_t`, PTX `.param .u64`) and receives only an object of the
//! element type `E` (CF39) — never a buffer, never a number.
//!
//! # Host order and destruction
//!
//! A launch that passes an object marks its array (its host-order mark); a host copy
//! of the array waits for those kernels. The driver does not say whether
//! destroying an object under a running kernel is safe, so dropping one waits for
//! its context's work first (`cuCtxSynchronize`; a failed wait leaves the object
//! alive and logs it). The wait is refused while a stream of the context captures:
//! drop objects and arrays outside captures, or they are left alive (logged).
//!
//! # Checked before the driver
//!
//! [`TextureDesc`] is checked against the element type when the object is made
//! ([`CudaError::InvalidArgument`] naming the field): wrap and mirror addressing
//! need normalized coordinates (the hardware clamps otherwise — a silent surprise);
//! linear filtering needs float results (a float element, or 8- or 16-bit integers
//! read as normalized floats); the normalized-float read mode needs 8- or 16-bit
//! integer elements; anisotropy is at most 16.

mod params;
mod surface;

pub use params::{Surface, Texture};
pub use surface::SurfaceObject;

use crate::array::{Array, ArrayElement, MipmappedArray, Usage};
use crate::error::{CudaError, check};
use crate::loader::Driver;
use crate::order::Mark;
use crate::sys::{
    CUDA_RESOURCE_DESC, CUDA_TEXTURE_DESC, CUaddress_mode, CUcontext, CUfilter_mode,
    CUresourcetype, CUtexObject, CUtrsf_flags,
};
use core::marker::PhantomData;

/// How a coordinate outside the texture is mapped (`CUaddress_mode`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum AddressMode {
    /// Repeat the texture (normalized coordinates only).
    Wrap,
    /// Clamp to the edge element (the default).
    #[default]
    Clamp,
    /// Repeat it mirrored (normalized coordinates only).
    Mirror,
    /// Read the border colour.
    Border,
}

/// How a texture is sampled between elements (`CUfilter_mode`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum FilterMode {
    /// The nearest element (the default).
    #[default]
    Point,
    /// Linear interpolation of the nearest 2, 4 or 8 elements (float results only).
    Linear,
}

/// What a texture fetch returns for integer elements.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ReadMode {
    /// The element's own values (the default; `CU_TRSF_READ_AS_INTEGER` for integer
    /// elements).
    #[default]
    ElementType,
    /// 8- and 16-bit integers as floats in `[0, 1]` (unsigned) or `[-1, 1]` (signed).
    NormalizedFloat,
}

/// How a texture samples its array: `CUDA_TEXTURE_DESC` with typed fields. The
/// default clamps, samples the nearest element, reads elements as they are and
/// takes unnormalized coordinates (element indices, texel centres at `i + 0.5`).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct TextureDesc {
    /// Addressing along x, y and z.
    pub address: [AddressMode; 3],
    /// Filtering within a level.
    pub filter: FilterMode,
    /// What an integer element reads as.
    pub read: ReadMode,
    /// Coordinates in `[0, 1)` across the texture instead of element indices.
    pub normalized_coords: bool,
    /// The colour [`AddressMode::Border`] reads.
    pub border_color: [f32; 4],
    /// Filtering between mipmap levels (mipmapped arrays).
    pub mipmap_filter: FilterMode,
    /// The most samples anisotropic filtering takes (0 or 1: none; at most 16).
    pub max_anisotropy: u32,
    /// Added to the level a fetch computes (mipmapped arrays).
    pub mipmap_level_bias: f32,
    /// The lowest level fetched (mipmapped arrays).
    pub min_mipmap_level_clamp: f32,
    /// The highest level fetched (mipmapped arrays).
    pub max_mipmap_level_clamp: f32,
}

impl TextureDesc {
    /// The same addressing mode along every axis.
    pub fn with_address(mut self, mode: AddressMode) -> TextureDesc {
        self.address = [mode; 3];
        self
    }
    /// With filter mode `filter`.
    pub fn with_filter(mut self, filter: FilterMode) -> TextureDesc {
        self.filter = filter;
        self
    }
    /// With read mode `read`.
    pub fn with_read(mut self, read: ReadMode) -> TextureDesc {
        self.read = read;
        self
    }
    /// With normalized coordinates.
    pub fn normalized(mut self) -> TextureDesc {
        self.normalized_coords = true;
        self
    }

    /// The checks of the module docs for elements `E`, then the C descriptor.
    fn to_raw<E: ArrayElement>(self) -> Result<CUDA_TEXTURE_DESC, CudaError> {
        if !self.normalized_coords
            && self
                .address
                .iter()
                .any(|m| matches!(m, AddressMode::Wrap | AddressMode::Mirror))
        {
            return Err(CudaError::InvalidArgument {
                parameter: "address",
                rule: "wrap and mirror addressing need normalized coordinates",
            });
        }
        if self.read == ReadMode::NormalizedFloat && !E::NORMALIZABLE {
            return Err(CudaError::InvalidArgument {
                parameter: "read",
                rule: "normalized-float reads are for 8- and 16-bit integer elements",
            });
        }
        let float_results = E::FLOAT || self.read == ReadMode::NormalizedFloat;
        let linear = |f: FilterMode| f == FilterMode::Linear;
        if (linear(self.filter) || linear(self.mipmap_filter)) && !float_results {
            return Err(CudaError::InvalidArgument {
                parameter: "filter",
                rule: "linear filtering needs float results: a float element, or 8- or 16-bit integers read as normalized floats",
            });
        }
        if self.max_anisotropy > 16 {
            return Err(CudaError::InvalidArgument {
                parameter: "max_anisotropy",
                rule: "must be at most 16",
            });
        }
        let address = |m: AddressMode| match m {
            AddressMode::Wrap => CUaddress_mode::CU_TR_ADDRESS_MODE_WRAP,
            AddressMode::Clamp => CUaddress_mode::CU_TR_ADDRESS_MODE_CLAMP,
            AddressMode::Mirror => CUaddress_mode::CU_TR_ADDRESS_MODE_MIRROR,
            AddressMode::Border => CUaddress_mode::CU_TR_ADDRESS_MODE_BORDER,
        };
        let filter = |f: FilterMode| match f {
            FilterMode::Point => CUfilter_mode::CU_TR_FILTER_MODE_POINT,
            FilterMode::Linear => CUfilter_mode::CU_TR_FILTER_MODE_LINEAR,
        };
        let mut flags = CUtrsf_flags::empty();
        if self.read == ReadMode::ElementType && !E::FLOAT {
            flags |= CUtrsf_flags::CU_TRSF_READ_AS_INTEGER;
        }
        if self.normalized_coords {
            flags |= CUtrsf_flags::CU_TRSF_NORMALIZED_COORDINATES;
        }
        Ok(CUDA_TEXTURE_DESC {
            addressMode: self.address.map(address),
            filterMode: filter(self.filter),
            flags: flags.bits(),
            maxAnisotropy: self.max_anisotropy,
            mipmapFilterMode: filter(self.mipmap_filter),
            mipmapLevelBias: self.mipmap_level_bias,
            minMipmapLevelClamp: self.min_mipmap_level_clamp,
            maxMipmapLevelClamp: self.max_mipmap_level_clamp,
            borderColor: self.border_color,
            reserved: [0; 12],
        })
    }
}

/// A texture object sampling an array of `E`s as its [`TextureDesc`] says, borrowing
/// the array for `'a`. A kernel takes it for a [`Texture<E>`] parameter (`&texture`).
/// Destroyed when dropped, after its context's work.
pub struct TextureObject<'a, E: ArrayElement> {
    driver: &'static Driver,
    ctx: CUcontext,
    raw: CUtexObject,
    desc: TextureDesc,
    /// Its array's mark: launches that pass it set it.
    mark: &'a Mark,
    _p: PhantomData<(E, *const ())>,
}

impl<E: ArrayElement> core::fmt::Debug for TextureObject<'_, E> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("TextureObject")
            .field("element", &crate::memory::short_type_name::<E>())
            .field("raw", &self.raw)
            .field("desc", &self.desc)
            .finish()
    }
}

impl<'ctx, E: ArrayElement, U: Usage> Array<'ctx, E, U> {
    /// A texture sampling this array as `desc` says (`cuTexObjectCreate`), after the
    /// checks of the [module docs](crate::texture).
    pub fn texture(&self, desc: &TextureDesc) -> Result<TextureObject<'_, E>, CudaError> {
        let mut res = CUDA_RESOURCE_DESC {
            resType: CUresourcetype::CU_RESOURCE_TYPE_ARRAY,
            ..Default::default()
        };
        res.res.array.hArray = self.raw();
        TextureObject::create(self.driver(), self.context(), &res, desc, self.mark())
    }
}

impl<'ctx, E: ArrayElement, U: Usage> MipmappedArray<'ctx, E, U> {
    /// A texture sampling every level of this mipmapped array as `desc` says
    /// (`cuTexObjectCreate`), after the checks of the [module docs](crate::texture).
    pub fn texture(&self, desc: &TextureDesc) -> Result<TextureObject<'_, E>, CudaError> {
        let mut res = CUDA_RESOURCE_DESC {
            resType: CUresourcetype::CU_RESOURCE_TYPE_MIPMAPPED_ARRAY,
            ..Default::default()
        };
        res.res.mipmap.hMipmappedArray = self.raw();
        TextureObject::create(self.driver(), self.context(), &res, desc, self.mark())
    }
}

impl<'a, E: ArrayElement> TextureObject<'a, E> {
    fn create(
        driver: &'static Driver,
        ctx: CUcontext,
        res: &CUDA_RESOURCE_DESC,
        desc: &TextureDesc,
        mark: &'a Mark,
    ) -> Result<Self, CudaError> {
        let raw_desc = desc.to_raw::<E>()?;
        let mut raw: CUtexObject = 0;
        // SAFETY: valid out- and in-pointers; the resource is a live array the
        // caller borrows for `'a`; no resource view.
        check(unsafe {
            driver.table().cuTexObjectCreate()?(&mut raw, res, &raw_desc, core::ptr::null())
        })?;
        crate::leaks::created(crate::leaks::Kind::Textures, raw);
        Ok(TextureObject {
            driver,
            ctx,
            raw,
            desc: *desc,
            mark,
            _p: PhantomData,
        })
    }

    /// The handle (`CUtexObject`), for calls this crate does not wrap. Valid while
    /// `self` lives.
    pub fn raw(&self) -> CUtexObject {
        self.raw
    }

    /// How it samples.
    pub fn desc(&self) -> &TextureDesc {
        &self.desc
    }

    pub(crate) fn param_bytes(&self) -> *mut core::ffi::c_void {
        (&self.raw as *const CUtexObject).cast_mut().cast()
    }

    pub(crate) fn array_mark(&self) -> &'a Mark {
        self.mark
    }
}

impl<E: ArrayElement> Drop for TextureObject<'_, E> {
    fn drop(&mut self) {
        // SAFETY: this value owns the object, and nothing uses it after this.
        unsafe {
            crate::wait::release_settled(
                self.driver,
                self.ctx,
                crate::leaks::Kind::Textures,
                self.raw,
                self.driver.table().cuTexObjectDestroy().ok(),
            )
        }
    }
}

static_assertions::assert_not_impl_any!(TextureObject<'static, f32>: Send, Sync);
static_assertions::assert_not_impl_any!(SurfaceObject<'static, f32>: Send, Sync);

//! Texture and surface objects through the C ABI: `cuTexObjectCreate`,
//! `cuTexObjectDestroy`, `cuTexObjectGetResourceDesc`, `cuTexObjectGetTextureDesc`,
//! `cuTexObjectGetResourceViewDesc`, `cuSurfObjectCreate`, `cuSurfObjectDestroy`
//! and `cuSurfObjectGetResourceDesc`. The model is `crate::texture`.
//!
//! A resource view descriptor (`pResViewDesc` non-null) is `CUDA_ERROR_NOT_SUPPORTED`:
//! softcuda keeps no views, so `cuTexObjectGetResourceViewDesc` of a live texture
//! is `CUDA_ERROR_INVALID_VALUE` ("no resource view was set", as documented).

use super::out;
use crate::state;
use crate::types::*;
use core::ffi::c_void;

/// `cuTexObjectCreate`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuTexObjectCreate(
    tex: *mut CUtexObject,
    res: *const CUDA_RESOURCE_DESC,
    desc: *const CUDA_TEXTURE_DESC,
    view: *const c_void,
) -> CUresult {
    api!("cuTexObjectCreate", {
        let s = state::state();
        state::current_ctx(&s)?;
        if tex.is_null() || res.is_null() || desc.is_null() {
            return Err(code::INVALID_VALUE);
        }
        // SAFETY: valid descriptors, by the C contract.
        let (r, d) = unsafe { (*res, *desc) };
        if let CU_RESOURCE_TYPE_LINEAR | CU_RESOURCE_TYPE_PITCH2D = r.resType
            && !view.is_null()
        {
            return Err(code::INVALID_VALUE); // views are for arrays only
        }
        if !view.is_null() {
            return Err(code::NOT_SUPPORTED);
        }
        let h = crate::texture::create_texture(&s, &r, &d)?;
        out(tex, h)
    })
}

/// `cuTexObjectDestroy`: `CUDA_ERROR_INVALID_VALUE` for a handle that names no
/// live texture object (destroyed twice included).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuTexObjectDestroy(tex: CUtexObject) -> CUresult {
    api!("cuTexObjectDestroy", {
        state::current_ctx(&state::state())?;
        crate::texture::destroy_texture(tex)
    })
}

/// `cuTexObjectGetResourceDesc`: the resource descriptor as created.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuTexObjectGetResourceDesc(
    res: *mut CUDA_RESOURCE_DESC,
    tex: CUtexObject,
) -> CUresult {
    api!("cuTexObjectGetResourceDesc", {
        state::current_ctx(&state::state())?;
        if res.is_null() {
            return Err(code::INVALID_VALUE);
        }
        out(res, crate::texture::texture_resource(tex)?)
    })
}

/// `cuTexObjectGetTextureDesc`: the texture descriptor as created.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuTexObjectGetTextureDesc(
    desc: *mut CUDA_TEXTURE_DESC,
    tex: CUtexObject,
) -> CUresult {
    api!("cuTexObjectGetTextureDesc", {
        state::current_ctx(&state::state())?;
        if desc.is_null() {
            return Err(code::INVALID_VALUE);
        }
        out(desc, crate::texture::texture_desc(tex)?)
    })
}

/// `cuTexObjectGetResourceViewDesc`: no texture has a view in softcuda, so
/// `CUDA_ERROR_INVALID_VALUE` always (for a live texture: "no resource view").
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuTexObjectGetResourceViewDesc(
    view: *mut c_void,
    tex: CUtexObject,
) -> CUresult {
    api!("cuTexObjectGetResourceViewDesc", {
        state::current_ctx(&state::state())?;
        let _ = (view, crate::texture::texture_exists(tex));
        Err(code::INVALID_VALUE)
    })
}

/// `cuSurfObjectCreate`: an array made with `CUDA_ARRAY3D_SURFACE_LDST` only.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuSurfObjectCreate(
    surf: *mut CUsurfObject,
    res: *const CUDA_RESOURCE_DESC,
) -> CUresult {
    api!("cuSurfObjectCreate", {
        let s = state::state();
        state::current_ctx(&s)?;
        if surf.is_null() || res.is_null() {
            return Err(code::INVALID_VALUE);
        }
        // SAFETY: a valid descriptor, by the C contract.
        let r = unsafe { *res };
        let h = crate::texture::create_surface(&s, &r)?;
        out(surf, h)
    })
}

/// `cuSurfObjectDestroy`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuSurfObjectDestroy(surf: CUsurfObject) -> CUresult {
    api!("cuSurfObjectDestroy", {
        state::current_ctx(&state::state())?;
        crate::texture::destroy_surface(surf)
    })
}

/// `cuSurfObjectGetResourceDesc`: the resource descriptor as created.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuSurfObjectGetResourceDesc(
    res: *mut CUDA_RESOURCE_DESC,
    surf: CUsurfObject,
) -> CUresult {
    api!("cuSurfObjectGetResourceDesc", {
        state::current_ctx(&state::state())?;
        if res.is_null() {
            return Err(code::INVALID_VALUE);
        }
        out(res, crate::texture::surface_resource(surf)?)
    })
}

//! Modules (PTX text, fatbins embedding PTX; cubins are refused), functions and their
//! attributes, kernel launch, and occupancy.
//!
//! Occupancy follows a documented model (docs/softcuda.md): resident blocks per SM
//! are limited by threads (warp-rounded), registers (per-warp allocation of 256),
//! shared memory (with 1 KiB reserved per block) and the architecture's block limit.

use super::{c_text, out};
use crate::devalloc::{Removed, free_global};
use crate::device::Profile;
use crate::image::*;
use crate::launch::*;
use crate::ptx::{self, LaunchConfig};
use crate::state::{self, FunctionEntry, Kind, R, State};
use crate::stream;
use crate::types::*;
use core::ffi::{c_char, c_int, c_uint, c_void};
use std::sync::Arc;

fn module_id(h: CUmodule) -> R<u64> {
    state::id_of(Kind::Module, h).ok_or(code::INVALID_HANDLE)
}

fn load(
    pmod: *mut CUmodule,
    image: *const c_void,
    n: c_uint,
    options: *const c_uint,
    values: *mut *mut c_void,
) -> R {
    if pmod.is_null() {
        return Err(code::INVALID_VALUE);
    }
    let (ctx, sm) = {
        let s = state::state();
        let ctx = state::current_ctx(&s)?;
        let (major, minor) = s.config.devices[s.context(ctx)?.device].cc;
        (ctx, major * 10 + minor)
    };
    let jit = parse_options(n, options, values, sm)?;
    let text = ptx_text(image, sm)?;
    let module = jit.compile(&text, values)?;
    let (_s, id) = install(state::state(), ctx, module)?;
    out(pmod, state::handle(Kind::Module, id))
}

/// `cuModuleLoadData`: PTX text, or a fatbin embedding PTX. A cubin is
/// `NO_BINARY_FOR_GPU`: softcuda has no GPU ISA to run.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuModuleLoadData(pmod: *mut CUmodule, image: *const c_void) -> CUresult {
    api!("cuModuleLoadData", {
        load(pmod, image, 0, core::ptr::null(), core::ptr::null_mut())
    })
}

/// `cuModuleLoadDataEx`: with JIT options; the info and error logs are ptxas-style.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuModuleLoadDataEx(
    pmod: *mut CUmodule,
    image: *const c_void,
    n: c_uint,
    options: *mut c_uint,
    values: *mut *mut c_void,
) -> CUresult {
    api!("cuModuleLoadDataEx", {
        load(pmod, image, n, options, values)
    })
}

/// `cuModuleLoadFatBinary`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuModuleLoadFatBinary(
    pmod: *mut CUmodule,
    fatbin: *const c_void,
) -> CUresult {
    api!("cuModuleLoadFatBinary", {
        load(pmod, fatbin, 0, core::ptr::null(), core::ptr::null_mut())
    })
}

/// `cuModuleLoad`: a file holding PTX text or a fatbin.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuModuleLoad(pmod: *mut CUmodule, fname: *const c_char) -> CUresult {
    api!("cuModuleLoad", {
        if fname.is_null() {
            return Err(code::INVALID_VALUE);
        }
        state::current_ctx(&state::state())?;
        // SAFETY: non-null (checked above) and NUL-terminated, by the C contract.
        let path = unsafe { c_text(fname, code::INVALID_VALUE) }?;
        let mut bytes = std::fs::read(path).map_err(|_| code::FILE_NOT_FOUND)?;
        bytes.push(0);
        load(
            pmod,
            bytes.as_ptr().cast(),
            0,
            core::ptr::null(),
            core::ptr::null_mut(),
        )
    })
}

/// `cuModuleUnload`: its functions become invalid handles, its globals are freed.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuModuleUnload(hmod: CUmodule) -> CUresult {
    api!("cuModuleUnload", {
        let id = module_id(hmod)?;
        stream::drain_current();
        let mut s = state::state();
        state::require_init(&s)?;
        let m = s.modules.remove(&id).ok_or(code::INVALID_HANDLE)?;
        s.functions.retain(|_, f| f.module != id);
        let mut removed = Removed::default();
        for &a in m.global_addrs.iter() {
            removed.merge(free_global(&mut s, a));
        }
        drop(s);
        removed.finish();
        Ok(())
    })
}

/// `cuModuleGetFunction`: the same handle every time for the same kernel.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuModuleGetFunction(
    pf: *mut CUfunction,
    hmod: CUmodule,
    name: *const c_char,
) -> CUresult {
    api!("cuModuleGetFunction", {
        if pf.is_null() || name.is_null() {
            return Err(code::INVALID_VALUE);
        }
        // SAFETY: non-null (checked above) and NUL-terminated, by the C contract.
        let name = unsafe { c_text(name, code::NOT_FOUND) }?;
        let id = module_id(hmod)?;
        let mut s = state::state();
        state::current_ctx(&s)?;
        let m = s.modules.get(&id).ok_or(code::INVALID_HANDLE)?;
        let kernel = m
            .ptx
            .kernels()
            .iter()
            .position(|k| k.name == name)
            .ok_or(code::NOT_FOUND)?;
        let fid = function_of(&mut s, id, kernel, DEFAULT_SHARED)?;
        out(pf, state::handle(Kind::Function, fid))
    })
}

/// `cuModuleGetFunctionCount`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuModuleGetFunctionCount(count: *mut c_uint, hmod: CUmodule) -> CUresult {
    api!("cuModuleGetFunctionCount", {
        let id = module_id(hmod)?;
        let s = state::state();
        state::require_init(&s)?;
        let m = s.modules.get(&id).ok_or(code::INVALID_HANDLE)?;
        out(count, m.ptx.kernels().len() as c_uint)
    })
}

/// `cuModuleGetGlobal_v2`: a module-scope `.global` or `.const` variable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuModuleGetGlobal_v2(
    dptr: *mut CUdeviceptr,
    bytes: *mut usize,
    hmod: CUmodule,
    name: *const c_char,
) -> CUresult {
    api!("cuModuleGetGlobal", {
        if name.is_null() {
            return Err(code::INVALID_VALUE);
        }
        // SAFETY: non-null (checked above) and NUL-terminated, by the C contract.
        let name = unsafe { c_text(name, code::NOT_FOUND) }?;
        let id = module_id(hmod)?;
        let s = state::state();
        state::current_ctx(&s)?;
        write_global(
            s.modules.get(&id).ok_or(code::INVALID_HANDLE)?,
            name,
            dptr,
            bytes,
        )
    })
}

/// `cuFuncGetAttribute`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuFuncGetAttribute(
    value: *mut c_int,
    attr: c_uint,
    hfunc: CUfunction,
) -> CUresult {
    api!("cuFuncGetAttribute", {
        let s = state::state();
        state::require_init(&s)?;
        let (id, f) = function(&s, hfunc)?;
        let k = &f.ptx.kernels()[f.kernel];
        let dev = device_of(&s, f.ctx)?;
        let v = match attr {
            10..=15 => crate::launch::cluster::get_func_attribute(id, &f, attr)?,
            _ => attribute_of(dev, k, f.max_dynamic_shared, attr)?,
        };
        out(value, v)
    })
}

/// `cuFuncSetAttribute`: the dynamic shared memory opt-in and the carveout preference.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuFuncSetAttribute(
    hfunc: CUfunction,
    attr: c_uint,
    value: c_int,
) -> CUresult {
    api!("cuFuncSetAttribute", {
        let mut s = state::state();
        state::require_init(&s)?;
        let (id, f) = function(&s, hfunc)?;
        let optin = device_of(&s, f.ctx)?.shared_per_block_optin();
        let stat = f.ptx.kernels()[f.kernel].static_shared_bytes;
        match attr {
            8 => {
                let v = u32::try_from(value).map_err(|_| code::INVALID_VALUE)?;
                if v.saturating_add(stat) > optin {
                    return Err(code::INVALID_VALUE);
                }
                if let Some(e) = s.functions.get_mut(&id) {
                    e.max_dynamic_shared = (v + stat).max(DEFAULT_SHARED);
                }
                Ok(())
            }
            9 if (-1..=100).contains(&value) => Ok(()),
            9 => Err(code::INVALID_VALUE),
            10 => Err(code::INVALID_VALUE), // CLUSTER_SIZE_MUST_BE_SET: read-only
            11..=15 => {
                let dev = device_of(&s, f.ctx)?.clone();
                crate::launch::cluster::set_func_attribute(&s, id, &dev, attr, value)
            }
            _ => Err(code::NOT_SUPPORTED),
        }
    })
}

/// `cuFuncSetCacheConfig`: recorded as a preference.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuFuncSetCacheConfig(hfunc: CUfunction, config: c_uint) -> CUresult {
    api!("cuFuncSetCacheConfig", {
        if config > 3 {
            return Err(code::INVALID_VALUE);
        }
        let mut s = state::state();
        state::require_init(&s)?;
        let (id, _) = function(&s, hfunc)?;
        if let Some(e) = s.functions.get_mut(&id) {
            e.cache_config = config;
        }
        Ok(())
    })
}

/// `cuFuncGetParamInfo`: offset and size of parameter `index`, from the `.entry` list.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuFuncGetParamInfo(
    hfunc: CUfunction,
    index: usize,
    offset: *mut usize,
    size: *mut usize,
) -> CUresult {
    api!("cuFuncGetParamInfo", {
        let s = state::state();
        state::require_init(&s)?;
        let (_, f) = function(&s, hfunc)?;
        let p = f.ptx.kernels()[f.kernel]
            .params
            .get(index)
            .ok_or(code::INVALID_VALUE)?;
        out(offset, p.offset as usize)?;
        if !size.is_null() {
            out(size, p.size as usize)?;
        }
        Ok(())
    })
}

/// `cuFuncGetParamCount` (CUDA 13.2): how many parameters the `.entry` list declares.
/// `cuGetProcAddress` hands it out only when softcuda reports 13.2 or newer
/// (`SOFTCUDA_VERSION`).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuFuncGetParamCount(hfunc: CUfunction, count: *mut usize) -> CUresult {
    api!("cuFuncGetParamCount", {
        let s = state::state();
        state::require_init(&s)?;
        let (_, f) = function(&s, hfunc)?;
        out(count, f.ptx.kernels()[f.kernel].params.len())
    })
}

/// `cuFuncGetName`: valid while the module is loaded.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuFuncGetName(name: *mut *const c_char, hfunc: CUfunction) -> CUresult {
    api!("cuFuncGetName", {
        let s = state::state();
        state::require_init(&s)?;
        let (_, f) = function(&s, hfunc)?;
        out(name, f.name.as_ptr())
    })
}

/// `cuFuncGetModule`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuFuncGetModule(hmod: *mut CUmodule, hfunc: CUfunction) -> CUresult {
    api!("cuFuncGetModule", {
        let s = state::state();
        state::require_init(&s)?;
        let (_, f) = function(&s, hfunc)?;
        out(hmod, state::handle(Kind::Module, f.module))
    })
}

/// `cuLaunchKernel`: checked against the device's limits at once (see
/// `check_launch`), run in stream order. A fault inside the kernel (illegal address,
/// ...) is a sticky error of the context.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuLaunchKernel(
    f: CUfunction,
    gx: c_uint,
    gy: c_uint,
    gz: c_uint,
    bx: c_uint,
    by: c_uint,
    bz: c_uint,
    shared: c_uint,
    stream_h: CUstream,
    params: *mut *mut c_void,
    extra: *mut *mut c_void,
) -> CUresult {
    api!("cuLaunchKernel", {
        let cfg = LaunchConfig {
            grid: [gx, gy, gz],
            block: [bx, by, bz],
            dynamic_shared_bytes: shared,
        };
        let ctx = state::current_ctx(&state::state())?;
        let (id, f, packed, cluster) = prepare_launch(f, Some(ctx), &cfg, params, extra)?;
        let packed = Arc::new(packed);
        if let Some(r) = crate::graph::capture::divert(stream_h, || {
            crate::graph::NodeKind::Kernel(crate::graph::KernelNode::new(
                id,
                f.clone(),
                cfg,
                cluster,
                Arc::clone(&packed),
            ))
        }) {
            return r;
        }
        let ex = ptx::LaunchExtras {
            cluster,
            cooperative: false,
        };
        stream::submit(ctx, stream_h, kernel_job(f, cfg, ex, packed))
    })
}

fn occupancy_inputs(s: &State, hfunc: CUfunction) -> R<(FunctionEntry, Profile)> {
    state::require_init(s)?;
    let (_, f) = function(s, hfunc)?;
    // In a green context, the grids it suggests fill its SMs.
    let dev = crate::launch::query_profile(s, f.ctx)?.into_owned();
    Ok((f, dev))
}

fn max_active(n: *mut c_int, hfunc: CUfunction, block: c_int, dynamic: usize) -> R {
    let s = state::state();
    let (f, dev) = occupancy_inputs(&s, hfunc)?;
    let k = &f.ptx.kernels()[f.kernel];
    let block = u32::try_from(block).map_err(|_| code::INVALID_VALUE)?;
    if block > k.max_threads_per_block.unwrap_or(1024).min(1024) {
        return Err(code::INVALID_VALUE);
    }
    out(n, blocks_per_sm(&dev, k, block, dynamic as u64) as c_int)
}

/// `cuOccupancyMaxActiveBlocksPerMultiprocessor`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuOccupancyMaxActiveBlocksPerMultiprocessor(
    n: *mut c_int,
    hfunc: CUfunction,
    block: c_int,
    dynamic: usize,
) -> CUresult {
    api!("cuOccupancyMaxActiveBlocksPerMultiprocessor", {
        max_active(n, hfunc, block, dynamic)
    })
}

/// `cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(
    n: *mut c_int,
    hfunc: CUfunction,
    block: c_int,
    dynamic: usize,
    _flags: c_uint,
) -> CUresult {
    api!("cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags", {
        max_active(n, hfunc, block, dynamic)
    })
}

fn potential(
    min_grid: *mut c_int,
    block_out: *mut c_int,
    hfunc: CUfunction,
    b2d: CUoccupancyB2DSize,
    dynamic: usize,
    limit: c_int,
) -> R {
    let s = state::state();
    let (f, dev) = occupancy_inputs(&s, hfunc)?;
    drop(s);
    let k = &f.ptx.kernels()[f.kernel];
    let mut max = k.max_threads_per_block.unwrap_or(1024).min(1024);
    if limit > 0 {
        max = max.min(limit as u32);
    }
    let (mut best_block, mut best_threads, mut best_blocks) = (0, 0, 0);
    let mut block = max - max % 32;
    if block == 0 {
        block = max;
    }
    while block > 0 {
        // SAFETY: the caller's callback, as the C contract says.
        let dynamic = b2d.map_or(dynamic, |cb| unsafe { cb(block as c_int) });
        let blocks = blocks_per_sm(&dev, k, block, dynamic as u64);
        if blocks * block > best_threads {
            (best_block, best_threads, best_blocks) = (block, blocks * block, blocks);
        }
        block = block.saturating_sub(32);
    }
    out(block_out, best_block as c_int)?;
    let grid = best_blocks
        .saturating_mul(dev.sm_count)
        .min(c_int::MAX as u32);
    out(min_grid, grid as c_int)
}

/// `cuOccupancyMaxPotentialBlockSize`: the block size with the most resident threads
/// (largest on ties), and the grid that fills the device with it.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuOccupancyMaxPotentialBlockSize(
    min_grid: *mut c_int,
    block: *mut c_int,
    hfunc: CUfunction,
    b2d: CUoccupancyB2DSize,
    dynamic: usize,
    limit: c_int,
) -> CUresult {
    api!("cuOccupancyMaxPotentialBlockSize", {
        potential(min_grid, block, hfunc, b2d, dynamic, limit)
    })
}

/// `cuOccupancyMaxPotentialBlockSizeWithFlags`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuOccupancyMaxPotentialBlockSizeWithFlags(
    min_grid: *mut c_int,
    block: *mut c_int,
    hfunc: CUfunction,
    b2d: CUoccupancyB2DSize,
    dynamic: usize,
    limit: c_int,
    _flags: c_uint,
) -> CUresult {
    api!("cuOccupancyMaxPotentialBlockSizeWithFlags", {
        potential(min_grid, block, hfunc, b2d, dynamic, limit)
    })
}

/// `cuOccupancyAvailableDynamicSMemPerBlock`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuOccupancyAvailableDynamicSMemPerBlock(
    bytes: *mut usize,
    hfunc: CUfunction,
    blocks: c_int,
    block: c_int,
) -> CUresult {
    api!("cuOccupancyAvailableDynamicSMemPerBlock", {
        let s = state::state();
        let (f, dev) = occupancy_inputs(&s, hfunc)?;
        let k = &f.ptx.kernels()[f.kernel];
        if blocks <= 0 || block <= 0 || blocks_per_sm(&dev, k, block as u32, 0) < blocks as u32 {
            return out(bytes, 0);
        }
        let per_block = (dev.shared_per_sm() / blocks as u32)
            .saturating_sub(RESERVED_SHARED + k.static_shared_bytes);
        out(
            bytes,
            per_block.min(
                dev.shared_per_block_optin()
                    - k.static_shared_bytes.min(dev.shared_per_block_optin()),
            ) as usize,
        )
    })
}

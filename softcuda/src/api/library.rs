//! Context-independent loading, `cuLibrary*` and `cuKernel*`.
//!
//! A library is loaded without a context: its PTX (text, a fatbin's PTX, or a linked
//! image) is checked once at load — compiled for the newest device (or
//! `CU_JIT_TARGET`), with the JIT logs filled as by `cuModuleLoadDataEx` — and its
//! kernels get `CUkernel` handles. The first use in a context (`cuKernelGetFunction`,
//! `cuLibraryGetModule`, `cuLibraryGetGlobal`) materialises it there: the PTX is
//! compiled for that context's device and loaded as a module of that context, with
//! its own copy of the library's variables (so globals are per context). Unloading
//! the library unloads those modules (after draining their contexts' streams) and
//! invalidates its kernels and their functions. A context's destruction takes its
//! module with it; a later use in another context materialises again.
//!
//! Kernel attributes (`cuKernelGetAttribute` / `cuKernelSetAttribute`) are per device:
//! the dynamic shared memory opt-in set for a device applies to the functions of the
//! kernel in every context of that device, existing and future. Library options:
//! `CU_LIBRARY_BINARY_IS_PRESERVED` is accepted (softcuda copies the image anyway);
//! `CU_LIBRARY_HOST_UNIVERSAL_FUNCTION_AND_DATA_TABLE` is `CUDA_ERROR_NOT_SUPPORTED`
//! (there is no host-side table), as are `cuLibraryGetManaged`,
//! `cuLibraryGetUnifiedFunction` and `cuKernelSetCacheConfig` (not exported).

use super::{c_text, out};
use crate::devalloc::{Removed, free_global};
use crate::image::{function_of, install, parse_options, ptx_text, write_global};
use crate::launch::{DEFAULT_SHARED, attribute_of};
use crate::ptx;
pub use crate::state::entries::{CUlibrary, KernelEntry, LibraryEntry};
use crate::state::{self, Kind, R, State};
use crate::types::*;
use core::ffi::{CStr, c_char, c_int, c_uint, c_void};
use std::collections::HashMap;
use std::ffi::CString;
use std::sync::Arc;

fn library_id(h: CUlibrary) -> R<u64> {
    state::id_of(Kind::Library, h).ok_or(code::INVALID_HANDLE)
}

fn kernel(s: &State, h: CUkernel) -> R<&KernelEntry> {
    let id = state::id_of(Kind::Kernel, h).ok_or(code::INVALID_HANDLE)?;
    s.kernels.get(&id).ok_or(code::INVALID_HANDLE)
}

fn library(s: &State, id: u64) -> R<&LibraryEntry> {
    s.libraries.get(&id).ok_or(code::INVALID_HANDLE)
}

/// Checks the library options.
fn library_options(n: c_uint, options: *const c_uint, values: *mut *mut c_void) -> R {
    if n > 0 && (options.is_null() || values.is_null()) {
        return Err(code::INVALID_VALUE);
    }
    for i in 0..n as usize {
        // SAFETY: the array holds `n` entries, by the C contract.
        match unsafe { *options.add(i) } {
            1 => {}                               // BINARY_IS_PRESERVED
            0 => return Err(code::NOT_SUPPORTED), // HOST_UNIVERSAL_FUNCTION_AND_DATA_TABLE
            _ => return Err(code::INVALID_VALUE),
        }
    }
    Ok(())
}

#[allow(clippy::too_many_arguments)]
fn load(
    plib: *mut CUlibrary,
    image: *const c_void,
    jn: c_uint,
    jopts: *const c_uint,
    jvalues: *mut *mut c_void,
    ln: c_uint,
    lopts: *const c_uint,
    lvalues: *mut *mut c_void,
) -> R {
    if plib.is_null() {
        return Err(code::INVALID_VALUE);
    }
    let newest = {
        let s = state::state();
        state::require_init(&s)?;
        s.config
            .devices
            .iter()
            .map(|d| d.cc.0 * 10 + d.cc.1)
            .max()
            .ok_or(code::NO_DEVICE)?
    };
    library_options(ln, lopts, lvalues)?;
    let jit = parse_options(jn, jopts, jvalues, newest)?;
    let text = ptx_text(image, jit.opts.target_sm)?;
    let module = jit.compile(&text, jvalues)?;
    let mut s = state::state();
    let id = s.next_id();
    let mut kernels = Vec::with_capacity(module.kernels().len());
    for (index, k) in module.kernels().iter().enumerate() {
        let kid = s.next_id();
        let name = Arc::new(CString::new(k.name.as_str()).map_err(|_| code::INVALID_PTX)?);
        s.kernels.insert(
            kid,
            KernelEntry {
                library: id,
                index,
                name,
            },
        );
        kernels.push(kid);
    }
    s.libraries.insert(
        id,
        LibraryEntry {
            text: Arc::new(text),
            opts: jit.opts,
            ptx: Arc::new(module),
            kernels,
            modules: HashMap::new(),
            shared: HashMap::new(),
        },
    );
    out(plib, state::handle(Kind::Library, id))
}

/// `cuLibraryLoadData`: PTX text, a fatbin embedding PTX, or a linked image
/// (`cuLinkComplete`). No context is needed.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuLibraryLoadData(
    plib: *mut CUlibrary,
    code: *const c_void,
    jit_options: *mut c_uint,
    jit_values: *mut *mut c_void,
    jit_n: c_uint,
    lib_options: *mut c_uint,
    lib_values: *mut *mut c_void,
    lib_n: c_uint,
) -> CUresult {
    api!("cuLibraryLoadData", {
        load(
            plib,
            code,
            jit_n,
            jit_options,
            jit_values,
            lib_n,
            lib_options,
            lib_values,
        )
    })
}

/// `cuLibraryLoadFromFile`: a file holding what `cuLibraryLoadData` takes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuLibraryLoadFromFile(
    plib: *mut CUlibrary,
    path: *const c_char,
    jit_options: *mut c_uint,
    jit_values: *mut *mut c_void,
    jit_n: c_uint,
    lib_options: *mut c_uint,
    lib_values: *mut *mut c_void,
    lib_n: c_uint,
) -> CUresult {
    api!("cuLibraryLoadFromFile", {
        if path.is_null() {
            return Err(code::INVALID_VALUE);
        }
        // SAFETY: non-null (checked above) and NUL-terminated, by the C contract.
        let path = unsafe { c_text(path, code::INVALID_VALUE) }?;
        let mut bytes = std::fs::read(path).map_err(|_| code::FILE_NOT_FOUND)?;
        // At least 4 bytes (`ptx_text` reads the magic), NUL-terminated.
        bytes.extend_from_slice(&[0; 4]);
        load(
            plib,
            bytes.as_ptr().cast(),
            jit_n,
            jit_options,
            jit_values,
            lib_n,
            lib_options,
            lib_values,
        )
    })
}

/// `cuLibraryUnload`: its modules (one per context it was used in) are unloaded, its
/// kernels and their functions become invalid handles.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuLibraryUnload(h: CUlibrary) -> CUresult {
    api!("cuLibraryUnload", {
        let id = library_id(h)?;
        let ctxs: Vec<u64> = {
            let s = state::state();
            state::require_init(&s)?;
            library(&s, id)?.modules.keys().copied().collect()
        };
        for c in ctxs {
            crate::stream::drain(Some(c));
        }
        let mut s = state::state();
        let lib = s.libraries.remove(&id).ok_or(code::INVALID_HANDLE)?;
        for k in &lib.kernels {
            s.kernels.remove(k);
        }
        let mut removed = Removed::default();
        for m in lib.modules.values() {
            s.functions.retain(|_, f| f.module != *m);
            if let Some(entry) = s.modules.remove(m) {
                for &a in entry.global_addrs.iter() {
                    removed.merge(free_global(&mut s, a));
                }
            }
        }
        drop(s);
        removed.finish();
        Ok(())
    })
}

/// The module of library `lib` in the current context, materialised on first use.
fn module_in(lib: u64) -> R<u64> {
    let (ctx, text, opts) = {
        let s = state::state();
        let ctx = state::current_ctx(&s)?;
        let l = library(&s, lib)?;
        if let Some(m) = l.modules.get(&ctx).filter(|m| s.modules.contains_key(m)) {
            return Ok(*m);
        }
        let (major, minor) = s.config.devices[s.context(ctx)?.device].cc;
        let mut opts = l.opts.clone();
        opts.target_sm = major * 10 + minor;
        (ctx, Arc::clone(&l.text), opts)
    };
    // Compiled without the lock; checked again under it.
    let (module, _) = ptx::Module::load(&text, &opts).map_err(|_| code::NO_BINARY_FOR_GPU)?;
    let s = state::state();
    let l = library(&s, lib)?;
    if let Some(m) = l.modules.get(&ctx).filter(|m| s.modules.contains_key(m)) {
        return Ok(*m);
    }
    s.context(ctx)?;
    let (mut s, id) = install(s, ctx, module)?;
    if let Some(l) = s.libraries.get_mut(&lib) {
        l.modules.insert(ctx, id);
    }
    Ok(id)
}

/// `cuLibraryGetModule`: the library's module in the current context.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuLibraryGetModule(pmod: *mut CUmodule, h: CUlibrary) -> CUresult {
    api!("cuLibraryGetModule", {
        if pmod.is_null() {
            return Err(code::INVALID_VALUE);
        }
        let m = module_in(library_id(h)?)?;
        out(pmod, state::handle(Kind::Module, m))
    })
}

/// `cuLibraryGetKernel`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuLibraryGetKernel(
    pkernel: *mut CUkernel,
    h: CUlibrary,
    name: *const c_char,
) -> CUresult {
    api!("cuLibraryGetKernel", {
        if pkernel.is_null() || name.is_null() {
            return Err(code::INVALID_VALUE);
        }
        // SAFETY: a NUL-terminated name, by the C contract.
        let name = unsafe { CStr::from_ptr(name) };
        let id = library_id(h)?;
        let s = state::state();
        state::require_init(&s)?;
        let l = library(&s, id)?;
        let k = l
            .kernels
            .iter()
            .find(|k| s.kernels.get(k).is_some_and(|e| e.name.as_c_str() == name))
            .ok_or(code::NOT_FOUND)?;
        out(pkernel, state::handle(Kind::Kernel, *k))
    })
}

/// `cuLibraryGetKernelCount`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuLibraryGetKernelCount(count: *mut c_uint, h: CUlibrary) -> CUresult {
    api!("cuLibraryGetKernelCount", {
        let id = library_id(h)?;
        let s = state::state();
        state::require_init(&s)?;
        out(count, library(&s, id)?.kernels.len() as c_uint)
    })
}

/// `cuLibraryEnumerateKernels`: the first `n` kernels, in source order.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuLibraryEnumerateKernels(
    kernels: *mut CUkernel,
    n: c_uint,
    h: CUlibrary,
) -> CUresult {
    api!("cuLibraryEnumerateKernels", {
        if kernels.is_null() {
            return Err(code::INVALID_VALUE);
        }
        let id = library_id(h)?;
        let s = state::state();
        state::require_init(&s)?;
        for (i, k) in library(&s, id)?.kernels.iter().take(n as usize).enumerate() {
            // SAFETY: the array holds `n` handles, by the C contract; `i < n`.
            out(unsafe { kernels.add(i) }, state::handle(Kind::Kernel, *k))?;
        }
        Ok(())
    })
}

/// `cuLibraryGetGlobal`: the current context's copy of a library variable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuLibraryGetGlobal(
    dptr: *mut CUdeviceptr,
    bytes: *mut usize,
    h: CUlibrary,
    name: *const c_char,
) -> CUresult {
    api!("cuLibraryGetGlobal", {
        if name.is_null() {
            return Err(code::INVALID_VALUE);
        }
        // SAFETY: non-null (checked above) and NUL-terminated, by the C contract.
        let name = unsafe { c_text(name, code::NOT_FOUND) }?;
        let m = module_in(library_id(h)?)?;
        let s = state::state();
        write_global(
            s.modules.get(&m).ok_or(code::INVALID_HANDLE)?,
            name,
            dptr,
            bytes,
        )
    })
}

/// `cuKernelGetFunction`: the kernel's function in the current context.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuKernelGetFunction(pf: *mut CUfunction, h: CUkernel) -> CUresult {
    api!("cuKernelGetFunction", {
        if pf.is_null() {
            return Err(code::INVALID_VALUE);
        }
        let (lib, index) = {
            let s = state::state();
            state::require_init(&s)?;
            let k = kernel(&s, h)?;
            (k.library, k.index)
        };
        let m = module_in(lib)?;
        let mut s = state::state();
        let ctx = s.modules.get(&m).ok_or(code::INVALID_HANDLE)?.ctx;
        let device = s.context(ctx)?.device;
        let shared = library(&s, lib)?
            .shared
            .get(&(index, device))
            .copied()
            .unwrap_or(DEFAULT_SHARED);
        let f = function_of(&mut s, m, index, shared)?;
        out(pf, state::handle(Kind::Function, f))
    })
}

/// `cuKernelGetName`: valid while the library is loaded.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuKernelGetName(name: *mut *const c_char, h: CUkernel) -> CUresult {
    api!("cuKernelGetName", {
        let s = state::state();
        state::require_init(&s)?;
        out(name, kernel(&s, h)?.name.as_ptr())
    })
}

/// `cuKernelGetLibrary`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuKernelGetLibrary(plib: *mut CUlibrary, h: CUkernel) -> CUresult {
    api!("cuKernelGetLibrary", {
        let s = state::state();
        state::require_init(&s)?;
        out(plib, state::handle(Kind::Library, kernel(&s, h)?.library))
    })
}

/// `cuKernelGetParamInfo`: offset and size of parameter `index`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuKernelGetParamInfo(
    h: CUkernel,
    index: usize,
    offset: *mut usize,
    size: *mut usize,
) -> CUresult {
    api!("cuKernelGetParamInfo", {
        let s = state::state();
        state::require_init(&s)?;
        let k = kernel(&s, h)?;
        let p = library(&s, k.library)?
            .ptx
            .kernels()
            .get(k.index)
            .and_then(|k| k.params.get(index))
            .ok_or(code::INVALID_VALUE)?;
        out(offset, p.offset as usize)?;
        if !size.is_null() {
            out(size, p.size as usize)?;
        }
        Ok(())
    })
}

/// `cuKernelGetParamCount` (CUDA 13.2): how many parameters the kernel declares.
/// `cuGetProcAddress` hands it out only when softcuda reports 13.2 or newer
/// (`SOFTCUDA_VERSION`).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuKernelGetParamCount(h: CUkernel, count: *mut usize) -> CUresult {
    api!("cuKernelGetParamCount", {
        let s = state::state();
        state::require_init(&s)?;
        let k = kernel(&s, h)?;
        let n = library(&s, k.library)?
            .ptx
            .kernels()
            .get(k.index)
            .map(|k| k.params.len())
            .ok_or(code::INVALID_HANDLE)?;
        out(count, n)
    })
}

fn device_index(s: &State, dev: c_int) -> R<usize> {
    usize::try_from(dev)
        .ok()
        .filter(|d| *d < s.config.devices.len())
        .ok_or(code::INVALID_DEVICE)
}

/// `cuKernelGetAttribute`: as `cuFuncGetAttribute`, for device `dev`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuKernelGetAttribute(
    value: *mut c_int,
    attr: c_uint,
    h: CUkernel,
    dev: c_int,
) -> CUresult {
    api!("cuKernelGetAttribute", {
        let s = state::state();
        state::require_init(&s)?;
        let d = device_index(&s, dev)?;
        let k = kernel(&s, h)?;
        let l = library(&s, k.library)?;
        let kern = l.ptx.kernels().get(k.index).ok_or(code::INVALID_HANDLE)?;
        let shared = l
            .shared
            .get(&(k.index, d))
            .copied()
            .unwrap_or(DEFAULT_SHARED);
        let profile = s.config.devices.get(d).ok_or(code::INVALID_DEVICE)?;
        out(value, attribute_of(profile, kern, shared, attr)?)
    })
}

/// `cuKernelSetAttribute`: the dynamic shared memory opt-in (for device `dev`: its
/// functions in every context of that device) and the carveout preference.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuKernelSetAttribute(
    attr: c_uint,
    value: c_int,
    h: CUkernel,
    dev: c_int,
) -> CUresult {
    api!("cuKernelSetAttribute", {
        let mut s = state::state();
        state::require_init(&s)?;
        let d = device_index(&s, dev)?;
        let (lib, index) = {
            let k = kernel(&s, h)?;
            (k.library, k.index)
        };
        match attr {
            8 => {
                let l = library(&s, lib)?;
                let stat = l
                    .ptx
                    .kernels()
                    .get(index)
                    .ok_or(code::INVALID_HANDLE)?
                    .static_shared_bytes;
                let optin = s.config.devices[d].shared_per_block_optin();
                let v = u32::try_from(value).map_err(|_| code::INVALID_VALUE)?;
                if v.saturating_add(stat) > optin {
                    return Err(code::INVALID_VALUE);
                }
                let shared = (v + stat).max(DEFAULT_SHARED);
                let modules: Vec<u64> = l.modules.values().copied().collect();
                if let Some(l) = s.libraries.get_mut(&lib) {
                    l.shared.insert((index, d), shared);
                }
                let on_device: Vec<u64> = s
                    .contexts
                    .iter()
                    .filter(|(_, c)| c.device == d)
                    .map(|(id, _)| *id)
                    .collect();
                for f in s.functions.values_mut() {
                    if f.kernel == index
                        && modules.contains(&f.module)
                        && on_device.contains(&f.ctx)
                    {
                        f.max_dynamic_shared = shared;
                    }
                }
                Ok(())
            }
            9 if (-1..=100).contains(&value) => Ok(()),
            9 => Err(code::INVALID_VALUE),
            _ => Err(code::NOT_SUPPORTED),
        }
    })
}

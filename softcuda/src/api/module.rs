//! Modules (PTX text, fatbins embedding PTX; cubins are refused), functions and their
//! attributes, kernel launch, and occupancy.
//!
//! Occupancy follows a documented model (docs/softcuda.md): resident blocks per SM
//! are limited by threads (warp-rounded), registers (per-warp allocation of 256),
//! shared memory (with 1 KiB reserved per block) and the architecture's block limit.

use super::{c_text, out};
use crate::api::memory::{Removed, allocate_global, free_global};
use crate::device::Profile;
use crate::devmem;
use crate::ptx::{self, LaunchConfig, LaunchError};
use crate::state::{self, FunctionEntry, Kind, ModuleEntry, R, State};
use crate::stream;
use crate::types::*;
use core::ffi::{CStr, c_char, c_int, c_uint, c_void};
use std::ffi::CString;
use std::sync::Arc;

/// Shared memory a block gets without opting in.
pub(crate) const DEFAULT_SHARED: u32 = 48 * 1024;
/// Shared memory the driver reserves per block.
const RESERVED_SHARED: u32 = 1024;

fn module_id(h: CUmodule) -> R<u64> {
    state::id_of(Kind::Module, h).ok_or(code::INVALID_HANDLE)
}

pub(crate) fn function(s: &State, h: CUfunction) -> R<(u64, FunctionEntry)> {
    let id = state::id_of(Kind::Function, h).ok_or(code::INVALID_HANDLE)?;
    s.functions
        .get(&id)
        .cloned()
        .map(|f| (id, f))
        .ok_or(code::INVALID_HANDLE)
}

/// The JIT options of `cuModuleLoadDataEx` that softcuda reads or writes.
pub(crate) struct Jit {
    pub(crate) opts: ptx::JitOptions,
    pub(crate) info: Option<(*mut c_char, usize, usize)>,
    pub(crate) error: Option<(*mut c_char, usize, usize)>,
}

impl Jit {
    /// Compiles `text` with these options, writing the info and error logs through
    /// `values` (the one that does not apply empty); a failure is `INVALID_PTX`.
    pub(crate) fn compile(&self, text: &str, values: *mut *mut c_void) -> R<ptx::Module> {
        match ptx::Module::load(text, &self.opts) {
            Ok((m, info)) => {
                write_log(self.info, values, &info);
                write_log(self.error, values, "");
                Ok(m)
            }
            Err(log) => {
                write_log(self.error, values, &log);
                write_log(self.info, values, "");
                Err(code::INVALID_PTX)
            }
        }
    }
}

pub(crate) fn parse_options(
    n: c_uint,
    options: *const c_uint,
    values: *mut *mut c_void,
    sm: u32,
) -> R<Jit> {
    let mut jit = Jit {
        opts: ptx::JitOptions {
            target_sm: sm,
            max_registers: None,
            verbose: false,
        },
        info: None,
        error: None,
    };
    if n > 0 && (options.is_null() || values.is_null()) {
        return Err(code::INVALID_VALUE);
    }
    let (mut info_buf, mut info_len, mut err_buf, mut err_len) = (None, None, None, None);
    for i in 0..n as usize {
        // SAFETY: both arrays hold `n` entries, by the C contract.
        let (opt, val) = unsafe { (*options.add(i), *values.add(i)) };
        let v = val as usize;
        match opt {
            0 => jit.opts.max_registers = Some(v as u32),
            3 => info_buf = Some((val.cast::<c_char>(), i)),
            4 => info_len = Some((v, i)),
            5 => err_buf = Some((val.cast::<c_char>(), i)),
            6 => err_len = Some((v, i)),
            // CU_JIT_OPTIMIZATION_LEVEL: 0 to 4, as ptxas's -O.
            7 if v > 4 => return Err(code::INVALID_VALUE),
            9 => jit.opts.target_sm = jit_target(v).ok_or(code::INVALID_VALUE)?,
            12 => jit.opts.verbose = v != 0,
            1 | 2 | 7 | 8 | 10 | 11 | 13 | 14 => {} // accepted; they change nothing here
            _ => return Err(code::INVALID_VALUE),
        }
    }
    if let (Some((b, _)), Some((len, slot))) = (info_buf, info_len) {
        jit.info = Some((b, len, slot));
    }
    if let (Some((b, _)), Some((len, slot))) = (err_buf, err_len) {
        jit.error = Some((b, len, slot));
    }
    Ok(jit)
}

/// The SM version of a `CU_JIT_TARGET` value: a `CUjit_target` of cuda.h (12.9),
/// plain (`CU_TARGET_COMPUTE_90`), accelerated (`+ CU_COMPUTE_ACCELERATED_TARGET_BASE`,
/// sm_90 up) or family (`+ CU_COMPUTE_FAMILY_TARGET_BASE`, sm_100 up); `None` for
/// anything else, which the driver refuses.
fn jit_target(v: usize) -> Option<u32> {
    const PLAIN: [usize; 23] = [
        30, 32, 35, 37, 50, 52, 53, 60, 61, 62, 70, 72, 75, 80, 86, 87, 89, 90, 100, 101, 103, 120,
        121,
    ];
    let (base, variant) = (v & 0xFFFF, v >> 16);
    let known = PLAIN.contains(&base)
        && match variant {
            0 => true,
            1 => base >= 90,
            2 => base >= 100,
            _ => false,
        };
    known.then_some(base as u32)
}

/// Writes `log` into a caller's log buffer and the byte count back into its size option.
pub(crate) fn write_log(
    target: Option<(*mut c_char, usize, usize)>,
    values: *mut *mut c_void,
    log: &str,
) {
    let Some((buf, len, slot)) = target else {
        return;
    };
    if buf.is_null() || len == 0 {
        return;
    }
    let n = log.len().min(len - 1);
    // SAFETY: the caller's buffer holds `len` bytes and `values` holds the option
    // array (both by the C contract); we write n + 1 <= len bytes.
    unsafe {
        core::ptr::copy_nonoverlapping(log.as_ptr().cast::<c_char>(), buf, n);
        *buf.add(n) = 0;
        *values.add(slot) = (n + 1) as *mut c_void;
    }
}

/// The PTX inside `image`: text up to its NUL, or the newest usable PTX of a fatbin.
pub(crate) fn ptx_text(image: *const c_void, sm: u32) -> R<String> {
    if image.is_null() {
        return Err(code::INVALID_VALUE);
    }
    let p = image.cast::<u8>();
    // SAFETY: every image starts with at least 4 readable bytes (ELF, fatbin or text);
    // `ptx_text` reads only what the format announces.
    let head = unsafe { core::slice::from_raw_parts(p, 4) };
    if head == b"\x7fELF" {
        return Err(code::NO_BINARY_FOR_GPU); // cubin: softcuda runs PTX only
    }
    let magic = u32::from_le_bytes([head[0], head[1], head[2], head[3]]);
    if magic == 0x466243B1 {
        // __fatBinC_Wrapper_t { magic, version, data, filename }
        // SAFETY: the wrapper's layout, as nvcc emits it.
        let data = unsafe { *p.add(8).cast::<*const u8>() };
        return fatbin_ptx(data, sm);
    }
    if magic == 0xBA55ED50 {
        return fatbin_ptx(p, sm);
    }
    // SAFETY: PTX text is NUL-terminated, by the C contract.
    let text = unsafe { CStr::from_ptr(p.cast::<c_char>()) };
    text.to_str()
        .map(str::to_owned)
        .map_err(|_| code::INVALID_IMAGE)
}

/// The newest uncompressed PTX entry of a fatbin whose architecture is at most `sm`.
fn fatbin_ptx(p: *const u8, sm: u32) -> R<String> {
    let rd32 = |at: usize| -> u32 {
        // SAFETY: inside the fatbin, whose size the header gives.
        unsafe { p.add(at).cast::<u32>().read_unaligned() }
    };
    let rd64 = |at: usize| -> u64 {
        // SAFETY: as above.
        unsafe { p.add(at).cast::<u64>().read_unaligned() }
    };
    if p.is_null() || rd32(0) != 0xBA55ED50 {
        return Err(code::INVALID_IMAGE);
    }
    let header = (rd32(4) >> 16) as usize;
    let total = usize::try_from(rd64(8))
        .ok()
        .and_then(|body| header.checked_add(body))
        .ok_or(code::INVALID_IMAGE)?;
    let mut at = header;
    let mut best: Option<(u32, String)> = None;
    while at + 64 <= total {
        let kind = rd32(at) & 0xFFFF;
        let entry_header = rd32(at + 4) as usize;
        let size = rd64(at + 8) as usize;
        if entry_header
            .checked_add(size)
            .and_then(|n| n.checked_add(at))
            .is_none_or(|e| e > total)
        {
            return Err(code::INVALID_IMAGE); // the entry runs past the fatbin
        }
        let arch = rd32(at + 28);
        let flags = rd64(at + 40);
        let compressed = flags & 0x2000 != 0;
        if kind == 1 && !compressed && arch <= sm && best.as_ref().is_none_or(|(a, _)| arch > *a) {
            // SAFETY: the entry's payload lies inside the fatbin.
            let bytes = unsafe { core::slice::from_raw_parts(p.add(at + entry_header), size) };
            let text = bytes.split(|b| *b == 0).next().unwrap_or_default();
            if let Ok(t) = std::str::from_utf8(text) {
                best = Some((arch, t.to_owned()));
            }
        }
        if entry_header == 0 {
            break;
        }
        at += entry_header + size;
    }
    best.map(|(_, t)| t).ok_or(code::NO_BINARY_FOR_GPU)
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

/// Allocates `module`'s variables in context `ctx` (with their initial values) and
/// registers it: the module's id, and the state lock, still held.
pub(crate) fn install(
    mut s: std::sync::MutexGuard<'static, State>,
    ctx: u64,
    module: ptx::Module,
) -> R<(std::sync::MutexGuard<'static, State>, u64)> {
    let mut addrs = Vec::with_capacity(module.globals().len());
    for g in module.globals() {
        match allocate_global(&mut s, ctx, g.size) {
            Ok(a) => {
                let n = g.init.len().min(g.size as usize);
                // SAFETY: `a` is a fresh allocation of at least `g.size` bytes, which
                // cannot be freed meanwhile (that takes the state lock, held here).
                // It is in the memory map already, so a kernel could reach it: the
                // stores are atomic (`crate::devmem`).
                unsafe { devmem::store(a as *mut u8, g.init.as_ptr(), n) };
                addrs.push(a);
            }
            Err(e) => {
                let mut removed = Removed::default();
                for a in addrs {
                    removed.merge(free_global(&mut s, a));
                }
                drop(s);
                removed.finish();
                return Err(e);
            }
        }
    }
    let id = s.next_id();
    s.modules.insert(
        id,
        ModuleEntry {
            ctx,
            ptx: Arc::new(module),
            global_addrs: Arc::new(addrs),
        },
    );
    Ok((s, id))
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

/// The function of kernel `kernel` of module `module`: the same id every time, a new
/// one (opted in to `max_dynamic_shared` bytes of shared memory) the first time.
pub(crate) fn function_of(
    s: &mut State,
    module: u64,
    kernel: usize,
    max_dynamic_shared: u32,
) -> R<u64> {
    if let Some((fid, _)) = s
        .functions
        .iter()
        .find(|(_, f)| f.module == module && f.kernel == kernel)
    {
        return Ok(*fid);
    }
    let m = s.modules.get(&module).ok_or(code::INVALID_HANDLE)?;
    let k = m.ptx.kernels().get(kernel).ok_or(code::NOT_FOUND)?;
    let entry = FunctionEntry {
        module,
        ctx: m.ctx,
        ptx: Arc::clone(&m.ptx),
        kernel,
        global_addrs: Arc::clone(&m.global_addrs),
        max_dynamic_shared,
        cache_config: 0,
        name: Arc::new(CString::new(k.name.as_str()).map_err(|_| code::INVALID_VALUE)?),
    };
    let fid = s.next_id();
    s.functions.insert(fid, entry);
    Ok(fid)
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

/// Writes the device address and the size of module `m`'s variable `name` through
/// whichever of `dptr` and `bytes` is not null (`NOT_FOUND` if it has no variable of
/// that name): `cuModuleGetGlobal` and `cuLibraryGetGlobal`.
pub(crate) fn write_global(
    m: &ModuleEntry,
    name: &str,
    dptr: *mut CUdeviceptr,
    bytes: *mut usize,
) -> R {
    let (i, g) = m
        .ptx
        .globals()
        .iter()
        .enumerate()
        .find(|(_, g)| g.name == name)
        .ok_or(code::NOT_FOUND)?;
    if !dptr.is_null() {
        out(dptr, *m.global_addrs.get(i).ok_or(code::NOT_FOUND)?)?;
    }
    if !bytes.is_null() {
        out(bytes, g.size as usize)?;
    }
    Ok(())
}

pub(crate) fn device_of(s: &State, ctx: u64) -> R<&Profile> {
    Ok(&s.config.devices[s.context(ctx)?.device])
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
            10..=15 => super::launch_ex::get_func_attribute(id, &f, attr)?,
            _ => attribute_of(dev, k, f.max_dynamic_shared, attr)?,
        };
        out(value, v)
    })
}

/// Function attribute `attr` of kernel `k` on device `dev`, opted in to
/// `max_dynamic_shared` bytes of shared memory.
pub(crate) fn attribute_of(
    dev: &Profile,
    k: &ptx::Kernel,
    max_dynamic_shared: u32,
    attr: c_uint,
) -> R<c_int> {
    let cc = (dev.cc.0 * 10 + dev.cc.1) as c_int;
    let v = match attr {
        0 => k.max_threads_per_block.unwrap_or(1024).min(1024) as c_int,
        1 => k.static_shared_bytes as c_int,
        2 => 0,
        3 => k.local_bytes as c_int,
        4 => k.num_regs as c_int,
        5 | 6 => cc,
        7 => 0,
        8 => max_dynamic_shared.saturating_sub(k.static_shared_bytes) as c_int,
        9 => -1,
        10..=15 => 0,
        _ => return Err(code::INVALID_VALUE),
    };
    Ok(v)
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
                super::launch_ex::set_func_attribute(&s, id, &dev, attr, value)
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

pub(crate) fn launch_error(e: LaunchError) -> CUresult {
    match e {
        LaunchError::IllegalAddress { .. } => code::ILLEGAL_ADDRESS,
        LaunchError::MisalignedAddress { .. } => code::MISALIGNED_ADDRESS,
        LaunchError::IllegalInstruction(_) => code::ILLEGAL_INSTRUCTION,
        LaunchError::Trap => code::LAUNCH_FAILED,
        LaunchError::OutOfResources(_) => code::LAUNCH_OUT_OF_RESOURCES,
        LaunchError::InvalidValue(_) => code::INVALID_VALUE,
    }
}

/// Packs the kernel's parameters from `kernelParams` or the `extra` buffer.
fn pack_params(k: &ptx::Kernel, params: *mut *mut c_void, extra: *mut *mut c_void) -> R<Vec<u8>> {
    let size = k
        .params
        .iter()
        .map(|p| (p.offset + p.size) as usize)
        .max()
        .unwrap_or(0);
    let mut buf = vec![0u8; size];
    match (params.is_null(), extra.is_null()) {
        (false, true) => {
            for (i, p) in k.params.iter().enumerate() {
                // SAFETY: `kernelParams` holds one pointer per kernel parameter, each to
                // a value of that parameter's size (the C contract).
                let src = unsafe { *params.add(i) };
                if src.is_null() {
                    return Err(code::INVALID_VALUE);
                }
                // SAFETY: as above; the destination range lies inside `buf`.
                unsafe {
                    core::ptr::copy_nonoverlapping(
                        src.cast::<u8>(),
                        buf.as_mut_ptr().add(p.offset as usize),
                        p.size as usize,
                    )
                };
            }
        }
        (true, false) => {
            let (mut data, mut len) = (core::ptr::null::<u8>(), None);
            let mut i = 0;
            loop {
                // SAFETY: `extra` is a key/value list ending in CU_LAUNCH_PARAM_END.
                let key = unsafe { *extra.add(i) } as usize;
                match key {
                    0 => break,
                    // SAFETY: each key is followed by its value.
                    1 => data = unsafe { *extra.add(i + 1) }.cast::<u8>(),
                    // SAFETY: the value of BUFFER_SIZE points to a size_t.
                    2 => len = Some(unsafe { *(*extra.add(i + 1)).cast::<usize>() }),
                    _ => return Err(code::INVALID_VALUE),
                }
                i += 2;
            }
            let len = len.ok_or(code::INVALID_VALUE)?;
            if data.is_null() || len < size {
                return Err(code::INVALID_VALUE);
            }
            // SAFETY: the caller's buffer holds `len >= size` bytes.
            unsafe { core::ptr::copy_nonoverlapping(data, buf.as_mut_ptr(), size) };
        }
        (true, true) if k.params.is_empty() => {}
        _ => return Err(code::INVALID_VALUE),
    }
    Ok(buf)
}

/// Checks a launch as the driver does before queuing anything: every grid and block
/// dimension non-zero and within the device's `MAX_GRID_DIM_X/Y/Z` and
/// `MAX_BLOCK_DIM_X/Y/Z`, the block within `MAX_THREADS_PER_BLOCK` and the kernel's
/// own limit (`.maxntid`, `.reqntid`), and the shared memory (static + dynamic)
/// within what the function may use (48 KiB, or what it opted in to, at most the
/// device's `MAX_SHARED_MEMORY_PER_BLOCK_OPTIN`). `CUDA_ERROR_INVALID_VALUE` otherwise;
/// `CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES` for a kernel whose deepest chain of frames
/// known before the launch (recursion aside) needs more than 512 KiB of local memory
/// per thread. Either is non-sticky, and nothing is queued.
///
/// Then the function's cluster shape (compiled in or set with `cuFuncSetAttribute`),
/// if any, as for a launch with that cluster shape
/// (`super::launch_ex::function_cluster`): returned, for the launch to use.
fn check_launch(
    dev: &Profile,
    id: u64,
    f: &FunctionEntry,
    cfg: &LaunchConfig,
) -> R<Option<[u32; 3]>> {
    let limit = |attr: u32| {
        dev.attribute(attr)
            .and_then(|v| u64::try_from(v).ok())
            .unwrap_or(0)
    };
    let k = &f.ptx.kernels()[f.kernel];
    for i in 0..3 {
        let (g, b) = (u64::from(cfg.grid[i]), u64::from(cfg.block[i]));
        // MAX_GRID_DIM_X + i, MAX_BLOCK_DIM_X + i
        if g == 0 || b == 0 || g > limit(5 + i as u32) || b > limit(2 + i as u32) {
            return Err(code::INVALID_VALUE);
        }
    }
    let threads = cfg.block.iter().map(|&b| u64::from(b)).product::<u64>();
    if threads > limit(1)
        || k.max_threads_per_block
            .is_some_and(|m| threads > u64::from(m))
    {
        return Err(code::INVALID_VALUE);
    }
    let shared = u64::from(cfg.dynamic_shared_bytes) + u64::from(k.static_shared_bytes);
    if shared > u64::from(f.max_dynamic_shared) || shared > limit(97) {
        return Err(code::INVALID_VALUE);
    }
    if k.local_bytes as usize > ptx::MAX_STACK {
        // More local memory per thread than the device has: what the driver
        // refuses at the launch as "too many resources requested".
        return Err(code::LAUNCH_OUT_OF_RESOURCES);
    }
    let cluster = super::launch_ex::function_cluster(id, f, dev, cfg)?;
    ptx::check_launch(k, cfg).map_err(|_| code::INVALID_VALUE)?;
    super::launch_ex::check_resident(
        f,
        cfg,
        &ptx::LaunchExtras {
            cluster,
            cooperative: false,
        },
    )?;
    Ok(cluster)
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

/// Looks up kernel `f`, checks a launch of it with `cfg` (`check_launch`; in context
/// `ctx`, if given: `INVALID_CONTEXT` if it is another's) and packs its arguments:
/// the function's id and entry, the argument bytes, and the function's cluster
/// shape (compiled in or set), which every launch of it uses.
pub(crate) fn prepare_launch(
    f: CUfunction,
    ctx: Option<u64>,
    cfg: &LaunchConfig,
    params: *mut *mut c_void,
    extra: *mut *mut c_void,
) -> R<PreparedLaunch> {
    let (id, f, cluster) = {
        let s = state::state();
        let (id, f) = function(&s, f)?;
        if ctx.is_some_and(|c| c != f.ctx) {
            return Err(code::INVALID_CONTEXT);
        }
        let cluster = check_launch(device_of(&s, f.ctx)?, id, &f, cfg)?;
        (id, f, cluster)
    };
    let packed = pack_params(&f.ptx.kernels()[f.kernel], params, extra)?;
    Ok((id, f, packed, cluster))
}

/// What [`prepare_launch`] hands back: the function's id and entry, the packed
/// arguments and the function's cluster shape.
pub(crate) type PreparedLaunch = (u64, FunctionEntry, Vec<u8>, Option<[u32; 3]>);

/// The work of a launch of `f` with `cfg`, the extras `ex` (cluster shape,
/// cooperative) and the packed arguments `packed`. Also what a graph's kernel node
/// runs.
pub(crate) fn kernel_job(
    f: FunctionEntry,
    cfg: LaunchConfig,
    ex: ptx::LaunchExtras,
    packed: Arc<Vec<u8>>,
) -> stream::Job {
    Box::new(move || {
        let k = &f.ptx.kernels()[f.kernel];
        // What the kernel may touch, taken before `Work` (it takes the state lock).
        let mem = state::KernelMemory::of(f.ctx);
        // Held while the kernel runs: the memory it checks stays allocated
        // until it ends (`crate::devmem`, `state::KernelMemory`).
        let _work = devmem::work();
        ptx::launch_ex(&f.ptx, k, &cfg, &ex, &packed, &f.global_addrs, &mem).map_err(launch_error)
    })
}

/// Resident blocks per SM for `block` threads and `dynamic` bytes of shared memory
/// (a `size_t`: any value). A block that needs more shared memory (static plus
/// dynamic) than a block can have on the device
/// (`MAX_SHARED_MEMORY_PER_BLOCK_OPTIN`) fits 0 times, as on the driver. Wide
/// arithmetic throughout: no input overflows.
pub(crate) fn blocks_per_sm(dev: &Profile, k: &ptx::Kernel, block: u32, dynamic: u64) -> u32 {
    if block == 0 {
        return 0;
    }
    let warps = u64::from(block.div_ceil(32));
    let by_threads = u64::from(dev.threads_per_sm()) / (warps * 32);
    let regs_per_warp = (u64::from(k.num_regs.max(1)) * 32).div_ceil(256) * 256;
    let by_regs = 65_536 / (regs_per_warp * warps).max(1);
    let shared = u64::from(k.static_shared_bytes).saturating_add(dynamic);
    if shared > u64::from(dev.shared_per_block_optin()) {
        return 0;
    }
    let by_shared = u64::from(dev.shared_per_sm()) / (shared + u64::from(RESERVED_SHARED));
    let n = u64::from(dev.blocks_per_sm())
        .min(by_threads)
        .min(by_regs)
        .min(by_shared);
    u32::try_from(n).unwrap_or(u32::MAX)
}

fn occupancy_inputs(s: &State, hfunc: CUfunction) -> R<(FunctionEntry, Profile)> {
    state::require_init(s)?;
    let (_, f) = function(s, hfunc)?;
    let dev = device_of(s, f.ctx)?.clone();
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

//! Module images: reading PTX out of what `cuModuleLoadData`, `cuLibraryLoadData` and
//! `cuLinkAddData` are given (PTX text, fatbins embedding PTX), the JIT options and
//! their logs, and installing a compiled module in a context (its variables
//! allocated and initialised, its functions registered).

use crate::devalloc::{Removed, allocate_global, free_global};
use crate::devmem;
use crate::ffi::out;
use crate::ptx;
use crate::state::{FunctionEntry, ModuleEntry, R, State};
use crate::types::*;
use core::ffi::{CStr, c_char, c_uint, c_void};
use std::ffi::CString;
use std::sync::Arc;

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
pub(crate) fn jit_target(v: usize) -> Option<u32> {
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
pub(crate) fn fatbin_ptx(p: *const u8, sm: u32) -> R<String> {
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

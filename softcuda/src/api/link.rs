//! The JIT linker, `cuLink*`: PTX inputs (as text, from a fatbin, or from a file)
//! linked by `crate::ptx::link` into softcuda's own linked-image format, which
//! `cuModuleLoadData(Ex)` and `cuLibraryLoadData` accept.
//!
//! The log buffers given to `cuLinkCreate` (`CU_JIT_INFO_LOG_BUFFER`,
//! `CU_JIT_ERROR_LOG_BUFFER` and their sizes) are filled as by a module load: a
//! syntax error of an input at `cuLinkAddData` (`CUDA_ERROR_INVALID_PTX`), an
//! unresolved or multiply defined symbol at `cuLinkComplete` (nvlink-style,
//! `CUDA_ERROR_INVALID_IMAGE`), a compile error of the linked program there
//! (ptxas-style, naming the input, `CUDA_ERROR_INVALID_PTX`). As on the driver, the
//! option array must stay valid until `cuLinkDestroy` (the log sizes are written back
//! into it).
//!
//! Inputs: `CU_JIT_INPUT_PTX`; `CU_JIT_INPUT_FATBINARY` (its newest PTX the device can
//! run, as `cuModuleLoadFatBinary`); a softcuda linked image under `CUBIN`, `OBJECT`
//! or `LIBRARY` (its units are added: softcuda's form of a device library). Real
//! cubins, host objects, `.a` libraries and NVVM IR are `CUDA_ERROR_NOT_SUPPORTED`:
//! softcuda has no GPU code to link.

use super::{c_text, out};
use crate::image::{parse_options, ptx_text, write_log};
use crate::ptx::{self, link::Unit};
use crate::state::entries::LogTarget;
pub use crate::state::entries::{CUlinkState, LinkEntry};
use crate::state::{self, Kind, R};
use crate::types::*;
use core::ffi::{CStr, c_char, c_uint, c_void};

fn as_target(t: Option<(*mut c_char, usize, usize)>) -> Option<LogTarget> {
    t.map(|(b, len, slot)| (b as usize, len, slot))
}

fn as_ptr(t: Option<LogTarget>) -> Option<(*mut c_char, usize, usize)> {
    t.map(|(b, len, slot)| (b as *mut c_char, len, slot))
}

impl LinkEntry {
    /// Writes `error` and `info` into the caller's log buffers.
    fn log(&self, error: &str, info: &str) {
        let values = self.values as *mut *mut c_void;
        write_log(as_ptr(self.error), values, error);
        write_log(as_ptr(self.info), values, info);
    }
}

fn link_id(h: CUlinkState) -> R<u64> {
    state::id_of(Kind::LinkState, h).ok_or(code::INVALID_HANDLE)
}

/// `cuLinkCreate_v2`: a link for the current context's device.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuLinkCreate_v2(
    n: c_uint,
    options: *mut c_uint,
    values: *mut *mut c_void,
    state_out: *mut CUlinkState,
) -> CUresult {
    api!("cuLinkCreate", {
        if state_out.is_null() {
            return Err(code::INVALID_VALUE);
        }
        let mut s = state::state();
        let ctx = state::current_ctx(&s)?;
        let (major, minor) = s.config.devices[s.context(ctx)?.device].cc;
        let jit = parse_options(n, options, values, major * 10 + minor)?;
        let entry = LinkEntry {
            opts: jit.opts,
            info: as_target(jit.info),
            error: as_target(jit.error),
            values: values as usize,
            units: Vec::new(),
            image: None,
        };
        let id = s.next_id();
        s.links.insert(id, entry);
        out(state_out, state::handle(Kind::LinkState, id))
    })
}

/// The units an input of type `kind` holds.
fn units_of(kind: c_uint, bytes: &[u8], name: &str, sm: u32) -> R<Vec<Unit>> {
    let text = |b: &[u8]| -> R<String> {
        let t = b.split(|c| *c == 0).next().unwrap_or_default();
        std::str::from_utf8(t)
            .map(str::to_owned)
            .map_err(|_| code::INVALID_IMAGE)
    };
    let linked = |b: &[u8]| text(b).ok().and_then(|t| ptx::link::parse_image(&t));
    match kind {
        1 => {
            let t = text(bytes)?;
            if let Some(units) = ptx::link::parse_image(&t) {
                return Ok(units);
            }
            Ok(vec![Unit {
                name: name.to_owned(),
                text: t,
            }])
        }
        2 => {
            let magic = bytes
                .first_chunk::<4>()
                .map(|m| u32::from_le_bytes(*m))
                .ok_or(code::INVALID_IMAGE)?;
            if bytes.len() < 16 || !matches!(magic, 0x466243B1 | 0xBA55ED50) {
                return Err(code::INVALID_IMAGE);
            }
            let mut copy = bytes.to_vec();
            copy.push(0);
            // A fatbin (or its wrapper): its header's sizes are trusted as by
            // `cuModuleLoadFatBinary`.
            let t = ptx_text(copy.as_ptr().cast(), sm)?;
            Ok(vec![Unit {
                name: name.to_owned(),
                text: t,
            }])
        }
        0 | 3 | 4 => linked(bytes).ok_or(code::NOT_SUPPORTED),
        5 => Err(code::NOT_SUPPORTED),
        _ => Err(code::INVALID_VALUE),
    }
}

/// Adds an input to link `h`: its units are checked (syntax) at once.
fn add(h: CUlinkState, kind: c_uint, bytes: &[u8], name: &str) -> R {
    let id = link_id(h)?;
    let mut s = state::state();
    state::require_init(&s)?;
    let entry = s.links.get_mut(&id).ok_or(code::INVALID_HANDLE)?;
    let units = units_of(kind, bytes, name, entry.opts.target_sm)?;
    for u in &units {
        if let Err(log) = ptx::link::check_unit(u) {
            entry.log(&log, "");
            return Err(code::INVALID_PTX);
        }
    }
    entry.units.extend(units);
    entry.image = None;
    Ok(())
}

/// The per-input options are checked, and change nothing.
fn check_input_options(n: c_uint, options: *mut c_uint, values: *mut *mut c_void) -> R {
    parse_options(n, options, values, 0).map(drop)
}

/// `cuLinkAddData_v2`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuLinkAddData_v2(
    h: CUlinkState,
    kind: c_uint,
    data: *mut c_void,
    size: usize,
    name: *const c_char,
    n: c_uint,
    options: *mut c_uint,
    values: *mut *mut c_void,
) -> CUresult {
    api!("cuLinkAddData", {
        if data.is_null() || size == 0 {
            return Err(code::INVALID_VALUE);
        }
        check_input_options(n, options, values)?;
        let name = if name.is_null() {
            String::from("<unnamed>")
        } else {
            // SAFETY: a NUL-terminated name, by the C contract.
            unsafe { CStr::from_ptr(name) }
                .to_string_lossy()
                .into_owned()
        };
        // SAFETY: `data` holds `size` bytes, by the C contract.
        let bytes = unsafe { core::slice::from_raw_parts(data.cast::<u8>(), size) };
        add(h, kind, bytes, &name)
    })
}

/// `cuLinkAddFile_v2`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuLinkAddFile_v2(
    h: CUlinkState,
    kind: c_uint,
    path: *const c_char,
    n: c_uint,
    options: *mut c_uint,
    values: *mut *mut c_void,
) -> CUresult {
    api!("cuLinkAddFile", {
        if path.is_null() {
            return Err(code::INVALID_VALUE);
        }
        check_input_options(n, options, values)?;
        // SAFETY: non-null (checked above) and NUL-terminated, by the C contract.
        let path = unsafe { c_text(path, code::INVALID_VALUE) }?;
        let bytes = std::fs::read(path).map_err(|_| code::FILE_NOT_FOUND)?;
        if bytes.is_empty() {
            return Err(code::INVALID_IMAGE);
        }
        add(h, kind, &bytes, path)
    })
}

/// `cuLinkComplete`: links the inputs; the image stays valid until `cuLinkDestroy`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuLinkComplete(
    h: CUlinkState,
    image_out: *mut *mut c_void,
    size_out: *mut usize,
) -> CUresult {
    api!("cuLinkComplete", {
        if image_out.is_null() || size_out.is_null() {
            return Err(code::INVALID_VALUE);
        }
        let id = link_id(h)?;
        let (units, opts) = {
            let s = state::state();
            state::require_init(&s)?;
            let e = s.links.get(&id).ok_or(code::INVALID_HANDLE)?;
            (e.units.clone(), e.opts.clone())
        };
        let result = ptx::link::link(&units, &opts);
        let mut s = state::state();
        let e = s.links.get_mut(&id).ok_or(code::INVALID_HANDLE)?;
        match result {
            Ok((_, info)) => {
                e.log("", &info);
                let image = e.image.insert(ptx::link::image(&units));
                let (p, n) = (image.as_mut_ptr().cast::<c_void>(), image.len());
                out(image_out, p)?;
                out(size_out, n)
            }
            Err(log) => {
                e.log(&log, "");
                Err(if log.starts_with("nvlink") {
                    code::INVALID_IMAGE
                } else {
                    code::INVALID_PTX
                })
            }
        }
    })
}

/// `cuLinkDestroy`: the image of `cuLinkComplete` is freed.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuLinkDestroy(h: CUlinkState) -> CUresult {
    api!("cuLinkDestroy", {
        let id = link_id(h)?;
        let mut s = state::state();
        state::require_init(&s)?;
        s.links.remove(&id).map(drop).ok_or(code::INVALID_HANDLE)
    })
}

//! Initialisation, version and error strings.

use super::out;
use crate::result_codes::CODES;
use crate::state;
use crate::types::{CUresult, code};
use core::ffi::{c_char, c_int, c_uint};

/// `cuInit`: only flags 0 are valid; with no device configured, `NO_DEVICE`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuInit(flags: c_uint) -> CUresult {
    api!("cuInit", {
        if flags != 0 {
            return Err(code::INVALID_VALUE);
        }
        let mut s = state::state();
        if s.config.devices.is_empty() {
            return Err(code::NO_DEVICE);
        }
        s.initialized = true;
        Ok(())
    })
}

/// `cuDriverGetVersion`: the configured version (12090 unless told otherwise).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuDriverGetVersion(version: *mut c_int) -> CUresult {
    api!("cuDriverGetVersion", {
        out(version, state::state().config.version)
    })
}

fn lookup(err: CUresult) -> Option<usize> {
    CODES.binary_search_by_key(&err, |(c, _, _)| *c).ok()
}

/// `cuGetErrorName`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuGetErrorName(error: CUresult, name: *mut *const c_char) -> CUresult {
    api!("cuGetErrorName", {
        let i = lookup(error).ok_or(code::INVALID_VALUE)?;
        out(name, CODES[i].1.as_ptr())
    })
}

/// `cuGetErrorString`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuGetErrorString(error: CUresult, text: *mut *const c_char) -> CUresult {
    api!("cuGetErrorString", {
        let i = lookup(error).ok_or(code::INVALID_VALUE)?;
        out(text, CODES[i].2.as_ptr())
    })
}

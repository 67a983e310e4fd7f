//! The C side of a call: writing out-parameters and reading C strings, for every
//! layer that answers through the caller's pointers.

use crate::state::R;
use crate::types::{CUresult, code};

/// Writes `v` through the out-pointer `p`; `INVALID_VALUE` if it is null.
pub(crate) fn out<T>(p: *mut T, v: T) -> R {
    if p.is_null() {
        return Err(code::INVALID_VALUE);
    }
    // SAFETY: the C contract of every Driver API out-parameter: non-null means a valid,
    // writable `T`.
    unsafe { p.write(v) };
    Ok(())
}

/// The text of the caller's C string `p`; `bad` if it is not UTF-8.
///
/// # Safety
///
/// `p` is non-null and points to a NUL-terminated string that outlives `'a`.
pub(crate) unsafe fn c_text<'a>(p: *const core::ffi::c_char, bad: CUresult) -> R<&'a str> {
    // SAFETY: by this function's contract.
    unsafe { core::ffi::CStr::from_ptr(p) }
        .to_str()
        .map_err(|_| bad)
}

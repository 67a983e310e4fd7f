//! The exported Driver API functions, grouped as the CUDA documentation groups them.
//!
//! Every function runs its body through `api!`: the call log and fault injection
//! first, then the body, with any panic caught and reported as `CUDA_ERROR_UNKNOWN`
//! (a panic never unwinds into C). Bodies return `Result<(), CUresult>`.

/// Runs an API body: `api!("cuName", { ...; Ok(()) })`.
macro_rules! api {
    ($name:literal, $body:block) => {{
        let run = || -> $crate::state::R {
            $crate::state::enter($name)?;
            $body
        };
        match std::panic::catch_unwind(std::panic::AssertUnwindSafe(run)) {
            Ok(Ok(())) => $crate::types::code::SUCCESS,
            Ok(Err(e)) => e,
            Err(_) => $crate::types::code::UNKNOWN,
        }
    }};
}
pub(crate) use api;

pub mod context;
pub mod device;
pub mod graph;
pub mod init;
pub mod launch_ex;
pub mod library;
pub mod link;
pub mod managed;
pub mod memory;
pub mod module;
pub mod nvml;
pub mod pool;
pub mod proc;
pub mod stream;
pub mod tensor_map;
pub mod unimplemented;

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

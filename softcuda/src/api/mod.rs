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

pub mod array;
pub mod context;
pub mod device;
pub mod external;
pub mod graph;
pub mod green;
pub mod init;
pub mod ipc;
pub mod launch_ex;
pub mod library;
pub mod link;
pub mod managed;
pub mod memory;
pub mod module;
pub mod nvml;
pub mod pool;
pub mod pool_ipc;
pub mod proc;
pub mod stream;
pub mod tensor_map;
pub mod texture;
pub mod unimplemented;
pub mod vmm;

pub(crate) use crate::ffi::{c_text, out};

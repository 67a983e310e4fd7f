//! Launch tracing: every kernel launch ([`Function::launch`](crate::module::Function),
//! `launch_with`, `launch_cooperative`) runs inside a `tracing` span at `TRACE` level,
//! target [`LAUNCH_TARGET`], named `"launch"`, with the fields
//!
//! | field          | value                                                              |
//! |----------------|--------------------------------------------------------------------|
//! | `kernel`       | the kernel's name (`cuFuncGetName`, asked only when the field is recorded; `<unknown: …>` where the driver cannot say) |
//! | `api`          | `"cuLaunchKernel"` or `"cuLaunchKernelEx"`                          |
//! | `grid`         | `(x, y, z)`                                                        |
//! | `block`        | `(x, y, z)`                                                        |
//! | `shared_bytes` | dynamic shared memory, bytes                                       |
//! | `stream`       | the stream handle                                                  |
//! | `cooperative`  | whether the launch is cooperative                                  |
//! | `error`        | recorded after the call when the launch failed                     |
//!
//! # Cost when nobody listens
//!
//! The launch path first compares `TRACE` with `tracing`'s global maximum level (a
//! compile-time constant, then one relaxed atomic load that `tracing` raises when a
//! subscriber wants more — and does not lower again when a scoped subscriber is
//! dropped: after one, launches take the traced path, where the callsite's cached
//! interest turns them away). Only when some subscriber may want `TRACE` does
//! it leave for an out-of-line, `#[cold]` path that builds the span — where
//! `tracing`'s per-callsite interest cache decides, and a subscriber that filters
//! launches out costs one more cached check. The kernel name is never fetched on the
//! launch path: the field holds the function handle and asks the driver only when a
//! subscriber formats it. `Function` stays two words.
//!
//! Builds that want the check gone entirely can cap `tracing`'s level statically
//! (`tracing`'s `max_level_debug` / `release_max_level_*` features): the comparison
//! is then a constant and the traced path is dead code.

use crate::loader::Driver;
use crate::sys::{CUfunction, CUresult, CUstream};
use core::fmt;

/// The `tracing` target of the launch spans (filter on it, e.g.
/// `RUST_LOG=oxicuda_driver::launch=trace` with `tracing-subscriber`'s `EnvFilter`).
pub const LAUNCH_TARGET: &str = "oxicuda_driver::launch";

/// Whether some subscriber may want a `TRACE` span: the compile-time cap and the
/// global maximum level `tracing` maintains (one relaxed load). The exact, per-callsite
/// answer is `tracing`'s, on the cold path.
#[inline(always)]
pub(crate) fn may_trace() -> bool {
    tracing::Level::TRACE <= tracing::level_filters::STATIC_MAX_LEVEL
        && tracing::Level::TRACE <= tracing::level_filters::LevelFilter::current()
}

/// What a launch span records about the launch.
#[derive(Clone, Copy)]
pub(crate) struct Launch {
    pub driver: &'static Driver,
    pub function: CUfunction,
    pub api: &'static str,
    pub grid: (u32, u32, u32),
    pub block: (u32, u32, u32),
    pub shared_bytes: u32,
    pub stream: CUstream,
    pub cooperative: bool,
}

/// Runs `call` (the launch itself) inside its span, recording the error of a failed
/// launch. Out of line and cold: the launch path holds only the [`may_trace`] check;
/// the arguments are already in place, and `call` only refers to them.
#[cold]
#[inline(never)]
pub(crate) fn traced(
    l: &Launch,
    call: impl FnOnce() -> Result<(), crate::CudaError>,
) -> Result<(), crate::CudaError> {
    let span = tracing::trace_span!(
        target: LAUNCH_TARGET,
        "launch",
        kernel = %KernelName { driver: l.driver, function: l.function },
        api = l.api,
        grid = ?l.grid,
        block = ?l.block,
        shared_bytes = l.shared_bytes,
        stream = ?l.stream,
        cooperative = l.cooperative,
        error = tracing::field::Empty,
    );
    let r = span.in_scope(call);
    if let Err(e) = &r {
        span.record("error", tracing::field::display(e));
    }
    r
}

/// A kernel's name, asked of the driver (`cuFuncGetName`) only when formatted.
struct KernelName {
    driver: &'static Driver,
    function: CUfunction,
}

impl fmt::Display for KernelName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let get = match self.driver.table().cuFuncGetName() {
            Ok(get) => get,
            Err(e) => return write!(f, "<unknown: {e}>"),
        };
        let mut name: *const core::ffi::c_char = core::ptr::null();
        // SAFETY: a valid out-pointer; the function is alive (its launch is running,
        // on this thread, while the span is built and recorded).
        let r = unsafe { get(&mut name, self.function) };
        // A failure is shown in the field, not returned; a sticky one still marks the
        // bound context, as every other driver failure does.
        crate::activity::note_failure(r);
        if r != CUresult::CUDA_SUCCESS || name.is_null() {
            return write!(f, "<unknown: {r:?}>");
        }
        // SAFETY: the driver returns a NUL-terminated string it owns, valid while the
        // function's module is loaded (it is: see above).
        let name = unsafe { core::ffi::CStr::from_ptr(name) };
        f.write_str(&name.to_string_lossy())
    }
}

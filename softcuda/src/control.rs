//! The control surface for tests: live-handle counts, reset, fault injection, an
//! allocation budget and a log of driver calls. A Rust API, and the same as C exports
//! prefixed `softcuda_`.

use crate::state::{self, Config, LiveCounts};
use crate::types::{CUresult, code};
use core::ffi::{CStr, c_char, c_int};

pub use crate::device::Profile;
pub use crate::state::{Config as SoftConfig, LiveCounts as Counts, PeerPerf};

/// Objects still alive, per kind.
pub fn live_counts() -> LiveCounts {
    state::live_counts()
}

/// Destroys every context (with all it owns), forgets every primary-context retain,
/// injected faults and the call log, and returns the driver to its state before
/// `cuInit`. For tests that must start from nothing; other threads' context stacks
/// then name destroyed contexts (`CUDA_ERROR_INVALID_CONTEXT`).
pub fn reset() {
    crate::stream::drain(None);
    let mut removed = crate::devalloc::Removed::default();
    {
        let mut s = state::state();
        let ids: Vec<u64> = s.contexts.keys().copied().collect();
        for id in ids {
            removed.merge(crate::api::context::destroy(&mut s, id, false));
        }
        for p in s.primaries.iter_mut() {
            *p = state::Primary::default();
        }
        s.initialized = false;
        s.libraries.clear();
        s.kernels.clear();
        s.links.clear();
        s.green = Default::default();
    }
    removed.finish();
    crate::external::reset();
    crate::ipc::reset();
    crate::vmm::reset();
    crate::pool::reset();
    crate::managed::reset();
    state::with_stack(Vec::clear);
    crate::graph::reset();
    clear_faults();
    log_calls(false);
}

/// Replaces the devices and the reported version. Refused while any context exists.
pub fn configure(version: i32, devices: Vec<Profile>) -> Result<(), CUresult> {
    state::configure(Config {
        version,
        devices,
        ..state::config()
    })
}

/// Sets the peer topology: `None` lets every distinct pair of devices access each
/// other; `Some(links)` only the directed pairs listed. Refused while any context exists.
pub fn set_peer_links(links: Option<Vec<(usize, usize)>>) -> Result<(), CUresult> {
    let mut c = state::config();
    c.peer_links = links;
    state::configure(c)
}

/// Sets what `cuDeviceGetP2PAttribute` reports for the directed links listed
/// (rank, native atomics, CUDA-array access); every other accessible link reports
/// [`PeerPerf::default`]. Refused while any context exists.
pub fn set_peer_perf(perf: Vec<((usize, usize), PeerPerf)>) -> Result<(), CUresult> {
    let mut c = state::config();
    c.peer_perf = perf;
    state::configure(c)
}

/// Sets the simulated NVLinks (softcuda's NVML surface): `(a, b, n)` joins devices
/// `a` and `b` by `n` links. Refused while any context exists.
pub fn set_nvlinks(links: Vec<(usize, usize, u32)>) -> Result<(), CUresult> {
    let mut c = state::config();
    c.nvlinks = links;
    state::configure(c)
}

/// The configuration in force.
pub fn config() -> Config {
    state::config()
}

/// `[start, end)` of softcuda's device address space, reserved at the first call (or
/// the first device allocation); `None` if the system granted none (device
/// allocations then fail with out-of-memory). Every device allocation —
/// `cuMemAlloc`, pitched, managed, pool blocks, graph memory, module variables — lies
/// inside it, freed ones stay inside it (inaccessible until a later device allocation
/// reuses them), and no host memory ever does: pinned and registered host memory, and
/// whatever the host allocator hands out, lie outside. A copy whose host side or a
/// `cuMemHostRegister` whose range touches it is refused with
/// `CUDA_ERROR_INVALID_VALUE`.
pub fn device_range() -> Option<(u64, u64)> {
    crate::devspace::bounds()
}

/// A fresh softcuda memory file of `size` bytes (zeroed), the caller's: softcuda's
/// stand-in for memory that Vulkan, OpenGL or another process exports as an opaque
/// file descriptor. `cuImportExternalMemory` (`CU_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD`)
/// accepts it, as it accepts a descriptor from `cuMemExportToShareableHandle`, and
/// `cuMemImportFromShareableHandle` accepts it if `size` is a multiple of 2 MiB. It
/// is a sealed memory file (`memfd_create`, named `softcuda-vmm-dev0`,
/// close-on-exec) that another process can map too. `None` where external memory is
/// not supported (not Linux), for `size` 0, or if the system refuses.
pub fn external_memory_fd(size: u64) -> Option<std::os::fd::OwnedFd> {
    crate::external::memory_file(size)
}

/// A fresh softcuda semaphore file, the caller's: softcuda's stand-in for a
/// semaphore that Vulkan or another process exports as an opaque file descriptor.
/// `cuImportExternalSemaphore` accepts it as a binary (`OPAQUE_FD`) or a timeline
/// (`TIMELINE_SEMAPHORE_FD`) semaphore. It is a sealed 8-byte memory file
/// (`memfd_create`, named `softcuda-semaphore`, close-on-exec) holding the counter,
/// initially 0; every import of it, in this process or another one it is passed
/// to, shares that counter. `None` where external semaphores are not supported
/// (not Linux) or if the system refuses.
pub fn external_semaphore_fd() -> Option<std::os::fd::OwnedFd> {
    crate::external::semaphore_file()
}

/// Makes the `nth` call (1-based, from now) of `function` (its base name, e.g.
/// `cuMemAlloc`) return `code` without doing anything.
pub fn inject_fault(function: &str, nth: u64, code: CUresult) {
    state::inject_fault(function, nth, code);
}

/// Makes allocations fail with out-of-memory once `bytes` more are allocated.
pub fn fail_allocations_after(bytes: u64) {
    state::ALLOCATED.store(0, std::sync::atomic::Ordering::Relaxed);
    state::ALLOC_LIMIT.store(bytes, std::sync::atomic::Ordering::Relaxed);
}

/// Sets the most host memory that the co-resident blocks of one cluster or
/// cooperative launch may take (threads' registers and stacks, shared memory);
/// `None` restores the default (2 GiB). A launch needing more is refused with
/// `CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES` before anything is queued or allocated.
pub fn set_resident_memory_limit(bytes: Option<u64>) {
    crate::ptx::set_resident_limit(bytes);
}

/// With `true`, `cuGraphAddChildGraphNode` takes a child graph with conditional
/// nodes (CUDA documents that it refuses one, as softcuda does by default): for tests
/// that a caller does not rely on that refusal. Process-wide; `false` restores it.
pub fn allow_conditional_children(allowed: bool) {
    crate::api::graph::CONDITIONAL_CHILDREN.store(allowed, std::sync::atomic::Ordering::Relaxed);
}

/// Runs eligible kernels on the lane engine (all the threads of a block together,
/// the default) or, with `false`, every kernel on the reference interpreter (one
/// thread at a time), as `SOFTCUDA_ENGINE=reference` does (which this overrides).
/// Process-wide; for comparing the two and for bisecting a suspected engine bug.
pub fn set_lane_engine(on: bool) {
    crate::ptx::set_lane_engine(on);
}

/// Turns softcuda's sanitizer on or off, as `SOFTCUDA_SANITIZE` does (which this
/// overrides): `"memcheck"`, `"memcheck,initcheck"`, `"all"`, or `""`/`"none"` for
/// off. An unknown tool name is an error naming it, and changes nothing.
/// Process-wide. See `docs/softcuda.md`, "Sanitizer".
pub fn set_sanitize(tools: &str) -> Result<(), String> {
    let set = crate::sanitize::parse(tools)?;
    crate::sanitize::set_tools(set);
    Ok(())
}

/// The sanitizer tools on, as a list for [`set_sanitize`] (`""` when off).
pub fn sanitize_tools() -> String {
    crate::sanitize::names(crate::sanitize::tools())
}

/// The sticky code a kernel's access outside any allocation leaves now:
/// `CUDA_ERROR_ILLEGAL_ADDRESS`, as a GPU gives, or `CUDA_ERROR_LAUNCH_FAILED` while
/// the sanitizer's memcheck is on (as under compute-sanitizer: the access was
/// reported and the launch stopped). For tests that run with and without it.
pub fn fault_code() -> CUresult {
    crate::launch::launch_error(crate::ptx::LaunchError::IllegalAddress { addr: 0, len: 0 })
}

/// Sends the sanitizer's report to the file at `path` (created if need be,
/// appended to), or to standard error (`None`), as `SOFTCUDA_SANITIZE_LOG` does.
pub fn set_sanitize_log(path: Option<&str>) -> std::io::Result<()> {
    crate::sanitize::init_from_env();
    crate::sanitize::report::set_log(path)
}

/// The sanitizer's report printed since the last call (at most 1 MiB of it), and
/// forgets it: for tests, which assert on the `========= ` lines.
pub fn sanitize_report() -> String {
    crate::sanitize::take_report()
}

/// Prints the sanitizer's `========= ERROR SUMMARY: N errors` (with the repeats not
/// shown) now, returns N, and starts counting afresh. The process prints one at
/// exit too, if the sanitizer was ever on.
pub fn sanitize_summary() -> u64 {
    crate::sanitize::summary()
}

/// Clears injected faults and the allocation budget.
pub fn clear_faults() {
    state::clear_faults();
}

/// Starts (clearing) or stops the call log.
pub fn log_calls(on: bool) {
    state::set_logging(on);
}

/// The driver functions called since the log started, by base name, in order.
pub fn call_log() -> Vec<String> {
    state::call_log()
}

/// `softcuda_live_count(kind)`: live objects of `kind` ("contexts", "streams",
/// "events", "modules", "allocations", "host_allocations", "registrations", "graphs",
/// "graph_execs", "libraries", "link_states", "pools", "vmm_allocations",
/// "vmm_reservations", "vmm_mappings", "external_memories", "external_buffers",
/// "external_semaphores", "ipc_memory", "ipc_events", "imported_pools", "pool_imports",
/// "green_contexts", "arrays", "mipmapped_arrays", "textures", "surfaces"); -1 for
/// an unknown kind.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn softcuda_live_count(kind: *const c_char) -> c_int {
    if kind.is_null() {
        return -1;
    }
    // SAFETY: a NUL-terminated string, by the C contract.
    let kind = unsafe { CStr::from_ptr(kind) }.to_bytes();
    let c = live_counts();
    let n = match kind {
        b"contexts" => c.contexts,
        b"streams" => c.streams,
        b"events" => c.events,
        b"modules" => c.modules,
        b"allocations" => c.allocations,
        b"host_allocations" => c.host_allocations,
        b"registrations" => c.registrations,
        b"graphs" => c.graphs,
        b"graph_execs" => c.graph_execs,
        b"libraries" => c.libraries,
        b"link_states" => c.link_states,
        b"pools" => c.pools,
        b"vmm_allocations" => c.vmm_allocations,
        b"vmm_reservations" => c.vmm_reservations,
        b"vmm_mappings" => c.vmm_mappings,
        b"external_memories" => c.external_memories,
        b"external_buffers" => c.external_buffers,
        b"external_semaphores" => c.external_semaphores,
        b"green_contexts" => c.green_contexts,
        b"arrays" => c.arrays,
        b"mipmapped_arrays" => c.mipmapped_arrays,
        b"textures" => c.textures,
        b"surfaces" => c.surfaces,
        b"ipc_memory" => c.ipc_memory,
        b"ipc_events" => c.ipc_events,
        b"imported_pools" => c.imported_pools,
        b"pool_imports" => c.pool_imports,
        _ => return -1,
    };
    n as c_int
}

/// `softcuda_inject_fault(function, nth, code)`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn softcuda_inject_fault(
    function: *const c_char,
    nth: u64,
    code: CUresult,
) -> CUresult {
    if function.is_null() {
        return code::INVALID_VALUE;
    }
    // SAFETY: a NUL-terminated string, by the C contract.
    match unsafe { CStr::from_ptr(function) }.to_str() {
        Ok(f) => {
            inject_fault(f, nth, code);
            code::SUCCESS
        }
        Err(_) => code::INVALID_VALUE,
    }
}

/// `softcuda_reset()`: see [`reset`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn softcuda_reset() {
    reset();
}

/// `softcuda_fail_allocations_after(bytes)`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn softcuda_fail_allocations_after(bytes: u64) {
    fail_allocations_after(bytes);
}

/// `softcuda_clear_faults()`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn softcuda_clear_faults() {
    clear_faults();
}

/// `softcuda_log_calls(on)`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn softcuda_log_calls(on: c_int) {
    log_calls(on != 0);
}

/// `softcuda_call_count(function)`: calls of `function` in the log.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn softcuda_call_count(function: *const c_char) -> c_int {
    if function.is_null() {
        return -1;
    }
    // SAFETY: a NUL-terminated string, by the C contract.
    let f = unsafe { CStr::from_ptr(function) }.to_string_lossy();
    call_log().iter().filter(|c| **c == f).count() as c_int
}

/// `softcuda_set_nvlinks(spec)`: [`set_nvlinks`] with `SOFTCUDA_NVLINK`'s syntax
/// (`0-1x2,2-3`); `CUDA_ERROR_INVALID_VALUE` for a spec that does not parse.
///
/// # Safety
/// `spec` is null or a NUL-terminated string.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn softcuda_set_nvlinks(spec: *const c_char) -> CUresult {
    if spec.is_null() {
        return code::INVALID_VALUE;
    }
    // SAFETY: a NUL-terminated string, by this function's contract.
    let text = unsafe { CStr::from_ptr(spec) }.to_string_lossy();
    match state::parse_nvlinks(&text) {
        Some(links) => set_nvlinks(links).err().unwrap_or(code::SUCCESS),
        None => code::INVALID_VALUE,
    }
}

/// `softcuda_set_sanitize(tools)`: [`set_sanitize`]; `CUDA_ERROR_INVALID_VALUE` for
/// an unknown tool name (reported on the sanitizer's output) or a null `tools`.
///
/// # Safety
/// `tools` is null or a NUL-terminated string.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn softcuda_set_sanitize(tools: *const c_char) -> CUresult {
    if tools.is_null() {
        return code::INVALID_VALUE;
    }
    // SAFETY: a NUL-terminated string, by this function's contract.
    let text = unsafe { CStr::from_ptr(tools) }.to_string_lossy();
    match set_sanitize(&text) {
        Ok(()) => code::SUCCESS,
        Err(e) => {
            crate::sanitize::report::warn(&e);
            code::INVALID_VALUE
        }
    }
}

/// `softcuda_sanitize_summary()`: [`sanitize_summary`] (prints the summary, returns
/// the error count).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn softcuda_sanitize_summary() -> u64 {
    sanitize_summary()
}

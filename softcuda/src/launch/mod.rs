//! Kernel launch below the exports: resolving a function handle, checking a launch
//! configuration against the device and the function, packing the arguments, the
//! job that runs the kernel on a stream, function attributes and the occupancy
//! model (docs/softcuda.md: resident blocks per SM are limited by threads
//! (warp-rounded), registers (per-warp allocation of 256), shared memory (with 1 KiB
//! reserved per block) and the architecture's block limit). Thread-block clusters
//! and co-residency are [`cluster`].

use crate::device::Profile;
use crate::devmem;
use crate::ptx::{self, LaunchConfig, LaunchError};
use crate::state::{self, FunctionEntry, Kind, R, State};
use crate::stream;
use crate::types::*;
use core::ffi::{c_int, c_uint, c_void};
use std::sync::Arc;

pub(crate) mod cluster;

/// Shared memory a block gets without opting in.
pub(crate) const DEFAULT_SHARED: u32 = 48 * 1024;

/// Shared memory the driver reserves per block.
pub(crate) const RESERVED_SHARED: u32 = 1024;

pub(crate) fn function(s: &State, h: CUfunction) -> R<(u64, FunctionEntry)> {
    let id = state::id_of(Kind::Function, h).ok_or(code::INVALID_HANDLE)?;
    s.functions
        .get(&id)
        .cloned()
        .map(|f| (id, f))
        .ok_or(code::INVALID_HANDLE)
}

pub(crate) fn device_of(s: &State, ctx: u64) -> R<&Profile> {
    Ok(&s.config.devices[s.context(ctx)?.device])
}

/// The device as a launch in context `ctx` sees it: for a green context, with the
/// green context's SM count (`crate::green::sm_count`).
pub(crate) fn profile_of(s: &State, ctx: u64) -> R<std::borrow::Cow<'_, Profile>> {
    let dev = device_of(s, ctx)?;
    Ok(match crate::green::sm_count(s, ctx) {
        Some(sm_count) => std::borrow::Cow::Owned(Profile {
            sm_count,
            ..dev.clone()
        }),
        None => std::borrow::Cow::Borrowed(dev),
    })
}

/// The device as an occupancy query about a function of context `ctx` sees it:
/// [`profile_of`] the calling thread's current context if that is a green context
/// on the same device, else of `ctx`.
pub(crate) fn query_profile(s: &State, ctx: u64) -> R<std::borrow::Cow<'_, Profile>> {
    let d = s.context(ctx)?.device;
    let green = state::current().filter(|&c| {
        crate::green::sm_count(s, c).is_some() && s.context(c).is_ok_and(|x| x.device == d)
    });
    profile_of(s, green.unwrap_or(ctx))
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

/// The driver error of a failed launch. Under the sanitizer's memcheck an invalid
/// access is `CUDA_ERROR_LAUNCH_FAILED`, as under compute-sanitizer (it has been
/// reported); otherwise the error a GPU gives.
pub(crate) fn launch_error(e: LaunchError) -> CUresult {
    match e {
        LaunchError::IllegalAddress { .. } | LaunchError::MisalignedAddress { .. }
            if crate::sanitize::on(crate::sanitize::MEMCHECK) =>
        {
            code::LAUNCH_FAILED
        }
        LaunchError::IllegalAddress { .. } => code::ILLEGAL_ADDRESS,
        LaunchError::MisalignedAddress { .. } => code::MISALIGNED_ADDRESS,
        LaunchError::IllegalInstruction(_) => code::ILLEGAL_INSTRUCTION,
        LaunchError::Trap => code::LAUNCH_FAILED,
        LaunchError::OutOfResources(_) => code::LAUNCH_OUT_OF_RESOURCES,
        LaunchError::InvalidValue(_) => code::INVALID_VALUE,
    }
}

/// Packs the kernel's parameters from `kernelParams` or the `extra` buffer.
pub(crate) fn pack_params(
    k: &ptx::Kernel,
    params: *mut *mut c_void,
    extra: *mut *mut c_void,
) -> R<Vec<u8>> {
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
/// (`cluster::function_cluster`): returned, for the launch to use.
pub(crate) fn check_launch(
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
    let cluster = cluster::function_cluster(id, f, dev, cfg)?;
    ptx::check_launch(k, cfg).map_err(|_| code::INVALID_VALUE)?;
    cluster::check_resident(
        f,
        cfg,
        &ptx::LaunchExtras {
            cluster,
            cooperative: false,
        },
    )?;
    Ok(cluster)
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
        let r = ptx::launch_ex(&f.ptx, k, &cfg, &ex, &packed, &f.global_addrs, &mem);
        mem.flush(&k.name);
        r.map_err(launch_error)
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

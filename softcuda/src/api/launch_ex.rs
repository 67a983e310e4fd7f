//! `cuLaunchKernelEx` and its launch attributes, cooperative launch
//! (`cuLaunchCooperativeKernel`), thread-block clusters (the cluster attributes of
//! functions, `cuOccupancyMaxActiveClusters`, `cuOccupancyMaxPotentialClusterSize`).
//!
//! Every launch attribute is honoured or refused with the driver's error, never
//! dropped (docs/softcuda.md, "Extended launch"):
//! - `CLUSTER_DIMENSION` runs the blocks of each cluster co-resident (interleaved) so
//!   that `barrier.cluster` works; compute capability 9.0 only (`NOT_SUPPORTED`
//!   on 8.0); `INVALID_CLUSTER_SIZE` unless each dimension divides the grid and the
//!   cluster has at most 8 blocks (16 once the function allows non-portable sizes)
//!   and fits on one GPC of the occupancy model;
//! - `COOPERATIVE` runs the whole grid co-resident with the grid workspace
//!   (`%envreg1/2`); `COOPERATIVE_LAUNCH_TOO_LARGE` if the grid exceeds resident
//!   blocks per SM (the occupancy model) × SMs; `LAUNCH_OUT_OF_RESOURCES` if the
//!   co-resident blocks (a cooperative grid, or a cluster) would take more host
//!   memory than `ptx::resident_limit` allows;
//! - `PRIORITY`, `MEM_SYNC_DOMAIN(_MAP)`, `ACCESS_POLICY_WINDOW`,
//!   `CLUSTER_SCHEDULING_POLICY_PREFERENCE`, `PREFERRED_SHARED_MEMORY_CARVEOUT` are
//!   validated and recorded ([`last_launch`]): they tune scheduling, caches and
//!   fences, which a sequential interpreter with sequentially consistent fences does
//!   not have, so they change nothing it computes;
//! - `PROGRAMMATIC_STREAM_SERIALIZATION` (9.0 only) permits the next kernel of the
//!   stream to start before this one ends; softcuda runs a stream's work in order,
//!   which is one of the permitted schedules (`griddepcontrol` is not in the
//!   interpreter); `PROGRAMMATIC_EVENT` (9.0 only) records its event when every
//!   block has triggered, which at the latest is when the kernel ends: softcuda
//!   records it then;
//! - `PREFERRED_CLUSTER_DIMENSION` (compute capability 10.0), `LAUNCH_COMPLETION_EVENT`
//!   and `SYNCHRONIZATION_POLICY` and `DEVICE_UPDATABLE_KERNEL_NODE` (not launch
//!   attributes of a stream launch) are refused: `NOT_SUPPORTED` / `INVALID_VALUE`.
//!
//! A function's own cluster shape (`.reqnctapercluster`, or `REQUIRED_CLUSTER_*`
//! set with `cuFuncSetAttribute`) applies to every launch of it, whatever the call
//! (`launch::cluster::function_cluster`, used by `launch::prepare_launch`).
//!
//! A launch with attributes into a capturing stream is `NOT_SUPPORTED` (graph kernel
//! nodes here carry no attributes); without attributes it is an ordinary kernel node.

use super::out;
use crate::device::Profile;
use crate::launch::cluster::*;
pub use crate::launch::cluster::{NON_PORTABLE_CLUSTER, PORTABLE_CLUSTER, SMS_PER_GPC};
use crate::launch::{
    blocks_per_sm, function, kernel_job, prepare_launch, profile_of, query_profile,
};
use crate::ptx::{LaunchConfig, LaunchExtras};
use crate::state::{self, FunctionEntry, R};
use crate::stream;
use crate::types::*;
use core::ffi::{c_int, c_uint, c_void};
use std::sync::{Arc, Mutex};

/// `CUlaunchAttribute`: an id and a 64-byte value union.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct CUlaunchAttribute {
    /// `CUlaunchAttributeID`.
    pub id: c_uint,
    /// Padding.
    pub pad: [u8; 4],
    /// The value (`CUlaunchAttributeValue`), as 8-byte words.
    pub value: [u64; 8],
}

/// `CUlaunchConfig`.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct CUlaunchConfig {
    /// Grid in blocks.
    pub grid: [c_uint; 3],
    /// Block in threads.
    pub block: [c_uint; 3],
    /// Dynamic shared memory per block.
    pub shared_mem_bytes: c_uint,
    /// The stream.
    pub stream: CUstream,
    /// The attributes (`num_attrs` of them; may be null when 0).
    pub attrs: *mut CUlaunchAttribute,
    /// How many.
    pub num_attrs: c_uint,
}

// The C layouts of cuda.h (x86-64): 72 and 56 bytes.
const _: () = assert!(size_of::<CUlaunchAttribute>() == 72 && size_of::<CUlaunchConfig>() == 56);

/// What a launch through `cuLaunchKernelEx` asked for, as softcuda understood it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct LaunchRecord {
    /// The cluster shape, if any.
    pub cluster: Option<[u32; 3]>,
    /// Cooperative (co-resident grid).
    pub cooperative: bool,
    /// `PRIORITY` (clamped to the context's range).
    pub priority: Option<i32>,
    /// `PROGRAMMATIC_STREAM_SERIALIZATION`.
    pub programmatic_serialization: Option<bool>,
    /// `PROGRAMMATIC_EVENT` given.
    pub programmatic_event: bool,
    /// `MEM_SYNC_DOMAIN` (0 default, 1 remote).
    pub mem_sync_domain: Option<u32>,
    /// `MEM_SYNC_DOMAIN_MAP` (default, remote).
    pub mem_sync_domain_map: Option<(u8, u8)>,
    /// `CLUSTER_SCHEDULING_POLICY_PREFERENCE`.
    pub cluster_scheduling_policy: Option<u32>,
    /// `ACCESS_POLICY_WINDOW` (base, bytes).
    pub access_policy_window: Option<(u64, u64)>,
    /// `PREFERRED_SHARED_MEMORY_CARVEOUT`.
    pub carveout: Option<u32>,
}

static LAST: Mutex<Option<LaunchRecord>> = Mutex::new(None);

/// The attributes of the last successful `cuLaunchKernelEx` or
/// `cuLaunchCooperativeKernel` of the process (a test surface: each attribute given
/// reached softcuda).
pub fn last_launch() -> Option<LaunchRecord> {
    *LAST.lock().unwrap_or_else(|e| e.into_inner())
}

/// What the attributes of a launch say: the extras of the run, the record, and
/// the programmatic event to record after it (with its flags).
type ReadAttributes = (LaunchExtras, LaunchRecord, Option<(CUevent, c_uint)>);

/// Reads the attributes of `cfg`: the extras of the launch and what was recorded.
/// Every attribute is validated here, before anything is queued.
fn read_attributes(
    s: &state::State,
    cfg: &CUlaunchConfig,
    id: u64,
    f: &FunctionEntry,
) -> R<ReadAttributes> {
    // The launch's context is the function's: a green context's SMs count.
    let dev = profile_of(s, f.ctx)?;
    let dev = &*dev;
    let hopper = dev.cc.0 >= 9;
    let mut rec = LaunchRecord::default();
    let mut event = None;
    if cfg.num_attrs > 0 && cfg.attrs.is_null() {
        return Err(code::INVALID_VALUE);
    }
    for i in 0..cfg.num_attrs as usize {
        // SAFETY: `attrs` holds `num_attrs` attributes (the C contract).
        let a = unsafe { *cfg.attrs.add(i) };
        let v = a.value;
        let lo = v[0] as u32;
        let hi = (v[0] >> 32) as u32;
        match a.id {
            0 => {} // IGNORE
            1 => {
                // ACCESS_POLICY_WINDOW { base_ptr, num_bytes, hitRatio: f32, hitProp, missProp }
                let bytes = v[1];
                let ratio = f32::from_bits(v[2] as u32);
                let (hit, miss) = ((v[2] >> 32) as u32, v[3] as u32);
                let max = dev.attribute(109).unwrap_or(0) as u64;
                if bytes > max || !(0.0..=1.0).contains(&ratio) || hit > 2 || miss > 2 {
                    return Err(code::INVALID_VALUE);
                }
                rec.access_policy_window = Some((v[0], bytes));
            }
            2 => rec.cooperative = lo != 0,
            3 => return Err(code::INVALID_VALUE), // SYNCHRONIZATION_POLICY: a stream attribute
            4 => {
                let dims = [lo, hi, v[1] as u32];
                if !hopper {
                    return Err(code::NOT_SUPPORTED);
                }
                rec.cluster = Some(dims);
            }
            5 => {
                if lo > 2 {
                    return Err(code::INVALID_VALUE);
                }
                rec.cluster_scheduling_policy = Some(lo);
            }
            6 => {
                if !hopper {
                    return Err(code::NOT_SUPPORTED);
                }
                rec.programmatic_serialization = Some(lo != 0);
            }
            7 => {
                if !hopper {
                    return Err(code::NOT_SUPPORTED);
                }
                // { CUevent event; int flags; int triggerAtBlockStart; }
                let ev = v[0] as usize as CUevent;
                let flags = v[1] as u32;
                if state::id_of(state::Kind::Event, ev).is_none() || flags & !1 != 0 {
                    return Err(code::INVALID_HANDLE);
                }
                rec.programmatic_event = true;
                event = Some((ev, flags));
            }
            8 => rec.priority = Some((lo as i32).clamp(-5, 0)),
            9 => {
                let (d, r) = (v[0] as u8, (v[0] >> 8) as u8);
                let count = dev.attribute(126).unwrap_or(1) as u8;
                if d >= count || r >= count {
                    return Err(code::INVALID_VALUE);
                }
                rec.mem_sync_domain_map = Some((d, r));
            }
            10 => {
                if lo > 1 {
                    return Err(code::INVALID_VALUE);
                }
                rec.mem_sync_domain = Some(lo);
            }
            11 | 12 => return Err(code::NOT_SUPPORTED), // PREFERRED_CLUSTER_DIMENSION, LAUNCH_COMPLETION_EVENT
            14 => {
                let c = lo as i32;
                if !(-1..=100).contains(&c) {
                    return Err(code::INVALID_VALUE);
                }
                rec.carveout = Some(lo);
            }
            _ => return Err(code::INVALID_VALUE), // 13 (graph nodes only) and unknown ids
        }
    }
    let fa = effective_attrs(id, f);
    let required = required_shape(&fa);
    if rec.cluster.is_none() {
        rec.cluster = required;
    }
    if rec.cluster.is_none() && f.ptx.kernels()[f.kernel].explicit_cluster {
        return Err(code::INVALID_CLUSTER_SIZE); // `.explicitcluster` needs a shape
    }
    if let Some(c) = rec.cluster {
        if required.is_some_and(|r| r != c) {
            return Err(code::INVALID_CLUSTER_SIZE);
        }
        check_cluster_shape(dev, f, &fa, c, cfg.grid, cfg.block, cfg.shared_mem_bytes)?;
    }
    if rec.cooperative {
        check_coresident(dev, f, cfg.grid, cfg.block, cfg.shared_mem_bytes)?;
    }
    Ok((
        LaunchExtras {
            cluster: rec.cluster,
            cooperative: rec.cooperative,
        },
        rec,
        event,
    ))
}

/// `COOPERATIVE_LAUNCH_TOO_LARGE` unless the grid fits on the device at once.
fn check_coresident(
    dev: &Profile,
    f: &FunctionEntry,
    grid: [u32; 3],
    block: [u32; 3],
    dynamic: u32,
) -> R {
    let k = &f.ptx.kernels()[f.kernel];
    let threads = block_threads(block)?;
    let max =
        u64::from(blocks_per_sm(dev, k, threads, u64::from(dynamic))) * u64::from(dev.sm_count);
    let blocks = grid
        .iter()
        .fold(1u64, |n, &g| n.saturating_mul(u64::from(g)));
    if blocks > max {
        return Err(code::COOPERATIVE_LAUNCH_TOO_LARGE);
    }
    Ok(())
}

/// Checks, packs and queues a launch of `hf` with `cfg` (and its attributes).
fn launch(
    cfg: &CUlaunchConfig,
    hf: CUfunction,
    params: *mut *mut c_void,
    extra: *mut *mut c_void,
) -> R {
    let lc = LaunchConfig {
        grid: cfg.grid,
        block: cfg.block,
        dynamic_shared_bytes: cfg.shared_mem_bytes,
    };
    let ctx = state::current_ctx(&state::state())?;
    let (id, f, packed, cluster) = prepare_launch(hf, Some(ctx), &lc, params, extra)?;
    let (ex, rec, event) = {
        let s = state::state();
        let (_, f) = function(&s, hf)?;
        read_attributes(&s, cfg, id, &f)?
    };
    check_resident(&f, &lc, &ex)?;
    let packed = Arc::new(packed);
    // Without attributes the launch is an ordinary kernel node (with the
    // function's own cluster shape, if any).
    if crate::graph::capture::is_capturing(cfg.stream) {
        if cfg.num_attrs != 0 {
            return Err(code::NOT_SUPPORTED);
        }
        if let Some(r) = crate::graph::capture::divert(cfg.stream, || {
            crate::graph::NodeKind::Kernel(crate::graph::KernelNode::new(
                id,
                f.clone(),
                lc,
                cluster,
                Arc::clone(&packed),
            ))
        }) {
            return r;
        }
    }
    stream::submit(ctx, cfg.stream, kernel_job(f, lc, ex, packed))?;
    if let Some((ev, flags)) = event {
        // SAFETY: a live event handle (checked above) and the launch's stream.
        let r = unsafe { super::stream::cuEventRecordWithFlags(ev, cfg.stream, flags) };
        if r != code::SUCCESS {
            return Err(r);
        }
    }
    *LAST.lock().unwrap_or_else(|e| e.into_inner()) = Some(rec);
    Ok(())
}

/// `cuLaunchKernelEx`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuLaunchKernelEx(
    config: *const CUlaunchConfig,
    f: CUfunction,
    params: *mut *mut c_void,
    extra: *mut *mut c_void,
) -> CUresult {
    api!("cuLaunchKernelEx", {
        if config.is_null() {
            return Err(code::INVALID_VALUE);
        }
        // SAFETY: non-null: a valid CUlaunchConfig (the C contract).
        let cfg = unsafe { *config };
        launch(&cfg, f, params, extra)
    })
}

/// `cuLaunchCooperativeKernel`: `cuLaunchKernelEx` with the `COOPERATIVE` attribute.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuLaunchCooperativeKernel(
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
) -> CUresult {
    api!("cuLaunchCooperativeKernel", {
        let mut attr = CUlaunchAttribute {
            id: 2,
            pad: [0; 4],
            value: [1, 0, 0, 0, 0, 0, 0, 0],
        };
        let cfg = CUlaunchConfig {
            grid: [gx, gy, gz],
            block: [bx, by, bz],
            shared_mem_bytes: shared,
            stream: stream_h,
            attrs: &mut attr,
            num_attrs: 1,
        };
        launch(&cfg, f, params, core::ptr::null_mut())
    })
}

/// `cuLaunchCooperativeKernelMultiDevice` (deprecated): `NOT_SUPPORTED` (softcuda's
/// devices cannot run one grid together; `COOPERATIVE_MULTI_DEVICE_LAUNCH` is 0).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuLaunchCooperativeKernelMultiDevice(
    _list: *mut c_void,
    _num_devices: c_uint,
    _flags: c_uint,
) -> CUresult {
    api!("cuLaunchCooperativeKernelMultiDevice", {
        Err(code::NOT_SUPPORTED)
    })
}

/// The function and its device for an occupancy query with `config`.
fn cluster_query(
    f: CUfunction,
    config: *const CUlaunchConfig,
) -> R<(CUlaunchConfig, u64, FunctionEntry, Profile)> {
    if config.is_null() {
        return Err(code::INVALID_VALUE);
    }
    // SAFETY: non-null: a valid CUlaunchConfig (the C contract).
    let cfg = unsafe { *config };
    let s = state::state();
    state::require_init(&s)?;
    let (id, fe) = function(&s, f)?;
    let dev = query_profile(&s, fe.ctx)?.into_owned();
    if dev.cc.0 < 9 {
        return Err(code::NOT_SUPPORTED);
    }
    Ok((cfg, id, fe, dev))
}

/// `cuOccupancyMaxActiveClusters`: clusters of the config's cluster shape (its
/// `CLUSTER_DIMENSION` attribute, else the function's required shape) that can be
/// resident at once; a cluster lives on one GPC of `SMS_PER_GPC` SMs.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuOccupancyMaxActiveClusters(
    n: *mut c_int,
    f: CUfunction,
    config: *const CUlaunchConfig,
) -> CUresult {
    api!("cuOccupancyMaxActiveClusters", {
        let (cfg, id, fe, dev) = cluster_query(f, config)?;
        let fa = effective_attrs(id, &fe);
        let threads = block_threads(cfg.block)?;
        let mut cluster = required_shape(&fa);
        for i in 0..cfg.num_attrs as usize {
            if cfg.attrs.is_null() {
                return Err(code::INVALID_VALUE);
            }
            // SAFETY: `attrs` holds `num_attrs` attributes.
            let a = unsafe { *cfg.attrs.add(i) };
            if a.id == 4 {
                cluster = Some([
                    a.value[0] as u32,
                    (a.value[0] >> 32) as u32,
                    a.value[1] as u32,
                ]);
            }
        }
        let c = cluster.ok_or(code::INVALID_CLUSTER_SIZE)?;
        let size = c.iter().fold(1u64, |n, &d| n.saturating_mul(u64::from(d)));
        if size == 0 || size > u64::from(cluster_limit(&fa, &fe)) {
            return Err(code::INVALID_CLUSTER_SIZE);
        }
        let k = &fe.ptx.kernels()[fe.kernel];
        if threads > k.max_threads_per_block.unwrap_or(1024).min(1024) {
            return Err(code::INVALID_VALUE);
        }
        let v = active_clusters(
            &dev,
            &fe,
            threads,
            u64::from(cfg.shared_mem_bytes),
            size as u32,
        );
        out(n, v.min(c_int::MAX as u32) as c_int)
    })
}

/// `cuOccupancyMaxPotentialClusterSize`: the largest cluster (up to 8, or 16 with
/// `NON_PORTABLE_CLUSTER_SIZE_ALLOWED`) of which one fits on a GPC.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuOccupancyMaxPotentialClusterSize(
    n: *mut c_int,
    f: CUfunction,
    config: *const CUlaunchConfig,
) -> CUresult {
    api!("cuOccupancyMaxPotentialClusterSize", {
        let (cfg, id, fe, dev) = cluster_query(f, config)?;
        let fa = effective_attrs(id, &fe);
        let threads = block_threads(cfg.block)?;
        let k = &fe.ptx.kernels()[fe.kernel];
        if threads > k.max_threads_per_block.unwrap_or(1024).min(1024) {
            return Err(code::INVALID_VALUE);
        }
        let fit = blocks_per_sm(&dev, k, threads, u64::from(cfg.shared_mem_bytes))
            .saturating_mul(SMS_PER_GPC);
        out(n, fit.min(cluster_limit(&fa, &fe)) as c_int)
    })
}

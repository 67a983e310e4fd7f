//! Thread-block clusters and co-residency: the cluster attributes of functions
//! (`.reqnctapercluster`, `REQUIRED_CLUSTER_*`, non-portable sizes), the cluster
//! shape every launch of a function uses, and the checks that a cluster or a
//! cooperative grid fits (one GPC of the occupancy model, `ptx::resident_limit`).

use super::blocks_per_sm;
use crate::device::Profile;
use crate::ptx::{self, LaunchConfig, LaunchExtras};
use crate::state::{self, FunctionEntry, R};
use crate::types::*;
use core::ffi::{c_int, c_uint};
use std::collections::HashMap;
use std::sync::Mutex;

/// SMs per GPC in the cluster occupancy model: a cluster's blocks share one GPC.
pub const SMS_PER_GPC: u32 = 16;

/// The portable cluster-size limit.
pub const PORTABLE_CLUSTER: u32 = 8;

/// The limit once `NON_PORTABLE_CLUSTER_SIZE_ALLOWED` is set.
pub const NON_PORTABLE_CLUSTER: u32 = 16;

/// Cluster attributes of a function set with `cuFuncSetAttribute`.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct ClusterAttrs {
    pub(crate) non_portable: bool,
    pub(crate) required: [u32; 3],
    pub(crate) policy: u32,
}

/// By function id; entries of unloaded functions are pruned at each set.
pub(crate) static FUNC_ATTRS: Mutex<Option<HashMap<u64, ClusterAttrs>>> = Mutex::new(None);

pub(crate) fn attrs_of(id: u64) -> ClusterAttrs {
    FUNC_ATTRS
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .as_ref()
        .and_then(|m| m.get(&id).copied())
        .unwrap_or_default()
}

/// The cluster attributes of function `id`: the kernel's directives
/// (`.reqnctapercluster`, `.maxclusterrank`) over what was set.
pub(crate) fn effective_attrs(id: u64, f: &FunctionEntry) -> ClusterAttrs {
    let mut a = attrs_of(id);
    if let Some(d) = f.ptx.kernels()[f.kernel].cluster_dims {
        a.required = d;
    }
    a
}

/// `cuFuncGetAttribute` for the cluster attributes (10..=15).
pub(crate) fn get_func_attribute(id: u64, f: &FunctionEntry, attr: c_uint) -> R<c_int> {
    let a = effective_attrs(id, f);
    let k = &f.ptx.kernels()[f.kernel];
    Ok(match attr {
        10 => c_int::from(k.explicit_cluster || k.cluster_dims.is_some()), // CLUSTER_SIZE_MUST_BE_SET
        11..=13 => a.required[(attr - 11) as usize] as c_int,
        14 => c_int::from(a.non_portable),
        15 => a.policy as c_int,
        _ => return Err(code::INVALID_VALUE),
    })
}

/// `cuFuncSetAttribute` for the cluster attributes: `NOT_SUPPORTED` below compute
/// capability 9.0; `CLUSTER_SIZE_MUST_BE_SET` is read-only.
pub(crate) fn set_func_attribute(
    s: &state::State,
    id: u64,
    dev: &Profile,
    attr: c_uint,
    value: c_int,
) -> R {
    if dev.cc.0 < 9 {
        return Err(code::NOT_SUPPORTED);
    }
    let compiled = s
        .functions
        .get(&id)
        .is_some_and(|f| f.ptx.kernels()[f.kernel].cluster_dims.is_some());
    if compiled && (11..=13).contains(&attr) {
        // Set at compile time (`__cluster_dims__`): the driver refuses to change it.
        return Err(code::NOT_PERMITTED);
    }
    let mut g = FUNC_ATTRS.lock().unwrap_or_else(|e| e.into_inner());
    let map = g.get_or_insert_with(HashMap::new);
    map.retain(|k, _| s.functions.contains_key(k));
    let mut a = map.get(&id).copied().unwrap_or_default();
    match attr {
        11..=13 => {
            let v = u32::try_from(value).map_err(|_| code::INVALID_VALUE)?;
            if v > NON_PORTABLE_CLUSTER {
                return Err(code::INVALID_VALUE);
            }
            a.required[(attr - 11) as usize] = v;
        }
        14 => match value {
            0 | 1 => a.non_portable = value == 1,
            _ => return Err(code::INVALID_VALUE),
        },
        15 => match value {
            0..=2 => a.policy = value as u32,
            _ => return Err(code::INVALID_VALUE),
        },
        _ => return Err(code::INVALID_VALUE),
    }
    map.insert(id, a);
    Ok(())
}

/// The required cluster shape of `a` (set or compiled in), if any: dimensions
/// left at 0 by `cuFuncSetAttribute` count as 1.
pub(crate) fn required_shape(a: &ClusterAttrs) -> Option<[u32; 3]> {
    (a.required != [0; 3]).then(|| a.required.map(|d| d.max(1)))
}

/// The cluster shape that every launch of function `id` uses, whatever the launch
/// call (`cuLaunchKernel`, `cuLaunchCooperativeKernel`, `cuLaunchKernelEx`, a graph
/// kernel node): its `.reqnctapercluster`, else the `REQUIRED_CLUSTER_*` set with
/// `cuFuncSetAttribute`; `None` without one. Checked as a launch's cluster
/// attribute is: compute capability 9.0 (`NOT_SUPPORTED`), each dimension dividing
/// the grid, at most 8 blocks (16 with non-portable sizes allowed, at most
/// `.maxclusterrank`), and fitting on a GPC (`INVALID_CLUSTER_SIZE`). `cfg`'s block
/// has been checked (at most 1024 threads).
pub(crate) fn function_cluster(
    id: u64,
    f: &FunctionEntry,
    dev: &Profile,
    cfg: &LaunchConfig,
) -> R<Option<[u32; 3]>> {
    let fa = effective_attrs(id, f);
    let Some(c) = required_shape(&fa) else {
        return Ok(None);
    };
    if dev.cc.0 < 9 {
        return Err(code::NOT_SUPPORTED);
    }
    check_cluster_shape(
        dev,
        f,
        &fa,
        c,
        cfg.grid,
        cfg.block,
        cfg.dynamic_shared_bytes,
    )?;
    Ok(Some(c))
}

/// `INVALID_CLUSTER_SIZE` unless cluster `c` divides `grid`, holds at most the
/// function's limit of blocks and fits (blocks of `block` threads and `dynamic`
/// bytes) on a GPC.
pub(crate) fn check_cluster_shape(
    dev: &Profile,
    f: &FunctionEntry,
    fa: &ClusterAttrs,
    c: [u32; 3],
    grid: [u32; 3],
    block: [u32; 3],
    dynamic: u32,
) -> R {
    let size = c.iter().fold(1u64, |n, &d| n.saturating_mul(u64::from(d)));
    if c.contains(&0)
        || (0..3).any(|i| !grid[i].is_multiple_of(c[i]))
        || size > u64::from(cluster_limit(fa, f))
    {
        return Err(code::INVALID_CLUSTER_SIZE);
    }
    let threads = block_threads(block)?;
    if active_clusters(dev, f, threads, u64::from(dynamic), size as u32) == 0 {
        return Err(code::INVALID_CLUSTER_SIZE);
    }
    Ok(())
}

/// The threads of a block: `INVALID_VALUE` for a zero dimension, one beyond
/// 1024 × 1024 × 64, or more than 1024 threads (no overflow: wide arithmetic).
pub(crate) fn block_threads(block: [u32; 3]) -> R<u32> {
    let threads = block
        .iter()
        .fold(1u64, |n, &d| n.saturating_mul(u64::from(d)));
    if block.contains(&0) || block[0] > 1024 || block[1] > 1024 || block[2] > 64 || threads > 1024 {
        return Err(code::INVALID_VALUE);
    }
    Ok(threads as u32)
}

/// `LAUNCH_OUT_OF_RESOURCES` if the co-resident blocks of the launch would take
/// more host memory than the interpreter allows (`ptx::resident_limit`; a cluster's
/// blocks or a cooperative grid run interleaved, each thread with its own
/// registers and stack). Refused before anything is queued.
pub(crate) fn check_resident(f: &FunctionEntry, cfg: &LaunchConfig, ex: &LaunchExtras) -> R {
    let k = &f.ptx.kernels()[f.kernel];
    if ptx::resident_bytes(&f.ptx, k, cfg, ex) > ptx::resident_limit() {
        return Err(code::LAUNCH_OUT_OF_RESOURCES);
    }
    Ok(())
}

/// The largest cluster a function may use: 8, or 16 with non-portable sizes
/// allowed, at most its `.maxclusterrank`.
pub(crate) fn cluster_limit(a: &ClusterAttrs, f: &FunctionEntry) -> u32 {
    let limit = if a.non_portable {
        NON_PORTABLE_CLUSTER
    } else {
        PORTABLE_CLUSTER
    };
    f.ptx.kernels()[f.kernel]
        .max_cluster_rank
        .map_or(limit, |m| limit.min(m))
}

/// Clusters of `size` blocks (each of `threads` threads, `dynamic` bytes) resident
/// at once: one GPC holds `SMS_PER_GPC` SMs' worth of resident blocks.
pub(crate) fn active_clusters(
    dev: &Profile,
    f: &FunctionEntry,
    threads: u32,
    dynamic: u64,
    size: u32,
) -> u32 {
    let k = &f.ptx.kernels()[f.kernel];
    let per_gpc = blocks_per_sm(dev, k, threads, dynamic).saturating_mul(SMS_PER_GPC);
    let gpcs = (dev.sm_count / SMS_PER_GPC).max(1);
    if size == 0 {
        return 0;
    }
    (per_gpc / size).saturating_mul(gpcs)
}

//! The checks of a launch's shape before anything runs: grid and block within the
//! architectural limits and the kernel's directives (`.maxntid`, `.reqntid`),
//! shared and local memory within what the interpreter provides, and the cluster
//! directives against the launch's cluster shape.

use super::*;

/// Whether [`launch`] accepts the shape of `cfg` for `kernel`: non-zero dimensions
/// within the architectural limits, the block within `.maxntid`/`.reqntid`, and the
/// shared memory (static, aligned, plus dynamic) within what the interpreter
/// provides. The driver layer calls it before queuing a launch, so that a launch
/// the interpreter would refuse is refused at once.
pub fn check_launch(kernel: &Kernel, cfg: &LaunchConfig) -> Result<(), LaunchError> {
    check_config(kernel, cfg)?;
    if kernel.cluster_dims.is_some() {
        // `.explicitcluster` is checked where the launch's cluster shape is known.
        check_cluster(kernel, cfg, kernel.cluster_dims)?;
    }
    if kernel.local_bytes as usize > MAX_STACK {
        // The deepest chain of frames known before the launch (recursion aside)
        // cannot fit: refused now rather than failing, or allocating, at run time.
        return Err(LaunchError::OutOfResources(format!(
            "{} bytes of local memory per thread (at most {MAX_STACK})",
            kernel.local_bytes
        )));
    }
    let shared = u64::from(kernel.dyn_shared_offset) + u64::from(cfg.dynamic_shared_bytes);
    if shared > MAX_SHARED {
        return Err(LaunchError::OutOfResources(format!(
            "{shared} bytes of shared memory per block (at most {MAX_SHARED})"
        )));
    }
    Ok(())
}

/// The kernel's cluster directives against the launch's cluster shape `cluster`
/// (the launch's, else `.reqnctapercluster`): `.explicitcluster` needs one, a
/// `.reqnctapercluster` shape must be the one used, `.maxclusterrank` bounds its
/// size, and it must divide the grid.
pub fn check_cluster(
    k: &Kernel,
    cfg: &LaunchConfig,
    cluster: Option<[u32; 3]>,
) -> Result<(), LaunchError> {
    let Some(c) = cluster else {
        if k.explicit_cluster {
            return Err(LaunchError::InvalidValue(format!(
                "kernel '{}' is .explicitcluster: the launch needs a cluster shape",
                k.name
            )));
        }
        return Ok(());
    };
    if k.cluster_dims.is_some_and(|r| r != c) {
        return Err(LaunchError::InvalidValue(format!(
            "cluster {c:?} differs from the kernel's .reqnctapercluster {:?}",
            k.cluster_dims
        )));
    }
    let size = wide_product(c);
    if size > MAX_CLUSTER {
        return Err(LaunchError::InvalidValue(format!(
            "cluster of {size} blocks (at most {MAX_CLUSTER})"
        )));
    }
    if k.max_cluster_rank.is_some_and(|m| size > u64::from(m)) {
        return Err(LaunchError::InvalidValue(format!(
            "cluster of {size} blocks exceeds the kernel's .maxclusterrank"
        )));
    }
    if c.contains(&0) || (0..3).any(|i| !cfg.grid[i].is_multiple_of(c[i])) {
        return Err(LaunchError::InvalidValue(format!(
            "cluster {c:?} does not divide the grid {:?}",
            cfg.grid
        )));
    }
    Ok(())
}

fn check_config(k: &Kernel, cfg: &LaunchConfig) -> Result<(), LaunchError> {
    let [bx, by, bz] = cfg.block;
    let [gx, gy, gz] = cfg.grid;
    if bx == 0 || by == 0 || bz == 0 || gx == 0 || gy == 0 || gz == 0 {
        return Err(LaunchError::InvalidValue(
            "grid and block dimensions must be non-zero".into(),
        ));
    }
    if bx > 1024 || by > 1024 || bz > 64 {
        return Err(LaunchError::InvalidValue(format!(
            "block {bx}x{by}x{bz} exceeds 1024x1024x64"
        )));
    }
    let threads = u64::from(bx) * u64::from(by) * u64::from(bz);
    if threads > 1024 {
        return Err(LaunchError::InvalidValue(format!(
            "{threads} threads per block (at most 1024)"
        )));
    }
    if gx > i32::MAX as u32 || gy > 65535 || gz > 65535 {
        return Err(LaunchError::InvalidValue(format!(
            "grid {gx}x{gy}x{gz} too large"
        )));
    }
    if let Some(r) = k.reqntid
        && r != cfg.block
    {
        return Err(LaunchError::InvalidValue(format!(
            "block {bx}x{by}x{bz} differs from .reqntid {}x{}x{}",
            r[0], r[1], r[2]
        )));
    }
    if let Some(m) = k.max_threads_per_block
        && threads > u64::from(m)
    {
        return Err(LaunchError::OutOfResources(format!(
            "{threads} threads per block, kernel allows {m}"
        )));
    }
    Ok(())
}

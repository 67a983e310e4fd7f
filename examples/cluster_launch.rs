//! Thread-block clusters with the extended launch (`LaunchConfig::cluster`): 16
//! blocks in clusters of 4, each block reporting its cluster id and rank (the
//! `%clusterid`/`%cluster_ctarank` registers) after the cluster barrier
//! (`cooperative_groups::this_cluster().sync()`), checked on the host; then the
//! cluster occupancy questions, and a cluster shape the launch refuses before the
//! driver is called.
//!
//! Clusters need compute capability 9.0: the example runs on the first such device.
//! On softcuda (no GPU here, nothing chosen) that is its 9.0 device, and it says so.
//!
//! `cargo run --example cluster_launch`

#[path = "common/mod.rs"]
mod common;

use oxicuda_driver::launch::Out;
use oxicuda_driver::launch_config::LaunchConfig;
use oxicuda_driver::module::JitOptions;
use oxicuda_driver::sys::{CUctx_flags, CUresult, CUstream_flags};
use oxicuda_driver::{Context, CudaError, Driver};
use std::process::ExitCode;

const PTX: &str = include_str!("../kernels/cluster.ptx");
const GRID: u32 = 16;
const CLUSTER: u32 = 4;

fn main() -> ExitCode {
    common::main_with(|driver, _soft| run(driver))
}

fn run(driver: &'static Driver) -> Result<(), CudaError> {
    let mut chosen = None;
    for d in driver.list_devices()? {
        if d.compute_capability()?.0 >= 9 {
            chosen = Some(d);
            break;
        }
    }
    let Some(device) = chosen else {
        println!("no device of compute capability 9.0 or newer: thread-block clusters need one");
        return Ok(());
    };
    println!(
        "device: {} (compute capability {:?})",
        device.name()?,
        device.compute_capability()?
    );
    let ctx = Context::new(&device, CUctx_flags::empty())?;
    ctx.bind(|cur| -> Result<(), CudaError> {
        let module = cur.load_ptx(PTX, &JitOptions::default())?;
        // SAFETY: kernels/cluster.cu's cluster_info writes `out` and `arrived` only
        // below the lengths the launch passes with them.
        let mut k = unsafe { module.function::<(Out<u32>, Out<u32>)>("cluster_info")? };
        let stream = cur.create_stream(CUstream_flags::CU_STREAM_NON_BLOCKING)?;
        let mut out = cur.alloc::<u32>(GRID as usize * 8)?;
        let mut arrived = cur.alloc::<u32>((GRID / CLUSTER) as usize)?;
        arrived.fill(0)?;
        let cfg = LaunchConfig::new(GRID, 128).cluster(CLUSTER);
        k.launch_with(&stream, &cfg, (&mut out, &mut arrived))?;
        stream.synchronize()?;
        let v = out.to_vec()?;
        for b in 0..GRID {
            let row = &v[(b * 8) as usize..(b * 8 + 8) as usize];
            let want = [b / CLUSTER, GRID / CLUSTER, b % CLUSTER, CLUSTER, b % CLUSTER, CLUSTER, 1, CLUSTER];
            if row != want {
                eprintln!("block {b}: got {row:?}, expected {want:?}");
                return Err(CudaError::Driver(CUresult::CUDA_ERROR_UNKNOWN));
            }
            println!(
                "block {b:2}: cluster {} of {}, rank {} of {}, {} blocks arrived before the barrier",
                row[0], row[1], row[2], row[3], row[7]
            );
        }
        println!(
            "max active clusters of {CLUSTER} blocks: {}; largest cluster that fits: {}",
            k.max_active_clusters(&cfg)?,
            k.max_potential_cluster_size(&cfg)?
        );
        match k.launch_with(&stream, &LaunchConfig::new(16, 128).cluster(16), (&mut out, &mut arrived)) {
            Err(e @ CudaError::InvalidLaunch { .. }) => println!("refused before the launch: {e}"),
            other => {
                eprintln!("a cluster of 16 without the non-portable opt-in: {other:?}");
                return Err(CudaError::Driver(CUresult::CUDA_ERROR_UNKNOWN));
            }
        }
        k.set_non_portable_cluster_size_allowed(true)?;
        println!("with non-portable sizes allowed, the largest cluster is {}", k.max_cluster_size()?);
        println!("cluster_launch: {GRID} blocks in clusters of {CLUSTER}, all as expected");
        Ok(())
    })??;
    Ok(())
}

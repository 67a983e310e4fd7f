//! Two workloads on one GPU that do not take each other's SMs: the device's SMs are
//! split into two partitions, each becomes a green context, and two threads — each
//! owning one green context — run a saxpy at the same time, each on its own SMs.
//! Each thread reports the SMs its context runs on and checks every element on the
//! host.
//!
//! With no driver chosen and no GPU on the machine it runs on softcuda, the software
//! driver, and says so. With a driver chosen (`OXICUDA_DRIVER_PATH`) that has no
//! device, it says so and exits with status 2. Green contexts need CUDA 12.4.
//!
//! `cargo run --example green_contexts`

#[path = "common/mod.rs"]
mod common;

use oxicuda_driver::green::{GreenContext, SplitFlags};
use oxicuda_driver::launch::{In, Out};
use oxicuda_driver::module::JitOptions;
use oxicuda_driver::sys::CUstream_flags;
use oxicuda_driver::{CudaError, Driver};
use std::process::ExitCode;

const PTX: &str = include_str!("../kernels/slices.ptx");

fn main() -> ExitCode {
    common::main_with(run)
}

/// Runs `n` saxpy elements on `green` and returns how many came out wrong.
fn workload(green: &GreenContext, a: f32, n: usize) -> Result<(u32, usize), CudaError> {
    green.bind(|cur| -> Result<(u32, usize), CudaError> {
        let sms = cur.sm_resource()?.sm_count();
        let module = cur.load_ptx(PTX, &JitOptions::default())?;
        // SAFETY: kernels/slices.cu's saxpy reads `x` and writes `y`, each only below
        // the length the launch passes with it.
        let saxpy = unsafe { module.function::<(f32, In<f32>, Out<f32>)>("saxpy")? };
        let stream = cur.create_stream(CUstream_flags::CU_STREAM_NON_BLOCKING)?;
        let x_host: Vec<f32> = (0..n).map(|i| (i % 1000) as f32).collect();
        let x = cur.alloc_from(&x_host)?;
        let mut y = cur.alloc_from(&vec![1.0f32; n])?;
        saxpy.launch(&stream, n.div_ceil(256) as u32, 256, 0, (a, &x, &mut y))?;
        let wrong = y
            .to_vec()?
            .iter()
            .zip(&x_host)
            .filter(|(y, x)| **y != a * **x + 1.0)
            .count();
        Ok((sms, wrong))
    })?
}

fn run(driver: &'static Driver, soft: bool) -> Result<(), CudaError> {
    let device = driver.best_device()?;
    println!(
        "driver: {} {}; device: {}",
        if soft { "softcuda" } else { "CUDA" },
        driver.version(),
        device.name()?
    );
    let all = device.sm_resource()?;
    let split = all.split(2, 8, SplitFlags::empty())?;
    println!(
        "{} SMs split into partitions of {} SMs, {} left over",
        all.sm_count(),
        split
            .groups
            .iter()
            .map(|g| g.sm_count().to_string())
            .collect::<Vec<_>>()
            .join(" and "),
        split.remainder.as_ref().map_or(0, |r| r.sm_count())
    );
    // One green context per partition; each moves to its own thread.
    let greens = split
        .groups
        .iter()
        .map(|g| GreenContext::new(&device, core::slice::from_ref(g)))
        .collect::<Result<Vec<_>, _>>()?;
    let results = std::thread::scope(|s| {
        let handles: Vec<_> = greens
            .into_iter()
            .enumerate()
            .map(|(i, green)| s.spawn(move || workload(&green, (i + 2) as f32, 1 << 20)))
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
            .collect::<Vec<_>>()
    });
    let mut wrong = 0;
    for (i, r) in results.into_iter().enumerate() {
        let (sms, bad) = r?;
        println!("workload {i}: 1048576 elements on a green context of {sms} SMs, {bad} wrong");
        wrong += bad;
    }
    if wrong != 0 {
        eprintln!("{wrong} results differ from the CPU");
        return Err(CudaError::Driver(
            oxicuda_driver::sys::CUresult::CUDA_ERROR_UNKNOWN,
        ));
    }
    println!("green_contexts: both workloads match the CPU result, each on its own SMs");
    Ok(())
}

//! Loads the CUDA driver, prints its version, then every device with its key
//! attributes. With a driver chosen (`OXICUDA_DRIVER_PATH`) that has no device it
//! says so and exits with status 2; when a chosen driver cannot be loaded it names
//! every path it tried and exits with status 1. With no driver chosen and no GPU on
//! the machine it shows softcuda's simulated devices, and says so.
//!
//! `cargo run --example device_info`

#[path = "common/mod.rs"]
mod common;

use oxicuda_driver::{CudaError, Driver};
use std::process::ExitCode;

fn main() -> ExitCode {
    // A chosen driver that loads but has no device: its version is still worth showing.
    if let Some(d) = common::chosen()
        .then(oxicuda_driver::driver)
        .and_then(Result::ok)
    {
        println!(
            "CUDA driver {} ({})",
            d.version(),
            d.path().unwrap_or("in-process")
        );
    }
    common::main_with(|d, soft| {
        if soft {
            println!("CUDA driver {} (softcuda, in-process)", d.version());
        }
        list_devices(d)
    })
}

fn list_devices(driver: &'static Driver) -> Result<(), CudaError> {
    let devices = driver.list_devices()?;
    println!("{} device(s)", devices.len());
    for d in &devices {
        let c = d.compute()?;
        let l = d.launch_limits()?;
        let m = d.memory()?;
        println!(
            "  [{}] {}: compute capability {}.{}, {} SMs, {:.1} GiB, {} threads/block, {} KiB shared/block (opt-in {} KiB), PCI {}",
            d.ordinal(),
            d.name()?,
            c.capability.0,
            c.capability.1,
            c.multiprocessors,
            m.total as f64 / (1u64 << 30) as f64,
            l.max_threads_per_block,
            l.max_shared_per_block / 1024,
            l.max_shared_per_block_optin / 1024,
            d.pci_bus_id()?,
        );
    }
    if let Ok(best) = driver.best_device() {
        println!("best device: [{}]", best.ordinal());
    }
    Ok(())
}

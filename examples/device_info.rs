//! Loads the CUDA driver, prints its version, then every device with its key
//! attributes. With a driver chosen (`OXICUDA_DRIVER_PATH`) that has no device it
//! says so and exits with status 2; when a chosen driver cannot be loaded it names
//! every path it tried and exits with status 1. With no driver chosen and no GPU on
//! the machine it shows softcuda's simulated devices, and says so.
//!
//! `cargo run --example device_info`

#[path = "common/mod.rs"]
mod common;

use oxicuda_driver::error::check;
use oxicuda_driver::sys::{CUdevice, CUdevice_attribute};
use oxicuda_driver::{CudaError, Driver};
use std::ffi::{CStr, c_char, c_int};
use std::process::ExitCode;

fn main() -> ExitCode {
    // A chosen driver that loads but has no device: its version is still worth showing.
    if let Ok(d) = oxicuda_driver::driver() {
        println!(
            "CUDA driver {} ({})",
            d.version(),
            d.path().unwrap_or("in-process")
        );
    }
    let listed = common::choose().and_then(|c| {
        if let common::Chosen::Soft(d) = &c {
            println!("CUDA driver {} (softcuda, in-process)", d.version());
        }
        list_devices(c.driver())
    });
    match listed {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) if e.is_no_device() => {
            eprintln!("no CUDA device: the driver loaded, but found no GPU on this machine ({e})");
            ExitCode::from(2)
        }
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(1)
        }
    }
}

fn list_devices(driver: &Driver) -> Result<(), CudaError> {
    let t = driver.table();
    let mut count: c_int = 0;
    // SAFETY (every call below): out-pointers are valid locals; buffer lengths are given.
    check(unsafe { t.cuDeviceGetCount()?(&mut count) })?;
    println!("{count} device(s)");
    for ordinal in 0..count {
        let mut dev: CUdevice = 0;
        check(unsafe { t.cuDeviceGet()?(&mut dev, ordinal) })?;
        let mut name = [0 as c_char; 256];
        check(unsafe { t.cuDeviceGetName()?(name.as_mut_ptr(), name.len() as c_int, dev) })?;
        let mut bytes = 0usize;
        check(unsafe { t.cuDeviceTotalMem()?(&mut bytes, dev) })?;
        let attr = |a: CUdevice_attribute| -> Result<c_int, CudaError> {
            let mut v: c_int = 0;
            check(unsafe { t.cuDeviceGetAttribute()?(&mut v, a, dev) })?;
            Ok(v)
        };
        let major = attr(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR)?;
        let minor = attr(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)?;
        let sms = attr(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)?;
        // SAFETY: cuDeviceGetName wrote a NUL-terminated string into `name`.
        let name = unsafe { CStr::from_ptr(name.as_ptr()) }.to_string_lossy();
        println!(
            "  [{ordinal}] {name}: compute capability {major}.{minor}, {sms} SMs, {:.1} GiB",
            bytes as f64 / (1u64 << 30) as f64
        );
    }
    Ok(())
}

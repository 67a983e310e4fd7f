//! How the examples choose their driver: the one the environment names, else the
//! system driver, else — only when nothing was chosen and the system has no driver or
//! no device — softcuda, the software driver, saying so.

use oxicuda_driver::loader::{ENV_DRIVER, ENV_DRIVER_PATH};
use oxicuda_driver::{CudaError, Driver, DriverOptions};

/// Whether the environment chooses the driver (`OXICUDA_DRIVER`, `OXICUDA_DRIVER_PATH`).
pub fn chosen() -> bool {
    std::env::var_os(ENV_DRIVER).is_some() || std::env::var_os(ENV_DRIVER_PATH).is_some()
}

/// The driver to run on, initialised, and whether it is softcuda. Call it before
/// anything loads the process-wide driver.
pub fn choose() -> Result<(&'static Driver, bool), CudaError> {
    let chosen = chosen();
    let d = match chosen {
        true => oxicuda_driver::init()?,
        // The GPU if there is one, else softcuda: one call.
        false => oxicuda_driver::driver_with(DriverOptions::auto())?,
    };
    if d.is_software() && !chosen {
        println!("No GPU here (no CUDA driver library, or one that found no device).");
        println!("Running on softcuda, the software CUDA driver.");
    }
    d.init()?;
    Ok((d, d.is_software()))
}

/// Runs `body` on the chosen driver (see [`choose`]). Exit status: 0 on success; 2
/// when the chosen driver has no device; 1 on any other error. Errors are printed.
pub fn main_with(
    body: impl FnOnce(&'static Driver, bool) -> Result<(), CudaError>,
) -> std::process::ExitCode {
    match choose().and_then(|(d, soft)| body(d, soft)) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) if e.is_no_device() => {
            eprintln!("no CUDA device: the chosen driver loaded, but found no GPU ({e})");
            std::process::ExitCode::from(2)
        }
        Err(e) => {
            eprintln!("error: {e}");
            std::process::ExitCode::from(1)
        }
    }
}

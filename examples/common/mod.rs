//! How the examples choose their driver: the one the environment names, else the
//! system driver, else — only when nothing was chosen and the system has no driver or
//! no device — softcuda, the software driver, saying so.

use oxicuda_driver::loader::{ENV_DRIVER, ENV_DRIVER_PATH};
use oxicuda_driver::{CudaError, Driver, DriverOptions, LoadError};

/// The driver to run on, initialised, and whether it is softcuda.
pub fn choose() -> Result<(&'static Driver, bool), CudaError> {
    let chosen =
        std::env::var_os(ENV_DRIVER).is_some() || std::env::var_os(ENV_DRIVER_PATH).is_some();
    match oxicuda_driver::init() {
        Ok(d) => Ok((d, false)),
        Err(e)
            if !chosen
                && (e.is_no_device()
                    || matches!(e, CudaError::Load(LoadError::LibraryNotFound { .. }))) =>
        {
            println!("No GPU here ({e}).");
            println!("Running on softcuda, the software CUDA driver.");
            // The process-wide slot holds the system driver's failure; this one lives
            // for the rest of the program instead.
            let soft: &'static Driver =
                Box::leak(Box::new(Driver::load(&DriverOptions::software())?));
            soft.init()?;
            Ok((soft, true))
        }
        Err(e) => Err(e),
    }
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

//! How the examples choose their driver: the one the environment names, else the
//! system driver, else — only when nothing was chosen and the system has no driver or
//! no device — softcuda, the software driver, saying so.

use oxicuda_driver::loader::{ENV_DRIVER, ENV_DRIVER_PATH};
use oxicuda_driver::{CudaError, Driver, DriverOptions, LoadError};

/// The driver to run on, initialised.
pub enum Chosen {
    /// The process-wide driver (system or explicitly chosen).
    System(&'static Driver),
    /// softcuda, in-process.
    Soft(Box<Driver>),
}

impl Chosen {
    /// The driver.
    pub fn driver(&self) -> &Driver {
        match self {
            Chosen::System(d) => d,
            Chosen::Soft(d) => d,
        }
    }
}

/// softcuda, reached in-process through its `cuGetProcAddress_v2`.
pub fn soft() -> Result<Driver, CudaError> {
    // SAFETY: softcuda declares cuGetProcAddress_v2 with its own C types, which have
    // the ABI of the crate's (`#[repr(transparent)]` integers and pointers), and
    // follows the driver's contract.
    let get = unsafe {
        std::mem::transmute::<*const (), oxicuda_driver::table::pfn::cuGetProcAddress>(
            softcuda::cuGetProcAddress_v2 as *const (),
        )
    };
    // SAFETY: as above.
    let d = unsafe { Driver::from_proc_address(get, &DriverOptions::new()) }?;
    d.init()?;
    Ok(d)
}

/// Chooses and initialises the driver (see the module doc).
pub fn choose() -> Result<Chosen, CudaError> {
    let chosen =
        std::env::var_os(ENV_DRIVER).is_some() || std::env::var_os(ENV_DRIVER_PATH).is_some();
    match oxicuda_driver::init() {
        Ok(d) => Ok(Chosen::System(d)),
        Err(e)
            if !chosen
                && (e.is_no_device()
                    || matches!(e, CudaError::Load(LoadError::LibraryNotFound { .. }))) =>
        {
            println!("No GPU here ({e}).");
            println!("Running on softcuda, the software CUDA driver.");
            Ok(Chosen::Soft(Box::new(soft()?)))
        }
        Err(e) => Err(e),
    }
}

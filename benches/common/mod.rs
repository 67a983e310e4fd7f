//! The driver the benchmarks run on: softcuda in-process, unless the environment names
//! one (`OXICUDA_DRIVER=system` on a GPU machine, `OXICUDA_DRIVER_PATH`:
//! scripts/gpu-check.sh).

use oxicuda_driver::loader::{ENV_DRIVER, ENV_DRIVER_PATH};
use oxicuda_driver::{Driver, DriverOptions};

/// The driver, loaded and initialised, for the rest of the process; says which.
pub fn driver(bench: &str) -> &'static Driver {
    let named =
        std::env::var_os(ENV_DRIVER).is_some() || std::env::var_os(ENV_DRIVER_PATH).is_some();
    let options = match named {
        true => DriverOptions::from_env().expect("the environment names a driver"),
        false => DriverOptions::software(),
    };
    let d: &'static Driver = Box::leak(Box::new(Driver::load(&options).expect("the driver loads")));
    d.init().expect("the driver initialises");
    eprintln!(
        "{bench} benchmark on: {}",
        d.path().unwrap_or("softcuda, in-process")
    );
    d
}

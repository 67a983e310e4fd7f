//! How the environment chooses the driver. One test, so that no other thread reads the
//! environment while it changes.

use oxicuda_driver::{DriverOptions, LoadError, loader};

#[test]
fn the_environment_choice_is_honoured_or_reported() {
    // `DriverOptions::auto()`: the system driver if it finds a device, else softcuda.
    // No GPU on the machines that run this (no libcuda on the search path, or one
    // that finds no device): softcuda, in-process, which initialises.
    let d = oxicuda_driver::Driver::load(&DriverOptions::auto()).unwrap();
    let gpu = oxicuda_driver::Driver::load(&DriverOptions::new()).is_ok_and(|s| s.init().is_ok());
    assert_eq!(d.is_software(), !gpu);
    if !gpu {
        assert_eq!(d.path(), None);
        d.init().unwrap();
        assert!(d.device_count().unwrap() >= 1);
    }
    assert!(!oxicuda_driver::Driver::load(&DriverOptions::new()).is_ok_and(|s| s.is_software()));

    // SAFETY (each set/remove): this test binary has one test, so one thread.
    unsafe { std::env::remove_var(loader::ENV_DRIVER) };
    unsafe { std::env::set_var(loader::ENV_DRIVER_PATH, "/nowhere/libcuda.so.1") };
    assert_eq!(
        DriverOptions::from_env(),
        // SAFETY: options compared, never loaded.
        Ok(unsafe { DriverOptions::new().path("/nowhere/libcuda.so.1") })
    );

    // An explicit path is the only one tried, and the process-wide load reports it.
    match oxicuda_driver::driver() {
        Err(LoadError::LibraryNotFound { tried }) => {
            assert_eq!(tried.len(), 1);
            assert_eq!(tried[0].path, "/nowhere/libcuda.so.1");
        }
        other => panic!("expected LibraryNotFound, got {other:?}"),
    }
    // The failure is kept, and init() reports it as a load error.
    assert!(matches!(
        oxicuda_driver::init(),
        Err(oxicuda_driver::CudaError::Load(
            LoadError::LibraryNotFound { .. }
        ))
    ));

    unsafe { std::env::set_var(loader::ENV_DRIVER, "soft") };
    let err = DriverOptions::from_env().unwrap_err();
    assert!(
        err.to_string()
            .contains("conflicts with OXICUDA_DRIVER_PATH"),
        "two choices: {err}"
    );
    unsafe { std::env::remove_var(loader::ENV_DRIVER_PATH) };
    // The tests build the crate with the `soft` feature: softcuda is chosen.
    assert_eq!(DriverOptions::from_env(), Ok(DriverOptions::software()));
    unsafe { std::env::set_var(loader::ENV_DRIVER, "gpu") };
    assert!(matches!(
        DriverOptions::from_env(),
        Err(LoadError::Environment { .. })
    ));
    unsafe { std::env::set_var(loader::ENV_DRIVER, "system") };
    assert_eq!(DriverOptions::from_env(), Ok(DriverOptions::new()));

    // `auto`: the GPU if there is one, else softcuda; exclusive with a path too.
    unsafe { std::env::set_var(loader::ENV_DRIVER, "auto") };
    assert_eq!(DriverOptions::from_env(), Ok(DriverOptions::auto()));
    unsafe { std::env::set_var(loader::ENV_DRIVER_PATH, "/nowhere/libcuda.so.1") };
    let err = DriverOptions::from_env().unwrap_err();
    assert!(
        err.to_string()
            .contains("conflicts with OXICUDA_DRIVER_PATH"),
        "{err}"
    );
    unsafe { std::env::remove_var(loader::ENV_DRIVER_PATH) };
}

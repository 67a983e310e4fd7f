//! NVML against the real library: Debian's `libnvidia-ml1` 535 (the driver's
//! release), which loads here but, with no NVIDIA kernel driver, refuses to
//! initialise. What cannot be tested here — the device and NVLink queries of an
//! initialised NVML — is exercised only on a machine with a GPU.

mod common;

use oxicuda_driver::nvml::{FUNCTIONS, Nvml, NvmlError, NvmlLibrary};
use oxicuda_driver::sys::nvml::nvmlReturn_t;

fn open() -> Option<NvmlLibrary> {
    let path = common::real_nvml()?;
    // SAFETY: the fixture is NVIDIA's libnvidia-ml.so.1 (535).
    Some(unsafe { NvmlLibrary::open(path) }.expect("the 535 NVML opens"))
}

#[test]
fn every_function_used_resolves_in_the_535_library() {
    let Some(lib) = open() else { return };
    assert!(lib.path().ends_with("libnvidia-ml.so.1"));
    assert_eq!(lib.missing_functions(), Vec::<&str>::new());
    assert!(FUNCTIONS.contains(&"nvmlDeviceGetNvLinkRemotePciInfo_v2"));
    assert!(FUNCTIONS.contains(&"nvmlDeviceGetNvLinkRemoteDeviceType"));
    assert!(format!("{lib:?}").contains("missing: []"));
}

#[test]
fn init_fails_without_a_gpu_with_the_real_code_and_words() {
    let Some(lib) = open() else { return };
    let err = lib.init().expect_err("no NVIDIA kernel driver here");
    assert_eq!(
        err,
        NvmlError::Call {
            function: "nvmlInit_v2",
            code: nvmlReturn_t::NVML_ERROR_DRIVER_NOT_LOADED,
            description: Some("Driver Not Loaded".into()),
        }
    );
    assert_eq!(err.code(), Some(nvmlReturn_t(9)));
    assert_eq!(
        err.to_string(),
        "nvmlInit_v2 failed: NVML_ERROR_DRIVER_NOT_LOADED (9): Driver Not Loaded"
    );
    // The same through the one-step load, and again (no state left behind).
    let path = common::real_nvml().unwrap();
    for _ in 0..2 {
        // SAFETY: as above.
        let again = unsafe { Nvml::load_from(&path) }.unwrap_err();
        assert_eq!(again.code(), Some(nvmlReturn_t::NVML_ERROR_DRIVER_NOT_LOADED));
    }
}

#[test]
fn a_library_that_is_not_nvml_is_refused_before_anything_is_called() {
    // SAFETY: libz runs no harmful initialisers; it is refused for lacking nvmlInit_v2
    // before any of its functions is called.
    let err = unsafe { NvmlLibrary::open("libz.so.1") }.unwrap_err();
    assert_eq!(
        err,
        NvmlError::NotNvml {
            path: "libz.so.1".into(),
            symbol: "nvmlInit_v2",
        }
    );
    assert!(err.to_string().contains("does not export `nvmlInit_v2`"));
}

#[test]
fn a_missing_library_is_a_typed_error_naming_the_path() {
    let path = "/nonexistent/libnvidia-ml.so.1";
    // SAFETY: nothing is loaded: the file does not exist.
    match unsafe { Nvml::load_from(path) } {
        Err(NvmlError::LibraryNotFound { path: p, error }) => {
            assert_eq!(p, path);
            assert!(!error.is_empty());
        }
        other => panic!("expected LibraryNotFound, got {other:?}"),
    }
}

#[test]
fn the_system_nvml_is_absent_or_fails_to_initialise_here() {
    // This machine has no NVIDIA driver: the system NVML is absent, or (installed
    // without a kernel driver) refuses to initialise. In the GPU suite it loads.
    match Nvml::load() {
        Ok(nvml) => {
            assert!(common::ON_GPU, "NVML initialised on a machine without a GPU");
            assert!(nvml.device_count().is_ok());
        }
        Err(NvmlError::LibraryNotFound { path, .. }) => assert_eq!(path, "libnvidia-ml.so.1"),
        Err(e) => assert!(e.code().is_some(), "unexpected {e:?}"),
    }
}

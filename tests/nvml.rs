//! NVML against the real library: Debian's `libnvidia-ml1` 535 (the driver's
//! release), which loads here but, with no NVIDIA kernel driver, refuses to
//! initialise. The device and NVLink queries of an initialised NVML run against
//! `libsoftcuda.so`'s NVML surface (softcuda's devices and simulated NVLinks), the
//! same library serving as the CUDA driver, so that the topology matches the two.
//! What only real hardware can show — real link states, versions, NVSwitch fabrics
//! and the 535 library's answers on a GPU — is beyond these tests.

mod common;

use core::ffi::{c_char, c_int, c_uint};
use oxicuda_driver::nvml::{FUNCTIONS, NvLinkDeviceType, Nvml, NvmlError, NvmlLibrary};
use oxicuda_driver::sys::nvml::nvmlReturn_t;
use oxicuda_driver::topology::{LinkSource, Topology};
use oxicuda_driver::{Driver, DriverOptions};

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
        assert_eq!(
            again.code(),
            Some(nvmlReturn_t::NVML_ERROR_DRIVER_NOT_LOADED)
        );
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
    // The system library by its name (not `Nvml::load`, which honours
    // OXICUDA_NVML_PATH): absent here, or — installed without a kernel driver —
    // refusing to initialise with a typed error. With a GPU (a developer's machine,
    // the GPU suite) it initialises.
    // SAFETY: the name is NVIDIA's NVML library; loading it runs its initialisers.
    match unsafe { NvmlLibrary::open(oxicuda_driver::nvml::NVML_LIBRARY) } {
        Err(NvmlError::LibraryNotFound { path, .. }) => assert_eq!(path, "libnvidia-ml.so.1"),
        Err(e) => panic!("the system NVML is there but unusable: {e:?}"),
        Ok(lib) => match lib.init() {
            Ok(nvml) => assert!(nvml.device_count().is_ok()),
            Err(e) => assert!(e.code().is_some(), "unexpected {e:?}"),
        },
    }
}

/// softcuda's NVML surface and its driver, one library (`libsoftcuda.so`), with
/// devices 0 and 1 joined by two NVLinks; the whole story in one test, since it
/// configures that library's process-wide state.
#[test]
fn softcudas_nvml_surface_drives_the_topology_end_to_end() {
    let path = common::libsoftcuda();
    // SAFETY: libsoftcuda.so implements the CUDA driver ABI.
    let options = unsafe { DriverOptions::new().path(&path) };
    let driver: &'static Driver = Box::leak(Box::new(Driver::load(&options).unwrap()));
    driver.init().unwrap();
    // SAFETY: libsoftcuda.so implements the NVML functions it exports; dlopen returns
    // the library the driver already loaded, so the two share softcuda's state.
    let lib = unsafe { NvmlLibrary::open(&path) }.unwrap();
    assert_eq!(lib.missing_functions(), Vec::<&str>::new());
    // SAFETY: the same library, already loaded.
    let control = unsafe { libloading::Library::new(&path) }.unwrap();
    // SAFETY (each `get` and call below): softcuda's C control surface and NVML
    // exports, with their declared signatures; strings are NUL-terminated literals.
    let set_nvlinks = unsafe {
        control
            .get::<unsafe extern "C" fn(*const c_char) -> c_uint>(b"softcuda_set_nvlinks\0")
            .unwrap()
    };
    let inject = unsafe {
        control
            .get::<unsafe extern "C" fn(*const c_char, u64, c_uint)>(b"softcuda_inject_fault\0")
            .unwrap()
    };
    let clear = unsafe {
        control
            .get::<unsafe extern "C" fn()>(b"softcuda_clear_faults\0")
            .unwrap()
    };
    assert_eq!(unsafe { set_nvlinks(c"0-1x2".as_ptr()) }, 0);
    assert_eq!(unsafe { set_nvlinks(c"0-0".as_ptr()) }, 1); // INVALID_VALUE

    let nvml = lib.init().unwrap();
    assert_eq!(nvml.device_count().unwrap(), 2);
    let d0 = nvml.device_by_index(0).unwrap();
    assert_eq!(
        d0.name().unwrap(),
        driver.device(0).unwrap().name().unwrap()
    );
    assert_eq!(d0.pci_bus_id().unwrap(), "00000000:10:00.0");
    let info = d0.pci_info().unwrap();
    assert_eq!((info.domain, info.bus, info.device), (0, 0x10, 0));
    assert_eq!(info.pci_device_id & 0xffff, 0x10de);
    let by_bus = nvml.device_by_pci_bus_id(&driver.device(1).unwrap().pci_bus_id().unwrap());
    assert_eq!(by_bus.unwrap().name().unwrap(), "softcuda sm_80 (device 1)");
    let missing = nvml.device_by_pci_bus_id("0000:99:00.0").unwrap_err();
    assert_eq!(missing.code(), Some(nvmlReturn_t::NVML_ERROR_NOT_FOUND));
    assert_eq!(
        missing.to_string(),
        "nvmlDeviceGetHandleByPciBusId_v2 failed: NVML_ERROR_NOT_FOUND (6): Not Found"
    );
    assert!(matches!(
        nvml.device_by_pci_bus_id("00\0"),
        Err(NvmlError::InvalidArgument {
            parameter: "bus_id",
            ..
        })
    ));
    assert_eq!(
        nvml.device_by_index(2).unwrap_err().code(),
        Some(nvmlReturn_t::NVML_ERROR_INVALID_ARGUMENT)
    );

    let links = d0.nvlinks().unwrap();
    assert_eq!(links.len(), 2, "{links:?}");
    for (i, l) in links.iter().enumerate() {
        assert_eq!(l.link, i as u32);
        assert!(l.active);
        assert_eq!(l.version.unwrap().major_minor(), Some((4, 0))); // sm_90
        let remote = l.remote.as_ref().unwrap();
        assert_eq!(remote.pci.bus_id, "00000000:11:00.0");
        assert_eq!(remote.device_type, Some(NvLinkDeviceType::Gpu));
        assert_eq!(l.capabilities.p2p, Some(true));
        assert_eq!(l.capabilities.p2p_atomics, Some(true));
        assert_eq!(l.capabilities.sysmem_access, Some(false));
    }
    let d1 = nvml.device_by_index(1).unwrap();
    assert_eq!(d1.nvlinks().unwrap()[0].version.unwrap().to_string(), "3.0"); // sm_80

    let t = Topology::probe(driver, Some(&nvml)).unwrap();
    assert_eq!(t.links(), &LinkSource::Nvml(path.display().to_string()));
    assert_eq!(t.nvlinks_between(0, 1), 2);
    assert_eq!(t.nvlinks_between(1, 0), 2);
    assert!(
        t.to_dot()
            .contains("gpu0 -> gpu1 [label=\"rank 0, atomics, nvlink x2\"];")
    );
    assert!(t.to_string().contains("0a nv2"));

    // NVML failing midway: the topology falls back, and says why.
    unsafe { inject(c"nvmlDeviceGetNvLinkState".as_ptr(), 1, 15) }; // GPU_IS_LOST
    let t = Topology::probe(driver, Some(&nvml)).unwrap();
    unsafe { clear() };
    match t.links() {
        LinkSource::Unavailable(why) => assert!(
            why.starts_with("device 0 (00000000:10:00.0): nvmlDeviceGetNvLinkState failed: NVML_ERROR_GPU_IS_LOST (15)"),
            "{why}"
        ),
        other => panic!("expected the fallback, got {other:?}"),
    }
    assert!(t.devices().iter().all(|d| d.nvlinks.is_empty()));
    assert!(t.peer(0, 1).unwrap().unwrap().access_supported);

    // A device without NVLink has none; shutdown balances init.
    assert_eq!(unsafe { set_nvlinks(c"none".as_ptr()) }, 0);
    assert_eq!(d0.nvlinks().unwrap(), Vec::new());
    drop(nvml);
    // SAFETY: as above.
    let shutdown = unsafe {
        control
            .get::<unsafe extern "C" fn() -> c_int>(b"nvmlShutdown\0")
            .unwrap()
    };
    assert_eq!(unsafe { shutdown() }, 1, "already shut down: UNINITIALIZED");
}

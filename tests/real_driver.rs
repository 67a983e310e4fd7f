//! The loader and the error table against the real NVIDIA driver: Debian's
//! `libcuda1` 535 (CUDA 12.2), which loads and answers on a machine with no GPU.

mod common;

use oxicuda_driver::sys::{CUdriverProcAddressQueryResult, CUresult};
use oxicuda_driver::table::ENTRIES;
use oxicuda_driver::{CudaError, Driver, DriverOptions, DriverVersion, LoadError, Resolver};
use std::ffi::{CStr, c_char};

fn load() -> Option<Driver> {
    let path = common::real_driver()?;
    // SAFETY: the fixture is NVIDIA's libcuda.so.1 (535).
    let options = unsafe { DriverOptions::new().path(path) };
    Some(Driver::load(&options).expect("the 535 driver loads"))
}

#[test]
fn loads_through_dlopen_and_reports_12_2() {
    let Some(d) = load() else { return };
    assert_eq!(d.version(), DriverVersion::from_raw(12020));
    assert_eq!(d.version().to_string(), "12.2");
    assert_eq!(d.resolver(), Resolver::ProcAddressV2);
    assert_eq!(d.query_version(), Ok(DriverVersion::new(12, 2)));
    assert!(d.path().is_some_and(|p| p.ends_with("libcuda.so.1")));
}

#[test]
fn every_entry_up_to_12_2_resolves_and_every_newer_one_is_unavailable() {
    let Some(d) = load() else { return };
    let mut missing = Vec::new();
    let (mut old, mut new) = (0, 0);
    for (entry, resolved) in d.table().resolved() {
        if entry.version <= 12020 {
            old += 1;
            if !resolved {
                missing.push(entry.name);
            }
        } else {
            new += 1;
            assert!(
                !resolved,
                "{} ({}) resolved on a 12.2 driver",
                entry.name, entry.version
            );
        }
    }
    assert!(missing.is_empty(), "not resolved on 535: {missing:?}");
    assert!(old >= 350 && new > 0, "{old} old, {new} new entries");

    // Calling a newer one names it and the version it needs.
    match d.table().cuGraphAddNode_v12030() {
        Err(CudaError::NotSupported { function, needs }) => {
            assert_eq!(
                (function, needs),
                ("cuGraphAddNode_v12030", DriverVersion::new(12, 3))
            );
        }
        other => panic!("expected NotSupported, got {:?}", other.map(|_| ())),
    }
    let msg = d.table().cuCtxCreate().map(|_| ()).unwrap_err().to_string();
    assert!(msg.contains("cuCtxCreate") && msg.contains("12.5"), "{msg}");
    // ... while its older ABI is there.
    assert!(d.table().cuGraphAddNode_v12020().is_ok());
    assert!(d.table().cuCtxCreate_v3020().is_ok());
}

#[test]
fn the_driver_hands_back_an_older_abi_when_asked_for_a_newer_one() {
    // The hazard the version gating exists for: asked for cuGraphAddNode at 12.3
    // (the `_v2` ABI with edge data), 535 answers with its 12.2 function.
    let Some(d) = load() else { return };
    let get = d.table().cuGetProcAddress().expect("cuGetProcAddress_v2");
    let ask = |version| {
        let mut p = std::ptr::null_mut();
        let mut status = CUdriverProcAddressQueryResult::CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
        let r = unsafe { get(c"cuGraphAddNode".as_ptr(), &mut p, version, 0, &mut status) };
        (r, status, p)
    };
    let (r12020, _, p12020) = ask(12020);
    let (r12030, s12030, p12030) = ask(12030);
    assert_eq!(
        (r12020, r12030),
        (CUresult::CUDA_SUCCESS, CUresult::CUDA_SUCCESS)
    );
    assert_eq!(
        s12030,
        CUdriverProcAddressQueryResult::CU_GET_PROC_ADDRESS_SUCCESS
    );
    assert!(
        !p12030.is_null() && p12030 == p12020,
        "535 returned its 12.2 cuGraphAddNode for 12.3"
    );
    assert!(d.table().cuGraphAddNode_v12030().is_err());
}

#[test]
fn cu_init_is_the_typed_no_device_error() {
    let Some(d) = load() else { return };
    let err = d.init().unwrap_err();
    assert_eq!(err, CudaError::Driver(CUresult::CUDA_ERROR_NO_DEVICE));
    assert!(err.is_no_device());
    assert_eq!(
        err.to_string(),
        "CUDA_ERROR_NO_DEVICE (100): no CUDA-capable device is detected"
    );
    // The answer is kept; later calls are NOT_INITIALIZED, as measured.
    assert_eq!(d.init().unwrap_err(), err);
    let mut n = 0;
    let r = unsafe { d.table().cuDeviceGetCount().unwrap()(&mut n) };
    assert_eq!(r, CUresult::CUDA_ERROR_NOT_INITIALIZED);
}

#[test]
fn error_names_and_strings_equal_the_drivers() {
    let Some(d) = load() else { return };
    let get_name = d.table().cuGetErrorName().unwrap();
    let get_string = d.table().cuGetErrorString().unwrap();
    let (mut compared, mut ours) = (0, Vec::new());
    for (name, code) in CUresult::KNOWN {
        let mut n: *const c_char = std::ptr::null();
        let mut s: *const c_char = std::ptr::null();
        // Never NULL out-pointers: 535 crashes on them.
        let rn = unsafe { get_name(*code, &mut n) };
        let rs = unsafe { get_string(*code, &mut s) };
        if rn == CUresult::CUDA_SUCCESS && rs == CUresult::CUDA_SUCCESS {
            let dn = unsafe { CStr::from_ptr(n) }.to_str().unwrap();
            let ds = unsafe { CStr::from_ptr(s) }.to_str().unwrap();
            assert_eq!(dn, *name);
            assert_eq!(code.name(), Some(dn));
            assert_eq!(code.message(), Some(ds), "{name}");
            compared += 1;
        } else {
            assert_eq!(
                (rn, rs),
                (
                    CUresult::CUDA_ERROR_INVALID_VALUE,
                    CUresult::CUDA_ERROR_INVALID_VALUE
                )
            );
            assert!(
                code.message().is_some_and(|m| !m.is_empty()),
                "{name} has no message of ours"
            );
            ours.push(code.0);
        }
    }
    // design.md: 535 knows 93 of the 12.9 header's 100 codes; the 13.x ones are ours too.
    assert_eq!(compared, 93, "driver knows {compared}; ours: {ours:?}");
    for code in [226, 402, 721, 913, 914, 915, 916] {
        assert!(ours.contains(&code), "{code} should be ours: {ours:?}");
    }
    // An unknown code is refused, and we keep it as its value.
    let mut s: *const c_char = std::ptr::null();
    assert_eq!(
        unsafe { get_string(CUresult(4242), &mut s) },
        CUresult::CUDA_ERROR_INVALID_VALUE
    );
    assert_eq!(CUresult(4242).message(), None);
}

#[test]
fn a_wrong_path_names_the_one_path_tried() {
    // SAFETY: no such file: nothing is loaded.
    let options = unsafe { DriverOptions::new().path("/nonexistent/libcuda.so.1") };
    let err = Driver::load(&options).unwrap_err();
    match &err {
        LoadError::LibraryNotFound { tried } => {
            assert_eq!(
                tried.len(),
                1,
                "an explicit path is the only one tried: {tried:?}"
            );
            assert_eq!(tried[0].path, "/nonexistent/libcuda.so.1");
            assert!(
                tried[0].error.contains("No such file"),
                "{}",
                tried[0].error
            );
        }
        other => panic!("expected LibraryNotFound, got {other:?}"),
    }
    assert!(err.to_string().contains("/nonexistent/libcuda.so.1"));
}

#[test]
fn the_default_search_tries_libcuda_so_1_then_libcuda_so() {
    // No libcuda is installed on this machine: the search must list both names.
    if Driver::load(&DriverOptions::new()).is_ok() {
        eprintln!("a system CUDA driver is installed; the not-found path is not observable here");
        return;
    }
    match Driver::load(&DriverOptions::new()).unwrap_err() {
        LoadError::LibraryNotFound { tried } => {
            let paths: Vec<_> = tried.iter().map(|a| a.path.as_str()).collect();
            assert_eq!(paths, ["libcuda.so.1", "libcuda.so"]);
        }
        other => panic!("expected LibraryNotFound, got {other:?}"),
    }
}

#[test]
fn a_library_that_is_not_cuda_is_refused_by_name() {
    // SAFETY: zlib's initialisers are harmless, and the loader calls none of its
    // functions once `cuDriverGetVersion` is found missing.
    let options = unsafe { DriverOptions::new().path("libz.so.1") };
    let err = Driver::load(&options).unwrap_err();
    assert_eq!(
        err,
        LoadError::NotACudaDriver {
            path: "libz.so.1".into(),
            symbol: "cuDriverGetVersion"
        }
    );
}

#[test]
fn per_thread_default_stream_resolves_the_ptsz_variants() {
    let Some(path) = common::real_driver() else {
        return;
    };
    // SAFETY (both): the fixture is NVIDIA's libcuda.so.1 (535).
    let options = unsafe { DriverOptions::new().path(&path) };
    let legacy = Driver::load(&options).unwrap();
    let ptds = Driver::load(&options.per_thread_default_stream(true)).unwrap();
    let l = legacy.table();
    let p = ptds.table();
    // Stream-taking functions differ; the others are the same functions.
    assert_ne!(
        l.cuLaunchKernel().ok().map(|f| f as usize),
        p.cuLaunchKernel().ok().map(|f| f as usize)
    );
    assert_ne!(
        l.cuMemcpyAsync().ok().map(|f| f as usize),
        p.cuMemcpyAsync().ok().map(|f| f as usize)
    );
    assert_eq!(
        l.cuInit().ok().map(|f| f as usize),
        p.cuInit().ok().map(|f| f as usize)
    );
    assert_eq!(
        l.resolved().filter(|e| e.1).count(),
        p.resolved().filter(|e| e.1).count()
    );
}

#[test]
fn the_in_process_entry_point_resolves_the_same_table() {
    let Some(d) = load() else { return };
    let get = d.table().cuGetProcAddress().unwrap();
    // SAFETY: the real driver's cuGetProcAddress_v2, valid while `d` lives.
    let inproc = unsafe { Driver::from_proc_address(get, &DriverOptions::new()) }.unwrap();
    assert_eq!(inproc.resolver(), Resolver::InProcess);
    assert_eq!(inproc.version(), d.version());
    assert_eq!(inproc.path(), None);
    for ((e, a), (_, b)) in d.table().resolved().zip(inproc.table().resolved()) {
        assert_eq!(a, b, "{}", e.name);
    }
    assert_eq!(ENTRIES.len(), d.table().resolved().count());
}

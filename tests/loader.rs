//! The loader's rules against a fake in-process driver: version gating (never ask for
//! an ABI newer than the driver), absent and null functions, required symbols, the
//! per-thread default stream, and once-only `cuInit`.

use oxicuda_driver::sys::{CUdriverProcAddressQueryResult, CUresult, cuuint64_t};
use oxicuda_driver::table::ENTRIES;
use oxicuda_driver::{CudaError, Driver, DriverOptions, DriverVersion, LoadError, Resolver};
use std::cell::{Cell, RefCell};
use std::ffi::{CStr, c_char, c_int, c_uint, c_void};

thread_local! {
    static VERSION: Cell<c_int> = const { Cell::new(12020) };
    static VERSION_RESULT: Cell<CUresult> = const { Cell::new(CUresult::CUDA_SUCCESS) };
    static HAS_VERSION_FN: Cell<bool> = const { Cell::new(true) };
    static NULL_WITH_SUCCESS: Cell<bool> = const { Cell::new(false) };
    static ASKED: RefCell<Vec<(String, c_int, cuuint64_t)>> = const { RefCell::new(Vec::new()) };
    static INIT_CALLS: Cell<u32> = const { Cell::new(0) };
    static LOOKUP_FAILS: Cell<Option<CUresult>> = const { Cell::new(None) };
}

unsafe extern "C" fn fake_version(v: *mut c_int) -> CUresult {
    unsafe { *v = VERSION.get() };
    VERSION_RESULT.get()
}

unsafe extern "C" fn fake_init(_flags: c_uint) -> CUresult {
    INIT_CALLS.set(INIT_CALLS.get() + 1);
    CUresult::CUDA_ERROR_NO_DEVICE
}

unsafe extern "C" fn fake_get_proc(
    symbol: *const c_char,
    pfn: *mut *mut c_void,
    version: c_int,
    flags: cuuint64_t,
    status: *mut CUdriverProcAddressQueryResult,
) -> CUresult {
    let name = unsafe { CStr::from_ptr(symbol) }
        .to_str()
        .unwrap()
        .to_owned();
    if let Some(code) = LOOKUP_FAILS.get() {
        ASKED.with_borrow_mut(|a| a.push((name, version, flags)));
        return code; // a failed call: nothing written
    }
    let found: *mut c_void = match name.as_str() {
        "cuDriverGetVersion" if HAS_VERSION_FN.get() => fake_version as *mut c_void,
        "cuInit" => fake_init as *mut c_void,
        "cuCtxSynchronize" if NULL_WITH_SUCCESS.get() => std::ptr::null_mut(),
        "cuCtxSynchronize" => fake_init as *mut c_void, // any non-null pointer
        _ => {
            ASKED.with_borrow_mut(|a| a.push((name, version, flags)));
            unsafe {
                *status = CUdriverProcAddressQueryResult::CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND
            };
            return CUresult::CUDA_ERROR_NOT_FOUND;
        }
    };
    ASKED.with_borrow_mut(|a| a.push((name, version, flags)));
    unsafe {
        *pfn = found;
        *status = CUdriverProcAddressQueryResult::CU_GET_PROC_ADDRESS_SUCCESS;
    }
    CUresult::CUDA_SUCCESS
}

fn load(options: &DriverOptions) -> Result<Driver, LoadError> {
    ASKED.with_borrow_mut(Vec::clear);
    // SAFETY: `fake_get_proc` returns null or functions with the named ABI.
    unsafe { Driver::from_proc_address(fake_get_proc, options) }
}

#[test]
fn never_asks_for_an_abi_newer_than_the_driver() {
    VERSION.set(12020);
    let d = load(&DriverOptions::new()).unwrap();
    assert_eq!(d.version(), DriverVersion::new(12, 2));
    assert_eq!(d.resolver(), Resolver::InProcess);
    d.table().resolved().for_each(drop); // ask for every slot
    let asked = ASKED.with_borrow(Clone::clone);
    assert!(
        asked.iter().all(|(_, v, _)| *v <= 12020),
        "asked above 12020"
    );
    // Every line the driver's version covers was asked for at its own version.
    for e in ENTRIES.iter().filter(|e| e.version <= 12020) {
        assert!(
            asked
                .iter()
                .any(|(n, v, f)| n == e.base_name() && *v == e.version as c_int && *f == 0),
            "{} not asked at {}",
            e.name,
            e.version
        );
    }
    // Newer lines are unavailable without asking, naming what they need.
    let err = d.table().cuCtxCreate().map(|_| ()).unwrap_err();
    assert_eq!(
        err,
        CudaError::NotSupported {
            function: "cuCtxCreate",
            needs: DriverVersion::new(12, 5)
        }
    );
    // The same driver claiming 12.9 is asked for them.
    VERSION.set(12090);
    let d = load(&DriverOptions::new()).unwrap();
    assert!(d.table().cuCtxCreate().is_err()); // asked for, and absent from the fake
    assert!(ASKED.with_borrow(|a| a.iter().any(|(n, v, _)| n == "cuCtxCreate" && *v == 12050)));
    assert_eq!(d.version().to_string(), "12.9");
    VERSION.set(12020);
}

#[test]
fn the_table_is_resolved_on_first_use_and_a_failed_lookup_is_not_kept() {
    let d = load(&DriverOptions::new()).unwrap();
    // Loading asks for the version function alone.
    let names = || ASKED.with_borrow(|a| a.iter().map(|x| x.0.clone()).collect::<Vec<_>>());
    assert_eq!(names(), ["cuDriverGetVersion"]);
    // A failed call of the resolver comes back as its code, and no slot keeps it.
    LOOKUP_FAILS.set(Some(CUresult::CUDA_ERROR_OUT_OF_MEMORY));
    let err = d.table().cuInit().map(|_| ()).unwrap_err();
    LOOKUP_FAILS.set(None);
    assert_eq!(err, CudaError::Driver(CUresult::CUDA_ERROR_OUT_OF_MEMORY));
    // The next use asks again and keeps the answer: asked once more, then never.
    let init = d.table().cuInit().unwrap();
    assert_eq!(init as usize, fake_init as *const () as usize);
    d.table().cuInit().unwrap();
    assert_eq!(names(), ["cuDriverGetVersion", "cuInit", "cuInit"]);
    // An absent function is kept absent too: asked once.
    assert!(d.table().cuMemFree().is_err() && d.table().cuMemFree().is_err());
    assert_eq!(names().iter().filter(|n| *n == "cuMemFree").count(), 1);
    // So is one the driver answers NOT_SUPPORTED for: an answer fixed for fixed
    // arguments, not a failed call.
    LOOKUP_FAILS.set(Some(CUresult::CUDA_ERROR_NOT_SUPPORTED));
    let err = d.table().cuMemAlloc().map(|_| ()).unwrap_err();
    LOOKUP_FAILS.set(None);
    assert!(
        matches!(
            err,
            CudaError::NotSupported {
                function: "cuMemAlloc",
                ..
            }
        ),
        "{err:?}"
    );
    assert!(d.table().cuMemAlloc().is_err());
    assert_eq!(names().iter().filter(|n| *n == "cuMemAlloc").count(), 1);
    // The Debug form counts without asking (the version function, kept at load,
    // cuInit, cuMemFree and cuMemAlloc).
    assert_eq!(
        format!("{:?}", d.table()),
        format!(
            "DriverTable {{ 2 resolved of 4 asked for, {} lines }}",
            ENTRIES.len()
        )
    );
}

#[test]
fn a_missing_function_does_not_fail_the_load_but_its_call_does() {
    let d = load(&DriverOptions::new()).unwrap();
    assert!(d.table().cuInit().is_ok());
    let err = d.table().cuMemAlloc().map(|_| ()).unwrap_err();
    assert_eq!(
        err,
        CudaError::NotSupported {
            function: "cuMemAlloc",
            needs: DriverVersion::new(3, 2)
        }
    );
    assert!(err.to_string().contains("cuMemAlloc"), "{err}");
}

#[test]
fn a_null_pointer_with_success_is_an_absent_function() {
    NULL_WITH_SUCCESS.set(true);
    let d = load(&DriverOptions::new()).unwrap();
    assert!(d.table().cuCtxSynchronize_v2000().is_err());
    NULL_WITH_SUCCESS.set(false);
    let d = load(&DriverOptions::new()).unwrap();
    assert!(d.table().cuCtxSynchronize_v2000().is_ok());
}

#[test]
fn cu_driver_get_version_is_required() {
    HAS_VERSION_FN.set(false);
    let err = load(&DriverOptions::new()).unwrap_err();
    HAS_VERSION_FN.set(true);
    assert!(
        matches!(
            err,
            LoadError::NotACudaDriver {
                symbol: "cuDriverGetVersion",
                ..
            }
        ),
        "{err:?}"
    );

    VERSION_RESULT.set(CUresult::CUDA_ERROR_UNKNOWN);
    let err = load(&DriverOptions::new()).unwrap_err();
    VERSION_RESULT.set(CUresult::CUDA_SUCCESS);
    assert_eq!(err, LoadError::VersionQuery(CUresult::CUDA_ERROR_UNKNOWN));
}

#[test]
fn per_thread_default_stream_asks_with_its_flag_and_registration_version() {
    let d = load(&DriverOptions::new().per_thread_default_stream(true)).unwrap();
    d.table().resolved().for_each(drop); // ask for every slot
    let asked = ASKED.with_borrow(Clone::clone);
    assert!(
        asked.iter().all(|(_, _, f)| *f == 2),
        "every request carries PER_THREAD_DEFAULT_STREAM"
    );
    // cuMemcpyHtoD's line is the 3.2 ABI; its _ptds variant is registered at 7.0.
    assert!(
        asked
            .iter()
            .any(|(n, v, _)| n == "cuMemcpyHtoD" && *v == 7000)
    );
    assert!(asked.iter().any(|(n, v, _)| n == "cuInit" && *v == 2000));
}

#[test]
fn cu_init_is_called_once_and_its_answer_kept() {
    let d = load(&DriverOptions::new()).unwrap();
    let before = INIT_CALLS.get();
    assert_eq!(
        d.init(),
        Err(CudaError::Driver(CUresult::CUDA_ERROR_NO_DEVICE))
    );
    assert_eq!(
        d.init(),
        Err(CudaError::Driver(CUresult::CUDA_ERROR_NO_DEVICE))
    );
    assert_eq!(INIT_CALLS.get() - before, 1);
}

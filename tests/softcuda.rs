//! The loader against the software driver, both ways it can be reached: `dlopen` of
//! `libsoftcuda.so` (as the real driver is loaded) and in-process through its
//! `cuGetProcAddress_v2`.

mod common;

use common::libsoftcuda;

use oxicuda_driver::error::check;
use oxicuda_driver::sys::{CUdevice_attribute, CUresult};
use oxicuda_driver::{CudaError, Driver, DriverOptions, DriverVersion, Resolver};

fn exercise(d: &Driver) {
    assert_eq!(d.version(), DriverVersion::new(12, 9));
    d.init().unwrap();
    let t = d.table();
    let mut n = 0;
    check(unsafe { t.cuDeviceGetCount().unwrap()(&mut n) }).unwrap();
    assert_eq!(n, 2);
    let mut major = 0;
    let cc = CUdevice_attribute::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR;
    check(unsafe { t.cuDeviceGetAttribute().unwrap()(&mut major, cc, 1) }).unwrap();
    assert_eq!(major, 8);
    // What softcuda does not implement is unavailable, by name — not a crash.
    assert!(matches!(
        t.cuMulticastCreate(),
        Err(CudaError::NotSupported {
            function: "cuMulticastCreate",
            ..
        })
    ));
    // The newest cuCtxCreate ABI (12.5) is not implemented; the 3.2 one is.
    assert!(t.cuCtxCreate().is_err() && t.cuCtxCreate_v3020().is_ok());
    let resolved = t.resolved().filter(|(_, ok)| *ok).count();
    assert!(resolved >= 100, "only {resolved} functions resolved");
    let mut bad = 0;
    assert_eq!(
        unsafe { t.cuDeviceGetAttribute().unwrap()(&mut bad, cc, 7) },
        CUresult::CUDA_ERROR_INVALID_DEVICE
    );
}

#[test]
fn libsoftcuda_loads_through_dlopen_like_the_real_driver() {
    // SAFETY: libsoftcuda.so implements the driver ABI.
    let options = unsafe { DriverOptions::new().path(libsoftcuda()) };
    let d = Driver::load(&options).unwrap();
    assert_eq!(d.resolver(), Resolver::ProcAddressV2);
    exercise(&d);
}

#[test]
fn softcuda_loads_in_process() {
    // SAFETY: softcuda declares the same C signature with its own (ABI-identical,
    // `#[repr(transparent)]`-compatible) types, and follows the driver's contract.
    let get = unsafe {
        std::mem::transmute::<*const (), oxicuda_driver::table::pfn::cuGetProcAddress>(
            softcuda::cuGetProcAddress_v2 as *const (),
        )
    };
    let d = unsafe { Driver::from_proc_address(get, &DriverOptions::new()) }.unwrap();
    assert_eq!(d.resolver(), Resolver::InProcess);
    exercise(&d);
}

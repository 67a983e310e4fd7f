//! The safe layer on a driver that reports CUDA 13.5: softcuda configured with
//! `SOFTCUDA_VERSION=13050` (this binary's one test sets it before the driver loads).
//!
//! - The signature check at lookup asks `cuFuncGetParamCount` / `cuKernelGetParamCount`
//!   (13.2) first and then exactly that many parameters: a failed parameter query is
//!   the driver's error, never a shorter list (which reads as a signature mismatch).
//! - The names 13.0 gave a new ABI (`cuCtxSynchronize @ 13000`, ...) are lines softcuda
//!   does not implement, and the safe layer does not need them: it calls the older
//!   lines (`cuCtxSynchronize_v2000`) on every driver.
//!
//! softcuda only: the GPU suite's driver reports what it is.

mod common;

use oxicuda_driver::launch::{In, Out};
use oxicuda_driver::module::JitOptions;
use oxicuda_driver::sys::{CUctx_flags, CUresult, CUstream_flags};
use oxicuda_driver::{Context, CudaError, DriverVersion};

const SLICES: &str = include_str!("../kernels/slices.ptx");

type VectorAdd = (In<f32>, In<f32>, Out<f32>);

#[test]
fn a_13_5_driver_checks_signatures_with_the_parameter_count() {
    if common::ON_GPU {
        return;
    }
    // SAFETY: this binary's only test, and nothing has read the environment or started
    // another thread of ours yet: softcuda reads its version when the driver loads below.
    unsafe { std::env::set_var("SOFTCUDA_VERSION", "13050") };
    let (d, _g) = common::driver();
    assert_eq!(d.version(), DriverVersion::new(13, 5));
    let t = d.table();
    assert!(t.cuFuncGetParamCount().is_ok());
    assert!(t.cuKernelGetParamCount().is_ok());
    // 13.x ABIs softcuda does not implement are absent; their older lines are there.
    assert!(t.cuCtxSynchronize().is_err());
    assert!(t.cuCtxSynchronize_v2000().is_ok());
    assert!(t.cuLaunchHostFunc().is_err());
    assert!(t.cuLaunchHostFunc_v10000().is_ok());

    let ctx = Context::new(&d.device(0).unwrap(), CUctx_flags::empty()).unwrap();
    ctx.bind(|cur| -> Result<(), CudaError> {
        let m = cur.load_ptx(SLICES, &JitOptions::default())?;
        softcuda::control::log_calls(true);
        // SAFETY: kernels/slices.cu: vector_add writes c only below its length and
        // reads a and b only below theirs.
        let add = unsafe { m.function::<VectorAdd>("vector_add")? };
        let calls = softcuda::control::call_log();
        softcuda::control::log_calls(false);
        let info = calls.iter().filter(|c| *c == "cuFuncGetParamInfo").count();
        assert!(
            calls.iter().any(|c| c == "cuFuncGetParamCount"),
            "{calls:?}"
        );
        // Exactly the parameters the count names (the PTX declares three, one per
        // view), none past the last.
        assert_eq!(info, 3, "{calls:?}");

        // A wrong declaration is still refused, naming the parameter.
        // SAFETY: refused before any launch.
        let wrong = unsafe { m.function::<(In<f32>, In<f32>, u64)>("vector_add") };
        assert!(
            matches!(wrong, Err(CudaError::SignatureMismatch { .. })),
            "{:?}",
            wrong.map(|_| ())
        );

        // A parameter query that fails with INVALID_VALUE is the driver's error: with
        // the count known it cannot mean "past the last parameter".
        softcuda::control::inject_fault(
            "cuFuncGetParamInfo",
            2,
            CUresult::CUDA_ERROR_INVALID_VALUE.0,
        );
        // SAFETY: as above.
        let failed = unsafe { m.function::<VectorAdd>("vector_add") };
        softcuda::control::clear_faults();
        assert!(
            matches!(
                failed,
                Err(CudaError::Driver(CUresult::CUDA_ERROR_INVALID_VALUE))
            ),
            "{:?}",
            failed.map(|_| ())
        );
        // So is a failed count.
        softcuda::control::inject_fault(
            "cuFuncGetParamCount",
            1,
            CUresult::CUDA_ERROR_INVALID_HANDLE.0,
        );
        // SAFETY: as above.
        let failed = unsafe { m.function::<VectorAdd>("vector_add") };
        softcuda::control::clear_faults();
        assert!(
            matches!(
                failed,
                Err(CudaError::Driver(CUresult::CUDA_ERROR_INVALID_HANDLE))
            ),
            "{:?}",
            failed.map(|_| ())
        );

        // The safe layer works as on 12.x: a launch, a stream, the context's own
        // synchronisation (the 2.0 ABI) and its device.
        let a = cur.alloc_from(&[1.0f32, 2.0, 3.0])?;
        let b = cur.alloc_from(&[10.0f32, 20.0, 30.0])?;
        let mut c = cur.alloc::<f32>(3)?;
        let s = cur.create_stream(CUstream_flags::CU_STREAM_NON_BLOCKING)?;
        add.launch(&s, 1, 32, 0, (&a, &b, &mut c))?;
        cur.synchronize()?;
        assert_eq!(c.to_vec()?, [11.0, 22.0, 33.0]);
        assert_eq!(cur.device()?.ordinal(), 0);
        Ok(())
    })
    .unwrap()
    .unwrap();

    // Library kernels: the same check through cuKernelGetParamCount.
    let lib = d
        .load_library(SLICES.as_bytes(), &JitOptions::default())
        .unwrap();
    softcuda::control::log_calls(true);
    // SAFETY: as above.
    let k = unsafe { lib.kernel::<VectorAdd>("vector_add") };
    let calls = softcuda::control::call_log();
    softcuda::control::log_calls(false);
    assert!(k.is_ok(), "{:?}", k.map(|_| ()));
    assert!(
        calls.iter().any(|c| c == "cuKernelGetParamCount"),
        "{calls:?}"
    );
    softcuda::control::inject_fault(
        "cuKernelGetParamInfo",
        1,
        CUresult::CUDA_ERROR_INVALID_VALUE.0,
    );
    // SAFETY: as above.
    let failed = unsafe { lib.kernel::<VectorAdd>("vector_add") };
    softcuda::control::clear_faults();
    assert!(
        matches!(
            failed,
            Err(CudaError::Driver(CUresult::CUDA_ERROR_INVALID_VALUE))
        ),
        "{:?}",
        failed.map(|_| ())
    );
    drop(k);
    drop(lib);
    drop(ctx);
    common::no_leaks();
}

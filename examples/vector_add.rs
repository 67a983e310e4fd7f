//! `c = a + b` for 1M floats on the GPU, checked against the CPU.
//!
//! This version drives the raw driver table (the safe layer is the next milestone).
//! With no driver chosen and no GPU on the machine it runs on softcuda, the software
//! driver, and says so. With a driver chosen (`OXICUDA_DRIVER_PATH`) that has no
//! device, it says so and exits with status 2.
//!
//! `cargo run --example vector_add`

#[path = "common/mod.rs"]
mod common;

use oxicuda_driver::error::check;
use oxicuda_driver::sys::{CUcontext, CUdevice, CUdeviceptr, CUfunction, CUmodule, CUstream};
use oxicuda_driver::{CudaError, Driver};
use std::ffi::{c_uint, c_void};
use std::process::ExitCode;

const PTX: &str = concat!(include_str!("../kernels/vector_add.ptx"), "\0");
const N: usize = 1 << 20;

fn main() -> ExitCode {
    let chosen = match common::choose() {
        Ok(c) => c,
        Err(e) if e.is_no_device() => {
            eprintln!("no CUDA device behind the chosen driver ({e})");
            return ExitCode::from(2);
        }
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(1);
        }
    };
    match run(chosen.driver()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(1)
        }
    }
}

fn run(driver: &Driver) -> Result<(), CudaError> {
    let t = driver.table();
    let a: Vec<f32> = (0..N).map(|i| i as f32).collect();
    let b: Vec<f32> = (0..N).map(|i| (2 * i) as f32).collect();
    let mut c = vec![0f32; N];
    let bytes = N * size_of::<f32>();

    // SAFETY (all calls below): every out-pointer is a valid local; host buffers hold
    // `bytes` bytes; the kernel's parameters are three device pointers and a u32, as
    // in kernels/vector_add.cu; everything created is destroyed before returning.
    unsafe {
        let mut dev: CUdevice = 0;
        check(t.cuDeviceGet()?(&mut dev, 0))?;
        let mut ctx = CUcontext::NULL;
        check(t.cuDevicePrimaryCtxRetain()?(&mut ctx, dev))?;
        check(t.cuCtxPushCurrent()?(ctx))?;
        let result = (|| -> Result<(), CudaError> {
            let mut module = CUmodule::NULL;
            check(t.cuModuleLoadData()?(&mut module, PTX.as_ptr().cast()))?;
            let mut f = CUfunction::NULL;
            check(t.cuModuleGetFunction()?(
                &mut f,
                module,
                c"vector_add".as_ptr(),
            ))?;
            let mut d: [CUdeviceptr; 3] = [0; 3];
            for p in &mut d {
                check(t.cuMemAlloc()?(p, bytes))?;
            }
            check(t.cuMemcpyHtoD()?(d[0], a.as_ptr().cast(), bytes))?;
            check(t.cuMemcpyHtoD()?(d[1], b.as_ptr().cast(), bytes))?;
            let n = N as c_uint;
            let mut params: [*mut c_void; 4] = [
                (&raw const d[0]).cast_mut().cast(),
                (&raw const d[1]).cast_mut().cast(),
                (&raw const d[2]).cast_mut().cast(),
                (&raw const n).cast_mut().cast(),
            ];
            let block = 256;
            let grid = N.div_ceil(block as usize) as c_uint;
            check(t.cuLaunchKernel()?(
                f,
                grid,
                1,
                1,
                block,
                1,
                1,
                0,
                CUstream::NULL,
                params.as_mut_ptr(),
                std::ptr::null_mut(),
            ))?;
            check(t.cuCtxSynchronize()?())?;
            check(t.cuMemcpyDtoH()?(c.as_mut_ptr().cast(), d[2], bytes))?;
            for p in d {
                check(t.cuMemFree()?(p))?;
            }
            check(t.cuModuleUnload()?(module))
        })();
        let mut popped = CUcontext::NULL;
        check(t.cuCtxPopCurrent()?(&mut popped))?;
        check(t.cuDevicePrimaryCtxRelease()?(dev))?;
        result?;
    }

    let wrong = (0..N).filter(|&i| c[i] != a[i] + b[i]).count();
    if wrong != 0 {
        eprintln!("{wrong} of {N} results differ from the CPU");
        return Err(CudaError::Driver(
            oxicuda_driver::sys::CUresult::CUDA_ERROR_UNKNOWN,
        ));
    }
    println!("vector_add: {N} elements, all equal to the CPU result");
    Ok(())
}

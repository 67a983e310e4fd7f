//! `c = a + b` for 1M floats on the GPU, checked against the CPU, with the safe layer:
//! a context bound to this thread, device buffers, a module from PTX, and a kernel
//! declared with its typed signature.
//!
//! With no driver chosen and no GPU on the machine it runs on softcuda, the software
//! driver, and says so. With a driver chosen (`OXICUDA_DRIVER_PATH`) that has no
//! device, it says so and exits with status 2.
//!
//! `cargo run --example vector_add`

#[path = "common/mod.rs"]
mod common;

use oxicuda_driver::launch::{In, Out};
use oxicuda_driver::module::JitOptions;
use oxicuda_driver::sys::{CUctx_flags, CUstream_flags};
use oxicuda_driver::{Context, CudaError, Driver};
use std::process::ExitCode;

const PTX: &str = include_str!("../kernels/slices.ptx");
const N: usize = 1 << 20;

fn main() -> ExitCode {
    common::main_with(|driver, _soft| run(driver))
}

fn run(driver: &'static Driver) -> Result<(), CudaError> {
    let device = driver.best_device()?;
    println!(
        "device: {} (compute capability {:?})",
        device.name()?,
        device.compute_capability()?
    );
    let a: Vec<f32> = (0..N).map(|i| i as f32).collect();
    let b: Vec<f32> = (0..N).map(|i| (2 * i) as f32).collect();
    let ctx = Context::new(&device, CUctx_flags::empty())?;
    let c = ctx.bind(|cur| -> Result<Vec<f32>, CudaError> {
        let module = cur.load_ptx(PTX, &JitOptions::default())?;
        // SAFETY: kernels/slices.cu's vector_add reads `a` and `b` and writes `c`, each
        // only below the length the launch passes with it — whatever views it is given.
        let vector_add = unsafe { module.function::<(In<f32>, In<f32>, Out<f32>)>("vector_add")? };
        let (da, db) = (cur.alloc_from(&a)?, cur.alloc_from(&b)?);
        let mut dc = cur.alloc::<f32>(N)?;
        let stream = cur.create_stream(CUstream_flags::CU_STREAM_NON_BLOCKING)?;
        vector_add.launch(
            &stream,
            (N as u32).div_ceil(256),
            256,
            0,
            (&da, &db, &mut dc),
        )?;
        stream.synchronize()?;
        dc.to_vec()
    })??;
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

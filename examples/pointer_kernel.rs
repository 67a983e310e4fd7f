//! An existing CUDA kernel, raw pointers and a count, launched through the safe layer:
//! `kernels/vector_add_mangled.cu`'s
//! `__global__ void vectorAdd(const float *a, const float *b, float *c, int n)`,
//! looked up by its mangled name (`_Z9vectorAddPKfS0_Pfi`, from the PTX's `.entry`),
//! declared `(Ptr<f32>, Ptr<f32>, PtrMut<f32>, Len<i32>)`. The launch checks `n`
//! against every view before the driver is called: a view too short is refused, not
//! read past. Then `kernels/reduce_shared.cu`'s block reduction, whose output holds
//! one value per block (no length bounds it), through `unsafe` `launch_unchecked`.
//!
//! With no driver chosen and no GPU on the machine it runs on softcuda, the software
//! driver, and says so. With a driver chosen (`OXICUDA_DRIVER_PATH`) that has no
//! device, it says so and exits with status 2.
//!
//! `cargo run --example pointer_kernel`

#[path = "common/mod.rs"]
mod common;

use oxicuda_driver::launch::{Len, Ptr, PtrMut};
use oxicuda_driver::module::JitOptions;
use oxicuda_driver::sys::{CUctx_flags, CUstream_flags};
use oxicuda_driver::{Context, CudaError, Driver};
use std::process::ExitCode;

const VECTOR_ADD: &str = include_str!("../kernels/vector_add_mangled.ptx");
const REDUCE: &str = include_str!("../kernels/reduce_shared.ptx");
const N: usize = 100_000;

fn main() -> ExitCode {
    common::main_with(|driver, _soft| run(driver))
}

fn run(driver: &'static Driver) -> Result<(), CudaError> {
    let device = driver.best_device()?;
    println!("device: {}", device.name()?);
    let a: Vec<f32> = (0..N).map(|i| i as f32).collect();
    let b: Vec<f32> = (0..N).map(|i| (N - i) as f32).collect();
    let ctx = Context::new(&device, CUctx_flags::empty())?;
    let (c, partial) = ctx.bind(|cur| -> Result<(Vec<f32>, Vec<f32>), CudaError> {
        let module = cur.load_ptx(VECTOR_ADD, &JitOptions::default())?;
        // SAFETY: vectorAdd touches a, b and c only at indices below n (`if (i < n)`).
        let add = unsafe {
            module
                .function::<(Ptr<f32>, Ptr<f32>, PtrMut<f32>, Len<i32>)>("_Z9vectorAddPKfS0_Pfi")?
        };
        let (da, db) = (cur.alloc_from(&a)?, cur.alloc_from(&b)?);
        let mut dc = cur.alloc::<f32>(N)?;
        let stream = cur.create_stream(CUstream_flags::CU_STREAM_NON_BLOCKING)?;
        let grid = (N as u32).div_ceil(256);
        let n = N as i32;
        // A length past the output view is refused before the driver is called.
        let short = add.launch(&stream, grid, 256, 0, (&da, &db, &mut dc, n + 1));
        println!(
            "n = {} with {N}-element views: {}",
            n + 1,
            short.unwrap_err()
        );
        add.launch(&stream, grid, 256, 0, (&da, &db, &mut dc, n))?;

        let module = cur.load_ptx(REDUCE, &JitOptions::default())?;
        // SAFETY: reduce_sum reads `in` below n and writes partial[blockIdx.x]; the
        // launch below passes views that hold n inputs and one output per block.
        let reduce = unsafe { module.function::<(Ptr<f32>, PtrMut<f32>, u32)>("reduce_sum")? };
        let mut dpart = cur.alloc::<f32>(grid as usize)?;
        // SAFETY: `dc` holds N elements, `dpart` one per block of the grid.
        unsafe { reduce.launch_unchecked(&stream, grid, 256, 0, (&dc, &mut dpart, N as u32))? };
        stream.synchronize()?;
        Ok((dc.to_vec()?, dpart.to_vec()?))
    })??;
    let wrong = (0..N).filter(|&i| c[i] != a[i] + b[i]).count();
    let sum: f64 = partial.iter().map(|p| f64::from(*p)).sum();
    if wrong != 0 || sum != (N * N) as f64 {
        eprintln!("{wrong} of {N} results differ from the CPU; sum {sum}");
        return Err(CudaError::Driver(
            oxicuda_driver::sys::CUresult::CUDA_ERROR_UNKNOWN,
        ));
    }
    println!("vectorAdd: {N} elements, all equal to the CPU result; block sums add up to {sum}");
    Ok(())
}

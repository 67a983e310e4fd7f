//! A small kernel library on top of the crate, as a library author writes one: the
//! CUDA library and the keys of its kernels in one value (`Blas`), loaded once and
//! shared by threads through an `Arc`. Each thread binds its own context, takes the
//! kernels' functions there and launches them — no `unsafe` outside the one place the
//! kernels are declared, no self-referential struct, no leaked box.
//!
//! With no driver chosen and no GPU on the machine it runs on softcuda, the software
//! driver, and says so. With a driver chosen (`OXICUDA_DRIVER_PATH`) that has no
//! device, it says so and exits with status 2.
//!
//! `cargo run --example kernel_library`

#[path = "common/mod.rs"]
mod common;

use oxicuda_driver::launch::{In, Out};
use oxicuda_driver::library::{KernelKey, Library};
use oxicuda_driver::module::JitOptions;
use oxicuda_driver::sys::{CUctx_flags, CUstream_flags};
use oxicuda_driver::{Context, CudaError, CurrentContext, Driver};
use std::process::ExitCode;
use std::sync::Arc;

/// `kernels/slices.cu`, written for the slice ABI: every buffer arrives with its length.
const SLICES: &str = include_str!("../kernels/slices.ptx");

/// The kernel library: loaded once for the process, its kernels declared once.
struct Blas {
    library: Library,
    add: KernelKey<(In<f32>, In<f32>, Out<f32>)>,
    saxpy: KernelKey<(f32, In<f32>, Out<f32>)>,
}

impl Blas {
    fn load(driver: &'static Driver) -> Result<Blas, CudaError> {
        let library = driver.load_library(SLICES.as_bytes(), &JitOptions::default())?;
        // SAFETY: kernels/slices.cu: each kernel writes its `Out` only below the
        // length passed with it and reads its `In`s only below theirs.
        let (add, saxpy) = unsafe {
            (
                library.kernel_key("vector_add")?,
                library.kernel_key("saxpy")?,
            )
        };
        Ok(Blas {
            library,
            add,
            saxpy,
        })
    }

    /// y = a·x + (x + x), on the current context's device.
    fn axpx2(&self, cur: &CurrentContext<'_>, a: f32, x: &[f32]) -> Result<Vec<f32>, CudaError> {
        let add = self.library.get(&self.add)?.function(cur)?;
        let saxpy = self.library.get(&self.saxpy)?.function(cur)?;
        let dx = cur.alloc_from(x)?;
        let mut dy = cur.alloc::<f32>(x.len())?;
        let s = cur.create_stream(CUstream_flags::CU_STREAM_NON_BLOCKING)?;
        let grid = (x.len() as u32).div_ceil(256);
        add.launch(&s, grid, 256, 0, (&dx, &dx, &mut dy))?;
        saxpy.launch(&s, grid, 256, 0, (a, &dx, &mut dy))?;
        s.synchronize()?;
        dy.to_vec()
    }
}

fn main() -> ExitCode {
    common::main_with(|driver, _soft| run(driver))
}

fn run(driver: &'static Driver) -> Result<(), CudaError> {
    let device = driver.best_device()?;
    println!("device: {}", device.name()?);
    let blas = Arc::new(Blas::load(driver)?);
    let x: Arc<Vec<f32>> = Arc::new((0..10_000).map(|i| i as f32 * 0.5).collect());
    let workers: Vec<_> = (1..=2)
        .map(|t| {
            let (blas, x) = (blas.clone(), x.clone());
            std::thread::spawn(move || -> Result<bool, CudaError> {
                let ctx = Context::new(&device, CUctx_flags::empty())?;
                let y = ctx.bind(|cur| blas.axpx2(cur, t as f32, &x))??;
                Ok(y.iter()
                    .zip(x.iter())
                    .all(|(y, x)| *y == (t as f32).mul_add(*x, x + x)))
            })
        })
        .collect();
    for (t, w) in workers.into_iter().enumerate() {
        let ok = w.join().map_err(|_| CudaError::InvalidArgument {
            parameter: "worker",
            rule: "must not panic",
        })??;
        println!(
            "thread {}: {} elements, all equal to the CPU result: {ok}",
            t + 1,
            x.len()
        );
        if !ok {
            return Err(CudaError::InvalidArgument {
                parameter: "result",
                rule: "must equal the CPU's",
            });
        }
    }
    println!("kernel_library: one library, two threads, each in its own context");
    Ok(())
}

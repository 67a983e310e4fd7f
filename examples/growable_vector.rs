//! A growable device vector on virtual memory management — what allocator authors
//! build first. It reserves address space for its largest size once, then maps more
//! physical memory at the end as it grows: its device address never changes and no
//! element is ever copied to grow. A kernel (`saxpy`, `y = 2·x + y`) runs over the
//! whole vector after each growth, and the host checks every element.
//!
//! With no driver chosen and no GPU on the machine it runs on softcuda, the software
//! driver, and says so. With a driver chosen (`OXICUDA_DRIVER_PATH`) that has no
//! device, it says so and exits with status 2.
//!
//! `cargo run --example growable_vector`

#[path = "common/mod.rs"]
mod common;

use oxicuda_driver::launch::{In, Out};
use oxicuda_driver::memory::{DeviceCopy, DeviceSlice, DeviceSliceMut};
use oxicuda_driver::module::JitOptions;
use oxicuda_driver::sys::{CUctx_flags, CUstream_flags};
use oxicuda_driver::vmm::AddressRange;
use oxicuda_driver::{Context, CudaError, CurrentContext, Driver};
use std::process::ExitCode;

const PTX: &str = include_str!("../kernels/slices.ptx");

/// A vector of `T` in device memory that grows in place.
struct DeviceVec<'a, 'ctx, T: DeviceCopy> {
    cur: &'a CurrentContext<'ctx>,
    range: AddressRange<'a>,
    len: usize,
    _t: core::marker::PhantomData<T>,
}

impl<'a, 'ctx, T: DeviceCopy> DeviceVec<'a, 'ctx, T> {
    /// An empty vector that can grow to `max` elements without moving.
    fn with_max(cur: &'a CurrentContext<'ctx>, max: usize) -> Result<Self, CudaError> {
        let g = cur.granularity()?;
        let bytes = max
            .checked_mul(size_of::<T>())
            .and_then(|b| g.round_up(b.max(1)))
            .ok_or(CudaError::InvalidArgument {
                parameter: "max",
                rule: "too large",
            })?;
        Ok(DeviceVec {
            cur,
            range: cur.reserve_addresses(bytes)?,
            len: 0,
            _t: core::marker::PhantomData,
        })
    }

    /// Elements that fit without mapping more memory.
    fn capacity(&self) -> usize {
        self.range.mapped_prefix() / size_of::<T>()
    }

    /// Appends `data`, mapping one more piece of memory at the end when it does not
    /// fit (the recommended granularity, or more).
    fn extend_from_host(&mut self, data: &[T]) -> Result<(), CudaError> {
        let new_len = self.len + data.len();
        if new_len > self.capacity() {
            let g = self.cur.granularity()?;
            let missing = (new_len - self.capacity()) * size_of::<T>();
            let step = g.round_up(missing.max(g.recommended())).unwrap_or(missing);
            let at = self.range.mapped_prefix();
            let step = step.min(self.range.size() - at);
            self.range.map(at, self.cur.create_physical(step)?)?;
        }
        self.range
            .slice_mut::<T>(self.len..new_len)?
            .copy_from_host(data)?;
        self.len = new_len;
        Ok(())
    }

    fn as_slice(&self) -> Result<DeviceSlice<'_, T>, CudaError> {
        self.range.slice(..self.len)
    }

    fn as_mut_slice(&mut self) -> Result<DeviceSliceMut<'_, T>, CudaError> {
        self.range.slice_mut(..self.len)
    }
}

fn main() -> ExitCode {
    common::main_with(run)
}

fn run(driver: &'static Driver, soft: bool) -> Result<(), CudaError> {
    let device = driver.best_device()?;
    println!(
        "driver: {} {}; device: {}",
        if soft { "softcuda" } else { "CUDA" },
        driver.version(),
        device.name()?
    );
    let ctx = Context::new(&device, CUctx_flags::empty())?;
    let wrong = ctx.bind(|cur| -> Result<usize, CudaError> {
        let module = cur.load_ptx(PTX, &JitOptions::default())?;
        // SAFETY: kernels/slices.cu's saxpy reads `x` and writes `y`, each only below
        // the length the launch passes with it.
        let saxpy = unsafe { module.function::<(f32, In<f32>, Out<f32>)>("saxpy")? };
        let stream = cur.create_stream(CUstream_flags::empty())?;
        let g = cur.granularity()?;
        println!(
            "granularity: {} KiB minimum, {} KiB recommended",
            g.minimum() / 1024,
            g.recommended() / 1024
        );

        // Room for 4 M floats (16 MiB of addresses); memory is mapped as it grows.
        let mut v = DeviceVec::<f32>::with_max(cur, 4 << 20)?;
        let start = v.range.device_ptr();
        let mut wrong = 0;
        let mut expected: Vec<f32> = Vec::new();
        for round in 0..3 {
            let more: Vec<f32> = (0..700_000)
                .map(|i| (round * 1000 + i % 1000) as f32)
                .collect();
            v.extend_from_host(&more)?;
            expected.extend_from_slice(&more);
            let ones = vec![1.0f32; v.len];
            let mut y = cur.alloc_from(&ones)?;
            let grid = v.len.div_ceil(256) as u32;
            saxpy.launch(&stream, grid, 256, 0, (2.0f32, &v.as_slice()?, &mut y))?;
            let got = y.to_vec()?;
            wrong += got
                .iter()
                .zip(&expected)
                .filter(|(y, x)| **y != 2.0 * **x + 1.0)
                .count();
            println!(
                "grew to {} elements ({} MiB mapped), address {}",
                v.len,
                v.range.mapped_prefix() >> 20,
                if v.range.device_ptr() == start {
                    "unchanged"
                } else {
                    "MOVED"
                }
            );
        }
        // Work through an exclusive view, then the host reads it back.
        v.as_mut_slice()?.fill(3.0)?;
        wrong += v
            .as_slice()?
            .to_vec()?
            .iter()
            .filter(|&&x| x != 3.0)
            .count();
        Ok(wrong)
    })??;
    if wrong != 0 {
        eprintln!("{wrong} results differ from the CPU");
        return Err(CudaError::Driver(
            oxicuda_driver::sys::CUresult::CUDA_ERROR_UNKNOWN,
        ));
    }
    println!("growable_vector: 2100000 elements, all equal to the CPU result, never moved");
    Ok(())
}

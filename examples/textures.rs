//! Textures and surfaces: a small RGBA image in a CUDA array is upscaled twice by a
//! kernel that samples it through a texture with bilinear filtering and normalized
//! coordinates (the hardware's resize), and the result is compared with a CPU
//! reference; then a kernel loads and stores an array of counters through a
//! surface, and the host reads them back without synchronising by hand.
//!
//! With no driver chosen and no GPU on the machine it runs on softcuda, the software
//! driver, and says so. With a driver chosen (`OXICUDA_DRIVER_PATH`) that has no
//! device, it says so and exits with status 2.
//!
//! `cargo run --example textures`

#[path = "common/mod.rs"]
mod common;

use oxicuda_driver::array::ArrayShape;
use oxicuda_driver::launch::Out;
use oxicuda_driver::module::JitOptions;
use oxicuda_driver::sys::{CUctx_flags, CUstream_flags};
use oxicuda_driver::texture::{FilterMode, ReadMode, Surface, Texture, TextureDesc};
use oxicuda_driver::{Context, CudaError, Driver};
use std::process::ExitCode;

const PTX: &str = include_str!("../kernels/handwritten_textures.ptx");
const W: usize = 64;
const H: usize = 48;

fn main() -> ExitCode {
    common::main_with(run)
}

/// The test image: a colour gradient with a bright diagonal.
fn image() -> Vec<[u8; 4]> {
    (0..W * H)
        .map(|i| {
            let (x, y) = (i % W, i / W);
            let diagonal = if x.abs_diff(y) < 3 { 255 } else { 0 };
            [(x * 4) as u8, (y * 5) as u8, diagonal, 255]
        })
        .collect()
}

/// Bilinear sample of `img` at normalized `(u, v)`, clamped at the edges, each
/// channel in `[0, 1]`.
fn bilinear(img: &[[u8; 4]], u: f32, v: f32) -> [f32; 4] {
    let texel = |x: i64, y: i64, c: usize| {
        let x = x.clamp(0, W as i64 - 1) as usize;
        let y = y.clamp(0, H as i64 - 1) as usize;
        f32::from(img[y * W + x][c]) / 255.0
    };
    let (fx, fy) = (u * W as f32 - 0.5, v * H as f32 - 0.5);
    let (x0, y0) = (fx.floor(), fy.floor());
    let (a, b) = (fx - x0, fy - y0);
    let (x0, y0) = (x0 as i64, y0 as i64);
    core::array::from_fn(|c| {
        let top = (1.0 - a) * texel(x0, y0, c) + a * texel(x0 + 1, y0, c);
        let bottom = (1.0 - a) * texel(x0, y0 + 1, c) + a * texel(x0 + 1, y0 + 1, c);
        (1.0 - b) * top + b * bottom
    })
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
    ctx.bind(|cur| -> Result<(), CudaError> {
        let module = cur.load_ptx(PTX, &JitOptions::default())?;
        let stream = cur.create_stream(CUstream_flags::CU_STREAM_NON_BLOCKING)?;

        // Upscale through a texture: bilinear, normalized coordinates and reads.
        let img = image();
        let mut array = cur.array::<[u8; 4]>(ArrayShape::d2(W, H))?;
        array.copy_from_host(&img)?;
        let desc = TextureDesc::default()
            .with_filter(FilterMode::Linear)
            .with_read(ReadMode::NormalizedFloat)
            .normalized();
        let texture = array.texture(&desc)?;
        let (w2, h2) = (2 * W as u32, 2 * H as u32);
        let mut out = cur.alloc_zeros::<[f32; 4]>((w2 * h2) as usize)?;
        // SAFETY: kernels/handwritten_textures.ptx: `sample_2d_norm` takes a texture,
        // a slice of float4 it writes only below its length, two u32 and a f32.
        let resize = unsafe {
            module.function::<(Texture<[u8; 4]>, Out<[f32; 4]>, u32, u32, f32)>("sample_2d_norm")?
        };
        resize.launch(&stream, (w2 * h2).div_ceil(128), 128, 0, (&texture, &mut out, w2, h2, 0.5))?;
        let got = out.to_vec()?;
        let mut worst = 0.0f32;
        for (i, px) in got.iter().enumerate() {
            let (x, y) = (i as u32 % w2, i as u32 / w2);
            let u = (x as f32 + 0.5) / w2 as f32;
            let v = (y as f32 + 0.5) / h2 as f32;
            let expected = bilinear(&img, u, v);
            for c in 0..4 {
                worst = worst.max((px[c] - expected[c]).abs());
            }
        }
        println!(
            "upscaled a {W}x{H} RGBA image to {w2}x{h2} with bilinear filtering: largest difference from the CPU {worst:.4}"
        );
        // The hardware weighs neighbours in 8 fractional bits: 1/256 of a step at most.
        if worst > 1.0 / 256.0 {
            eprintln!("the texture's samples differ from the CPU's by more than 1/256");
            return Err(CudaError::Driver(oxicuda_driver::sys::CUresult::CUDA_ERROR_UNKNOWN));
        }
        drop(texture);

        // Counters in an array, loaded and stored through a surface.
        let (cw, ch) = (64u32, 64u32);
        let mut counters = cur.storage_array::<u32>(ArrayShape::d2(cw as usize, ch as usize))?;
        let start: Vec<u32> = (0..cw * ch).collect();
        counters.copy_from_host(&start)?;
        // SAFETY: `surface_add` loads and stores each element below `w × h` once (the
        // trapping forms: nothing outside the array).
        let add = unsafe { module.function::<(Surface<u32>, u32, u32, u32)>("surface_add")? };
        {
            let mut surface = counters.surface()?;
            for step in [10u32, 32] {
                add.launch(&stream, (cw * ch).div_ceil(256), 256, 0, (&mut surface, cw, ch, step))?;
            }
        }
        // No synchronisation by hand: the copy waits for the kernels that used the array.
        let wrong = counters
            .to_vec()?
            .iter()
            .zip(&start)
            .filter(|(got, s)| **got != **s + 42)
            .count();
        println!("surface: {} counters incremented twice by a kernel, {wrong} wrong", cw * ch);
        if wrong != 0 {
            return Err(CudaError::Driver(oxicuda_driver::sys::CUresult::CUDA_ERROR_UNKNOWN));
        }
        println!("textures: the sampled image and the stored counters match the CPU");
        Ok(())
    })?
}

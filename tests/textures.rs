//! Arrays, textures and surfaces through the safe layer, on softcuda (or with
//! `--features gpu-tests` the driver the environment names): typed arrays of every
//! shape copied to and from host and device memory; mipmapped arrays and their
//! levels; textures sampling arrays with point and linear filtering, normalized
//! coordinates and reads, integer reads, border and clamp addressing, compared with
//! references computed here; surfaces a kernel loads and stores, read back in host
//! order; `txq`; bad shapes and descriptors refused before the driver. No live
//! object is left behind.

mod common;

use common::on_device0;

use oxicuda_driver::array::ArrayShape;
use oxicuda_driver::launch::Out;
use oxicuda_driver::leaks::{self, Kind};
use oxicuda_driver::module::JitOptions;
use oxicuda_driver::sys::CUstream_flags;
use oxicuda_driver::texture::{AddressMode, FilterMode, ReadMode, Surface, Texture, TextureDesc};
use oxicuda_driver::{CudaError, CurrentContext};

const PTX: &str = include_str!("../kernels/handwritten_textures.ptx");

fn invalid<T: core::fmt::Debug>(r: Result<T, CudaError>, parameter: &str) {
    match r {
        Err(CudaError::InvalidArgument { parameter: p, .. }) if p == parameter => {}
        other => panic!("expected InvalidArgument naming `{parameter}`, got {other:?}"),
    }
}

/// Distinct, exactly representable values: 1.5, 3.0, 4.5, ...
fn ramp(n: usize) -> Vec<f32> {
    (0..n).map(|i| (i as f32 + 1.0) * 1.5).collect()
}

#[test]
fn arrays_of_every_shape_round_trip_through_host_and_device_memory() {
    on_device0(|cur| {
        let shapes = [
            ArrayShape::d1(37),
            ArrayShape::d2(13, 7),
            ArrayShape::d3(5, 4, 3),
            ArrayShape::layered_1d(9, 4),
            ArrayShape::layered_2d(6, 5, 3),
            ArrayShape::cubemap(4),
        ];
        for shape in shapes {
            let n = shape.elements()?;
            let data = ramp(n);
            let mut a = cur.array::<f32>(shape)?;
            assert_eq!(a.len(), n, "{shape:?}");
            a.copy_from_host(&data)?;
            assert_eq!(a.to_vec()?, data, "host round trip of {shape:?}");

            // Through device memory: array → buffer → another array → host.
            let mut buffer = cur.alloc_zeros::<f32>(n)?;
            a.copy_to(&mut buffer)?;
            assert_eq!(buffer.to_vec()?, data, "array to device of {shape:?}");
            let mut b = cur.array::<f32>(shape)?;
            b.copy_from(&buffer)?;
            let mut back = vec![0.0f32; n];
            b.copy_to_host(&mut back)?;
            assert_eq!(back, data, "device to array of {shape:?}");
        }

        // Multi-channel elements keep their channels in order.
        let pixels: Vec<[u8; 4]> = (0..12u8).map(|i| [i, i + 1, i + 2, 255 - i]).collect();
        let mut rgba = cur.array::<[u8; 4]>(ArrayShape::d2(4, 3))?;
        rgba.copy_from_host(&pixels)?;
        assert_eq!(rgba.to_vec()?, pixels);

        // Lengths must match, and nothing was copied when they do not.
        match rgba.copy_from_host(&pixels[..11]) {
            Err(CudaError::LengthMismatch {
                destination_len: 12,
                source_len: 11,
            }) => {}
            other => panic!("expected LengthMismatch, got {other:?}"),
        }
        assert_eq!(rgba.to_vec()?, pixels);
        Ok(())
    });
}

#[test]
fn bad_shapes_are_refused_before_the_driver() {
    on_device0(|cur| {
        leaks::enable(false);
        let before = leaks::live_count(Kind::Arrays);
        invalid(cur.array::<f32>(ArrayShape::d1(0)), "width");
        invalid(cur.array::<f32>(ArrayShape::d2(4, 0)), "height");
        invalid(cur.array::<f32>(ArrayShape::d3(4, 4, 0)), "depth");
        invalid(cur.array::<f32>(ArrayShape::layered_2d(4, 4, 0)), "layers");
        invalid(cur.array::<f32>(ArrayShape::d3(usize::MAX, 2, 2)), "shape");
        invalid(
            cur.mipmapped_array::<f32>(ArrayShape::d2(8, 8), 0),
            "levels",
        );
        invalid(
            cur.mipmapped_array::<f32>(ArrayShape::d2(8, 8), 5),
            "levels",
        );
        assert_eq!(leaks::live_count(Kind::Arrays), before, "nothing was made");
        Ok(())
    });
}

#[test]
fn mipmap_levels_halve_and_copy_independently() {
    on_device0(|cur| {
        let mut mip = cur.mipmapped_array::<f32>(ArrayShape::d2(8, 4), 4)?;
        assert_eq!(mip.levels(), 4);
        let sizes: Vec<(usize, usize)> = (0..4)
            .map(|l| {
                let s = mip.level(l).unwrap().shape();
                (s.width(), s.height())
            })
            .collect();
        assert_eq!(sizes, [(8, 4), (4, 2), (2, 1), (1, 1)]);
        for l in 0..4 {
            let mut level = mip.level_mut(l)?;
            let data = ramp(level.len())
                .into_iter()
                .map(|v| v + l as f32 * 100.0)
                .collect::<Vec<_>>();
            level.copy_from_host(&data)?;
        }
        for l in 0..4 {
            let level = mip.level(l)?;
            let expected: Vec<f32> = ramp(level.len())
                .into_iter()
                .map(|v| v + l as f32 * 100.0)
                .collect();
            assert_eq!(level.to_vec()?, expected, "level {l} kept its own data");
        }
        match mip.level(4) {
            Err(CudaError::OutOfRange {
                start: 4, len: 4, ..
            }) => {}
            other => panic!("expected OutOfRange, got {other:?}"),
        }
        Ok(())
    });
}

/// Runs `sample_2d` (or `sample_2d_norm` when `norm`) over a `w × h` grid of
/// samples at `offset` from each element's corner.
fn sample<E: oxicuda_driver::array::ArrayElement>(
    cur: &CurrentContext<'_>,
    texture: &oxicuda_driver::texture::TextureObject<'_, E>,
    w: u32,
    h: u32,
    offset: f32,
    norm: bool,
) -> Result<Vec<[f32; 4]>, CudaError> {
    let module = cur.load_ptx(PTX, &JitOptions::default())?;
    let stream = cur.create_stream(CUstream_flags::CU_STREAM_NON_BLOCKING)?;
    let mut out = cur.alloc_zeros::<[f32; 4]>((w * h) as usize)?;
    let grid = (w * h).div_ceil(64);
    if norm {
        // SAFETY: kernels/handwritten_textures.ptx: `sample_2d_norm` takes a texture
        // object, a slice of float4 it writes within its length, two u32 and a f32.
        let f = unsafe {
            module.function::<(Texture<E>, Out<[f32; 4]>, u32, u32, f32)>("sample_2d_norm")?
        };
        f.launch(&stream, grid, 64, 0, (texture, &mut out, w, h, offset))?;
    } else {
        // SAFETY: as above, `sample_2d` with one u32 and a f32.
        let f = unsafe { module.function::<(Texture<E>, Out<[f32; 4]>, u32, f32)>("sample_2d")? };
        f.launch(&stream, grid, 64, 0, (texture, &mut out, w, offset))?;
    }
    // No synchronisation: the host read waits for the stream (the buffer's mark).
    out.to_vec()
}

#[test]
fn point_sampling_reads_each_texel_and_clamps_outside() {
    on_device0(|cur| {
        let (w, h) = (5u32, 3u32);
        let data = ramp((w * h) as usize);
        let mut a = cur.array::<f32>(ArrayShape::d2(w as usize, h as usize))?;
        a.copy_from_host(&data)?;
        let t = a.texture(&TextureDesc::default())?;
        let got = sample(cur, &t, w, h, 0.5, false)?;
        for (i, v) in got.iter().enumerate() {
            assert_eq!(v[0], data[i], "texel {i}");
        }
        // A sample one and a half elements past each texel: clamped to the edge.
        let got = sample(cur, &t, w, h, 2.0, false)?;
        for (i, v) in got.iter().enumerate() {
            let (x, y) = (i as u32 % w, i as u32 / w);
            let (cx, cy) = ((x + 2).min(w - 1), (y + 2).min(h - 1));
            assert_eq!(v[0], data[(cy * w + cx) as usize], "clamped sample {i}");
        }
        drop(t);
        // Border addressing reads the border colour outside.
        let border = TextureDesc {
            border_color: [-7.0, 0.0, 0.0, 0.0],
            ..TextureDesc::default().with_address(AddressMode::Border)
        };
        let t = a.texture(&border)?;
        let got = sample(cur, &t, w, h, 2.0, false)?;
        for (i, v) in got.iter().enumerate() {
            let (x, y) = (i as u32 % w, i as u32 / w);
            let expected = if x + 2 >= w || y + 2 >= h {
                -7.0
            } else {
                data[((y + 2) * w + x + 2) as usize]
            };
            assert_eq!(v[0], expected, "border sample {i}");
        }
        Ok(())
    });
}

#[test]
fn linear_filtering_interpolates_between_neighbours() {
    on_device0(|cur| {
        let (w, h) = (6u32, 4u32);
        let data = ramp((w * h) as usize);
        let mut a = cur.array::<f32>(ArrayShape::d2(w as usize, h as usize))?;
        a.copy_from_host(&data)?;
        let t = a.texture(&TextureDesc::default().with_filter(FilterMode::Linear))?;
        // At offset 0.75 each sample lies a quarter of the way to the next texel along
        // both axes (weights exact in the hardware's 8 fractional bits).
        let got = sample(cur, &t, w, h, 0.75, false)?;
        let at = |x: u32, y: u32| data[(y.min(h - 1) * w + x.min(w - 1)) as usize];
        for (i, v) in got.iter().enumerate() {
            let (x, y) = (i as u32 % w, i as u32 / w);
            let top = 0.75 * at(x, y) + 0.25 * at(x + 1, y);
            let bottom = 0.75 * at(x, y + 1) + 0.25 * at(x + 1, y + 1);
            let expected = 0.75 * top + 0.25 * bottom;
            assert!(
                (v[0] - expected).abs() <= expected.abs() * 1e-5,
                "sample {i}: {} vs {expected}",
                v[0]
            );
        }
        Ok(())
    });
}

#[test]
fn normalized_reads_and_coordinates() {
    on_device0(|cur| {
        let (w, h) = (4u32, 2u32);
        let pixels: Vec<[u8; 4]> = (0..8u8).map(|i| [i * 30, 255, 0, 128]).collect();
        let mut a = cur.array::<[u8; 4]>(ArrayShape::d2(w as usize, h as usize))?;
        a.copy_from_host(&pixels)?;
        let desc = TextureDesc::default()
            .with_read(ReadMode::NormalizedFloat)
            .normalized();
        let t = a.texture(&desc)?;
        let got = sample(cur, &t, w, h, 0.5, true)?;
        for (i, v) in got.iter().enumerate() {
            let expected = pixels[i].map(|c| f32::from(c) / 255.0);
            for c in 0..4 {
                assert!(
                    (v[c] - expected[c]).abs() <= 1e-6,
                    "texel {i} channel {c}: {} vs {}",
                    v[c],
                    expected[c]
                );
            }
        }
        drop(t);

        // Integer textures read as integers, at integer coordinates.
        let ints: Vec<[u32; 4]> = (0..8u32).map(|i| [i, i * 1000, u32::MAX - i, 7]).collect();
        let mut b = cur.array::<[u32; 4]>(ArrayShape::d2(w as usize, h as usize))?;
        b.copy_from_host(&ints)?;
        let t = b.texture(&TextureDesc::default())?;
        let module = cur.load_ptx(PTX, &JitOptions::default())?;
        // SAFETY: kernels/handwritten_textures.ptx: `sample_2d_int` takes a texture, a
        // slice of uint4 it writes within its length and a u32.
        let f =
            unsafe { module.function::<(Texture<[u32; 4]>, Out<[u32; 4]>, u32)>("sample_2d_int")? };
        let stream = cur.create_stream(CUstream_flags::CU_STREAM_NON_BLOCKING)?;
        let mut out = cur.alloc_zeros::<[u32; 4]>(8)?;
        f.launch(&stream, 1, 8, 0, (&t, &mut out, w))?;
        assert_eq!(out.to_vec()?, ints);
        Ok(())
    });
}

#[test]
fn surfaces_are_loaded_and_stored_in_host_order() {
    on_device0(|cur| {
        let (w, h) = (7u32, 5u32);
        let data: Vec<u32> = (0..w * h).map(|i| i * 3).collect();
        let mut a = cur.storage_array::<u32>(ArrayShape::d2(w as usize, h as usize))?;
        a.copy_from_host(&data)?;
        let module = cur.load_ptx(PTX, &JitOptions::default())?;
        // SAFETY: kernels/handwritten_textures.ptx: `surface_add` takes a surface of
        // u32 it loads and stores within `w × h` (the `.trap` forms) and three u32.
        let add = unsafe { module.function::<(Surface<u32>, u32, u32, u32)>("surface_add")? };
        let stream = cur.create_stream(CUstream_flags::CU_STREAM_NON_BLOCKING)?;
        {
            let mut s = a.surface()?;
            add.launch(&stream, (w * h).div_ceil(32), 32, 0, (&mut s, w, h, 1000))?;
            add.launch(&stream, (w * h).div_ceil(32), 32, 0, (&mut s, w, h, 5))?;
        }
        // No synchronisation: the array's mark makes the copy wait for the stream.
        let expected: Vec<u32> = data.iter().map(|v| v + 1005).collect();
        assert_eq!(a.to_vec()?, expected);

        // A texture sees what the surface stored; txq reports the size.
        let t = a.texture(&TextureDesc::default())?;
        // SAFETY: `texture_size` writes out[0] and out[1] when out holds two.
        let size = unsafe { module.function::<(Texture<u32>, Out<u32>)>("texture_size")? };
        let mut out = cur.alloc_zeros::<u32>(2)?;
        size.launch(&stream, 1, 1, 0, (&t, &mut out))?;
        assert_eq!(out.to_vec()?, [w, h]);
        Ok(())
    });
}

#[test]
fn bad_descriptors_are_refused_before_the_driver() {
    on_device0(|cur| {
        leaks::enable(false);
        let floats = cur.array::<f32>(ArrayShape::d2(4, 4))?;
        let ints = cur.array::<u32>(ArrayShape::d2(4, 4))?;
        let bytes = cur.array::<[u8; 2]>(ArrayShape::d1(16))?;
        let before = leaks::live_count(Kind::Textures);
        invalid(
            floats.texture(&TextureDesc::default().with_address(AddressMode::Wrap)),
            "address",
        );
        invalid(
            floats.texture(&TextureDesc::default().with_address(AddressMode::Mirror)),
            "address",
        );
        invalid(
            floats.texture(&TextureDesc::default().with_read(ReadMode::NormalizedFloat)),
            "read",
        );
        invalid(
            ints.texture(&TextureDesc::default().with_filter(FilterMode::Linear)),
            "filter",
        );
        invalid(
            bytes.texture(&TextureDesc::default().with_filter(FilterMode::Linear)),
            "filter",
        );
        invalid(
            floats.texture(&TextureDesc {
                max_anisotropy: 17,
                ..TextureDesc::default()
            }),
            "max_anisotropy",
        );
        assert_eq!(
            leaks::live_count(Kind::Textures),
            before,
            "nothing was made"
        );
        // The same descriptors made valid are accepted.
        let _wrap = floats.texture(
            &TextureDesc::default()
                .with_address(AddressMode::Wrap)
                .normalized(),
        )?;
        let _linear = bytes.texture(
            &TextureDesc::default()
                .with_filter(FilterMode::Linear)
                .with_read(ReadMode::NormalizedFloat),
        )?;
        Ok(())
    });
}

#[test]
fn objects_and_arrays_are_counted_and_released() {
    on_device0(|cur| {
        leaks::enable(false);
        let counts = || {
            [
                Kind::Arrays,
                Kind::MipmappedArrays,
                Kind::Textures,
                Kind::Surfaces,
            ]
            .map(leaks::live_count)
        };
        let base = counts();
        {
            let mut a = cur.storage_array::<f32>(ArrayShape::d2(8, 8))?;
            let m = cur.mipmapped_array::<f32>(ArrayShape::d2(8, 8), 2)?;
            let t = m.texture(&TextureDesc::default())?;
            let s = a.surface()?;
            let now = counts();
            for k in 0..4 {
                assert_eq!(now[k], base[k] + 1, "kind {k} counted once");
            }
            drop((s, t));
        }
        assert_eq!(counts(), base, "all released");
        Ok(())
    });
}

//! Device memory views, memsets, page-locked host memory, module images and kernel
//! parameters passed by value — on softcuda (the `soft` feature). No live object is
//! left behind.

mod common;

use common::{fatbin_with_ptx, on_device0};

use oxicuda_driver::CudaError;
use oxicuda_driver::launch::{In, Out};
use oxicuda_driver::memory::DeviceCopy;
use oxicuda_driver::module::JitOptions;
use oxicuda_driver::sys::{
    CUfunc_cache, CUmemhostalloc_flags, CUmemhostregister_flags, CUresult, CUstream_flags,
};

/// vector_add, saxpy, affine, rows: every buffer reaches the kernel with its length.
const SLICES: &str = include_str!("../kernels/slices.ptx");

#[test]
fn split_views_are_written_by_two_kernels_independently() {
    on_device0(|cur| {
        let module = cur.load_ptx(SLICES, &JitOptions::default())?;
        // SAFETY: kernels/slices.cu: saxpy reads x and updates y, each only below its
        // length.
        let saxpy = unsafe { module.function::<(f32, In<f32>, Out<f32>)>("saxpy")? };
        let n = 1000usize;
        let x = cur.alloc_from(&vec![1.0f32; n])?;
        let mut y = cur.alloc::<f32>(n)?;
        y.zero()?;
        let stream = cur.create_stream(CUstream_flags::CU_STREAM_NON_BLOCKING)?;
        let (x_lo, x_hi) = x.as_slice().split_at(300)?;
        let (y_lo, y_hi) = y.as_mut_slice().split_at(300)?;
        saxpy.launch(&stream, 2, 256, 0, (2.0, x_lo, y_lo))?;
        saxpy.launch(&stream, 3, 256, 0, (3.0, x_hi, y_hi))?;
        stream.synchronize()?;
        let out = y.to_vec()?;
        assert!(out[..300].iter().all(|v| *v == 2.0), "{:?}", &out[..4]);
        assert!(out[300..].iter().all(|v| *v == 3.0), "{:?}", &out[300..304]);
        // A reborrowed view goes to a launch and stays usable afterwards.
        let mut all = y.as_mut_slice();
        saxpy.launch(&stream, 4, 256, 0, (1.0, &x, all.reborrow()))?;
        stream.synchronize()?;
        assert_eq!(all.slice(299..301)?.to_vec()?, [3.0, 4.0]);
        Ok(())
    });
}

#[test]
fn ranges_outside_a_view_are_typed_errors() {
    on_device0(|cur| {
        let mut b = cur.alloc_from(&[1u32, 2, 3, 4])?;
        assert_eq!(b.as_slice().slice(1..3)?.to_vec()?, [2, 3]);
        assert_eq!(b.as_slice().slice(..=1)?.to_vec()?, [1, 2]);
        assert_eq!(b.as_slice().slice(4..)?.len(), 0);
        assert_eq!(
            b.as_slice().slice(2..5).map(|_| ()),
            Err(CudaError::OutOfRange {
                start: 2,
                end: 5,
                len: 4
            })
        );
        assert!(matches!(
            b.as_slice()
                .slice((core::ops::Bound::Included(3), core::ops::Bound::Excluded(2)))
                .map(|_| ()),
            Err(CudaError::OutOfRange { .. })
        ));
        assert!(matches!(
            b.as_mut_slice().split_at(5).map(|_| ()),
            Err(CudaError::OutOfRange { start: 5, .. })
        ));
        let err = b.as_slice().split_at(9).map(|_| ()).unwrap_err();
        assert_eq!(
            err.to_string(),
            "range 0..9 is out of bounds for 4 elements"
        );
        Ok(())
    });
}

#[test]
fn copies_and_memsets_on_views() {
    on_device0(|cur| {
        let mut a = cur.alloc::<u32>(8)?;
        a.fill(7)?;
        let (mut lo, hi) = a.as_mut_slice().split_at(4)?;
        lo.copy_from_host(&[1, 2, 3, 4])?;
        hi.slice(1..3)?.fill(9)?;
        assert_eq!(a.to_vec()?, [1, 2, 3, 4, 7, 9, 9, 7]);
        let mut b = cur.alloc::<u32>(4)?;
        b.copy_from(&a.as_slice().slice(2..6)?)?;
        assert_eq!(b.to_vec()?, [3, 4, 7, 9]);
        assert!(matches!(
            b.copy_from(&a),
            Err(CudaError::LengthMismatch {
                destination_len: 4,
                source_len: 8
            })
        ));
        // Memsets of 1-, 2- and 4-byte elements keep the bit pattern.
        let mut f = cur.alloc::<f32>(3)?;
        f.fill(-1.5)?;
        assert_eq!(f.to_vec()?, [-1.5; 3]);
        let mut h = cur.alloc::<i16>(5)?;
        h.fill(-2)?;
        assert_eq!(h.to_vec()?, [-2; 5]);
        let mut bytes = cur.alloc::<u8>(5)?;
        bytes.fill(0xAB)?;
        assert_eq!(bytes.to_vec()?, [0xAB; 5]);
        // Asynchronous memsets are ordered on their stream.
        let stream = cur.create_stream(CUstream_flags::CU_STREAM_NON_BLOCKING)?;
        stream.fill(&mut a, 5u32)?;
        stream.fill(&mut a.as_mut_slice().slice(6..)?, 6u32)?;
        stream.synchronize()?;
        assert_eq!(a.to_vec()?, [5, 5, 5, 5, 5, 5, 6, 6]);
        // The legacy and per-thread default streams are usable and never destroyed.
        for special in [
            cur.legacy_stream(),
            cur.per_thread_stream(),
            cur.default_stream(),
        ] {
            special.fill(&mut a, 4u32)?;
            special.synchronize()?;
            assert!(special.is_done()?);
        }
        assert_eq!(a.to_vec()?, [4; 8]);
        Ok(())
    });
}

#[derive(Clone, Copy)]
#[repr(C)]
struct Affine {
    scale: f32,
    offset: f32,
}
// SAFETY: two 4-byte numbers, no padding: every bit pattern is valid.
unsafe impl DeviceCopy for Affine {}

#[test]
fn a_repr_c_struct_is_a_kernel_parameter() {
    on_device0(|cur| {
        let module = cur.load_ptx(SLICES, &JitOptions::default())?;
        // SAFETY: kernels/slices.cu: affine reads x and writes y, each only below its
        // length.
        let affine = unsafe { module.function::<(Affine, In<f32>, Out<f32>)>("affine")? };
        let x = cur.alloc_from(&[0.0f32, 1.0, 2.0, 3.0])?;
        let mut y = cur.alloc::<f32>(4)?;
        y.zero()?;
        let p = Affine {
            scale: 2.0,
            offset: 0.5,
        };
        let stream = cur.per_thread_stream();
        // A view of the first three elements: the kernel learns that length.
        affine.launch(&stream, 1, 32, 0, (p, &x, y.as_mut_slice().slice(..3)?))?;
        stream.synchronize()?;
        assert_eq!(y.to_vec()?, [0.5, 2.5, 4.5, 0.0]);
        // A struct of another size is refused at lookup, naming the parameter.
        // SAFETY: refused before any launch.
        let err = unsafe { module.function::<([f32; 3], In<f32>, Out<f32>)>("affine") }
            .map(|_| ())
            .unwrap_err();
        assert!(
            matches!(err, CudaError::SignatureMismatch { parameter: 0, .. }),
            "{err}"
        );
        Ok(())
    });
}

#[test]
fn pinned_and_registered_host_memory_feed_async_copies() {
    on_device0(|cur| {
        let stream = cur.create_stream(CUstream_flags::CU_STREAM_NON_BLOCKING)?;
        let mut pinned =
            cur.alloc_host::<u32>(1024, CUmemhostalloc_flags::CU_MEMHOSTALLOC_PORTABLE)?;
        assert!(pinned.iter().all(|v| *v == 0), "zeroed");
        for (i, v) in pinned.iter_mut().enumerate() {
            *v = i as u32;
        }
        let mut dev = cur.alloc::<u32>(1024)?;
        let mut data = vec![0u32; 1024];
        let mut registered = cur.register_host(
            &mut data,
            CUmemhostregister_flags::CU_MEMHOSTREGISTER_PORTABLE,
        )?;
        stream.scope(|s| -> Result<(), CudaError> {
            s.copy_to_device(&mut dev, &pinned[..])?;
            s.copy_to_host(&mut registered[..], &dev)
        })??;
        assert_eq!(&registered[..], &pinned[..]);
        drop(registered);
        assert_eq!(data[1023], 1023);
        // A registration ends with its value (registering the same slice twice at once
        // does not compile: the first holds it mutably borrowed).
        let mut other = vec![0u8; 64];
        let first = cur.register_host(&mut other, CUmemhostregister_flags::empty())?;
        drop(first);
        let again = cur.register_host(&mut other, CUmemhostregister_flags::empty())?;
        drop(again);
        let empty: &mut [u8] = &mut [];
        assert!(matches!(
            cur.register_host(empty, CUmemhostregister_flags::empty())
                .map(|_| ()),
            Err(CudaError::Driver(CUresult::CUDA_ERROR_INVALID_VALUE))
        ));
        Ok(())
    });
}

/// A 64-bit ELF header with no program or section headers.
fn empty_elf() -> Vec<u8> {
    let mut elf = vec![0u8; 64];
    elf[..4].copy_from_slice(b"\x7fELF");
    elf[4] = 2; // 64-bit
    elf[5] = 1; // little-endian
    elf
}

#[test]
fn modules_load_from_ptx_fatbin_and_files_and_bad_images_are_refused() {
    on_device0(|cur| {
        let opts = JitOptions::default();
        let run = |module: &oxicuda_driver::module::Module<'_>| -> Result<Vec<f32>, CudaError> {
            // SAFETY: kernels/slices.cu: vector_add reads a and b and writes c, each only
            // below its length.
            let add = unsafe { module.function::<(In<f32>, In<f32>, Out<f32>)>("vector_add")? };
            let (a, b) = (cur.alloc_from(&[1.0f32; 4])?, cur.alloc_from(&[2.0f32; 4])?);
            let mut c = cur.alloc::<f32>(4)?;
            let s = cur.default_stream();
            add.launch(&s, 1, 32, 0, (&a, &b, &mut c))?;
            s.synchronize()?;
            c.to_vec()
        };
        assert_eq!(run(&cur.load_module(SLICES.as_bytes(), &opts)?)?, [3.0; 4]);
        let fat = fatbin_with_ptx(SLICES);
        assert_eq!(run(&cur.load_module(&fat, &opts)?)?, [3.0; 4]);
        let file = std::env::temp_dir().join(format!("oxicuda-va-{}.ptx", std::process::id()));
        std::fs::write(&file, SLICES).unwrap();
        let from_file = cur.load_module_file(&file, &opts);
        std::fs::remove_file(&file).unwrap();
        assert_eq!(run(&from_file?)?, [3.0; 4]);

        let err =
            |r: Result<oxicuda_driver::module::Module<'_>, CudaError>| r.map(|_| ()).unwrap_err();
        // Headers that point past the end never reach the driver.
        let mut truncated = fat.clone();
        truncated.truncate(fat.len() - 10);
        assert!(
            matches!(err(cur.load_module(&truncated, &opts)), CudaError::InvalidImage(m) if m.contains("fatbin")),
        );
        let mut lying_entry = fat.clone();
        let size_at = 16 + 8; // the first entry's payload size
        lying_entry[size_at..size_at + 8].copy_from_slice(&u64::MAX.to_le_bytes());
        assert!(matches!(
            err(cur.load_module(&lying_entry, &opts)),
            CudaError::InvalidImage(m) if m.contains("entry")
        ));
        let mut elf = empty_elf();
        elf[0x28..0x30].copy_from_slice(&64u64.to_le_bytes()); // section headers at 64
        elf[0x3A..0x3C].copy_from_slice(&64u16.to_le_bytes());
        elf[0x3C..0x3E].copy_from_slice(&3u16.to_le_bytes()); // three of them: 192 bytes
        assert!(matches!(
            err(cur.load_module(&elf, &opts)),
            CudaError::InvalidImage(m) if m.contains("section headers")
        ));
        let mut elf32 = empty_elf();
        elf32[4] = 1;
        assert!(matches!(
            err(cur.load_module(&elf32, &opts)),
            CudaError::InvalidImage(_)
        ));
        assert!(matches!(
            err(cur.load_module(&[0xff, 0xfe, 0x00, 0x01], &opts)),
            CudaError::InvalidImage(_)
        ));
        assert!(matches!(
            err(cur.load_ptx("\x7fELF is not PTX", &opts)),
            CudaError::InvalidImage(m) if m.contains("binary")
        ));
        assert!(matches!(
            err(cur.load_ptx("a\0b", &opts)),
            CudaError::InvalidImage(_)
        ));
        // A well-formed cubin with no code: softcuda runs PTX only, so it has no
        // binary for the GPU; a real driver may call the image invalid instead.
        let e = err(cur.load_module(&empty_elf(), &opts));
        if common::ON_GPU {
            assert!(
                matches!(
                    e,
                    CudaError::Driver(
                        CUresult::CUDA_ERROR_NO_BINARY_FOR_GPU | CUresult::CUDA_ERROR_INVALID_IMAGE
                    )
                ),
                "{e:?}"
            );
        } else {
            assert_eq!(e, CudaError::Driver(CUresult::CUDA_ERROR_NO_BINARY_FOR_GPU));
        }
        let missing = std::env::temp_dir().join("oxicuda-no-such-module.cubin");
        match err(cur.load_module_file(&missing, &opts)) {
            CudaError::ReadFile { path, kind } => {
                assert_eq!((path, kind), (missing, std::io::ErrorKind::NotFound))
            }
            other => panic!("expected ReadFile, got {other:?}"),
        }
        Ok(())
    });
}

#[test]
fn cache_config_dynamic_shared_memory_and_unchecked_lookup() {
    on_device0(|cur| {
        let module = cur.load_ptx(SLICES, &JitOptions::default())?;
        // SAFETY: the declaration matches kernels/slices.cu's vector_add, which stays
        // below each slice's length.
        let mut f =
            unsafe { module.function_unchecked::<(In<f32>, In<f32>, Out<f32>)>("vector_add")? };
        f.set_cache_config(CUfunc_cache::CU_FUNC_CACHE_PREFER_SHARED)?;
        let one = f.available_dynamic_shared_memory(1, 256)?;
        let four = f.available_dynamic_shared_memory(4, 256)?;
        assert!(
            one > 0 && four > 0 && four <= one / 4 + 1024,
            "{one} {four}"
        );
        assert!(matches!(
            f.available_dynamic_shared_memory(u32::MAX, 256),
            Err(CudaError::Driver(CUresult::CUDA_ERROR_INVALID_VALUE))
        ));
        Ok(())
    });
}

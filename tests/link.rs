//! The linker through the safe layer, on softcuda (or with `--features gpu-tests` the
//! driver the environment names): two `-rdc` PTX units linked and launched through
//! the typed function path; an unresolved symbol and a duplicate definition as
//! `JitFailed` with the log naming the symbol; every kind of bad binary input refused
//! before the driver reads it; files; the owned image. No live object is left.

mod common;

use common::{ON_GPU, on_device0};

use oxicuda_driver::CudaError;
use oxicuda_driver::launch::{In, Out};
use oxicuda_driver::link::{LinkInput, LinkInputKind};
use oxicuda_driver::module::{JitOptions, Severity};
use oxicuda_driver::sys::{CUresult, CUstream_flags};

const A: &str = include_str!("../kernels/link_a.ptx");
const B: &str = include_str!("../kernels/link_b.ptx");

fn a() -> LinkInput<'static> {
    LinkInput::Ptx {
        name: "link_a.ptx",
        text: A,
    }
}

fn b() -> LinkInput<'static> {
    LinkInput::Ptx {
        name: "link_b.ptx",
        text: B,
    }
}

#[test]
fn two_ptx_units_link_into_a_module_whose_kernels_launch() {
    on_device0(|cur| -> Result<(), CudaError> {
        let mut linker = cur.linker(&JitOptions::default())?;
        linker.add(a())?;
        linker.add(b())?;
        let module = linker.complete()?;
        // SAFETY: kernels/link_a.cu: `scale` writes y only below its length and reads
        // x only below its; `read_factor` writes y[0] only if y is not empty.
        let scale = unsafe { module.function::<(In<f32>, Out<f32>)>("scale")? };
        // SAFETY: as above.
        let read = unsafe { module.function::<(Out<f32>,)>("read_factor")? };
        let x = cur.alloc_from(&[1.0f32, 2.0, -1.0, 0.5])?;
        let mut y = cur.alloc::<f32>(4)?;
        let mut f = cur.alloc::<f32>(1)?;
        let stream = cur.create_stream(CUstream_flags::CU_STREAM_NON_BLOCKING)?;
        scale.launch(&stream, 1, 32, 0, (&x, &mut y))?;
        read.launch(&stream, 1, 32, 0, (&mut f,))?;
        stream.synchronize()?;
        // scaled(x) = x * scale_factor + 1, scale_factor = 3 (link_b.cu).
        assert_eq!(y.to_vec()?, [4.0, 7.0, -2.0, 2.5]);
        assert_eq!(f.to_vec()?, [3.0]);
        // The signature is checked as for any module function.
        // SAFETY: refused before any use.
        let wrong = unsafe { module.function::<(In<f32>,)>("scale") };
        assert!(matches!(
            wrong,
            Err(CudaError::SignatureMismatch { parameter: 1, .. })
        ));
        Ok(())
    });
}

#[test]
fn an_unresolved_symbol_is_a_jit_failure_whose_log_names_it() {
    on_device0(|cur| -> Result<(), CudaError> {
        let mut linker = cur.linker(&JitOptions::default())?;
        linker.add(a())?;
        let Err(CudaError::JitFailed { log, source }) = linker.complete() else {
            panic!("linking an unresolved symbol succeeded");
        };
        if !ON_GPU {
            assert_eq!(source, CUresult::CUDA_ERROR_INVALID_IMAGE);
        }
        let errors: Vec<_> = log.errors().map(|d| d.message.clone()).collect();
        assert!(
            errors.iter().any(|m| m.contains("'scaled'")),
            "the log names the symbol: {log}"
        );
        assert!(log.errors().all(|d| d.severity >= Severity::Error));

        let mut twice = cur.linker(&JitOptions::default())?;
        twice.add(a())?;
        twice.add(b())?;
        twice.add(LinkInput::Ptx {
            name: "again.ptx",
            text: B,
        })?;
        let Err(CudaError::JitFailed { log, .. }) = twice.complete() else {
            panic!("a duplicate definition linked");
        };
        assert!(
            log.errors().any(|d| d.message.contains("'scaled'")),
            "the log names the symbol: {log}"
        );
        Ok(())
    });
}

#[test]
fn bad_inputs_are_refused_before_the_driver_reads_them() {
    on_device0(|cur| -> Result<(), CudaError> {
        let mut linker = cur.linker(&JitOptions::default())?;
        let invalid = |r: Result<(), CudaError>| matches!(r, Err(CudaError::InvalidImage(_)));
        // A truncated ELF header, a "fatbin" without its magic, an ELF where a fatbin
        // belongs, an object that is not ELF, archives that lie about their members.
        let mut elf = b"\x7fELF\x02\x01\x01".to_vec();
        assert!(invalid(linker.add(LinkInput::Cubin(&elf))));
        assert!(invalid(linker.add(LinkInput::Cubin(b"not an ELF file"))));
        elf.resize(64, 0);
        assert!(invalid(linker.add(LinkInput::Fatbin(&elf))));
        assert!(invalid(linker.add(LinkInput::Object(b"!<arch>\n"))));
        assert!(invalid(linker.add(LinkInput::Library(b"\x7fELF"))));
        let mut archive = b"!<arch>\n".to_vec();
        archive.extend_from_slice(format!("{:<48}{:<10}`\n", "member.o/", 999).as_bytes());
        archive.extend_from_slice(b"short");
        assert!(invalid(linker.add(LinkInput::Library(&archive))));
        assert!(invalid(linker.add(LinkInput::Ptx {
            name: "nul.ptx",
            text: "a\0b",
        })));
        assert!(invalid(linker.add(LinkInput::Ptx {
            name: "elf.ptx",
            text: "\x7fELF",
        })));
        // A well-formed archive reaches the driver; softcuda has no device code to
        // link from one.
        let mut good = b"!<arch>\n".to_vec();
        good.extend_from_slice(format!("{:<48}{:<10}`\n", "member.o/", 4).as_bytes());
        good.extend_from_slice(b"data");
        if !ON_GPU {
            assert!(matches!(
                linker.add(LinkInput::Library(&good)),
                Err(CudaError::Driver(CUresult::CUDA_ERROR_NOT_SUPPORTED))
            ));
        }
        // A syntax error is the JIT's, with its log.
        let broken = A.replace(".visible .entry scale(", ".visible .entry scale((");
        let Err(CudaError::JitFailed { log, .. }) = linker.add(LinkInput::Ptx {
            name: "broken.ptx",
            text: &broken,
        }) else {
            panic!("broken PTX was accepted");
        };
        assert!(log.errors().count() >= 1, "{log}");
        if !ON_GPU {
            let d = log.errors().next().unwrap();
            assert_eq!(d.file.as_deref(), Some("broken.ptx"));
        }
        // A missing file.
        assert!(matches!(
            linker.add_file("/nonexistent/x.ptx", LinkInputKind::Ptx),
            Err(CudaError::ReadFile { .. })
        ));
        Ok(())
    });
}

#[test]
fn files_link_and_the_owned_image_loads_later() {
    let dir = std::env::temp_dir().join(format!("oxicuda-link-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (pa, pb) = (dir.join("link_a.ptx"), dir.join("link_b.ptx"));
    std::fs::write(&pa, A).unwrap();
    std::fs::write(&pb, B).unwrap();
    on_device0(|cur| -> Result<(), CudaError> {
        let mut linker = cur.linker(&JitOptions::default())?;
        linker.add_file(&pa, LinkInputKind::Ptx)?;
        linker.add_file(&pb, LinkInputKind::Ptx)?;
        let image = linker.complete_image()?;
        // The linker is gone; the owned copy still loads.
        let module = cur.load_module(&image, &JitOptions::default())?;
        // SAFETY: kernels/link_a.cu, as above.
        let read = unsafe { module.function::<(Out<f32>,)>("read_factor")? };
        let mut f = cur.alloc::<f32>(1)?;
        let stream = cur.create_stream(CUstream_flags::CU_STREAM_NON_BLOCKING)?;
        read.launch(&stream, 1, 1, 0, (&mut f,))?;
        stream.synchronize()?;
        assert_eq!(f.to_vec()?, [3.0]);
        Ok(())
    });
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A fatbin (16-byte header, entries with a 64-byte header each) holding `ptx` for
/// sm_80 (as tests/memory.rs builds one).
fn fatbin_with_ptx(ptx: &str) -> Vec<u8> {
    let mut payload = ptx.as_bytes().to_vec();
    payload.push(0);
    let mut e = Vec::new();
    e.extend_from_slice(&1u16.to_le_bytes()); // kind: PTX
    e.extend_from_slice(&0x0101u16.to_le_bytes());
    e.extend_from_slice(&64u32.to_le_bytes());
    e.extend_from_slice(&(payload.len() as u64).to_le_bytes());
    e.extend_from_slice(&[0u8; 12]);
    e.extend_from_slice(&80u32.to_le_bytes());
    e.resize(64, 0);
    e.extend(payload);
    let mut fat = Vec::new();
    fat.extend_from_slice(&0xBA55ED50u32.to_le_bytes());
    fat.extend_from_slice(&1u16.to_le_bytes());
    fat.extend_from_slice(&16u16.to_le_bytes());
    fat.extend_from_slice(&(e.len() as u64).to_le_bytes());
    fat.extend(e);
    fat
}

#[test]
fn a_fatbin_input_links_and_a_well_formed_cubin_reaches_the_driver() {
    on_device0(|cur| -> Result<(), CudaError> {
        let fat = fatbin_with_ptx(B);
        let mut linker = cur.linker(&JitOptions::default())?;
        linker.add(a())?;
        linker.add(LinkInput::Fatbin(&fat))?;
        let module = linker.complete()?;
        // SAFETY: kernels/link_a.cu, as above.
        let read = unsafe { module.function::<(Out<f32>,)>("read_factor")? };
        let mut f = cur.alloc::<f32>(1)?;
        let stream = cur.create_stream(CUstream_flags::CU_STREAM_NON_BLOCKING)?;
        read.launch(&stream, 1, 1, 0, (&mut f,))?;
        stream.synchronize()?;
        assert_eq!(f.to_vec()?, [3.0]);
        if !ON_GPU {
            // A 64-bit ELF header without sections passes the checks; softcuda has no
            // GPU code to link from it.
            let mut elf = vec![0u8; 64];
            elf[..4].copy_from_slice(b"\x7fELF");
            elf[4] = 2;
            elf[5] = 1;
            let mut other = cur.linker(&JitOptions::default())?;
            assert!(matches!(
                other.add(LinkInput::Cubin(&elf)),
                Err(CudaError::Driver(CUresult::CUDA_ERROR_NOT_SUPPORTED))
            ));
        }
        Ok(())
    });
}

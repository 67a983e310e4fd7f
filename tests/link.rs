//! The linker through the safe layer, on softcuda (or with `--features gpu-tests` the
//! driver the environment names): two `-rdc` PTX units linked and launched through
//! the typed function path; an unresolved symbol and a duplicate definition as
//! `JitFailed` with the log naming the symbol; every kind of bad binary input refused
//! before the driver reads it; files; the owned image. No live object is left.

mod common;

use common::{ON_GPU, fatbin_with_ptx, on_device0, out_of_range_jit_options};

use oxicuda_driver::launch::{In, Out};
use oxicuda_driver::link::{LinkInput, LinkInputKind};
use oxicuda_driver::module::{JitOptions, Module, Severity};
use oxicuda_driver::sys::{CUresult, CUstream_flags};
use oxicuda_driver::{CudaError, CurrentContext};
use std::path::Path;

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

/// What `read_factor` of a linked `module` reads (kernels/link_b.cu's factor).
fn read_factor(cur: &CurrentContext<'_>, module: &Module<'_>) -> Result<f32, CudaError> {
    // SAFETY: kernels/link_a.cu: `read_factor` writes y[0] only if y is not empty.
    let read = unsafe { module.function::<(Out<f32>,)>("read_factor")? };
    let mut f = cur.alloc::<f32>(1)?;
    let stream = cur.create_stream(CUstream_flags::CU_STREAM_NON_BLOCKING)?;
    read.launch(&stream, 1, 1, 0, (&mut f,))?;
    stream.synchronize()?;
    Ok(f.to_vec()?[0])
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
        // Host objects and libraries go through `add_unchecked`, which still checks
        // their containers.
        // SAFETY: each is refused before the driver reads it.
        unsafe {
            assert!(invalid(
                linker.add_unchecked(LinkInput::Object(b"!<arch>\n"))
            ));
            assert!(invalid(
                linker.add_unchecked(LinkInput::Library(b"\x7fELF"))
            ));
        }
        let mut archive = b"!<arch>\n".to_vec();
        archive.extend_from_slice(format!("{:<48}{:<10}`\n", "member.o/", 999).as_bytes());
        archive.extend_from_slice(b"short");
        // SAFETY: refused before the driver reads it.
        assert!(invalid(unsafe {
            linker.add_unchecked(LinkInput::Library(&archive))
        }));
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
            // SAFETY: a member of four bytes, within the archive; softcuda reads
            // nothing of it (it has no device code to link from an archive).
            assert!(matches!(
                unsafe { linker.add_unchecked(LinkInput::Library(&good)) },
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
        assert_eq!(read_factor(cur, &module)?, 3.0);
        Ok(())
    });
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_fatbin_input_links_and_a_well_formed_cubin_reaches_the_driver() {
    on_device0(|cur| -> Result<(), CudaError> {
        let fat = fatbin_with_ptx(B);
        let mut linker = cur.linker(&JitOptions::default())?;
        linker.add(a())?;
        linker.add(LinkInput::Fatbin(&fat))?;
        let module = linker.complete()?;
        assert_eq!(read_factor(cur, &module)?, 3.0);
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

/// An `ar` member header and its data.
fn ar_member(name: &str, data: &[u8]) -> Vec<u8> {
    let mut m = format!("{:<48}{:<10}`\n", name, data.len()).into_bytes();
    m.extend_from_slice(data);
    if data.len() % 2 == 1 {
        m.push(b'\n');
    }
    m
}

/// A fatbin header claiming 1 TiB of entries.
fn lying_fatbin() -> Vec<u8> {
    let mut f = vec![0u8; 16];
    f[..4].copy_from_slice(&0xBA55_ED50u32.to_le_bytes());
    f[4..6].copy_from_slice(&1u16.to_le_bytes());
    f[6..8].copy_from_slice(&16u16.to_le_bytes());
    f[8..16].copy_from_slice(&(1u64 << 40).to_le_bytes());
    f
}

/// A consistent x86-64 ELF object whose `.nv_fatbin` section holds `contents`.
fn object_embedding(contents: &[u8]) -> Vec<u8> {
    let names = b"\0.shstrtab\0.nv_fatbin\0";
    let mut e = vec![0u8; 64];
    e[..6].copy_from_slice(b"\x7fELF\x02\x01");
    e[0x12..0x14].copy_from_slice(&62u16.to_le_bytes());
    let names_at = e.len() as u64;
    e.extend_from_slice(names);
    let fatbin_at = e.len() as u64;
    e.extend_from_slice(contents);
    let shoff = e.len() as u64;
    for (name, ty, at, size) in [
        (0u32, 0u32, 0u64, 0u64),
        (1, 3, names_at, names.len() as u64),
        (11, 1, fatbin_at, contents.len() as u64),
    ] {
        let mut h = [0u8; 64];
        h[0..4].copy_from_slice(&name.to_le_bytes());
        h[4..8].copy_from_slice(&ty.to_le_bytes());
        h[0x18..0x20].copy_from_slice(&at.to_le_bytes());
        h[0x20..0x28].copy_from_slice(&size.to_le_bytes());
        e.extend_from_slice(&h);
    }
    e[0x28..0x30].copy_from_slice(&shoff.to_le_bytes());
    e[0x3A..0x3C].copy_from_slice(&64u16.to_le_bytes());
    e[0x3C..0x3E].copy_from_slice(&3u16.to_le_bytes());
    e[0x3E..0x40].copy_from_slice(&1u16.to_le_bytes());
    e
}

/// `Err(InvalidArgument)` naming `parameter`.
fn invalid_argument(r: Result<(), CudaError>, parameter: &str) -> bool {
    matches!(r, Err(CudaError::InvalidArgument { parameter: p, .. }) if p == parameter)
}

#[test]
fn safe_code_cannot_add_host_objects_or_libraries() {
    let dir = std::env::temp_dir().join(format!("oxicuda-link-obj-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    on_device0(|cur| -> Result<(), CudaError> {
        let mut linker = cur.linker(&JitOptions::default())?;
        // A consistent ELF object whose embedded fatbin claims 1 TiB: its container
        // passes the checks, what is inside would reach the driver. Safe `add`
        // refuses the kind, whatever the bytes, and so does `add_file`.
        let object = object_embedding(&lying_fatbin());
        let mut archive = b"!<arch>\n".to_vec();
        archive.extend(ar_member("a.o/", &object));
        archive.extend(ar_member("f.fatbin/", &lying_fatbin()));
        let mut bsd = b"!<arch>\n".to_vec();
        bsd.extend(ar_member("#1/4096", b"abcd"));
        for input in [
            LinkInput::Object(&object),
            LinkInput::Library(&archive),
            LinkInput::Library(&bsd),
        ] {
            assert!(invalid_argument(linker.add(input), "input"), "{input:?}");
        }
        let (obj_path, lib_path) = (dir.join("a.o"), dir.join("liba.a"));
        std::fs::write(&obj_path, &object).unwrap();
        std::fs::write(&lib_path, &archive).unwrap();
        assert!(invalid_argument(
            linker.add_file(&obj_path, LinkInputKind::Object),
            "kind"
        ));
        assert!(invalid_argument(
            linker.add_file(&lib_path, LinkInputKind::Library),
            "kind"
        ));
        // The linker is still usable: the refusals reached no driver call.
        linker.add(a())?;
        linker.add(b())?;
        linker.complete().map(drop)
    });
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn names_with_nul_and_out_of_range_jit_options_are_invalid_arguments() {
    on_device0(|cur| -> Result<(), CudaError> {
        let mut linker = cur.linker(&JitOptions::default())?;
        assert!(invalid_argument(
            linker.add(LinkInput::Ptx {
                name: "a\0.ptx",
                text: A,
            }),
            "name"
        ));
        linker.add(a())?;
        linker.add(b())?;
        let module = linker.complete()?;
        // SAFETY: refused before any use.
        let f = unsafe { module.function::<(Out<f32>,)>("read\0factor") };
        assert!(matches!(
            f,
            Err(CudaError::InvalidArgument {
                parameter: "name",
                ..
            })
        ));
        assert!(matches!(
            module.global::<f32>("scale\0factor"),
            Err(CudaError::InvalidArgument {
                parameter: "name",
                ..
            })
        ));
        // JIT options out of range: refused before the driver sees them, for links
        // and module loads alike.
        for (options, parameter) in out_of_range_jit_options() {
            assert!(invalid_argument(cur.linker(&options).map(drop), parameter));
            assert!(invalid_argument(
                cur.load_ptx(B, &options).map(drop),
                parameter
            ));
        }
        // In range: level 4, sm_90 and sm_90a (device 0 is 9.0 on softcuda; an H200
        // on a GPU).
        for options in [
            JitOptions {
                optimization_level: Some(4),
                ..Default::default()
            },
            JitOptions {
                target: Some(90),
                ..Default::default()
            },
            JitOptions {
                target: Some(0x1_0000 + 90),
                ..Default::default()
            },
        ] {
            let mut linker = cur.linker(&options)?;
            linker.add(a())?;
            linker.add(b())?;
            linker.complete().map(drop)?;
        }
        Ok(())
    });
}

#[test]
fn files_must_be_regular_and_at_most_1_gib() {
    let dir = std::env::temp_dir().join(format!("oxicuda-link-files-{}", std::process::id()));
    // Left over by an earlier run that failed midway, under the same pid.
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let fifo = dir.join("fifo.ptx");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(made.success());
    // Sparse: 1 GiB + 1 byte that take no space.
    let big = dir.join("big.fatbin");
    std::fs::File::create(&big)
        .unwrap()
        .set_len((1 << 30) + 1)
        .unwrap();
    on_device0(|cur| -> Result<(), CudaError> {
        let mut linker = cur.linker(&JitOptions::default())?;
        let refused = |linker: &mut oxicuda_driver::link::Linker<'_>, p: &Path| {
            invalid_argument(linker.add_file(p, LinkInputKind::Fatbin), "path")
        };
        // A directory, a FIFO (opening it would block), a device that never ends, a
        // file over the limit.
        assert!(refused(&mut linker, &dir));
        assert!(refused(&mut linker, &fifo));
        assert!(refused(&mut linker, Path::new("/dev/zero")));
        assert!(refused(&mut linker, &big));
        // Module loading shares the reading.
        for p in [dir.as_path(), &fifo, Path::new("/dev/zero"), &big] {
            assert!(invalid_argument(
                cur.load_module_file(p, &JitOptions::default()).map(drop),
                "path"
            ));
        }
        assert!(matches!(
            cur.load_module_file(dir.join("missing"), &JitOptions::default()),
            Err(CudaError::ReadFile { .. })
        ));
        Ok(())
    });
    std::fs::remove_dir_all(&dir).unwrap();
}

//! The safe layer end to end on softcuda (the `soft` feature): vector_add, a
//! two-stream pipeline ordered by events, a JIT failure as structured diagnostics, a
//! signature mismatch refused at lookup. No live object is left behind.

mod common;

use common::{ON_GPU, driver, no_leaks, on_device0, second_device};

use oxicuda_driver::launch::{In, Out};
use oxicuda_driver::module::{JitOptions, Severity};
use oxicuda_driver::stream::{NoTiming, Timing};
use oxicuda_driver::sys::{CUctx_flags, CUstream_flags};
use oxicuda_driver::{Context, CudaError};

/// vector_add, saxpy, affine, rows: every buffer reaches the kernel with its length.
const SLICES: &str = include_str!("../kernels/slices.ptx");

#[test]
fn vector_add_end_to_end() {
    let out = on_device0(|cur| -> Result<Vec<f32>, CudaError> {
        let module = cur.load_ptx(SLICES, &JitOptions::default())?;
        // SAFETY: kernels/slices.cu: vector_add reads a and b and writes c, each only
        // below its length.
        let add = unsafe { module.function::<(In<f32>, In<f32>, Out<f32>)>("vector_add")? };
        let n = 100_000u32;
        let a = cur.alloc_from(&(0..n).map(|i| i as f32).collect::<Vec<_>>())?;
        let b = cur.alloc_from(&(0..n).map(|i| 2.0 * i as f32).collect::<Vec<_>>())?;
        let mut c = cur.alloc::<f32>(n as usize)?;
        let stream = cur.create_stream(CUstream_flags::CU_STREAM_NON_BLOCKING)?;
        add.launch(&stream, n.div_ceil(256), 256, 0, (&a, &b, &mut c))?;
        stream.synchronize()?;
        c.to_vec()
    });
    assert!(out.iter().enumerate().all(|(i, v)| *v == 3.0 * i as f32));
}

#[test]
fn a_two_stream_pipeline_ordered_by_events() {
    on_device0(|cur| -> Result<(), CudaError> {
        let module = cur.load_ptx(SLICES, &JitOptions::default())?;
        // SAFETY: kernels/slices.cu: saxpy reads x and updates y, each only below its
        // length.
        let saxpy = unsafe { module.function::<(f32, In<f32>, Out<f32>)>("saxpy")? };
        let n = 50_000i32;
        let x = cur.alloc_from(&vec![1.0f32; n as usize])?;
        let mut y = cur.alloc_from(&vec![0.0f32; n as usize])?;
        let (s1, s2) = (
            cur.create_stream(CUstream_flags::CU_STREAM_NON_BLOCKING)?,
            cur.create_stream(CUstream_flags::CU_STREAM_NON_BLOCKING)?,
        );
        let (start, stage1, end) = (
            cur.create_event::<Timing>()?,
            cur.create_event::<NoTiming>()?,
            cur.create_event::<Timing>()?,
        );
        start.record(&s1)?;
        saxpy.launch(&s1, (n as u32).div_ceil(128), 128, 0, (2.0, &x, &mut y))?; // y = 2
        stage1.record(&s1)?;
        s2.wait(&stage1)?; // s2's work starts after stage 1
        saxpy.launch(&s2, (n as u32).div_ceil(128), 128, 0, (3.0, &x, &mut y))?; // y = 5
        end.record(&s2)?;
        end.synchronize()?;
        assert!(end.is_done()?);
        assert!(end.elapsed_since(&start)? >= 0.0);
        assert!(y.to_vec()?.iter().all(|v| *v == 5.0));
        Ok(())
    });
}

#[test]
fn a_jit_failure_is_a_structured_log() {
    let (d, _g) = driver();
    let ctx = Context::new(&d.device(0).unwrap(), CUctx_flags::empty()).unwrap();
    let bad = ".version 8.0\n.target sm_80\n.address_size 64\n.visible .entry k()\n{\n\tfrobnicate.u32 %r1;\n\tret;\n}\n";
    let err = ctx
        .bind(|cur| cur.load_ptx(bad, &JitOptions::default()).map(|_| ()))
        .unwrap()
        .unwrap_err();
    match &err {
        CudaError::JitFailed { log, source } => {
            assert_eq!(source.0, 218, "CUDA_ERROR_INVALID_PTX");
            let first = log.errors().next().expect("an error diagnostic");
            assert_eq!((first.severity, first.line), (Severity::Error, Some(6)));
            assert!(first.message.contains("frobnicate"), "{first:?}");
        }
        other => panic!("expected JitFailed, got {other:?}"),
    }
    assert!(err.to_string().contains("line 6"), "{err}");
    // With a verbose log, success reports what the JIT did.
    let info = ctx
        .bind(|cur| {
            cur.load_ptx(
                SLICES,
                &JitOptions {
                    verbose: true,
                    ..Default::default()
                },
            )
            .map(|m| m.info_log().clone())
        })
        .unwrap()
        .unwrap();
    assert!(
        info.diagnostics
            .iter()
            .any(|d| d.message.contains("registers")),
        "{info:?}"
    );
    drop(ctx);
    no_leaks();
}

#[test]
fn a_wrong_signature_is_refused_at_lookup_naming_the_parameter() {
    let (d, _g) = driver();
    let ctx = Context::new(&d.device(0).unwrap(), CUctx_flags::empty()).unwrap();
    ctx.bind(|cur| {
        let module = cur.load_ptx(SLICES, &JitOptions::default()).unwrap();
        // vector_add's third parameter is a slice (16 bytes), not a u64.
        // SAFETY: refused before any launch.
        let err = unsafe { module.function::<(In<f32>, In<f32>, u64)>("vector_add") }
            .map(|_| ())
            .unwrap_err();
        match err {
            CudaError::SignatureMismatch {
                function,
                parameter,
                ..
            } => assert_eq!((function.as_str(), parameter), ("vector_add", 2)),
            other => panic!("expected SignatureMismatch, got {other:?}"),
        }
        // SAFETY: refused before any launch.
        let err = unsafe { module.function::<(In<f32>, In<f32>)>("vector_add") }
            .map(|_| ())
            .unwrap_err();
        assert!(err.to_string().contains("parameter 2"), "{err}");
    })
    .unwrap();
    drop(ctx);
    no_leaks();
}

#[test]
fn host_callbacks_run_in_stream_order_and_panics_are_caught() {
    use std::sync::{Arc, Mutex};
    let log = Arc::new(Mutex::new(Vec::new()));
    on_device0(|cur| -> Result<(), CudaError> {
        // The count is process-wide: read under the guard `on_device0` holds.
        let before = oxicuda_driver::stream::host_callback_panics();
        let s = cur.create_stream(CUstream_flags::CU_STREAM_NON_BLOCKING)?;
        for i in 0..3 {
            let log = Arc::clone(&log);
            s.launch_host_fn(move || log.lock().unwrap().push(i))?;
        }
        s.launch_host_fn(|| panic!("inside a host callback"))?;
        // A panic whose payload panics again when dropped.
        s.launch_host_fn(|| std::panic::panic_any(Bomb))?;
        let after = Arc::clone(&log);
        s.launch_host_fn(move || after.lock().unwrap().push(99))?;
        s.synchronize()?;
        assert_eq!(oxicuda_driver::stream::host_callback_panics(), before + 2);
        Ok(())
    });
    assert_eq!(
        *log.lock().unwrap(),
        [0, 1, 2, 99],
        "in order, and work after a panicking callback still runs"
    );
}

/// A panic payload whose `Drop` panics.
struct Bomb;

impl Drop for Bomb {
    fn drop(&mut self) {
        panic!("the payload's drop panics too");
    }
}

#[test]
fn async_copies_borrow_host_memory_until_the_scope_has_synchronised() {
    on_device0(|cur| -> Result<(), CudaError> {
        let stream = cur.create_stream(CUstream_flags::CU_STREAM_NON_BLOCKING)?;
        let src: Vec<u32> = (0..10_000).collect();
        let mut dev = cur.alloc::<u32>(src.len())?;
        let mut back = vec![0u32; src.len()];
        stream.scope(|s| -> Result<(), CudaError> {
            s.copy_to_device(&mut dev, &src)?;
            s.copy_to_host(&mut back, &dev)
        })??;
        assert_eq!(back, src, "done when the scope returned");
        let mut short = vec![0u32; 3];
        let err = stream
            .scope(|s| s.copy_to_host(&mut short, &dev))?
            .unwrap_err();
        assert!(matches!(
            err,
            CudaError::LengthMismatch {
                destination_len: 3,
                source_len: 10_000
            }
        ));
        Ok(())
    });
}

#[test]
fn typed_globals_attributes_occupancy_and_peer_access() {
    use oxicuda_driver::sys::{CUfunction_attribute, CUresult};
    let (d, _g) = driver();
    let (d0, d1) = (d.device(0).unwrap(), second_device(d));
    let (ctx, peer) = (
        Context::new(&d0, CUctx_flags::empty()).unwrap(),
        Context::new(&d1, CUctx_flags::empty()).unwrap(),
    );
    ctx.bind(|cur| -> Result<(), CudaError> {
        let module = cur.load_ptx(
            include_str!("../kernels/globals.ptx"),
            &JitOptions::default(),
        )?;
        let coeffs = module.global::<[f32; 4]>("coeffs")?;
        assert_eq!(coeffs.read()?, [1.0, -2.0, 0.5, 0.25]);
        let mut evaluated = module.global::<u32>("evaluated")?;
        evaluated.write(&7)?;
        assert_eq!(evaluated.read()?, 7);
        match module.global::<u64>("evaluated").map(|_| ()) {
            Err(CudaError::GlobalSizeMismatch {
                expected: 8,
                found: 4,
                ..
            }) => {}
            other => panic!("expected GlobalSizeMismatch, got {other:?}"),
        }
        let slices = cur.load_ptx(SLICES, &JitOptions::default())?;
        // SAFETY: kernels/slices.cu: vector_add reads a and b and writes c, each only
        // below its length.
        let mut f = unsafe { slices.function::<(In<f32>, In<f32>, Out<f32>)>("vector_add")? };
        assert!(f.attribute(CUfunction_attribute::CU_FUNC_ATTRIBUTE_NUM_REGS)? > 0);
        let blocks = f.max_active_blocks_per_multiprocessor(256, 0)?;
        assert!((1..=32).contains(&blocks), "{blocks}");
        let sms = d0.compute()?.multiprocessors;
        let (block, grid) = f.suggested_block_size(sms, |_| 0)?;
        assert!(
            block >= 32 && block % 32 == 0 && grid >= sms,
            "{block} {grid}"
        );
        f.set_max_dynamic_shared_memory(64 * 1024)?;
        if d1 == d0 || !d0.can_access_peer(&d1)? {
            if !ON_GPU {
                panic!("softcuda's two devices are peers");
            }
            eprintln!("gpu-suite note: no peer device: peer access not exercised");
            return Ok(());
        }
        cur.enable_peer_access(&peer)?;
        assert_eq!(
            cur.enable_peer_access(&peer),
            Err(CudaError::Driver(
                CUresult::CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED
            ))
        );
        cur.disable_peer_access(&peer)?;
        Ok(())
    })
    .unwrap()
    .unwrap();
    drop((ctx, peer));
    no_leaks();
}

/// A module and its kernels kept in one value, as a kernel library keeps them.
struct Kernels<'c> {
    module: oxicuda_driver::module::Module<'c>,
    add: oxicuda_driver::module::FunctionKey<(In<f32>, In<f32>, Out<f32>)>,
    saxpy: oxicuda_driver::module::FunctionKey<(f32, In<f32>, Out<f32>)>,
}

#[test]
fn a_module_and_its_function_keys_live_in_one_value() {
    on_device0(|cur| -> Result<(), CudaError> {
        let module = cur.load_ptx(SLICES, &JitOptions::default())?;
        // SAFETY: kernels/slices.cu: each kernel writes its `Out` only below its
        // length and reads its `In`s only below theirs.
        let (add, saxpy) = unsafe {
            (
                module.function_key("vector_add")?,
                module.function_key("saxpy")?,
            )
        };
        let k = Kernels { module, add, saxpy };
        let a = cur.alloc_from(&[1.0f32, 2.0, 3.0])?;
        let mut c = cur.alloc::<f32>(3)?;
        let s = cur.create_stream(CUstream_flags::CU_STREAM_NON_BLOCKING)?;
        k.module
            .get(&k.add)?
            .launch(&s, 1, 32, 0, (&a, &a, &mut c))?;
        k.module
            .get(&k.saxpy)?
            .launch(&s, 1, 32, 0, (10.0f32, &a, &mut c))?;
        s.synchronize()?;
        assert_eq!(c.to_vec()?, [12.0, 24.0, 36.0]);
        // Another module (the same image loaded again) refuses the key.
        let other = cur.load_ptx(SLICES, &JitOptions::default())?;
        assert!(matches!(other.get(&k.add), Err(CudaError::ForeignKey)));
        Ok(())
    });
}

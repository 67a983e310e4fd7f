//! Failures in the middle of building something: the driver accepts the first steps
//! and refuses a later one (injected through softcuda). The typed error comes back,
//! and whatever the steps before made is released at once — checked with softcuda's
//! live-object counts right after the failure, inside the context, not only once
//! the context is destroyed (which would reclaim anything a context owns).
//!
//! softcuda only: the GPU suite has no fault injection.
#![cfg(not(feature = "gpu-tests"))]

mod common;

use common::{driver, no_leaks, on_device0};
use oxicuda_driver::graph::CaptureMode;
use oxicuda_driver::launch::{In, Out};
use oxicuda_driver::link::LinkInput;
use oxicuda_driver::managed::Attach;
use oxicuda_driver::module::{Function, JitOptions, Module};
use oxicuda_driver::sys::{CUctx_flags, CUresult, CUstream_flags};
use oxicuda_driver::{Context, CudaError, CurrentContext, PrimaryContext};
use softcuda::control::Counts;

const SLICES: &str = include_str!("../kernels/slices.ptx");
const LINK_A: &str = include_str!("../kernels/link_a.ptx");
const LINK_B: &str = include_str!("../kernels/link_b.ptx");

type Add = (In<f32>, In<f32>, Out<f32>);

/// The code the injected failures return.
const REFUSED: CUresult = CUresult::CUDA_ERROR_INVALID_VALUE;

/// Makes the next call of `function` fail with [`REFUSED`].
fn fail_next(function: &str) {
    softcuda::control::inject_fault(function, 1, REFUSED.0 as _);
}

/// Runs `f`, which must fail with [`REFUSED`] because of the injected fault; clears
/// the faults.
fn refused<T>(f: impl FnOnce() -> Result<T, CudaError>) {
    let r = f().map(drop);
    softcuda::control::clear_faults();
    assert_eq!(r, Err(CudaError::Driver(REFUSED)));
}

/// softcuda holds exactly the one context the test binds, and `extra`.
fn only_the_context(extra: Counts) {
    assert_eq!(
        softcuda::control::live_counts(),
        Counts {
            contexts: extra.contexts + 1,
            ..extra
        }
    );
}

fn add_fn<'m>(m: &'m Module<'_>) -> Result<Function<'m, Add>, CudaError> {
    // SAFETY: kernels/slices.cu: vector_add writes its output only below its length
    // and reads its inputs only below theirs.
    unsafe { m.function::<Add>("vector_add") }
}

/// A kernel ready to launch: loads the module, then looks the function up.
fn load_kernel(cur: &CurrentContext<'_>) -> Result<(), CudaError> {
    let m = cur.load_ptx(SLICES, &JitOptions::default())?;
    let _f = add_fn(&m)?;
    Ok(())
}

#[test]
fn module_loaded_but_the_function_lookup_fails() {
    on_device0(|cur| {
        fail_next("cuModuleGetFunction");
        refused(|| load_kernel(cur));
        only_the_context(Counts::default());
        // The function found, but its signature check (cuFuncGetParamInfo) fails
        // (INVALID_HANDLE: INVALID_VALUE there means "past the last parameter").
        let code = CUresult::CUDA_ERROR_INVALID_HANDLE;
        softcuda::control::inject_fault("cuFuncGetParamInfo", 1, code.0 as _);
        let r = load_kernel(cur);
        softcuda::control::clear_faults();
        assert_eq!(r, Err(CudaError::Driver(code)));
        only_the_context(Counts::default());
        load_kernel(cur)
    })
}

#[test]
fn library_loaded_but_the_kernel_lookup_fails() {
    let (d, _g) = driver();
    for function in ["cuLibraryGetKernel", "cuKernelGetFunction"] {
        let ctx = Context::new(&d.device(0).unwrap(), CUctx_flags::empty()).unwrap();
        ctx.bind(|cur| {
            fail_next(function);
            refused(|| -> Result<(), CudaError> {
                let lib = d.load_library(SLICES.as_bytes(), &JitOptions::default())?;
                // SAFETY: as `add_fn`.
                let k = unsafe { lib.kernel::<Add>("vector_add")? };
                let _f = k.function(cur)?;
                Ok(())
            });
            only_the_context(Counts::default());
        })
        .unwrap();
        drop(ctx);
        no_leaks();
    }
}

#[test]
fn pool_created_but_setting_its_attribute_fails() {
    on_device0(|cur| {
        fail_next("cuMemPoolSetAttribute");
        refused(|| -> Result<(), CudaError> {
            let pool = cur.create_memory_pool(None)?;
            pool.set_release_threshold(1 << 20)?;
            Ok(())
        });
        only_the_context(Counts::default());
        // The pool's access for another device.
        fail_next("cuMemPoolSetAccess");
        refused(|| -> Result<(), CudaError> {
            let pool = cur.create_memory_pool(Some(1 << 20))?;
            let peer = cur.driver().device(1)?;
            pool.set_access(&peer, oxicuda_driver::pool::Access::ReadWrite)?;
            Ok(())
        });
        only_the_context(Counts::default());
        Ok(())
    })
}

#[test]
fn graph_built_but_instantiation_fails() {
    on_device0(|cur| {
        let m = cur.load_ptx(SLICES, &JitOptions::default())?;
        let f = add_fn(&m)?;
        let (a, b, c) = (
            cur.alloc::<f32>(32)?,
            cur.alloc::<f32>(32)?,
            cur.alloc::<f32>(32)?,
        );
        let held = Counts {
            modules: 1,
            allocations: 3,
            ..Counts::default()
        };
        let host = [1f32; 32];
        fail_next("cuGraphInstantiateWithFlags");
        refused(|| -> Result<(), CudaError> {
            let mut g = cur.create_graph()?;
            let up = g.add_copy_to_device(&[], &a, &host)?;
            let (alloc, mem) = g.add_alloc::<f32>(&[up], 32)?;
            let k = g.add_kernel(&[alloc], &f, 1, 32, 0, (&a, &b, &c))?;
            g.add_free(&[k.node()], mem)?;
            let mut child = cur.create_graph()?;
            child.add_empty(&[])?;
            g.add_child(&[], &child)?;
            let _exec = g.instantiate()?;
            Ok(())
        });
        only_the_context(held);
        // A node refused halfway through building: the graph goes with the error.
        fail_next("cuGraphAddKernelNode");
        refused(|| -> Result<(), CudaError> {
            let mut g = cur.create_graph()?;
            let e = g.add_empty(&[])?;
            g.add_kernel(&[e], &f, 1, 32, 0, (&a, &b, &c))?;
            Ok(())
        });
        only_the_context(held);
        Ok(())
    })
}

#[test]
fn context_created_but_pushing_it_fails() {
    let (d, _g) = driver();
    let dev = d.device(0).unwrap();
    // Created, then binding refused: the context is destroyed when dropped, and the
    // thread is not left bound (the next binding works).
    let ctx = Context::new(&dev, CUctx_flags::empty()).unwrap();
    fail_next("cuCtxPushCurrent");
    refused(|| ctx.bind(|_| ()));
    drop(ctx);
    no_leaks();
    // Created, but cuCtxCreate's push could not be undone (the pop fails): the
    // context is destroyed before the error comes back.
    fail_next("cuCtxPopCurrent");
    refused(|| Context::new(&dev, CUctx_flags::empty()));
    no_leaks();
    // A primary context retained, then binding refused: released when dropped.
    let p = PrimaryContext::retain(&dev).unwrap();
    fail_next("cuCtxPushCurrent");
    refused(|| p.bind(|_| ()));
    drop(p);
    no_leaks();
    // A nested binding refused: the outer one goes on.
    let (outer, inner) = (
        Context::new(&dev, CUctx_flags::empty()).unwrap(),
        Context::new(&dev, CUctx_flags::empty()).unwrap(),
    );
    outer
        .bind(|cur| {
            fail_next("cuCtxPushCurrent");
            refused(|| cur.push(&inner, |_| ()));
            assert_eq!(cur.alloc_from(&[4u8])?.to_vec()?, [4]);
            Ok::<_, CudaError>(())
        })
        .unwrap()
        .unwrap();
    // And the thread is free for the next root binding.
    let v = inner
        .bind(|cur| cur.alloc_from(&[6u8])?.to_vec())
        .unwrap()
        .unwrap();
    assert_eq!(v, [6]);
    drop((outer, inner));
    no_leaks();
}

#[test]
fn linker_created_but_adding_or_completing_fails() {
    on_device0(|cur| {
        let a = LinkInput::Ptx {
            name: "link_a.ptx",
            text: LINK_A,
        };
        let b = LinkInput::Ptx {
            name: "link_b.ptx",
            text: LINK_B,
        };
        // The second input refused.
        softcuda::control::inject_fault("cuLinkAddData", 2, REFUSED.0 as _);
        refused(|| -> Result<(), CudaError> {
            let mut l = cur.linker(&JitOptions::default())?;
            l.add(a)?;
            l.add(b)?;
            Ok(())
        });
        only_the_context(Counts::default());
        // Linked, but the linked image refused as a module.
        fail_next("cuModuleLoadDataEx");
        refused(|| -> Result<(), CudaError> {
            let mut l = cur.linker(&JitOptions::default())?;
            l.add(a)?;
            l.add(b)?;
            l.complete()?;
            Ok(())
        });
        only_the_context(Counts::default());
        Ok(())
    })
}

#[test]
fn managed_allocation_made_but_zeroing_it_fails() {
    on_device0(|cur| {
        fail_next("cuMemsetD8");
        refused(|| cur.alloc_managed::<u32>(1024, Attach::Global));
        only_the_context(Counts::default());
        // The memory is given back, not only forgotten: the same budget fits again.
        softcuda::control::fail_allocations_after(4096);
        let m = cur.alloc_managed::<u32>(1024, Attach::Global)?;
        softcuda::control::clear_faults();
        assert!(m.as_slice().len() == 1024);
        Ok(())
    })
}

#[test]
fn capture_begun_but_failing_is_ended_and_its_graph_destroyed() {
    on_device0(|cur| {
        let mut s = cur.create_stream(CUstream_flags::CU_STREAM_NON_BLOCKING)?;
        let held = Counts {
            streams: 1,
            ..Counts::default()
        };
        // Begun, but the capture's identity cannot be read.
        fail_next("cuStreamGetCaptureInfo");
        refused(|| s.capture(CaptureMode::ThreadLocal, |_| Ok(())));
        only_the_context(held);
        // Begun, a fork's event made, but recording it fails.
        let mut side = cur.create_stream(CUstream_flags::CU_STREAM_NON_BLOCKING)?;
        let held = Counts {
            streams: 2,
            ..Counts::default()
        };
        fail_next("cuEventRecord");
        refused(|| {
            s.capture_with(CaptureMode::ThreadLocal, &mut [&mut side], |cap, br| {
                cap.fork(&mut br[0], |_| Ok(()))
            })
        });
        only_the_context(held);
        // The stream captures again afterwards.
        let g = s.capture(CaptureMode::ThreadLocal, |cap| cap.host_fn(|| {}))?;
        assert_eq!(g.driver_node_count()?, 1);
        Ok(())
    })
}

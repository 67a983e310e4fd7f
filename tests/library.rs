//! Libraries through the safe layer, on softcuda (or with `--features gpu-tests` the
//! driver the environment names): loaded without a context, a kernel declared once
//! and launched in contexts of two devices, variables per context, kernel count,
//! names and attributes, a linked image as a library, and the refusals (signature,
//! unknown kernel, bad image, JIT failure, another driver's context). No live object
//! is left.

mod common;

use common::{driver, no_leaks, out_of_range_jit_options, second_device};

use oxicuda_driver::launch::{In, Out};
use oxicuda_driver::link::LinkInput;
use oxicuda_driver::module::JitOptions;
use oxicuda_driver::sys::{CUctx_flags, CUfunction_attribute, CUresult, CUstream_flags};
use oxicuda_driver::{Context, CudaError, Driver, DriverOptions};

const SLICES: &str = include_str!("../kernels/slices.ptx");
const GLOBALS: &str = include_str!("../kernels/globals.ptx");

#[test]
fn a_library_kernel_launches_in_contexts_of_two_devices() {
    let (d, _g) = driver();
    let lib = d
        .load_library(SLICES.as_bytes(), &JitOptions::default())
        .unwrap();
    // SAFETY: kernels/slices.cu: vector_add writes c only below its length and reads
    // a and b only below theirs.
    let add = unsafe { lib.kernel::<(In<f32>, In<f32>, Out<f32>)>("vector_add") }.unwrap();
    assert_eq!(add.name(), "vector_add");
    for device in [d.device(0).unwrap(), second_device(d)] {
        let ctx = Context::new(&device, CUctx_flags::empty()).unwrap();
        ctx.bind(|cur| -> Result<(), CudaError> {
            let f = add.function(cur)?;
            let a = cur.alloc_from(&[1.0f32, 2.0, 3.0])?;
            let b = cur.alloc_from(&[10.0f32, 20.0, 30.0])?;
            let mut c = cur.alloc::<f32>(3)?;
            let s = cur.create_stream(CUstream_flags::CU_STREAM_NON_BLOCKING)?;
            f.launch(&s, 1, 32, 0, (&a, &b, &mut c))?;
            s.synchronize()?;
            assert_eq!(c.to_vec()?, [11.0, 22.0, 33.0]);
            Ok(())
        })
        .unwrap()
        .unwrap();
    }
    drop(add);
    drop(lib);
    no_leaks();
}

#[test]
fn library_variables_exist_once_per_context() {
    let (d, _g) = driver();
    let lib = d
        .load_library(GLOBALS.as_bytes(), &JitOptions::default())
        .unwrap();
    let c0 = Context::new(&d.device(0).unwrap(), CUctx_flags::empty()).unwrap();
    let c1 = Context::new(&second_device(d), CUctx_flags::empty()).unwrap();
    c0.bind(|cur| -> Result<(), CudaError> {
        let mut evaluated = lib.global::<u32>(cur, "evaluated")?;
        assert_eq!(evaluated.read()?, 0);
        evaluated.write(&41)?;
        assert_eq!(
            lib.global::<[i32; 3]>(cur, "offsets")?.read()?,
            [10, 20, 30]
        );
        assert!(matches!(
            lib.global::<u64>(cur, "evaluated"),
            Err(CudaError::GlobalSizeMismatch {
                expected: 8,
                found: 4,
                ..
            })
        ));
        assert!(matches!(
            lib.global::<u32>(cur, "missing"),
            Err(CudaError::NotFound { what: "variable", place: "library", ref name, .. })
                if name == "missing"
        ));
        Ok(())
    })
    .unwrap()
    .unwrap();
    c1.bind(|cur| -> Result<(), CudaError> {
        // Context 1 has its own copy, untouched by context 0's write.
        assert_eq!(lib.global::<u32>(cur, "evaluated")?.read()?, 0);
        Ok(())
    })
    .unwrap()
    .unwrap();
    c0.bind(|cur| -> Result<(), CudaError> {
        assert_eq!(lib.global::<u32>(cur, "evaluated")?.read()?, 41);
        Ok(())
    })
    .unwrap()
    .unwrap();
    drop((c0, c1));
    drop(lib);
    no_leaks();
}

#[test]
fn kernels_are_counted_named_and_have_per_device_attributes() {
    let (d, _g) = driver();
    let lib = d
        .load_library(SLICES.as_bytes(), &JitOptions::default())
        .unwrap();
    let names = lib.kernel_names().unwrap();
    assert_eq!(lib.kernel_count().unwrap(), names.len());
    for k in ["vector_add", "saxpy"] {
        assert!(names.iter().any(|n| n == k), "{k} in {names:?}");
    }
    // SAFETY: kernels/slices.cu, as above.
    let saxpy = unsafe { lib.kernel::<(f32, In<f32>, Out<f32>)>("saxpy") }.unwrap();
    let dev0 = d.device(0).unwrap();
    let regs = CUfunction_attribute::CU_FUNC_ATTRIBUTE_NUM_REGS;
    assert!(saxpy.attribute(regs, &dev0).unwrap() > 0);
    let dynamic = CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES;
    saxpy
        .set_max_dynamic_shared_memory(&dev0, 64 * 1024)
        .unwrap();
    assert_eq!(saxpy.attribute(dynamic, &dev0).unwrap(), 64 * 1024);
    assert!(matches!(
        saxpy.set_max_dynamic_shared_memory(&dev0, 1 << 30),
        Err(CudaError::Driver(CUresult::CUDA_ERROR_INVALID_VALUE))
    ));
    drop(saxpy);
    drop(lib);
    no_leaks();
}

#[test]
fn refusals() {
    let (d, _g) = driver();
    let lib = d
        .load_library(SLICES.as_bytes(), &JitOptions::default())
        .unwrap();
    // SAFETY: refused before any use.
    let wrong = unsafe { lib.kernel::<(In<f32>, Out<f32>)>("vector_add") };
    assert!(matches!(
        wrong,
        Err(CudaError::SignatureMismatch { parameter: 2, .. })
    ));
    // SAFETY: refused before any use.
    let missing = unsafe { lib.kernel::<()>("no_such_kernel") };
    assert!(matches!(
        missing,
        Err(CudaError::NotFound { what: "kernel", place: "library", ref name, .. })
            if name == "no_such_kernel"
    ));
    assert!(matches!(
        d.load_library(b"\x7fELF\x02\x01\x01", &JitOptions::default()),
        Err(CudaError::InvalidImage(_))
    ));
    let broken = SLICES.replace("ret;", "frobnicate;");
    assert!(matches!(
        d.load_library(broken.as_bytes(), &JitOptions::default()),
        Err(CudaError::JitFailed { .. })
    ));
    assert!(matches!(
        d.load_library_file("/nonexistent/lib.ptx", &JitOptions::default()),
        Err(CudaError::ReadFile { .. })
    ));
    drop(lib);
    no_leaks();
}

#[test]
fn a_linked_image_loads_as_a_library() {
    let (d, _g) = driver();
    let ctx = Context::new(&d.device(0).unwrap(), CUctx_flags::empty()).unwrap();
    let image = ctx
        .bind(|cur| -> Result<Vec<u8>, CudaError> {
            let mut linker = cur.linker(&JitOptions::default())?;
            linker.add(LinkInput::Ptx {
                name: "link_a.ptx",
                text: include_str!("../kernels/link_a.ptx"),
            })?;
            linker.add(LinkInput::Ptx {
                name: "link_b.ptx",
                text: include_str!("../kernels/link_b.ptx"),
            })?;
            linker.complete_image()
        })
        .unwrap()
        .unwrap();
    let lib = d.load_library(&image, &JitOptions::default()).unwrap();
    // SAFETY: kernels/link_a.cu: read_factor writes y[0] only if y is not empty.
    let read = unsafe { lib.kernel::<(Out<f32>,)>("read_factor") }.unwrap();
    ctx.bind(|cur| -> Result<(), CudaError> {
        let f = read.function(cur)?;
        let mut y = cur.alloc::<f32>(1)?;
        let s = cur.create_stream(CUstream_flags::CU_STREAM_NON_BLOCKING)?;
        f.launch(&s, 1, 1, 0, (&mut y,))?;
        s.synchronize()?;
        assert_eq!(y.to_vec()?, [3.0]);
        Ok(())
    })
    .unwrap()
    .unwrap();
    drop(read);
    drop(lib);
    drop(ctx);
    no_leaks();
}

/// A library of one driver with a context of another: a second softcuda, loaded
/// from the cdylib, is another `Driver`.
#[test]
fn another_drivers_context_is_refused() {
    let (d, _g) = driver();
    // SAFETY: libsoftcuda.so implements the driver ABI.
    let options = unsafe { DriverOptions::new().path(common::libsoftcuda()) };
    let other: &'static Driver = Box::leak(Box::new(Driver::load(&options).unwrap()));
    other.init().unwrap();
    let lib = d
        .load_library(SLICES.as_bytes(), &JitOptions::default())
        .unwrap();
    // SAFETY: kernels/slices.cu, as above.
    let add = unsafe { lib.kernel::<(In<f32>, In<f32>, Out<f32>)>("vector_add") }.unwrap();
    let ctx = Context::new(&other.device(0).unwrap(), CUctx_flags::empty()).unwrap();
    ctx.bind(|cur| {
        assert!(matches!(add.function(cur), Err(CudaError::ForeignDriver)));
        assert!(matches!(
            lib.global::<u32>(cur, "x"),
            Err(CudaError::ForeignDriver)
        ));
    })
    .unwrap();
    assert!(matches!(
        add.attribute(
            CUfunction_attribute::CU_FUNC_ATTRIBUTE_NUM_REGS,
            &other.device(0).unwrap()
        ),
        Err(CudaError::ForeignDriver)
    ));
    drop(ctx);
    drop(add);
    drop(lib);
    no_leaks();
}

/// `Err(InvalidArgument)` naming `parameter`.
fn invalid_argument<T>(r: Result<T, CudaError>, parameter: &str) -> bool {
    matches!(r, Err(CudaError::InvalidArgument { parameter: p, .. }) if p == parameter)
}

#[test]
fn names_options_files_and_sizes_are_checked_before_the_driver() {
    let (d, _g) = driver();
    let lib = d
        .load_library(SLICES.as_bytes(), &JitOptions::default())
        .unwrap();
    // A NUL in a name: the crate's refusal, not a made-up driver code.
    // SAFETY: refused before any use.
    let k = unsafe { lib.kernel::<(In<f32>, In<f32>, Out<f32>)>("vector\0add") };
    assert!(invalid_argument(k, "name"));
    // SAFETY: refused before any use.
    let k = unsafe { lib.kernel_unchecked::<()>("\0") };
    assert!(invalid_argument(k, "name"));
    let ctx = Context::new(&d.device(0).unwrap(), CUctx_flags::empty()).unwrap();
    ctx.bind(|cur| assert!(invalid_argument(lib.global::<u32>(cur, "x\0"), "name")))
        .unwrap();
    drop(ctx);
    // A dynamic shared memory size the attribute (an int) cannot hold.
    // SAFETY: kernels/slices.cu, as above.
    let add = unsafe { lib.kernel::<(In<f32>, In<f32>, Out<f32>)>("vector_add") }.unwrap();
    let dev0 = d.device(0).unwrap();
    assert!(invalid_argument(
        add.set_max_dynamic_shared_memory(&dev0, u32::MAX),
        "bytes"
    ));
    drop(add);
    drop(lib);
    // JIT options out of range.
    for (options, parameter) in out_of_range_jit_options() {
        assert!(invalid_argument(
            d.load_library(SLICES.as_bytes(), &options),
            parameter
        ));
    }
    let lib = d
        .load_library(
            SLICES.as_bytes(),
            &JitOptions {
                optimization_level: Some(3),
                target: Some(80),
                ..Default::default()
            },
        )
        .unwrap();
    drop(lib);
    // Files: a directory and an endless device are refused before reading.
    for p in ["/tmp", "/dev/zero"] {
        assert!(invalid_argument(
            d.load_library_file(p, &JitOptions::default()),
            "path"
        ));
    }
    no_leaks();
}

/// Dropping a library while its kernel still runs: the driver's `cuLibraryUnload`
/// waits for the work (softcuda drains the streams of the library's contexts), and
/// the JIT arrays of the (lazy) load live until after it.
#[test]
fn a_library_dropped_while_its_kernel_runs_waits_for_it() {
    let (d, _g) = driver();
    let ctx = Context::new(&d.device(0).unwrap(), CUctx_flags::empty()).unwrap();
    ctx.bind(|cur| -> Result<(), CudaError> {
        let verbose = JitOptions {
            verbose: true,
            ..Default::default()
        };
        let lib = d.load_library(SLICES.as_bytes(), &verbose)?;
        // SAFETY: kernels/slices.cu, as above.
        let k = unsafe { lib.kernel::<(In<f32>, In<f32>, Out<f32>)>("vector_add") }?;
        // First use in this context: where a lazily loading driver compiles.
        let f = k.function(cur)?;
        let n = 1 << 16;
        let a = cur.alloc_from(&vec![1.0f32; n])?;
        let b = cur.alloc_from(&vec![2.0f32; n])?;
        let mut c = cur.alloc::<f32>(n)?;
        let s = cur.create_stream(CUstream_flags::CU_STREAM_NON_BLOCKING)?;
        f.launch(&s, (n / 256) as u32, 256, 0, (&a, &b, &mut c))?;
        // `f` (no destructor) is not used again; the kernel and library go now.
        drop(k);
        drop(lib);
        s.synchronize()?;
        assert!(c.to_vec()?.iter().all(|x| *x == 3.0));
        Ok(())
    })
    .unwrap()
    .unwrap();
    drop(ctx);
    no_leaks();
}

/// A kernel library as a library author writes one: the library and the keys of its
/// kernels in one value, shared by threads through an `Arc`.
struct Blas {
    library: oxicuda_driver::library::Library,
    add: oxicuda_driver::library::KernelKey<(In<f32>, In<f32>, Out<f32>)>,
}

#[test]
fn a_library_and_its_kernel_keys_live_in_one_value_shared_by_threads() {
    let (d, _g) = driver();
    let library = d
        .load_library(SLICES.as_bytes(), &JitOptions::default())
        .unwrap();
    // SAFETY: kernels/slices.cu: vector_add writes c only below its length and reads
    // a and b only below theirs.
    let add = unsafe { library.kernel_key("vector_add") }.unwrap();
    let blas = std::sync::Arc::new(Blas { library, add });
    let threads: Vec<_> = (0..2)
        .map(|t| {
            let blas = blas.clone();
            std::thread::spawn(move || {
                let ctx = Context::new(&d.device(0).unwrap(), CUctx_flags::empty()).unwrap();
                ctx.bind(|cur| -> Result<Vec<f32>, CudaError> {
                    let kernel = blas.library.get(&blas.add)?;
                    assert_eq!(kernel.name(), "vector_add");
                    let f = kernel.function(cur)?;
                    let a = cur.alloc_from(&[t as f32; 4])?;
                    let mut c = cur.alloc::<f32>(4)?;
                    let s = cur.create_stream(CUstream_flags::CU_STREAM_NON_BLOCKING)?;
                    f.launch(&s, 1, 32, 0, (&a, &a, &mut c))?;
                    s.synchronize()?;
                    c.to_vec()
                })
                .unwrap()
                .unwrap()
            })
        })
        .collect();
    let sums: Vec<Vec<f32>> = threads.into_iter().map(|h| h.join().unwrap()).collect();
    assert_eq!(sums, [vec![0.0; 4], vec![2.0; 4]]);
    // A key is its own library's: another library (even one loaded from the same
    // image, or one that reuses an unloaded library's handle) refuses it.
    let other = d
        .load_library(SLICES.as_bytes(), &JitOptions::default())
        .unwrap();
    assert!(matches!(other.get(&blas.add), Err(CudaError::ForeignKey)));
    let key = blas.add.clone();
    drop(blas);
    let again = d
        .load_library(SLICES.as_bytes(), &JitOptions::default())
        .unwrap();
    assert!(matches!(again.get(&key), Err(CudaError::ForeignKey)));
    drop((other, again));
    no_leaks();
}

//! What a new user meets in the first hour (issue 29, items 4 and 5): `Debug` on every
//! type a user keeps in a struct, empty buffers, errors that name what was wrong, and
//! the small conveniences — on softcuda (the `soft` feature).

mod common;

use common::{driver, no_leaks, on_device0};

use oxicuda_driver::event::{Event, NoTiming, Timing};
use oxicuda_driver::graph::{CaptureMode, Graph, GraphExec};
use oxicuda_driver::launch::{In, Len, Out, Ptr, PtrMut};
use oxicuda_driver::library::{Kernel, Library};
use oxicuda_driver::managed::{Attach, ManagedBuffer};
use oxicuda_driver::memory::{DeviceBuffer, DeviceSlice, DeviceSliceMut};
use oxicuda_driver::module::{Function, JitOptions, Module};
use oxicuda_driver::pinned::HostBuffer;
use oxicuda_driver::pool::{MemoryPool, StreamBuffer};
use oxicuda_driver::stream::Stream;
use oxicuda_driver::sys::{CUctx_flags, CUmemhostalloc_flags, CUstream_flags};
use oxicuda_driver::{Context, CudaError, CurrentContext};

/// vector_add, saxpy, affine, rows: every buffer reaches the kernel with its length.
const SLICES: &str = include_str!("../kernels/slices.ptx");

/// `c[i] = a[i] + b[i]` for `i < n`: raw pointers and a count.
const VECTOR_ADD: &str = include_str!("../kernels/vector_add.ptx");

type Saxpy = (f32, In<f32>, Out<f32>);
type VectorAdd = (Ptr<f32>, Ptr<f32>, PtrMut<f32>, Len<u32>);

/// softcuda's count of live device allocations.
fn allocations() -> usize {
    softcuda::control::live_counts().allocations
}

/// What a user's library keeps: everything in it derives `Debug` (issue 29, item 5).
#[allow(dead_code)] // read only through `Debug`
#[derive(Debug)]
struct Held<'c, 't, 'm, 's, 'v, 'w, 'g, 'e> {
    cur: &'c CurrentContext<'t>,
    module: &'m Module<'c>,
    saxpy: Function<'m, Saxpy>,
    stream: Stream<'c>,
    timing: Event<'c, Timing>,
    plain: Event<'c, NoTiming>,
    buffer: DeviceBuffer<'c, f32>,
    view: DeviceSlice<'v, f32>,
    view_mut: DeviceSliceMut<'w, f32>,
    host: HostBuffer<'c, u8>,
    managed: ManagedBuffer<'c, u32>,
    pool: MemoryPool<'c>,
    ordered: StreamBuffer<'s, f32>,
    graph: Graph<'g>,
    exec: GraphExec<'e>,
}

#[allow(dead_code)]
#[derive(Debug)]
struct HeldLibrary<'l> {
    library: &'l Library,
    kernel: Kernel<'l, Saxpy>,
}

#[test]
fn user_structs_holding_every_handle_derive_debug() {
    on_device0(|cur| {
        let module = cur.load_ptx(SLICES, &JitOptions::default())?;
        // SAFETY: kernels/slices.cu: saxpy reads x and updates y, each only below its
        // length.
        let saxpy = unsafe { module.function::<Saxpy>("saxpy")? };
        let mut stream = cur.create_stream(CUstream_flags::CU_STREAM_NON_BLOCKING)?;
        let x = cur.alloc_from(&[1.0f32; 8])?;
        let mut y = cur.alloc_zeros::<f32>(8)?;
        let graph = stream.capture(CaptureMode::ThreadLocal, |c| {
            c.launch(&saxpy, 1, 8, 0, (2.0f32, &x, &mut y))
        })?;
        let exec = cur.create_graph()?.instantiate()?;
        let side = cur.create_stream(CUstream_flags::CU_STREAM_NON_BLOCKING)?;
        let ordered = side.alloc_async::<f32>(4)?;
        let mut other = cur.alloc::<f32>(16)?;
        let held = Held {
            cur,
            module: &module,
            saxpy: unsafe { module.function::<Saxpy>("saxpy")? },
            stream: cur.create_stream(CUstream_flags::CU_STREAM_NON_BLOCKING)?,
            timing: cur.create_event::<Timing>()?,
            plain: cur.create_event::<NoTiming>()?,
            buffer: cur.alloc::<f32>(1024)?,
            view: x.as_slice(),
            view_mut: other.as_mut_slice(),
            host: cur.alloc_host::<u8>(3, CUmemhostalloc_flags::empty())?,
            managed: cur.alloc_managed::<u32>(5, Attach::Global)?,
            pool: cur.default_memory_pool()?,
            ordered,
            graph,
            exec,
        };
        let text = format!("{held:?}");
        for want in [
            "CurrentContext(CUcontext(0x",
            "Module { raw: CUmodule(0x",
            "Function<(f32, In<f32>, Out<f32>), Plain>(CUfunction(0x",
            "Stream(CUstream(0x",
            "Event<Timing>(CUevent(0x",
            "Event<NoTiming>(CUevent(0x",
            "DeviceBuffer<f32> { ptr: 0x",
            "len: 1024 }",
            "DeviceSlice<f32> { ptr: 0x",
            "DeviceSliceMut<f32> { ptr: 0x",
            "len: 16 }",
            "HostBuffer<u8> { ptr: 0x",
            "ManagedBuffer<u32> { ptr: 0x",
            "MemoryPool { raw: CUmemoryPool(0x",
            "StreamBuffer<f32> { ptr: 0x",
            "stream: CUstream(0x",
            "Graph { raw: CUgraph(0x",
            "GraphExec { raw: CUgraphExec(0x",
        ] {
            assert!(text.contains(want), "{want:?} missing from {text}");
        }
        // The address shown is the buffer's, and nothing of its contents.
        let shown = format!("{:?}", held.buffer);
        assert_eq!(
            shown,
            format!(
                "DeviceBuffer<f32> {{ ptr: {:#x}, len: 1024 }}",
                held.buffer.device_ptr()
            )
        );
        drop(held);
        side.synchronize()?;
        Ok(())
    });
    let (d, _g) = driver();
    let library = d
        .load_library(SLICES.as_bytes(), &JitOptions::default())
        .unwrap();
    // SAFETY: as above.
    let kernel = unsafe { library.kernel::<Saxpy>("saxpy") }.unwrap();
    let text = format!(
        "{:?}",
        HeldLibrary {
            library: &library,
            kernel
        }
    );
    assert!(text.contains("Library { raw: CUlibrary(0x"), "{text}");
    assert!(
        text.contains("Kernel<(f32, In<f32>, Out<f32>)>(\"saxpy\", CUkernel(0x"),
        "{text}"
    );
    drop(library);
    // A context outside a binding, too.
    let ctx = Context::new(&d.device(0).unwrap(), CUctx_flags::empty()).unwrap();
    assert!(format!("{ctx:?}").starts_with("Context(CUcontext(0x"));
    drop(ctx);
    no_leaks();
}

#[test]
fn empty_buffers_allocate_nothing_and_every_operation_on_them_works() {
    on_device0(|cur| {
        let before = allocations();
        let mut a = cur.alloc::<f32>(0)?;
        let mut b = cur.alloc_from::<f32>(&[])?;
        let mut z = cur.alloc_zeros::<f32>(0)?;
        let mut zst = cur.alloc::<[f32; 0]>(5)?; // five elements of no bytes
        assert_eq!(allocations(), before, "an empty buffer allocates nothing");
        assert_eq!((a.len(), a.is_empty(), a.device_ptr()), (0, true, 0));
        assert_eq!((zst.len(), zst.is_empty()), (5, false));
        // Synchronous copies, memsets and views.
        assert_eq!(a.to_vec()?, Vec::<f32>::new());
        a.copy_to_host(&mut [])?;
        a.copy_from_host(&[])?;
        a.copy_from(&b)?;
        b.copy_from(&z.as_slice())?;
        a.fill(1.0)?;
        z.zero()?;
        assert_eq!(
            a.copy_from_host(&[1.0]),
            Err(CudaError::LengthMismatch {
                destination_len: 0,
                source_len: 1
            })
        );
        let (lo, hi) = a.as_mut_slice().split_at(0)?;
        assert_eq!((lo.len(), hi.len()), (0, 0));
        assert_eq!(b.as_slice().slice(..)?.to_vec()?, Vec::<f32>::new());
        assert_eq!(zst.to_vec()?.len(), 5);
        zst.copy_from_host(&[[]; 5])?;
        zst.zero()?;
        // Stream-ordered copies and memsets.
        let mut stream = cur.create_stream(CUstream_flags::CU_STREAM_NON_BLOCKING)?;
        let mut host: [f32; 0] = [];
        stream.scope(|s| -> Result<(), CudaError> {
            s.copy_to_device(&mut a, &[])?;
            s.copy_to_host(&mut host, &b)
        })??;
        stream.fill(&mut z, 2.0f32)?;
        // Launches: a slice kernel sees length 0; a pointer kernel's `Len` of 0 is
        // within every empty view.
        let module = cur.load_ptx(SLICES, &JitOptions::default())?;
        // SAFETY: kernels/slices.cu: saxpy reads x and updates y, each only below its
        // length.
        let saxpy = unsafe { module.function::<Saxpy>("saxpy")? };
        saxpy.launch(&stream, 1, 32, 0, (2.0f32, &a, &mut b))?;
        let ptrs = cur.load_ptx(VECTOR_ADD, &JitOptions::default())?;
        // SAFETY: kernels/vector_add.cu touches a, b and c only below n.
        let add = unsafe { ptrs.function::<VectorAdd>("vector_add")? };
        add.launch(&stream, 1, 32, 0, (&a, &b, &mut z, 0u32))?;
        assert_eq!(
            add.launch(&stream, 1, 32, 0, (&a, &b, &mut z, 1u32)),
            Err(CudaError::ViewTooShort {
                parameter: 0,
                len: 0,
                value: 1
            })
        );
        stream.synchronize()?;
        // A captured graph and a built one, with empty buffers in every node kind.
        let graph = stream.capture(CaptureMode::ThreadLocal, |c| {
            c.copy_to_device(&a, &[])?;
            c.launch(&saxpy, 1, 32, 0, (2.0f32, &a, &b))?;
            c.fill(&z, 3.0f32)?;
            c.copy_to_host(&mut [], &b)
        })?;
        let mut built = cur.create_graph()?;
        let n1 = built.add_copy_to_device(&[], &a, &[])?;
        let n2 = built.add_fill(&[n1], &b, 4.0f32)?;
        let n3 = built.add_copy(&[n2], &z, &a)?;
        built.add_kernel(&[n3], &saxpy, 1, 32, 0, (1.0f32, &a, &b))?;
        let (graph, built) = (graph.instantiate()?, built.instantiate()?);
        stream.scope(|s| -> Result<(), CudaError> {
            s.launch_graph(&graph)?;
            s.launch_graph(&built)
        })??;
        drop((graph, built));
        // `mem::forget` of an empty buffer leaks nothing.
        std::mem::forget(cur.alloc::<u8>(0)?);
        drop((a, b, z, zst));
        assert_eq!(allocations(), before);
        Ok(())
    });
}

#[test]
fn names_not_found_come_back_with_the_name_and_what_there_is() {
    on_device0(|cur| {
        let module = cur.load_ptx(SLICES, &JitOptions::default())?;
        // SAFETY: refused before any launch.
        let e = unsafe { module.function::<Saxpy>("saxpi") }
            .map(|_| ())
            .unwrap_err();
        match &e {
            CudaError::NotFound {
                what,
                name,
                place,
                known,
            } => {
                assert_eq!(
                    (*what, name.as_str(), *place),
                    ("kernel", "saxpi", "module")
                );
                assert!(known.iter().any(|k| k == "saxpy"), "{known:?}");
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(
            e.code(),
            Some(oxicuda_driver::sys::CUresult::CUDA_ERROR_NOT_FOUND)
        );
        let text = e.to_string();
        assert!(
            text.starts_with("no kernel named `saxpi` in the module; it has "),
            "{text}"
        );
        assert!(text.contains("`saxpy`"), "{text}");
        let e = module.global::<u32>("nothing").map(|_| ()).unwrap_err();
        assert_eq!(e.to_string(), "no variable named `nothing` in the module");
        Ok(())
    });
    let (d, _g) = driver();
    let library = d
        .load_library(SLICES.as_bytes(), &JitOptions::default())
        .unwrap();
    // SAFETY: refused before any launch.
    match unsafe { library.kernel::<Saxpy>("sxapy") }.map(|_| ()) {
        Err(CudaError::NotFound {
            what: "kernel",
            name,
            place: "library",
            known,
        }) => {
            assert_eq!(name, "sxapy");
            assert!(known.iter().any(|k| k == "saxpy"), "{known:?}");
        }
        other => panic!("{other:?}"),
    }
    drop(library);
    no_leaks();
}

#[test]
fn a_signature_mismatch_between_slices_and_pointers_says_which_kinds_to_use() {
    on_device0(|cur| {
        // A pointer kernel declared with slices: 16 bytes declared, 8 found.
        let ptrs = cur.load_ptx(VECTOR_ADD, &JitOptions::default())?;
        // SAFETY: refused before any launch.
        let e = unsafe { ptrs.function::<(In<f32>, In<f32>, Out<f32>, u32)>("vector_add") }
            .map(|_| ())
            .unwrap_err();
        assert!(
            matches!(e, CudaError::SignatureMismatch { parameter: 0, .. }),
            "{e:?}"
        );
        let text = e.to_string();
        assert!(
            text.contains("declared 16 bytes at offset 0, but the kernel has 8 bytes"),
            "{text}"
        );
        assert!(
            text.contains("`{ptr, len}`") && text.contains("`Ptr<T>`/`PtrMut<T>` and `Len<I>`"),
            "{text}"
        );
        // A slice kernel declared with pointers: 8 declared, 16 found.
        let slices = cur.load_ptx(SLICES, &JitOptions::default())?;
        // SAFETY: refused before any launch.
        let e = unsafe { slices.function::<(f32, Ptr<f32>, PtrMut<f32>)>("saxpy") }
            .map(|_| ())
            .unwrap_err();
        let text = e.to_string();
        assert!(
            text.contains("declare it `In<T>` (read) or `Out<T>` (written)"),
            "{text}"
        );
        // Any other mismatch has no hint.
        // SAFETY: refused before any launch.
        let e = unsafe { slices.function::<(u64, In<f32>, Out<f32>)>("saxpy") }
            .map(|_| ())
            .unwrap_err();
        assert!(
            matches!(e, CudaError::SignatureMismatch { hint: "", .. }),
            "{e:?}"
        );
        Ok(())
    });
}

#[test]
fn launch_dimensions_beyond_the_limits_are_typed_errors_naming_the_limit() {
    use oxicuda_driver::error::LaunchDimension as D;
    on_device0(|cur| {
        let module = cur.load_ptx(SLICES, &JitOptions::default())?;
        // SAFETY: kernels/slices.cu: saxpy reads x and updates y, each only below its
        // length.
        let saxpy = unsafe { module.function::<Saxpy>("saxpy")? };
        let x = cur.alloc_from(&[1.0f32; 64])?;
        let mut y = cur.alloc_zeros::<f32>(64)?;
        let mut stream = cur.create_stream(CUstream_flags::CU_STREAM_NON_BLOCKING)?;
        let every = "every CUDA device";
        type Dims = (u32, u32, u32);
        let refused: [(Dims, Dims, D, u64, u64); 7] = [
            ((1, 1, 1), (2048, 1, 1), D::BlockX, 2048, 1024),
            ((1, 1, 1), (64, 32, 1), D::BlockThreads, 2048, 1024),
            ((1, 1, 1), (1, 1, 65), D::BlockZ, 65, 64),
            ((1, 1, 1), (0, 1, 1), D::BlockX, 0, 1024),
            ((0, 1, 1), (32, 1, 1), D::GridX, 0, i32::MAX as u64),
            ((1, 70_000, 1), (32, 1, 1), D::GridY, 70_000, 65_535),
            ((1, 1, 1 << 20), (32, 1, 1), D::GridZ, 1 << 20, 65_535),
        ];
        for (grid, block, what, value, limit) in refused {
            let want = CudaError::LaunchLimit {
                what,
                value,
                limit,
                limit_of: every,
            };
            let got = saxpy.launch(&stream, grid, block, 0, (2.0f32, &x, &mut y));
            assert_eq!(got, Err(want.clone()), "{grid:?} {block:?}");
            // The same check for a captured launch and a graph's kernel node.
            let captured = stream.capture(CaptureMode::ThreadLocal, |c| {
                c.launch(&saxpy, grid, block, 0, (2.0f32, &x, &y))
            });
            assert_eq!(
                captured.map(|_| ()),
                Err(want.clone()),
                "captured {grid:?} {block:?}"
            );
            let mut graph = cur.create_graph()?;
            let node = graph.add_kernel(&[], &saxpy, grid, block, 0, (2.0f32, &x, &y));
            assert_eq!(node.map(|_| ()), Err(want), "node {grid:?} {block:?}");
        }
        let e = saxpy
            .launch(&stream, 1, (32, 33, 1), 0, (2.0f32, &x, &mut y))
            .unwrap_err();
        assert_eq!(
            e.to_string(),
            "launch threads per block is 1056, above the limit of 1024 (every CUDA device)"
        );
        let e = saxpy
            .launch(&stream, (1, 0), 32, 0, (2.0f32, &x, &mut y))
            .unwrap_err();
        assert_eq!(
            e.to_string(),
            "launch grid.y is 0: every grid and block dimension must be at least 1"
        );
        // Dynamic shared memory: beyond the device's opt-in maximum, and beyond what the
        // function has opted in to (48 KiB until it raises it).
        let optin = cur.device()?.attribute(
            oxicuda_driver::sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN,
        )? as u64;
        match saxpy.launch(&stream, 1, 32, 1 << 30, (2.0f32, &x, &mut y)) {
            Err(CudaError::LaunchLimit {
                what: D::SharedBytes,
                value,
                limit,
                limit_of,
            }) => {
                assert_eq!((value, limit), (1 << 30, optin));
                assert!(
                    limit_of.contains("MAX_SHARED_MEMORY_PER_BLOCK_OPTIN"),
                    "{limit_of}"
                );
            }
            other => panic!("{other:?}"),
        }
        if optin > 48 * 1024 {
            match saxpy.launch(&stream, 1, 32, 48 * 1024 + 16, (2.0f32, &x, &mut y)) {
                Err(CudaError::LaunchLimit {
                    what: D::SharedBytes,
                    limit,
                    limit_of,
                    ..
                }) => {
                    assert_eq!(limit, 48 * 1024);
                    assert!(
                        limit_of.contains("set_max_dynamic_shared_memory"),
                        "{limit_of}"
                    );
                }
                other => panic!("{other:?}"),
            }
        }
        // Within every limit, it runs.
        saxpy.launch(&stream, (2, 1, 1), (32, 1), 0, (2.0f32, &x, &mut y))?;
        stream.synchronize()?;
        assert_eq!(y.to_vec()?, [2.0f32; 64]);
        Ok(())
    });
}

#[test]
fn conveniences_grid_for_get_stream_copy_and_device_box() {
    use oxicuda_driver::error::LaunchDimension as D;
    use oxicuda_driver::launch::Dim3;
    // Grids from tuples, and for n elements.
    assert_eq!(Dim3::from((2, 3)), Dim3(2, 3, 1));
    assert_eq!(Dim3::from((2, 3, 4)), Dim3(2, 3, 4));
    assert_eq!(Dim3::grid_for(1000, 256), Ok(Dim3(4, 1, 1)));
    assert_eq!(Dim3::grid_for(1024, 256), Ok(Dim3(4, 1, 1)));
    assert_eq!(Dim3::grid_for(0, 256), Ok(Dim3(1, 1, 1)));
    assert!(matches!(
        Dim3::grid_for(10, 0),
        Err(CudaError::LaunchLimit {
            what: D::BlockX,
            value: 0,
            ..
        })
    ));
    assert!(matches!(
        Dim3::grid_for(10, 2048),
        Err(CudaError::LaunchLimit {
            what: D::BlockX,
            value: 2048,
            limit: 1024,
            ..
        })
    ));
    if usize::BITS == 64 {
        assert!(matches!(
            Dim3::grid_for(usize::MAX, 1),
            Err(CudaError::LaunchLimit {
                what: D::GridX,
                limit: 0x7fff_ffff,
                ..
            })
        ));
    }
    on_device0(|cur| {
        let module = cur.load_ptx(SLICES, &JitOptions::default())?;
        // SAFETY: kernels/slices.cu: saxpy reads x and updates y, each only below its
        // length.
        let saxpy = unsafe { module.function::<Saxpy>("saxpy")? };
        let n = 1000;
        let x = cur.alloc_from(&(0..n).map(|i| i as f32).collect::<Vec<_>>())?;
        let mut y = cur.alloc_zeros::<f32>(n)?;
        let stream = cur.create_stream(CUstream_flags::CU_STREAM_NON_BLOCKING)?;
        saxpy.launch(
            &stream,
            Dim3::grid_for(n, 128)?,
            128,
            0,
            (2.0f32, &x, &mut y),
        )?;
        stream.synchronize()?;
        // One value, without a scope.
        assert_eq!(y.get(999)?, 1998.0);
        assert_eq!(y.as_slice().get(3)?, 6.0);
        assert_eq!(
            y.get(1000),
            Err(CudaError::OutOfRange {
                start: 1000,
                end: 1001,
                len: 1000
            })
        );
        // A device-to-device copy queued on a stream, ordered after the launch before
        // it and before the read after it.
        let mut z = cur.alloc_zeros::<f32>(n)?;
        saxpy.launch(
            &stream,
            Dim3::grid_for(n, 128)?,
            128,
            0,
            (1.0f32, &x, &mut y),
        )?;
        stream.copy(&mut z, &y)?;
        let mut back = vec![0.0f32; n];
        stream.scope(|s| s.copy_to_host(&mut back, &z))??;
        assert_eq!(back[999], 2997.0);
        assert_eq!(
            stream.copy(&mut z.as_mut_slice().slice(..10)?, &y),
            Err(CudaError::LengthMismatch {
                destination_len: 10,
                source_len: 1000
            })
        );
        stream.copy(&mut z.as_mut_slice().slice(..0)?, &y.as_slice().slice(..0)?)?;
        // A single value on the device, read and written by a kernel through views of
        // one element.
        let mut one = cur.alloc_box(5.0f32)?;
        assert_eq!(one.get()?, 5.0);
        one.set(7.0)?;
        let three = cur.alloc_box(3.0f32)?;
        saxpy.launch(
            &stream,
            1,
            32,
            0,
            (2.0f32, three.as_slice(), one.as_mut_slice()),
        )?;
        stream.synchronize()?;
        assert_eq!(one.get()?, 13.0);
        assert!(format!("{one:?}").starts_with("DeviceBox<f32>(0x"));
        assert_eq!(one.into_buffer().to_vec()?, [13.0]);
        Ok(())
    });
}

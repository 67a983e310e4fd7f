//! The safe layer on `libsoftcuda.so`, loaded through `dlopen` exactly as the real
//! driver is: a launch, an event record and an asynchronous copy allocate nothing on
//! the heap (a counting global allocator sees every allocation of this process's Rust
//! code; softcuda, a separate shared library, has its own), and no driver object is
//! left alive afterwards. With `--features gpu-tests` the allocation counts are taken
//! on the driver the environment names (the system driver by default), and the live
//! counts, softcuda's own, are not asserted.

mod common;

use common::{ON_GPU, libsoftcuda};
use core::ffi::{c_char, c_int};
use oxicuda_driver::launch::{In, Len, Out, Ptr, PtrMut};
use oxicuda_driver::module::JitOptions;
use oxicuda_driver::stream::Timing;
use oxicuda_driver::sys::{CUctx_flags, CUmemhostalloc_flags, CUstream_flags};
use oxicuda_driver::{Context, CudaError, Driver, DriverOptions};
use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

/// Counts the allocations of the thread that switched counting on.
struct Counting;

thread_local! {
    static COUNTING: Cell<bool> = const { Cell::new(false) };
    static ALLOCATIONS: Cell<usize> = const { Cell::new(0) };
}

fn note() {
    if COUNTING.with(Cell::get) {
        ALLOCATIONS.with(|n| n.set(n.get() + 1));
    }
}

// SAFETY: forwards to the system allocator; counting touches only const-initialised
// thread-locals, which never allocate.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        note();
        // SAFETY: the caller's layout, forwarded.
        unsafe { System.alloc(layout) }
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        note();
        // SAFETY: as above.
        unsafe { System.alloc_zeroed(layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        note();
        // SAFETY: as above.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: as above.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// The allocations `f` makes on this thread.
fn allocations<R>(f: impl FnOnce() -> R) -> (usize, R) {
    ALLOCATIONS.with(|n| n.set(0));
    COUNTING.with(|c| c.set(true));
    let r = f();
    COUNTING.with(|c| c.set(false));
    (ALLOCATIONS.with(Cell::get), r)
}

static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// `libsoftcuda.so` as the process-wide driver, and its `softcuda_live_count` (in the
/// GPU suite: the driver the environment names, and no count: `None`).
fn driver() -> (&'static Driver, impl Fn(&str) -> Option<c_int>) {
    let path = libsoftcuda();
    let d = if ON_GPU {
        oxicuda_driver::driver_with(DriverOptions::from_env().unwrap()).unwrap()
    } else {
        // SAFETY: libsoftcuda.so implements the driver ABI.
        let d = oxicuda_driver::driver_with(unsafe { DriverOptions::new().path(&path) }).unwrap();
        assert_eq!(d.path(), path.to_str(), "the driver came through dlopen");
        d
    };
    d.init().unwrap();
    // SAFETY: the same library, already loaded: dlopen only counts a reference.
    let lib = (!ON_GPU).then(|| unsafe { libloading::Library::new(&path) }.unwrap());
    let live = move |kind: &str| {
        let name = std::ffi::CString::new(kind).unwrap();
        // SAFETY: softcuda's C export, with a NUL-terminated kind.
        lib.as_ref().map(|lib| unsafe {
            let f = lib
                .get::<unsafe extern "C" fn(*const c_char) -> c_int>(b"softcuda_live_count\0")
                .unwrap();
            f(name.as_ptr())
        })
    };
    (d, live)
}

const KINDS: [&str; 7] = [
    "contexts",
    "streams",
    "events",
    "modules",
    "allocations",
    "host_allocations",
    "registrations",
];

#[test]
fn a_launch_an_event_record_and_an_async_copy_allocate_nothing() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let (d, live) = driver();
    let ctx = Context::new(&d.device(0).unwrap(), CUctx_flags::empty()).unwrap();
    ctx.bind(|cur| -> Result<(), CudaError> {
        let module = cur.load_ptx(
            include_str!("../kernels/slices.ptx"),
            &JitOptions::default(),
        )?;
        // SAFETY: kernels/slices.cu: vector_add reads a and b and writes c, each only
        // below its length.
        let add = unsafe { module.function::<(In<f32>, In<f32>, Out<f32>)>("vector_add")? };
        let n = 4096u32;
        let a = cur.alloc_from(&vec![1.0f32; n as usize])?;
        let b = cur.alloc_from(&vec![2.0f32; n as usize])?;
        let mut c = cur.alloc::<f32>(n as usize)?;
        let stream = cur.create_stream(CUstream_flags::CU_STREAM_NON_BLOCKING)?;
        let (start, end) = (cur.create_event::<Timing>()?, cur.create_event::<Timing>()?);
        let mut host = cur.alloc_host::<f32>(n as usize, CUmemhostalloc_flags::empty())?;

        let (launch, r) = allocations(|| add.launch(&stream, n / 256, 256, 0, (&a, &b, &mut c)));
        r?;
        let (split, r) = allocations(|| -> Result<(), CudaError> {
            let (lo, hi) = c.as_mut_slice().split_at(n as usize / 2)?;
            let (a_lo, a_hi) = a.as_slice().split_at(n as usize / 2)?;
            add.launch(&stream, 8, 256, 0, (a_lo, &b.as_slice().slice(..2048)?, lo))?;
            add.launch(&stream, 8, 256, 0, (a_hi, &b.as_slice().slice(2048..)?, hi))
        });
        r?;
        let (record, r) = allocations(|| -> Result<(), CudaError> {
            start.record(&stream)?;
            end.record(&stream)
        });
        r?;
        let (copy, r) = allocations(|| stream.scope(|s| s.copy_to_host(&mut host[..], &c)));
        r??;
        let (fill, r) = allocations(|| stream.fill(&mut c, 0.5f32));
        r?;
        // A raw-pointer kernel whose `Len` the launch checks against each view.
        let ptr_module = cur.load_ptx(
            include_str!("../kernels/vector_add.ptx"),
            &JitOptions::default(),
        )?;
        // SAFETY: kernels/vector_add.cu touches a, b and c only below n.
        let ptr_add = unsafe {
            ptr_module.function::<(Ptr<f32>, Ptr<f32>, PtrMut<f32>, Len<u32>)>("vector_add")?
        };
        let mut d = cur.alloc::<f32>(n as usize)?;
        let (checked, r) = allocations(|| ptr_add.launch(&stream, n / 256, 256, 0, (&a, &b, &mut d, n)));
        r?;
        stream.synchronize()?;
        assert_eq!(
            (launch, split, record, copy, fill, checked),
            (0, 0, 0, 0, 0, 0),
            "allocations: launch, split launch, event record, scoped async copy, async fill, pointer launch with Len"
        );
        assert!(host.iter().all(|v| *v == 3.0));
        assert!(d.to_vec()?.iter().all(|v| *v == 3.0));
        assert!(end.elapsed_since(&start)? >= 0.0);
        // The counter does count: a Vec allocates.
        assert_eq!(allocations(|| c.to_vec().map(|v| v.len())).0, 1);
        Ok(())
    })
    .unwrap()
    .unwrap();
    drop(ctx);
    for kind in KINDS {
        assert_eq!(live(kind), (!ON_GPU).then_some(0), "live {kind}");
    }
}

#[test]
fn the_safe_layer_leaves_no_live_object_behind() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let (d, live) = driver();
    let ctx = Context::new(&d.device(0).unwrap(), CUctx_flags::empty()).unwrap();
    ctx.bind(|cur| -> Result<(), CudaError> {
        let _m = cur.load_ptx(include_str!("../kernels/saxpy.ptx"), &JitOptions::default())?;
        let _s = cur.create_stream(CUstream_flags::CU_STREAM_NON_BLOCKING)?;
        let _e = cur.create_event::<Timing>()?;
        let _b = cur.alloc::<u8>(64)?;
        let _h = cur.alloc_host::<u8>(64, CUmemhostalloc_flags::empty())?;
        let mut v = vec![0u8; 4096];
        let _r = cur.register_host(&mut v, Default::default())?;
        for kind in KINDS {
            assert_eq!(
                live(kind),
                (!ON_GPU).then_some(1),
                "live {kind} while in use"
            );
        }
        Ok(())
    })
    .unwrap()
    .unwrap();
    drop(ctx);
    for kind in KINDS {
        assert_eq!(live(kind), (!ON_GPU).then_some(0), "live {kind}");
    }
}

//! A hostile review's attacks on the raw-pointer kinds `Ptr`, `PtrMut` and `Len<I>`
//! (issue 22), kept as regression tests. Every test asserts the sound behaviour: the
//! ones named `found_*` failed when the review ran (a thread count that overflowed
//! into a panic, a lookup that took float parameters for a pointer and a length) and
//! pass since the fix; the ones named `held_*` are attacks that held.

mod common;

use common::on_device0;
use oxicuda_driver::CudaError;
use oxicuda_driver::launch::{Len, Ptr, PtrMut};
use oxicuda_driver::launch_config::LaunchConfig;
use oxicuda_driver::module::JitOptions;
use oxicuda_driver::sys::CUstream_flags;
use std::panic::{AssertUnwindSafe, catch_unwind};

const VECTOR_ADD: &str = include_str!("../kernels/vector_add.ptx");
const SAXPY: &str = include_str!("../kernels/saxpy.ptx");

type VectorAdd = (Ptr<f32>, Ptr<f32>, PtrMut<f32>, Len<u32>);
type Saxpy = (f32, Ptr<f32>, PtrMut<f32>, Len<i32>);

/// Five u32::MAX factors: (2^32-1)^5 > 2^128, so `launch::threads` (a u128 fold of
/// the six dimensions) overflows. In a debug build that is a panic before the driver
/// is called; in release it wraps. The count saturates now.
const HUGE_GRID: (u32, u32, u32) = (u32::MAX, u32::MAX, u32::MAX);
const HUGE_BLOCK: (u32, u32, u32) = (u32::MAX, u32::MAX, 1);

#[test]
fn found_a_thread_count_past_u128_is_too_many_threads_not_a_panic() {
    on_device0(|cur| -> Result<(), CudaError> {
        let m = cur.load_ptx(SAXPY, &JitOptions::default())?;
        // SAFETY: kernels/saxpy.cu touches x and y only below n (int index, Len<i32>).
        let k = unsafe { m.function::<Saxpy>("saxpy")? };
        let s = cur.create_stream(CUstream_flags::CU_STREAM_NON_BLOCKING)?;
        let x = cur.alloc_from(&[1f32; 8])?;
        let mut y = cur.alloc_from(&[0f32; 8])?;
        let r = catch_unwind(AssertUnwindSafe(|| {
            k.launch(&s, HUGE_GRID, HUGE_BLOCK, 0, (1.0f32, &x, &mut y, 0))
        }));
        assert!(
            r.is_ok(),
            "Function::launch panicked (u128 overflow in launch::threads)"
        );
        assert!(
            r.unwrap().is_err(),
            "a grid the driver refuses was accepted"
        );
        Ok(())
    });
}

#[test]
fn found_the_same_through_launch_with_graphs_and_captures() {
    on_device0(|cur| -> Result<(), CudaError> {
        let m = cur.load_ptx(SAXPY, &JitOptions::default())?;
        // SAFETY: as above.
        let k = unsafe { m.function::<Saxpy>("saxpy")? };
        let s = cur.create_stream(CUstream_flags::CU_STREAM_NON_BLOCKING)?;
        let x = cur.alloc_from(&[1f32; 8])?;
        let mut y = cur.alloc_from(&[0f32; 8])?;
        let cfg = LaunchConfig::new(HUGE_GRID, HUGE_BLOCK);
        let with = catch_unwind(AssertUnwindSafe(|| {
            k.launch_with(&s, &cfg, (1.0f32, &x, &mut y, 0))
        }));
        let mut g = cur.create_graph()?;
        let node = catch_unwind(AssertUnwindSafe(|| {
            g.add_kernel(&[], &k, HUGE_GRID, HUGE_BLOCK, 0, (1.0f32, &x, &y, 0))
                .map(|_| ())
        }));
        drop(g);
        let mut cs = cur.create_stream(CUstream_flags::CU_STREAM_NON_BLOCKING)?;
        let captured = catch_unwind(AssertUnwindSafe(|| {
            cs.capture(oxicuda_driver::graph::CaptureMode::Global, |cap| {
                cap.launch(&k, HUGE_GRID, HUGE_BLOCK, 0, (1.0f32, &x, &y, 0))
            })
            .map(|_| ())
        }));
        let panicked: Vec<&str> = [
            ("launch_with", with.is_err()),
            ("add_kernel", node.is_err()),
            ("capture launch", captured.is_err()),
        ]
        .into_iter()
        .filter(|p| p.1)
        .map(|p| p.0)
        .collect();
        assert!(panicked.is_empty(), "panicked: {panicked:?}");
        Ok(())
    });
}

/// The README says the lookup checks `Ptr`/`PtrMut` are `.u64` and `Len<I>` has the
/// width of `I`; the check compares sizes and offsets only, so a `.f64` parameter is
/// accepted for a `Ptr` and a `.f32` one for a `Len<i32>`.
#[test]
fn found_the_lookup_refuses_float_parameters_for_a_pointer_and_a_length() {
    const PTX: &str = "
.version 8.0
.target sm_80
.address_size 64
.visible .entry k(.param .f64 k_param_0, .param .f32 k_param_1)
{
    ret;
}
";
    on_device0(|cur| -> Result<(), CudaError> {
        let m = cur.load_ptx(PTX, &JitOptions::default())?;
        // SAFETY: should be refused at lookup (a double is no pointer, a float no int).
        let r = unsafe { m.function::<(Ptr<f32>, Len<i32>)>("k") };
        assert!(
            matches!(r.map(|_| ()), Err(CudaError::SignatureMismatch { .. })),
            "a .f64 parameter was accepted as Ptr<f32> and a .f32 one as Len<i32>"
        );
        Ok(())
    });
}

#[test]
fn held_views_cannot_bypass_the_len_check() {
    on_device0(|cur| -> Result<(), CudaError> {
        let m = cur.load_ptx(VECTOR_ADD, &JitOptions::default())?;
        // SAFETY: kernels/vector_add.cu touches a, b and c only below n.
        let k = unsafe { m.function::<VectorAdd>("vector_add")? };
        let s = cur.create_stream(CUstream_flags::CU_STREAM_NON_BLOCKING)?;
        let a = cur.alloc_from(&[1f32; 64])?;
        let mut out = cur.alloc_from(&[0f32; 64])?;
        let short = |parameter, len| {
            Err(CudaError::ViewTooShort {
                parameter,
                len,
                value: 64,
            })
        };
        // split_at of an exclusive view: the head is 10 long.
        {
            let (head, _tail) = out.as_mut_slice().split_at(10)?;
            assert_eq!(k.launch(&s, 1, 64, 0, (&a, &a, head, 64)), short(2, 10));
        }
        // split_at of a shared view, slice, as_slice of a slice, reborrow.
        let (lo, hi) = a.as_slice().split_at(1)?;
        assert_eq!(k.launch(&s, 1, 64, 0, (lo, &a, &mut out, 64)), short(0, 1));
        assert_eq!(
            k.launch(&s, 1, 64, 0, (&a, hi.as_slice(), &mut out, 64)),
            short(1, 63)
        );
        {
            let mut v = out.as_mut_slice().slice(5..)?;
            assert_eq!(
                k.launch(&s, 1, 64, 0, (&a, &a, v.reborrow(), 64)),
                short(2, 59)
            );
            assert_eq!(k.launch(&s, 1, 64, 0, (&a, &a, &mut v, 64)), short(2, 59));
        }
        // Empty views and a zero-length buffer.
        // An empty buffer (no driver allocation) is a view of 0 elements too.
        let empty = cur.alloc::<f32>(0)?;
        assert_eq!(
            k.launch(&s, 1, 64, 0, (&a, &empty, &mut out, 64)),
            short(1, 0)
        );
        assert_eq!(
            k.launch(&s, 1, 64, 0, (a.as_slice().slice(64..)?, &a, &mut out, 64)),
            short(0, 0)
        );
        // u32::MAX as the length, and a length one past the view.
        assert!(matches!(
            k.launch(&s, 1, 64, 0, (&a, &a, &mut out, u32::MAX)),
            Err(CudaError::ViewTooShort { parameter: 0, .. })
        ));
        assert_eq!(
            k.launch(&s, 1, 64, 0, (&a, &a, &mut out, 65)),
            Err(CudaError::ViewTooShort {
                parameter: 0,
                len: 64,
                value: 65
            })
        );
        // launch_with and launch_cooperative check too.
        let cfg = LaunchConfig::new(1, 64);
        assert!(matches!(
            k.launch_with(&s, &cfg, (lo, &a, &mut out, 64)),
            Err(CudaError::ViewTooShort { parameter: 0, .. })
        ));
        assert!(matches!(
            k.launch_cooperative(&s, 1, 64, 0, (&a, &a, out.as_mut_slice().slice(..3)?, 64)),
            Err(CudaError::ViewTooShort { parameter: 2, .. })
        ));
        s.synchronize()?;
        assert!(out.to_vec()?.iter().all(|v| *v == 0.0), "nothing ran");
        Ok(())
    });
}

#[test]
fn held_len_thread_bounds_and_signs() {
    on_device0(|cur| -> Result<(), CudaError> {
        let m = cur.load_ptx(SAXPY, &JitOptions::default())?;
        // SAFETY: as above.
        let k = unsafe { m.function::<Saxpy>("saxpy")? };
        let s = cur.create_stream(CUstream_flags::CU_STREAM_NON_BLOCKING)?;
        let x = cur.alloc_from(&[1f32; 8])?;
        let mut y = cur.alloc_from(&[0f32; 8])?;
        // 2^31 threads spread over y and z too.
        assert!(matches!(
            k.launch(
                &s,
                (1u32 << 10, 1u32 << 10, 2),
                (1024, 1, 1),
                0,
                (1.0, &x, &mut y, 1)
            ),
            Err(CudaError::TooManyThreadsForLen { parameter: 3, .. })
        ));
        assert!(matches!(
            k.launch(&s, 1, 8, 0, (1.0, &x, &mut y, i32::MIN)),
            Err(CudaError::NegativeLength {
                parameter: 3,
                value: -2147483648
            })
        ));
        // A graph node too.
        let mut g = cur.create_graph()?;
        assert!(matches!(
            g.add_kernel(&[], &k, (1u32 << 21, 1, 1), 1024, 0, (1.0, &x, &y, 1)),
            Err(CudaError::TooManyThreadsForLen { .. })
        ));
        Ok(())
    });
}

#[test]
fn held_graph_args_update_memory_and_streams() {
    on_device0(|cur| -> Result<(), CudaError> {
        let m = cur.load_ptx(VECTOR_ADD, &JitOptions::default())?;
        // SAFETY: kernels/vector_add.cu touches a, b and c only below n.
        let k = unsafe { m.function::<VectorAdd>("vector_add")? };
        let s = cur.create_stream(CUstream_flags::CU_STREAM_NON_BLOCKING)?;
        let other = cur.create_stream(CUstream_flags::CU_STREAM_NON_BLOCKING)?;
        let a = cur.alloc_from(&[1f32; 64])?;
        let short = cur.alloc_from(&[1f32; 8])?;
        let c = cur.alloc_from(&[0f32; 64])?;
        let d = cur.alloc_from(&[0f32; 64])?;
        let pooled = s.alloc_async::<f32>(64)?;
        let mut g = cur.create_graph()?;
        let (alloc, mem) = g.add_alloc::<f32>(&[], 64)?;
        let user = g.add_kernel(&[alloc], &k, 1, 64, 0, (&a, &a, mem, 64))?;
        let independent = g.add_kernel(&[alloc], &k, 1, 64, 0, (&a, &a, &c, 64))?;
        let rootless = g.add_kernel(&[], &k, 1, 64, 0, (&a, &a, &d, 64))?;
        // GraphMemory before its allocation, as Ptr.
        assert!(matches!(
            g.add_kernel(&[], &k, 1, 64, 0, (mem, &a, &c, 64)),
            Err(CudaError::GraphMemory { .. })
        ));
        let free = g.add_free(&[user.node()], mem)?;
        // After its free, as Ptr and PtrMut.
        assert!(matches!(
            g.add_kernel(&[free], &k, 1, 64, 0, (mem, &a, &c, 64)),
            Err(CudaError::GraphMemory { .. })
        ));
        assert!(matches!(
            g.add_kernel(&[user.node()], &k, 1, 64, 0, (&a, &a, mem, 64)),
            Err(CudaError::GraphMemory { .. })
        ));
        let mut exec = g.instantiate()?;
        // set_kernel_args: a short view, a longer Len than the graph memory, memory
        // whose free does not wait for the node, memory not allocated before it.
        assert!(matches!(
            exec.set_kernel_args(&independent, (&a, &short, &c, 64)),
            Err(CudaError::ViewTooShort { parameter: 1, .. })
        ));
        assert!(matches!(
            exec.set_kernel_args(&user, (&a, &a, mem, 65)),
            Err(CudaError::ViewTooShort { parameter: 0, .. })
        ));
        assert!(matches!(
            exec.set_kernel_args(&independent, (&a, &a, mem, 64)),
            Err(CudaError::GraphMemory { .. })
        ));
        assert!(matches!(
            exec.set_kernel_args(&rootless, (mem, &a, &d, 64)),
            Err(CudaError::GraphMemory { .. })
        ));
        // Pool memory of a stream, in a graph and on another stream.
        assert!(matches!(
            exec.set_kernel_args(&independent, (&pooled, &a, &c, 64)),
            Err(CudaError::WrongStream { .. })
        ));
        let mut out = cur.alloc_from(&[0f32; 64])?;
        assert!(matches!(
            k.launch(&other, 1, 64, 0, (&a, &pooled, &mut out, 64)),
            Err(CudaError::WrongStream { argument: Some(1) })
        ));
        k.launch(&s, 1, 64, 0, (&a, &pooled, &mut out, 0))?;
        s.synchronize()?;
        // The graph still runs with the accepted arguments.
        exec.set_kernel_args(&independent, (&a, &a, &c, 64))?;
        s.scope(|sc| sc.launch_graph(&exec))??;
        drop(exec);
        assert!(c.to_vec()?.iter().all(|v| *v == 2.0));
        // Graph memory in a capture.
        let mut g2 = cur.create_graph()?;
        let (_, mem2) = g2.add_alloc::<f32>(&[], 64)?;
        let mut cs = cur.create_stream(CUstream_flags::CU_STREAM_NON_BLOCKING)?;
        let r = cs.capture(oxicuda_driver::graph::CaptureMode::Global, |cap| {
            cap.launch(&k, 1, 64, 0, (mem2, &a, &c, 64))
        });
        assert!(matches!(r.map(|_| ()), Err(CudaError::GraphMemory { .. })));
        Ok(())
    });
}

#[test]
fn held_a_panic_inside_a_capture_ends_it() {
    on_device0(|cur| -> Result<(), CudaError> {
        let m = cur.load_ptx(VECTOR_ADD, &JitOptions::default())?;
        // SAFETY: kernels/vector_add.cu touches a, b and c only below n.
        let k = unsafe { m.function::<VectorAdd>("vector_add")? };
        let a = cur.alloc_from(&[1f32; 64])?;
        let mut cs = cur.create_stream(CUstream_flags::CU_STREAM_NON_BLOCKING)?;
        {
            let c = cur.alloc_from(&[0f32; 64])?;
            let r = catch_unwind(AssertUnwindSafe(|| {
                cs.capture(oxicuda_driver::graph::CaptureMode::Global, |cap| {
                    cap.launch(&k, 1, 64, 0, (&a, &a, &c, 64))?;
                    panic!("inside the capture");
                })
                .map(|_| ())
            }));
            assert!(r.is_err());
            drop(c);
        }
        // The stream is no longer capturing: a launch runs.
        let mut c = cur.alloc_from(&[0f32; 64])?;
        k.launch(&cs, 1, 64, 0, (&a, &a, &mut c, 64))?;
        cs.synchronize()?;
        assert!(c.to_vec()?.iter().all(|v| *v == 2.0));
        Ok(())
    });
}

mod held_argument_kinds {
    use oxicuda_driver::graph::GraphMemory;
    use oxicuda_driver::launch::{Arg, GraphArg, Len, Ptr, PtrMut};
    use oxicuda_driver::memory::{DeviceBuffer, DeviceSlice, DeviceSliceMut};
    use oxicuda_driver::pool::StreamBuffer;

    type B = DeviceBuffer<'static, f32>;
    // A plain launch never writes through a shared borrow.
    static_assertions::assert_not_impl_any!(&'static B: Arg<PtrMut<f32>>);
    static_assertions::assert_not_impl_any!(DeviceSlice<'static, f32>: Arg<PtrMut<f32>>);
    static_assertions::assert_not_impl_any!(&'static DeviceSliceMut<'static, f32>: Arg<PtrMut<f32>>);
    static_assertions::assert_not_impl_any!(&'static mut DeviceSlice<'static, f32>: Arg<PtrMut<f32>>);
    // Element types and widths.
    static_assertions::assert_not_impl_any!(&'static B: Arg<Ptr<u32>>, Arg<Ptr<u8>>, GraphArg<Ptr<u8>>);
    static_assertions::assert_not_impl_any!(&'static DeviceBuffer<'static, u8>: Arg<Ptr<f32>>);
    static_assertions::assert_not_impl_any!(i64: Arg<Len<i32>>, Arg<Len<u64>>);
    static_assertions::assert_not_impl_any!(u32: Arg<Len<i32>>, Arg<Len<u64>>);
    static_assertions::assert_not_impl_any!(&'static i32: Arg<Len<i32>>);
    static_assertions::assert_not_impl_any!(usize: Arg<Len<u64>>);
    // A length is no pointer, a pointer no length; host memory is neither.
    static_assertions::assert_not_impl_any!(u64: Arg<Ptr<f32>>, GraphArg<PtrMut<f32>>);
    static_assertions::assert_not_impl_any!(&'static [f32]: Arg<Ptr<f32>>);
    static_assertions::assert_not_impl_any!(&'static mut Vec<f32>: Arg<PtrMut<f32>>);
    static_assertions::assert_not_impl_any!(&'static B: Arg<Len<u64>>);
    // Graph memory only for graph nodes.
    static_assertions::assert_not_impl_any!(GraphMemory<f32>: Arg<Ptr<f32>>, Arg<PtrMut<f32>>, GraphArg<Ptr<u32>>);
    // Stream-ordered memory takes the same kinds (its stream checked at the launch).
    static_assertions::assert_impl_all!(&'static StreamBuffer<'static, f32>: Arg<Ptr<f32>>);
}

mod held_the_fold {
    use oxicuda_driver::launch::{Bounded, In, Len, Out, Ptr, PtrMut};
    static_assertions::assert_not_impl_any!((Ptr<f32>,): Bounded);
    static_assertions::assert_not_impl_any!((PtrMut<f32>, In<f32>, u32): Bounded);
    static_assertions::assert_not_impl_any!((Ptr<f32>, Len<i32>, Len<i32>): Bounded);
    static_assertions::assert_not_impl_any!((Len<u64>, Len<u64>): Bounded);
    static_assertions::assert_not_impl_any!((Len<u32>, Ptr<f32>, Len<u32>, PtrMut<f32>): Bounded);
    static_assertions::assert_not_impl_any!(
        (u8, u8, u8, u8, u8, u8, u8, u8, u8, u8, u8, u8, u8, u8, u8, Ptr<f32>): Bounded
    );
    static_assertions::assert_impl_all!((Len<i32>,): Bounded);
    static_assertions::assert_impl_all!((Len<i32>, PtrMut<f32>, Ptr<u8>): Bounded);
    static_assertions::assert_impl_all!((In<f32>, Out<f32>, u32): Bounded);
    static_assertions::assert_impl_all!(
        (Ptr<f32>, u8, u8, u8, u8, u8, u8, u8, u8, u8, u8, u8, u8, u8, PtrMut<f32>, Len<u64>): Bounded
    );
}

#[test]
fn held_managed_buffers_and_graph_update() {
    use oxicuda_driver::managed::Attach;
    on_device0(|cur| -> Result<(), CudaError> {
        let m = cur.load_ptx(VECTOR_ADD, &JitOptions::default())?;
        // SAFETY: kernels/vector_add.cu touches a, b and c only below n.
        let k = unsafe { m.function::<VectorAdd>("vector_add")? };
        let s = cur.create_stream(CUstream_flags::CU_STREAM_NON_BLOCKING)?;
        let mut x = cur.alloc_managed::<f32>(64, Attach::Global)?;
        x.host()?.fill(1.0);
        let mut y = cur.alloc_managed::<f32>(32, Attach::Global)?;
        assert_eq!(
            k.launch(&s, 1, 64, 0, (&x, &x, &mut y, 64)),
            Err(CudaError::ViewTooShort {
                parameter: 2,
                len: 32,
                value: 64
            })
        );
        k.launch(&s, 1, 64, 0, (&x, &x, &mut y, 32))?;
        assert!(y.host()?.iter().all(|v| *v == 2.0));
        // update: a new graph of the same shape with a larger grid, then new
        // arguments through the old node (its own grid) — checked against the views.
        let a = cur.alloc_from(&[1f32; 128])?;
        let c = cur.alloc_from(&[0f32; 128])?;
        let short = cur.alloc_from(&[0f32; 16])?;
        let mut g1 = cur.create_graph()?;
        let node = g1.add_kernel(&[], &k, 1, 64, 0, (&a, &a, &c, 64))?;
        let mut exec = g1.instantiate()?;
        let mut g2 = cur.create_graph()?;
        g2.add_kernel(&[], &k, 2, 64, 0, (&a, &a, &c, 128))?;
        exec.update(g2)?;
        assert!(matches!(
            exec.set_kernel_args(&node, (&a, &a, &short, 64)),
            Err(CudaError::ViewTooShort { parameter: 2, .. })
        ));
        s.scope(|sc| sc.launch_graph(&exec))??;
        drop(exec);
        assert!(c.to_vec()?.iter().all(|v| *v == 2.0));
        Ok(())
    });
}

//! Ordered host access (issue 29, item 1): a synchronous host access to device
//! memory — `to_vec`, `copy_to_host`, `get`, `copy_from_host`, `fill`, `zero`,
//! `copy_from` — waits for the work queued before it that uses that memory, on
//! whichever stream it was queued. Each kernel here is delayed by a host function
//! queued before it on a `CU_STREAM_NON_BLOCKING` stream (which the default stream's
//! synchronous copies do not wait for), so an unordered access would certainly see
//! the memory as it was before the kernel.

mod common;

use common::on_device0;
use oxicuda_driver::launch::{In, Out};
use oxicuda_driver::managed::Attach;
use oxicuda_driver::module::JitOptions;
use oxicuda_driver::stream::Stream;
use oxicuda_driver::sys::CUstream_flags;
use std::time::Duration;

/// `y[i] = a * x[i] + y[i]`, each buffer with its length.
const SLICES: &str = include_str!("../kernels/slices.ptx");
type Saxpy = (f32, In<f32>, Out<f32>);

const N: usize = 4096;
const DELAY: Duration = Duration::from_millis(300);

/// Every element of `v` is `want`; else how many are not (the vector is too long
/// to print).
fn assert_all<T: PartialEq + Copy + std::fmt::Debug>(v: &[T], want: T, what: &str) {
    let stale = v.iter().filter(|x| **x != want).count();
    assert_eq!(
        stale,
        0,
        "{what}: {stale} of {} elements are not {want:?}",
        v.len()
    );
}

/// Holds `stream` back for [`DELAY`] before the work queued after this.
fn delay(stream: &Stream<'_>) {
    stream.launch_host_fn(|| std::thread::sleep(DELAY)).unwrap();
}

#[test]
fn to_vec_right_after_a_launch_on_a_non_blocking_stream_reads_what_the_kernel_wrote() {
    on_device0(|cur| {
        let module = cur.load_ptx(SLICES, &JitOptions::default())?;
        // SAFETY: kernels/slices.cu: saxpy reads x and updates y, each below its length.
        let saxpy = unsafe { module.function::<Saxpy>("saxpy")? };
        let stream = cur.create_stream(CUstream_flags::CU_STREAM_NON_BLOCKING)?;
        let x = cur.alloc_from(&vec![1.0f32; N])?;
        let mut y = cur.alloc_zeros::<f32>(N)?;
        delay(&stream);
        saxpy.launch(&stream, 16, 256, 0, (2.0f32, &x, &mut y))?;
        assert_all(&y.to_vec()?, 2.0f32, "to_vec after the launch");

        // Through a view, one element, and a second launch reading what the first
        // wrote: each access waits.
        delay(&stream);
        saxpy.launch(&stream, 16, 256, 0, (1.0f32, &x, y.as_mut_slice()))?;
        assert_eq!(y.get(N - 1)?, 3.0, "get after the launch through a view");
        delay(&stream);
        saxpy.launch(&stream, 16, 256, 0, (1.0f32, x.as_slice(), &mut y))?;
        let mut host = vec![0.0f32; N];
        y.as_slice().copy_to_host(&mut host)?;
        assert_all(&host, 4.0f32, "copy_to_host of a view");
        Ok(())
    });
}

#[test]
fn a_host_write_waits_for_a_kernel_still_reading_the_memory() {
    on_device0(|cur| {
        let module = cur.load_ptx(SLICES, &JitOptions::default())?;
        // SAFETY: as above.
        let saxpy = unsafe { module.function::<Saxpy>("saxpy")? };
        let stream = cur.create_stream(CUstream_flags::CU_STREAM_NON_BLOCKING)?;
        let mut x = cur.alloc_from(&vec![1.0f32; N])?;
        let mut y = cur.alloc_zeros::<f32>(N)?;
        delay(&stream);
        saxpy.launch(&stream, 16, 256, 0, (2.0f32, &x, &mut y))?;
        // The kernel reads x: overwriting it must wait until the kernel has run.
        x.copy_from_host(&vec![100.0f32; N])?;
        stream.synchronize()?;
        assert_all(&y.to_vec()?, 2.0f32, "the kernel read the old x");

        // A memset and a device-to-device copy wait likewise.
        delay(&stream);
        saxpy.launch(&stream, 16, 256, 0, (1.0f32, &x, &mut y))?;
        x.fill(0.0)?;
        stream.synchronize()?;
        assert_eq!(y.get(0)?, 102.0, "the kernel read x before the fill");
        delay(&stream);
        saxpy.launch(&stream, 16, 256, 0, (1.0f32, &x, &mut y))?;
        let zeros = cur.alloc_zeros::<f32>(N)?;
        y.copy_from(&zeros)?; // y's writer first, then the copy
        assert_all(&y.to_vec()?, 0.0f32, "the copy came after the kernel");
        Ok(())
    });
}

#[test]
fn dropping_a_stream_waits_for_the_work_that_marked_memory() {
    on_device0(|cur| {
        let module = cur.load_ptx(SLICES, &JitOptions::default())?;
        // SAFETY: as above.
        let saxpy = unsafe { module.function::<Saxpy>("saxpy")? };
        let x = cur.alloc_from(&vec![1.0f32; N])?;
        let mut y = cur.alloc_zeros::<f32>(N)?;
        {
            let stream = cur.create_stream(CUstream_flags::CU_STREAM_NON_BLOCKING)?;
            delay(&stream);
            saxpy.launch(&stream, 16, 256, 0, (2.0f32, &x, &mut y))?;
        } // dropped: it waits, so y's mark names finished work
        // A new stream may reuse the handle: the mark then waits for it (harmless).
        let _other = cur.create_stream(CUstream_flags::CU_STREAM_NON_BLOCKING)?;
        assert_all(&y.to_vec()?, 2.0f32, "after the stream was dropped");
        Ok(())
    });
}

#[test]
fn stream_copies_memsets_and_scoped_copies_mark_what_they_use() {
    on_device0(|cur| {
        let stream = cur.create_stream(CUstream_flags::CU_STREAM_NON_BLOCKING)?;
        let src = cur.alloc_from(&vec![7u32; N])?;
        let mut dst = cur.alloc_zeros::<u32>(N)?;
        delay(&stream);
        stream.copy(&mut dst, &src)?;
        assert_all(&dst.to_vec()?, 7u32, "after Stream::copy");
        delay(&stream);
        stream.fill(&mut dst, 9u32)?;
        assert_all(&dst.as_slice().to_vec()?, 9u32, "after Stream::fill");

        let input = vec![5u32; N];
        stream.scope(|s| {
            delay(&stream);
            s.copy_to_device(&mut dst, &input)?;
            // Inside the scope, before its wait: the host read waits for the copy.
            assert_eq!(dst.get(0)?, 5, "after a scoped copy");
            Ok::<_, oxicuda_driver::CudaError>(())
        })??;
        Ok(())
    });
}

#[test]
fn managed_memory_read_through_a_view_waits_too() {
    on_device0(|cur| {
        let module = cur.load_ptx(SLICES, &JitOptions::default())?;
        // SAFETY: as above.
        let saxpy = unsafe { module.function::<Saxpy>("saxpy")? };
        let stream = cur.create_stream(CUstream_flags::CU_STREAM_NON_BLOCKING)?;
        let x = cur.alloc_from(&vec![1.0f32; N])?;
        let mut y = cur.alloc_managed::<f32>(N, Attach::Global)?;
        delay(&stream);
        saxpy.launch(&stream, 16, 256, 0, (3.0f32, &x, &mut y))?;
        assert_all(&y.as_slice().to_vec()?, 3.0f32, "a managed view");
        Ok(())
    });
}

#[test]
fn memory_used_on_two_streams_waits_for_both() {
    on_device0(|cur| {
        let module = cur.load_ptx(SLICES, &JitOptions::default())?;
        // SAFETY: as above.
        let saxpy = unsafe { module.function::<Saxpy>("saxpy")? };
        let a = cur.create_stream(CUstream_flags::CU_STREAM_NON_BLOCKING)?;
        let b = cur.create_stream(CUstream_flags::CU_STREAM_NON_BLOCKING)?;
        let x = cur.alloc_from(&vec![1.0f32; N])?;
        let mut y = cur.alloc_zeros::<f32>(N)?;
        {
            // Two halves of one buffer, written on two streams.
            let (xl, xr) = x.as_slice().split_at(N / 2)?;
            let (yl, yr) = y.as_mut_slice().split_at(N / 2)?;
            delay(&a);
            saxpy.launch(&a, 8, 256, 0, (2.0f32, xl, yl))?;
            saxpy.launch(&b, 8, 256, 0, (2.0f32, xr, yr))?;
        }
        assert_all(&y.to_vec()?, 2.0f32, "both halves");

        // Two readers of x, the first delayed: a host write waits for both.
        delay(&a);
        saxpy.launch(&a, 16, 256, 0, (1.0f32, &x, &mut y))?;
        let mut z = cur.alloc_zeros::<f32>(N)?;
        saxpy.launch(&b, 16, 256, 0, (1.0f32, &x, &mut z))?;
        let mut x = x;
        x.copy_from_host(&vec![100.0f32; N])?;
        assert_all(&y.to_vec()?, 3.0f32, "the first reader read the old x");

        // A launch on the default stream does not clear a mark that names another
        // stream: the host write still waits for the delayed reader.
        delay(&a);
        saxpy.launch(&a, 16, 256, 0, (1.0f32, &x, &mut y))?;
        saxpy.launch(&cur.default_stream(), 16, 256, 0, (1.0f32, &x, &mut z))?;
        x.copy_from_host(&vec![0.0f32; N])?;
        assert_all(&y.to_vec()?, 103.0f32, "the delayed reader read x = 100");
        Ok(())
    });
}

#[test]
fn a_graph_launch_marks_the_memory_its_nodes_use() {
    on_device0(|cur| {
        let module = cur.load_ptx(SLICES, &JitOptions::default())?;
        // SAFETY: as above.
        let saxpy = unsafe { module.function::<Saxpy>("saxpy")? };
        let x = cur.alloc_from(&vec![1.0f32; N])?;
        let y = cur.alloc_zeros::<f32>(N)?;
        let mut graph = cur.create_graph()?;
        graph.add_kernel(&[], &saxpy, 16, 256, 0, (2.0f32, &x, &y))?;
        let exec = graph.instantiate()?;
        let stream = cur.create_stream(CUstream_flags::CU_STREAM_NON_BLOCKING)?;
        stream.scope(|s| {
            delay(&stream);
            s.launch_graph(&exec)?;
            // Inside the scope: the read waits for the launch that writes y.
            assert_all(&y.to_vec()?, 2.0f32, "read after the graph's launch");
            Ok::<_, oxicuda_driver::CudaError>(())
        })??;
        Ok(())
    });
}

#[test]
fn a_host_read_inside_a_capture_of_the_marking_stream_still_works() {
    on_device0(|cur| {
        let module = cur.load_ptx(SLICES, &JitOptions::default())?;
        // SAFETY: as above.
        let saxpy = unsafe { module.function::<Saxpy>("saxpy")? };
        let mut stream = cur.create_stream(CUstream_flags::CU_STREAM_NON_BLOCKING)?;
        let x = cur.alloc_from(&vec![1.0f32; N])?;
        let mut y = cur.alloc_zeros::<f32>(N)?;
        delay(&stream);
        saxpy.launch(&stream, 16, 256, 0, (2.0f32, &x, &mut y))?;
        // The capture waits for the marked work first; inside it the read does not
        // try to wait for the capturing stream.
        let mut seen = Vec::new();
        let graph = stream.capture(oxicuda_driver::graph::CaptureMode::Relaxed, |_| {
            seen = y.to_vec()?;
            Ok(())
        })?;
        drop(graph);
        assert_all(&seen, 2.0f32, "read inside the capture");
        Ok(())
    });
}

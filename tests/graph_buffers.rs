//! Buffers a graph owns (issue 29, item 3): a graph replayed with new input — written
//! in stream order inside the scope that launches it, or through the executable graph
//! between scopes — and read back; new kernel arguments naming other owned buffers; the
//! rules (a handle of another graph, clones, embedding, updates, captures).

mod common;

use common::on_device0;
use oxicuda_driver::CudaError;
use oxicuda_driver::graph::{CaptureMode, GraphBuffer};
use oxicuda_driver::launch::{In, Out};
use oxicuda_driver::module::JitOptions;
use oxicuda_driver::sys::CUstream_flags;
use std::time::Duration;

const SLICES: &str = include_str!("../kernels/slices.ptx");
type Saxpy = (f32, In<f32>, Out<f32>);
const N: usize = 256;

fn graph_buffer_error(r: Result<impl Sized, CudaError>) -> (Option<usize>, &'static str) {
    match r {
        Err(CudaError::GraphBuffer { buffer, rule }) => (buffer, rule),
        Err(e) => panic!("expected CudaError::GraphBuffer, got {e:?}"),
        Ok(_) => panic!("expected CudaError::GraphBuffer, got Ok"),
    }
}

#[test]
fn a_graph_is_replayed_with_new_input_written_in_its_scope() {
    on_device0(|cur| {
        let module = cur.load_ptx(SLICES, &JitOptions::default())?;
        // SAFETY: kernels/slices.cu: saxpy reads x and updates y, each below its length.
        let saxpy = unsafe { module.function::<Saxpy>("saxpy")? };
        let mut graph = cur.create_graph()?;
        let x: GraphBuffer<f32> = graph.add_buffer(cur.alloc_zeros::<f32>(N)?);
        let y = graph.add_buffer(cur.alloc_zeros::<f32>(N)?);
        graph.add_kernel(&[], &saxpy, 1, N as u32, 0, (2.0f32, x, y))?;
        let exec = graph.instantiate()?;
        let stream = cur.create_stream(CUstream_flags::CU_STREAM_NON_BLOCKING)?;

        let inputs: Vec<Vec<f32>> = (0..3).map(|k| vec![k as f32 + 1.0; N]).collect();
        let mut outputs = vec![vec![0.0f32; N]; 3];
        stream.scope(|s| {
            for (input, output) in inputs.iter().zip(outputs.iter_mut()) {
                s.copy_to_graph(&exec, x, input)?;
                s.launch_graph(&exec)?;
                s.copy_from_graph(&exec, y, output)?;
            }
            Ok::<_, CudaError>(())
        })??;
        // y accumulates: y = 2x + y after each launch.
        assert!(outputs[0].iter().all(|v| *v == 2.0), "first replay");
        assert!(outputs[1].iter().all(|v| *v == 2.0 + 4.0), "second replay");
        assert!(outputs[2].iter().all(|v| *v == 6.0 + 6.0), "third replay");
        Ok(())
    });
}

#[test]
fn between_scopes_the_executable_graph_lends_its_buffers() {
    on_device0(|cur| {
        let module = cur.load_ptx(SLICES, &JitOptions::default())?;
        // SAFETY: as above.
        let saxpy = unsafe { module.function::<Saxpy>("saxpy")? };
        let mut graph = cur.create_graph()?;
        let x = graph.add_buffer(cur.alloc_from(&[1.0f32; N])?);
        let y = graph.add_buffer(cur.alloc_zeros::<f32>(N)?);
        let other = graph.add_buffer(cur.alloc_zeros::<f32>(N)?);
        graph.buffer_mut(x)?.copy_from_host(&[3.0f32; N])?;
        let node = graph.add_kernel(&[], &saxpy, 1, N as u32, 0, (1.0f32, x, y))?;
        let mut exec = graph.instantiate()?;
        let stream = cur.create_stream(CUstream_flags::CU_STREAM_NON_BLOCKING)?;

        stream.scope(|s| s.launch_graph(&exec))??;
        assert!(exec.buffer(y)?.to_vec()?.iter().all(|v| *v == 3.0));
        exec.buffer_mut(x)?.fill(5.0f32)?;
        // New arguments: plain handles, so they borrow nothing.
        exec.set_kernel_args(&node, (1.0f32, x, other))?;
        stream.scope(|s| s.launch_graph(&exec))??;
        assert!(exec.buffer(other)?.to_vec()?.iter().all(|v| *v == 5.0));
        assert!(
            exec.buffer(y)?.to_vec()?.iter().all(|v| *v == 3.0),
            "y untouched"
        );

        // Inside a scope, a host read through the executable graph waits for the
        // launch queued before it (the launch marks the graph's buffers).
        stream.scope(|s| {
            stream.launch_host_fn(|| std::thread::sleep(Duration::from_millis(300)))?;
            s.launch_graph(&exec)?;
            let seen = exec.buffer(other)?.to_vec()?;
            assert!(seen.iter().all(|v| *v == 10.0), "read after the launch");
            Ok::<_, CudaError>(())
        })??;
        Ok(())
    });
}

#[test]
fn a_handle_works_only_with_its_own_graph() {
    on_device0(|cur| {
        let module = cur.load_ptx(SLICES, &JitOptions::default())?;
        // SAFETY: as above.
        let saxpy = unsafe { module.function::<Saxpy>("saxpy")? };
        let mut a = cur.create_graph()?;
        let mut b = cur.create_graph()?;
        let xa = a.add_buffer(cur.alloc_zeros::<f32>(N)?);
        let ya = a.add_buffer(cur.alloc_zeros::<f32>(N)?);
        let yb = b.add_buffer(cur.alloc_zeros::<f32>(N)?);

        let (buffer, rule) =
            graph_buffer_error(b.add_kernel(&[], &saxpy, 1, 1, 0, (1.0f32, xa, yb)));
        assert_eq!(buffer, Some(0));
        assert!(rule.contains("another graph"), "{rule}");
        graph_buffer_error(b.buffer(xa));
        graph_buffer_error(b.buffer_mut(ya));

        let node = a.add_kernel(&[], &saxpy, 1, 1, 0, (1.0f32, xa, ya))?;
        let mut exec = a.instantiate()?;
        graph_buffer_error(exec.set_kernel_args(&node, (1.0f32, xa, yb)));
        graph_buffer_error(exec.buffer(yb));
        let stream = cur.create_stream(CUstream_flags::CU_STREAM_NON_BLOCKING)?;
        let input = [0.0f32; N];
        stream.scope(|s| {
            graph_buffer_error(s.copy_to_graph(&exec, yb, &input));
            Ok::<_, CudaError>(())
        })??;

        // Copies of a graph that owns buffers would use memory the original frees.
        graph_buffer_error(b.try_clone());
        let mut c = cur.create_graph()?;
        graph_buffer_error(c.add_child(&[], &b));
        graph_buffer_error(exec.update(b));

        // A capture makes a graph of its own: no owned buffer of another.
        let mut capturing = cur.create_stream(CUstream_flags::CU_STREAM_NON_BLOCKING)?;
        let r = capturing.capture(CaptureMode::ThreadLocal, |c| {
            c.launch(&saxpy, 1, 1, 0, (1.0f32, xa, ya))
        });
        graph_buffer_error(r);
        Ok(())
    });
}

#[test]
fn owned_buffers_are_freed_with_their_graph() {
    on_device0(|cur| {
        let before = softcuda::control::live_counts().allocations;
        let mut graph = cur.create_graph()?;
        let h = graph.add_buffer(cur.alloc_from(&[7u32; 16])?);
        assert_eq!(graph.buffer(h)?.to_vec()?, vec![7u32; 16], "contents kept");
        assert_eq!(h.len(), 16);
        assert_eq!(softcuda::control::live_counts().allocations, before + 1);
        let exec = graph.instantiate()?;
        drop(exec);
        assert_eq!(softcuda::control::live_counts().allocations, before);
        Ok(())
    });
}

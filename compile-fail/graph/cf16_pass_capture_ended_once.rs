// CF16 twin: one capture, ended by its closure's return, one graph.
use oxicuda_driver::graph::CaptureMode;
use oxicuda_driver::sys::CUstream_flags;
use oxicuda_driver::{CudaError, CurrentContext};

#[allow(dead_code)]
fn capture(cur: &CurrentContext<'_>) -> Result<(), CudaError> {
    let mut stream = cur.create_stream(CUstream_flags::CU_STREAM_NON_BLOCKING)?;
    let graph = stream.capture(CaptureMode::ThreadLocal, |_capture| Ok(()))?;
    drop(graph);
    Ok(())
}

fn main() {}

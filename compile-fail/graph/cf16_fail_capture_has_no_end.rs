// CF16: the crate ends the capture, once; the guard has no `end` to call again.
use oxicuda_driver::graph::CaptureMode;
use oxicuda_driver::sys::CUstream_flags;
use oxicuda_driver::{CudaError, CurrentContext};

#[allow(dead_code)]
fn capture(cur: &CurrentContext<'_>) -> Result<(), CudaError> {
    let mut stream = cur.create_stream(CUstream_flags::CU_STREAM_NON_BLOCKING)?;
    let graph = stream.capture(CaptureMode::ThreadLocal, |capture| capture.end().map(|_| ()))?;
    drop(graph);
    Ok(())
}

fn main() {}

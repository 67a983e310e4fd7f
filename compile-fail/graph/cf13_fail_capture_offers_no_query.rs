// CF13: the capture guard offers only what is legal under capture: no synchronize,
// no query.
use oxicuda_driver::graph::CaptureMode;
use oxicuda_driver::sys::CUstream_flags;
use oxicuda_driver::{CudaError, CurrentContext};

#[allow(dead_code)]
fn capture(cur: &CurrentContext<'_>) -> Result<(), CudaError> {
    let mut stream = cur.create_stream(CUstream_flags::CU_STREAM_NON_BLOCKING)?;
    let graph = stream.capture(CaptureMode::Global, |capture| capture.is_done().map(|_| ()))?;
    drop(graph);
    Ok(())
}

fn main() {}

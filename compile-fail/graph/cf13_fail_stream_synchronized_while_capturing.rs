// CF13: the capturing stream is borrowed by its capture: it cannot be synchronised
// (or queried, or scoped) until the capture ends.
use oxicuda_driver::graph::CaptureMode;
use oxicuda_driver::sys::CUstream_flags;
use oxicuda_driver::{CudaError, CurrentContext};

#[allow(dead_code)]
fn capture(cur: &CurrentContext<'_>) -> Result<(), CudaError> {
    let mut stream = cur.create_stream(CUstream_flags::CU_STREAM_NON_BLOCKING)?;
    let graph = stream.capture(CaptureMode::Global, |_capture| stream.synchronize())?;
    drop(graph);
    Ok(())
}

fn main() {}

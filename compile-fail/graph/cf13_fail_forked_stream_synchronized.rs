// CF13: a stream forked into a capture is borrowed by the fork until it is joined.
use oxicuda_driver::graph::CaptureMode;
use oxicuda_driver::sys::CUstream_flags;
use oxicuda_driver::{CudaError, CurrentContext};

#[allow(dead_code)]
fn capture(cur: &CurrentContext<'_>) -> Result<(), CudaError> {
    let mut stream = cur.create_stream(CUstream_flags::CU_STREAM_NON_BLOCKING)?;
    let mut side = cur.create_stream(CUstream_flags::CU_STREAM_NON_BLOCKING)?;
    let graph = stream.capture(CaptureMode::Global, |capture| {
        capture.fork(&mut side, |_forked| side.synchronize())
    })?;
    drop(graph);
    Ok(())
}

fn main() {}

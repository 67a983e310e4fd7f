// CF13: a stream a capture may fork into is borrowed for the whole capture (a forked
// stream stays part of the capture until it ends), so it cannot be synchronised.
use oxicuda_driver::graph::CaptureMode;
use oxicuda_driver::sys::CUstream_flags;
use oxicuda_driver::{CudaError, CurrentContext};

#[allow(dead_code)]
fn capture(cur: &CurrentContext<'_>) -> Result<(), CudaError> {
    let mut stream = cur.create_stream(CUstream_flags::CU_STREAM_NON_BLOCKING)?;
    let mut side = cur.create_stream(CUstream_flags::CU_STREAM_NON_BLOCKING)?;
    let graph = stream.capture_with(CaptureMode::Global, &mut [&mut side], |capture, branches| {
        capture.fork(&mut branches[0], |_forked| Ok(()))?;
        side.synchronize()
    })?;
    drop(graph);
    Ok(())
}

fn main() {}

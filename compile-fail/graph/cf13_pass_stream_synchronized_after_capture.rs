// CF13 twin: once the capture has ended, the stream is the caller's again.
use oxicuda_driver::graph::CaptureMode;
use oxicuda_driver::sys::CUstream_flags;
use oxicuda_driver::{CudaError, CurrentContext};

#[allow(dead_code)]
fn capture(cur: &CurrentContext<'_>) -> Result<(), CudaError> {
    let mut stream = cur.create_stream(CUstream_flags::CU_STREAM_NON_BLOCKING)?;
    let buf = cur.alloc::<u32>(4)?;
    let capture = stream.begin_capture(CaptureMode::Global)?;
    capture.fill(&buf, 1u32)?;
    let graph = capture.end()?;
    stream.synchronize()?;
    drop(graph);
    Ok(())
}

fn main() {}

// CF13 twin: once the capture has ended, the streams are the caller's again.
use oxicuda_driver::graph::CaptureMode;
use oxicuda_driver::sys::CUstream_flags;
use oxicuda_driver::{CudaError, CurrentContext};

#[allow(dead_code)]
fn capture(cur: &CurrentContext<'_>) -> Result<(), CudaError> {
    let mut stream = cur.create_stream(CUstream_flags::CU_STREAM_NON_BLOCKING)?;
    let mut side = cur.create_stream(CUstream_flags::CU_STREAM_NON_BLOCKING)?;
    let (a, b) = (cur.alloc::<u32>(4)?, cur.alloc::<u32>(4)?);
    let graph = stream.capture_with(CaptureMode::Global, &mut [&mut side], |capture, branches| {
        capture.fork(&mut branches[0], |forked| forked.fill(&b, 2u32))?;
        capture.fill(&a, 1u32)
    })?;
    stream.synchronize()?;
    side.synchronize()?;
    drop(graph);
    Ok(())
}

fn main() {}

// CF16: a capture ends once, when its closure returns: the guard cannot escape the
// closure (to be ended again, forgotten, or used after the end).
use oxicuda_driver::graph::CaptureMode;
use oxicuda_driver::sys::CUstream_flags;
use oxicuda_driver::{CudaError, CurrentContext};

#[allow(dead_code)]
fn capture(cur: &CurrentContext<'_>) -> Result<(), CudaError> {
    let mut stream = cur.create_stream(CUstream_flags::CU_STREAM_NON_BLOCKING)?;
    let mut kept = None;
    let graph = stream.capture(CaptureMode::ThreadLocal, |capture| {
        kept = Some(capture);
        Ok(())
    })?;
    drop((graph, kept));
    Ok(())
}

fn main() {}

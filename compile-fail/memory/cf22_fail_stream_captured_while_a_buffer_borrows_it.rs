// CF22: a stream that a stream-ordered buffer borrows cannot be captured (capture
// needs the stream borrowed mutably); allocation inside a capture is not offered.
use oxicuda_driver::graph::CaptureMode;
use oxicuda_driver::stream::Stream;

fn capture_while_borrowed(stream: &mut Stream<'_>) -> Result<(), oxicuda_driver::CudaError> {
    let buffer = stream.alloc_async::<f32>(16)?;
    let _graph = stream.capture(CaptureMode::Global, |_| Ok(()))?;
    buffer.free_async()
}

fn main() {
    let _ = capture_while_borrowed;
}

// CF22: a stream-ordered buffer cannot be used after its asynchronous free: the free
// consumes it.
use oxicuda_driver::stream::Stream;

fn after_free(stream: &Stream<'_>) -> Result<usize, oxicuda_driver::CudaError> {
    let buffer = stream.alloc_async::<f32>(16)?;
    buffer.free_async()?;
    Ok(buffer.len())
}

fn main() {
    let _ = after_free;
}

// CF22 twin: the buffer is used, then freed in its stream's order.
use oxicuda_driver::stream::Stream;

#[allow(dead_code)]
fn use_then_free(stream: &Stream<'_>) -> Result<usize, oxicuda_driver::CudaError> {
    let mut buffer = stream.alloc_async::<f32>(16)?;
    stream.fill(&mut buffer, 1.0)?;
    let len = buffer.len();
    buffer.free_async()?;
    Ok(len)
}

fn main() {}

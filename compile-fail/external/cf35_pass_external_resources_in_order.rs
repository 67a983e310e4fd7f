// CF35 twin: a timeline semaphore's operations take a value, a binary one's none;
// buffers are used while their memory object lives.
use oxicuda_driver::external::{Binary, ExternalMemory, ExternalSemaphore, Timeline};
use oxicuda_driver::stream::Stream;

#[allow(dead_code)]
fn ordered(
    memory: &ExternalMemory<'_>,
    done: &ExternalSemaphore<'_, Binary>,
    step: &ExternalSemaphore<'_, Timeline>,
    stream: &Stream<'_>,
) -> Result<Vec<u32>, oxicuda_driver::CudaError> {
    step.wait(stream, 2)?;
    let buffer = memory.buffer::<u32>(0, 16)?;
    let host = buffer.to_vec()?;
    done.signal(stream)?;
    step.signal(stream, 3)?;
    Ok(host)
}

fn main() {}

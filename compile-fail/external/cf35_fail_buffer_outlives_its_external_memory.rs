// CF35: a buffer mapped from external memory cannot outlive the memory object
// (destroying the object would leave the buffer's addresses behind).
use oxicuda_driver::external::ExternalMemory;

fn outlive(memory: ExternalMemory<'_>) -> Result<(), oxicuda_driver::CudaError> {
    let buffer = memory.buffer::<u32>(0, 16)?;
    drop(memory);
    buffer.to_vec()?;
    Ok(())
}

fn main() {}

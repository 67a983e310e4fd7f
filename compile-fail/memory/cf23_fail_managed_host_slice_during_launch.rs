// CF23: the host slice of managed memory cannot coexist with a launch that uses the
// buffer.
use oxicuda_driver::launch::Out;
use oxicuda_driver::managed::ManagedBuffer;
use oxicuda_driver::module::Function;
use oxicuda_driver::stream::Stream;

fn racy(
    kernel: &Function<'_, (Out<u32>,)>,
    stream: &Stream<'_>,
    buffer: &mut ManagedBuffer<'_, u32>,
) -> Result<(), oxicuda_driver::CudaError> {
    let host = buffer.host()?;
    kernel.launch(stream, 1, 32, 0, (&mut *buffer,))?;
    host[0] = 1;
    Ok(())
}

fn main() {
    let _ = racy;
}

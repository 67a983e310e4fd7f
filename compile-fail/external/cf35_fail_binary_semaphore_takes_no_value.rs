// CF35: a binary semaphore's signal takes no value (it would be ignored); only a
// timeline semaphore's does.
use oxicuda_driver::external::{Binary, ExternalSemaphore};
use oxicuda_driver::stream::Stream;

fn signal(sem: &ExternalSemaphore<'_, Binary>, stream: &Stream<'_>) -> Result<(), oxicuda_driver::CudaError> {
    sem.signal(stream, 5)
}

fn main() {}

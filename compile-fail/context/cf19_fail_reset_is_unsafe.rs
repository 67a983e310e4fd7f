// CF19: resetting a primary context frees what every handle to it made, in the whole
// process; no handle proves that nothing else uses it, so it is `unsafe`.
use oxicuda_driver::{CudaError, PrimaryContext};

#[allow(dead_code)]
fn reset(mut primary: PrimaryContext) -> Result<(), CudaError> {
    primary.reset()
}

fn main() {}

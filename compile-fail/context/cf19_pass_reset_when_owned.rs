// CF19 twin: reset when nothing borrows it.
use oxicuda_driver::{CudaError, PrimaryContext};

#[allow(dead_code)]
fn reset(mut primary: PrimaryContext) -> Result<(), CudaError> {
    primary.bind(|cur| cur.synchronize())??;
    primary.reset()
}

fn main() {}

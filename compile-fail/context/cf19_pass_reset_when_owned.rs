// CF19 twin: reset in `unsafe`, when this program has dropped all it made with the
// primary context and holds its only handle.
use oxicuda_driver::{CudaError, PrimaryContext};

#[allow(dead_code)]
fn reset(mut primary: PrimaryContext) -> Result<(), CudaError> {
    primary.bind(|cur| cur.synchronize())??;
    // SAFETY: nothing made in the binding above outlived it, and this is the only
    // handle to the primary context in the program.
    unsafe { primary.reset() }
}

fn main() {}

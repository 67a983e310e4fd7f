// CF2 twin: plain results of the work done under a binding leave it.
use oxicuda_driver::{Context, CudaError};

#[allow(dead_code)]
fn version(ctx: &Context) -> Result<u32, CudaError> {
    ctx.bind(|cur| cur.api_version())?
}

fn main() {}

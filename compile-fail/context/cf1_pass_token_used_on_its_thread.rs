// CF1 twin: the token is used on the thread that bound it.
use oxicuda_driver::{Context, CudaError};

#[allow(dead_code)]
fn work(ctx: &Context) -> Result<(), CudaError> {
    ctx.bind(|cur| cur.synchronize())?
}

fn main() {}

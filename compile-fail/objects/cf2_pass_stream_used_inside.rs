// CF2 twin: the stream is used and dropped inside the binding.
use oxicuda_driver::{Context, CudaError};
use oxicuda_driver::sys::CUstream_flags;

#[allow(dead_code)]
fn inside(ctx: &Context) -> Result<(), CudaError> {
    ctx.bind(|cur| cur.create_stream(CUstream_flags::empty())?.synchronize())?
}

fn main() {}

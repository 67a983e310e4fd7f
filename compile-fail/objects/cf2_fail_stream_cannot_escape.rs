// CF2: a stream made under a binding cannot outlive it.
use oxicuda_driver::Context;
use oxicuda_driver::sys::CUstream_flags;

#[allow(dead_code)]
fn escape(ctx: &Context) {
    let _stream = ctx.bind(|cur| cur.create_stream(CUstream_flags::empty()));
}

fn main() {}

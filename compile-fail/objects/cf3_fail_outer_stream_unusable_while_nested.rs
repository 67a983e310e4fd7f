// CF3: the outer context's stream cannot be used while another context is pushed.
use oxicuda_driver::Context;
use oxicuda_driver::sys::CUstream_flags;

#[allow(dead_code)]
fn nested(outer: &Context, inner: &Context) {
    let _ = outer.bind(|cur| {
        let stream = cur.create_stream(CUstream_flags::empty()).unwrap();
        let _ = cur.push(inner, |_| ());
        stream.synchronize()
    });
}

fn main() {}

// CF3: while another context is pushed on top, the outer context cannot be used.
use oxicuda_driver::Context;

#[allow(dead_code)]
fn nested(outer: &Context, inner: &Context) {
    let _ = outer.bind(|cur| {
        let _ = cur.push(inner, |_inner_cur| cur.synchronize());
    });
}

fn main() {}

// CF3 twin: inside the nested binding, the inner token is the one to use; the outer
// one is usable again afterwards.
use oxicuda_driver::Context;

#[allow(dead_code)]
fn nested(outer: &Context, inner: &Context) {
    let _ = outer.bind(|cur| {
        let _ = cur.push(inner, |inner_cur| inner_cur.synchronize());
        cur.synchronize()
    });
}

fn main() {}

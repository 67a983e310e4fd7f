// CF2: nothing made under a binding outlives it — not even the token.
use oxicuda_driver::Context;

#[allow(dead_code)]
fn escape(ctx: &Context) {
    let _token = ctx.bind(|cur| cur);
}

fn main() {}

// CF5: what is tied to a binding cannot be used from another thread.
use oxicuda_driver::Context;

#[allow(dead_code)]
fn share(ctx: &Context) {
    let _ = ctx.bind(|cur| {
        std::thread::scope(|s| {
            s.spawn(|| cur.synchronize());
        });
    });
}

fn main() {}

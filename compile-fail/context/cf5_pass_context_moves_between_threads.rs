// CF5 twin: the owned context moves to another thread and is bound there.
use oxicuda_driver::Context;

#[allow(dead_code)]
fn migrate(ctx: Context) {
    let _ = std::thread::spawn(move || ctx.bind(|cur| cur.synchronize())).join();
}

fn main() {}

// CF36: what a binding of a green context makes stays in the binding, as for every
// context (CF2): the green context can then be destroyed with nothing of it left.
use oxicuda_driver::green::GreenContext;

fn leak(green: &GreenContext) {
    let mut kept = None;
    green
        .bind(|cur| {
            kept = cur.alloc_from(&[1u32, 2, 3]).ok();
        })
        .ok();
    drop(kept);
}

fn main() {}

// CF19: even in `unsafe`, a primary context cannot be reset through the handle that
// is bound.
use oxicuda_driver::PrimaryContext;

#[allow(dead_code)]
fn reset_while_bound(mut primary: PrimaryContext) {
    // SAFETY: (refused by the borrow checker before it matters).
    let _ = primary.bind(|_cur| unsafe { primary.reset() });
}

fn main() {}

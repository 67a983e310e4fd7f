// CF19: resetting a primary context needs exclusive ownership: not while it is bound.
use oxicuda_driver::PrimaryContext;

#[allow(dead_code)]
fn reset_while_bound(mut primary: PrimaryContext) {
    let _ = primary.bind(|_cur| primary.reset());
}

fn main() {}

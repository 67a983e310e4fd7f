// CF8: no type outside the crate can hand a launch its own parameter array —
// `Args` is sealed (an empty or wild array would make the driver read past it).
use oxicuda_driver::launch::{Args, In};

struct Forged;

impl Args<(In<f32>,)> for Forged {}

fn main() {}

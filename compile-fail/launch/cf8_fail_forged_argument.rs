// CF8: no type outside the crate is a launch argument — `Arg` is sealed (a forged
// one could pass the address of host memory for an `Out` buffer).
use oxicuda_driver::launch::{Arg, Out};

struct HostAddress(u64);

impl Arg<Out<f32>> for HostAddress {}

fn main() {}

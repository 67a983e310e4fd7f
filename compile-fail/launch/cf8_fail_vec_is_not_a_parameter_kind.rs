// CF8: a `Vec` cannot even be declared as a kernel parameter kind.
use oxicuda_driver::module::Function;

#[allow(dead_code)]
fn declare(k: &Function<'_, (Vec<f32>,)>) {
    let _ = k.raw();
}

fn main() {}

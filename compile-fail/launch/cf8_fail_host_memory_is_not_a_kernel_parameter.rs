// CF8: host references, Vec and slices are not kernel parameters.
use oxicuda_driver::launch::In;
use oxicuda_driver::module::Function;
use oxicuda_driver::stream::Stream;

#[allow(dead_code)]
fn go(k: &Function<'_, (In<f32>,)>, s: &Stream<'_>, host: &Vec<f32>) {
    let _ = k.launch(s, 1, 32, 0, (host,));
}

fn main() {}

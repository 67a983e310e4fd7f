// CF8: raw pointers are not kernel parameters, not even device-looking ones.
use oxicuda_driver::launch::Out;
use oxicuda_driver::module::Function;
use oxicuda_driver::stream::Stream;

#[allow(dead_code)]
fn go(k: &Function<'_, (Out<f32>,)>, s: &Stream<'_>, p: *mut f32) {
    let _ = k.launch(s, 1, 32, 0, (p,));
}

fn main() {}

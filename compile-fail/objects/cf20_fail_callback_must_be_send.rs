// CF20: ... and Send: it runs on a driver thread.
use oxicuda_driver::stream::Stream;
use std::rc::Rc;

#[allow(dead_code)]
fn callback(s: &Stream<'_>) {
    let shared = Rc::new(0);
    let _ = s.launch_host_fn(move || drop(shared));
}

fn main() {}

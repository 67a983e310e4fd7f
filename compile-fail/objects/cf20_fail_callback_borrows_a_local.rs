// CF20: a host callback must be 'static: a closure borrowing a local is rejected.
use oxicuda_driver::stream::Stream;

#[allow(dead_code)]
fn callback(s: &Stream<'_>) {
    let mut count = 0;
    let _ = s.launch_host_fn(|| count += 1);
}

fn main() {}

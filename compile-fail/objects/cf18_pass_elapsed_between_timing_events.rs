// CF18 twin: two timing events.
use oxicuda_driver::stream::{Event, Timing};

#[allow(dead_code)]
fn elapsed(start: &Event<'_, Timing>, end: &Event<'_, Timing>) {
    let _ = end.elapsed_since(start);
}

fn main() {}

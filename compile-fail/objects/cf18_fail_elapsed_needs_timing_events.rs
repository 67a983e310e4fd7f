// CF18: elapsed time exists only between events created with timing enabled.
use oxicuda_driver::stream::{Event, NoTiming, Timing};

#[allow(dead_code)]
fn elapsed(start: &Event<'_, Timing>, end: &Event<'_, NoTiming>) {
    let _ = end.elapsed_since(start);
}

fn main() {}

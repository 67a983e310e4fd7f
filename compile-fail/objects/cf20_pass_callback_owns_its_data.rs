// CF20 twin: the callback owns what it uses.
use oxicuda_driver::stream::Stream;
use std::sync::{Arc, atomic::{AtomicUsize, Ordering}};

#[allow(dead_code)]
fn callback(s: &Stream<'_>, count: Arc<AtomicUsize>) {
    let _ = s.launch_host_fn(move || {
        count.fetch_add(1, Ordering::Relaxed);
    });
}

fn main() {}

// CF33: every field of a derived `DeviceCopy` struct is `DeviceCopy` itself: a `bool`
// (the device may write any byte) or a reference (a host address) is refused.
use oxicuda_driver::memory::DeviceCopy;

#[derive(Clone, Copy, DeviceCopy)]
#[repr(C)]
struct Params {
    scale: f32,
    enabled: bool,
}

fn main() {}

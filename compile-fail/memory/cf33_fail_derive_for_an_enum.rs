// CF33: `DeviceCopy` is not derived for an enum: not every bit pattern is a variant.
use oxicuda_driver::memory::DeviceCopy;

#[derive(Clone, Copy, DeviceCopy)]
#[repr(C)]
enum Mode {
    Fast,
    Exact,
}

fn main() {}

// CF33: `#[derive(DeviceCopy)]` needs `#[repr(C)]` (or `transparent`): the kernel's
// struct must have the same layout.
use oxicuda_driver::memory::DeviceCopy;

#[derive(Clone, Copy, DeviceCopy)]
struct Params {
    scale: f32,
    n: u32,
}

fn main() {}

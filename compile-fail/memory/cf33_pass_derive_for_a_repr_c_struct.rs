// CF33 twin: a `#[repr(C)]` struct of `DeviceCopy` fields derives it, generic or not.
use oxicuda_driver::memory::DeviceCopy;

#[derive(Clone, Copy, DeviceCopy)]
#[repr(C)]
struct Params<T: DeviceCopy> {
    scale: T,
    n: u32,
    table: [u16; 4],
}

fn is_device_copy<T: DeviceCopy>() {}

fn main() {
    is_device_copy::<Params<f64>>();
}

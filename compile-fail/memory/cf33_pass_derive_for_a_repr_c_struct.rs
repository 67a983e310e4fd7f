// CF33 twin: a `#[repr(C)]` struct of `DeviceCopy` fields derives it, generic or not.
use oxicuda_driver::memory::DeviceCopy;

#[derive(Clone, Copy, DeviceCopy)]
#[repr(C)]
struct Params<T: DeviceCopy> {
    scale: T,
    n: u32,
    table: [u16; 4],
}

/// Alignment and packing beside `C`; a tuple struct.
#[derive(Clone, Copy, DeviceCopy)]
#[repr(C, align(16))]
struct Aligned(f32, u32);

#[derive(Clone, Copy, DeviceCopy)]
#[repr(C, packed(2))]
struct Packed {
    a: u8,
    b: u32,
}

fn is_device_copy<T: DeviceCopy>() {}

fn main() {
    is_device_copy::<Params<f64>>();
    is_device_copy::<Aligned>();
    is_device_copy::<Packed>();
}

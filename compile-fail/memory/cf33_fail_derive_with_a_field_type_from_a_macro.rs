// CF33: a field type written by a macro is refused: a macro may expand to another
// type each time, so the derive's bound could check a type other than the field's.
use oxicuda_driver::memory::DeviceCopy;

macro_rules! float {
    () => {
        f32
    };
}

#[derive(Clone, Copy, DeviceCopy)]
#[repr(C)]
struct Params {
    scale: float!(),
}

fn main() {}

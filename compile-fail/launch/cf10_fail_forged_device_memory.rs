// CF10: device memory is the crate's buffers and views only — `DeviceRead` is
// sealed, so no type can name a buffer it does not borrow (and alias an `Out`).
use oxicuda_driver::memory::{DeviceRead, DeviceSlice};

struct Alias;

impl DeviceRead<f32> for Alias {
    fn view(&self) -> DeviceSlice<'_, f32> {
        unimplemented!()
    }
}

fn main() {}

// CF38: an array's element type fixes its format and channels: host data of another
// element type is no copy source, however many bytes it has.
use oxicuda_driver::array::ArrayShape;
use oxicuda_driver::{CudaError, CurrentContext};

fn fill(cur: &CurrentContext<'_>) -> Result<(), CudaError> {
    let mut rgba = cur.array::<[u8; 4]>(ArrayShape::d2(4, 4))?;
    let floats = vec![0.0f32; 16];
    rgba.copy_from_host(&floats)
}

fn main() {}

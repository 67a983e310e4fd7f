// CF39: a texture object borrows its array: it cannot outlive it (the handle would
// name destroyed memory).
use oxicuda_driver::array::ArrayShape;
use oxicuda_driver::texture::{TextureDesc, TextureObject};
use oxicuda_driver::{CudaError, CurrentContext};

fn escape<'c>(cur: &'c CurrentContext<'_>) -> Result<TextureObject<'c, f32>, CudaError> {
    let array = cur.array::<f32>(ArrayShape::d1(16))?;
    array.texture(&TextureDesc::default())
}

fn main() {}

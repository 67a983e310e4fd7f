// CF39: while a texture samples an array, the array cannot be written: the copy
// needs it exclusively.
use oxicuda_driver::array::ArrayShape;
use oxicuda_driver::texture::TextureDesc;
use oxicuda_driver::{CudaError, CurrentContext};

fn overwrite(cur: &CurrentContext<'_>) -> Result<(), CudaError> {
    let mut array = cur.array::<f32>(ArrayShape::d1(16))?;
    let texture = array.texture(&TextureDesc::default())?;
    array.copy_from_host(&[1.0; 16])?;
    drop(texture);
    Ok(())
}

fn main() {}

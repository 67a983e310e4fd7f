// CF39: a surface holds its array exclusively: no texture samples it meanwhile.
use oxicuda_driver::array::ArrayShape;
use oxicuda_driver::texture::TextureDesc;
use oxicuda_driver::{CudaError, CurrentContext};

fn both(cur: &CurrentContext<'_>) -> Result<(), CudaError> {
    let mut array = cur.storage_array::<f32>(ArrayShape::d1(16))?;
    let surface = array.surface()?;
    let texture = array.texture(&TextureDesc::default())?;
    drop((surface, texture));
    Ok(())
}

fn main() {}

// CF39: a `Texture<E>` parameter takes only a texture over an array of `E`s.
use oxicuda_driver::array::ArrayShape;
use oxicuda_driver::module::Module;
use oxicuda_driver::stream::Stream;
use oxicuda_driver::texture::{Texture, TextureDesc};
use oxicuda_driver::{CudaError, CurrentContext};

fn sample(cur: &CurrentContext<'_>, module: &Module<'_>, stream: &Stream<'_>) -> Result<(), CudaError> {
    let bytes = cur.array::<u8>(ArrayShape::d1(16))?;
    let texture = bytes.texture(&TextureDesc::default())?;
    // SAFETY: compile-fail fixture.
    let f = unsafe { module.function::<(Texture<f32>,)>("sample")? };
    f.launch(stream, 1, 1, 0, (&texture,))
}

fn main() {}

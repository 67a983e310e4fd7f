// CF39: a texture object is no pointer, and a pointer no texture object: a buffer is
// no argument for a `Texture<E>` parameter.
use oxicuda_driver::module::Module;
use oxicuda_driver::stream::Stream;
use oxicuda_driver::texture::Texture;
use oxicuda_driver::{CudaError, CurrentContext};

fn sample(cur: &CurrentContext<'_>, module: &Module<'_>, stream: &Stream<'_>) -> Result<(), CudaError> {
    let buffer = cur.alloc_zeros::<f32>(16)?;
    // SAFETY: compile-fail fixture.
    let f = unsafe { module.function::<(Texture<f32>,)>("sample")? };
    f.launch(stream, 1, 1, 0, (&buffer,))
}

fn main() {}

// CF39: a kernel may store through a surface: a launch takes it exclusively
// (`&mut surface`), like an `Out` buffer.
use oxicuda_driver::array::ArrayShape;
use oxicuda_driver::module::Module;
use oxicuda_driver::stream::Stream;
use oxicuda_driver::texture::Surface;
use oxicuda_driver::{CudaError, CurrentContext};

fn store(cur: &CurrentContext<'_>, module: &Module<'_>, stream: &Stream<'_>) -> Result<(), CudaError> {
    let mut array = cur.storage_array::<u32>(ArrayShape::d1(16))?;
    let surface = array.surface()?;
    // SAFETY: compile-fail fixture.
    let f = unsafe { module.function::<(Surface<u32>,)>("store")? };
    f.launch(stream, 1, 1, 0, (&surface,))
}

fn main() {}

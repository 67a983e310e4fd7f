// CF39 twin: a texture passed shared, a surface exclusively, each to a parameter of
// its own element type; the array copied once both are gone.
use oxicuda_driver::array::ArrayShape;
use oxicuda_driver::module::Module;
use oxicuda_driver::stream::Stream;
use oxicuda_driver::texture::{Surface, Texture, TextureDesc};
use oxicuda_driver::{CudaError, CurrentContext};

#[allow(dead_code)]
fn kernels(
    cur: &CurrentContext<'_>,
    module: &Module<'_>,
    stream: &Stream<'_>,
) -> Result<Vec<u32>, CudaError> {
    let mut array = cur.storage_array::<u32>(ArrayShape::d2(4, 4))?;
    {
        let mut surface = array.surface()?;
        // SAFETY: compile-pass fixture.
        let store = unsafe { module.function::<(Surface<u32>, u32)>("store")? };
        store.launch(stream, 1, 16, 0, (&mut surface, 7))?;
    }
    {
        let texture = array.texture(&TextureDesc::default())?;
        let mut out = cur.alloc_zeros::<u32>(16)?;
        // SAFETY: compile-pass fixture.
        let sample = unsafe {
            module.function::<(Texture<u32>, oxicuda_driver::launch::Out<u32>)>("sample")?
        };
        sample.launch(stream, 1, 16, 0, (&texture, &mut out))?;
    }
    array.copy_from_host(&[0; 16])?;
    array.to_vec()
}

fn main() {}

// CF38: a surface is only made over an array created for surface load/store
// (`storage_array`): the driver refuses the others, the compiler first.
use oxicuda_driver::array::ArrayShape;
use oxicuda_driver::{CudaError, CurrentContext};

fn store(cur: &CurrentContext<'_>) -> Result<(), CudaError> {
    let mut sampled = cur.array::<f32>(ArrayShape::d2(4, 4))?;
    let _surface = sampled.surface()?;
    Ok(())
}

fn main() {}

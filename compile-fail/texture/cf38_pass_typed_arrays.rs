// CF38 twin: copies of the array's own element type, in and out, from host and
// device memory; a surface over a storage array.
use oxicuda_driver::array::ArrayShape;
use oxicuda_driver::{CudaError, CurrentContext};

#[allow(dead_code)]
fn round_trip(cur: &CurrentContext<'_>) -> Result<Vec<[u8; 4]>, CudaError> {
    let mut rgba = cur.storage_array::<[u8; 4]>(ArrayShape::d2(4, 4))?;
    rgba.copy_from_host(&[[1, 2, 3, 4]; 16])?;
    let mut buffer = cur.alloc_zeros::<[u8; 4]>(16)?;
    rgba.copy_to(&mut buffer)?;
    rgba.copy_from(&buffer)?;
    drop(rgba.surface()?);
    rgba.to_vec()
}

fn main() {}

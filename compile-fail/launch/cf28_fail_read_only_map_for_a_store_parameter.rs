// CF28: a map of shared memory (`&buffer`, a `DeviceSlice`) is read-only: it cannot be
// passed for a parameter through which the kernel may store (`TensorMapOut<L>`).
use oxicuda_driver::launch::Out;
use oxicuda_driver::memory::DeviceBuffer;
use oxicuda_driver::module::Function;
use oxicuda_driver::stream::Stream;
use oxicuda_driver::sys::CUtensorMapDataType as Dt;
use oxicuda_driver::tensor_map::{ReadOnly, TensorKind, TensorLayout, TensorMap, TensorMapOut};

/// The layout the kernel stages: 16 × 16 `f32` tiles.
struct Tile16;
impl TensorLayout for Tile16 {
    const DATA_TYPE: Dt = Dt::CU_TENSOR_MAP_DATA_TYPE_FLOAT32;
    const KIND: TensorKind = TensorKind::Tiled { box_dims: &[16, 16] };
    const ELEMENT_STRIDES: &'static [u32] = &[1, 1];
}

#[allow(dead_code)]
fn go(
    k: &Function<'_, (TensorMapOut<Tile16>, Out<u64>)>,
    s: &Stream<'_>,
    map: &mut TensorMap<'_, ReadOnly, Tile16>,
    out: &mut DeviceBuffer<'_, u64>,
) {
    let _ = k.launch(s, 1, 32, 0, (map, out));
}

fn main() {}

// CF28: the layout is in the type. A kernel declared with a `TensorMapIn<L>` parameter
// stages what one access of `L` writes (a 1 KiB tile here); a map of another layout —
// a 256 × 256 × 2 box of `f64`, 1 MiB per access, rank 3 — is no argument for it.
use oxicuda_driver::launch::Out;
use oxicuda_driver::memory::DeviceBuffer;
use oxicuda_driver::module::Function;
use oxicuda_driver::stream::Stream;
use oxicuda_driver::sys::CUtensorMapDataType as Dt;
use oxicuda_driver::tensor_map::{ReadOnly, TensorKind, TensorLayout, TensorMap, TensorMapIn};

/// The layout the kernel stages: 16 × 16 `f32` tiles.
struct Tile16;
impl TensorLayout for Tile16 {
    const DATA_TYPE: Dt = Dt::CU_TENSOR_MAP_DATA_TYPE_FLOAT32;
    const KIND: TensorKind = TensorKind::Tiled { box_dims: &[16, 16] };
    const ELEMENT_STRIDES: &'static [u32] = &[1, 1];
}

/// Another layout.
struct HugeBox;
impl TensorLayout for HugeBox {
    const DATA_TYPE: Dt = Dt::CU_TENSOR_MAP_DATA_TYPE_FLOAT64;
    const KIND: TensorKind = TensorKind::Tiled { box_dims: &[256, 256, 2] };
    const ELEMENT_STRIDES: &'static [u32] = &[1, 1, 1];
}

#[allow(dead_code)]
fn go(
    k: &Function<'_, (u32, TensorMapIn<Tile16>, Out<u64>)>,
    s: &Stream<'_>,
    huge: &TensorMap<'_, ReadOnly, HugeBox>,
    out: &mut DeviceBuffer<'_, u64>,
) {
    let _ = k.launch(s, 1, 32, 0, (2u32, huge, out));
}

fn main() {}

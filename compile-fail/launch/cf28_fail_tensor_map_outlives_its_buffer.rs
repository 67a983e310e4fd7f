// CF28: a tensor map cannot outlive the device memory it describes — a kernel could
// otherwise make the TMA unit read or write freed memory.
use oxicuda_driver::CurrentContext;
use oxicuda_driver::sys::CUtensorMapDataType as Dt;
use oxicuda_driver::tensor_map::{TensorKind, TensorLayout, TensorMap};

/// The layout the kernel stages: 16 × 16 `f32` tiles.
struct Tile16;
impl TensorLayout for Tile16 {
    const DATA_TYPE: Dt = Dt::CU_TENSOR_MAP_DATA_TYPE_FLOAT32;
    const KIND: TensorKind = TensorKind::Tiled { box_dims: &[16, 16] };
    const ELEMENT_STRIDES: &'static [u32] = &[1, 1];
}

#[allow(dead_code)]
fn go<'c>(cur: &'c CurrentContext<'_>) {
    let map;
    {
        let mut buf = cur.alloc::<f32>(1024).unwrap();
        map = TensorMap::<_, Tile16>::tiled(&mut buf, &[64, 16], &[256]).encode(cur);
    }
    drop(map);
}

fn main() {}

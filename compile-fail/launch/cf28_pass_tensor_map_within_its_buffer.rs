// CF28 twin: a map of the kernel's layout, used while its memory lives — read-write from
// `&mut buffer` for a `TensorMapOut<L>` parameter, read-only from a shared view for a
// `TensorMapIn<L>` one; the dimensions and strides are free.
use oxicuda_driver::CurrentContext;
use oxicuda_driver::launch::Out;
use oxicuda_driver::memory::DeviceBuffer;
use oxicuda_driver::module::Function;
use oxicuda_driver::stream::Stream;
use oxicuda_driver::sys::CUtensorMapDataType as Dt;
use oxicuda_driver::tensor_map::{TensorKind, TensorLayout, TensorMap, TensorMapIn, TensorMapOut};

/// The layout the kernel stages: 16 × 16 `f32` tiles.
struct Tile16;
impl TensorLayout for Tile16 {
    const DATA_TYPE: Dt = Dt::CU_TENSOR_MAP_DATA_TYPE_FLOAT32;
    const KIND: TensorKind = TensorKind::Tiled { box_dims: &[16, 16] };
    const ELEMENT_STRIDES: &'static [u32] = &[1, 1];
}

#[allow(dead_code)]
fn go(
    cur: &CurrentContext<'_>,
    store: &Function<'_, (TensorMapOut<Tile16>, Out<u64>)>,
    load: &Function<'_, (TensorMapIn<Tile16>, Out<u64>)>,
    s: &Stream<'_>,
    out: &mut DeviceBuffer<'_, u64>,
) {
    let mut buf = cur.alloc::<f32>(1024).unwrap();
    if let Ok(mut map) = TensorMap::<_, Tile16>::tiled(&mut buf, &[64, 16], &[256]).encode(cur) {
        let _ = store.launch(s, 1, 32, 0, (&mut map, &mut *out));
        let _ = load.launch(s, 1, 32, 0, (&map, &mut *out));
    }
    let view = buf.as_slice();
    if let Ok(map) = TensorMap::<_, Tile16>::tiled(view, &[32, 8], &[128]).encode(cur) {
        let _ = load.launch(s, 1, 32, 0, (&map, out));
    }
}

fn main() {}

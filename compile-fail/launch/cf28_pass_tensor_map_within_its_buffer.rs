// CF28 twin: a map used while its memory lives — read-write from `&mut buffer` for a
// `TensorMapOut` parameter, read-only from a shared view for a `TensorMapIn` one.
use oxicuda_driver::CurrentContext;
use oxicuda_driver::launch::Out;
use oxicuda_driver::memory::DeviceBuffer;
use oxicuda_driver::module::Function;
use oxicuda_driver::stream::Stream;
use oxicuda_driver::sys::CUtensorMapDataType;
use oxicuda_driver::tensor_map::{TensorMap, TensorMapIn, TensorMapOut};

#[allow(dead_code)]
fn go(
    cur: &CurrentContext<'_>,
    store: &Function<'_, (TensorMapOut, Out<u64>)>,
    load: &Function<'_, (TensorMapIn, Out<u64>)>,
    s: &Stream<'_>,
    out: &mut DeviceBuffer<'_, u64>,
) {
    let f32 = CUtensorMapDataType::CU_TENSOR_MAP_DATA_TYPE_FLOAT32;
    let mut buf = cur.alloc::<f32>(1024).unwrap();
    if let Ok(mut map) =
        TensorMap::tiled(f32, &mut buf, &[64, 16], &[256], &[16, 16], &[1, 1]).encode(cur)
    {
        let _ = store.launch(s, 1, 32, 0, (&mut map, &mut *out));
        let _ = load.launch(s, 1, 32, 0, (&map, &mut *out));
    }
    let view = buf.as_slice();
    if let Ok(map) = TensorMap::tiled(f32, view, &[64, 16], &[256], &[16, 16], &[1, 1]).encode(cur) {
        let _ = load.launch(s, 1, 32, 0, (&map, out));
    }
}

fn main() {}

// CF28: a tensor map cannot outlive the device memory it describes — a kernel could
// otherwise make the TMA unit read or write freed memory.
use oxicuda_driver::CurrentContext;
use oxicuda_driver::sys::CUtensorMapDataType;
use oxicuda_driver::tensor_map::TensorMap;

#[allow(dead_code)]
fn go<'c>(cur: &'c CurrentContext<'_>) {
    let map;
    {
        let mut buf = cur.alloc::<f32>(1024).unwrap();
        map = TensorMap::tiled(
            CUtensorMapDataType::CU_TENSOR_MAP_DATA_TYPE_FLOAT32,
            &mut buf,
            &[64, 16],
            &[256],
            &[16, 16],
            &[1, 1],
        )
        .encode(cur);
    }
    drop(map);
}

fn main() {}

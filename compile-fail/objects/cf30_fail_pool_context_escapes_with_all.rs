// CF30: the contexts `DevicePool::with_all` lends are locked only while its closure
// runs; a reference to one cannot leave it.
use oxicuda_driver::device_pool::{DevicePool, PoolContext};

#[allow(dead_code)]
fn escape(pool: &DevicePool) {
    let mut kept: Option<&PoolContext> = None;
    pool.with_all(|ctxs| kept = Some(ctxs[0])).unwrap();
    let _ = kept;
}

fn main() {}

// CF30, the correct form: the lent contexts are used inside the closure (here, as a
// peer group).
use oxicuda_driver::CudaError;
use oxicuda_driver::device_pool::DevicePool;
use oxicuda_driver::peer::PeerGroup;

#[allow(dead_code)]
fn members(pool: &DevicePool) -> Result<usize, CudaError> {
    pool.with_all(|ctxs| PeerGroup::bind(ctxs.iter().copied(), |g| g.len()))?
}

fn main() {}

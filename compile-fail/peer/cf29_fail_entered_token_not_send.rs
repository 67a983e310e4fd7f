// CF29 (as CF1): an entered member's token is the proof that its context is current
// on this thread; it cannot reach another thread.
use oxicuda_driver::peer::PeerGroup;
use oxicuda_driver::{CudaError, PrimaryContext};

#[allow(dead_code)]
fn cross(ctxs: &[PrimaryContext]) -> Result<(), CudaError> {
    PeerGroup::bind(ctxs, |g| -> Result<(), CudaError> {
        let m = g.member(0).unwrap();
        g.enter(m, |e| {
            std::thread::scope(|s| {
                s.spawn(|| e.member().index());
            });
        })
    })?
}

fn main() {}

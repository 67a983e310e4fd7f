// CF29 (as CF5): a group buffer stays on the thread of its group binding (it
// borrows the group, which is not Sync).
use oxicuda_driver::peer::PeerGroup;
use oxicuda_driver::{CudaError, PrimaryContext};

#[allow(dead_code)]
fn cross(ctxs: &[PrimaryContext]) -> Result<(), CudaError> {
    PeerGroup::bind(ctxs, |g| -> Result<(), CudaError> {
        let m = g.member(0).unwrap();
        let b = g.alloc::<f32>(m, 4)?;
        std::thread::scope(|s| {
            s.spawn(|| drop(b));
        });
        Ok(())
    })?
}

fn main() {}

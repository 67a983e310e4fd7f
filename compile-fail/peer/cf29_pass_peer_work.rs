// CF29, the correct form: buffers of two members, peer access, a kernel of member 0
// reading member 1's memory through a checked view, a peer copy; results leave the
// group as host values.
use oxicuda_driver::launch::{In, Out};
use oxicuda_driver::module::JitOptions;
use oxicuda_driver::peer::PeerGroup;
use oxicuda_driver::sys::CUstream_flags;
use oxicuda_driver::{CudaError, PrimaryContext};

#[allow(dead_code)]
fn work(ctxs: &[PrimaryContext], ptx: &str) -> Result<Vec<f32>, CudaError> {
    PeerGroup::bind(ctxs, |g| -> Result<Vec<f32>, CudaError> {
        let (m0, m1) = (g.member(0).unwrap(), g.member(1).unwrap());
        g.enable_peer_access(m0, m1)?;
        let a = g.alloc_from(m0, &[1.0f32; 4])?;
        let b = g.alloc_from(m1, &[2.0f32; 4])?;
        let mut c = g.alloc::<f32>(m0, 4)?;
        g.enter(m0, |e| -> Result<(), CudaError> {
            let module = e.load_ptx(ptx, &JitOptions::default())?;
            // SAFETY: vector_add reads a and b and writes c below the lengths passed.
            let add = unsafe { module.function::<(In<f32>, In<f32>, Out<f32>)>("vector_add")? };
            let s = e.create_stream(CUstream_flags::CU_STREAM_NON_BLOCKING)?;
            let (va, vb, mut vc) = (a.view(e)?, b.view(e)?, c.view_mut(e)?);
            add.launch(&s, 1, 4, 0, (&va, &vb, &mut vc))
        })??;
        let mut back = g.alloc::<f32>(m1, 4)?;
        back.copy_from_peer(0, &c, ..)?;
        back.to_vec()
    })?
}

fn main() {}

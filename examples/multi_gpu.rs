//! A vector operation split across every device, with peer work in safe code: each
//! device adds its chunk (`c = a + b`), the devices exchange halos (each fetches its
//! neighbours' edge elements with peer copies), and each then adds its right-hand
//! neighbour's chunk to its own (`d = c + c_next`) — reading the neighbour's memory
//! directly when peer access is enabled between the two, else from a peer copy.
//! Everything is checked against the CPU.
//!
//! With no driver chosen and no GPU on the machine it runs on softcuda (its default
//! is two devices; `SOFTCUDA_DEVICES` and `SOFTCUDA_P2P` choose others, e.g.
//! `SOFTCUDA_DEVICES=9.0:1024,9.0:1024,8.0:1024,8.0:1024 SOFTCUDA_P2P=0-1,1-0,1-2,2-3`).
//!
//! `cargo run --example multi_gpu`

#[path = "common/mod.rs"]
mod common;

use oxicuda_driver::device_pool::DevicePool;
use oxicuda_driver::launch::{In, Out};
use oxicuda_driver::module::JitOptions;
use oxicuda_driver::peer::{Entered, PeerBuffer, PeerGroup};
use oxicuda_driver::sys::{CUresult, CUstream_flags};
use oxicuda_driver::{CudaError, Driver};
use std::process::ExitCode;

const PTX: &str = include_str!("../kernels/slices.ptx");
const CHUNK: usize = 1 << 16;

type Add = (In<f32>, In<f32>, Out<f32>);

fn main() -> ExitCode {
    common::main_with(|driver, _soft| run(driver))
}

/// `c = a + b` on the entered member, through views the group checked.
fn add<'g>(
    e: &Entered<'g, '_>,
    a: &PeerBuffer<'g, f32>,
    b: &PeerBuffer<'g, f32>,
    c: &mut PeerBuffer<'g, f32>,
) -> Result<(), CudaError> {
    let module = e.load_ptx(PTX, &JitOptions::default())?;
    // SAFETY: kernels/slices.cu's vector_add reads `a` and `b` and writes `c`, each
    // only below the length the launch passes with it — whatever views it is given.
    let add = unsafe { module.function::<Add>("vector_add")? };
    let stream = e.create_stream(CUstream_flags::CU_STREAM_NON_BLOCKING)?;
    let (a, b, mut c) = (a.view(e)?, b.view(e)?, c.view_mut(e)?);
    add.launch(
        &stream,
        (c.len() as u32).div_ceil(256),
        256,
        0,
        (&a, &b, &mut c),
    )
}

fn mismatch(what: &str) -> CudaError {
    eprintln!("{what} differs from the CPU result");
    CudaError::Driver(CUresult::CUDA_ERROR_UNKNOWN)
}

fn run(driver: &'static Driver) -> Result<(), CudaError> {
    // One context per device (the primary ones), lent all at once to a peer group.
    let pool = DevicePool::new(driver)?;
    let n = pool.len();
    println!(
        "{n} devices; vector of {} floats, {CHUNK} per device",
        n * CHUNK
    );
    let a: Vec<f32> = (0..n * CHUNK).map(|i| i as f32).collect();
    let b: Vec<f32> = (0..n * CHUNK).map(|i| (i % 7) as f32).collect();
    let c: Vec<f32> = a.iter().zip(&b).map(|(x, y)| x + y).collect();

    pool.with_all(|contexts| {
        PeerGroup::bind(contexts.iter().copied(), |g| -> Result<(), CudaError> {
            let pairs = g.enable_all_peer_access()?;
            println!("peer access enabled for {pairs} ordered device pairs");
            let members: Vec<_> = g.members().collect();
            // Each device's chunk of a, b, and room for c and d.
            let mut chunks = Vec::with_capacity(n);
            for &m in &members {
                let r = m.index() * CHUNK..(m.index() + 1) * CHUNK;
                let da = g.alloc_from(m, &a[r.clone()])?;
                let db = g.alloc_from(m, &b[r])?;
                let dc = g.alloc::<f32>(m, CHUNK)?;
                chunks.push((da, db, dc));
            }
            // 1. c = a + b, each device on its own chunk.
            for (&m, (da, db, dc)) in members.iter().zip(chunks.iter_mut()) {
                g.enter(m, |e| add(e, da, db, dc))??;
            }
            // 2. Halo exchange: [left neighbour's last c, right neighbour's first c].
            for &m in &members {
                let i = m.index();
                let mut halo = g.alloc::<f32>(m, 2)?;
                halo.copy_from_host(&[f32::NAN; 2])?;
                if i > 0 {
                    halo.copy_from_peer(0, &chunks[i - 1].2, CHUNK - 1..)?;
                }
                if i + 1 < n {
                    halo.copy_from_peer(1, &chunks[i + 1].2, ..1)?;
                }
                let got = halo.to_vec()?;
                let left_ok = i == 0 || got[0] == c[i * CHUNK - 1];
                let right_ok = i + 1 == n || got[1] == c[(i + 1) * CHUNK];
                if !(left_ok && right_ok) {
                    return Err(mismatch(&format!("device {i}'s halo")));
                }
            }
            println!(
                "halos exchanged between {} neighbouring pairs",
                n.saturating_sub(1) * 2
            );
            // 3. d = c + c_next, reading the neighbour's chunk in place where peer access
            //    allows, else from a peer copy.
            for &m in &members {
                let i = m.index();
                let next = members[(i + 1) % n];
                let mut d = g.alloc::<f32>(m, CHUNK)?;
                let neighbour = &chunks[next.index()].2;
                let direct = g.peer_access(m, next);
                if direct {
                    g.enter(m, |e| add(e, &chunks[i].2, neighbour, &mut d))??;
                } else {
                    let mut copy = g.alloc::<f32>(m, CHUNK)?;
                    copy.copy_from_peer(0, neighbour, ..)?;
                    g.enter(m, |e| add(e, &chunks[i].2, &copy, &mut d))??;
                }
                println!(
                    "device {i} added device {}'s chunk {}",
                    next.index(),
                    if direct {
                        "in place, through peer access"
                    } else {
                        "from a peer copy (no peer access)"
                    }
                );
                let got = d.to_vec()?;
                let j = next.index();
                let ok = (0..CHUNK).all(|k| got[k] == c[i * CHUNK + k] + c[j * CHUNK + k]);
                if !ok {
                    return Err(mismatch(&format!("device {i}'s d")));
                }
            }
            // The whole c, gathered back.
            let mut whole = Vec::with_capacity(n * CHUNK);
            for (_, _, dc) in &chunks {
                whole.extend(dc.to_vec()?);
            }
            if whole != c {
                return Err(mismatch("c"));
            }
            Ok(())
        })
    })???;
    println!("multi_gpu: all results equal to the CPU's");
    Ok(())
}

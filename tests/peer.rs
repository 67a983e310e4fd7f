//! Peer work in safe code (`oxicuda_driver::peer`) on softcuda with 4 devices and an
//! asymmetric peer topology: group binding rules, peer access, peer copies (with and
//! without access), kernels reading and writing a peer's memory, waiting at the end
//! of an `enter`, and everything released after each test.
//!
//! softcuda only: it configures softcuda's devices and peer links, and counts its
//! objects.
#![cfg(not(feature = "gpu-tests"))]

mod common;

use common::{SoftDevices, driver, no_leaks};
use oxicuda_driver::graph::CaptureMode;
use oxicuda_driver::launch::{In, Out};
use oxicuda_driver::module::JitOptions;
use oxicuda_driver::peer::PeerGroup;
use oxicuda_driver::sys::{CUctx_flags, CUresult, CUstream_flags};
use oxicuda_driver::{Context, CudaError, Driver, PrimaryContext};

const SLICES: &str = include_str!("../kernels/slices.ptx");

/// Directed links: 0⇄1, 1→2, 2→3 (3 reaches nobody; nobody reaches 0 but 1).
const LINKS: [(usize, usize); 4] = [(0, 1), (1, 0), (1, 2), (2, 3)];

/// softcuda with 4 devices and [`LINKS`] while alive.
struct Topology(#[allow(dead_code)] SoftDevices);

impl Topology {
    fn four() -> Topology {
        let devices = SoftDevices::configure(
            (0..4)
                .map(|i| softcuda::control::Profile::new(i, 8, 0, 256))
                .collect(),
        );
        softcuda::control::set_peer_links(Some(LINKS.to_vec())).unwrap();
        Topology(devices)
    }
}

impl Drop for Topology {
    fn drop(&mut self) {
        softcuda::control::set_peer_links(None).unwrap();
    }
}

fn primaries(d: &'static Driver) -> Vec<PrimaryContext> {
    (0..4)
        .map(|i| PrimaryContext::retain(&d.device(i).unwrap()).unwrap())
        .collect()
}

#[test]
fn the_matrix_follows_the_topology_and_only_linked_pairs_are_enabled() {
    let (d, _g) = driver();
    let _t = Topology::four();
    let ctxs = primaries(d);
    PeerGroup::bind(&ctxs, |g| {
        assert_eq!(g.len(), 4);
        let m: Vec<_> = g.members().collect();
        for a in 0..4 {
            for o in 0..4 {
                let linked = a == o || LINKS.contains(&(a, o));
                assert_eq!(g.can_access_peer(m[a], m[o]).unwrap(), linked, "{a}->{o}");
                assert_eq!(
                    g.peer_access(m[a], m[o]),
                    a == o,
                    "{a}->{o} before enabling"
                );
            }
        }
        assert_eq!(g.enable_all_peer_access().unwrap(), LINKS.len());
        for a in 0..4 {
            for o in 0..4 {
                let linked = a == o || LINKS.contains(&(a, o));
                assert_eq!(g.peer_access(m[a], m[o]), linked, "{a}->{o} after enabling");
            }
        }
        // No link: the driver's refusal, typed.
        let e = g.enable_peer_access(m[3], m[2]).unwrap_err();
        assert_eq!(
            e.code(),
            Some(CUresult::CUDA_ERROR_PEER_ACCESS_UNSUPPORTED),
            "{e}"
        );
        assert!(!g.peer_access(m[3], m[2]));
        // Enabling again is no error.
        g.enable_peer_access(m[0], m[1]).unwrap();
        assert_eq!(g.device(m[2]).ordinal(), 2);
    })
    .unwrap();
    drop(ctxs);
    no_leaks();
}

#[test]
fn peer_copies_move_ranges_between_every_pair_with_or_without_access() {
    let (d, _g) = driver();
    let _t = Topology::four();
    let ctxs = primaries(d);
    PeerGroup::bind(&ctxs, |g| {
        let m: Vec<_> = g.members().collect();
        let bufs: Vec<_> = m
            .iter()
            .map(|&mi| {
                let data: Vec<u32> = (0..64).map(|k| mi.index() as u32 * 1000 + k).collect();
                g.alloc_from(mi, &data).unwrap()
            })
            .collect();
        let mut bufs = bufs;
        // 3 -> 0 has no link at all: the driver stages the copy.
        let (low, high) = bufs.split_at_mut(3);
        low[0].copy_from_peer(0, &high[0], 10..20).unwrap();
        let got = low[0].to_vec().unwrap();
        assert_eq!(got[..10], (3010..3020).collect::<Vec<_>>()[..]);
        assert_eq!(got[10..], (10..64).collect::<Vec<_>>()[..]);
        // A ranged copy that does not fit either side is refused, nothing moves.
        let (a, b) = bufs.split_at_mut(1);
        assert!(matches!(
            b[0].copy_from_peer(60, &a[0], 0..10),
            Err(CudaError::OutOfRange { .. })
        ));
        assert!(matches!(
            b[0].copy_from_peer(0, &a[0], 60..70),
            Err(CudaError::OutOfRange { .. })
        ));
        assert!(matches!(
            b[0].copy_from_peer(usize::MAX, &a[0], 0..1),
            Err(CudaError::OutOfRange { .. })
        ));
        assert_eq!(b[0].to_vec().unwrap(), (1000..1064).collect::<Vec<u32>>());
        // Whole buffer 1 -> 2, and the host view of it.
        let (x, y) = bufs.split_at_mut(2);
        y[0].copy_from_peer(0, &x[1], ..).unwrap();
        assert_eq!(y[0].to_vec().unwrap(), (1000..1064).collect::<Vec<u32>>());
    })
    .unwrap();
    drop(ctxs);
    no_leaks();
}

type Add = (In<f32>, In<f32>, Out<f32>);

#[test]
fn kernels_read_and_write_a_peer_s_memory_only_with_access() {
    let (d, _g) = driver();
    let _t = Topology::four();
    let ctxs = primaries(d);
    const N: usize = 300;
    let xs: Vec<f32> = (0..N).map(|i| i as f32).collect();
    let ys: Vec<f32> = (0..N).map(|i| 0.5 * i as f32).collect();
    PeerGroup::bind(&ctxs, |g| {
        let m: Vec<_> = g.members().collect();
        assert_eq!(g.enable_all_peer_access().unwrap(), 4);
        let a0 = g.alloc_from(m[0], &xs).unwrap();
        let b1 = g.alloc_from(m[1], &ys).unwrap();
        let b3 = g.alloc_from(m[3], &ys).unwrap();
        let mut c0 = g.alloc::<f32>(m[0], N).unwrap();
        let mut c2 = g.alloc::<f32>(m[2], N).unwrap();
        // Member 0 reads member 1's memory (0 -> 1 enabled) and writes its own.
        g.enter(m[0], |e| -> Result<(), CudaError> {
            let module = e.load_ptx(SLICES, &JitOptions::default())?;
            // SAFETY: kernels/slices.cu's vector_add reads a and b and writes c, each
            // only below the length passed with it.
            let add = unsafe { module.function::<Add>("vector_add")? };
            let s = e.create_stream(CUstream_flags::CU_STREAM_NON_BLOCKING)?;
            // Member 3's memory: no access from 0, refused before any launch.
            match b3.view(e) {
                Err(CudaError::PeerAccessNotEnabled { accessor, owner }) => {
                    assert_eq!((accessor, owner), (0, 3));
                }
                other => panic!("expected PeerAccessNotEnabled, got {:?}", other.err()),
            }
            let (a, b, mut c) = (a0.view(e)?, b1.view(e)?, c0.view_mut(e)?);
            add.launch(&s, (N as u32).div_ceil(128), 128, 0, (&a, &b, &mut c))?;
            Ok(())
        })
        .unwrap()
        .unwrap();
        // The enter waited: the result is there.
        let want: Vec<f32> = (0..N).map(|i| xs[i] + ys[i]).collect();
        assert_eq!(c0.to_vec().unwrap(), want);
        // Member 1 writes member 2's memory (1 -> 2 enabled) from its own and 0's.
        g.enter(m[1], |e| -> Result<(), CudaError> {
            let module = e.load_ptx(SLICES, &JitOptions::default())?;
            // SAFETY: as above.
            let add = unsafe { module.function::<Add>("vector_add")? };
            let s = e.create_stream(CUstream_flags::CU_STREAM_NON_BLOCKING)?;
            let (a, b, mut c) = (a0.view(e)?, b1.view(e)?, c2.view_mut(e)?);
            add.launch(&s, (N as u32).div_ceil(128), 128, 0, (&a, &b, &mut c))?;
            Ok(())
        })
        .unwrap()
        .unwrap();
        assert_eq!(c2.to_vec().unwrap(), want);
        // Member 2 has access to 3 but not to 0 or 1.
        g.enter(m[2], |e| {
            assert!(matches!(
                a0.view(e),
                Err(CudaError::PeerAccessNotEnabled {
                    accessor: 2,
                    owner: 0
                })
            ));
            assert!(b3.view(e).is_ok());
        })
        .unwrap();
    })
    .unwrap();
    drop(ctxs);
    no_leaks();
}

#[test]
fn an_async_peer_copy_is_finished_when_the_enter_returns() {
    let (d, _g) = driver();
    let _t = Topology::four();
    let ctxs = primaries(d);
    const N: usize = 1 << 16;
    let data: Vec<u64> = (0..N as u64).collect();
    PeerGroup::bind(&ctxs, |g| {
        let m: Vec<_> = g.members().collect();
        let src = g.alloc_from(m[2], &data).unwrap();
        let mut dst = g.alloc::<u64>(m[0], N).unwrap();
        dst.copy_from_host(&vec![0; N]).unwrap();
        g.enter(m[0], |e| {
            let s = e
                .create_stream(CUstream_flags::CU_STREAM_NON_BLOCKING)
                .unwrap();
            dst.copy_from_peer_async(0, &src, .., &s, e).unwrap();
            // A buffer dropped inside an enter waits for the entered context first.
            let scratch = g.alloc_from(m[3], &data).unwrap();
            dst.copy_from_peer_async(0, &scratch, 0..1, &s, e).unwrap();
            drop(scratch);
        })
        .unwrap();
        let got = dst.to_vec().unwrap();
        assert_eq!(got, data);
    })
    .unwrap();
    drop(ctxs);
    no_leaks();
}

#[test]
fn group_bindings_refuse_what_they_cannot_keep() {
    let (d, _g) = driver();
    let _t = Topology::four();
    let ctxs = primaries(d);
    // None at all.
    let none: [&PrimaryContext; 0] = [];
    assert!(matches!(
        PeerGroup::bind(none, |_| ()),
        Err(CudaError::InvalidArgument {
            parameter: "members",
            ..
        })
    ));
    // Two contexts on one device.
    let created = Context::new(&d.device(0).unwrap(), CUctx_flags::empty()).unwrap();
    let members: Vec<oxicuda_driver::peer::PeerMember<'_>> =
        vec![(&ctxs[0]).into(), (&created).into()];
    assert!(matches!(
        PeerGroup::bind(members, |_| ()),
        Err(CudaError::InvalidArgument {
            parameter: "members",
            ..
        })
    ));
    // Inside a binding: a group is a root binding.
    created
        .bind(|_| {
            assert!(matches!(
                PeerGroup::bind(&ctxs, |_| ()),
                Err(CudaError::ContextAlreadyBound)
            ));
        })
        .unwrap();
    PeerGroup::bind(&ctxs, |g| {
        let m: Vec<_> = g.members().collect();
        // A root binding inside the group, and a second enter, are refused.
        assert!(matches!(
            created.bind(|_| ()),
            Err(CudaError::ContextAlreadyBound)
        ));
        g.enter(m[0], |e| {
            assert!(matches!(
                g.enter(m[1], |_| ()),
                Err(CudaError::ContextAlreadyBound)
            ));
            // Peer access cannot be taken away while a group lives.
            e.push(&created, |inner| {
                let other = Context::new(&inner.device().unwrap(), CUctx_flags::empty()).unwrap();
                assert!(matches!(
                    inner.disable_peer_access(&other),
                    Err(CudaError::PeerGroupsLive)
                ));
            })
            .unwrap();
        })
        .unwrap();
        // After an enter, another one works.
        g.enter(m[1], |e| assert_eq!(e.member().index(), 1))
            .unwrap();
    })
    .unwrap();
    // After the group: nothing is bound any more.
    created.bind(|_| ()).unwrap();
    drop(created);
    drop(ctxs);
    no_leaks();
}

#[test]
fn a_panic_inside_an_enter_unwinds_cleanly() {
    let (d, _g) = driver();
    let _t = Topology::four();
    let ctxs = primaries(d);
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        PeerGroup::bind(&ctxs, |g| {
            let m = g.member(1).unwrap();
            let _b = g.alloc::<f32>(m, 16).unwrap();
            g.enter(m, |_| panic!("inside an enter")).unwrap();
        })
    }));
    assert!(r.is_err());
    // The thread is free again, and the group can be bound anew.
    PeerGroup::bind(&ctxs, |g| g.enter(g.member(0).unwrap(), |_| ()).unwrap()).unwrap();
    drop(ctxs);
    no_leaks();
}

#[test]
fn a_sticky_error_in_an_enter_poisons_that_member_only() {
    let (d, _g) = driver();
    let _t = Topology::four();
    let ctxs = primaries(d);
    PeerGroup::bind(&ctxs, |g| {
        let m: Vec<_> = g.members().collect();
        let r = g.enter(m[2], |e| -> Result<(), CudaError> {
            let module = common::fault_module(e)?;
            let fault = common::fault_kernel(&module)?;
            let s = e.create_stream(CUstream_flags::CU_STREAM_NON_BLOCKING)?;
            fault.launch(&s, 1, 1, 0, (0u64,))?;
            s.synchronize()
        });
        // The wait that ends the enter reports the sticky error (the closure's own
        // error is dropped with its result).
        let e = r.expect_err("the enter's wait reports the sticky error");
        assert!(e.is_sticky(), "{e}");
        assert!(matches!(
            g.enter(m[2], |_| ()),
            Err(CudaError::ContextPoisoned { .. })
        ));
        assert!(matches!(
            g.alloc::<u8>(m[2], 1),
            Err(CudaError::ContextPoisoned { .. })
        ));
        // The others still work.
        let b = g.alloc_from(m[1], &[1u8, 2, 3]).unwrap();
        assert_eq!(b.to_vec().unwrap(), vec![1, 2, 3]);
    })
    .unwrap();
    assert!(ctxs[2].sticky_error().is_some());
    assert!(matches!(
        PeerGroup::bind(&ctxs, |_| ()),
        Err(CudaError::ContextPoisoned { .. })
    ));
    let mut ctxs = ctxs;
    // SAFETY: nothing else uses device 2's primary context: this test retains it
    // here only, and everything made with it is gone.
    unsafe { ctxs[2].reset().unwrap() };
    drop(ctxs);
    no_leaks();
}

// Review findings, kept as regressions.

#[test]
fn a_group_buffer_dropped_inside_a_capture_is_freed_when_the_enter_ends() {
    let (d, _g) = driver();
    let _t = Topology::four();
    let ctxs = primaries(d);
    let base = softcuda::control::live_counts().allocations;
    PeerGroup::bind(&ctxs, |g| {
        let m = g.member(0).unwrap();
        let b = g.alloc::<u32>(m, 16).unwrap();
        g.enter(m, |e| {
            let mut s = e
                .create_stream(CUstream_flags::CU_STREAM_NON_BLOCKING)
                .unwrap();
            // A context cannot be waited for while it captures: the free waits for
            // the enter's end instead of failing (or aborting) here.
            let _graph = s
                .capture(CaptureMode::Relaxed, move |_| {
                    drop(b);
                    Ok(())
                })
                .unwrap();
            assert_eq!(softcuda::control::live_counts().allocations, base + 1);
        })
        .unwrap();
        assert_eq!(softcuda::control::live_counts().allocations, base);
    })
    .unwrap();
    drop(ctxs);
    no_leaks();
}

#[test]
fn an_enter_waits_out_a_capture_on_another_thread() {
    let (d, _g) = driver();
    let _t = Topology::four();
    let ctxs = primaries(d);
    let started = std::sync::Barrier::new(2);
    std::thread::scope(|sc| {
        sc.spawn(|| {
            let p0 = PrimaryContext::retain(&d.device(0).unwrap()).unwrap();
            p0.bind(|cur| {
                let mut s = cur
                    .create_stream(CUstream_flags::CU_STREAM_NON_BLOCKING)
                    .unwrap();
                let captured = s.capture(CaptureMode::Relaxed, |_| {
                    started.wait();
                    std::thread::sleep(std::time::Duration::from_millis(100));
                    Ok(())
                });
                // The other thread's attempt to wait for the context meanwhile may
                // invalidate the capture (as CUDA does): a typed error here.
                if let Err(e) = captured {
                    assert_eq!(
                        e.code(),
                        Some(CUresult::CUDA_ERROR_STREAM_CAPTURE_INVALIDATED),
                        "{e}"
                    );
                }
            })
            .unwrap();
        });
        started.wait();
        // Device 0's primary context is capturing on the other thread while this
        // enter ends: its wait is retried until the capture is over.
        PeerGroup::bind(&ctxs, |g| g.enter(g.member(0).unwrap(), |_| ()))
            .unwrap()
            .unwrap();
    });
    drop(ctxs);
    no_leaks();
}

#[test]
fn a_sticky_error_in_an_enter_still_frees_a_healthy_member_s_buffer() {
    let (d, _g) = driver();
    let _t = Topology::four();
    let ctxs = primaries(d);
    let base = softcuda::control::live_counts().allocations;
    PeerGroup::bind(&ctxs, |g| {
        let m: Vec<_> = g.members().collect();
        let b1 = g.alloc::<u32>(m[1], 16).unwrap();
        let r = g.enter(m[2], |e| -> Result<(), CudaError> {
            let module = common::fault_module(e)?;
            let fault = common::fault_kernel(&module)?;
            let s = e.create_stream(CUstream_flags::CU_STREAM_NON_BLOCKING)?;
            fault.launch(&s, 1, 1, 0, (0u64,))?;
            let _ = s.synchronize();
            drop(b1); // member 1 is healthy
            Ok(())
        });
        assert!(r.unwrap_err().is_sticky());
    })
    .unwrap();
    assert_eq!(softcuda::control::live_counts().allocations, base);
    let mut ctxs = ctxs;
    // SAFETY: nothing else uses device 2's primary context: this test retains it
    // here only, and everything made with it is gone.
    unsafe { ctxs[2].reset().unwrap() };
    drop(ctxs);
    no_leaks();
}

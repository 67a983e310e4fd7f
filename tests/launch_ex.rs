//! Extended launch through the safe layer (`oxicuda_driver::launch_config`), on
//! softcuda: a cluster launch on device 0 (compute capability 9.0) whose kernel
//! reports its cluster registers; the same refused on device 1 (8.0) before the
//! driver is called; each validation refusal; a cooperative reduction with
//! `this_grid().sync()`; a cooperative grid too large to be resident; attributes
//! reaching the driver; cluster occupancy. No live object is left behind.

mod common;

use common::{ON_GPU, driver, no_leaks, on_device0};
use oxicuda_driver::CudaError;
use oxicuda_driver::launch::{In, Out};
use oxicuda_driver::launch_config::{ClusterScheduling, LaunchConfig, MemSyncDomain};
use oxicuda_driver::module::JitOptions;
use oxicuda_driver::sys::{CUctx_flags, CUstream_flags};

const CLUSTER: &str = include_str!("../kernels/cluster.ptx");
const COOP: &str = include_str!("../kernels/cooperative.ptx");
const SLICES: &str = include_str!("../kernels/slices.ptx");

#[test]
fn a_cluster_launch_on_9_0_reports_each_blocks_cluster() {
    on_device0(|cur| -> Result<(), CudaError> {
        let module = cur.load_ptx(CLUSTER, &JitOptions::default())?;
        // SAFETY: kernels/cluster.cu: cluster_info writes `out` and `arrived` only
        // below their lengths.
        let k = unsafe { module.function::<(Out<u32>, Out<u32>)>("cluster_info")? };
        let stream = cur.create_stream(CUstream_flags::CU_STREAM_NON_BLOCKING)?;
        let (grid, c) = (8u32, 4u32);
        let mut out = cur.alloc::<u32>(grid as usize * 8)?;
        let mut arrived = cur.alloc::<u32>((grid / c) as usize)?;
        arrived.fill(0)?;
        let cfg = LaunchConfig::new(grid, 64)
            .cluster(c)
            .cluster_scheduling(ClusterScheduling::Spread);
        k.launch_with(&stream, &cfg, (&mut out, &mut arrived))?;
        stream.synchronize()?;
        let v = out.to_vec()?;
        for b in 0..grid {
            let row = &v[(b * 8) as usize..(b * 8 + 8) as usize];
            assert_eq!(
                row,
                [b / c, grid / c, b % c, c, b % c, c, 1, c],
                "block {b}"
            );
        }
        if !ON_GPU {
            let rec = softcuda::api::launch_ex::last_launch().unwrap();
            assert_eq!(rec.cluster, Some([c, 1, 1]));
            assert_eq!(rec.cluster_scheduling_policy, Some(1));
        }
        Ok(())
    });
}

#[test]
fn a_cluster_on_8_0_is_refused_before_the_driver_is_called() {
    let (d, _g) = driver();
    let dev = common::second_device(d);
    let ctx = oxicuda_driver::Context::new(&dev, CUctx_flags::empty()).unwrap();
    ctx.bind(|cur| -> Result<(), CudaError> {
        let module = cur.load_ptx(SLICES, &JitOptions::default())?;
        // SAFETY: kernels/slices.cu: vector_add stays below every slice's length.
        let k = unsafe { module.function::<(In<f32>, In<f32>, Out<f32>)>("vector_add")? };
        let stream = cur.create_stream(CUstream_flags::CU_STREAM_NON_BLOCKING)?;
        let (a, b) = (cur.alloc::<f32>(64)?, cur.alloc::<f32>(64)?);
        let mut c = cur.alloc::<f32>(64)?;
        let (major, _) = cur.device()?.compute_capability()?;
        if ON_GPU && major >= 9 {
            // The GPU suite on a single 9.0+ device: the cluster launch is allowed.
            k.launch_with(
                &stream,
                &LaunchConfig::new(4, 16).cluster(2),
                (&a, &b, &mut c),
            )?;
            return stream.synchronize();
        }
        softcuda::control::log_calls(true);
        let r = k.launch_with(
            &stream,
            &LaunchConfig::new(4, 16).cluster(2),
            (&a, &b, &mut c),
        );
        let r2 = k.launch_with(
            &stream,
            &LaunchConfig::new(4, 16).programmatic_serialization(true),
            (&a, &b, &mut c),
        );
        let log = softcuda::control::call_log();
        softcuda::control::log_calls(false);
        match r {
            Err(CudaError::InvalidLaunch {
                parameter: "cluster",
                rule,
            }) => {
                assert!(rule.contains("9.0") && rule.contains("8.0"), "{rule}")
            }
            other => panic!("{other:?}"),
        }
        assert!(
            matches!(
                r2,
                Err(CudaError::InvalidLaunch {
                    parameter: "programmatic_serialization",
                    ..
                })
            ),
            "{r2:?}"
        );
        assert!(
            !log.iter().any(|l| l.contains("cuLaunchKernelEx")),
            "the driver was called: {log:?}"
        );
        // Plain attributes are fine on 8.0.
        k.launch_with(
            &stream,
            &LaunchConfig::new(4, 16)
                .priority(-2)
                .mem_sync_domain(MemSyncDomain::Remote),
            (&a, &b, &mut c),
        )?;
        stream.synchronize()?;
        Ok(())
    })
    .unwrap()
    .unwrap();
    drop(ctx);
    no_leaks();
}

#[test]
fn each_validation_rule_is_a_typed_error() {
    on_device0(|cur| -> Result<(), CudaError> {
        let module = cur.load_ptx(SLICES, &JitOptions::default())?;
        // SAFETY: kernels/slices.cu: vector_add stays below every slice's length.
        let mut k = unsafe { module.function::<(In<f32>, In<f32>, Out<f32>)>("vector_add")? };
        let stream = cur.create_stream(CUstream_flags::CU_STREAM_NON_BLOCKING)?;
        let (a, b) = (cur.alloc::<f32>(64)?, cur.alloc::<f32>(64)?);
        let mut c = cur.alloc::<f32>(64)?;
        let refused = [
            (LaunchConfig::new((0, 1, 1), 32), "grid", "at least 1"),
            (LaunchConfig::new(4, (32, 0, 1)), "block", "at least 1"),
            (LaunchConfig::new(6, 32).cluster(4), "cluster", "divide"),
            (
                LaunchConfig::new((8, 3), 32).cluster((2, 2)),
                "cluster",
                "divide",
            ),
            (
                LaunchConfig::new(8, 32).cluster((0, 1, 1)),
                "cluster",
                "at least 1",
            ),
            (
                LaunchConfig::new(16, 32).cluster(16),
                "cluster",
                "at most 8",
            ),
            (
                LaunchConfig::new(4, 32).mem_sync_domain_map(0, 4),
                "mem_sync_domain_map",
                "below",
            ),
        ];
        for (cfg, parameter, words) in refused {
            match k.launch_with(&stream, &cfg, (&a, &b, &mut c)) {
                Err(CudaError::InvalidLaunch { parameter: p, rule }) => {
                    assert_eq!(p, parameter, "{cfg:?}");
                    assert!(rule.contains(words), "{rule}");
                }
                other => panic!("{cfg:?}: {other:?}"),
            }
        }
        // Non-portable sizes once allowed: 16 runs, 32 is still refused.
        assert_eq!(k.max_cluster_size()?, 8);
        k.set_non_portable_cluster_size_allowed(true)?;
        assert_eq!(k.max_cluster_size()?, 16);
        k.launch_with(
            &stream,
            &LaunchConfig::new(16, 32).cluster(16),
            (&a, &b, &mut c),
        )?;
        match k.launch_with(
            &stream,
            &LaunchConfig::new(32, 32).cluster(32),
            (&a, &b, &mut c),
        ) {
            Err(CudaError::InvalidLaunch {
                parameter: "cluster",
                rule,
            }) => {
                assert!(rule.contains("at most 16"), "{rule}")
            }
            other => panic!("{other:?}"),
        }
        stream.synchronize()?;
        Ok(())
    });
}

#[test]
fn every_attribute_set_reaches_the_driver() {
    on_device0(|cur| -> Result<(), CudaError> {
        let module = cur.load_ptx(SLICES, &JitOptions::default())?;
        // SAFETY: kernels/slices.cu: vector_add stays below every slice's length.
        let k = unsafe { module.function::<(In<f32>, In<f32>, Out<f32>)>("vector_add")? };
        let stream = cur.create_stream(CUstream_flags::CU_STREAM_NON_BLOCKING)?;
        let a = cur.alloc_from(&[1.0f32; 64])?;
        let b = cur.alloc_from(&[2.0f32; 64])?;
        let mut c = cur.alloc::<f32>(64)?;
        let cfg = LaunchConfig::new(4, 16)
            .cluster(2)
            .priority(-3)
            .programmatic_serialization(true)
            .mem_sync_domain(MemSyncDomain::Remote)
            .mem_sync_domain_map(0, 1)
            .cluster_scheduling(ClusterScheduling::LoadBalancing)
            .cooperative(true);
        k.launch_with(&stream, &cfg, (&a, &b, &mut c))?;
        stream.synchronize()?;
        assert_eq!(c.to_vec()?, vec![3.0f32; 64]);
        if !ON_GPU {
            let r = softcuda::api::launch_ex::last_launch().unwrap();
            assert_eq!(r.cluster, Some([2, 1, 1]));
            assert!(r.cooperative);
            assert_eq!(r.priority, Some(-3));
            assert_eq!(r.programmatic_serialization, Some(true));
            assert_eq!(r.mem_sync_domain, Some(1));
            assert_eq!(r.mem_sync_domain_map, Some((0, 1)));
            assert_eq!(r.cluster_scheduling_policy, Some(2));
        }
        Ok(())
    });
}

fn input(n: usize) -> Vec<u32> {
    (0..n as u32).map(|i| (i * 7) % 1000).collect()
}

#[test]
fn a_cooperative_reduce_synchronises_the_grid() {
    on_device0(|cur| -> Result<(), CudaError> {
        let module = cur.load_ptx(COOP, &JitOptions::default())?;
        // SAFETY: kernels/cooperative.cu: grid_reduce reads `in` and writes the
        // others only below their lengths (it returns at once if they are short).
        let k =
            unsafe { module.function::<(In<u32>, Out<u32>, Out<u64>, Out<u32>)>("grid_reduce")? };
        let stream = cur.create_stream(CUstream_flags::CU_STREAM_NON_BLOCKING)?;
        for (grid, n) in [(8u32, 20_000usize), (3, 100)] {
            let data = input(n);
            let din = cur.alloc_from(&data)?;
            let mut partial = cur.alloc::<u32>(grid as usize)?;
            partial.fill(0)?;
            let mut total = cur.alloc::<u64>(1)?;
            let mut seen = cur.alloc::<u32>(1)?;
            seen.fill(0)?;
            k.launch_cooperative(
                &stream,
                grid,
                256,
                0,
                (&din, &mut partial, &mut total, &mut seen),
            )?;
            stream.synchronize()?;
            assert_eq!(
                total.to_vec()?,
                [data.iter().map(|&x| u64::from(x)).sum::<u64>()]
            );
            assert_eq!(seen.to_vec()?, [grid], "every block saw every partial sum");
        }
        Ok(())
    });
}

#[test]
fn a_cooperative_grid_that_cannot_be_resident_is_refused() {
    on_device0(|cur| -> Result<(), CudaError> {
        let module = cur.load_ptx(COOP, &JitOptions::default())?;
        // SAFETY: as in a_cooperative_reduce_synchronises_the_grid.
        let k =
            unsafe { module.function::<(In<u32>, Out<u32>, Out<u64>, Out<u32>)>("grid_reduce")? };
        let stream = cur.create_stream(CUstream_flags::CU_STREAM_NON_BLOCKING)?;
        let per_sm = k.max_active_blocks_per_multiprocessor(256, 0)?;
        let sms = cur.device()?.compute()?.multiprocessors;
        let max = u64::from(per_sm) * u64::from(sms);
        let din = cur.alloc_from(&[1u32; 16])?;
        let mut partial = cur.alloc::<u32>(max as usize + 1)?;
        let mut total = cur.alloc::<u64>(1)?;
        let mut seen = cur.alloc::<u32>(1)?;
        seen.fill(0)?;
        let r = k.launch_cooperative(
            &stream,
            max as u32 + 1,
            256,
            0,
            (&din, &mut partial, &mut total, &mut seen),
        );
        assert_eq!(
            r,
            Err(CudaError::CooperativeGridTooLarge {
                blocks: max + 1,
                max
            })
        );
        stream.synchronize()?;
        assert_eq!(seen.to_vec()?, [0], "nothing ran");
        Ok(())
    });
}

#[test]
fn cluster_occupancy_queries() {
    on_device0(|cur| -> Result<(), CudaError> {
        let module = cur.load_ptx(CLUSTER, &JitOptions::default())?;
        // SAFETY: as in a_cluster_launch_on_9_0_reports_each_blocks_cluster.
        let mut k = unsafe { module.function::<(Out<u32>, Out<u32>)>("cluster_info")? };
        let cfg = LaunchConfig::new(8, 128).cluster(4);
        let active = k.max_active_clusters(&cfg)?;
        assert!(active > 0);
        assert!(k.max_active_clusters(&LaunchConfig::new(8, 128).cluster(2))? >= active);
        assert!(matches!(
            k.max_active_clusters(&LaunchConfig::new(8, 128)),
            Err(CudaError::InvalidLaunch {
                parameter: "cluster",
                ..
            })
        ));
        assert_eq!(k.max_potential_cluster_size(&cfg)?, 8);
        k.set_non_portable_cluster_size_allowed(true)?;
        assert_eq!(k.max_potential_cluster_size(&cfg)?, 16);
        Ok(())
    });
}

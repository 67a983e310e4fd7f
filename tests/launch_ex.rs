//! Extended launch through the safe layer (`oxicuda_driver::launch_config`), on
//! softcuda: a cluster launch on device 0 (compute capability 9.0) whose kernel
//! reports its cluster registers; the same refused on device 1 (8.0) before the
//! driver is called; each validation refusal; a cooperative reduction with
//! `this_grid().sync()`, declared cooperative and so launched only cooperatively; a
//! cooperative grid too large to be resident; attributes
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
        let (a, b) = (cur.alloc_zeros::<f32>(64)?, cur.alloc_zeros::<f32>(64)?);
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
        let (a, b) = (cur.alloc_zeros::<f32>(64)?, cur.alloc_zeros::<f32>(64)?);
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
        // others only below their lengths (it returns at once if they are short), for
        // every grid whose blocks are all resident at once (it synchronises the grid:
        // declared cooperative).
        let k = unsafe {
            module.cooperative_function::<(In<u32>, Out<u32>, Out<u64>, Out<u32>)>("grid_reduce")?
        };
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

/// A cooperative kernel kept as a key beside its module (what a kernel library
/// holds): the function the module gives back is still cooperative only.
#[test]
fn a_cooperative_kernel_kept_as_a_key_launches_cooperatively() {
    type Reduce = (In<u32>, Out<u32>, Out<u64>, Out<u32>);
    struct Reducer<'c> {
        module: oxicuda_driver::module::Module<'c>,
        reduce: oxicuda_driver::module::FunctionKey<Reduce, oxicuda_driver::launch::Cooperative>,
    }
    on_device0(|cur| -> Result<(), CudaError> {
        let module = cur.load_ptx(COOP, &JitOptions::default())?;
        // SAFETY: as in a_cooperative_reduce_synchronises_the_grid.
        let reduce = unsafe { module.cooperative_function_key("grid_reduce")? };
        let lib = Reducer { module, reduce };
        let k = lib.module.get(&lib.reduce)?;
        let stream = cur.create_stream(CUstream_flags::CU_STREAM_NON_BLOCKING)?;
        let data = input(5000);
        let din = cur.alloc_from(&data)?;
        let (mut partial, mut total, mut seen) = (
            cur.alloc_zeros::<u32>(4)?,
            cur.alloc_zeros::<u64>(1)?,
            cur.alloc_zeros::<u32>(1)?,
        );
        k.launch_cooperative(
            &stream,
            4,
            256,
            0,
            (&din, &mut partial, &mut total, &mut seen),
        )?;
        assert_eq!(
            total.to_vec()?,
            [data.iter().map(|&x| u64::from(x)).sum::<u64>()]
        );
        Ok(())
    });
}

#[test]
fn a_kernel_declared_cooperative_launches_only_cooperatively() {
    on_device0(|cur| -> Result<(), CudaError> {
        let module = cur.load_ptx(COOP, &JitOptions::default())?;
        // SAFETY: as in a_cooperative_reduce_synchronises_the_grid.
        let k = unsafe {
            module.cooperative_function::<(In<u32>, Out<u32>, Out<u64>, Out<u32>)>("grid_reduce")?
        };
        let stream = cur.create_stream(CUstream_flags::CU_STREAM_NON_BLOCKING)?;
        let data = input(5000);
        let din = cur.alloc_from(&data)?;
        let mut partial = cur.alloc::<u32>(4)?;
        partial.fill(0)?;
        let mut total = cur.alloc::<u64>(1)?;
        let mut seen = cur.alloc::<u32>(1)?;
        seen.fill(0)?;
        // `k.launch(..)` does not compile (CF31); a configuration that is not
        // cooperative is refused before the driver is called.
        let plain = LaunchConfig::new(4, 256).priority(-1);
        assert_eq!(
            refused_parameter(k.validate_launch(&plain), "not cooperative"),
            "cooperative"
        );
        let r = k.launch_with(&stream, &plain, (&din, &mut partial, &mut total, &mut seen));
        assert_eq!(refused_parameter(r, "not cooperative"), "cooperative");
        stream.synchronize()?;
        assert_eq!(seen.to_vec()?, [0], "nothing ran");
        // The same configuration, cooperative, runs: every block sees every partial sum.
        k.launch_with(
            &stream,
            &plain.cooperative(true),
            (&din, &mut partial, &mut total, &mut seen),
        )?;
        stream.synchronize()?;
        if !ON_GPU {
            let rec = softcuda::api::launch_ex::last_launch().unwrap();
            assert!(rec.cooperative);
            assert_eq!(rec.priority, Some(-1));
        }
        assert_eq!(
            total.to_vec()?,
            [data.iter().map(|&x| u64::from(x)).sum::<u64>()]
        );
        assert_eq!(seen.to_vec()?, [4], "every block saw every partial sum");
        Ok(())
    });
}

#[test]
fn a_cooperative_grid_that_cannot_be_resident_is_refused() {
    on_device0(|cur| -> Result<(), CudaError> {
        let module = cur.load_ptx(COOP, &JitOptions::default())?;
        // SAFETY: as in a_cooperative_reduce_synchronises_the_grid.
        let k = unsafe {
            module.cooperative_function::<(In<u32>, Out<u32>, Out<u64>, Out<u32>)>("grid_reduce")?
        };
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

/// The parameter an `InvalidLaunch` names, or a panic with what came instead.
fn refused_parameter(r: Result<impl std::fmt::Debug, CudaError>, what: &str) -> &'static str {
    match r {
        Err(CudaError::InvalidLaunch { parameter, .. }) => parameter,
        other => panic!("{what}: {other:?}"),
    }
}

#[test]
fn out_of_range_dimensions_are_typed_errors_without_overflow() {
    on_device0(|cur| -> Result<(), CudaError> {
        let module = cur.load_ptx(SLICES, &JitOptions::default())?;
        // SAFETY: kernels/slices.cu: vector_add stays below every slice's length.
        let k = unsafe { module.function::<(In<f32>, In<f32>, Out<f32>)>("vector_add")? };
        let m = u32::MAX;
        let cases = [
            (LaunchConfig::new((m, m, m), 1), "grid"),
            // 2^31 · 2^31 · 4 wraps to 0 in 64 bits.
            (LaunchConfig::new((1 << 31, 1 << 31, 4), 1), "grid"),
            (LaunchConfig::new(1u32 << 31, 1), "grid"),
            (LaunchConfig::new((1, 65536, 1), 1), "grid"),
            (LaunchConfig::new((1, 1, 65536), 1), "grid"),
            (LaunchConfig::new(1, (m, m, m)), "block"),
            (LaunchConfig::new(1, 2048), "block"),
            (LaunchConfig::new(1, (1, 1, 65)), "block"),
            (LaunchConfig::new(1, (32, 32, 2)), "block"),
            (LaunchConfig::new(1, 1).cluster((m, m, m)), "cluster"),
            (LaunchConfig::new(2, 2048).cluster(2), "block"),
            (LaunchConfig::new(1, 2048).cooperative(true), "block"),
        ];
        for (cfg, parameter) in cases {
            let what = format!("{cfg:?}");
            assert_eq!(refused_parameter(k.validate_launch(&cfg), &what), parameter);
        }
        // The occupancy questions check the block before asking the driver.
        for block in [(65536, 65536, 1), (2_147_483_712, 2, 1), (m, m, m)] {
            let cfg = LaunchConfig::new(2, block).cluster(2);
            let what = format!("{cfg:?}");
            assert_eq!(
                refused_parameter(k.max_active_clusters(&cfg), &what),
                "block"
            );
            assert_eq!(
                refused_parameter(k.max_potential_cluster_size(&cfg), &what),
                "block"
            );
        }
        Ok(())
    });
}

#[test]
fn cooperative_block_and_shared_memory_are_checked_before_occupancy() {
    on_device0(|cur| -> Result<(), CudaError> {
        let module = cur.load_ptx(COOP, &JitOptions::default())?;
        // SAFETY: as in a_cooperative_reduce_synchronises_the_grid.
        let k = unsafe {
            module.cooperative_function::<(In<u32>, Out<u32>, Out<u64>, Out<u32>)>("grid_reduce")?
        };
        let stream = cur.create_stream(CUstream_flags::CU_STREAM_NON_BLOCKING)?;
        let din = cur.alloc_from(&[1u32; 16])?;
        let mut partial = cur.alloc::<u32>(4)?;
        let mut total = cur.alloc::<u64>(1)?;
        let mut seen = cur.alloc::<u32>(1)?;
        seen.fill(0)?;
        let r = k.launch_cooperative(
            &stream,
            1,
            2048,
            0,
            (&din, &mut partial, &mut total, &mut seen),
        );
        assert_eq!(refused_parameter(r, "block 2048"), "block");
        let r = k.launch_cooperative(
            &stream,
            1,
            64,
            1 << 30,
            (&din, &mut partial, &mut total, &mut seen),
        );
        match r {
            Err(CudaError::InvalidLaunch {
                parameter: "shared",
                rule,
            }) => assert!(rule.contains("1073741824"), "{rule}"),
            other => panic!("1 GiB of shared memory: {other:?}"),
        }
        stream.synchronize()?;
        assert_eq!(seen.to_vec()?, [0], "nothing ran");
        Ok(())
    });
}

/// `pair`: compiled-in clusters of 2 (`__cluster_dims__(2, 1, 1)`); each block
/// writes `%cluster_nctarank` at its index. `wide`: clusters of 32, which no device
/// allows.
const REQUIRED_CLUSTER: &str = r#".version 8.0
.target sm_90
.address_size 64
.visible .entry pair(.param .align 8 .b8 out[16])
.reqnctapercluster 2, 1, 1
{
.reg .b32 %r<4>;
.reg .b64 %rd<6>;
.reg .pred %p<2>;
ld.param.u64 %rd1, [out];
ld.param.u64 %rd2, [out+8];
mov.u32 %r1, %ctaid.x;
cvt.u64.u32 %rd3, %r1;
setp.ge.u64 %p1, %rd3, %rd2;
@%p1 bra DONE;
mov.u32 %r2, %cluster_nctarank;
mul.wide.u32 %rd4, %r1, 4;
add.s64 %rd5, %rd1, %rd4;
st.global.u32 [%rd5], %r2;
DONE:
ret;
}
"#;

const WIDE_CLUSTER: &str = r#".version 8.0
.target sm_90
.address_size 64
.visible .entry wide(.param .align 8 .b8 out[16])
.reqnctapercluster 32, 1, 1
{
ret;
}
"#;

#[test]
fn a_compiled_in_cluster_shape_is_validated_and_used() {
    on_device0(|cur| -> Result<(), CudaError> {
        let module = cur.load_ptx(REQUIRED_CLUSTER, &JitOptions::default())?;
        // SAFETY: `pair` writes `out` only below its length.
        let k = unsafe { module.function::<(Out<u32>,)>("pair")? };
        let stream = cur.create_stream(CUstream_flags::CU_STREAM_NON_BLOCKING)?;
        let mut out = cur.alloc::<u32>(4)?;
        out.fill(0)?;
        // Another shape than the compiled-in one, a grid it does not divide.
        match k.validate_launch(&LaunchConfig::new(8, 32).cluster(4)) {
            Err(CudaError::InvalidLaunch {
                parameter: "cluster",
                rule,
            }) => assert!(rule.contains("compiled-in"), "{rule}"),
            other => panic!("{other:?}"),
        }
        match k.validate_launch(&LaunchConfig::new(3, 32).programmatic_serialization(false)) {
            Err(CudaError::InvalidLaunch {
                parameter: "cluster",
                rule,
            }) => assert!(rule.contains("divide"), "{rule}"),
            other => panic!("{other:?}"),
        }
        // Without a cluster attribute the driver applies the compiled-in shape (and
        // refuses a grid it does not divide).
        k.launch_with(&stream, &LaunchConfig::new(4, 32), (&mut out,))?;
        stream.synchronize()?;
        assert_eq!(out.to_vec()?, [2; 4]);
        let r = k.launch(&stream, 3, 32, 0, (&mut out,));
        assert!(r.is_err(), "{r:?}");
        if !ON_GPU {
            assert_eq!(
                r,
                Err(CudaError::Driver(
                    oxicuda_driver::sys::CUresult::CUDA_ERROR_INVALID_CLUSTER_SIZE
                ))
            );
        }
        // Occupancy uses the compiled-in shape when the configuration has none.
        assert!(k.max_active_clusters(&LaunchConfig::new(4, 32))? > 0);
        if !ON_GPU {
            // A compiled-in 32: refused, typed, when the checks run; by softcuda on
            // a plain launch (instead of making 32 blocks co-resident).
            let module = cur.load_ptx(WIDE_CLUSTER, &JitOptions::default())?;
            // SAFETY: `wide` touches no memory.
            let w = unsafe { module.function::<(Out<u32>,)>("wide")? };
            match w.validate_launch(&LaunchConfig::new(32, 32).cooperative(true)) {
                Err(CudaError::InvalidLaunch {
                    parameter: "cluster",
                    rule,
                }) => assert!(rule.contains("at most 8"), "{rule}"),
                other => panic!("{other:?}"),
            }
            assert_eq!(
                w.launch(&stream, 32, 32, 0, (&mut out,)),
                Err(CudaError::Driver(
                    oxicuda_driver::sys::CUresult::CUDA_ERROR_INVALID_CLUSTER_SIZE
                ))
            );
        }
        stream.synchronize()?;
        Ok(())
    });
}

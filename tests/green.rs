//! Green contexts through the safe layer, on softcuda (or with `--features
//! gpu-tests` the driver the environment names, CUDA 12.4+): a device's SMs split
//! into disjoint partitions, a green context of one bound like any context —
//! buffers, kernels, streams — with the partition's SM count as its cooperative
//! limit; bad splits and bad partition sets are typed errors before the driver is
//! called; a green context's SMs split again. No live object is left behind.

mod common;

use common::{driver, no_leaks};

use oxicuda_driver::green::{GreenContext, SmPartition, SplitFlags};
use oxicuda_driver::launch::{In, Out};
use oxicuda_driver::module::JitOptions;
use oxicuda_driver::sys::{CUctx_flags, CUdevice_attribute, CUstream_flags};
use oxicuda_driver::{Context, CudaError};

const SLICES: &str = include_str!("../kernels/slices.ptx");
const COOP: &str = include_str!("../kernels/cooperative.ptx");

fn invalid(r: Result<impl core::fmt::Debug, CudaError>, parameter: &str) {
    match r {
        Err(CudaError::InvalidArgument { parameter: p, .. }) if p == parameter => {}
        other => panic!("expected InvalidArgument naming `{parameter}`, got {other:?}"),
    }
}

#[test]
fn a_split_makes_disjoint_groups_within_the_device() {
    let (d, _g) = driver();
    let device = d.device(0).unwrap();
    let all = device.sm_resource().unwrap();
    let sms = device
        .attribute(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)
        .unwrap() as u32;
    assert_eq!(
        all.sm_count(),
        sms,
        "the resource is every SM of the device"
    );
    assert!(sms >= 16, "two groups of 8 fit");

    let possible = all.groups_possible(8, SplitFlags::empty()).unwrap();
    assert!(
        possible >= 2 && possible <= sms / 8,
        "{possible} groups of 8 of {sms}"
    );
    let split = all.split(possible + 5, 8, SplitFlags::empty()).unwrap();
    assert_eq!(
        split.groups.len() as u32,
        possible,
        "never more groups than the dry run said"
    );
    let taken: u32 = split.groups.iter().map(SmPartition::sm_count).sum();
    for g in &split.groups {
        assert!(g.sm_count() >= 8, "each group has at least min_sms: {g:?}");
    }
    let left = split.remainder.as_ref().map_or(0, SmPartition::sm_count);
    assert_eq!(
        taken + left,
        sms,
        "groups and remainder are the device's SMs"
    );

    let two = all.split(2, 8, SplitFlags::empty()).unwrap();
    assert_eq!(two.groups.len(), 2, "asked for two, two made");
    assert_eq!(
        two.groups[0].sm_count()
            + two.groups[1].sm_count()
            + two.remainder.as_ref().map_or(0, SmPartition::sm_count),
        sms
    );
    no_leaks();
}

#[test]
fn bad_splits_are_refused_before_the_driver() {
    let (d, _g) = driver();
    let all = d.device(0).unwrap().sm_resource().unwrap();
    invalid(all.split(0, 8, SplitFlags::empty()), "groups");
    invalid(all.split(2, 0, SplitFlags::empty()), "min_sms");
    invalid(
        all.split(1, all.sm_count() + 1, SplitFlags::empty()),
        "min_sms",
    );
    invalid(all.groups_possible(0, SplitFlags::empty()), "min_sms");
    // Asking for more groups than the SMs allow asks for what they allow: no memory
    // is reserved for the rest.
    let most = all.split(u32::MAX, 8, SplitFlags::empty()).unwrap();
    assert_eq!(
        most.groups.len() as u32,
        all.groups_possible(8, SplitFlags::empty()).unwrap()
    );
}

#[test]
fn a_green_context_runs_kernels_on_its_partition() {
    let (d, _g) = driver();
    let device = d.device(0).unwrap();
    let split = device
        .sm_resource()
        .unwrap()
        .split(2, 8, SplitFlags::empty())
        .unwrap();
    let green = GreenContext::new(&device, &split.groups[..1]).unwrap();
    assert_eq!(
        green.sm_resource().unwrap().sm_count(),
        split.groups[0].sm_count()
    );
    let got = green
        .bind(|cur| -> Result<Vec<f32>, CudaError> {
            assert_eq!(cur.sm_resource()?.sm_count(), split.groups[0].sm_count());
            assert_eq!(
                cur.raw(),
                green.raw_context(),
                "the converted context is current"
            );
            let module = cur.load_ptx(SLICES, &JitOptions::default())?;
            // SAFETY: kernels/slices.cu's saxpy reads `x` and writes `y`, each only
            // below the length passed with it.
            let saxpy = unsafe { module.function::<(f32, In<f32>, Out<f32>)>("saxpy")? };
            let stream = cur.create_stream(CUstream_flags::CU_STREAM_NON_BLOCKING)?;
            let n = 5000;
            let x = cur.alloc_from(&(0..n).map(|i| i as f32).collect::<Vec<_>>())?;
            let mut y = cur.alloc_from(&vec![1.0f32; n])?;
            saxpy.launch(
                &stream,
                (n as u32).div_ceil(256),
                256,
                0,
                (3.0f32, &x, &mut y),
            )?;
            stream.synchronize()?;
            y.to_vec()
        })
        .unwrap()
        .unwrap();
    for (i, v) in got.iter().enumerate() {
        assert_eq!(*v, 3.0 * i as f32 + 1.0, "element {i}");
    }
    // One root binding per thread, green or not.
    let ctx = Context::new(&device, CUctx_flags::empty()).unwrap();
    ctx.bind(|cur| {
        assert!(matches!(
            green.bind(|_| ()),
            Err(CudaError::ContextAlreadyBound)
        ));
        // Nested: the green context is current inside, the outer one again after.
        let outer = cur.raw();
        let inner = cur
            .push_green(&green, |g| -> Result<u32, CudaError> {
                Ok(g.sm_resource()?.sm_count())
            })
            .unwrap()
            .unwrap();
        assert_eq!(inner, split.groups[0].sm_count());
        assert_eq!(cur.raw(), outer);
        assert_eq!(
            cur.sm_resource().unwrap().sm_count(),
            device.sm_resource().unwrap().sm_count(),
            "an ordinary context has the whole device"
        );
    })
    .unwrap();
    drop((ctx, green));
    no_leaks();
}

#[test]
fn the_cooperative_limit_is_the_partitions() {
    let (d, _g) = driver();
    let device = d.device(0).unwrap();
    let part = device
        .sm_resource()
        .unwrap()
        .split(1, 8, SplitFlags::empty())
        .unwrap()
        .groups
        .remove(0);
    let sms = part.sm_count();
    let green = GreenContext::new(&device, &[part]).unwrap();
    let per_sm = |cur: &oxicuda_driver::CurrentContext<'_>| -> Result<u32, CudaError> {
        let module = cur.load_ptx(COOP, &JitOptions::default())?;
        // SAFETY: kernels/cooperative.cu (see tests/launch_ex.rs).
        let k = unsafe {
            module.cooperative_function::<(In<u32>, Out<u32>, Out<u64>, Out<u32>)>("grid_reduce")?
        };
        k.max_active_blocks_per_multiprocessor(256, 0)
    };
    let run = |cur: &oxicuda_driver::CurrentContext<'_>, grid: u32| -> Result<u64, CudaError> {
        let module = cur.load_ptx(COOP, &JitOptions::default())?;
        // SAFETY: as above; every block is resident when the grid fits.
        let k = unsafe {
            module.cooperative_function::<(In<u32>, Out<u32>, Out<u64>, Out<u32>)>("grid_reduce")?
        };
        let stream = cur.create_stream(CUstream_flags::CU_STREAM_NON_BLOCKING)?;
        let din = cur.alloc_from(&vec![2u32; 4096])?;
        let (mut partial, mut total, mut seen) = (
            cur.alloc_zeros::<u32>(grid as usize)?,
            cur.alloc_zeros::<u64>(1)?,
            cur.alloc_zeros::<u32>(1)?,
        );
        k.launch_cooperative(
            &stream,
            grid,
            256,
            0,
            (&din, &mut partial, &mut total, &mut seen),
        )?;
        stream.synchronize()?;
        Ok(total.to_vec()?[0])
    };
    green
        .bind(|cur| {
            let max = per_sm(cur).unwrap() * sms;
            assert_eq!(
                run(cur, max).unwrap(),
                8192,
                "a grid filling the partition runs"
            );
            match run(cur, max + 1) {
                Err(CudaError::CooperativeGridTooLarge { blocks, max: m }) => {
                    assert_eq!((blocks, m), (u64::from(max) + 1, u64::from(max)));
                }
                other => panic!("expected CooperativeGridTooLarge, got {other:?}"),
            }
        })
        .unwrap();
    // The same grid fits the whole device.
    let ctx = Context::new(&device, CUctx_flags::empty()).unwrap();
    ctx.bind(|cur| {
        let max = per_sm(cur).unwrap() * sms;
        assert_eq!(run(cur, max + 1).unwrap(), 8192);
    })
    .unwrap();
    drop((ctx, green));
    no_leaks();
}

#[test]
fn bad_partition_sets_are_refused_before_the_driver() {
    let (d, _g) = driver();
    let device = d.device(0).unwrap();
    let all = device.sm_resource().unwrap();
    let a = all.split(2, 8, SplitFlags::empty()).unwrap();
    let b = all.split(2, 8, SplitFlags::empty()).unwrap();
    invalid(GreenContext::new(&device, &[]), "partitions");
    invalid(
        GreenContext::new(&device, &[a.groups[0].clone(), b.groups[1].clone()]),
        "partitions",
    );
    invalid(
        GreenContext::new(&device, &[a.groups[0].clone(), a.groups[0].clone()]),
        "partitions",
    );
    let other = common::second_device(d);
    if other.raw() != device.raw() {
        invalid(GreenContext::new(&other, &a.groups[..1]), "partitions");
    }
    // Two groups of one split make one green context of both.
    let both = GreenContext::new(&device, &a.groups).unwrap();
    assert_eq!(
        both.sm_resource().unwrap().sm_count(),
        a.groups[0].sm_count() + a.groups[1].sm_count()
    );
    drop(both);
    no_leaks();
}

#[test]
fn a_green_contexts_sms_split_again() {
    let (d, _g) = driver();
    let device = d.device(0).unwrap();
    let whole: SmPartition = device.sm_resource().unwrap().into();
    let green = GreenContext::new(&device, &[whole]).unwrap();
    let sms = green.sm_resource().unwrap().sm_count();
    assert_eq!(sms, device.sm_resource().unwrap().sm_count());
    let halves = green
        .sm_resource()
        .unwrap()
        .split(2, 8, SplitFlags::empty())
        .unwrap();
    assert_eq!(halves.groups.len(), 2);
    let inner = GreenContext::new(&device, &halves.groups[1..]).unwrap();
    let n = inner
        .bind(|cur| cur.sm_resource().map(|r| r.sm_count()))
        .unwrap()
        .unwrap();
    assert_eq!(n, halves.groups[1].sm_count());
    drop((inner, green));
    no_leaks();
}

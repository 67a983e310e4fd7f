//! Managed memory through the safe layer, on softcuda (or with `--features gpu-tests`
//! the driver the environment names): the host writes, a kernel reads and writes, the
//! host reads back — also after a graph that used the buffer is gone; attach,
//! prefetch and advice answered by the range attributes; and every refusal. No live
//! object is left behind.

mod common;

use common::{ON_GPU, on_device0, second_device};

use oxicuda_driver::CudaError;
use oxicuda_driver::launch::{In, Out};
use oxicuda_driver::managed::{Advice, Attach, Location};
use oxicuda_driver::module::JitOptions;
use oxicuda_driver::sys::{CUresult, CUstream_flags};

const SLICES: &str = include_str!("../kernels/slices.ptx");
const N: usize = 1000;

#[test]
fn a_kernel_writes_managed_memory_and_the_host_reads_it() {
    on_device0(|cur| -> Result<(), CudaError> {
        let module = cur.load_ptx(SLICES, &JitOptions::default())?;
        // SAFETY: kernels/slices.cu: saxpy writes `y` only below its length and reads
        // `x` only below its own.
        let saxpy = unsafe { module.function::<(f32, In<f32>, Out<f32>)>("saxpy")? };
        let stream = cur.create_stream(CUstream_flags::CU_STREAM_NON_BLOCKING)?;
        let mut x = cur.alloc_managed::<f32>(N, Attach::Global)?;
        let mut y = cur.alloc_managed::<f32>(N, Attach::Host)?;
        assert_eq!((x.len(), x.is_empty()), (N, false));
        assert!(y.host()?.iter().all(|&v| v == 0.0), "zeroed");
        for (i, v) in x.host()?.iter_mut().enumerate() {
            *v = i as f32;
        }
        y.host()?.fill(1.0);
        y.attach(&stream, Attach::Single)?;
        saxpy.launch(
            &stream,
            N.div_ceil(256) as u32,
            256,
            0,
            (3.0f32, &x, &mut y),
        )?;
        // `host` waits for the kernel first.
        let got = y.host()?.to_vec();
        let want: Vec<f32> = (0..N).map(|i| 3.0 * i as f32 + 1.0).collect();
        assert_eq!(got, want);
        // The same bytes as device memory.
        assert_eq!(y.as_slice().to_vec()?, want);
        // A graph that writes the buffer: the host reads after the graph is gone.
        {
            let mut g = cur.create_graph()?;
            g.add_kernel(
                &[],
                &saxpy,
                N.div_ceil(256) as u32,
                256,
                0,
                (1.0f32, &x, &y),
            )?;
            let exec = g.instantiate()?;
            stream.scope(|s| s.launch_graph(&exec))??;
        }
        assert_eq!(y.host()?[10], 3.0 * 10.0 + 1.0 + 10.0);
        // A copy into managed memory from a device buffer.
        let d = cur.alloc_from(&vec![5.0f32; N])?;
        x.as_mut_slice().copy_from(&d)?;
        assert!(x.host()?.iter().all(|&v| v == 5.0));
        Ok(())
    });
}

#[test]
fn advice_and_prefetch_are_answered_by_the_range_attributes() {
    on_device0(|cur| -> Result<(), CudaError> {
        let d0 = cur.device()?;
        let d1 = second_device(cur.driver());
        let stream = cur.create_stream(CUstream_flags::empty())?;
        let m = cur.alloc_managed::<u32>(4096, Attach::Global)?;
        assert!(!m.read_mostly()?);
        assert_eq!(m.preferred_location()?, None);
        assert_eq!(m.accessed_by()?, vec![]);
        m.advise(Advice::SetReadMostly)?;
        assert!(m.read_mostly()?);
        m.advise(Advice::UnsetReadMostly)?;
        assert!(!m.read_mostly()?);
        m.advise(Advice::SetPreferredLocation(Location::Device(d0)))?;
        assert_eq!(m.preferred_location()?, Some(Location::Device(d0)));
        m.advise(Advice::SetPreferredLocation(Location::Host))?;
        assert_eq!(m.preferred_location()?, Some(Location::Host));
        m.advise(Advice::UnsetPreferredLocation)?;
        assert_eq!(m.preferred_location()?, None);
        m.advise(Advice::SetAccessedBy(Location::Device(d1)))?;
        assert_eq!(m.accessed_by()?, vec![Location::Device(d1)]);
        m.advise(Advice::UnsetAccessedBy(Location::Device(d1)))?;
        assert_eq!(m.accessed_by()?, vec![]);
        m.prefetch(&stream, Location::Device(d0))?;
        stream.synchronize()?;
        assert_eq!(m.last_prefetch_location()?, Some(Location::Device(d0)));
        m.prefetch(&stream, Location::Host)?;
        stream.synchronize()?;
        assert_eq!(m.last_prefetch_location()?, Some(Location::Host));
        Ok(())
    });
}

#[test]
fn bad_requests_are_typed_errors() {
    on_device0(|cur| -> Result<(), CudaError> {
        assert!(matches!(
            cur.alloc_managed::<u32>(0, Attach::Global),
            Err(CudaError::InvalidArgument {
                parameter: "len",
                ..
            })
        ));
        assert!(matches!(
            cur.alloc_managed::<u32>(4, Attach::Single),
            Err(CudaError::InvalidArgument {
                parameter: "attach",
                ..
            })
        ));
        let mut m = cur.alloc_managed::<u32>(4, Attach::Global)?;
        // Single-stream attachment needs a created stream.
        assert_eq!(
            m.attach(&cur.default_stream(), Attach::Single),
            Err(CudaError::Driver(CUresult::CUDA_ERROR_INVALID_VALUE))
        );
        m.attach(&cur.default_stream(), Attach::Host)?;
        m.attach(&cur.default_stream(), Attach::Global)?;
        Ok(())
    });
}

/// Allocates on device 0 of the machine `devices` describes; the refusal, if any.
fn managed_refusal_on(devices: Vec<softcuda::control::Profile>) -> Option<CudaError> {
    let (d, _g) = common::driver();
    let before = softcuda::control::config();
    softcuda::control::configure(before.version, devices).unwrap();
    let ctx = oxicuda_driver::Context::new(
        &d.device(0).unwrap(),
        oxicuda_driver::sys::CUctx_flags::empty(),
    )
    .unwrap();
    let r = ctx.bind(|cur| cur.alloc_managed::<u32>(4, Attach::Global).err());
    drop(ctx);
    softcuda::control::configure(before.version, before.devices).unwrap();
    common::no_leaks();
    r.unwrap()
}

#[test]
fn a_device_without_concurrent_managed_access_is_refused() {
    if ON_GPU {
        return;
    }
    use softcuda::control::Profile;
    // A Maxwell device: managed memory, but no concurrent managed access.
    let alone = managed_refusal_on(vec![Profile::new(0, 5, 2, 1024)]);
    assert!(
        matches!(alone, Some(CudaError::DeviceLacks { feature }) if feature.contains("concurrent")),
        "{alone:?}"
    );
    // Beside an Ampere device, allocating on the Ampere one is refused too: the
    // Maxwell device's kernels would own the globally visible memory while they run.
    let beside = managed_refusal_on(vec![
        Profile::new(0, 8, 0, 1024),
        Profile::new(1, 5, 2, 1024),
    ]);
    assert!(
        matches!(beside, Some(CudaError::DeviceLacks { feature }) if feature.contains("every device")),
        "{beside:?}"
    );
    // And two devices that both have it allocate.
    assert_eq!(
        managed_refusal_on(vec![
            Profile::new(0, 9, 0, 1024),
            Profile::new(1, 8, 0, 1024)
        ]),
        None
    );
}

#[test]
fn host_access_is_refused_in_a_context_foreign_code_made_current() {
    use oxicuda_driver::Context;
    use oxicuda_driver::error::check;
    use oxicuda_driver::sys::{CUcontext, CUctx_flags};
    let (d, _g) = common::driver();
    let dev = d.device(0).unwrap();
    let (ctx, other) = (
        Context::new(&dev, CUctx_flags::empty()).unwrap(),
        Context::new(&dev, CUctx_flags::empty()).unwrap(),
    );
    ctx.bind(|cur| {
        let mut m = cur.alloc_managed::<u32>(16, Attach::Global).unwrap();
        // SAFETY: a live context of `d`; popped again below.
        check(unsafe { d.table().cuCtxPushCurrent().unwrap()(other.raw()) }).unwrap();
        // Waiting for `other`'s work would not wait for the buffer's.
        assert_eq!(
            m.host().map(|_| ()),
            Err(CudaError::ContextMismatch {
                expected: ctx.raw().0 as usize,
                found: other.raw().0 as usize,
            })
        );
        let mut popped = CUcontext::NULL;
        // SAFETY: a valid out-pointer.
        check(unsafe { d.table().cuCtxPopCurrent().unwrap()(&mut popped) }).unwrap();
        assert_eq!(popped, other.raw());
        m.host().unwrap()[0] = 7;
        assert_eq!(m.as_slice().to_vec().unwrap()[0], 7);
    })
    .unwrap();
    drop((ctx, other));
    common::no_leaks();
}

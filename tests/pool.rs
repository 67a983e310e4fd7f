//! Stream-ordered memory through the safe layer, on softcuda (or with
//! `--features gpu-tests` the driver the environment names): allocation and free in
//! a stream's order with a kernel and copies in between, the default pool and created
//! pools with their typed attributes, trim, peer access from device 1, and every
//! refusal. No live object is left behind.

mod common;

use common::{ON_GPU, on_device0, second_device};

use oxicuda_driver::CudaError;
use oxicuda_driver::graph::CaptureMode;
use oxicuda_driver::launch::{In, Out};
use oxicuda_driver::launch_config::LaunchConfig;
use oxicuda_driver::module::JitOptions;
use oxicuda_driver::pool::{Access, ReusePolicy};
use oxicuda_driver::sys::{CUresult, CUstream_flags};

const SLICES: &str = include_str!("../kernels/slices.ptx");
const N: usize = 1000;

#[test]
fn a_stream_buffer_is_written_by_a_kernel_and_freed_in_stream_order() {
    on_device0(|cur| -> Result<(), CudaError> {
        let module = cur.load_ptx(SLICES, &JitOptions::default())?;
        // SAFETY: kernels/slices.cu: saxpy writes `y` only below its length and reads
        // `x` only below its own.
        let saxpy = unsafe { module.function::<(f32, In<f32>, Out<f32>)>("saxpy")? };
        let stream = cur.create_stream(CUstream_flags::CU_STREAM_NON_BLOCKING)?;
        let pool = cur.default_memory_pool()?;
        assert!(!pool.is_owned());
        let used_before = pool.used_current()?;
        let xs: Vec<f32> = (0..N).map(|i| i as f32).collect();
        let mut out = vec![0f32; N];
        {
            let mut x = stream.alloc_async::<f32>(N)?;
            let mut y = stream.alloc_async::<f32>(N)?;
            assert_eq!((x.len(), x.is_empty()), (N, false));
            assert_eq!(x.stream(), stream.raw());
            assert!(pool.used_current()? >= used_before + 2 * 4 * N as u64);
            stream.scope(|s| {
                s.copy_to_device(&mut x, &xs)?;
                stream.fill(&mut y, 1.0f32)?;
                saxpy.launch(
                    &stream,
                    N.div_ceil(256) as u32,
                    256,
                    0,
                    (2.0f32, &x, &mut y),
                )?;
                s.copy_to_host(&mut out, &y)
            })??;
            x.free_async()?;
            drop(y); // freed in the stream's order too
        }
        stream.synchronize()?;
        let want: Vec<f32> = xs.iter().map(|x| 2.0 * x + 1.0).collect();
        assert_eq!(out, want);
        assert_eq!(pool.used_current()?, used_before);
        Ok(())
    });
}

#[test]
fn a_created_pool_answers_its_attributes_and_trims() {
    on_device0(|cur| -> Result<(), CudaError> {
        let stream = cur.create_stream(CUstream_flags::empty())?;
        let pool = cur.create_memory_pool(None)?;
        assert!(pool.is_owned());
        assert_eq!(pool.device(), cur.device()?);
        if !ON_GPU {
            assert_eq!(softcuda::control::live_counts().pools, 1);
        }
        pool.set_release_threshold(u64::MAX)?;
        assert_eq!(pool.release_threshold()?, u64::MAX);
        for policy in [
            ReusePolicy::FollowEventDependencies,
            ReusePolicy::AllowOpportunistic,
            ReusePolicy::AllowInternalDependencies,
        ] {
            pool.set_reuse(policy, false)?;
            assert!(!pool.reuse(policy)?, "{policy:?}");
            pool.set_reuse(policy, true)?;
            assert!(pool.reuse(policy)?, "{policy:?}");
        }
        let (free_before, _) = cur.memory_info()?;
        let b = stream.alloc_from_pool::<u64>(&pool, 4096)?;
        assert!(pool.used_current()? >= 4096 * 8);
        assert!(pool.reserved_current()? >= 4096 * 8);
        let (free_during, _) = cur.memory_info()?;
        assert!(free_during < free_before, "reserved memory counts as used");
        b.free_async()?;
        stream.synchronize()?;
        assert_eq!(pool.used_current()?, 0);
        assert!(pool.used_high()? >= 4096 * 8);
        let reserved = pool.reserved_current()?;
        assert!(reserved >= 4096 * 8, "kept: the threshold is u64::MAX");
        pool.reset_high_watermarks()?;
        if !ON_GPU {
            assert_eq!((pool.used_high()?, pool.reserved_high()?), (0, 0));
        }
        pool.trim_to(0)?;
        assert_eq!(pool.reserved_current()?, 0);
        let (free_after, _) = cur.memory_info()?;
        assert_eq!(free_after, free_before);
        Ok(())
    });
    // The pool is gone with its binding: `on_device0` checked, under the guard.
}

#[test]
fn peer_devices_get_access_to_a_pool() {
    on_device0(|cur| -> Result<(), CudaError> {
        let d1 = second_device(cur.driver());
        let own = cur.device()?;
        let pool = cur.create_memory_pool(None)?;
        assert_eq!(pool.access(&own)?, Access::ReadWrite);
        if d1 == own {
            return Ok(()); // one GPU: no peer to ask about
        }
        assert_eq!(pool.access(&d1)?, Access::None);
        pool.set_access(&d1, Access::ReadWrite)?;
        assert_eq!(pool.access(&d1)?, Access::ReadWrite);
        pool.set_access(&d1, Access::None)?;
        assert_eq!(pool.access(&d1)?, Access::None);
        // The owner's access is fixed.
        assert_eq!(
            pool.set_access(&own, Access::Read),
            Err(CudaError::InvalidArgument {
                parameter: "access",
                rule: "a pool's own device always has read-write access",
            })
        );
        Ok(())
    });
}

#[test]
fn bad_requests_are_typed_errors() {
    on_device0(|cur| -> Result<(), CudaError> {
        let stream = cur.create_stream(CUstream_flags::empty())?;
        assert!(matches!(
            stream.alloc_async::<f32>(0),
            Err(CudaError::InvalidArgument {
                parameter: "len",
                ..
            })
        ));
        assert!(matches!(
            cur.create_memory_pool(Some(0)),
            Err(CudaError::InvalidArgument {
                parameter: "max_size",
                ..
            })
        ));
        let small = cur.create_memory_pool(Some(1 << 16))?;
        assert!(matches!(
            stream.alloc_from_pool::<u8>(&small, 1 << 20),
            Err(CudaError::Driver(CUresult::CUDA_ERROR_OUT_OF_MEMORY))
        ));
        let fits = stream.alloc_from_pool::<u8>(&small, 1 << 10)?;
        drop(fits);
        stream.synchronize()?;
        Ok(())
    });
}

/// The pool's rule (`src/pool.rs`): a stream-ordered buffer is used on its own stream
/// only, since its free waits for that stream alone. A kernel on a busy second stream
/// would otherwise still hold its address when the free on the first stream hands the
/// memory to the next allocation.
#[test]
fn a_stream_buffer_is_refused_on_every_other_stream() {
    on_device0(|cur| -> Result<(), CudaError> {
        let module = cur.load_ptx(SLICES, &JitOptions::default())?;
        // SAFETY: kernels/slices.cu: saxpy writes `y` only below its length and reads
        // `x` only below its own.
        let saxpy = unsafe { module.function::<(f32, In<f32>, Out<f32>)>("saxpy")? };
        let flags = CUstream_flags::CU_STREAM_NON_BLOCKING;
        let (own, other) = (cur.create_stream(flags)?, cur.create_stream(flags)?);
        let mut x = own.alloc_async::<f32>(N)?;
        let mut y = own.alloc_async::<f32>(N)?;
        let (plain_in, mut plain_out) = (cur.alloc_from(&[1f32; N])?, cur.alloc::<f32>(N)?);
        let grid = N.div_ceil(256) as u32;
        let wrong = |argument| Err(CudaError::WrongStream { argument });
        // Launches on another stream, naming the argument; views and parts of views
        // keep the rule.
        let r = saxpy.launch(&other, grid, 256, 0, (2.0f32, &x, &mut plain_out));
        assert_eq!(r, wrong(Some(1)));
        let r = saxpy.launch(&other, grid, 256, 0, (2.0f32, &plain_in, &mut y));
        assert_eq!(r, wrong(Some(2)));
        let half = x.as_slice().slice(..N / 2)?;
        let r = saxpy.launch(&other, grid, 256, 0, (2.0f32, half, &mut plain_out));
        assert_eq!(r, wrong(Some(1)));
        let (_, tail) = y.as_mut_slice().split_at(N / 2)?;
        let r = saxpy.launch(&other, grid, 256, 0, (2.0f32, &plain_in, tail));
        assert_eq!(r, wrong(Some(2)));
        let cfg = LaunchConfig::new(grid, 256);
        let r = saxpy.launch_with(&other, &cfg, (2.0f32, &x, &mut plain_out));
        assert_eq!(r, wrong(Some(1)));
        // A memset and a scope's copies on another stream.
        assert_eq!(other.fill(&mut y, 1.0f32), wrong(None));
        let mut host = vec![0f32; N];
        let host_in = vec![0f32; N];
        other.scope(|s| {
            assert_eq!(s.copy_to_host(&mut host, &x), wrong(None));
            assert_eq!(s.copy_to_device(&mut y, &host_in), wrong(None));
        })?;
        // On its own stream every one of them is accepted.
        own.fill(&mut x, 1.0f32)?;
        own.fill(&mut y, 1.0f32)?;
        saxpy.launch(&own, grid, 256, 0, (2.0f32, &x, &mut y))?;
        saxpy.launch_with(&own, &cfg, (2.0f32, &plain_in, &mut y))?;
        own.scope(|s| s.copy_to_host(&mut host, &y))??;
        assert_eq!(host, vec![5.0f32; N]);
        x.free_async()?;
        drop(y);
        own.synchronize()
    });
}

/// The synchronous operations on a stream-ordered buffer run in its stream's order: a
/// read sees what the stream's work queued before it wrote, even when the stream does
/// not wait for the default stream (`NON_BLOCKING`); a write is done before the call
/// returns, so the buffer's free, queued on its stream after it, cannot overtake it.
#[test]
fn a_stream_buffers_synchronous_copies_follow_its_stream() {
    on_device0(|cur| -> Result<(), CudaError> {
        let own = cur.create_stream(CUstream_flags::CU_STREAM_NON_BLOCKING)?;
        let mut y = own.alloc_async::<u32>(N)?;
        own.fill(&mut y, 0u32)?;
        // The stream is held up, then writes 3s.
        own.launch_host_fn(|| std::thread::sleep(std::time::Duration::from_millis(300)))?;
        own.fill(&mut y, 3u32)?;
        assert_eq!(y.as_slice().to_vec()?, vec![3u32; N]);
        // Synchronous writes, then a read through another view of it.
        own.launch_host_fn(|| std::thread::sleep(std::time::Duration::from_millis(100)))?;
        y.as_mut_slice().fill(4u32)?;
        assert_eq!(y.as_slice().to_vec()?, vec![4u32; N]);
        y.as_mut_slice().copy_from_host(&[7u32; N])?;
        let mut plain = cur.alloc::<u32>(N)?;
        plain.copy_from(&y)?;
        assert_eq!(plain.to_vec()?, vec![7u32; N]);
        own.launch_host_fn(|| std::thread::sleep(std::time::Duration::from_millis(100)))?;
        own.fill(&mut y, 9u32)?;
        plain.copy_from(&y)?;
        assert_eq!(plain.to_vec()?, vec![9u32; N]);
        y.free_async()?;
        own.synchronize()
    });
}

/// The environment variable under which the test below runs its body in a child (an
/// abort must not take the whole suite down).
const FOREIGN_CAPTURE_CHILD: &str = "OXICUDA_POOL_FOREIGN_CAPTURE_CHILD";

/// Review 1: while foreign code captures a *blocking* stream of the context, every use
/// of the legacy default stream is refused (`CUDA_ERROR_STREAM_CAPTURE_IMPLICIT`). A
/// stream-ordered buffer's synchronous copy then fails before queuing anything — and
/// must come back as that error. It used to abort the process: the wait for the
/// default stream after the (failed) copy was refused the same way, and
/// `settled_or_abort` took the refusal for work it could not wait for.
#[test]
fn a_stream_buffers_copy_during_a_foreign_blocking_capture_is_an_error_not_an_abort() {
    if std::env::var_os(FOREIGN_CAPTURE_CHILD).is_none() {
        if ON_GPU {
            return; // the child needs softcuda's checks of the legacy stream
        }
        let out = std::process::Command::new(std::env::current_exe().unwrap())
            .args([
                "a_stream_buffers_copy_during_a_foreign_blocking_capture_is_an_error_not_an_abort",
                "--exact",
                "--nocapture",
                "--test-threads=1",
            ])
            .env(FOREIGN_CAPTURE_CHILD, "1")
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "the child failed ({:?}): {}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
        return;
    }
    on_device0(|cur| -> Result<(), CudaError> {
        use oxicuda_driver::error::check;
        use oxicuda_driver::sys::{CUgraph, CUstreamCaptureMode};
        let d = oxicuda_driver::driver().unwrap();
        let own = cur.create_stream(CUstream_flags::CU_STREAM_NON_BLOCKING)?;
        let blocking = cur.create_stream(CUstream_flags::empty())?;
        let mut y = own.alloc_async::<u32>(N)?;
        own.fill(&mut y, 5u32)?;
        own.synchronize()?;
        // Foreign code (another library sharing the context) captures a blocking stream.
        // SAFETY: a live stream; the test ends the capture below.
        check(unsafe {
            d.table().cuStreamBeginCapture()?(
                blocking.raw(),
                CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_RELAXED,
            )
        })?;
        let read = y.as_slice().to_vec();
        let mut plain = cur.alloc::<u32>(N);
        let mut graph = CUgraph::NULL;
        // SAFETY: the capture begun above; the graph, if any, is destroyed at once.
        let _ = unsafe { d.table().cuStreamEndCapture()?(blocking.raw(), &mut graph) };
        if !graph.is_null() {
            // SAFETY: the foreign capture's graph, used by nobody.
            let _ = unsafe { d.table().cuGraphDestroy()?(graph) };
        }
        let implicit = Some(CUresult::CUDA_ERROR_STREAM_CAPTURE_IMPLICIT);
        assert_eq!(read.map_err(|e| e.code()), Err(implicit));
        // After the capture the same buffer reads and copies normally.
        assert_eq!(y.as_slice().to_vec()?, vec![5u32; N]);
        if let Ok(p) = plain.as_mut() {
            p.copy_from(&y)?;
            assert_eq!(p.to_vec()?, vec![5u32; N]);
        }
        drop(plain);
        y.free_async()?;
        own.synchronize()
    });
}

/// A graph may run on any stream, before the buffer's stream reaches its allocation:
/// its nodes and captured work refuse stream-ordered memory.
#[test]
fn graphs_refuse_a_stream_buffer() {
    on_device0(|cur| -> Result<(), CudaError> {
        let module = cur.load_ptx(SLICES, &JitOptions::default())?;
        // SAFETY: kernels/slices.cu: saxpy writes `y` only below its length and reads
        // `x` only below its own.
        let saxpy = unsafe { module.function::<(f32, In<f32>, Out<f32>)>("saxpy")? };
        let flags = CUstream_flags::CU_STREAM_NON_BLOCKING;
        let (own, mut other) = (cur.create_stream(flags)?, cur.create_stream(flags)?);
        let x = own.alloc_async::<f32>(N)?;
        let plain = cur.alloc::<f32>(N)?;
        let host = vec![0f32; N];
        let wrong = |argument| Err(CudaError::WrongStream { argument });
        let mut graph = cur.create_graph()?;
        let node = graph.add_kernel(&[], &saxpy, 4, 256, 0, (2.0f32, &x, &plain));
        assert_eq!(node.map(|_| ()), wrong(Some(1)));
        let node = graph.add_kernel(&[], &saxpy, 4, 256, 0, (2.0f32, &plain, x.as_slice()));
        assert_eq!(node.map(|_| ()), wrong(Some(2)));
        assert_eq!(graph.add_fill(&[], &x, 1.0f32).map(|_| ()), wrong(None));
        assert_eq!(graph.add_copy(&[], &plain, &x).map(|_| ()), wrong(None));
        assert_eq!(
            graph.add_copy_to_device(&[], &x, &host).map(|_| ()),
            wrong(None)
        );
        drop(graph);
        let captured = other.capture(CaptureMode::ThreadLocal, |c| {
            c.launch(&saxpy, 4, 256, 0, (2.0f32, &x, &plain))
        });
        assert_eq!(captured.map(|_| ()), wrong(Some(1)));
        let captured = other.capture(CaptureMode::ThreadLocal, |c| c.fill(&x, 1.0f32));
        assert_eq!(captured.map(|_| ()), wrong(None));
        // Ordinary memory is accepted.
        let mut graph = cur.create_graph()?;
        graph.add_kernel(&[], &saxpy, 4, 256, 0, (2.0f32, &plain, &plain))?;
        drop(graph);
        drop(x);
        own.synchronize()
    });
}

//! The debugging tools on softcuda: the leak tracker (every kind created and dropped,
//! a forgotten handle with its backtrace, failed creates leaving no entry, handles
//! dropped on another thread), launch tracing spans seen by a hand-written
//! subscriber, and the device-state snapshot against the individual queries.
//!
//! The tracker is process-wide: every test here holds the driver guard
//! (`common::driver`), so none runs while another counts.
#![cfg(not(feature = "gpu-tests"))]

mod common;

use common::{driver, no_leaks};
use oxicuda_driver::launch::{In, Out};
use oxicuda_driver::launch_config::LaunchConfig;
use oxicuda_driver::leaks::{self, Kind};
use oxicuda_driver::link::LinkInput;
use oxicuda_driver::managed::Attach;
use oxicuda_driver::module::JitOptions;
use oxicuda_driver::snapshot::{KEY_ATTRIBUTES, Snapshot};
use oxicuda_driver::stream::{NoTiming, Timing};
use oxicuda_driver::sys::{
    CUctx_flags, CUlimit, CUmemhostalloc_flags, CUmemhostregister_flags, CUresult, CUstream_flags,
};
use oxicuda_driver::{Context, CudaError, PrimaryContext};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

const SLICES: &str = include_str!("../kernels/slices.ptx");
const LINK_A: &str = include_str!("../kernels/link_a.ptx");

type Add = (In<f32>, In<f32>, Out<f32>);

/// Counts of every kind, as the tracker reports them.
fn counts() -> HashMap<Kind, usize> {
    Kind::ALL
        .iter()
        .map(|&k| (k, leaks::live_count(k)))
        .filter(|(_, n)| *n > 0)
        .collect()
}

fn only(kinds: &[(Kind, usize)]) -> HashMap<Kind, usize> {
    kinds.iter().copied().filter(|(_, n)| *n > 0).collect()
}

/// The tracker on (without backtraces) and empty.
fn fresh_tracker(backtraces: bool) {
    leaks::enable(backtraces);
    leaks::clear();
}

#[test]
fn each_kind_is_counted_while_alive_and_forgotten_when_dropped() {
    let (d, _g) = driver();
    fresh_tracker(false);
    let dev = d.device(0).unwrap();
    let ctx = Context::new(&dev, CUctx_flags::empty()).unwrap();
    assert_eq!(counts(), only(&[(Kind::Contexts, 1)]));
    let primary = PrimaryContext::retain(&dev).unwrap();
    assert_eq!(leaks::live_count(Kind::PrimaryRetains), 1);
    let lib = d
        .load_library(SLICES.as_bytes(), &JitOptions::default())
        .unwrap();
    assert_eq!(leaks::live_count(Kind::Libraries), 1);
    ctx.bind(|cur| -> Result<(), CudaError> {
        let stream = cur.create_stream(CUstream_flags::CU_STREAM_NON_BLOCKING)?;
        let (least, greatest) = cur.stream_priority_range()?;
        let urgent =
            cur.create_stream_with_priority(CUstream_flags::empty(), greatest.min(least))?;
        let _default = cur.default_stream(); // not owned: not counted
        let e1 = cur.create_event::<Timing>()?;
        let e2 = cur.create_event::<NoTiming>()?;
        let module = cur.load_ptx(SLICES, &JitOptions::default())?;
        let linker = cur.linker(&JitOptions::default())?;
        let buf = cur.alloc::<f32>(64)?;
        let managed = cur.alloc_managed::<u32>(64, Attach::Global)?;
        let pinned = cur.alloc_host::<u8>(4096, CUmemhostalloc_flags::empty())?;
        let mut host = vec![0u64; 512];
        let registered = cur.register_host(&mut host, CUmemhostregister_flags::empty())?;
        let pool = cur.create_memory_pool(None)?;
        let _default_pool = cur.default_memory_pool()?; // not owned: not counted
        let from_pool = stream.alloc_from_pool::<f32>(&pool, 32)?;
        let async_buf = stream.alloc_async::<f32>(32)?;
        let mut graph = cur.create_graph()?;
        graph.add_empty(&[])?;
        let graph2 = cur.create_graph()?;
        let exec = graph2.instantiate()?;
        assert_eq!(
            counts(),
            only(&[
                (Kind::Contexts, 1),
                (Kind::PrimaryRetains, 1),
                (Kind::Libraries, 1),
                (Kind::Streams, 2),
                (Kind::Events, 2),
                (Kind::Modules, 1),
                (Kind::Linkers, 1),
                (Kind::DeviceAllocations, 1),
                (Kind::ManagedAllocations, 1),
                (Kind::PinnedHost, 1),
                (Kind::RegisteredHost, 1),
                (Kind::MemoryPools, 1),
                (Kind::PoolAllocations, 2),
                (Kind::Graphs, 2),
                (Kind::GraphExecs, 1),
            ])
        );
        let report = leaks::live();
        assert_eq!(report.total(), 19);
        assert_eq!(report.count(Kind::Streams), 2);
        let shown = report.to_string();
        assert!(shown.contains("19 live driver handle(s)"), "{shown}");
        assert!(shown.contains("  stream: 2"), "{shown}");
        assert!(shown.contains(&format!("stream {:#x}", stream.raw().0 as usize)));
        // Without backtraces each entry says how to get one.
        assert!(shown.contains("enable(true)"), "{shown}");

        // Dropped one by one, each kind leaves.
        from_pool.free_async()?;
        drop(async_buf);
        assert_eq!(leaks::live_count(Kind::PoolAllocations), 0);
        stream.synchronize()?;
        drop((stream, urgent));
        assert_eq!(leaks::live_count(Kind::Streams), 0);
        drop((e1, e2));
        assert_eq!(leaks::live_count(Kind::Events), 0);
        drop(exec);
        assert_eq!(leaks::live_count(Kind::GraphExecs), 0);
        assert_eq!(leaks::live_count(Kind::Graphs), 1);
        drop(graph);
        drop((linker, module, buf, managed, pinned, registered, pool));
        Ok(())
    })
    .unwrap()
    .unwrap();
    assert_eq!(
        counts(),
        only(&[
            (Kind::Contexts, 1),
            (Kind::PrimaryRetains, 1),
            (Kind::Libraries, 1)
        ])
    );
    drop(lib);
    drop(primary);
    drop(ctx);
    assert_eq!(leaks::live().total(), 0);
    assert_eq!(
        leaks::live().to_string(),
        "no live driver handles recorded\n"
    );
    leaks::disable();
    no_leaks();
}

#[test]
fn a_forgotten_handle_is_reported_with_its_backtrace() {
    let (d, _g) = driver();
    fresh_tracker(true);
    let ctx = Context::new(&d.device(0).unwrap(), CUctx_flags::empty()).unwrap();
    let raw = ctx
        .bind(|cur| -> Result<_, CudaError> {
            let kept = cur.create_event::<NoTiming>()?;
            let forgotten = cur.alloc::<u32>(16)?;
            let raw = forgotten.device_ptr();
            std::mem::forget(forgotten);
            drop(kept);
            Ok(raw)
        })
        .unwrap()
        .unwrap();
    // The driver reclaims the allocation with its context; the program leaked it.
    drop(ctx);
    let report = leaks::live();
    assert_eq!(report.total(), 1, "{report}");
    let h = &report.handles()[0];
    assert_eq!((h.kind, h.handle), (Kind::DeviceAllocations, raw));
    let bt = h.backtrace.as_deref().expect("a backtrace");
    // The frames of the creation, from the allocation (the tracker's own left out),
    // called from this test's closure.
    assert!(
        bt.trim_start()
            .split_once(": ")
            .unwrap()
            .1
            .contains("CurrentContext>::alloc"),
        "{bt}"
    );
    assert!(!bt.contains("oxicuda_driver::leaks"), "{bt}");
    assert!(
        bt.contains("debug_tools::a_forgotten_handle_is_reported_with_its_backtrace"),
        "{bt}"
    );
    let shown = report.to_string();
    eprintln!("{shown}");
    assert!(shown.contains("  device buffer: 1"), "{shown}");
    assert!(shown.contains(&format!("device buffer {raw:#x}, created on thread")));
    assert!(shown.contains("CurrentContext>::alloc"), "{shown}");
    leaks::clear();
    leaks::disable();
    no_leaks();
}

/// softcuda refuses the next call of `function`.
fn fail_next(function: &str) {
    softcuda::control::inject_fault(function, 1, CUresult::CUDA_ERROR_INVALID_VALUE.0 as _);
}

fn refused<T>(function: &str, f: impl FnOnce() -> Result<T, CudaError>) {
    fail_next(function);
    let r = f().map(drop);
    softcuda::control::clear_faults();
    assert!(r.is_err(), "{function} was not refused");
    assert_eq!(
        counts(),
        only(&[(Kind::Contexts, 1)]),
        "after {function} failed"
    );
}

#[test]
fn failed_creates_leave_no_entry() {
    let (d, _g) = driver();
    fresh_tracker(true);
    let dev = d.device(0).unwrap();
    let ctx = Context::new(&dev, CUctx_flags::empty()).unwrap();
    ctx.bind(|cur| -> Result<(), CudaError> {
        refused("cuStreamCreate", || {
            cur.create_stream(CUstream_flags::empty())
        });
        refused("cuEventCreate", || cur.create_event::<Timing>());
        refused("cuMemAlloc", || cur.alloc::<f32>(8));
        refused("cuMemAllocManaged", || {
            cur.alloc_managed::<f32>(8, Attach::Global)
        });
        refused("cuMemHostAlloc", || {
            cur.alloc_host::<f32>(8, CUmemhostalloc_flags::empty())
        });
        let mut host = vec![0u8; 64];
        refused("cuMemHostRegister", || {
            cur.register_host(&mut host, CUmemhostregister_flags::empty())
        });
        refused("cuMemPoolCreate", || cur.create_memory_pool(None));
        refused("cuGraphCreate", || cur.create_graph());
        refused("cuGraphInstantiateWithFlags", || {
            cur.create_graph()?.instantiate()
        });
        refused("cuModuleLoadDataEx", || {
            cur.load_ptx(SLICES, &JitOptions::default())
        });
        refused("cuLinkCreate", || cur.linker(&JitOptions::default()));
        // Made, then refused at the next step: the owner drops, and its entry with it.
        refused("cuLinkAddData", || {
            let mut l = cur.linker(&JitOptions::default())?;
            l.add(LinkInput::Ptx {
                name: "link_a.ptx",
                text: LINK_A,
            })
        });
        refused("cuMemsetD8", || cur.alloc_managed::<u32>(8, Attach::Global));
        let stream = cur.create_stream(CUstream_flags::empty())?;
        fail_next("cuMemAllocAsync");
        assert!(stream.alloc_async::<f32>(8).is_err());
        softcuda::control::clear_faults();
        assert_eq!(leaks::live_count(Kind::PoolAllocations), 0);
        Ok(())
    })
    .unwrap()
    .unwrap();
    refused("cuLibraryLoadData", || {
        d.load_library(SLICES.as_bytes(), &JitOptions::default())
    });
    refused("cuCtxCreate", || Context::new(&dev, CUctx_flags::empty()));
    // Created, then refused while being left un-current: destroyed, and forgotten.
    refused("cuCtxPopCurrent", || {
        Context::new(&dev, CUctx_flags::empty())
    });
    refused("cuDevicePrimaryCtxRetain", || PrimaryContext::retain(&dev));
    drop(ctx);
    assert_eq!(leaks::live().total(), 0);
    leaks::disable();
    no_leaks();
}

#[test]
fn handles_dropped_on_another_thread_leave_the_report() {
    let (d, _g) = driver();
    fresh_tracker(false);
    let dev = d.device(0).unwrap();
    let ctx = Context::new(&dev, CUctx_flags::empty()).unwrap();
    let primary = PrimaryContext::retain(&dev).unwrap();
    let lib = d
        .load_library(SLICES.as_bytes(), &JitOptions::default())
        .unwrap();
    let creator = format!("{:?}", std::thread::current().name());
    assert_eq!(leaks::live().total(), 3);
    assert!(
        leaks::live()
            .handles()
            .iter()
            .all(|h| format!("{:?}", Some(h.thread.as_str())) == creator)
    );
    std::thread::spawn(move || {
        // Used, then dropped, here.
        ctx.bind(|cur| cur.alloc::<u8>(8).map(drop))
            .unwrap()
            .unwrap();
        drop((ctx, primary));
    })
    .join()
    .unwrap();
    drop(lib); // a Library is not `Send`
    assert_eq!(leaks::live().total(), 0);
    // Off: nothing is recorded.
    leaks::disable();
    assert!(!leaks::is_enabled());
    let ctx = Context::new(&dev, CUctx_flags::empty()).unwrap();
    assert_eq!(leaks::live().total(), 0);
    // Recorded while on, dropped while off: still leaves.
    leaks::enable(false);
    let ctx2 = Context::new(&dev, CUctx_flags::empty()).unwrap();
    leaks::disable();
    assert_eq!(leaks::live_count(Kind::Contexts), 1);
    drop(ctx2);
    drop(ctx);
    assert_eq!(leaks::live_count(Kind::Contexts), 0);
    no_leaks();
}

// ---- launch tracing -------------------------------------------------------------

/// The fields of one span, as text.
type Fields = HashMap<String, String>;

/// A subscriber that keeps the fields of every span of `target` it is shown (all
/// others are refused), and the fields recorded into them later.
#[derive(Clone, Default)]
struct Recorder {
    target: &'static str,
    spans: Arc<Mutex<Vec<Fields>>>,
    entered: Arc<Mutex<usize>>,
}

struct Visit<'a>(&'a mut Fields);

impl tracing::field::Visit for Visit<'_> {
    fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
        self.0.insert(field.name().to_owned(), format!("{value:?}"));
    }
    fn record_str(&mut self, field: &tracing::field::Field, value: &str) {
        self.0.insert(field.name().to_owned(), value.to_owned());
    }
}

impl tracing::Subscriber for Recorder {
    fn enabled(&self, m: &tracing::Metadata<'_>) -> bool {
        m.target() == self.target
    }
    fn new_span(&self, span: &tracing::span::Attributes<'_>) -> tracing::span::Id {
        let mut f = Fields::new();
        f.insert("name".into(), span.metadata().name().into());
        span.record(&mut Visit(&mut f));
        let mut spans = self.spans.lock().unwrap();
        spans.push(f);
        tracing::span::Id::from_u64(spans.len() as u64)
    }
    fn record(&self, id: &tracing::span::Id, values: &tracing::span::Record<'_>) {
        let mut spans = self.spans.lock().unwrap();
        let f = &mut spans[id.into_u64() as usize - 1];
        values.record(&mut Visit(f));
    }
    fn record_follows_from(&self, _: &tracing::span::Id, _: &tracing::span::Id) {}
    fn event(&self, _: &tracing::Event<'_>) {}
    fn enter(&self, _: &tracing::span::Id) {
        *self.entered.lock().unwrap() += 1;
    }
    fn exit(&self, _: &tracing::span::Id) {}
}

fn fields(pairs: &[(&str, String)]) -> Fields {
    pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), v.clone()))
        .collect()
}

#[test]
fn each_launch_is_a_span_with_its_shape() {
    let (d, _g) = driver();
    let rec = Recorder {
        target: oxicuda_driver::trace::LAUNCH_TARGET,
        ..Recorder::default()
    };
    let ctx = Context::new(&d.device(0).unwrap(), CUctx_flags::empty()).unwrap();
    let stream_raw = tracing::subscriber::with_default(rec.clone(), || {
        ctx.bind(|cur| -> Result<_, CudaError> {
            let module = cur.load_ptx(SLICES, &JitOptions::default())?;
            // SAFETY: kernels/slices.cu: vector_add reads a and b and writes c, each
            // only below its length.
            let add = unsafe { module.function::<Add>("vector_add")? };
            let a = cur.alloc_from(&[1f32; 256])?;
            let b = cur.alloc_from(&[2f32; 256])?;
            let mut c = cur.alloc::<f32>(256)?;
            let stream = cur.create_stream(CUstream_flags::CU_STREAM_NON_BLOCKING)?;
            add.launch(&stream, (2, 1, 1), (128, 1, 1), 0, (&a, &b, &mut c))?;
            add.launch_with(
                &stream,
                &LaunchConfig::new(4, 64).shared(16),
                (&a, &b, &mut c),
            )?;
            add.launch_cooperative(&stream, 1, 32, 0, (&a, &b, &mut c))?;
            fail_next("cuLaunchKernel");
            let failed = add.launch(&stream, 1, 32, 0, (&a, &b, &mut c));
            softcuda::control::clear_faults();
            assert_eq!(
                failed,
                Err(CudaError::Driver(CUresult::CUDA_ERROR_INVALID_VALUE))
            );
            stream.synchronize()?;
            assert_eq!(c.to_vec()?, vec![3f32; 256]);
            Ok(format!("{:?}", stream.raw()))
        })
    })
    .unwrap()
    .unwrap();
    drop(ctx);
    let spans = rec.spans.lock().unwrap().clone();
    let common = |api: &str, grid: &str, block: &str, shared: u32, coop: bool| {
        fields(&[
            ("name", "launch".into()),
            ("kernel", "vector_add".into()),
            ("api", api.into()),
            ("grid", grid.into()),
            ("block", block.into()),
            ("shared_bytes", shared.to_string()),
            ("stream", stream_raw.clone()),
            ("cooperative", coop.to_string()),
        ])
    };
    let mut failed = common("cuLaunchKernel", "(1, 1, 1)", "(32, 1, 1)", 0, false);
    failed.insert(
        "error".into(),
        CudaError::Driver(CUresult::CUDA_ERROR_INVALID_VALUE).to_string(),
    );
    assert_eq!(
        spans,
        vec![
            common("cuLaunchKernel", "(2, 1, 1)", "(128, 1, 1)", 0, false),
            common("cuLaunchKernelEx", "(4, 1, 1)", "(64, 1, 1)", 16, false),
            common("cuLaunchKernelEx", "(1, 1, 1)", "(32, 1, 1)", 0, true),
            failed,
        ]
    );
    // Each launch ran inside its span.
    assert_eq!(*rec.entered.lock().unwrap(), 4);
    no_leaks();
}

#[test]
fn a_subscriber_that_filters_launches_out_sees_none() {
    let (d, _g) = driver();
    let rec = Recorder {
        target: "someone else",
        ..Recorder::default()
    };
    let ctx = Context::new(&d.device(0).unwrap(), CUctx_flags::empty()).unwrap();
    tracing::subscriber::with_default(rec.clone(), || {
        ctx.bind(|cur| -> Result<(), CudaError> {
            let module = cur.load_ptx(SLICES, &JitOptions::default())?;
            // SAFETY: as above.
            let add = unsafe { module.function::<Add>("vector_add")? };
            let a = cur.alloc_from(&[1f32; 32])?;
            let mut c = cur.alloc::<f32>(32)?;
            let stream = cur.default_stream();
            add.launch(&stream, 1, 32, 0, (&a, &a, &mut c))?;
            stream.synchronize()?;
            assert_eq!(c.to_vec()?, vec![2f32; 32]);
            Ok(())
        })
    })
    .unwrap()
    .unwrap();
    drop(ctx);
    assert!(rec.spans.lock().unwrap().is_empty());
    assert_eq!(*rec.entered.lock().unwrap(), 0);
    no_leaks();
}

// ---- snapshot -------------------------------------------------------------------

#[test]
fn a_snapshot_holds_what_each_query_answers() {
    let (d, _g) = driver();
    let dev = d.device(0).unwrap();
    let profile = softcuda::control::config().devices[0].clone();
    let ctx = Context::new(&dev, CUctx_flags::empty()).unwrap();
    ctx.bind(|cur| -> Result<(), CudaError> {
        // A limit set by the test shows as set.
        let stack = cur.limit(CUlimit::CU_LIMIT_STACK_SIZE)? + 512;
        cur.set_limit(CUlimit::CU_LIMIT_STACK_SIZE, stack)?;
        let buf = cur.alloc::<u8>(3 << 20)?;
        let s = Snapshot::take(cur);
        assert_eq!(s.context, cur.raw());
        assert_eq!(s.api_version, cur.api_version());
        assert_eq!(s.flags, cur.flags());
        assert_eq!(s.device, Ok(dev));
        assert_eq!(s.name.as_deref(), Ok(profile.name.as_str()));
        assert_eq!(s.compute_capability, Ok(profile.cc));
        assert_eq!(s.memory, cur.memory_info());
        let (free, total) = s.memory.clone()?;
        assert_eq!(total as u64, profile.total_mem);
        assert!(free <= total - (3 << 20));
        assert_eq!(s.cache_config, cur.cache_config());
        assert_eq!(s.stream_priority_range, cur.stream_priority_range());
        assert_eq!(s.limit(CUlimit::CU_LIMIT_STACK_SIZE), Some(&Ok(stack)));
        // Every limit of the header, each as the driver answers it — those softcuda
        // does not support as their error, the rest of the snapshot intact.
        let asked: Vec<CUlimit> = s.limits.iter().map(|(l, _)| *l).collect();
        let known: Vec<CUlimit> = CUlimit::KNOWN
            .iter()
            .map(|(_, l)| *l)
            .filter(|l| *l != CUlimit::CU_LIMIT_MAX)
            .collect();
        assert_eq!(asked, known);
        for (l, v) in &s.limits {
            assert_eq!(v, &cur.limit(*l), "{l:?}");
        }
        let unsupported = s.limit(CUlimit::CU_LIMIT_SHMEM_SIZE).unwrap();
        assert!(unsupported.is_err(), "{unsupported:?}");
        assert_eq!(s.attributes.len(), KEY_ATTRIBUTES.len());
        for (a, v) in &s.attributes {
            assert_eq!(v, &dev.attribute(*a), "{a:?}");
        }
        use oxicuda_driver::sys::CUdevice_attribute as A;
        assert_eq!(
            s.attribute(A::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT),
            Some(&Ok(profile.sm_count as i32))
        );

        let shown = s.to_string();
        eprintln!("{shown}");
        for line in [
            format!("context {:?}", cur.raw()),
            format!("device:             0 — {}", profile.name),
            format!("compute capability: {}.{}", profile.cc.0, profile.cc.1),
            format!("({free} of {total} bytes)"),
            format!("stack size                           {stack}"),
            format!(
                "shmem size                           unsupported ({})",
                unsupported.clone().unwrap_err()
            ),
            format!("multiprocessor count                 {}", profile.sm_count),
        ] {
            assert!(shown.contains(&line), "{line:?} not in\n{shown}");
        }
        drop(buf);
        Ok(())
    })
    .unwrap()
    .unwrap();
    drop(ctx);
    no_leaks();
}

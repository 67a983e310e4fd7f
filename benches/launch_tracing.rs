//! What launch tracing (`oxicuda_driver::trace`) costs a launch of a null kernel with
//! four arguments, `tracing` compiled in as always:
//!
//! - `no_subscriber`: nobody listens (`tracing`'s global level is OFF) — the case that
//!   must cost nothing;
//! - `info_subscriber`: a subscriber whose level hint is INFO, as an `EnvFilter` of
//!   `info` gives — the global level check stops it;
//! - `filtering_subscriber`: a subscriber with no level hint that refuses the launch
//!   target — the level check passes, `tracing`'s cached callsite interest refuses;
//! - `enabled`: a subscriber that takes every launch span and formats its fields (the
//!   kernel name asked of the driver each time), as a logging subscriber would.
//!
//! `no_subscriber` runs first: once a subscriber has been registered, `tracing` keeps
//! a process-wide level that only a later registration recomputes.
//!
//! On softcuda in-process by default; on the zero-cost stub of `scripts/bench.sh`
//! (`OXICUDA_DRIVER_PATH=.../stub/libcuda.so.1`) the figures are the binding's own.
//! `cargo bench --bench launch_tracing`.
#![allow(missing_docs)] // criterion_group! defines an undocumented public function

#[path = "common/mod.rs"]
mod common;

use criterion::{Criterion, criterion_group, criterion_main};
use oxicuda_driver::context::PrimaryContext;
use oxicuda_driver::module::JitOptions;
use oxicuda_driver::trace::LAUNCH_TARGET;
use oxicuda_driver::{CudaError, Device};
use std::fmt::Write as _;
use std::hint::black_box;
use std::sync::atomic::{AtomicU64, Ordering};
use tracing::level_filters::LevelFilter;
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Metadata, Subscriber};

const NULL_ARGS: &str = include_str!("../kernels/null_args.ptx");

/// A subscriber that wants spans of `target` at levels up to `hint` (`None`: no hint,
/// so `tracing` cannot rule anything out globally) and formats the fields of each
/// span it takes, as a logging subscriber would.
struct Sub {
    target: &'static str,
    hint: Option<LevelFilter>,
    next: AtomicU64,
}

struct Fmt<'a>(&'a mut String);
impl tracing::field::Visit for Fmt<'_> {
    fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
        let _ = write!(self.0, " {}={value:?}", field.name());
    }
}

impl Subscriber for Sub {
    fn enabled(&self, m: &Metadata<'_>) -> bool {
        m.target() == self.target
    }
    fn max_level_hint(&self) -> Option<LevelFilter> {
        self.hint
    }
    fn new_span(&self, span: &Attributes<'_>) -> Id {
        let mut line = String::new();
        span.record(&mut Fmt(&mut line));
        black_box(&line);
        Id::from_u64(self.next.fetch_add(1, Ordering::Relaxed) + 1)
    }
    fn record(&self, _: &Id, _: &Record<'_>) {}
    fn record_follows_from(&self, _: &Id, _: &Id) {}
    fn event(&self, _: &Event<'_>) {}
    fn enter(&self, _: &Id) {}
    fn exit(&self, _: &Id) {}
}

fn benches(c: &mut Criterion) {
    let d = common::driver("launch_tracing");
    let device: Device = d.device(0).expect("a device");
    let primary = PrimaryContext::retain(&device).expect("the primary context");
    primary
        .bind(|cur| -> Result<(), CudaError> {
            let module = cur.load_ptx(NULL_ARGS, &JitOptions::default())?;
            // SAFETY: kernels/null_args.cu: null4 takes four u32s and touches no memory.
            let f = unsafe { module.function::<(u32, u32, u32, u32)>("null4")? };
            let stream = cur.default_stream();
            let mut g = c.benchmark_group("launch_tracing");
            let mut run = |name: &str, sub: Option<Sub>| {
                let bench = |b: &mut criterion::Bencher<'_>| {
                    b.iter(|| {
                        f.launch(&stream, 1, 1, 0, (black_box(1u32), 2, 3, 4))
                            .expect("launch")
                    })
                };
                match sub {
                    None => g.bench_function(name, bench),
                    Some(s) => {
                        let dispatch = tracing::Dispatch::new(s);
                        tracing::dispatcher::with_default(&dispatch, || {
                            g.bench_function(name, bench)
                        })
                    }
                };
            };
            run("no_subscriber", None);
            run(
                "info_subscriber",
                Some(Sub {
                    target: LAUNCH_TARGET,
                    hint: Some(LevelFilter::INFO),
                    next: AtomicU64::new(0),
                }),
            );
            run(
                "filtering_subscriber",
                Some(Sub {
                    target: "another_target",
                    hint: None,
                    next: AtomicU64::new(0),
                }),
            );
            run(
                "enabled",
                Some(Sub {
                    target: LAUNCH_TARGET,
                    hint: None,
                    next: AtomicU64::new(0),
                }),
            );
            g.finish();
            stream.synchronize()
        })
        .expect("bind")
        .expect("the benchmark ran");
}

criterion_group!(group, benches);
criterion_main!(group);

//! Start-up and call costs against the real 535 driver (`scripts/fixtures.sh`):
//! - `load/dlopen_and_resolve`: open the library and resolve the whole table;
//! - `load/resolve_table`: resolve the whole table through cuGetProcAddress_v2 alone;
//! - `call/cuDriverGetVersion`: one cheap call through the safe API vs the raw pointer.
//!
//! `cargo bench --bench init`
#![allow(missing_docs)] // criterion_group! defines an undocumented public function

use criterion::{Criterion, criterion_group, criterion_main};
use oxicuda_driver::{Driver, DriverOptions};
use std::hint::black_box;
use std::path::PathBuf;

fn real_driver() -> Option<PathBuf> {
    let path = std::env::var_os("OXICUDA_REAL_DRIVER")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(env!("CARGO_MANIFEST_DIR"))
                .join(".fixtures/libcuda/usr/lib/x86_64-linux-gnu/nvidia/current/libcuda.so.1")
        });
    if path.exists() {
        return Some(path);
    }
    assert!(
        std::env::var("CI").is_err(),
        "fixture missing: {} (run scripts/fixtures.sh)",
        path.display()
    );
    eprintln!(
        "SKIPPED: {} is missing (run scripts/fixtures.sh)",
        path.display()
    );
    None
}

fn benches(c: &mut Criterion) {
    let Some(path) = real_driver() else { return };
    // SAFETY: the fixture is NVIDIA's libcuda.so.1 (535).
    let options = unsafe { DriverOptions::new().path(&path) };
    // Held for the whole run, so that re-opening the library is a reference count.
    let driver = Driver::load(&options).expect("the 535 driver loads");
    let get_proc = driver
        .table()
        .cuGetProcAddress()
        .expect("cuGetProcAddress_v2");

    let mut g = c.benchmark_group("load");
    g.bench_function("dlopen_and_resolve", |b| {
        b.iter(|| black_box(Driver::load(black_box(&options))))
    });
    g.bench_function("resolve_table", |b| {
        // SAFETY: the real driver's cuGetProcAddress_v2, valid while `driver` lives.
        b.iter(|| black_box(unsafe { Driver::from_proc_address(get_proc, &DriverOptions::new()) }))
    });
    g.finish();

    let raw = driver
        .table()
        .cuDriverGetVersion()
        .expect("cuDriverGetVersion");
    let mut g = c.benchmark_group("call");
    g.bench_function("cuDriverGetVersion/safe", |b| {
        b.iter(|| black_box(driver.query_version()))
    });
    g.bench_function("cuDriverGetVersion/raw", |b| {
        b.iter(|| {
            let mut v = 0;
            // SAFETY: a valid out-pointer.
            black_box(unsafe { raw(&mut v) });
            black_box(v)
        })
    });
    g.finish();
}

criterion_group!(init, benches);
criterion_main!(init);

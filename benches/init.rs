//! Start-up and call costs against the real 535 driver (`scripts/fixtures.sh`):
//! - `load/dlopen_and_resolve`: `Driver::load` of the already-open library (its
//!   version; the table is resolved on first use);
//! - `load/resolve_table`: resolve the whole table through cuGetProcAddress_v2 alone
//!   (what a load cost when the table was resolved up front);
//! - `call/cuDriverGetVersion`: one cheap call through the safe API vs the raw pointer;
//! - `init_vs_cudarc/{ours,cudarc}`: a fresh process's first driver call, from nothing to
//!   the answer of `cuDriverGetVersion` (timed inside a child process, so that both pay
//!   the first `dlopen` of the library): ours loads the library, asks its version and
//!   resolves what it calls through `cuGetProcAddress_v2` on first use; cudarc 0.19 (`dynamic-loading`) `dlopen`s
//!   `libcuda.so` (the fixture's folder on `LD_LIBRARY_PATH`) and resolves each
//!   function lazily, by `dlsym`, on its first call — here the one function called;
//! - `init_vs_cudarc` alternating pairs: the same first call, ours and cudarc in turn,
//!   `INIT_PAIRS` times each (default 60): the medians and their ratio, the figure the
//!   report's target row uses;
//! - `load/dlsym_one_symbol`: what each later first call costs cudarc (one `dlsym`).
//!   `cuInit` itself fails on the fixture without a GPU, so neither side calls it.
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

/// In a child process: time the first driver call from nothing, print nanoseconds.
fn child(which: &str, path: &std::path::Path) {
    let t = std::time::Instant::now();
    // The clock stops at the answer: the library stays open past it on both sides
    // (cudarc keeps it in a static; ours is dropped, and `dlclose`d, only after).
    let (version, ns, _driver) = match which {
        "ours" => {
            // SAFETY: the fixture is NVIDIA's libcuda.so.1 (535).
            let options = unsafe { DriverOptions::new().path(path) };
            let d = Driver::load(&options).expect("the 535 driver loads");
            let v = d.query_version().expect("a version").raw();
            (v, t.elapsed().as_nanos(), Some(d))
        }
        _ => {
            let mut v = 0;
            // SAFETY: a valid out-pointer.
            let r = unsafe { cudarc::driver::sys::cuDriverGetVersion(&mut v) };
            assert_eq!(r, cudarc::driver::sys::CUresult::CUDA_SUCCESS);
            (v as u32, t.elapsed().as_nanos(), None)
        }
    };
    assert!(version >= 12000, "{which}: version {version}");
    println!("{ns}");
}

/// Runs a child process (`child`) and returns the time it printed.
fn child_ns(which: &str, dir: &std::path::Path) -> u64 {
    let out = std::process::Command::new(std::env::current_exe().expect("exe"))
        .arg("--bench")
        .env("INIT_CHILD", which)
        .env("LD_LIBRARY_PATH", dir)
        .output()
        .expect("the child runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .find_map(|l| l.trim().parse().ok())
        .expect("the child prints its time")
}

/// `INIT_PAIRS` (default 60; 0 skips) fresh processes of each binding, alternating
/// ours and cudarc, so that both see the same machine at the same moments (criterion
/// runs one benchmark after the other, and this machine's load drifts between them).
/// Prints the medians and writes them to `<target>/bench-init-pairs.txt` for
/// `scripts/bench_report.py`.
fn alternating_pairs(dir: &std::path::Path) {
    let n: usize = std::env::var("INIT_PAIRS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(60);
    if n == 0 {
        return;
    }
    let (mut ours, mut cudarc) = (Vec::with_capacity(n), Vec::with_capacity(n));
    for _ in 0..n {
        ours.push(child_ns("ours", dir));
        cudarc.push(child_ns("cudarc", dir));
    }
    let median = |v: &mut Vec<u64>| {
        v.sort_unstable();
        v[v.len() / 2]
    };
    let (o, c) = (median(&mut ours), median(&mut cudarc));
    let line = format!(
        "pairs {n}: ours {o} ns, cudarc {c} ns, ratio {:.3}\n",
        o as f64 / c as f64
    );
    print!("init_vs_cudarc alternating {line}");
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target"));
    std::fs::write(target.join("bench-init-pairs.txt"), line).expect("the pairs file");
}

fn benches(c: &mut Criterion) {
    let Some(path) = real_driver() else { return };
    if let Ok(which) = std::env::var("INIT_CHILD") {
        child(&which, &path);
        std::process::exit(0);
    }
    let dir = path.parent().expect("a folder").to_owned();
    let mut g = c.benchmark_group("init_vs_cudarc");
    g.sample_size(20);
    for which in ["ours", "cudarc"] {
        g.bench_function(which, |b| {
            b.iter_custom(|iters| {
                (0..iters)
                    .map(|_| std::time::Duration::from_nanos(child_ns(which, &dir)))
                    .sum()
            })
        });
    }
    g.finish();
    alternating_pairs(&dir);

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
    let lib = {
        // SAFETY: as above; only symbols are looked up.
        unsafe { libloading::Library::new(&path) }.expect("dlopen")
    };
    g.bench_function("dlsym_one_symbol", |b| {
        // SAFETY: the symbol is only looked up, never called.
        b.iter(|| {
            black_box(
                unsafe { lib.get::<unsafe extern "C" fn()>(black_box(b"cuLaunchKernel\0")) }
                    .is_ok(),
            )
        })
    });
    g.bench_function("resolve_table", |b| {
        // SAFETY: the real driver's cuGetProcAddress_v2, valid while `driver` lives.
        b.iter(|| {
            let d = unsafe { Driver::from_proc_address(get_proc, &DriverOptions::new()) };
            let d = d.expect("the in-process load");
            black_box(d.table().resolved().filter(|(_, ok)| *ok).count())
        })
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

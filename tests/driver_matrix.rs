//! The crate against every real NVIDIA driver branch Debian ships, from 390 (CUDA 9.1)
//! to 555 (CUDA 12.5): each `libcuda.so.1` (fetched by `scripts/fixtures.sh`, kept
//! without the rest of its package) loads, reports its version, resolves its table
//! through the mechanism its version has, hands out no function newer than itself,
//! and answers every call a machine without a GPU can make with a typed error; its
//! `libnvidia-ml.so.1` opens and its `nvmlInit` is a typed error too.
//! `docs/driver-matrix.md` is this test's output: it fails when the committed table
//! differs (`OXICUDA_BLESS=1` rewrites it).

mod common;

use oxicuda_driver::nvml::NvmlLibrary;
use oxicuda_driver::{CudaError, Driver, DriverOptions, DriverVersion, Resolver};
use std::fmt::Write as _;
use std::path::PathBuf;

/// A driver branch: its name, its fixture, and the CUDA version it reports.
struct Branch {
    name: &'static str,
    package: &'static str,
    cuda: DriverVersion,
    resolver: Resolver,
}

const BRANCHES: &[Branch] = &[
    Branch {
        name: "390",
        package: "libnvidia-legacy-390xx-cuda1 (bullseye)",
        cuda: DriverVersion::new(9, 1),
        resolver: Resolver::Dlsym,
    },
    Branch {
        name: "418",
        package: "libnvidia-tesla-418-cuda1 (bullseye)",
        cuda: DriverVersion::new(10, 1),
        resolver: Resolver::Dlsym,
    },
    Branch {
        name: "450",
        package: "libnvidia-tesla-450-cuda1 (bullseye)",
        cuda: DriverVersion::new(11, 0),
        resolver: Resolver::Dlsym,
    },
    Branch {
        name: "470",
        package: "libnvidia-tesla-470-cuda1 (bookworm)",
        cuda: DriverVersion::new(11, 4),
        resolver: Resolver::ProcAddress,
    },
    Branch {
        name: "535",
        package: "libcuda1 (bookworm)",
        cuda: DriverVersion::new(12, 2),
        resolver: Resolver::ProcAddressV2,
    },
    Branch {
        name: "550",
        package: "libcuda1 (trixie)",
        cuda: DriverVersion::new(12, 4),
        resolver: Resolver::ProcAddressV2,
    },
    Branch {
        name: "555",
        package: "libcuda1 (experimental)",
        cuda: DriverVersion::new(12, 5),
        resolver: Resolver::ProcAddressV2,
    },
];

/// The branch's `libcuda.so.1`.
fn fixture(b: &Branch) -> Option<PathBuf> {
    if b.name == "535" {
        return common::real_driver();
    }
    common::fixture(
        &format!("OXICUDA_DRIVER_{}", b.name),
        &format!("drivers/{}/libcuda.so.1", b.name),
    )
}

/// Functions every branch has, which the crate needs for its basics: each resolves,
/// under whatever mechanism the driver offers.
const BASICS: &[&str] = &[
    "cuInit",
    "cuDriverGetVersion",
    "cuDeviceGetCount",
    "cuDeviceGet",
    "cuCtxCreate_v3020",
    "cuCtxDestroy",
    "cuCtxSetCurrent",
    "cuDevicePrimaryCtxRetain",
    "cuMemAlloc",
    "cuMemFree",
    "cuMemcpyHtoD",
    "cuMemcpyDtoH",
    "cuModuleLoadData",
    "cuModuleGetFunction",
    "cuLaunchKernel",
    "cuStreamCreate",
    "cuStreamSynchronize",
    "cuEventCreate",
    "cuEventRecord",
    "cuGetErrorName",
];

/// The branch's `libnvidia-ml.so.1`.
fn nvml_fixture(b: &Branch) -> Option<PathBuf> {
    if b.name == "535" {
        return common::real_nvml();
    }
    common::fixture(
        &format!("OXICUDA_NVML_{}", b.name),
        &format!("drivers/{}/libnvidia-ml.so.1", b.name),
    )
}

/// NVML of the branch: it opens, says which of the functions the crate uses it
/// lacks, and its init (no NVIDIA kernel driver here) is a typed error.
fn probe_nvml(b: &Branch, path: PathBuf) -> (Vec<&'static str>, String) {
    // SAFETY: the fixture is NVIDIA's libnvidia-ml.so.1 of this branch.
    let lib = unsafe { NvmlLibrary::open(&path) }.unwrap_or_else(|e| panic!("{}: {e}", b.name));
    let missing = lib.missing_functions();
    let err = match lib.init() {
        Ok(_) => panic!("{}: NVML initialised without a GPU", b.name),
        Err(e) => e,
    };
    assert!(err.code().is_some(), "{}: {err:?}", b.name);
    (missing, err.to_string())
}

/// What one branch did, as the table shows it.
struct Row {
    version: DriverVersion,
    resolver: Resolver,
    resolved: usize,
    older: usize,
    missing: Vec<&'static str>,
    init: String,
}

fn probe(b: &Branch, path: PathBuf) -> Row {
    // Branches before 450 link `libnvidia-fatbinaryloader.so.<release>`, which the
    // fixture keeps beside the library: load it first, so that the soname is found.
    for helper in std::fs::read_dir(path.parent().unwrap()).unwrap().flatten() {
        if helper
            .file_name()
            .to_string_lossy()
            .starts_with("libnvidia-fatbinaryloader")
        {
            // SAFETY: NVIDIA's loader library, whose initialisers only set up itself;
            // kept loaded for the process (the driver links it).
            let lib = unsafe {
                libloading::os::unix::Library::open(
                    Some(helper.path()),
                    libloading::os::unix::RTLD_NOW | libloading::os::unix::RTLD_GLOBAL,
                )
            };
            std::mem::forget(lib.unwrap());
        }
    }
    // SAFETY: the fixture is NVIDIA's libcuda.so.1 of this branch.
    let options = unsafe { DriverOptions::new().path(&path) };
    let d = Driver::load(&options).unwrap_or_else(|e| panic!("{}: {e}", b.name));
    assert_eq!(d.version(), b.cuda, "{}: version", b.name);
    assert_eq!(
        d.query_version(),
        Ok(b.cuda),
        "{}: cuDriverGetVersion",
        b.name
    );
    assert_eq!(d.resolver(), b.resolver, "{}: resolver", b.name);
    // No function newer than the driver is handed out: its older ABI would be
    // called with the newer signature.
    let (mut resolved, mut older, mut missing) = (0, 0, Vec::new());
    for (entry, ok) in d.table().resolved() {
        if entry.version > b.cuda.raw() {
            assert!(
                !ok,
                "{}: {} ({}) resolved",
                b.name, entry.name, entry.version
            );
            continue;
        }
        older += 1;
        resolved += usize::from(ok);
        if !ok {
            missing.push(entry.name);
        }
    }
    // The basics every branch has, whatever its resolver.
    for f in BASICS {
        let e = d.table().resolved().find(|(e, _)| e.name == *f);
        assert!(
            matches!(e, Some((_, true))),
            "{}: {f} did not resolve",
            b.name
        );
    }
    if b.resolver == Resolver::Dlsym {
        // dlsym cannot choose an ABI: `cuCtxCreate_v3020` must be the `_v2` export
        // (`cuCtxCreate` itself is the CUDA 2.0 ABI), `cuMemAlloc` cuda.h's `_v2`.
        // SAFETY: the same library, already loaded; only addresses are read.
        let lib = unsafe { libloading::Library::new(&path) }.unwrap();
        let addr = |name: &str| {
            // SAFETY: only the symbol's address is read.
            unsafe { lib.get::<*mut std::ffi::c_void>(name.as_bytes()) }
                .map(|s| *s as usize)
                .ok()
        };
        let create = d.table().cuCtxCreate_v3020().unwrap() as usize;
        assert_eq!(Some(create), addr("cuCtxCreate_v2"), "{}", b.name);
        assert_ne!(Some(create), addr("cuCtxCreate"), "{}", b.name);
        let alloc = d.table().cuMemAlloc().unwrap() as usize;
        assert_eq!(Some(alloc), addr("cuMemAlloc_v2"), "{}", b.name);
        // cuda.h names these through `__CUDA_API_PTDS(..._v2)`: the plain export is
        // the CUDA 2.0 ABI (32-bit device pointers and counts), never to be called.
        let t = d.table();
        for (name, got) in [
            ("cuMemcpyHtoD_v2", t.cuMemcpyHtoD().unwrap() as usize),
            ("cuMemcpyDtoH_v2", t.cuMemcpyDtoH().unwrap() as usize),
            ("cuMemcpyDtoD_v2", t.cuMemcpyDtoD().unwrap() as usize),
            (
                "cuMemcpyHtoDAsync_v2",
                t.cuMemcpyHtoDAsync().unwrap() as usize,
            ),
            (
                "cuMemcpyDtoHAsync_v2",
                t.cuMemcpyDtoHAsync().unwrap() as usize,
            ),
            ("cuMemcpy2D_v2", t.cuMemcpy2D().unwrap() as usize),
            ("cuMemsetD8_v2", t.cuMemsetD8().unwrap() as usize),
            ("cuMemsetD32_v2", t.cuMemsetD32().unwrap() as usize),
        ] {
            assert_eq!(Some(got), addr(name), "{}: {name}", b.name);
        }
        if let Ok(capture) = t.cuStreamBeginCapture() {
            // The 10.0 export takes no mode: the 10.1 ABI is `_v2`.
            assert_eq!(
                Some(capture as usize),
                addr("cuStreamBeginCapture_v2"),
                "{}",
                b.name
            );
        }
    }
    // No GPU here: cuInit's answer is a typed driver error, kept; every call that
    // needs the device says so.
    let init = d.init().expect_err("no GPU on this machine");
    assert!(matches!(init, CudaError::Driver(_)), "{}: {init:?}", b.name);
    assert_eq!(d.init().unwrap_err(), init);
    let count = d.device_count();
    assert!(count.is_err(), "{}: device_count {count:?}", b.name);
    Row {
        version: d.version(),
        resolver: d.resolver(),
        resolved,
        older,
        missing,
        init: init.to_string(),
    }
}

#[test]
fn every_driver_branch_loads_resolves_and_answers_with_typed_errors() {
    let mut md = String::new();
    let w = &mut md;
    let _ = writeln!(w, "# Driver matrix");
    let _ = writeln!(w);
    let _ = writeln!(
        w,
        "Generated by `OXICUDA_BLESS=1 cargo test --test driver_matrix` from the real"
    );
    let _ = writeln!(
        w,
        "`libcuda.so.1` of each NVIDIA driver branch Debian ships (`scripts/fixtures.sh`"
    );
    let _ = writeln!(
        w,
        "fetches them), on a machine without a GPU. *Resolved*: the crate's table entries"
    );
    let _ = writeln!(
        w,
        "whose ABI is no newer than the driver, and how many of them the driver provides;"
    );
    let _ = writeln!(
        w,
        "every newer entry is absent (the test asserts it), so no call reaches an older"
    );
    let _ = writeln!(w, "ABI with a newer signature.");
    let _ = writeln!(w);
    let _ = writeln!(
        w,
        "| branch | package | CUDA | resolver | resolved | `cuInit` |"
    );
    let _ = writeln!(w, "|---|---|---|---|---|---|");
    for b in BRANCHES {
        let Some(path) = fixture(b) else { return };
        let r = probe(b, path);
        let Some(nvml) = nvml_fixture(b) else { return };
        let (nvml_missing, nvml_init) = probe_nvml(b, nvml);
        let _ = writeln!(
            w,
            "| {} | `{}` | {} | {:?} | {} of {} | {} | {} | {} | {} |",
            b.name,
            b.package,
            r.version,
            r.resolver,
            r.resolved,
            r.older,
            r.missing.join(", "),
            r.init,
            nvml_missing.join(", "),
            nvml_init
        );
    }
    let doc = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("docs/driver-matrix.md");
    if std::env::var_os("OXICUDA_BLESS").is_some() {
        std::fs::write(&doc, &md).unwrap();
    }
    let committed = std::fs::read_to_string(&doc).unwrap_or_default();
    assert_eq!(
        committed, md,
        "docs/driver-matrix.md is out of date: OXICUDA_BLESS=1"
    );
}

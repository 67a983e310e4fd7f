//! Test fixtures: the real 535 driver and the CUDA 12.9 / 13.x headers, fetched by
//! `scripts/fixtures.sh`. Under `CI=true` a missing fixture fails the test; elsewhere
//! the test says loudly that it skipped.
#![allow(dead_code)]

use std::path::PathBuf;

fn fixtures_dir() -> PathBuf {
    std::env::var_os("OXICUDA_FIXTURES")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(".fixtures"))
}

/// The fixture at `$var`, else at `.fixtures/<rel>`. `None` (after a loud message)
/// when it is missing outside CI; a panic when it is missing under `CI=true`.
pub fn fixture(var: &str, rel: &str) -> Option<PathBuf> {
    let path = std::env::var_os(var)
        .map(PathBuf::from)
        .unwrap_or_else(|| fixtures_dir().join(rel));
    if path.exists() {
        return Some(path);
    }
    let msg = format!(
        "fixture missing: {} (set {var}, or run scripts/fixtures.sh)",
        path.display()
    );
    if std::env::var("CI").is_ok_and(|v| v == "true" || v == "1") {
        panic!("{msg}");
    }
    eprintln!("\n!!!!!!!! SKIPPED: {msg} !!!!!!!!\n");
    None
}

/// The real NVIDIA driver (Debian `libcuda1` 535, CUDA 12.2).
pub fn real_driver() -> Option<PathBuf> {
    fixture(
        "OXICUDA_REAL_DRIVER",
        "libcuda/usr/lib/x86_64-linux-gnu/nvidia/current/libcuda.so.1",
    )
}

/// The real NVML (Debian `libnvidia-ml1` 535, the driver's release).
pub fn real_nvml() -> Option<PathBuf> {
    fixture(
        "OXICUDA_REAL_NVML",
        "nvml/usr/lib/x86_64-linux-gnu/nvidia/current/libnvidia-ml.so.1",
    )
}

/// The CUDA 12.9 `include/` folder (cuda.h, cudaTypedefs.h).
pub fn cuda12_include() -> Option<PathBuf> {
    fixture("OXICUDA_CUDA_INCLUDE", "cuda12/include")
}

/// The CUDA 13.x `include/` folder.
pub fn cuda13_include() -> Option<PathBuf> {
    fixture("OXICUDA_CUDA13_INCLUDE", "cuda13/include")
}

static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Whether this is the GPU suite (`--features gpu-tests`): the driver is the one the
/// environment names (`OXICUDA_DRIVER`, the system driver by default), and softcuda's
/// own answers (its device profiles, its live-object counts) are not asserted.
pub const ON_GPU: bool = cfg!(feature = "gpu-tests");

/// The driver under test, initialised — softcuda in-process (the `soft` feature), or
/// with `--features gpu-tests` the driver the environment names — and a guard that
/// serialises the tests of this binary (a driver's state is process-wide).
pub fn driver() -> (
    &'static oxicuda_driver::Driver,
    std::sync::MutexGuard<'static, ()>,
) {
    let g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let options = if ON_GPU {
        oxicuda_driver::DriverOptions::from_env().unwrap()
    } else {
        oxicuda_driver::DriverOptions::software()
    };
    let d = oxicuda_driver::driver_with(options).unwrap();
    d.init().unwrap();
    (d, g)
}

/// A second device for tests that want two: device 1 — or, in the GPU suite on a
/// machine with one GPU, device 0 again (said loudly).
pub fn second_device(d: &'static oxicuda_driver::Driver) -> oxicuda_driver::Device {
    if ON_GPU && d.device_count().unwrap() < 2 {
        eprintln!("gpu-suite note: one device: device 0 stands in for device 1");
        return d.device(0).unwrap();
    }
    d.device(1).unwrap()
}

/// Runs `f` under a fresh context of device 0 and returns what it returned; then
/// checks that softcuda has no live object left.
pub fn on_device0<R>(
    f: impl for<'c> FnOnce(
        &mut oxicuda_driver::CurrentContext<'c>,
    ) -> Result<R, oxicuda_driver::CudaError>,
) -> R {
    let (d, _g) = driver();
    let ctx = oxicuda_driver::Context::new(
        &d.device(0).unwrap(),
        oxicuda_driver::sys::CUctx_flags::empty(),
    )
    .unwrap();
    let r = ctx.bind(f).unwrap().unwrap();
    drop(ctx);
    no_leaks();
    r
}

/// The sticky code a kernel's access outside any allocation leaves:
/// `CUDA_ERROR_ILLEGAL_ADDRESS` on a GPU and on softcuda, `CUDA_ERROR_LAUNCH_FAILED`
/// while softcuda's sanitizer runs memcheck (`SOFTCUDA_SANITIZE`: the access was
/// reported and the launch stopped, as under compute-sanitizer).
pub fn kernel_fault_code() -> oxicuda_driver::sys::CUresult {
    if ON_GPU {
        return oxicuda_driver::sys::CUresult::CUDA_ERROR_ILLEGAL_ADDRESS;
    }
    oxicuda_driver::sys::CUresult(softcuda::control::fault_code() as _)
}

/// softcuda has no live object left. The real driver keeps no such count: in the GPU
/// suite this checks nothing.
///
/// Call it while holding [`driver`]'s guard: softcuda's counts are process-wide, and
/// without the guard another test of the binary may be holding objects right now.
/// A call without it fails here, whenever no other test holds the guard, instead of
/// failing only when the timing is unlucky.
pub fn no_leaks() {
    if ON_GPU {
        return;
    }
    if let Ok(_) | Err(std::sync::TryLockError::Poisoned(_)) = SERIAL.try_lock() {
        panic!("no_leaks() called without driver()'s guard: the counts could be another test's");
    }
    assert_eq!(
        softcuda::control::live_counts(),
        softcuda::control::Counts::default()
    );
}

/// softcuda's count of live contexts; `None` in the GPU suite.
pub fn live_contexts() -> Option<usize> {
    (!ON_GPU).then(|| softcuda::control::live_counts().contexts)
}

/// `libsoftcuda.so` as cargo built it for these tests: tests run from
/// target/<profile>/deps, where cargo leaves the cdylib when it is built as a
/// dependency; it copies it to target/<profile> when building it for itself.
pub fn libsoftcuda() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let deps = exe.parent().unwrap();
    [deps.to_path_buf(), deps.parent().unwrap().to_path_buf()]
        .into_iter()
        .map(|d| d.join("libsoftcuda.so"))
        .find(|p| p.exists())
        .expect("libsoftcuda.so is built with the tests")
}

/// A kernel `fault` that stores 7 to the address it is given: given 0, which softcuda
/// never maps, the store faults (a sticky `ILLEGAL_ADDRESS`) and lands nowhere.
const FAULT: &str = "
.version 8.0
.target sm_80
.address_size 64
.visible .entry fault(.param .u64 fault_param_0)
{
    .reg .b32 %r<2>;
    .reg .b64 %rd<2>;
    ld.param.u64 %rd1, [fault_param_0];
    mov.u32 %r1, 7;
    st.global.u32 [%rd1], %r1;
    ret;
}
";

/// The module of the faulting kernel, loaded in `cur`.
pub fn fault_module<'c>(
    cur: &'c oxicuda_driver::CurrentContext<'_>,
) -> Result<oxicuda_driver::module::Module<'c>, oxicuda_driver::CudaError> {
    cur.load_ptx(FAULT, &oxicuda_driver::module::JitOptions::default())
}

/// The kernel of a [`fault_module`], to be launched with address 0 to make the
/// context report a sticky `ILLEGAL_ADDRESS`.
pub fn fault_kernel<'m>(
    module: &'m oxicuda_driver::module::Module<'_>,
) -> Result<oxicuda_driver::module::Function<'m, (u64,)>, oxicuda_driver::CudaError> {
    // SAFETY: not a kept contract — the kernel stores to the address it is given; the
    // tests give it 0, which softcuda never maps: the store faults (a sticky
    // ILLEGAL_ADDRESS) and writes nothing. That fault is what they need.
    unsafe { module.function::<(u64,)>("fault") }
}

/// A fatbin (16-byte header, entries with a 64-byte header each) holding `ptx` for
/// sm_80.
pub fn fatbin_with_ptx(ptx: &str) -> Vec<u8> {
    let mut payload = ptx.as_bytes().to_vec();
    payload.push(0);
    let mut e = Vec::new();
    e.extend_from_slice(&1u16.to_le_bytes()); // kind: PTX
    e.extend_from_slice(&0x0101u16.to_le_bytes());
    e.extend_from_slice(&64u32.to_le_bytes());
    e.extend_from_slice(&(payload.len() as u64).to_le_bytes());
    e.extend_from_slice(&[0u8; 12]);
    e.extend_from_slice(&80u32.to_le_bytes());
    e.resize(64, 0);
    e.extend(payload);
    let mut fat = Vec::new();
    fat.extend_from_slice(&0xBA55ED50u32.to_le_bytes());
    fat.extend_from_slice(&1u16.to_le_bytes());
    fat.extend_from_slice(&16u16.to_le_bytes());
    fat.extend_from_slice(&(e.len() as u64).to_le_bytes());
    fat.extend(e);
    fat
}

/// softcuda configured with `devices` (at its current version) while alive; when
/// dropped, injected faults cleared and the default devices again.
pub struct SoftDevices(i32);

impl SoftDevices {
    pub fn configure(devices: Vec<softcuda::control::Profile>) -> SoftDevices {
        let version = softcuda::control::config().version;
        softcuda::control::configure(version, devices).unwrap();
        SoftDevices(version)
    }
}

impl Drop for SoftDevices {
    fn drop(&mut self) {
        softcuda::control::clear_faults();
        softcuda::control::configure(self.0, softcuda::control::Profile::defaults()).unwrap();
    }
}

/// JIT options out of range, each with the parameter its refusal names.
pub fn out_of_range_jit_options() -> [(oxicuda_driver::module::JitOptions, &'static str); 4] {
    use oxicuda_driver::module::JitOptions;
    let level = |l| JitOptions {
        optimization_level: Some(l),
        ..Default::default()
    };
    let target = |t| JitOptions {
        target: Some(t),
        ..Default::default()
    };
    [
        (level(5), "JitOptions::optimization_level"),
        (level(99), "JitOptions::optimization_level"),
        (target(10), "JitOptions::target"),
        (target(u32::MAX), "JitOptions::target"),
    ]
}

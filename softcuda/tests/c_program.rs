//! A C program compiled by gcc against NVIDIA's cuda.h (the 12.9 wheel fetched by
//! `scripts/fixtures.sh`) and linked with libsoftcuda.so runs unchanged.

use std::path::{Path, PathBuf};
use std::process::Command;

fn cuda_include() -> Option<PathBuf> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    let inc = std::env::var_os("OXICUDA_CUDA_INCLUDE")
        .map(PathBuf::from)
        .unwrap_or_else(|| root.join(".fixtures/cuda12/include"));
    if inc.join("cuda.h").exists() {
        return Some(inc);
    }
    let msg = format!(
        "fixture missing: {}/cuda.h (run scripts/fixtures.sh)",
        inc.display()
    );
    assert!(
        std::env::var("CI").map_or(true, |v| v != "true" && v != "1"),
        "{msg}"
    );
    eprintln!("\n!!!!!!!! SKIPPED: {msg} !!!!!!!!\n");
    None
}

/// Compiles `tests/c/<name>.c` against cuda.h and libsoftcuda.so: the executable.
fn compile(inc: &std::path::Path, name: &str) -> PathBuf {
    // Tests run from target/<profile>/deps; cargo leaves the cdylib there when it is
    // built as a dependency too, and copies it to target/<profile> otherwise.
    let exe = std::env::current_exe().unwrap();
    let deps = exe.parent().unwrap();
    let lib_dir = [deps.to_path_buf(), deps.parent().unwrap().to_path_buf()]
        .into_iter()
        .find(|d| d.join("libsoftcuda.so").exists())
        .expect("libsoftcuda.so is built with the tests");
    let src = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(format!("tests/c/{name}.c"));
    let out = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(name);
    let status = Command::new("gcc")
        .args(["-std=c11", "-Wall", "-Werror", "-O1", "-I"])
        .arg(inc)
        .arg(&src)
        .arg("-o")
        .arg(&out)
        .arg(format!("-L{}", lib_dir.display()))
        .arg(format!("-Wl,-rpath,{}", lib_dir.display()))
        .arg("-lsoftcuda")
        .status()
        .expect("gcc runs");
    assert!(status.success(), "gcc failed");
    out
}

/// Runs `exe` on `ptx` with `args` and `SOFTCUDA_SANITIZE=tools`; it must exit
/// successfully: its standard output and error.
fn sanitized(exe: &Path, ptx: &Path, tools: &str, args: &[&str]) -> (String, String) {
    let r = Command::new(exe)
        .arg(ptx)
        .args(args)
        .env("SOFTCUDA_SANITIZE", tools)
        .env_remove("SOFTCUDA_SANITIZE_LOG")
        .output()
        .unwrap();
    assert!(r.status.success(), "{r:?}");
    (
        String::from_utf8_lossy(&r.stdout).into_owned(),
        String::from_utf8_lossy(&r.stderr).into_owned(),
    )
}

#[test]
fn a_c_program_runs_on_libsoftcuda_unchanged() {
    let Some(inc) = cuda_include() else { return };
    let out = compile(&inc, "driver_api");
    let ptx = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../kernels/vector_add.ptx");
    let run = Command::new(&out).arg(&ptx).output().unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&run.stdout),
        String::from_utf8_lossy(&run.stderr)
    );
    assert!(run.status.success(), "{text}");
    assert!(
        text.contains("all checks passed") && text.contains("0 wrong"),
        "{text}"
    );
}

/// A C program's off-by-one, found by the sanitizer with one environment variable
/// and no code change; its fixed twin reports nothing.
#[test]
fn the_sanitizer_checks_a_c_program_through_libsoftcuda() {
    let Some(inc) = cuda_include() else { return };
    let exe = compile(&inc, "sanitize_oob");
    let ptx = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../kernels/vector_add.ptx");
    let run = |args: &[&str]| sanitized(&exe, &ptx, "memcheck", args);
    let (out, err) = run(&[]);
    // CUDA_ERROR_LAUNCH_FAILED (719): the access was reported and the launch stopped.
    assert!(out.contains("result: 719"), "{out}{err}");
    assert!(
        err.contains("========= Invalid __global__ read of size 4 bytes"),
        "{err}"
    );
    assert!(err.contains("=========     at vector_add+"), "{err}");
    assert!(err.contains("is out of bounds"), "{err}");
    assert!(!err.contains("ERROR SUMMARY: 0 errors"), "{err}");
    let (out, err) = run(&["clean"]);
    assert!(out.contains("result: 0"), "{out}{err}");
    assert_eq!(err.trim(), "========= ERROR SUMMARY: 0 errors", "{err}");
}

/// A C program's missing event between two streams, found by streamcheck with one
/// environment variable (`all`, delay included) and no code change; its twin,
/// which records and waits for the event, reports nothing and reads the sums.
#[test]
fn the_sanitizer_finds_a_c_programs_race_between_streams() {
    let Some(inc) = cuda_include() else { return };
    let exe = compile(&inc, "sanitize_streams");
    let ptx = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../kernels/vector_add.ptx");
    let run = |args: &[&str]| sanitized(&exe, &ptx, "all", args);
    let (out, err) = run(&[]);
    assert!(
        err.contains("========= Error: Race reported between ")
            && err.contains("by cuLaunchKernel (kernel vector_add) on stream")
            && err.contains("by cuMemcpyDtoHAsync on stream"),
        "{out}{err}"
    );
    assert!(err.contains("ERROR SUMMARY: 1 error"), "{out}{err}");
    let (out, err) = run(&["clean"]);
    assert!(out.contains("first wrong: -1"), "{out}{err}");
    assert_eq!(err.trim(), "========= ERROR SUMMARY: 0 errors", "{err}");
}

//! The examples' behaviour without a GPU: clear messages, exit codes, no panic.

mod common;

use std::path::PathBuf;
use std::process::{Command, Output};

fn example(name: &str) -> PathBuf {
    // tests run from target/<profile>/deps; examples are built to target/<profile>/examples.
    let exe = std::env::current_exe().unwrap();
    let profile_dir = exe.parent().unwrap().parent().unwrap();
    let path = profile_dir.join("examples").join(name);
    assert!(
        path.exists(),
        "{} is not built (cargo test builds examples)",
        path.display()
    );
    path
}

fn run(name: &str, driver_path: &str) -> Output {
    Command::new(example(name))
        .env("OXICUDA_DRIVER_PATH", driver_path)
        .env_remove("OXICUDA_DRIVER")
        .output()
        .unwrap()
}

fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

#[test]
fn device_info_without_a_device_prints_the_version_and_says_so() {
    let Some(driver) = common::real_driver() else {
        return;
    };
    let out = run("device_info", driver.to_str().unwrap());
    let s = text(&out);
    assert_eq!(out.status.code(), Some(2), "{s}");
    assert!(s.contains("CUDA driver 12.2"), "{s}");
    assert!(
        s.contains("no CUDA device") && s.contains("CUDA_ERROR_NO_DEVICE"),
        "{s}"
    );
    assert!(!s.contains("panicked"), "{s}");
}

#[test]
fn device_info_with_a_wrong_path_names_it() {
    let out = run("device_info", "/nowhere/libcuda.so.1");
    let s = text(&out);
    assert_eq!(out.status.code(), Some(1), "{s}");
    assert!(s.contains("tried: /nowhere/libcuda.so.1"), "{s}");
    assert!(!s.contains("panicked"), "{s}");
}

#[test]
fn vector_add_without_a_device_says_so_without_panicking() {
    let Some(driver) = common::real_driver() else {
        return;
    };
    let out = run("vector_add", driver.to_str().unwrap());
    let s = text(&out);
    assert_eq!(out.status.code(), Some(2), "{s}");
    assert!(s.contains("no CUDA device"), "{s}");
    assert!(!s.contains("panicked"), "{s}");
}

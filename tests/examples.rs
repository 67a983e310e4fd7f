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

/// Runs an example with no driver chosen (this machine has no GPU driver).
fn run_unchosen(name: &str) -> Output {
    Command::new(example(name))
        .env_remove("OXICUDA_DRIVER_PATH")
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

#[test]
fn vector_add_with_no_driver_chosen_runs_on_softcuda_and_says_so() {
    if oxicuda_driver::init().is_ok() {
        eprintln!("a GPU is present: vector_add runs on it, not on softcuda");
        return;
    }
    let out = run_unchosen("vector_add");
    let s = text(&out);
    assert_eq!(out.status.code(), Some(0), "{s}");
    assert!(s.contains("Running on softcuda"), "{s}");
    assert!(
        s.contains("1048576 elements, all equal to the CPU result"),
        "{s}"
    );
}

#[test]
fn device_info_with_no_driver_chosen_lists_softcudas_devices() {
    if oxicuda_driver::init().is_ok() {
        return;
    }
    let out = run_unchosen("device_info");
    let s = text(&out);
    assert_eq!(out.status.code(), Some(0), "{s}");
    assert!(
        s.contains("softcuda") && s.contains("2 device(s)") && s.contains("compute capability 9.0"),
        "{s}"
    );
}

#[test]
fn jit_log_with_no_driver_chosen_shows_structured_diagnostics() {
    if oxicuda_driver::init().is_ok() {
        return;
    }
    let out = run_unchosen("jit_log");
    let s = text(&out);
    assert_eq!(out.status.code(), Some(0), "{s}");
    assert!(s.contains("Running on softcuda"), "{s}");
    assert!(
        s.contains("Error   line 8   Unknown instruction 'frobnicate.u32'"),
        "{s}"
    );
    assert!(s.contains("Used") && s.contains("registers"), "{s}");
}

#[test]
fn streams_events_with_no_driver_chosen_times_two_streams() {
    if oxicuda_driver::init().is_ok() {
        return;
    }
    let out = run_unchosen("streams_events");
    let s = text(&out);
    assert_eq!(out.status.code(), Some(0), "{s}");
    assert!(s.contains("Running on softcuda"), "{s}");
    assert!(
        s.contains("stream 0:") && s.contains("stream 1:") && s.contains("from the shared start"),
        "{s}"
    );
    assert!(
        s.contains("1048576 elements, all equal to the CPU result"),
        "{s}"
    );
}

#[test]
fn graph_capture_with_no_driver_chosen_matches_stream_launches() {
    if oxicuda_driver::init().is_ok() {
        return;
    }
    let out = run_unchosen("graph_capture");
    let s = text(&out);
    assert_eq!(out.status.code(), Some(0), "{s}");
    assert!(s.contains("Running on softcuda"), "{s}");
    assert!(s.contains("captured 3 nodes"), "{s}");
    assert!(
        s.contains("graph and stream launches give the same results, equal to the CPU's"),
        "{s}"
    );
    assert!(s.contains("1000 steps of 3 kernels"), "{s}");
}

#[test]
fn managed_memory_with_no_driver_chosen_runs_on_softcuda_and_says_so() {
    if oxicuda_driver::init().is_ok() {
        eprintln!("a GPU is present: managed_memory runs on it, not on softcuda");
        return;
    }
    let out = run_unchosen("managed_memory");
    let s = text(&out);
    assert_eq!(out.status.code(), Some(0), "{s}");
    assert!(s.contains("driver: softcuda"), "{s}");
    assert!(s.contains("x read-mostly: true"), "{s}");
    assert!(s.contains("pool: 0 bytes in use after the free"), "{s}");
    assert!(
        s.contains("65536 elements, all equal to the CPU result"),
        "{s}"
    );
}

#[test]
fn growable_vector_with_no_driver_chosen_grows_in_place_on_softcuda() {
    if oxicuda_driver::init().is_ok() {
        eprintln!("a GPU is present: growable_vector runs on it, not on softcuda");
        return;
    }
    let out = run_unchosen("growable_vector");
    let s = text(&out);
    assert_eq!(out.status.code(), Some(0), "{s}");
    assert!(s.contains("driver: softcuda"), "{s}");
    assert!(s.contains("granularity: 2048 KiB minimum"), "{s}");
    assert!(
        s.contains("grew to 2100000 elements (10 MiB mapped), address unchanged"),
        "{s}"
    );
    assert!(!s.contains("MOVED"), "{s}");
    assert!(
        s.contains("2100000 elements, all equal to the CPU result, never moved"),
        "{s}"
    );
}

#[test]
fn external_memory_with_no_driver_chosen_hands_memory_between_streams_on_softcuda() {
    if oxicuda_driver::init().is_ok() {
        eprintln!("a GPU is present: external_memory runs on it, not on softcuda");
        return;
    }
    let out = run_unchosen("external_memory");
    let s = text(&out);
    assert_eq!(out.status.code(), Some(0), "{s}");
    assert!(s.contains("driver: softcuda"), "{s}");
    assert!(
        s.contains("external memory: 2097152 bytes imported; 65536 values written through the allocation, read through the import"),
        "{s}"
    );
    assert!(
        s.contains("semaphore: stream A copied what stream B wrote before signalling"),
        "{s}"
    );
    assert!(
        s.contains("external_memory: every value as expected"),
        "{s}"
    );
}

#[test]
fn cluster_launch_with_no_driver_chosen_runs_on_softcudas_9_0_device() {
    if oxicuda_driver::init().is_ok() {
        return;
    }
    let out = run_unchosen("cluster_launch");
    let s = text(&out);
    assert_eq!(out.status.code(), Some(0), "{s}");
    assert!(s.contains("Running on softcuda"), "{s}");
    assert!(s.contains("compute capability (9, 0)"), "{s}");
    assert!(
        s.contains("block 15: cluster 3 of 4, rank 3 of 4, 4 blocks arrived before the barrier"),
        "{s}"
    );
    assert!(s.contains("refused before the launch"), "{s}");
    assert!(
        s.contains("16 blocks in clusters of 4, all as expected"),
        "{s}"
    );
}

#[test]
fn cooperative_reduce_with_no_driver_chosen_runs_on_softcuda() {
    if oxicuda_driver::init().is_ok() {
        return;
    }
    let out = run_unchosen("cooperative_reduce");
    let s = text(&out);
    assert_eq!(out.status.code(), Some(0), "{s}");
    assert!(s.contains("Running on softcuda"), "{s}");
    assert!(s.contains("synchronised with grid.sync()"), "{s}");
    assert!(s.contains("cannot be resident at once"), "{s}");
    assert!(s.contains("65536 elements, equal to the CPU sum"), "{s}");
}

#[test]
fn topology_with_no_driver_chosen_shows_softcudas_asymmetric_matrix_and_dot() {
    if oxicuda_driver::init().is_ok() {
        return;
    }
    let out = Command::new(example("topology"))
        .env_remove("OXICUDA_DRIVER_PATH")
        .env_remove("OXICUDA_DRIVER")
        .env("SOFTCUDA_DEVICES", "9.0:1024,9.0:1024,8.0:1024,8.0:1024")
        .env("SOFTCUDA_P2P", "0-1,1-0,0-2:rank1:noatomics,3-0:rank2")
        .output()
        .unwrap();
    let s = text(&out);
    assert_eq!(out.status.code(), Some(0), "{s}");
    assert!(s.contains("Running on softcuda"), "{s}");
    assert!(s.contains("NVLinks unknown (NVML not given)"), "{s}");
    let row0: Vec<&str> = s
        .lines()
        .find(|l| l.split_whitespace().next() == Some("0") && l.contains(" x "))
        .unwrap_or_else(|| panic!("no matrix row 0 in\n{s}"))
        .split_whitespace()
        .collect();
    assert_eq!(row0, ["0", "x", "0a", "1", "-"], "{s}");
    assert!(s.contains("best peer of 0: 1"), "{s}");
    assert!(s.contains("best peer of 2: none (no peer access)"), "{s}");
    assert!(s.contains("best peer of 3: 0"), "{s}");
    assert!(s.contains("digraph topology {"), "{s}");
    assert!(
        s.contains("gpu3 -> gpu0 [label=\"rank 2, atomics\"];"),
        "{s}"
    );
    assert!(
        s.contains("gpu0 -> gpu2 [label=\"rank 1, no atomics\"];"),
        "{s}"
    );
    assert!(!s.contains("gpu0 -> gpu3"), "{s}");
}

#[test]
fn topology_on_libsoftcuda_reads_its_nvlinks_through_nvml() {
    // libsoftcuda.so serves as both the CUDA driver and NVML (its NVML surface).
    let lib = common::libsoftcuda();
    let out = Command::new(example("topology"))
        .env("OXICUDA_DRIVER_PATH", &lib)
        .env("OXICUDA_NVML_PATH", &lib)
        .env_remove("OXICUDA_DRIVER")
        .env("SOFTCUDA_DEVICES", "9.0:1024,9.0:1024,9.0:1024,8.0:1024")
        .env("SOFTCUDA_P2P", "0-1,1-0,0-2:rank1,2-0:rank1,2-3")
        .env("SOFTCUDA_NVLINK", "0-1x4,0-2")
        .output()
        .unwrap();
    let s = text(&out);
    assert_eq!(out.status.code(), Some(0), "{s}");
    assert!(!s.contains("Running on softcuda"), "a chosen driver: {s}");
    assert!(
        s.contains(&format!("NVLinks from NVML ({})", lib.display())),
        "{s}"
    );
    assert!(
        s.contains("gpu0 -> gpu1 [label=\"rank 0, atomics, nvlink x4\"];"),
        "{s}"
    );
    assert!(
        s.contains("gpu2 -> gpu0 [label=\"rank 1, atomics, nvlink x1\"];"),
        "{s}"
    );
    assert!(
        s.contains("gpu2 -> gpu3 [label=\"rank 0, atomics\"];"),
        "{s}"
    );
    let device0 = s.lines().find(|l| l.contains("00000000:10:00.0 ")).unwrap();
    assert!(device0.contains("nvlinks 5"), "{s}");
    assert!(s.contains("best peer of 0: 1"), "{s}");
    assert!(s.contains("best peer of 2: 3"), "rank 0 beats NVLink: {s}");
}

#[test]
fn topology_with_the_real_nvml_and_no_gpu_falls_back_and_says_why() {
    let Some(nvml) = common::real_nvml() else {
        return;
    };
    let out = Command::new(example("topology"))
        .env("OXICUDA_DRIVER_PATH", common::libsoftcuda())
        .env("OXICUDA_NVML_PATH", &nvml)
        .env_remove("OXICUDA_DRIVER")
        .env_remove("SOFTCUDA_NVLINK")
        .output()
        .unwrap();
    let s = text(&out);
    assert_eq!(out.status.code(), Some(0), "{s}");
    assert!(
        s.contains(
            "NVLinks unknown (NVML: nvmlInit_v2 failed: NVML_ERROR_DRIVER_NOT_LOADED (9): \
             Driver Not Loaded): peer links from the driver's P2P attributes only"
        ),
        "{s}"
    );
    assert!(s.contains("nvlinks ?"), "{s}");
}

#[test]
fn multi_gpu_with_no_driver_chosen_splits_the_work_over_softcudas_devices() {
    if oxicuda_driver::init().is_ok() {
        return;
    }
    // Four devices; 3 cannot reach 0, so device 3 falls back to a peer copy.
    let out = Command::new(example("multi_gpu"))
        .env_remove("OXICUDA_DRIVER_PATH")
        .env_remove("OXICUDA_DRIVER")
        .env("SOFTCUDA_DEVICES", "9.0:1024,9.0:1024,8.0:1024,8.0:1024")
        .env("SOFTCUDA_P2P", "0-1,1-0,1-2,2-3")
        .output()
        .unwrap();
    let s = text(&out);
    assert_eq!(out.status.code(), Some(0), "{s}");
    assert!(s.contains("Running on softcuda"), "{s}");
    assert!(s.contains("4 devices; vector of 262144 floats"), "{s}");
    assert!(
        s.contains("peer access enabled for 4 ordered device pairs"),
        "{s}"
    );
    assert!(
        s.contains("halos exchanged between 6 neighbouring pairs"),
        "{s}"
    );
    assert!(
        s.contains("device 2 added device 3's chunk in place, through peer access"),
        "{s}"
    );
    assert!(
        s.contains("device 3 added device 0's chunk from a peer copy (no peer access)"),
        "{s}"
    );
    assert!(
        s.contains("multi_gpu: all results equal to the CPU's"),
        "{s}"
    );
    // softcuda's default: two devices, linked both ways.
    let out = run_unchosen("multi_gpu");
    let s = text(&out);
    assert_eq!(out.status.code(), Some(0), "{s}");
    assert!(s.contains("2 devices;"), "{s}");
    assert!(
        s.contains("multi_gpu: all results equal to the CPU's"),
        "{s}"
    );
}

#[test]
fn pointer_kernel_with_no_driver_chosen_runs_on_softcuda() {
    if oxicuda_driver::init().is_ok() {
        return;
    }
    let out = run_unchosen("pointer_kernel");
    let s = text(&out);
    assert_eq!(out.status.code(), Some(0), "{s}");
    assert!(s.contains("Running on softcuda"), "{s}");
    assert!(s.contains("fewer than the launch's length 100001"), "{s}");
    assert!(
        s.contains("100000 elements, all equal to the CPU result"),
        "{s}"
    );
}

#[test]
fn kernel_library_with_no_driver_chosen_runs_on_softcuda() {
    if oxicuda_driver::init().is_ok() {
        return;
    }
    let out = run_unchosen("kernel_library");
    let s = text(&out);
    assert_eq!(out.status.code(), Some(0), "{s}");
    assert!(s.contains("Running on softcuda"), "{s}");
    for t in 1..=2 {
        let line = format!("thread {t}: 10000 elements, all equal to the CPU result: true");
        assert!(s.contains(&line), "{s}");
    }
}

#[test]
fn green_contexts_with_no_driver_chosen_split_the_sms_on_softcuda() {
    if oxicuda_driver::init().is_ok() {
        eprintln!("a GPU is present: green_contexts runs on it, not on softcuda");
        return;
    }
    let out = run_unchosen("green_contexts");
    let s = text(&out);
    assert_eq!(out.status.code(), Some(0), "{s}");
    assert!(s.contains("driver: softcuda"), "{s}");
    assert!(
        s.contains("132 SMs split into partitions of 8 and 8 SMs, 116 left over"),
        "{s}"
    );
    for i in 0..2 {
        assert!(
            s.contains(&format!(
                "workload {i}: 1048576 elements on a green context of 8 SMs, 0 wrong"
            )),
            "{s}"
        );
    }
    assert!(
        s.contains("green_contexts: both workloads match the CPU result, each on its own SMs"),
        "{s}"
    );
}

#[test]
fn textures_with_no_driver_chosen_sample_and_store_on_softcuda() {
    if oxicuda_driver::init().is_ok() {
        eprintln!("a GPU is present: textures runs on it, not on softcuda");
        return;
    }
    let out = run_unchosen("textures");
    let s = text(&out);
    assert_eq!(out.status.code(), Some(0), "{s}");
    assert!(s.contains("driver: softcuda"), "{s}");
    assert!(
        s.contains("upscaled a 64x48 RGBA image to 128x96 with bilinear filtering"),
        "{s}"
    );
    assert!(
        s.contains("surface: 4096 counters incremented twice by a kernel, 0 wrong"),
        "{s}"
    );
    assert!(
        s.contains("textures: the sampled image and the stored counters match the CPU"),
        "{s}"
    );
}

#[cfg(target_os = "linux")]
#[test]
fn ipc_with_no_driver_chosen_shares_memory_between_two_processes_on_softcuda() {
    if oxicuda_driver::init().is_ok() {
        eprintln!("a GPU is present: ipc runs on it, not on softcuda");
        return;
    }
    let out = run_unchosen("ipc");
    let s = text(&out);
    assert_eq!(out.status.code(), Some(0), "{s}");
    assert!(s.contains("driver: softcuda"), "{s}");
    assert!(
        s.contains("producer: 1048576 floats and an event exported; starting the consumer"),
        "{s}"
    );
    assert!(
        s.contains("after the event, 1048576 of 1048576 elements are 7.0"),
        "{s}"
    );
    assert!(
        s.contains("ipc: the producer sees every element the consumer wrote (9.0)"),
        "{s}"
    );
}

//! The topology on softcuda with 4 devices and an asymmetric peer topology whose P2P
//! attributes differ per link, and from plain data for the NVLink parts: softcuda's
//! driver surface has no NVLinks, so NVML-backed topologies are built here by hand
//! (`Topology::from_parts`); the NVML calls themselves are tested in `tests/nvml.rs`.

mod common;

use common::{SoftDevices, driver, no_leaks};
use oxicuda_driver::CudaError;
use oxicuda_driver::nvml::{
    NvLink, NvLinkCapabilities, NvLinkDeviceType, NvLinkRemote, NvLinkVersion, PciInfo,
};
use oxicuda_driver::topology::{DeviceNode, LinkSource, PeerLink, Topology};
use oxicuda_driver::topology::{MAX_DEVICES, numa_node, parse_bus_id};
use softcuda::control::Profile;

/// Restores softcuda's default peer topology when dropped.
struct PeerGuard;

impl Drop for PeerGuard {
    fn drop(&mut self) {
        softcuda::control::set_peer_perf(Vec::new()).unwrap();
        softcuda::control::set_peer_links(None).unwrap();
    }
}

const LINKS: &str =
    "0-1,1-0,0-2:rank1:noatomics,0-3:rank1,3-0:rank2:arrays,1-2:rank1,2-3:rank3:noatomics";

/// Four devices, the peer links of [`LINKS`].
fn four_devices() -> (SoftDevices, PeerGuard) {
    let devices = SoftDevices::configure((0..4).map(|i| Profile::new(i, 9, 0, 1024)).collect());
    let (links, perf) = softcuda::state::parse_p2p(LINKS).unwrap();
    softcuda::control::set_peer_links(links).unwrap();
    softcuda::control::set_peer_perf(perf).unwrap();
    (devices, PeerGuard)
}

fn link(rank: i32, atomics: bool, arrays: bool) -> PeerLink {
    PeerLink {
        access_supported: true,
        performance_rank: rank,
        native_atomics: atomics,
        cuda_array_access: arrays,
    }
}

#[test]
fn the_matrix_is_the_configured_asymmetric_topology() {
    let (d, _g) = driver();
    let (_devices, _peers) = four_devices();
    let t = Topology::probe(d, None).unwrap();
    assert_eq!(t.devices().len(), 4);
    let expected = |a: usize, b: usize| match (a, b) {
        (0, 1) | (1, 0) => link(0, true, false),
        (0, 2) => link(1, false, false),
        (0, 3) => link(1, true, false),
        (3, 0) => link(2, true, true),
        (1, 2) => link(1, true, false),
        (2, 3) => link(3, false, false),
        _ => PeerLink::default(),
    };
    for a in 0..4 {
        for b in 0..4 {
            let got = t.peer(a, b).unwrap();
            if a == b {
                assert_eq!(got, None);
                continue;
            }
            assert_eq!(got, Some(&expected(a, b)), "{a} -> {b}");
            // The matrix agrees with cuDeviceCanAccessPeer.
            let can = d.device(a).unwrap().can_access_peer(&d.device(b).unwrap());
            assert_eq!(can.unwrap(), expected(a, b).access_supported, "{a} -> {b}");
        }
    }
    for (i, node) in t.devices().iter().enumerate() {
        assert_eq!(node.ordinal, i);
        assert_eq!(node.pci_bus_id, format!("00000000:{:02X}:00.0", 0x10 + i));
        assert_eq!(node.name, format!("softcuda sm_90 (device {i})"));
        assert!(node.nvlinks.is_empty());
    }
    assert!(matches!(
        t.peer(4, 0),
        Err(CudaError::InvalidArgument {
            parameter: "src",
            ..
        })
    ));
    drop(t);
    no_leaks();
}

#[test]
fn best_peers_follow_rank_then_atomics() {
    let (d, _g) = driver();
    let (_devices, _peers) = four_devices();
    let t = Topology::probe(d, None).unwrap();
    assert_eq!(t.best_peer(0).unwrap(), Some(1)); // rank 0 beats rank 1
    assert_eq!(t.best_peer(1).unwrap(), Some(0)); // rank 0 beats 1 -> 2 (rank 1)
    assert_eq!(t.best_peer(2).unwrap(), Some(3)); // its only peer, though rank 3
    assert_eq!(t.best_peer(3).unwrap(), Some(0));
    assert!(t.best_peer(9).is_err());
}

#[test]
fn without_nvml_the_topology_says_so() {
    let (d, _g) = driver();
    let (_devices, _peers) = four_devices();
    let t = Topology::probe(d, None).unwrap();
    assert_eq!(t.links(), &LinkSource::Unavailable("NVML not given".into()));
    let text = t.to_string();
    assert!(text.contains(
        "NVLinks unknown (NVML not given): peer links from the driver's P2P attributes only"
    ));
    assert!(t.to_dot().contains("NVLinks unknown (NVML not given)"));
    assert!(!text.contains("GB/s") && !t.to_dot().contains("GB/s"));
}

#[test]
fn the_dot_has_one_directed_edge_per_accessible_link() {
    let (d, _g) = driver();
    let (_devices, _peers) = four_devices();
    let dot = Topology::probe(d, None).unwrap().to_dot();
    assert!(dot.starts_with("digraph topology {"));
    assert!(dot.trim_end().ends_with('}'));
    for edge in [
        "gpu0 -> gpu1 [label=\"rank 0, atomics\"];",
        "gpu1 -> gpu0 [label=\"rank 0, atomics\"];",
        "gpu0 -> gpu2 [label=\"rank 1, no atomics\"];",
        "gpu0 -> gpu3 [label=\"rank 1, atomics\"];",
        "gpu3 -> gpu0 [label=\"rank 2, atomics, arrays\"];",
        "gpu1 -> gpu2 [label=\"rank 1, atomics\"];",
        "gpu2 -> gpu3 [label=\"rank 3, no atomics\"];",
    ] {
        assert!(dot.contains(edge), "missing {edge} in\n{dot}");
    }
    assert_eq!(dot.matches(" -> ").count(), 7, "{dot}");
    assert!(!dot.contains("gpu2 -> gpu0"));
    assert!(
        dot.contains("gpu2 [label=\"2: softcuda sm_90 (device 2)\\n00000000:12:00.0\\nnuma ?\"];")
    );
}

#[test]
fn the_table_shows_devices_and_matrix() {
    let (d, _g) = driver();
    let (_devices, _peers) = four_devices();
    let text = Topology::probe(d, None).unwrap().to_string();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines[0], "devices:");
    assert!(lines[1].contains("00000000:10:00.0") && lines[1].contains("numa ?"));
    assert!(lines[1].contains("nvlinks ?"), "unknown, not zero: {text}");
    assert!(lines[1].ends_with("softcuda sm_90 (device 0)"));
    // Rows are sources: 0 reaches 1 (0a), 2 (1), 3 (1a); 2 reaches only 3 (rank 3).
    let row = |r: usize| -> Vec<&str> { lines[7 + r].split_whitespace().collect() };
    assert_eq!(
        lines[6].split_whitespace().collect::<Vec<_>>(),
        ["src\\dst", "0", "1", "2", "3"]
    );
    assert_eq!(row(0), ["0", "x", "0a", "1", "1a"]);
    assert_eq!(row(1), ["1", "0a", "x", "1a", "-"]);
    assert_eq!(row(2), ["2", "-", "-", "x", "3"]);
    assert_eq!(row(3), ["3", "2a", "-", "-", "x"]);
}

#[test]
fn numa_nodes_are_read_from_sysfs_where_present() {
    let (d, _g) = driver();
    let (_devices, _peers) = four_devices();
    let root = std::env::temp_dir().join(format!("oxicuda-topology-{}", std::process::id()));
    let dev1 = root.join("0000:11:00.0");
    std::fs::create_dir_all(&dev1).unwrap();
    std::fs::write(dev1.join("numa_node"), "1\n").unwrap();
    let dev2 = root.join("0000:12:00.0");
    std::fs::create_dir_all(&dev2).unwrap();
    std::fs::write(dev2.join("numa_node"), "-1\n").unwrap();
    let t = Topology::probe_with_sysfs(d, None, &root).unwrap();
    std::fs::remove_dir_all(&root).unwrap();
    let numa: Vec<Option<u32>> = t.devices().iter().map(|n| n.numa_node).collect();
    assert_eq!(numa, [None, Some(1), None, None]);
    assert!(t.to_dot().contains("00000000:11:00.0\\nnuma 1\""));
}

// --- NVLink parts, from plain data -----------------------------------------------

fn node(ordinal: usize, bus: u32, nvlinks: Vec<NvLink>) -> DeviceNode {
    DeviceNode {
        ordinal,
        name: format!("gpu {ordinal}"),
        pci_bus_id: format!("0000:{bus:02x}:00.0"),
        numa_node: Some(0),
        nvlinks,
    }
}

fn nvlink(index: u32, to_bus: u32, device_type: NvLinkDeviceType) -> NvLink {
    NvLink {
        link: index,
        active: true,
        version: Some(NvLinkVersion { raw: 4 }),
        remote: Some(NvLinkRemote {
            pci: PciInfo {
                bus_id: format!("00000000:{to_bus:02X}:00.0"),
                domain: 0,
                bus: to_bus,
                device: 0,
                pci_device_id: 0x20b0_10de,
            },
            device_type: Some(device_type),
        }),
        capabilities: NvLinkCapabilities {
            p2p: Some(true),
            p2p_atomics: Some(true),
            ..Default::default()
        },
    }
}

/// Device 0 has two NVLinks to device 2 and one to device 1, plus an inactive one;
/// every pair from 0 has the same rank and atomics, so NVLinks decide.
fn nvlinked() -> Topology {
    use NvLinkDeviceType::Gpu;
    let mut inactive = nvlink(3, 0x41, Gpu);
    inactive.active = false;
    let devices = vec![
        node(
            0,
            0x40,
            vec![
                nvlink(0, 0x41, Gpu),
                nvlink(1, 0x42, Gpu),
                nvlink(2, 0x42, Gpu),
                inactive,
            ],
        ),
        node(1, 0x41, vec![nvlink(0, 0x40, Gpu)]),
        node(2, 0x42, vec![nvlink(0, 0x40, Gpu), nvlink(1, 0x40, Gpu)]),
    ];
    let peers = vec![
        ((0, 1), link(0, true, false)),
        ((0, 2), link(0, true, false)),
        ((1, 0), link(0, true, false)),
        ((2, 0), link(0, true, false)),
    ];
    Topology::from_parts(devices, peers, LinkSource::Nvml("libnvidia-ml.so.1".into())).unwrap()
}

#[test]
fn nvlinks_are_matched_by_bus_id_and_break_ties() {
    let t = nvlinked();
    assert_eq!(t.nvlinks_between(0, 2), 2);
    assert_eq!(t.nvlinks_between(0, 1), 1); // the inactive link is not counted
    assert_eq!(t.nvlinks_between(1, 2), 0);
    assert_eq!(t.best_peer(0).unwrap(), Some(2));
    assert_eq!(t.best_peer(1).unwrap(), Some(0));
    let dot = t.to_dot();
    assert!(
        dot.contains("gpu0 -> gpu2 [label=\"rank 0, atomics, nvlink x2\"];"),
        "{dot}"
    );
    assert!(dot.contains("NVLinks from NVML (libnvidia-ml.so.1)"));
    let text = t.to_string();
    assert!(text.contains("0a nv2"), "{text}");
    assert!(text.lines().nth(1).unwrap().contains("nvlinks 3"), "{text}");
}

#[test]
fn rank_and_atomics_come_before_nvlinks() {
    use NvLinkDeviceType::Gpu;
    let devices = vec![
        node(0, 0x40, vec![nvlink(0, 0x42, Gpu), nvlink(1, 0x42, Gpu)]),
        node(1, 0x41, vec![]),
        node(2, 0x42, vec![nvlink(0, 0x40, Gpu)]),
        node(3, 0x43, vec![]),
    ];
    // 0 -> 2 has NVLinks but no native atomics; 0 -> 1 has atomics; 0 -> 3 a worse rank.
    let peers = vec![
        ((0, 1), link(1, true, false)),
        ((0, 2), link(1, false, false)),
        ((0, 3), link(2, true, true)),
    ];
    let t = Topology::from_parts(devices, peers, LinkSource::Nvml("x".into())).unwrap();
    assert_eq!(t.best_peer(0).unwrap(), Some(1));
    assert_eq!(t.best_peer(3).unwrap(), None); // 3 reaches no one
}

#[test]
fn nvswitch_links_are_shown_as_such() {
    use NvLinkDeviceType::Switch;
    let devices = vec![
        node(0, 0x40, vec![nvlink(0, 0x80, Switch)]),
        node(1, 0x41, vec![nvlink(0, 0x81, Switch)]),
        node(2, 0x42, vec![]),
    ];
    let peers = vec![
        ((0, 1), link(0, true, false)),
        ((0, 2), link(0, true, false)),
    ];
    let t = Topology::from_parts(devices, peers, LinkSource::Nvml("x".into())).unwrap();
    assert!(t.through_nvswitch(0, 1));
    assert!(!t.through_nvswitch(0, 2));
    assert_eq!(t.nvlinks_between(0, 1), 0);
    assert_eq!(t.best_peer(0).unwrap(), Some(1));
    assert!(
        t.to_dot()
            .contains("gpu0 -> gpu1 [label=\"rank 0, atomics, nvswitch\"];")
    );
}

#[test]
fn from_parts_refuses_what_is_not_a_topology() {
    let two = || vec![node(0, 0x40, vec![]), node(1, 0x41, vec![])];
    let none = || LinkSource::Unavailable("test".into());
    let refused = |r: Result<Topology, CudaError>, p: &str| match r {
        Err(CudaError::InvalidArgument { parameter, .. }) => assert_eq!(parameter, p),
        other => panic!("expected a refusal of {p}, got {other:?}"),
    };
    refused(
        Topology::from_parts(two(), vec![((0, 2), link(0, true, false))], none()),
        "peers",
    );
    refused(
        Topology::from_parts(two(), vec![((1, 1), link(0, true, false))], none()),
        "peers",
    );
    refused(
        Topology::from_parts(
            two(),
            vec![
                ((0, 1), link(0, true, false)),
                ((0, 1), link(1, true, false)),
            ],
            none(),
        ),
        "peers",
    );
    refused(
        Topology::from_parts(vec![node(1, 0x40, vec![])], vec![], none()),
        "devices",
    );
    let empty = Topology::from_parts(Vec::new(), Vec::new(), none()).unwrap();
    assert!(empty.to_dot().contains("digraph"));
    assert!(empty.best_peer(0).is_err());
}

#[test]
fn review_findings_stay_fixed() {
    // Input a hostile or broken system may give: bus ids with signs and fields out
    // of range, too many devices, a FIFO or /dev/zero as a sysfs file, a number
    // behind 70 spaces, NVLinks claimed while NVML is unavailable.
    assert_eq!(parse_bus_id("+0:+65:+0.+0"), None);
    assert_eq!(parse_bus_id("0:1ff:00.0"), None);
    assert_eq!(parse_bus_id("0:65:20.0"), None);
    assert_eq!(parse_bus_id("0:65:1f.8"), None);
    assert_eq!(parse_bus_id(" 00000000:3B:00.0\n"), Some((0, 0x3b, 0, 0)));
    assert_eq!(parse_bus_id("0000:3b:00.0"), Some((0, 0x3b, 0, 0)));
    assert_eq!(
        parse_bus_id("10000:3b:1f.7"),
        Some((0x10000, 0x3b, 0x1f, 7))
    );
    assert_eq!(parse_bus_id("3b:00"), Some((0, 0x3b, 0, 0)));
    let n = MAX_DEVICES + 1;
    let devices: Vec<DeviceNode> = (0..n)
        .map(|i| DeviceNode {
            ordinal: i,
            name: String::new(),
            pci_bus_id: String::new(),
            numa_node: None,
            nvlinks: Vec::new(),
        })
        .collect();
    assert!(
        Topology::from_parts(devices, Vec::new(), LinkSource::Unavailable("x".into())).is_err()
    );
    let root = std::env::temp_dir().join(format!("rev-numa-fixed-{}", std::process::id()));
    let dev = root.join("0000:65:00.0");
    // Left over by an earlier run that failed midway, under the same pid.
    let _ = std::fs::remove_dir_all(&root);
    std::fs::create_dir_all(&dev).unwrap();
    assert!(
        std::process::Command::new("mkfifo")
            .arg(dev.join("numa_node"))
            .status()
            .unwrap()
            .success()
    );
    assert_eq!(numa_node(&root, "0000:65:00.0"), None);
    let d = root.join("0000:66:00.0");
    std::fs::create_dir_all(&d).unwrap();
    std::os::unix::fs::symlink("/dev/zero", d.join("numa_node")).unwrap();
    assert_eq!(numa_node(&root, "0000:66:00.0"), None);
    let e = root.join("0000:67:00.0");
    std::fs::create_dir_all(&e).unwrap();
    std::fs::write(e.join("numa_node"), "2\n").unwrap();
    assert_eq!(numa_node(&root, "0000:67:00.0"), Some(2));
    std::fs::write(e.join("numa_node"), format!("{}12\n", " ".repeat(70))).unwrap();
    assert_eq!(numa_node(&root, "0000:67:00.0"), None);
    std::fs::remove_dir_all(&root).unwrap();
    use oxicuda_driver::nvml::{NvLink, NvLinkCapabilities};
    let l = NvLink {
        link: 0,
        active: true,
        version: None,
        remote: None,
        capabilities: NvLinkCapabilities::default(),
    };
    let devs = vec![DeviceNode {
        ordinal: 0,
        name: String::new(),
        pci_bus_id: String::new(),
        numa_node: None,
        nvlinks: vec![l],
    }];
    assert!(Topology::from_parts(devs, Vec::new(), LinkSource::Unavailable("x".into())).is_err());
}

//! The multi-GPU topology: per device its name, PCI bus id and NUMA node; for every
//! ordered pair of devices what the driver says of the link (`cuDeviceGetP2PAttribute`);
//! and, when NVML answers, the NVLinks. Printed as a text table ([`Display`]) and as
//! Graphviz DOT ([`Topology::to_dot`]); [`Topology::best_peer`] picks a peer by
//! documented criteria.
//!
//! What it never does: guess. The NUMA node is read from sysfs or absent; the NVLinks
//! come from NVML or the topology says why they are unknown ([`LinkSource`]); no
//! bandwidth is shown (the driver reports a relative *rank*, not a speed, and NVML's
//! per-version figures would be nominal, not measured).
//!
//! [`Display`]: core::fmt::Display

use crate::error::{CudaError, check};
use crate::loader::Driver;
use crate::nvml::{NvLink, NvLinkDeviceType, Nvml};
use crate::sys::CUdevice_P2PAttribute as P;
use core::ffi::c_int;
use core::fmt::Write as _;
use std::path::Path;

/// What the driver says of the link from one device to another
/// (`cuDeviceGetP2PAttribute`, source → destination).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PeerLink {
    /// The source can access the destination's memory
    /// (`CU_DEVICE_P2P_ATTRIBUTE_ACCESS_SUPPORTED`).
    pub access_supported: bool,
    /// The link's relative performance (`CU_DEVICE_P2P_ATTRIBUTE_PERFORMANCE_RANK`):
    /// lower is better, 0 the most performant link (CUDA documentation). Meaningful
    /// only where access is supported.
    pub performance_rank: i32,
    /// Every CUDA atomic operation works over the link
    /// (`CU_DEVICE_P2P_ATTRIBUTE_NATIVE_ATOMIC_SUPPORTED`).
    pub native_atomics: bool,
    /// CUDA arrays can be accessed over the link
    /// (`CU_DEVICE_P2P_ATTRIBUTE_CUDA_ARRAY_ACCESS_SUPPORTED`).
    pub cuda_array_access: bool,
}

/// One device of the topology.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeviceNode {
    /// The CUDA ordinal.
    pub ordinal: usize,
    /// The name (`cuDeviceGetName`).
    pub name: String,
    /// The PCI bus id (`cuDeviceGetPCIBusId`).
    pub pci_bus_id: String,
    /// The NUMA node from `/sys/bus/pci/devices/<bus id>/numa_node`; `None` where
    /// sysfs has no such file or says `-1` (no NUMA affinity known).
    pub numa_node: Option<u32>,
    /// The NVLinks NVML reports (empty without NVLink, and when
    /// [`Topology::links`] is [`LinkSource::Unavailable`]).
    pub nvlinks: Vec<NvLink>,
}

/// Where the NVLink information came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LinkSource {
    /// NVML answered for every device; the library is named.
    Nvml(String),
    /// No NVLink information: the reason (no NVML given, or what it answered). The
    /// peer matrix then rests on the driver's P2P attributes alone.
    Unavailable(String),
}

/// The devices, the peer matrix and the NVLinks of a machine.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Topology {
    devices: Vec<DeviceNode>,
    /// Row-major `n × n`; the diagonal is unused.
    peers: Vec<PeerLink>,
    links: LinkSource,
}

/// The most devices [`Topology::from_parts`] accepts (its peer matrix is `n × n`).
pub const MAX_DEVICES: usize = 1024;

fn bad(parameter: &'static str, rule: &'static str) -> CudaError {
    CudaError::InvalidArgument { parameter, rule }
}

impl Topology {
    /// Probes every device of `driver` (which must be initialised): names, PCI bus
    /// ids, NUMA nodes from sysfs, the P2P attributes of every ordered pair, and with
    /// `nvml` the NVLinks of each device, matched to NVML by PCI bus id.
    pub fn probe(driver: &'static Driver, nvml: Option<&Nvml>) -> Result<Self, CudaError> {
        Self::probe_with_sysfs(driver, nvml, Path::new("/sys/bus/pci/devices"))
    }

    /// [`Topology::probe`] with the NVML that [`Nvml::load`] finds
    /// (`OXICUDA_NVML_PATH`, else the system's), shut down again afterwards. When it
    /// cannot be loaded or initialised, [`Topology::links`] says why.
    pub fn probe_loading_nvml(driver: &'static Driver) -> Result<Self, CudaError> {
        match Nvml::load() {
            Ok(nvml) => Self::probe(driver, Some(&nvml)),
            Err(e) => {
                let mut t = Self::probe(driver, None)?;
                t.links = LinkSource::Unavailable(format!("NVML: {e}"));
                Ok(t)
            }
        }
    }

    /// [`Topology::probe`] reading NUMA nodes under `sysfs_pci_devices` instead of
    /// `/sys/bus/pci/devices`.
    pub fn probe_with_sysfs(
        driver: &'static Driver,
        nvml: Option<&Nvml>,
        sysfs_pci_devices: &Path,
    ) -> Result<Self, CudaError> {
        let list = driver.list_devices()?;
        let mut devices = Vec::with_capacity(list.len());
        for d in &list {
            let pci_bus_id = d.pci_bus_id()?;
            devices.push(DeviceNode {
                ordinal: d.ordinal(),
                name: d.name()?,
                numa_node: numa_node(sysfs_pci_devices, &pci_bus_id),
                pci_bus_id,
                nvlinks: Vec::new(),
            });
        }
        let get = driver.table().cuDeviceGetP2PAttribute()?;
        let attr = |a: P, src: &crate::Device, dst: &crate::Device| -> Result<i32, CudaError> {
            let mut v: c_int = 0;
            // SAFETY: a valid out-pointer; the devices are the driver's own.
            check(unsafe { get(&mut v, a, src.raw(), dst.raw()) })?;
            Ok(v)
        };
        let n = list.len();
        let mut peers = vec![PeerLink::default(); n * n];
        for (i, src) in list.iter().enumerate() {
            for (j, dst) in list.iter().enumerate() {
                if i == j {
                    continue; // the driver refuses a device paired with itself
                }
                peers[i * n + j] = PeerLink {
                    access_supported: attr(P::CU_DEVICE_P2P_ATTRIBUTE_ACCESS_SUPPORTED, src, dst)?
                        != 0,
                    performance_rank: attr(P::CU_DEVICE_P2P_ATTRIBUTE_PERFORMANCE_RANK, src, dst)?,
                    native_atomics: attr(
                        P::CU_DEVICE_P2P_ATTRIBUTE_NATIVE_ATOMIC_SUPPORTED,
                        src,
                        dst,
                    )? != 0,
                    cuda_array_access: attr(
                        P::CU_DEVICE_P2P_ATTRIBUTE_CUDA_ARRAY_ACCESS_SUPPORTED,
                        src,
                        dst,
                    )? != 0,
                };
            }
        }
        let links = match nvml {
            None => LinkSource::Unavailable("NVML not given".into()),
            Some(nvml) => match nvlinks_of(nvml, &devices) {
                Ok(per_device) => {
                    for (d, l) in devices.iter_mut().zip(per_device) {
                        d.nvlinks = l;
                    }
                    LinkSource::Nvml(nvml.path().to_owned())
                }
                Err(reason) => LinkSource::Unavailable(reason),
            },
        };
        Ok(Self {
            devices,
            peers,
            links,
        })
    }

    /// A topology from plain data (for tests, or for a machine described rather than
    /// probed). `peers` lists directed links `((src, dst), attributes)`; a pair not
    /// listed has no access. Refused ([`CudaError::InvalidArgument`]) when the
    /// ordinals are not `0..n` in order, or a link names a device that is not there,
    /// pairs a device with itself or is listed twice.
    pub fn from_parts(
        devices: Vec<DeviceNode>,
        peers: Vec<((usize, usize), PeerLink)>,
        links: LinkSource,
    ) -> Result<Self, CudaError> {
        let n = devices.len();
        if n > MAX_DEVICES {
            return Err(bad("devices", "at most MAX_DEVICES (1024) devices"));
        }
        if devices.iter().enumerate().any(|(i, d)| d.ordinal != i) {
            return Err(bad("devices", "ordinals must be 0..n, in order"));
        }
        if matches!(links, LinkSource::Unavailable(_))
            && devices.iter().any(|d| !d.nvlinks.is_empty())
        {
            return Err(bad(
                "devices",
                "no NVLinks where the link source is Unavailable",
            ));
        }
        let mut matrix = vec![PeerLink::default(); n * n];
        let mut seen = vec![false; n * n];
        for ((a, b), link) in peers {
            if a >= n || b >= n {
                return Err(bad("peers", "a link must name two devices of the topology"));
            }
            if a == b {
                return Err(bad("peers", "a link joins two distinct devices"));
            }
            if std::mem::replace(&mut seen[a * n + b], true) {
                return Err(bad("peers", "each directed pair is listed once"));
            }
            matrix[a * n + b] = link;
        }
        Ok(Self {
            devices,
            peers: matrix,
            links,
        })
    }

    /// The devices, in ordinal order.
    pub fn devices(&self) -> &[DeviceNode] {
        &self.devices
    }

    /// Where the NVLink information came from, or why there is none.
    pub fn links(&self) -> &LinkSource {
        &self.links
    }

    fn check_ordinal(&self, ordinal: usize, parameter: &'static str) -> Result<(), CudaError> {
        if ordinal < self.devices.len() {
            Ok(())
        } else {
            Err(bad(parameter, "an ordinal of the topology's devices"))
        }
    }

    /// What the driver says of the link `src → dst`; `None` for `src == dst`.
    /// [`CudaError::InvalidArgument`] for an ordinal outside the topology.
    pub fn peer(&self, src: usize, dst: usize) -> Result<Option<&PeerLink>, CudaError> {
        self.check_ordinal(src, "src")?;
        self.check_ordinal(dst, "dst")?;
        Ok((src != dst).then(|| &self.peers[src * self.devices.len() + dst]))
    }

    /// Active NVLinks of `a` whose far end is `b` (matched by PCI bus id). 0 for
    /// links through an NVSwitch (see [`Topology::through_nvswitch`]) and when the
    /// NVLinks are unknown.
    pub fn nvlinks_between(&self, a: usize, b: usize) -> usize {
        let (Some(da), Some(db)) = (self.devices.get(a), self.devices.get(b)) else {
            return 0;
        };
        let Some(target) = parse_bus_id(&db.pci_bus_id) else {
            return 0;
        };
        da.nvlinks
            .iter()
            .filter(|l| l.active)
            .filter_map(|l| l.remote.as_ref())
            .filter(|r| parse_bus_id(&r.pci.bus_id) == Some(target))
            .count()
    }

    /// Whether both devices have an active NVLink to an NVSwitch — not checked to be
    /// the same switch, nor the same fabric partition (NVML's link queries do not
    /// say).
    pub fn through_nvswitch(&self, a: usize, b: usize) -> bool {
        let on_switch = |i: usize| {
            self.devices.get(i).is_some_and(|d| {
                d.nvlinks.iter().any(|l| {
                    l.active
                        && l.remote
                            .as_ref()
                            .is_some_and(|r| r.device_type == Some(NvLinkDeviceType::Switch))
                })
            })
        };
        a != b && on_switch(a) && on_switch(b)
    }

    /// The best device for `of` to work with, by these criteria in order:
    /// 1. `of` can access its memory (`ACCESS_SUPPORTED`; others are never chosen);
    /// 2. the lowest performance rank (0 is the best link, per CUDA);
    /// 3. native atomics over the link;
    /// 4. the most direct NVLinks between them, then both on an NVSwitch (see
    ///    [`through_nvswitch`](Self::through_nvswitch); when NVML answered, otherwise
    ///    these tie);
    /// 5. the lowest ordinal.
    ///
    /// `Ok(None)` when `of` can access no other device.
    pub fn best_peer(&self, of: usize) -> Result<Option<usize>, CudaError> {
        self.check_ordinal(of, "of")?;
        let n = self.devices.len();
        let best = (0..n)
            .filter(|&j| j != of && self.peers[of * n + j].access_supported)
            .min_by_key(|&j| {
                let l = &self.peers[of * n + j];
                (
                    l.performance_rank,
                    !l.native_atomics,
                    core::cmp::Reverse(self.nvlinks_between(of, j)),
                    !self.through_nvswitch(of, j),
                    j,
                )
            });
        Ok(best)
    }

    fn edge_label(&self, a: usize, b: usize) -> String {
        let l = &self.peers[a * self.devices.len() + b];
        let mut s = format!("rank {}", l.performance_rank);
        s.push_str(if l.native_atomics {
            ", atomics"
        } else {
            ", no atomics"
        });
        if l.cuda_array_access {
            s.push_str(", arrays");
        }
        let nv = self.nvlinks_between(a, b);
        if nv > 0 {
            let _ = write!(s, ", nvlink x{nv}");
        } else if self.through_nvswitch(a, b) {
            s.push_str(", nvswitch");
        }
        s
    }

    /// The topology as a Graphviz `digraph`: a node per device (ordinal, name, PCI
    /// bus id, NUMA node), a directed edge `src -> dst` per link with access
    /// supported, labelled with its rank, atomics, CUDA-array access and NVLinks.
    /// An asymmetric link is one edge; a symmetric one is two.
    pub fn to_dot(&self) -> String {
        let mut s = String::from("digraph topology {\n  node [shape=box];\n");
        let _ = writeln!(s, "  label=\"{}\";", dot_escape(&self.links_note()));
        for d in &self.devices {
            let numa = d
                .numa_node
                .map_or_else(|| "numa ?".to_owned(), |n| format!("numa {n}"));
            let _ = writeln!(
                s,
                "  gpu{} [label=\"{}: {}\\n{}\\n{}\"];",
                d.ordinal,
                d.ordinal,
                dot_escape(&d.name),
                dot_escape(&d.pci_bus_id),
                numa
            );
        }
        let n = self.devices.len();
        for a in 0..n {
            for b in 0..n {
                if a != b && self.peers[a * n + b].access_supported {
                    let _ = writeln!(
                        s,
                        "  gpu{a} -> gpu{b} [label=\"{}\"];",
                        dot_escape(&self.edge_label(a, b))
                    );
                }
            }
        }
        s.push_str("}\n");
        s
    }

    fn links_note(&self) -> String {
        match &self.links {
            LinkSource::Nvml(path) => format!("NVLinks from NVML ({path})"),
            LinkSource::Unavailable(why) => {
                format!("NVLinks unknown ({why}): peer links from the driver's P2P attributes only")
            }
        }
    }
}

impl core::fmt::Display for Topology {
    /// The devices (active NVLinks `?` when unknown), then the peer matrix (row:
    /// source; column: destination; each cell `-` for no access, else the rank, `a`
    /// for native atomics and `nvN` for N direct NVLinks or `sw` for an NVSwitch),
    /// then where the NVLinks came from.
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        writeln!(f, "devices:")?;
        for d in &self.devices {
            let numa = d
                .numa_node
                .map_or_else(|| "?".to_owned(), |n| n.to_string());
            let active = match self.links {
                LinkSource::Nvml(_) => d.nvlinks.iter().filter(|l| l.active).count().to_string(),
                LinkSource::Unavailable(_) => "?".to_owned(),
            };
            writeln!(
                f,
                "  {:>3}  {:<16} numa {:<3} nvlinks {:<3} {}",
                d.ordinal, d.pci_bus_id, numa, active, d.name
            )?;
        }
        let n = self.devices.len();
        writeln!(
            f,
            "peer matrix (row: source, column: destination; rank, a = native atomics):"
        )?;
        write!(f, "  {:>8}", "src\\dst")?;
        for b in 0..n {
            write!(f, " {b:>8}")?;
        }
        writeln!(f)?;
        for a in 0..n {
            write!(f, "  {a:>8}")?;
            for b in 0..n {
                let cell = if a == b {
                    "x".to_owned()
                } else {
                    let l = &self.peers[a * n + b];
                    if !l.access_supported {
                        "-".to_owned()
                    } else {
                        let mut c = l.performance_rank.to_string();
                        if l.native_atomics {
                            c.push('a');
                        }
                        let nv = self.nvlinks_between(a, b);
                        if nv > 0 {
                            let _ = write!(c, " nv{nv}");
                        } else if self.through_nvswitch(a, b) {
                            c.push_str(" sw");
                        }
                        c
                    }
                };
                write!(f, " {cell:>8}")?;
            }
            writeln!(f)?;
        }
        writeln!(f, "{}", self.links_note())
    }
}

fn dot_escape(s: &str) -> String {
    s.replace('\\', "\\\\").replace('"', "\\\"")
}

/// `domain:bus:device.function` (hexadecimal; the domain and function optional, as
/// the driver and NVML write them with 4- or 8-digit domains) as numbers.
pub fn parse_bus_id(id: &str) -> Option<(u32, u32, u32, u32)> {
    // Hex digits only (no sign, no blank), at most 8, within the field's PCI range.
    let hex = |s: &str, max: u32| {
        let digits = !s.is_empty() && s.len() <= 8 && s.bytes().all(|c| c.is_ascii_hexdigit());
        digits
            .then(|| u32::from_str_radix(s, 16).ok())
            .flatten()
            .filter(|v| *v <= max)
    };
    let id = id.trim();
    let (rest, function) = match id.rsplit_once('.') {
        Some((r, f)) => (r, hex(f, 7)?),
        None => (id, 0),
    };
    let parts: Vec<&str> = rest.split(':').collect();
    let (domain, bus, device) = match parts.as_slice() {
        [d, b, v] => (*d, *b, *v),
        [b, v] => ("0", *b, *v),
        _ => return None,
    };
    Some((
        hex(domain, u32::MAX)?,
        hex(bus, 0xff)?,
        hex(device, 0x1f)?,
        function,
    ))
}

/// The NUMA node sysfs gives the device at `bus_id` (`<root>/0000:65:00.0/numa_node`,
/// lower case, 4-digit domain); `None` when there is no such file, it does not hold
/// a number, or it holds `-1`.
pub fn numa_node(sysfs_pci_devices: &Path, bus_id: &str) -> Option<u32> {
    let (d, b, v, f) = parse_bus_id(bus_id)?;
    let dir = format!("{d:04x}:{b:02x}:{v:02x}.{f:x}");
    let path = sysfs_pci_devices.join(dir).join("numa_node");
    // A regular file only (not a FIFO, which would block, nor a device), and at most 64
    // bytes of it: sysfs writes one small integer.
    if !std::fs::metadata(&path).ok()?.is_file() {
        return None;
    }
    use std::io::Read as _;
    let mut text = String::new();
    std::fs::File::open(&path)
        .ok()?
        .take(65)
        .read_to_string(&mut text)
        .ok()?;
    if text.len() > 64 {
        return None; // not a small integer: never a truncated one
    }
    let n: i64 = text.trim().parse().ok()?;
    u32::try_from(n).ok()
}

/// Each device's NVLinks, from the NVML device at its PCI bus id; the reason as text
/// on the first failure.
fn nvlinks_of(nvml: &Nvml, devices: &[DeviceNode]) -> Result<Vec<Vec<NvLink>>, String> {
    devices
        .iter()
        .map(|d| {
            nvml.device_by_pci_bus_id(&d.pci_bus_id)
                .and_then(|nd| nd.nvlinks())
                .map_err(|e| format!("device {} ({}): {e}", d.ordinal, d.pci_bus_id))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bus_ids_parse_in_the_driver_and_nvml_forms() {
        assert_eq!(parse_bus_id("0000:65:00.0"), Some((0, 0x65, 0, 0)));
        assert_eq!(parse_bus_id("00000001:B3:1F.1"), Some((1, 0xb3, 0x1f, 1)));
        assert_eq!(parse_bus_id("65:00"), Some((0, 0x65, 0, 0)));
        assert_eq!(parse_bus_id("nonsense"), None);
        assert_eq!(parse_bus_id("zz:00.0"), None);
    }

    #[test]
    fn numa_nodes_come_from_sysfs_or_not_at_all() {
        let root = std::env::temp_dir().join(format!("oxicuda-numa-{}", std::process::id()));
        let dev = root.join("0000:65:00.0");
        std::fs::create_dir_all(&dev).unwrap();
        std::fs::write(dev.join("numa_node"), "1\n").unwrap();
        let none = root.join("0000:66:00.0");
        std::fs::create_dir_all(&none).unwrap();
        std::fs::write(none.join("numa_node"), "-1\n").unwrap();
        assert_eq!(numa_node(&root, "00000000:65:00.0"), Some(1));
        assert_eq!(numa_node(&root, "0000:66:00.0"), None);
        assert_eq!(numa_node(&root, "0000:67:00.0"), None);
        std::fs::remove_dir_all(&root).unwrap();
    }
}

//! The configuration: devices, driver version and peer topology, read from the
//! environment (`SOFTCUDA_VERSION`, `SOFTCUDA_DEVICES`, `SOFTCUDA_P2P`,
//! `SOFTCUDA_NVLINK`) or set through `crate::control`, and the parsers of their specs.

use crate::device::Profile;

/// The configuration, read at first use from the environment
/// (`SOFTCUDA_VERSION`, `SOFTCUDA_DEVICES`) or set through [`crate::control`].
#[derive(Debug, Clone)]
pub struct Config {
    /// The version `cuDriverGetVersion` reports (12090 by default).
    pub version: i32,
    /// The devices.
    pub devices: Vec<Profile>,
    /// Peer links: which device can access which (`None`: every distinct pair).
    pub peer_links: Option<Vec<(usize, usize)>>,
    /// What `cuDeviceGetP2PAttribute` reports for a directed link, where it is not
    /// the default ([`PeerPerf::default`]).
    pub peer_perf: Vec<((usize, usize), PeerPerf)>,
    /// Simulated NVLinks, for softcuda's NVML surface only: `(a, b, n)` joins
    /// devices `a` and `b` by `n` links (empty by default: no device has NVLink).
    pub nvlinks: Vec<(usize, usize, u32)>,
}

/// Parses `SOFTCUDA_NVLINK`: `none`, or pairs joined by NVLinks such as `0-1x2,2-3`
/// (`xN`: N links; one by default).
pub fn parse_nvlinks(spec: &str) -> Option<Vec<(usize, usize, u32)>> {
    match spec.trim() {
        "none" | "" => Some(Vec::new()),
        list => list
            .split(',')
            .map(|l| {
                let (pair, n) = match l.trim().split_once('x') {
                    Some((p, n)) => (p, n.parse().ok()?),
                    None => (l.trim(), 1),
                };
                let (a, b) = pair.split_once('-')?;
                let (a, b): (usize, usize) = (a.parse().ok()?, b.parse().ok()?);
                (a != b && n > 0).then_some((a, b, n))
            })
            .collect(),
    }
}

/// The attributes `cuDeviceGetP2PAttribute` reports for an accessible directed link.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PeerPerf {
    /// `PERFORMANCE_RANK` (0: the best link).
    pub rank: i32,
    /// `NATIVE_ATOMIC_SUPPORTED`.
    pub native_atomics: bool,
    /// `CUDA_ARRAY_ACCESS_SUPPORTED`.
    pub cuda_array_access: bool,
}

impl Default for PeerPerf {
    /// Rank 0, native atomics, no CUDA-array access.
    fn default() -> Self {
        Self {
            rank: 0,
            native_atomics: true,
            cuda_array_access: false,
        }
    }
}

/// The peer links and their non-default attributes.
pub type PeerSpec = (Option<Vec<(usize, usize)>>, Vec<((usize, usize), PeerPerf)>);

/// Parses `SOFTCUDA_P2P`: `all`, `none`, or directed links such as `0-1,1-0`, each
/// optionally followed by `:rankN`, `:noatomics`, `:arrays` (its P2P attributes).
pub fn parse_p2p(spec: &str) -> Option<PeerSpec> {
    match spec.trim() {
        "all" => Some((None, Vec::new())),
        "none" | "" => Some((Some(Vec::new()), Vec::new())),
        list => {
            let mut links = Vec::new();
            let mut perf = Vec::new();
            for entry in list.split(',') {
                let mut parts = entry.trim().split(':');
                let (a, b) = parts.next()?.split_once('-')?;
                let link = (a.parse().ok()?, b.parse().ok()?);
                let mut p = PeerPerf::default();
                let mut custom = false;
                for opt in parts {
                    custom = true;
                    match opt {
                        "noatomics" => p.native_atomics = false,
                        "arrays" => p.cuda_array_access = true,
                        r => p.rank = r.strip_prefix("rank")?.parse().ok()?,
                    }
                }
                links.push(link);
                if custom {
                    perf.push((link, p));
                }
            }
            Some((Some(links), perf))
        }
    }
}

/// Parses `SOFTCUDA_P2P`'s links (see [`parse_p2p`]), without their attributes.
pub fn parse_links(spec: &str) -> Option<Option<Vec<(usize, usize)>>> {
    parse_p2p(spec).map(|(links, _)| links)
}

impl Config {
    pub(crate) fn from_env() -> Self {
        let version = std::env::var("SOFTCUDA_VERSION")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(12090);
        let devices = std::env::var("SOFTCUDA_DEVICES")
            .ok()
            .and_then(|s| Profile::parse_list(&s))
            .unwrap_or_else(Profile::defaults);
        let (peer_links, peer_perf) = std::env::var("SOFTCUDA_P2P")
            .ok()
            .and_then(|s| parse_p2p(&s))
            .unwrap_or((None, Vec::new()));
        let nvlinks = std::env::var("SOFTCUDA_NVLINK")
            .ok()
            .and_then(|s| parse_nvlinks(&s))
            .unwrap_or_default();
        Self {
            version,
            devices,
            peer_links,
            peer_perf,
            nvlinks,
        }
    }

    /// The far-end device of each NVLink of device `d`, in link order (at most 18,
    /// NVML's maximum).
    pub fn nvlinks_of(&self, d: usize) -> Vec<usize> {
        let mut far = Vec::new();
        for &(a, b, n) in &self.nvlinks {
            let other = match (a == d, b == d) {
                (true, false) => b,
                (false, true) => a,
                _ => continue,
            };
            if other < self.devices.len() {
                let room = 18usize.saturating_sub(far.len());
                far.extend(std::iter::repeat_n(other, (n as usize).min(room)));
            }
        }
        far.truncate(18);
        far
    }

    /// Whether device `a` can access device `b`'s memory.
    pub fn peer(&self, a: usize, b: usize) -> bool {
        a != b && self.peer_links.as_ref().is_none_or(|l| l.contains(&(a, b)))
    }

    /// The P2P attributes of the link `a → b` (meaningful where [`Config::peer`]).
    pub fn peer_perf(&self, a: usize, b: usize) -> PeerPerf {
        self.peer_perf
            .iter()
            .find(|(l, _)| *l == (a, b))
            .map_or_else(PeerPerf::default, |(_, p)| *p)
    }
}

#[cfg(test)]
mod p2p_spec_tests {
    use super::{PeerPerf, parse_p2p};

    #[test]
    fn links_take_optional_attributes() {
        let (links, perf) = parse_p2p("0-1, 1-0:rank2:noatomics ,2-3:arrays").unwrap();
        assert_eq!(links, Some(vec![(0, 1), (1, 0), (2, 3)]));
        assert_eq!(
            perf,
            vec![
                (
                    (1, 0),
                    PeerPerf {
                        rank: 2,
                        native_atomics: false,
                        cuda_array_access: false
                    }
                ),
                (
                    (2, 3),
                    PeerPerf {
                        rank: 0,
                        native_atomics: true,
                        cuda_array_access: true
                    }
                ),
            ]
        );
        assert_eq!(parse_p2p("all"), Some((None, Vec::new())));
        assert_eq!(parse_p2p("none"), Some((Some(Vec::new()), Vec::new())));
        assert_eq!(parse_p2p("0-1:fast"), None);
        assert_eq!(parse_p2p("0-1:rankx"), None);
    }

    #[test]
    fn nvlinks_parse_with_counts() {
        use super::parse_nvlinks;
        assert_eq!(
            parse_nvlinks("0-1x2, 2-3"),
            Some(vec![(0, 1, 2), (2, 3, 1)])
        );
        assert_eq!(parse_nvlinks("none"), Some(Vec::new()));
        assert_eq!(parse_nvlinks("1-1"), None);
        assert_eq!(parse_nvlinks("0-1x0"), None);
        assert_eq!(parse_nvlinks("0-1xy"), None);
    }
}

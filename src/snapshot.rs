//! A device-state snapshot for debugging: what the driver says about the current
//! context and its device at one moment — device name, ordinal and compute
//! capability, free and total memory, the context's flags, every context limit, the
//! cache preference, the stream priority range, the context's API version and handle,
//! and key device attributes — with a readable multi-line `Display`.
//!
//! Each value is asked for on its own and kept as the driver's answer: a value the
//! driver refuses (a limit it does not support, an attribute it does not know) is
//! that entry's error, shown as such, and never stops the rest of the snapshot.
//!
//! ```no_run
//! # fn main() -> Result<(), oxicuda_driver::CudaError> {
//! let driver = oxicuda_driver::init()?;
//! let ctx = oxicuda_driver::PrimaryContext::retain(&driver.device(0)?)?;
//! ctx.bind(|cur| println!("{}", oxicuda_driver::snapshot::Snapshot::take(cur)))?;
//! # Ok(())
//! # }
//! ```

use crate::context::CurrentContext;
use crate::device::Device;
use crate::error::CudaError;
use crate::sys::{
    CUcontext, CUctx_flags, CUdevice_attribute as A, CUfunc_cache, CUlimit, CUresult,
};
use core::fmt;

/// One answer of the driver: the value, or why there is none.
pub type Answer<T> = Result<T, CudaError>;

/// The device attributes a snapshot reads, in report order.
pub const KEY_ATTRIBUTES: [A; 15] = [
    A::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT,
    A::CU_DEVICE_ATTRIBUTE_WARP_SIZE,
    A::CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK,
    A::CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR,
    A::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK,
    A::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN,
    A::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR,
    A::CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE,
    A::CU_DEVICE_ATTRIBUTE_CLOCK_RATE,
    A::CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE,
    A::CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH,
    A::CU_DEVICE_ATTRIBUTE_ECC_ENABLED,
    A::CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS,
    A::CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING,
    A::CU_DEVICE_ATTRIBUTE_COMPUTE_MODE,
];

/// What the driver said about the current context and its device (see the module
/// docs). Every field is the driver's answer to one query.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Snapshot {
    /// The current context's handle.
    pub context: CUcontext,
    /// The context's API version (`cuCtxGetApiVersion`).
    pub api_version: Answer<u32>,
    /// The context's flags (scheduling, host mapping, ...).
    pub flags: Answer<CUctx_flags>,
    /// The context's device.
    pub device: Answer<Device>,
    /// The device's name.
    pub name: Answer<String>,
    /// The device's compute capability, (major, minor).
    pub compute_capability: Answer<(u32, u32)>,
    /// (free, total) device memory in bytes, as the context sees it (`cuMemGetInfo`).
    pub memory: Answer<(usize, usize)>,
    /// Every limit the 12.9 header names (`CU_LIMIT_MAX` excluded), with the
    /// context's value or the driver's refusal (`CUDA_ERROR_UNSUPPORTED_LIMIT`, ...).
    pub limits: Vec<(CUlimit, Answer<usize>)>,
    /// The context's L1/shared-memory preference.
    pub cache_config: Answer<CUfunc_cache>,
    /// (least, greatest) stream priority.
    pub stream_priority_range: Answer<(i32, i32)>,
    /// [`KEY_ATTRIBUTES`] with the device's values.
    pub attributes: Vec<(A, Answer<i32>)>,
}

impl Snapshot {
    /// Reads the state of the context `cur` proves current, and of its device. Never
    /// fails as a whole: each query's refusal is kept in its field.
    pub fn take(cur: &CurrentContext<'_>) -> Snapshot {
        let device = cur.device();
        let name = with_device(&device, Device::name);
        let compute_capability = with_device(&device, Device::compute_capability);
        let attributes = KEY_ATTRIBUTES
            .iter()
            .map(|&a| (a, with_device(&device, |d| d.attribute(a))))
            .collect();
        Snapshot {
            context: cur.raw(),
            api_version: cur.api_version(),
            flags: cur.flags(),
            name,
            compute_capability,
            memory: cur.memory_info(),
            limits: known_limits().map(|l| (l, cur.limit(l))).collect(),
            cache_config: cur.cache_config(),
            stream_priority_range: cur.stream_priority_range(),
            attributes,
            device,
        }
    }

    /// The answer for limit `l`, if the snapshot asked for it.
    pub fn limit(&self, l: CUlimit) -> Option<&Answer<usize>> {
        self.limits.iter().find(|(k, _)| *k == l).map(|(_, v)| v)
    }

    /// The answer for attribute `a`, if the snapshot asked for it.
    pub fn attribute(&self, a: A) -> Option<&Answer<i32>> {
        self.attributes
            .iter()
            .find(|(k, _)| *k == a)
            .map(|(_, v)| v)
    }
}

/// `f` of the device, or the error that stood for the device.
fn with_device<T>(device: &Answer<Device>, f: impl FnOnce(&Device) -> Answer<T>) -> Answer<T> {
    match device {
        Ok(d) => f(d),
        Err(e) => Err(e.clone()),
    }
}

/// Every limit of the header but the `CU_LIMIT_MAX` sentinel.
fn known_limits() -> impl Iterator<Item = CUlimit> {
    CUlimit::KNOWN
        .iter()
        .filter(|(_, l)| *l != CUlimit::CU_LIMIT_MAX)
        .map(|(_, l)| *l)
}

/// Writes `answer` with `show`, or the refusal.
fn answer<T>(
    f: &mut fmt::Formatter<'_>,
    a: &Answer<T>,
    show: impl FnOnce(&mut fmt::Formatter<'_>, &T) -> fmt::Result,
) -> fmt::Result {
    match a {
        Ok(v) => show(f, v),
        Err(e) => refused(f, e),
    }
}

/// A refused query as the snapshot shows it (one copy, not one per answer type).
fn refused(f: &mut fmt::Formatter<'_>, e: &CudaError) -> fmt::Result {
    write!(f, "{} ({e})", refusal(e))
}

/// How a refusal reads: `unsupported` when the driver (or the loaded library) does not
/// support the query, `unavailable` for any other error.
fn refusal(e: &CudaError) -> &'static str {
    match e {
        CudaError::Driver(r)
            if *r == CUresult::CUDA_ERROR_NOT_SUPPORTED
                || *r == CUresult::CUDA_ERROR_UNSUPPORTED_LIMIT =>
        {
            "unsupported"
        }
        CudaError::NotSupported { .. } => "unsupported",
        _ => "unavailable",
    }
}

/// `CU_LIMIT_STACK_SIZE` -> `stack size`.
fn short(c_name: &str, prefix: &str) -> String {
    c_name
        .strip_prefix(prefix)
        .unwrap_or(c_name)
        .to_ascii_lowercase()
        .replace('_', " ")
}

impl fmt::Display for Snapshot {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "context {:?}", self.context)?;
        write!(f, "  API version:        ")?;
        answer(f, &self.api_version, |f, v| write!(f, "{v}"))?;
        write!(f, "\n  flags:              ")?;
        answer(f, &self.flags, |f, v| write!(f, "{v:?}"))?;
        write!(f, "\n  device:             ")?;
        answer(f, &self.device, |f, d| write!(f, "{}", d.ordinal()))?;
        write!(f, " — ")?;
        answer(f, &self.name, |f, n| f.write_str(n))?;
        write!(f, "\n  compute capability: ")?;
        answer(f, &self.compute_capability, |f, (a, b)| {
            write!(f, "{a}.{b}")
        })?;
        write!(f, "\n  memory:             ")?;
        answer(f, &self.memory, |f, (free, total)| {
            write!(
                f,
                "{} MiB free of {} MiB ({free} of {total} bytes)",
                free >> 20,
                total >> 20
            )
        })?;
        write!(f, "\n  cache config:       ")?;
        answer(f, &self.cache_config, |f, c| write!(f, "{c:?}"))?;
        write!(f, "\n  stream priorities:  ")?;
        answer(f, &self.stream_priority_range, |f, (least, greatest)| {
            write!(f, "least {least}, greatest {greatest}")
        })?;
        writeln!(f, "\n  limits:")?;
        for (l, v) in &self.limits {
            let name = l
                .name()
                .map_or_else(|| format!("{l:?}"), |n| short(n, "CU_LIMIT_"));
            write!(f, "    {name:<36} ")?;
            answer(f, v, |f, v| write!(f, "{v}"))?;
            writeln!(f)?;
        }
        writeln!(f, "  device attributes:")?;
        for (a, v) in &self.attributes {
            let name = a
                .name()
                .map_or_else(|| format!("{a:?}"), |n| short(n, "CU_DEVICE_ATTRIBUTE_"));
            write!(f, "    {name:<36} ")?;
            answer(f, v, |f, v| write!(f, "{v}"))?;
            writeln!(f)?;
        }
        Ok(())
    }
}

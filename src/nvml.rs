//! NVML (`libnvidia-ml.so.1`), loaded at run time for what the CUDA driver does not
//! say: which NVLinks a device has, whether they are up, their version, what is at
//! their far end and what they can carry.
//!
//! Loaded on the driver loader's principles ([`crate::loader`]): never linked, no
//! panic, every failure a typed [`NvmlError`] that names the function. Each function
//! is resolved on its own: only `nvmlInit_v2` and `nvmlShutdown` are required (without
//! them the library is not NVML); any other may be missing, and calling what needs it
//! is [`NvmlError::Missing`]. [`NvmlLibrary::open`] resolves without calling anything;
//! [`NvmlLibrary::init`] (or [`Nvml::load`]) calls `nvmlInit_v2`, and `nvmlShutdown`
//! is called when the [`Nvml`] is dropped (NVML counts these, so several may live).
//!
//! NVML is a separate library from the driver's `libcuda`: it may be absent where the
//! driver is present (containers often mount only `libcuda`), and on a machine without
//! a GPU its init fails (`NVML_ERROR_DRIVER_NOT_LOADED` with the 535 library) even
//! though it loads. [`crate::topology`] uses it when it can and says so when it cannot.

use crate::sys::nvml::{
    NVML_DEVICE_NAME_V2_BUFFER_SIZE, NVML_NVLINK_MAX_LINKS, nvmlDevice_t, nvmlEnableState_t,
    nvmlIntNvLinkDeviceType_t, nvmlNvLinkCapability_t, nvmlNvlinkVersion_t, nvmlPciInfo_t,
    nvmlReturn_t, pfn,
};
use core::ffi::{CStr, c_char, c_uint};
use std::ffi::CString;
use std::path::Path;

/// The library [`Nvml::load`] opens on Linux.
pub const NVML_LIBRARY: &str = "libnvidia-ml.so.1";
/// The environment variable naming the NVML library [`Nvml::load`] opens instead
/// (trusted configuration, like `OXICUDA_DRIVER_PATH`).
pub const ENV_NVML_PATH: &str = "OXICUDA_NVML_PATH";

/// Why NVML could not be loaded or did not answer.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum NvmlError {
    /// The library could not be opened.
    #[error("NVML library `{path}` could not be loaded: {error}")]
    LibraryNotFound {
        /// The path or name tried.
        path: String,
        /// The system's reason (`dlopen`'s message).
        error: String,
    },
    /// The library opened but lacks a function every NVML exports: it is not NVML.
    #[error("`{path}` is not NVML: it does not export `{symbol}`")]
    NotNvml {
        /// The library.
        path: String,
        /// The function it lacks.
        symbol: &'static str,
    },
    /// NVML has no loader on this platform (macOS).
    #[error("NVML is not available on {0}")]
    UnsupportedPlatform(&'static str),
    /// The loaded library does not export this function, which the call needs.
    #[error("the loaded NVML does not export `{function}`")]
    Missing {
        /// The function.
        function: &'static str,
    },
    /// An NVML function returned an error.
    #[error("{function} failed: {}", CallFailure(*code, description.as_deref()))]
    Call {
        /// The function.
        function: &'static str,
        /// What it returned.
        code: nvmlReturn_t,
        /// `nvmlErrorString`'s words for the code, when that function resolved.
        description: Option<String>,
    },
    /// An argument NVML cannot be given (it was not called).
    #[error("invalid NVML argument `{parameter}`: {reason}")]
    InvalidArgument {
        /// The parameter.
        parameter: &'static str,
        /// What is wrong with it.
        reason: &'static str,
    },
}

impl NvmlError {
    /// The NVML return code, for [`NvmlError::Call`].
    pub fn code(&self) -> Option<nvmlReturn_t> {
        match self {
            NvmlError::Call { code, .. } => Some(*code),
            _ => None,
        }
    }
}

/// What an NVML call returned: `NAME (value)` (or `NVML error value` for a code
/// `nvml.h` lacks), then `nvmlErrorString`'s words when there are some.
struct CallFailure<'a>(nvmlReturn_t, Option<&'a str>);

impl core::fmt::Display for CallFailure<'_> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        let Self(code, description) = self;
        match code.name() {
            Some(name) => write!(f, "{name} ({})", code.0)?,
            None => write!(f, "NVML error {}", code.0)?,
        }
        match description {
            Some(d) => write!(f, ": {d}"),
            None => Ok(()),
        }
    }
}

/// Declares the optional functions: the table's fields, their names, their lookup.
macro_rules! functions {
    ($($field:ident: $name:ident,)*) => {
        /// The optional NVML functions, each resolved on its own.
        struct Functions {
            $($field: Option<pfn::$name>,)*
        }

        /// Every NVML function this module may call, by exported name (`nvmlInit_v2`
        /// and `nvmlShutdown`, which are required, first).
        pub const FUNCTIONS: &[&str] = &["nvmlInit_v2", "nvmlShutdown", $(stringify!($name)),*];

        impl Functions {
            fn resolve(library: &libloading::Library) -> Self {
                Self {
                    $(
                        // SAFETY: the symbol is looked up with the signature the NVML
                        // header declares for that exported name (`crate::sys::nvml::pfn`),
                        // as an `Option` so that a symbol whose value is null is `None`.
                        $field: unsafe {
                            crate::loader::symbol::<pfn::$name>(library, concat!(stringify!($name), "\0").as_bytes())
                        },
                    )*
                }
            }

            fn missing(&self) -> Vec<&'static str> {
                let mut missing = Vec::new();
                $(if self.$field.is_none() { missing.push(stringify!($name)); })*
                missing
            }
        }
    };
}

functions! {
    error_string: nvmlErrorString,
    device_count: nvmlDeviceGetCount_v2,
    by_index: nvmlDeviceGetHandleByIndex_v2,
    by_pci_bus_id: nvmlDeviceGetHandleByPciBusId_v2,
    pci_info: nvmlDeviceGetPciInfo_v3,
    name: nvmlDeviceGetName,
    link_state: nvmlDeviceGetNvLinkState,
    link_version: nvmlDeviceGetNvLinkVersion,
    link_capability: nvmlDeviceGetNvLinkCapability,
    link_remote_pci: nvmlDeviceGetNvLinkRemotePciInfo_v2,
    link_remote_type: nvmlDeviceGetNvLinkRemoteDeviceType,
}

fn need<T: Copy>(f: Option<T>, function: &'static str) -> Result<T, NvmlError> {
    f.ok_or(NvmlError::Missing { function })
}

/// NVML opened and its functions resolved, not yet initialised: what the library
/// exports can be inspected ([`NvmlLibrary::missing_functions`]) even on a machine
/// where its init fails. [`NvmlLibrary::init`] makes it an [`Nvml`].
pub struct NvmlLibrary {
    functions: Functions,
    init: pfn::nvmlInit_v2,
    shutdown: pfn::nvmlShutdown,
    path: String,
    // Declared last so that it is dropped last: the functions point into it.
    _library: libloading::Library,
}

impl core::fmt::Debug for NvmlLibrary {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("NvmlLibrary")
            .field("path", &self.path)
            .field("missing", &self.missing_functions())
            .finish()
    }
}

// SAFETY: function pointers into the library and its handle, never mutated after
// open; NVML is thread-safe ("safe to make simultaneous NVML calls from multiple
// threads", nvml.h).
unsafe impl Send for NvmlLibrary {}
// SAFETY: as above.
unsafe impl Sync for NvmlLibrary {}

impl NvmlLibrary {
    /// Opens the NVML that `OXICUDA_NVML_PATH` names — that library alone, an
    /// explicit choice is honoured or reported — else the system's
    /// (`libnvidia-ml.so.1`; `nvml.dll` on Windows), and resolves its functions.
    /// Nothing in it is called.
    pub fn open_default() -> Result<Self, NvmlError> {
        if let Some(path) = std::env::var_os(ENV_NVML_PATH).filter(|p| !p.is_empty()) {
            // SAFETY: the environment variable is trusted configuration, as
            // `OXICUDA_DRIVER_PATH` is: it names NVML or a faithful implementation.
            return unsafe { Self::open(std::path::PathBuf::from(path)) };
        }
        let name = if cfg!(target_os = "macos") {
            return Err(NvmlError::UnsupportedPlatform("macOS"));
        } else if cfg!(windows) {
            "nvml.dll"
        } else {
            NVML_LIBRARY
        };
        // SAFETY: the library is the system's NVML, found by its own name.
        unsafe { Self::open(name) }
    }

    /// Opens exactly this library and resolves its functions. Nothing in it is
    /// called; a library that does not export `nvmlInit_v2` and `nvmlShutdown` is
    /// refused ([`NvmlError::NotNvml`]).
    ///
    /// # Safety
    /// Loading a library runs its initialisers, and its functions are later called
    /// with NVML's C signatures: `path` must name NVML (NVIDIA's `libnvidia-ml`, or a
    /// faithful implementation of its ABI).
    pub unsafe fn open(path: impl AsRef<Path>) -> Result<Self, NvmlError> {
        let path = path.as_ref();
        let shown = path.display().to_string();
        // SAFETY: the caller vouches that the library is NVML (see above).
        let library =
            unsafe { libloading::Library::new(path) }.map_err(|e| NvmlError::LibraryNotFound {
                path: shown.clone(),
                error: e.to_string(),
            })?;
        // SAFETY: the header's signatures of these two exported names, as `Option`s:
        // a symbol defined as null is refused, never called.
        let init = unsafe { crate::loader::symbol::<pfn::nvmlInit_v2>(&library, b"nvmlInit_v2\0") }
            .ok_or_else(|| NvmlError::NotNvml {
                path: shown.clone(),
                symbol: "nvmlInit_v2",
            })?;
        // SAFETY: as above.
        let shutdown =
            unsafe { crate::loader::symbol::<pfn::nvmlShutdown>(&library, b"nvmlShutdown\0") }
                .ok_or_else(|| NvmlError::NotNvml {
                    path: shown.clone(),
                    symbol: "nvmlShutdown",
                })?;
        Ok(Self {
            functions: Functions::resolve(&library),
            init,
            shutdown,
            path: shown,
            _library: library,
        })
    }

    /// The library opened.
    pub fn path(&self) -> &str {
        &self.path
    }

    /// The functions of [`FUNCTIONS`] this library does not export; calls that need
    /// one are [`NvmlError::Missing`].
    pub fn missing_functions(&self) -> Vec<&'static str> {
        self.functions.missing()
    }

    /// Calls `nvmlInit_v2`. On failure the library is closed and the error carries
    /// NVML's code (on a machine without an NVIDIA kernel driver,
    /// `NVML_ERROR_DRIVER_NOT_LOADED`).
    pub fn init(self) -> Result<Nvml, NvmlError> {
        // SAFETY: `nvmlInit_v2` takes nothing; the library stays loaded while it runs.
        let code = unsafe { (self.init)() };
        if code != nvmlReturn_t::NVML_SUCCESS {
            return Err(call_error(self.functions.error_string, "nvmlInit_v2", code));
        }
        tracing::debug!(path = %self.path, "initialised NVML");
        Ok(Nvml { lib: self })
    }
}

/// A loaded, initialised NVML. `nvmlShutdown` is called when it is dropped.
pub struct Nvml {
    lib: NvmlLibrary,
}

impl core::fmt::Debug for Nvml {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Nvml").field("library", &self.lib).finish()
    }
}

impl Nvml {
    /// Opens `OXICUDA_NVML_PATH`'s library or the system's NVML
    /// ([`NvmlLibrary::open_default`]) and initialises it.
    pub fn load() -> Result<Self, NvmlError> {
        NvmlLibrary::open_default()?.init()
    }

    /// Opens exactly this library ([`NvmlLibrary::open`]) and initialises it.
    ///
    /// # Safety
    /// As [`NvmlLibrary::open`]: `path` must name NVML.
    pub unsafe fn load_from(path: impl AsRef<Path>) -> Result<Self, NvmlError> {
        // SAFETY: the caller's promise, passed on.
        unsafe { NvmlLibrary::open(path) }?.init()
    }

    /// The library loaded.
    pub fn path(&self) -> &str {
        &self.lib.path
    }

    /// The functions of [`FUNCTIONS`] this library does not export; calls that need
    /// one are [`NvmlError::Missing`].
    pub fn missing_functions(&self) -> Vec<&'static str> {
        self.lib.functions.missing()
    }

    fn check(&self, function: &'static str, code: nvmlReturn_t) -> Result<(), NvmlError> {
        if code == nvmlReturn_t::NVML_SUCCESS {
            Ok(())
        } else {
            Err(call_error(self.lib.functions.error_string, function, code))
        }
    }

    /// How many devices NVML sees (`nvmlDeviceGetCount_v2`).
    pub fn device_count(&self) -> Result<u32, NvmlError> {
        let f = need(self.lib.functions.device_count, "nvmlDeviceGetCount_v2")?;
        let mut n: c_uint = 0;
        // SAFETY: a valid out-pointer; NVML is initialised while `self` lives.
        self.check("nvmlDeviceGetCount_v2", unsafe { f(&mut n) })?;
        Ok(n)
    }

    /// The device of this NVML index (`nvmlDeviceGetHandleByIndex_v2`). NVML's order
    /// is by PCI bus id, which is not necessarily CUDA's ordinal order: match devices
    /// by bus id ([`Nvml::device_by_pci_bus_id`]).
    pub fn device_by_index(&self, index: u32) -> Result<NvmlDevice<'_>, NvmlError> {
        let f = need(self.lib.functions.by_index, "nvmlDeviceGetHandleByIndex_v2")?;
        let mut raw = nvmlDevice_t::default();
        // SAFETY: a valid out-pointer.
        self.check("nvmlDeviceGetHandleByIndex_v2", unsafe {
            f(index, &mut raw)
        })?;
        Ok(NvmlDevice { nvml: self, raw })
    }

    /// The device at this PCI bus id (`nvmlDeviceGetHandleByPciBusId_v2`), in the
    /// `domain:bus:device.function` form that [`crate::Device::pci_bus_id`] returns.
    pub fn device_by_pci_bus_id(&self, bus_id: &str) -> Result<NvmlDevice<'_>, NvmlError> {
        let f = need(
            self.lib.functions.by_pci_bus_id,
            "nvmlDeviceGetHandleByPciBusId_v2",
        )?;
        let c = CString::new(bus_id).map_err(|_| NvmlError::InvalidArgument {
            parameter: "bus_id",
            reason: "contains a NUL byte",
        })?;
        let mut raw = nvmlDevice_t::default();
        // SAFETY: a NUL-terminated string that outlives the call; a valid out-pointer.
        self.check("nvmlDeviceGetHandleByPciBusId_v2", unsafe {
            f(c.as_ptr(), &mut raw)
        })?;
        Ok(NvmlDevice { nvml: self, raw })
    }
}

impl Drop for Nvml {
    fn drop(&mut self) {
        // SAFETY: paired with the successful `nvmlInit_v2` of load; no `NvmlDevice`
        // outlives `self` (they borrow it).
        let code = unsafe { (self.lib.shutdown)() };
        if code != nvmlReturn_t::NVML_SUCCESS {
            tracing::warn!(code = ?code, "nvmlShutdown failed");
        }
    }
}

fn call_error(
    error_string: Option<pfn::nvmlErrorString>,
    function: &'static str,
    code: nvmlReturn_t,
) -> NvmlError {
    let description = error_string.and_then(|f| {
        // SAFETY: `nvmlErrorString` returns a pointer to a static NUL-terminated
        // string (or null), for any code.
        let p = unsafe { f(code) };
        // SAFETY: non-null: a static NUL-terminated string, per the NVML contract.
        (!p.is_null()).then(|| unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned())
    });
    NvmlError::Call {
        function,
        code,
        description,
    }
}

fn c_text(buf: &[c_char]) -> String {
    let bytes: Vec<u8> = buf.iter().map(|&c| c as u8).collect();
    let text = CStr::from_bytes_until_nul(&bytes)
        .map(CStr::to_bytes)
        .unwrap_or(&bytes);
    String::from_utf8_lossy(text).into_owned()
}

/// A device as NVML sees it, valid while its [`Nvml`] lives.
#[derive(Clone, Copy)]
pub struct NvmlDevice<'n> {
    nvml: &'n Nvml,
    raw: nvmlDevice_t,
}

impl core::fmt::Debug for NvmlDevice<'_> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "NvmlDevice({:p})", self.raw.0)
    }
}

// SAFETY: the handle is an opaque value NVML hands out, valid until `nvmlShutdown`
// (which the borrow of `Nvml` defers); NVML is thread-safe.
unsafe impl Send for NvmlDevice<'_> {}
// SAFETY: as above.
unsafe impl Sync for NvmlDevice<'_> {}

/// The PCI identity of a device or of the far end of an NVLink.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PciInfo {
    /// `domain:bus:device.function` as NVML writes it (8-digit domain).
    pub bus_id: String,
    /// The PCI domain.
    pub domain: u32,
    /// The bus.
    pub bus: u32,
    /// The device on the bus.
    pub device: u32,
    /// Device id (high 16 bits) and vendor id (low 16 bits).
    pub pci_device_id: u32,
}

impl PciInfo {
    fn from_raw(raw: &nvmlPciInfo_t) -> Self {
        Self {
            bus_id: c_text(&raw.busId),
            domain: raw.domain,
            bus: raw.bus,
            device: raw.device,
            pci_device_id: raw.pciDeviceId,
        }
    }
}

/// What is at the far end of an NVLink.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NvLinkDeviceType {
    /// Another GPU.
    Gpu,
    /// An IBM NPU (POWER systems).
    IbmNpu,
    /// An NVSwitch.
    Switch,
    /// NVML says it does not know.
    Unknown,
    /// A value this crate does not know.
    Other(u32),
}

impl NvLinkDeviceType {
    fn from_raw(raw: nvmlIntNvLinkDeviceType_t) -> Self {
        match raw {
            nvmlIntNvLinkDeviceType_t::NVML_NVLINK_DEVICE_TYPE_GPU => Self::Gpu,
            nvmlIntNvLinkDeviceType_t::NVML_NVLINK_DEVICE_TYPE_IBMNPU => Self::IbmNpu,
            nvmlIntNvLinkDeviceType_t::NVML_NVLINK_DEVICE_TYPE_SWITCH => Self::Switch,
            nvmlIntNvLinkDeviceType_t::NVML_NVLINK_DEVICE_TYPE_UNKNOWN => Self::Unknown,
            other => Self::Other(other.0),
        }
    }
}

/// An NVLink version, decoded from `nvmlDeviceGetNvLinkVersion` by the encoding of
/// [`nvmlNvlinkVersion_t`] (`1` is 1.0, `4` is 3.0, `7` is 5.0).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NvLinkVersion {
    /// The value NVML returned.
    pub raw: u32,
}

impl NvLinkVersion {
    /// `(major, minor)`, when the value is one the encoding names.
    pub fn major_minor(self) -> Option<(u32, u32)> {
        match nvmlNvlinkVersion_t(self.raw) {
            nvmlNvlinkVersion_t::NVML_NVLINK_VERSION_1_0 => Some((1, 0)),
            nvmlNvlinkVersion_t::NVML_NVLINK_VERSION_2_0 => Some((2, 0)),
            nvmlNvlinkVersion_t::NVML_NVLINK_VERSION_2_2 => Some((2, 2)),
            nvmlNvlinkVersion_t::NVML_NVLINK_VERSION_3_0 => Some((3, 0)),
            nvmlNvlinkVersion_t::NVML_NVLINK_VERSION_3_1 => Some((3, 1)),
            nvmlNvlinkVersion_t::NVML_NVLINK_VERSION_4_0 => Some((4, 0)),
            nvmlNvlinkVersion_t::NVML_NVLINK_VERSION_5_0 => Some((5, 0)),
            _ => None,
        }
    }
}

impl core::fmt::Display for NvLinkVersion {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self.major_minor() {
            Some((a, b)) => write!(f, "{a}.{b}"),
            None => write!(f, "raw {}", self.raw),
        }
    }
}

/// What an NVLink can carry (`nvmlDeviceGetNvLinkCapability`). `None`: NVML did not
/// say (`NVML_ERROR_NOT_SUPPORTED` for that capability).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct NvLinkCapabilities {
    /// Peer-to-peer over the link.
    pub p2p: Option<bool>,
    /// Access to system memory.
    pub sysmem_access: Option<bool>,
    /// Peer-to-peer atomics.
    pub p2p_atomics: Option<bool>,
    /// System-memory atomics.
    pub sysmem_atomics: Option<bool>,
    /// SLI over the link.
    pub sli_bridge: Option<bool>,
    /// The link is supported on this device.
    pub valid: Option<bool>,
}

/// The far end of an active NVLink.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NvLinkRemote {
    /// Its PCI identity (`nvmlDeviceGetNvLinkRemotePciInfo_v2`).
    pub pci: PciInfo,
    /// What it is (`nvmlDeviceGetNvLinkRemoteDeviceType`); `None` when this NVML does
    /// not export that function or does not say.
    pub device_type: Option<NvLinkDeviceType>,
}

/// One NVLink of a device, as NVML reports it. No bandwidth: NVML's utilisation
/// counters are not read, and a nominal figure per version would be a guess.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NvLink {
    /// The link index (0 to `NVML_NVLINK_MAX_LINKS - 1`).
    pub link: u32,
    /// Whether the link is up (`nvmlDeviceGetNvLinkState`).
    pub active: bool,
    /// Its version; `None` for an inactive link or when NVML does not say.
    pub version: Option<NvLinkVersion>,
    /// The far end; `None` for an inactive link or when NVML does not say.
    pub remote: Option<NvLinkRemote>,
    /// What it can carry.
    pub capabilities: NvLinkCapabilities,
}

/// Whether an error says "this link does not exist / is not there to ask about":
/// NVML answers `INVALID_ARGUMENT` for a link index past the device's links, and
/// `NOT_SUPPORTED` on a device without NVLink.
fn absent(e: &NvmlError) -> bool {
    matches!(
        e.code(),
        Some(nvmlReturn_t::NVML_ERROR_NOT_SUPPORTED | nvmlReturn_t::NVML_ERROR_INVALID_ARGUMENT)
    )
}

fn optional<T>(r: Result<T, NvmlError>) -> Result<Option<T>, NvmlError> {
    match r {
        Ok(v) => Ok(Some(v)),
        Err(e) if absent(&e) => Ok(None),
        Err(e) => Err(e),
    }
}

impl<'n> NvmlDevice<'n> {
    /// The NVML this device belongs to.
    pub fn nvml(&self) -> &'n Nvml {
        self.nvml
    }

    /// The raw handle.
    pub fn raw(&self) -> nvmlDevice_t {
        self.raw
    }

    /// The PCI identity (`nvmlDeviceGetPciInfo_v3`).
    pub fn pci_info(&self) -> Result<PciInfo, NvmlError> {
        let f = need(self.nvml.lib.functions.pci_info, "nvmlDeviceGetPciInfo_v3")?;
        let mut raw = nvmlPciInfo_t::default();
        // SAFETY: a valid handle of a live NVML; a valid out-pointer of the v3 layout.
        self.nvml
            .check("nvmlDeviceGetPciInfo_v3", unsafe { f(self.raw, &mut raw) })?;
        Ok(PciInfo::from_raw(&raw))
    }

    /// The PCI bus id, `domain:bus:device.function` (8-digit domain).
    pub fn pci_bus_id(&self) -> Result<String, NvmlError> {
        Ok(self.pci_info()?.bus_id)
    }

    /// The name (`nvmlDeviceGetName`).
    pub fn name(&self) -> Result<String, NvmlError> {
        let f = need(self.nvml.lib.functions.name, "nvmlDeviceGetName")?;
        let mut buf = [0 as c_char; NVML_DEVICE_NAME_V2_BUFFER_SIZE];
        // SAFETY: the buffer's length is passed; NVML writes within it.
        self.nvml.check("nvmlDeviceGetName", unsafe {
            f(self.raw, buf.as_mut_ptr(), buf.len() as c_uint)
        })?;
        Ok(c_text(&buf))
    }

    fn link_state(&self, link: u32) -> Result<bool, NvmlError> {
        let f = need(
            self.nvml.lib.functions.link_state,
            "nvmlDeviceGetNvLinkState",
        )?;
        let mut state = nvmlEnableState_t::default();
        // SAFETY: a valid handle; a valid out-pointer.
        self.nvml.check("nvmlDeviceGetNvLinkState", unsafe {
            f(self.raw, link, &mut state)
        })?;
        Ok(state == nvmlEnableState_t::NVML_FEATURE_ENABLED)
    }

    fn link_version(&self, link: u32) -> Result<NvLinkVersion, NvmlError> {
        let f = need(
            self.nvml.lib.functions.link_version,
            "nvmlDeviceGetNvLinkVersion",
        )?;
        let mut v: c_uint = 0;
        // SAFETY: a valid handle; a valid out-pointer.
        self.nvml.check("nvmlDeviceGetNvLinkVersion", unsafe {
            f(self.raw, link, &mut v)
        })?;
        Ok(NvLinkVersion { raw: v })
    }

    fn capability(&self, link: u32, cap: nvmlNvLinkCapability_t) -> Result<bool, NvmlError> {
        let f = need(
            self.nvml.lib.functions.link_capability,
            "nvmlDeviceGetNvLinkCapability",
        )?;
        let mut v: c_uint = 0;
        // SAFETY: a valid handle; a valid out-pointer.
        self.nvml.check("nvmlDeviceGetNvLinkCapability", unsafe {
            f(self.raw, link, cap, &mut v)
        })?;
        Ok(v != 0)
    }

    fn remote(&self, link: u32) -> Result<NvLinkRemote, NvmlError> {
        let f = need(
            self.nvml.lib.functions.link_remote_pci,
            "nvmlDeviceGetNvLinkRemotePciInfo_v2",
        )?;
        let mut raw = nvmlPciInfo_t::default();
        // SAFETY: a valid handle; a valid out-pointer of the v2 (current) layout.
        self.nvml
            .check("nvmlDeviceGetNvLinkRemotePciInfo_v2", unsafe {
                f(self.raw, link, &mut raw)
            })?;
        let device_type = match self.nvml.lib.functions.link_remote_type {
            None => None,
            Some(g) => {
                let mut t = nvmlIntNvLinkDeviceType_t::NVML_NVLINK_DEVICE_TYPE_UNKNOWN;
                // SAFETY: a valid handle; a valid out-pointer.
                let code = unsafe { g(self.raw, link, &mut t) };
                optional(
                    self.nvml
                        .check("nvmlDeviceGetNvLinkRemoteDeviceType", code)
                        .map(|()| NvLinkDeviceType::from_raw(t)),
                )?
            }
        };
        Ok(NvLinkRemote {
            pci: PciInfo::from_raw(&raw),
            device_type,
        })
    }

    /// Every NVLink this device has (links `0..NVML_NVLINK_MAX_LINKS` for which NVML
    /// answers the state query; a device without NVLink has none). Version and far
    /// end are asked of active links only.
    pub fn nvlinks(&self) -> Result<Vec<NvLink>, NvmlError> {
        use nvmlNvLinkCapability_t as C;
        let mut links = Vec::new();
        for link in 0..NVML_NVLINK_MAX_LINKS {
            let Some(active) = optional(self.link_state(link))? else {
                continue;
            };
            let cap = |c| optional(self.capability(link, c));
            let capabilities = NvLinkCapabilities {
                p2p: cap(C::NVML_NVLINK_CAP_P2P_SUPPORTED)?,
                sysmem_access: cap(C::NVML_NVLINK_CAP_SYSMEM_ACCESS)?,
                p2p_atomics: cap(C::NVML_NVLINK_CAP_P2P_ATOMICS)?,
                sysmem_atomics: cap(C::NVML_NVLINK_CAP_SYSMEM_ATOMICS)?,
                sli_bridge: cap(C::NVML_NVLINK_CAP_SLI_BRIDGE)?,
                valid: cap(C::NVML_NVLINK_CAP_VALID)?,
            };
            let (version, remote) = if active {
                (
                    optional(self.link_version(link))?,
                    optional(self.remote(link))?,
                )
            } else {
                (None, None)
            };
            links.push(NvLink {
                link,
                active,
                version,
                remote,
                capabilities,
            });
        }
        Ok(links)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_call_error_names_the_function_and_the_code() {
        let e = NvmlError::Call {
            function: "nvmlInit_v2",
            code: nvmlReturn_t::NVML_ERROR_DRIVER_NOT_LOADED,
            description: Some("Driver Not Loaded".into()),
        };
        assert_eq!(
            e.to_string(),
            "nvmlInit_v2 failed: NVML_ERROR_DRIVER_NOT_LOADED (9): Driver Not Loaded"
        );
        let unknown = NvmlError::Call {
            function: "nvmlDeviceGetName",
            code: nvmlReturn_t(4242),
            description: None,
        };
        assert_eq!(
            unknown.to_string(),
            "nvmlDeviceGetName failed: NVML error 4242"
        );
    }

    #[test]
    fn versions_decode_by_the_header_encoding() {
        assert_eq!(NvLinkVersion { raw: 4 }.major_minor(), Some((3, 0)));
        assert_eq!(NvLinkVersion { raw: 7 }.to_string(), "5.0");
        assert_eq!(NvLinkVersion { raw: 0 }.major_minor(), None);
        assert_eq!(NvLinkVersion { raw: 99 }.to_string(), "raw 99");
    }

    #[test]
    fn text_stays_within_its_buffer() {
        let full = [b'1' as c_char; 4];
        assert_eq!(c_text(&full), "1111");
    }
}

//! The loader: finds the driver library, resolves the function table, and keeps the
//! cause of every failure.
//!
//! Rules (design.md §4, measured on the 535 driver):
//! - Library search: the explicit path ([`DriverOptions::path`] or
//!   `OXICUDA_DRIVER_PATH`) alone when one is given — an explicit choice is honoured
//!   or reported, never replaced; otherwise `libcuda.so.1`, then `libcuda.so`
//!   (Windows: `nvcuda.dll`; macOS: [`LoadError::UnsupportedPlatform`]).
//! - Resolution through `cuGetProcAddress_v2`, else `cuGetProcAddress`, else `dlsym`
//!   of the exported (suffixed) name. A null pointer is an absent function.
//! - Version gating: a line whose ABI is newer than the driver is never asked for —
//!   the 535 driver, asked for a newer version, silently hands back its own older ABI.
//! - Only the library, its resolver and `cuDriverGetVersion` are required. Any other
//!   function may be missing; calling it is [`CudaError::NotSupported`].
//! - Resolution is lazy: each function is asked for on its first use
//!   ([`crate::table`]). A lookup that fails (rather than answering "absent") is the
//!   driver's error, [`CudaError::Driver`], and is asked again on the next use. A
//!   binding resolves `cuCtxPopCurrent` before its push, so that it can always end;
//!   a destroy or free function whose first lookup, in a `Drop`, fails leaks its
//!   object with a warning, as an absent function does.
//! - The per-thread default stream ([`DriverOptions::per_thread_default_stream`]) asks
//!   the driver for its `_ptsz`/`_ptds` variants.
//!
//! [`Driver::from_proc_address`] takes a `cuGetProcAddress_v2`-compatible function
//! instead of a library, for drivers that live in the process (the software driver).

use crate::error::{CudaError, LoadAttempt, LoadError, check};
use crate::sys::{CUdriverProcAddress_flags, CUdriverProcAddressQueryResult, CUresult, cuuint64_t};
use crate::table::{DLSYM_SYMBOLS, DriverTable, ENTRIES, Entry, PER_THREAD_VERSIONS, Slot, pfn};
use crate::version::DriverVersion;
use core::ffi::{CStr, c_char, c_int, c_void};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// The environment variable naming the driver library to load.
pub const ENV_DRIVER_PATH: &str = "OXICUDA_DRIVER_PATH";
/// The environment variable choosing the driver: `system` (the default).
/// `soft` selects the software driver in builds that have it.
pub const ENV_DRIVER: &str = "OXICUDA_DRIVER";

/// How to load the driver.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DriverOptions {
    path: Option<PathBuf>,
    per_thread_default_stream: bool,
    software: bool,
    auto: bool,
}

impl DriverOptions {
    /// The system driver, searched for by name, with the legacy default stream.
    pub fn new() -> Self {
        Self::default()
    }

    /// What the environment asks for: `OXICUDA_DRIVER_PATH` (an explicit library) and
    /// `OXICUDA_DRIVER` (`system`, the default; with the `soft` feature `soft`, or
    /// `auto`: `DriverOptions::auto()`; any other value is an error here).
    pub fn from_env() -> Result<Self, LoadError> {
        let mut options = Self::new();
        if let Some(choice) = std::env::var_os(ENV_DRIVER) {
            let value = choice.to_string_lossy().into_owned();
            match value.as_str() {
                "" | "system" => {}
                "soft" if cfg!(feature = "soft") => options.software = true,
                "auto" if cfg!(feature = "soft") => options.auto = true,
                "soft" | "auto" => {
                    return Err(LoadError::Environment {
                        variable: ENV_DRIVER,
                        value,
                        reason: "the software driver is not part of this build (enable the `soft` feature)",
                    });
                }
                _ => {
                    return Err(LoadError::Environment {
                        variable: ENV_DRIVER,
                        value,
                        reason: "expected `system`, `soft` or `auto`",
                    });
                }
            }
        }
        if let Some(path) = std::env::var_os(ENV_DRIVER_PATH).filter(|p| !p.is_empty()) {
            if options.software || options.auto {
                return Err(LoadError::Environment {
                    variable: ENV_DRIVER,
                    value: if options.auto { "auto" } else { "soft" }.into(),
                    reason: "conflicts with OXICUDA_DRIVER_PATH: choose one driver",
                });
            }
            options.path = Some(PathBuf::from(path));
        }
        Ok(options)
    }

    /// softcuda, the software driver, in-process (the `soft` feature).
    #[cfg(feature = "soft")]
    pub fn software() -> Self {
        Self {
            software: true,
            ..Self::default()
        }
    }

    /// The GPU if there is one, else softcuda (the `soft` feature): loading searches
    /// for the system driver as [`new`](DriverOptions::new) does and calls `cuInit`;
    /// when no driver library is found or the driver finds no device, softcuda is
    /// loaded in-process instead ([`Driver::is_software`] tells which). Any other
    /// failure of the system driver is kept and returned by [`Driver::init`], never
    /// hidden behind a fall-back. `OXICUDA_DRIVER=auto` asks for it from the
    /// environment.
    #[cfg(feature = "soft")]
    pub fn auto() -> Self {
        Self {
            auto: true,
            ..Self::default()
        }
    }

    /// Load exactly this library; no other is tried.
    ///
    /// # Safety
    /// Loading a library runs its initialisers, and the crate then calls the functions
    /// it exports with the CUDA driver's C signatures and trusts what they do (a
    /// symbol exported as data, or a function that writes past an out-pointer, is
    /// undefined behaviour): `path` must name a CUDA driver — NVIDIA's `libcuda`, or
    /// a faithful implementation of the driver ABI such as `libsoftcuda.so`. The
    /// environment variable `OXICUDA_DRIVER_PATH` makes the same choice and is trusted
    /// configuration, like `LD_LIBRARY_PATH`.
    pub unsafe fn path(mut self, path: impl Into<PathBuf>) -> Self {
        self.path = Some(path.into());
        self
    }

    /// Resolve the per-thread-default-stream variants (`_ptsz`/`_ptds`) of the
    /// functions that take a stream: the null stream then means this thread's
    /// default stream rather than the legacy one.
    pub fn per_thread_default_stream(mut self, yes: bool) -> Self {
        self.per_thread_default_stream = yes;
        self
    }
}

/// How the table was resolved.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Resolver {
    /// `cuGetProcAddress_v2` (CUDA 12.0+).
    ProcAddressV2,
    /// `cuGetProcAddress` (CUDA 11.3+).
    ProcAddress,
    /// `dlsym` of the exported names (older drivers).
    Dlsym,
    /// A `cuGetProcAddress_v2`-compatible function given by the caller.
    InProcess,
}

/// A loaded CUDA driver: its function table and version.
///
/// Obtain the process-wide one with [`crate::init`] or [`crate::driver`], or load
/// one of your own with [`Driver::load`].
pub struct Driver {
    table: DriverTable,
    version: DriverVersion,
    resolver: Resolver,
    options: DriverOptions,
    path: Option<String>,
    init: OnceLock<CUresult>,
    /// Whether this is softcuda, in-process.
    software: bool,
    // Declared last so that it is dropped last: the table points into it.
    _library: Option<libloading::Library>,
}

impl std::fmt::Debug for Driver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Driver")
            .field("version", &self.version)
            .field("resolver", &self.resolver)
            .field("path", &self.path)
            .field("table", &self.table)
            .finish()
    }
}

impl Driver {
    /// Opens the driver library that `options` names, resolves the table and asks the
    /// driver's version. Does not call `cuInit` (see [`Driver::init`]), except with
    /// `DriverOptions::auto()`, which must ask the system driver whether it has a device.
    pub fn load(options: &DriverOptions) -> Result<Self, LoadError> {
        // Loading asks the driver its version and its entry points: driver calls,
        // which CUDA forbids inside a host callback (the table refuses every other).
        if crate::activity::in_host_callback() {
            return Err(LoadError::InHostCallback);
        }
        #[cfg(feature = "soft")]
        if options.auto {
            return Self::load_auto(options);
        }
        #[cfg(feature = "soft")]
        if options.software {
            // SAFETY: softcuda declares cuGetProcAddress_v2 with its own C types, which
            // have the ABI of the crate's (`#[repr(transparent)]` integers, pointers),
            // and follows the driver's contract; it lives as long as the process.
            let get = unsafe {
                core::mem::transmute::<*const (), pfn::cuGetProcAddress>(
                    softcuda::cuGetProcAddress_v2 as *const (),
                )
            };
            // SAFETY: as above.
            let mut d = unsafe { Self::from_proc_address(get, options) }?;
            d.software = true;
            return Ok(d);
        }
        let candidates: Vec<PathBuf> = match &options.path {
            Some(path) => vec![path.clone()],
            None => default_candidates()?,
        };
        let mut tried = Vec::new();
        for candidate in candidates {
            // SAFETY: opening a shared library runs its initialisers. The candidates
            // are the CUDA driver's own names, or a library chosen through the
            // `unsafe` `DriverOptions::path` (whose caller vouches for it) or the
            // trusted environment variable.
            match unsafe { libloading::Library::new(&candidate) } {
                Ok(library) => return Self::from_library(library, &candidate, options),
                Err(e) => tried.push(LoadAttempt {
                    path: candidate.display().to_string(),
                    error: e.to_string(),
                }),
            }
        }
        Err(LoadError::LibraryNotFound { tried })
    }

    fn from_library(
        library: libloading::Library,
        path: &Path,
        options: &DriverOptions,
    ) -> Result<Self, LoadError> {
        let path = path.display().to_string();
        // SAFETY (each `get`): the symbols are looked up with the types of the ABI the
        // driver exports them under: `cuGetProcAddress_v2` has the 12.0 signature,
        // `cuGetProcAddress` the 11.3 one, `cuDriverGetVersion` the 2.2 one. Each is
        // read as an `Option` of its function pointer: a symbol whose value is 0 (which
        // `dlsym` reports as found) is `None`, never a null function pointer.
        let v2 = unsafe { symbol::<pfn::cuGetProcAddress>(&library, b"cuGetProcAddress_v2\0") };
        let v1 =
            || unsafe { symbol::<pfn::cuGetProcAddress_v11030>(&library, b"cuGetProcAddress\0") };
        let get_version =
            unsafe { symbol::<pfn::cuDriverGetVersion>(&library, b"cuDriverGetVersion\0") }
                .ok_or_else(|| LoadError::NotACudaDriver {
                    path: path.clone(),
                    symbol: "cuDriverGetVersion",
                })?;
        let version = query_version(get_version)?;
        let flags = proc_flags(options);
        let per_thread = options.per_thread_default_stream;
        let (resolver, table) = if let Some(get) = v2 {
            (Resolver::ProcAddressV2, lazy_v2(get, version, flags))
        } else if let Some(get) = v1() {
            let lookup = move |name: *const c_char, ver: c_int| {
                let mut p = core::ptr::null_mut();
                // SAFETY: `name` is NUL-terminated, `p` a valid out-pointer (the 535
                // driver crashes on NULL ones); 11.3 signature.
                let r = unsafe { get(name, &mut p, ver, flags) };
                found(r, p)
            };
            (
                Resolver::ProcAddress,
                DriverTable::lazy(Box::new(move |entry: &Entry| {
                    lookup_entry(entry, version, per_thread, lookup)
                })),
            )
        } else {
            if per_thread {
                return Err(LoadError::PerThreadNeedsProcAddress { path });
            }
            (Resolver::Dlsym, resolve_dlsym(&library, version))
        };
        // The one function the loader already has (the 2.2 ABI, the line's).
        table.keep(
            Slot::cuDriverGetVersion as usize,
            get_version as *mut c_void,
        );
        tracing::debug!(%path, %version, ?resolver, "loaded the CUDA driver");
        Ok(Self {
            table,
            version,
            resolver,
            options: options.clone(),
            path: Some(path),
            init: OnceLock::new(),
            software: false,
            _library: Some(library),
        })
    }

    /// A driver that lives in this process, reached through its
    /// `cuGetProcAddress_v2`-compatible entry point. No library is opened; the
    /// options' path is ignored.
    ///
    /// # Safety
    /// `get_proc_address` must behave as `cuGetProcAddress_v2` does: for a
    /// NUL-terminated name and a version, return null or a function with that
    /// version's C signature, valid for as long as the returned `Driver` lives. The
    /// table is resolved on first use, so `get_proc_address` itself is called for as
    /// long as the `Driver` lives, from any thread, concurrently (the `Driver` is
    /// `Send + Sync`), and must give the same answer for the same question each time.
    pub unsafe fn from_proc_address(
        get_proc_address: pfn::cuGetProcAddress,
        options: &DriverOptions,
    ) -> Result<Self, LoadError> {
        if crate::activity::in_host_callback() {
            return Err(LoadError::InHostCallback);
        }
        let flags = proc_flags(options);
        let version_fn = lookup_v2(
            get_proc_address,
            c"cuDriverGetVersion".as_ptr(),
            2020,
            flags,
        )
        .unwrap_or(core::ptr::null_mut());
        if version_fn.is_null() {
            return Err(LoadError::NotACudaDriver {
                path: "the in-process driver".into(),
                symbol: "cuDriverGetVersion",
            });
        }
        // SAFETY: the caller promises the pointer has the 2.2 `cuDriverGetVersion` ABI.
        let get_version =
            unsafe { core::mem::transmute::<*mut c_void, pfn::cuDriverGetVersion>(version_fn) };
        let version = query_version(get_version)?;
        let table = lazy_v2(get_proc_address, version, flags);
        table.keep(Slot::cuDriverGetVersion as usize, version_fn);
        Ok(Self {
            table,
            version,
            resolver: Resolver::InProcess,
            options: options.clone(),
            path: None,
            init: OnceLock::new(),
            software: false,
            _library: None,
        })
    }

    /// [`DriverOptions::auto`]: the system driver if it loads and finds a device,
    /// else softcuda; the driver keeps `options` (so that [`driver_with`] compares
    /// equal).
    #[cfg(feature = "soft")]
    fn load_auto(options: &DriverOptions) -> Result<Self, LoadError> {
        let system = DriverOptions {
            auto: false,
            ..options.clone()
        };
        match Self::load(&system) {
            Ok(d) => match d.init() {
                Err(e) if e.is_no_device() => {
                    tracing::info!(error = %e, "no device: softcuda instead");
                    // A driver that ran `cuInit` may have left threads, keys or
                    // handlers pointing into its code: never `dlclose` it. This one
                    // driver (its table and library handle) is kept for the process.
                    core::mem::forget(d);
                }
                // A device, or a failure that is not "no device": the system driver,
                // whose `init` keeps the answer.
                _ => {
                    return Ok(Self {
                        options: options.clone(),
                        ..d
                    });
                }
            },
            // An explicit path is the only library tried, or reported: never replaced.
            Err(e @ LoadError::LibraryNotFound { .. }) if options.path.is_none() => {
                tracing::info!(error = %e, "no driver library: softcuda instead");
            }
            Err(e) => return Err(e),
        }
        let soft = DriverOptions {
            software: true,
            auto: false,
            ..options.clone()
        };
        let d = Self::load(&soft)?;
        Ok(Self {
            options: options.clone(),
            ..d
        })
    }

    /// Whether this is softcuda, the software driver, loaded in-process
    /// (`DriverOptions::software()`, or `DriverOptions::auto()` without a GPU).
    #[inline]
    pub fn is_software(&self) -> bool {
        self.software
    }

    /// Calls `cuInit(0)` (once; later calls return the first answer). On a machine
    /// without a GPU this is `CudaError::Driver(CUresult::CUDA_ERROR_NO_DEVICE)`.
    pub fn init(&self) -> Result<(), CudaError> {
        let cu_init = self.table.cuInit()?;
        // SAFETY: `cuInit` takes flags by value; 0 is the only documented value.
        let code = *self.init.get_or_init(|| unsafe { cu_init(0) });
        check(code)
    }

    /// The driver's version, as reported by `cuDriverGetVersion` at load.
    #[inline]
    pub fn version(&self) -> DriverVersion {
        self.version
    }

    /// Asks the driver for its version again (`cuDriverGetVersion`).
    #[inline]
    pub fn query_version(&self) -> Result<DriverVersion, CudaError> {
        let f = self.table.cuDriverGetVersion()?;
        let mut v: c_int = 0;
        // SAFETY: `v` is a valid out-pointer.
        check(unsafe { f(&mut v) })?;
        Ok(DriverVersion::from_raw(v.max(0) as u32))
    }

    /// The resolved function table. Calling through it is `unsafe`.
    #[inline]
    pub fn table(&self) -> &DriverTable {
        &self.table
    }

    /// How the table was resolved.
    pub fn resolver(&self) -> Resolver {
        self.resolver
    }

    /// The library loaded, or `None` for an in-process driver.
    pub fn path(&self) -> Option<&str> {
        self.path.as_deref()
    }

    /// The options the driver was loaded with.
    pub fn options(&self) -> &DriverOptions {
        &self.options
    }
}

fn default_candidates() -> Result<Vec<PathBuf>, LoadError> {
    if cfg!(target_os = "macos") {
        return Err(LoadError::UnsupportedPlatform("macOS"));
    }
    let names: &[&str] = if cfg!(windows) {
        &["nvcuda.dll"]
    } else {
        &["libcuda.so.1", "libcuda.so"]
    };
    Ok(names.iter().map(PathBuf::from).collect())
}

fn proc_flags(options: &DriverOptions) -> cuuint64_t {
    let flag = if options.per_thread_default_stream {
        CUdriverProcAddress_flags::CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM
    } else {
        CUdriverProcAddress_flags::CU_GET_PROC_ADDRESS_DEFAULT
    };
    flag.0 as cuuint64_t
}

fn query_version(get_version: pfn::cuDriverGetVersion) -> Result<DriverVersion, LoadError> {
    let mut v: c_int = 0;
    // SAFETY: `v` is a valid out-pointer.
    let code = unsafe { get_version(&mut v) };
    if code != CUresult::CUDA_SUCCESS {
        return Err(LoadError::VersionQuery(code));
    }
    Ok(DriverVersion::from_raw(v.max(0) as u32))
}

/// What the driver gives for `entry`, asked through `lookup(name, version to ask
/// for)`: null for a line whose ABI is newer than the driver's version.
fn lookup_entry<E>(
    entry: &Entry,
    version: DriverVersion,
    per_thread: bool,
    lookup: impl FnOnce(*const c_char, c_int) -> Result<*mut c_void, E>,
) -> Result<*mut c_void, E> {
    if entry.version > version.raw() {
        return Ok(core::ptr::null_mut()); // never ask: the driver would hand back an older ABI
    }
    // A `_ptsz`/`_ptds` variant has the line's ABI but may be registered later (7.0).
    let ask = match per_thread {
        true => PER_THREAD_VERSIONS
            .iter()
            .find(|(f, _)| *f == entry.name)
            .map_or(entry.version, |(_, v)| *v),
        false => entry.version,
    };
    let mut buf = [0u8; 128];
    match c_name(&mut buf, entry.base_name()) {
        Some(name) if ask <= version.raw() => lookup(name.as_ptr(), ask as c_int),
        _ => Ok(core::ptr::null_mut()),
    }
}

/// A `cuGetProcAddress` answer: the function; null where the driver has none
/// (success with a null pointer, or one of the answers that are fixed for fixed
/// arguments: `NOT_FOUND`, `NOT_SUPPORTED`, `INVALID_VALUE`); or the code of a call
/// that failed (out of memory, not initialised, ...) — not an answer about the symbol,
/// so no slot keeps it and the next use asks again.
fn found(r: CUresult, p: *mut c_void) -> Result<*mut c_void, CUresult> {
    match r {
        CUresult::CUDA_SUCCESS => Ok(p),
        CUresult::CUDA_ERROR_NOT_FOUND
        | CUresult::CUDA_ERROR_NOT_SUPPORTED
        | CUresult::CUDA_ERROR_INVALID_VALUE => Ok(core::ptr::null_mut()),
        failed => Err(failed),
    }
}

/// The table resolved on first use through a `cuGetProcAddress_v2`-compatible `get`.
/// `get` must be valid for as long as the table lives (the library outlives it).
fn lazy_v2(get: pfn::cuGetProcAddress, version: DriverVersion, flags: cuuint64_t) -> DriverTable {
    let per_thread = flags != 0;
    DriverTable::lazy(Box::new(move |entry: &Entry| {
        lookup_entry(entry, version, per_thread, |name, ver| {
            lookup_v2(get, name, ver, flags)
        })
    }))
}

fn lookup_v2(
    get: pfn::cuGetProcAddress,
    name: *const c_char,
    ver: c_int,
    flags: cuuint64_t,
) -> Result<*mut c_void, CUresult> {
    let mut p = core::ptr::null_mut();
    let mut status = CUdriverProcAddressQueryResult::CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    // SAFETY: `name` is NUL-terminated; `p` and `status` are valid out-pointers (the 535
    // driver crashes on NULL ones).
    let r = unsafe { get(name, &mut p, ver, flags, &mut status) };
    let p = found(r, p)?;
    Ok(match status {
        CUdriverProcAddressQueryResult::CU_GET_PROC_ADDRESS_SUCCESS => p,
        _ => core::ptr::null_mut(),
    })
}

/// Exported symbols of older ABIs that are not their base name, for drivers without
/// `cuGetProcAddress` (cuda.h 12.9 names only the newest). Every other older ABI such
/// a driver has is exported under the base name (checked against the 390, 418 and 450
/// branches' exports by tests/driver_matrix.rs).
const DLSYM_OLDER_ABIS: &[(&str, &str)] = &[("cuCtxCreate_v3020", "cuCtxCreate_v2")];

fn resolve_dlsym(library: &libloading::Library, version: DriverVersion) -> DriverTable {
    DriverTable::eager(|entry| {
        // Without cuGetProcAddress a symbol's ABI cannot be asked for: a function is
        // resolved only at the one ABI of its lines the driver can have — the newest
        // no newer than the driver — under the name that ABI is exported as.
        let base = entry.base_name();
        let newest_known = ENTRIES
            .iter()
            .filter(|e| e.base_name() == base && e.version <= version.raw())
            .map(|e| e.version)
            .max();
        if newest_known != Some(entry.version) {
            return core::ptr::null_mut();
        }
        // cuda.h's suffixed name (`cuMemAlloc_v2`) is the newest line's.
        let newest_line = ENTRIES
            .iter()
            .filter(|e| e.base_name() == base)
            .all(|e| e.version <= entry.version);
        let renamed = match newest_line {
            true => DLSYM_SYMBOLS.iter().find(|(b, _)| *b == base),
            false => DLSYM_OLDER_ABIS
                .iter()
                .find(|(line, _)| *line == entry.name),
        };
        let symbol = renamed.map_or(base, |(_, s)| *s);
        let mut buf = [0u8; 128];
        let Some(symbol) = c_name(&mut buf, symbol) else {
            return core::ptr::null_mut();
        };
        // Only the symbol's address is read; its table line gives it a type.
        symbol_address(library, symbol.to_bytes_with_nul())
    })
}

/// The address `dlsym` gives for `name` (NUL-terminated), or null. Every lookup of the
/// crate goes through this one function, so that libloading's generic `get` is compiled
/// once (it was 16 copies, 3% of the crate's LLVM IR).
pub(crate) fn symbol_address(library: &libloading::Library, name: &[u8]) -> *mut c_void {
    // SAFETY: only the symbol's address is read, as a raw pointer; nothing is called.
    unsafe { library.get::<*mut c_void>(name) }.map_or(core::ptr::null_mut(), |s| *s)
}

/// `name`'s address as the function-pointer type `F`; `None` where the symbol is
/// absent or its value is null (`dlsym` reports a symbol defined as 0 as found).
///
/// # Safety
/// `F` must be a function-pointer type with the C signature `name` is exported with.
pub(crate) unsafe fn symbol<F: Copy>(library: &libloading::Library, name: &[u8]) -> Option<F> {
    const { assert!(size_of::<F>() == size_of::<*mut c_void>()) };
    let p = symbol_address(library, name);
    // SAFETY: `F` is a function pointer (the caller's contract) of a pointer's size
    // (asserted above), and `p` is a non-null address of that function.
    (!p.is_null()).then(|| unsafe { core::mem::transmute_copy::<*mut c_void, F>(&p) })
}

/// `name` followed by a NUL, in `buf`; `None` if it does not fit or holds a NUL.
fn c_name<'b>(buf: &'b mut [u8; 128], name: &str) -> Option<&'b CStr> {
    let bytes = name.as_bytes();
    let end = bytes.len();
    if end >= buf.len() {
        return None;
    }
    buf[..end].copy_from_slice(bytes);
    buf[end] = 0;
    CStr::from_bytes_with_nul(&buf[..=end]).ok()
}

static GLOBAL: OnceLock<Result<Driver, LoadError>> = OnceLock::new();

/// The process-wide driver, loaded once as the environment says
/// ([`DriverOptions::from_env`]), without `cuInit`. A failure is kept and returned
/// to every caller.
pub fn driver() -> Result<&'static Driver, LoadError> {
    refuse_first_load_in_host_callback()?;
    GLOBAL
        .get_or_init(|| DriverOptions::from_env().and_then(|o| Driver::load(&o)))
        .as_ref()
        .map_err(Clone::clone)
}

/// The process-wide driver, loaded with `options` if it is not loaded yet.
/// [`LoadError::AlreadyLoaded`] if it was, with other options.
pub fn driver_with(options: DriverOptions) -> Result<&'static Driver, LoadError> {
    refuse_first_load_in_host_callback()?;
    let d = GLOBAL
        .get_or_init(|| Driver::load(&options))
        .as_ref()
        .map_err(Clone::clone)?;
    if d.options != options {
        return Err(LoadError::AlreadyLoaded);
    }
    Ok(d)
}

/// [`LoadError::InHostCallback`] inside a host callback while the process-wide driver
/// is not loaded yet: the refusal is returned, never kept as the process's answer (a
/// later call outside the callback loads it).
fn refuse_first_load_in_host_callback() -> Result<(), LoadError> {
    if GLOBAL.get().is_none() && crate::activity::in_host_callback() {
        return Err(LoadError::InHostCallback);
    }
    Ok(())
}

/// Loads the process-wide driver ([`driver`]) and initialises it (`cuInit`).
pub fn init() -> Result<&'static Driver, CudaError> {
    let d = driver()?;
    d.init()?;
    Ok(d)
}

// The process-wide driver is shared by every thread.
static_assertions::assert_impl_all!(Driver: Send, Sync);
static_assertions::assert_impl_all!(DriverTable: Send, Sync);
static_assertions::assert_impl_all!(DriverOptions: Send, Sync);
static_assertions::assert_impl_all!(Resolver: Send, Sync, Copy);

//! What the state records per loaded module, function, library, library kernel and
//! link in progress (the entries of the handle tables in `State`).

use crate::ptx::{self, link::Unit};
use core::ffi::c_void;
use std::collections::HashMap;
use std::ffi::CString;
use std::sync::Arc;

/// A loaded module.
pub struct ModuleEntry {
    /// The owning context.
    pub ctx: u64,
    /// The parsed PTX.
    pub ptx: Arc<crate::ptx::Module>,
    /// Device address of each module-scope variable, in `ptx.globals()` order.
    pub global_addrs: Arc<Vec<u64>>,
}

/// A kernel of a loaded module.
#[derive(Clone)]
pub struct FunctionEntry {
    /// The module id.
    pub module: u64,
    /// The owning context.
    pub ctx: u64,
    /// The module's PTX.
    pub ptx: Arc<crate::ptx::Module>,
    /// Index into `ptx.kernels()`.
    pub kernel: usize,
    /// Its module's global addresses.
    pub global_addrs: Arc<Vec<u64>>,
    /// Dynamic shared memory the caller opted in to (`MAX_DYNAMIC_SHARED_SIZE_BYTES`).
    pub max_dynamic_shared: u32,
    /// `CUfunc_cache` preference.
    pub cache_config: u32,
    /// The kernel's name, for `cuFuncGetName`.
    pub name: Arc<std::ffi::CString>,
}

/// `CUlibrary`.
pub type CUlibrary = *mut c_void;

/// A loaded library.
pub struct LibraryEntry {
    /// The PTX text (or linked image), compiled again for each context's device.
    pub(crate) text: Arc<String>,
    /// The JIT options it was loaded with.
    pub(crate) opts: ptx::JitOptions,
    /// Compiled at load: the kernels' parameters and attributes.
    pub(crate) ptx: Arc<ptx::Module>,
    /// Kernel ids, in the order of `ptx.kernels()`.
    pub(crate) kernels: Vec<u64>,
    /// Context id → the module materialised there.
    pub(crate) modules: HashMap<u64, u64>,
    /// (kernel index, device) → the shared memory opted in to (`DEFAULT_SHARED` if absent).
    pub(crate) shared: HashMap<(usize, usize), u32>,
}

/// A kernel of a library.
pub struct KernelEntry {
    pub(crate) library: u64,
    pub(crate) index: usize,
    pub(crate) name: Arc<CString>,
}

/// `CUlinkState`.
pub type CUlinkState = *mut c_void;

/// A log buffer: address, size in bytes, index of its size option.
pub(crate) type LogTarget = (usize, usize, usize);

/// A link in progress.
pub struct LinkEntry {
    /// JIT options of the link (target: the creating context's device).
    pub(crate) opts: ptx::JitOptions,
    pub(crate) info: Option<LogTarget>,
    pub(crate) error: Option<LogTarget>,
    /// The caller's option-value array (`*mut *mut c_void`), written back at each log.
    pub(crate) values: usize,
    pub(crate) units: Vec<Unit>,
    /// The completed image, valid until `cuLinkDestroy`.
    pub(crate) image: Option<Vec<u8>>,
}

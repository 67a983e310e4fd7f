//! Modules — from PTX text, cubin or fatbin, as bytes or from a file — the JIT's log
//! as structured diagnostics, and kernels declared with their typed signature.
//!
//! Binary images are checked before the driver sees them, because
//! `cuModuleLoadData` takes a bare pointer: an ELF (cubin) whose program headers,
//! section headers, segments or sections, or a fatbin whose entries (and the
//! uncompressed ELF files inside them) lie past the end of the bytes is
//! [`CudaError::InvalidImage`]. Compressed fatbin entries are the driver's to
//! decompress; their contents are not checked.
//!
//! Loading gives [`JitLog`]: on failure inside [`CudaError::JitFailed`], whose
//! `Display` shows the diagnostics; on success from [`Module::info_log`]. Declaring a
//! kernel's signature ([`Module::function`]) is the one `unsafe` step of a launch; it
//! is checked at once against `cuFuncGetParamInfo` (drivers 12.4+) or, for modules
//! from PTX text, the `.entry` parameter list: count, size and offset of every
//! parameter, a mismatch naming the parameter.

use crate::context::CurrentContext;
use crate::error::{CudaError, check};
use crate::launch::Signature;
use crate::loader::Driver;
use crate::memory::DeviceCopy;
use crate::stream::Tied;
use crate::sys::{
    CUdeviceptr, CUfunc_cache, CUfunction, CUfunction_attribute, CUjit_option, CUmodule, CUresult,
};
use crate::version::DriverVersion;
use core::ffi::{c_char, c_uint, c_void};
use core::marker::PhantomData;
use std::ffi::CString;
use std::path::Path;

/// How bad a diagnostic is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Severity {
    /// `ptxas info`.
    Info,
    /// `ptxas warning`.
    Warning,
    /// `ptxas error`.
    Error,
    /// `ptxas fatal`.
    Fatal,
}

/// One line of the JIT's log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JitDiagnostic {
    /// How bad.
    pub severity: Severity,
    /// The input it names (`application ptx input`), if any.
    pub file: Option<String>,
    /// The line of the input, if any.
    pub line: Option<u32>,
    /// What it says.
    pub message: String,
}

/// The JIT's log, parsed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct JitLog {
    /// Every diagnostic, in order. Lines that continue the previous one are appended
    /// to its message.
    pub diagnostics: Vec<JitDiagnostic>,
}

impl JitLog {
    /// Parses ptxas-style text: `ptxas <file>, line <n>; <severity> : <message>`,
    /// `ptxas <severity> : <message>`, and indented continuation lines.
    pub fn parse(text: &str) -> JitLog {
        let mut diagnostics: Vec<JitDiagnostic> = Vec::new();
        for raw in text.lines() {
            let line = raw.trim_end();
            if line.trim().is_empty() {
                continue;
            }
            let Some(rest) = line.strip_prefix("ptxas") else {
                match diagnostics.last_mut() {
                    Some(d) => {
                        d.message.push('\n');
                        d.message.push_str(line.trim());
                    }
                    None => diagnostics.push(JitDiagnostic {
                        severity: Severity::Info,
                        file: None,
                        line: None,
                        message: line.trim().to_owned(),
                    }),
                }
                continue;
            };
            let (location, rest) = match rest.split_once(';') {
                Some((loc, r)) if loc.contains(", line ") => (Some(loc.trim()), r),
                _ => (None, rest),
            };
            let (file, line_no) = match location.and_then(|l| l.rsplit_once(", line ")) {
                Some((f, n)) => (Some(f.trim().to_owned()), n.trim().parse().ok()),
                None => (None, None),
            };
            let (sev, message) = rest.split_once(':').unwrap_or(("info", rest));
            let severity = match sev.trim() {
                "error" => Severity::Error,
                "warning" => Severity::Warning,
                "fatal" => Severity::Fatal,
                _ => Severity::Info,
            };
            diagnostics.push(JitDiagnostic {
                severity,
                file,
                line: line_no,
                message: message.trim().to_owned(),
            });
        }
        JitLog { diagnostics }
    }

    /// The errors (and fatal lines).
    pub fn errors(&self) -> impl Iterator<Item = &JitDiagnostic> {
        self.diagnostics
            .iter()
            .filter(|d| d.severity >= Severity::Error)
    }
}

impl core::fmt::Display for JitLog {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        for d in &self.diagnostics {
            let sev = match d.severity {
                Severity::Info => "info",
                Severity::Warning => "warning",
                Severity::Error => "error",
                Severity::Fatal => "fatal",
            };
            match d.line {
                Some(n) => writeln!(f, "  {sev}: line {n}: {}", d.message)?,
                None => writeln!(f, "  {sev}: {}", d.message)?,
            }
        }
        Ok(())
    }
}

/// Typed JIT options.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct JitOptions {
    /// `CU_JIT_MAX_REGISTERS`.
    pub max_registers: Option<u32>,
    /// `CU_JIT_OPTIMIZATION_LEVEL`, 0–4.
    pub optimization_level: Option<u32>,
    /// `CU_JIT_TARGET` as `10 * major + minor` (e.g. 90); the context's device if `None`.
    pub target: Option<u32>,
    /// `CU_JIT_GENERATE_DEBUG_INFO`.
    pub debug_info: bool,
    /// `CU_JIT_GENERATE_LINE_INFO`.
    pub line_info: bool,
    /// `CU_JIT_LOG_VERBOSE`: fill the info log (registers used, ...).
    pub verbose: bool,
}

const LOG_BYTES: usize = 16 * 1024;

/// A loaded module of the current context.
pub struct Module<'a> {
    driver: &'static Driver,
    raw: CUmodule,
    info: JitLog,
    /// The PTX text, kept to check kernel signatures when the driver cannot.
    ptx: Option<String>,
    _tied: Tied<'a>,
}

/// The formats a module image can have.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Image {
    Ptx,
    Cubin,
    Fatbin,
}

fn invalid(reason: &'static str) -> CudaError {
    CudaError::InvalidImage(reason)
}

/// Little-endian reads of a byte image; `None` past its end.
struct Bytes<'i>(&'i [u8]);

impl Bytes<'_> {
    fn get<const N: usize>(&self, at: u64) -> Option<[u8; N]> {
        let at = usize::try_from(at).ok()?;
        self.0.get(at..at.checked_add(N)?)?.try_into().ok()
    }
    fn u16(&self, at: u64) -> Option<u64> {
        self.get(at).map(|b| u16::from_le_bytes(b) as u64)
    }
    fn u32(&self, at: u64) -> Option<u64> {
        self.get(at).map(|b| u32::from_le_bytes(b) as u64)
    }
    fn u64(&self, at: u64) -> Option<u64> {
        self.get(at).map(u64::from_le_bytes)
    }
    /// `count` records of `size` bytes at `offset` lie within the image.
    fn holds(&self, offset: Option<u64>, count: u64, size: Option<u64>) -> bool {
        offset
            .zip(size)
            .and_then(|(o, s)| o.checked_add(count.checked_mul(s)?))
            .is_some_and(|end| end <= self.0.len() as u64)
    }
}

/// The image's format, its binary headers checked against its length.
fn image_kind(image: &[u8]) -> Result<Image, CudaError> {
    if image.starts_with(b"\x7fELF") {
        check_elf(image)?;
        return Ok(Image::Cubin);
    }
    let b = Bytes(image);
    if b.u32(0) == Some(0xBA55_ED50) {
        check_fatbin(&b)?;
        return Ok(Image::Fatbin);
    }
    Ok(Image::Ptx)
}

/// A 64-bit little-endian ELF file whose program headers, section headers, segments
/// and sections all lie within `image`.
fn check_elf(image: &[u8]) -> Result<(), CudaError> {
    let b = Bytes(image);
    if image.len() < 64 || image[4] != 2 || image[5] != 1 {
        return Err(invalid("a cubin must be a 64-bit little-endian ELF file"));
    }
    let (phoff, phnum) = (b.u64(0x20), b.u16(0x38).unwrap_or(0));
    let (shoff, shnum) = (b.u64(0x28), b.u16(0x3C).unwrap_or(0));
    if phnum == 0xFFFF || (shnum == 0 && shoff != Some(0)) || b.u16(0x3E) == Some(0xFFFF) {
        return Err(invalid("extended ELF header numbering is not supported"));
    }
    if phnum > 0 {
        if b.u16(0x36) != Some(56) || !b.holds(phoff, phnum, Some(56)) {
            return Err(invalid(
                "the ELF program headers lie past the end of the image",
            ));
        }
        for i in 0..phnum {
            let at = phoff.unwrap_or(0) + i * 56;
            if !b.holds(b.u64(at + 0x08), 1, b.u64(at + 0x20)) {
                return Err(invalid("an ELF segment lies past the end of the image"));
            }
        }
    }
    if shnum > 0 {
        if b.u16(0x3A) != Some(64) || !b.holds(shoff, shnum, Some(64)) {
            return Err(invalid(
                "the ELF section headers lie past the end of the image",
            ));
        }
        if b.u16(0x3E).is_none_or(|strndx| strndx >= shnum) {
            return Err(invalid("the ELF section-name table index is out of range"));
        }
        for i in 0..shnum {
            let at = shoff.unwrap_or(0) + i * 64;
            const NOBITS: u64 = 8;
            if b.u32(at + 4) != Some(NOBITS) && !b.holds(b.u64(at + 0x18), 1, b.u64(at + 0x20)) {
                return Err(invalid("an ELF section lies past the end of the image"));
            }
        }
    }
    Ok(())
}

/// A fatbin whose entries lie within its length, which lies within the image; its
/// uncompressed ELF entries are checked as cubins.
fn check_fatbin(b: &Bytes<'_>) -> Result<(), CudaError> {
    let (header, body) = (b.u16(6), b.u64(8));
    if !b.holds(header, 1, body) {
        return Err(invalid(
            "the fatbin's header says it is longer than the image",
        ));
    }
    let end = header.unwrap_or(0) + body.unwrap_or(0);
    let mut at = header.unwrap_or(0);
    // Each entry: kind at +0, header size at +4, payload size at +8, flags at +40.
    while at < end {
        let (h, size) = (b.u32(at + 4).unwrap_or(0), b.u64(at + 8));
        let payload_end = at
            .checked_add(h)
            .zip(size)
            .and_then(|(p, s)| p.checked_add(s));
        if h < 64 || payload_end.is_none_or(|e| e > end) {
            return Err(invalid("a fatbin entry lies past the end of the fatbin"));
        }
        const ELF: u64 = 2;
        const COMPRESSED: u64 = 0x2000;
        let compressed = b.u64(at + 40).unwrap_or(0) & COMPRESSED != 0;
        if b.u16(at) == Some(ELF) && !compressed {
            let (start, stop) = ((at + h) as usize, payload_end.unwrap_or(0) as usize);
            check_elf(b.0.get(start..stop).unwrap_or_default())?;
        }
        at = payload_end.unwrap_or(end);
    }
    Ok(())
}

impl<'ctx> CurrentContext<'ctx> {
    /// Loads PTX text, JIT-compiling it for the current device.
    pub fn load_ptx(&self, ptx: &str, options: &JitOptions) -> Result<Module<'_>, CudaError> {
        let text = ptx.trim_end_matches('\0');
        if text.contains('\0') {
            return Err(invalid("PTX text must not contain NUL characters"));
        }
        if image_kind(text.as_bytes()) != Ok(Image::Ptx) {
            return Err(invalid(
                "text that starts like a binary image (ELF or fatbin) is not PTX",
            ));
        }
        self.load(text.as_bytes(), Some(text.to_owned()), options)
    }

    /// Loads a module image: a cubin (ELF), a fatbin, or PTX text (UTF-8), told apart
    /// by their first bytes. Signatures of kernels from binary images are checked
    /// only where the driver has `cuFuncGetParamInfo` (12.4+); see
    /// [`Module::function`].
    pub fn load_module(&self, image: &[u8], options: &JitOptions) -> Result<Module<'_>, CudaError> {
        match image_kind(image)? {
            Image::Ptx => self.load_ptx(
                core::str::from_utf8(image)
                    .map_err(|_| invalid("neither a cubin, a fatbin, nor PTX text (UTF-8)"))?,
                options,
            ),
            _ => self.load(image, None, options),
        }
    }

    /// Loads the module image in the file at `path` (see
    /// [`load_module`](CurrentContext::load_module)).
    pub fn load_module_file(
        &self,
        path: impl AsRef<Path>,
        options: &JitOptions,
    ) -> Result<Module<'_>, CudaError> {
        let path = path.as_ref();
        let image = std::fs::read(path).map_err(|e| CudaError::ReadFile {
            path: path.to_owned(),
            kind: e.kind(),
        })?;
        self.load_module(&image, options)
    }

    /// `cuModuleLoadDataEx` on a copy of `image`, 8-byte aligned and NUL-terminated.
    fn load(
        &self,
        image: &[u8],
        ptx: Option<String>,
        options: &JitOptions,
    ) -> Result<Module<'_>, CudaError> {
        let mut aligned = vec![0u64; image.len() / 8 + 1];
        // SAFETY: `aligned` has at least `image.len() + 1` bytes; the last stays NUL.
        unsafe {
            core::ptr::copy_nonoverlapping(
                image.as_ptr(),
                aligned.as_mut_ptr().cast::<u8>(),
                image.len(),
            )
        };
        let mut info = vec![0 as c_char; LOG_BYTES];
        let mut error = vec![0 as c_char; LOG_BYTES];
        let mut keys: Vec<CUjit_option> = Vec::with_capacity(10);
        let mut values: Vec<*mut c_void> = Vec::with_capacity(10);
        let mut push = |k: CUjit_option, v: usize| {
            keys.push(k);
            values.push(v as *mut c_void);
        };
        push(
            CUjit_option::CU_JIT_INFO_LOG_BUFFER,
            info.as_mut_ptr() as usize,
        );
        push(CUjit_option::CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES, LOG_BYTES);
        push(
            CUjit_option::CU_JIT_ERROR_LOG_BUFFER,
            error.as_mut_ptr() as usize,
        );
        push(CUjit_option::CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES, LOG_BYTES);
        if let Some(r) = options.max_registers {
            push(CUjit_option::CU_JIT_MAX_REGISTERS, r as usize);
        }
        if let Some(o) = options.optimization_level {
            push(CUjit_option::CU_JIT_OPTIMIZATION_LEVEL, o as usize);
        }
        if let Some(t) = options.target {
            push(CUjit_option::CU_JIT_TARGET, t as usize);
        }
        if options.debug_info {
            push(CUjit_option::CU_JIT_GENERATE_DEBUG_INFO, 1);
        }
        if options.line_info {
            push(CUjit_option::CU_JIT_GENERATE_LINE_INFO, 1);
        }
        if options.verbose {
            push(CUjit_option::CU_JIT_LOG_VERBOSE, 1);
        }
        let mut raw = CUmodule::NULL;
        // SAFETY: a NUL-terminated, 8-byte aligned image (PTX text, or a binary image
        // whose headers `image_kind` checked against its length: both callers do); `keys` and `values` have the same length, the log
        // buffers hold LOG_BYTES bytes and outlive the call.
        let r = unsafe {
            self.driver().table().cuModuleLoadDataEx()?(
                &mut raw,
                aligned.as_ptr().cast(),
                keys.len() as c_uint,
                keys.as_mut_ptr(),
                values.as_mut_ptr(),
            )
        };
        let read = |buf: &[c_char]| {
            let bytes: Vec<u8> = buf
                .iter()
                .take_while(|c| **c != 0)
                .map(|c| *c as u8)
                .collect();
            String::from_utf8_lossy(&bytes).into_owned()
        };
        if r != CUresult::CUDA_SUCCESS {
            let log = JitLog::parse(&read(&error));
            // A refusal with diagnostics is the JIT's; one without (no binary for this
            // GPU, a bad handle, ...) is the driver's plain code.
            return Err(if log.diagnostics.is_empty() {
                CudaError::Driver(r)
            } else {
                CudaError::JitFailed { log, source: r }
            });
        }
        Ok(Module {
            driver: self.driver(),
            raw,
            info: JitLog::parse(&read(&info)),
            ptx,
            _tied: PhantomData,
        })
    }
}

impl Module<'_> {
    /// The driver's handle.
    pub fn raw(&self) -> CUmodule {
        self.raw
    }

    /// What the JIT reported on success (with `JitOptions::verbose`: registers used, ...).
    pub fn info_log(&self) -> &JitLog {
        &self.info
    }

    /// The kernel `name`, declared with its parameter types `S` — a tuple of
    /// [`launch`](crate::launch) parameter kinds such as `(In<f32>, Out<f32>, u32)`.
    /// The declaration is checked against the driver's parameter info, or the PTX
    /// `.entry` list: a different count, size or offset is
    /// [`CudaError::SignatureMismatch`] naming the parameter. When neither is at
    /// hand (a binary image on a driver older than 12.4) the lookup is
    /// [`CudaError::NotSupported`] for `cuFuncGetParamInfo`; use
    /// [`function_unchecked`](Module::function_unchecked) there. PTX whose `.entry`
    /// list cannot be read is [`CudaError::InvalidImage`].
    ///
    /// # Safety
    /// The kernel must use its parameters as `S` says: an [`In`](crate::launch::In)
    /// buffer only read, an [`Out`](crate::launch::Out) buffer only within its length,
    /// values as their types. The driver cannot check what a kernel does.
    pub unsafe fn function<S: Signature>(&self, name: &str) -> Result<Function<'_, S>, CudaError> {
        // SAFETY: the caller's promise, forwarded; the layout is checked below.
        let f = unsafe { self.function_unchecked::<S>(name)? };
        let actual = match (self.param_info(f.raw)?, self.ptx.as_deref()) {
            (Some(p), _) => p,
            (None, Some(ptx)) => entry_params(ptx, name).ok_or(invalid(
                "the kernel's `.entry` parameter list in the PTX text could not be read",
            ))?,
            (None, None) => {
                return Err(CudaError::NotSupported {
                    function: "cuFuncGetParamInfo",
                    needs: DriverVersion::new(12, 4),
                });
            }
        };
        let expected = S::layout();
        let mismatch =
            |parameter: usize, expected: String, found: String| CudaError::SignatureMismatch {
                function: name.to_owned(),
                parameter,
                expected,
                found,
            };
        for (i, want) in expected.iter().enumerate() {
            match actual.get(i) {
                None => {
                    return Err(mismatch(
                        i,
                        format!("{} bytes at offset {}", want.1, want.0),
                        "no such parameter".into(),
                    ));
                }
                Some(got) if got != want => {
                    return Err(mismatch(
                        i,
                        format!("{} bytes at offset {}", want.1, want.0),
                        format!("{} bytes at offset {}", got.1, got.0),
                    ));
                }
                Some(_) => {}
            }
        }
        if actual.len() > expected.len() {
            let extra = actual[expected.len()];
            return Err(mismatch(
                expected.len(),
                "no parameter".into(),
                format!("{} bytes at offset {}", extra.1, extra.0),
            ));
        }
        Ok(f)
    }

    /// The kernel `name`, declared with its parameter types `S` and not checked
    /// against the kernel's parameters.
    ///
    /// # Safety
    /// As for [`function`](Module::function), and `S` must match the kernel's
    /// parameter list exactly: count, sizes and offsets.
    pub unsafe fn function_unchecked<S: Signature>(
        &self,
        name: &str,
    ) -> Result<Function<'_, S>, CudaError> {
        let cname = CString::new(name)
            .map_err(|_| CudaError::Driver(CUresult::CUDA_ERROR_INVALID_VALUE))?;
        let mut raw = CUfunction::NULL;
        // SAFETY: a valid out-pointer and NUL-terminated name.
        check(unsafe {
            self.driver.table().cuModuleGetFunction()?(&mut raw, self.raw, cname.as_ptr())
        })?;
        Ok(Function {
            driver: self.driver,
            raw,
            _m: PhantomData,
            _s: PhantomData,
        })
    }

    /// (offset, size) of every parameter from `cuFuncGetParamInfo`, or `None` when the
    /// driver does not have it.
    fn param_info(&self, f: CUfunction) -> Result<Option<Vec<(usize, usize)>>, CudaError> {
        let Ok(info) = self.driver.table().cuFuncGetParamInfo() else {
            return Ok(None);
        };
        let mut out = Vec::new();
        for i in 0.. {
            let (mut offset, mut size) = (0usize, 0usize);
            // SAFETY: valid out-pointers; an index past the last is INVALID_VALUE.
            match unsafe { info(f, i, &mut offset, &mut size) } {
                CUresult::CUDA_SUCCESS => out.push((offset, size)),
                CUresult::CUDA_ERROR_INVALID_VALUE => break,
                e => return Err(CudaError::Driver(e)),
            }
        }
        Ok(Some(out))
    }
}

/// A module-scope `__device__` or `__constant__` variable of type `T`.
pub struct DeviceGlobal<'m, T: DeviceCopy> {
    driver: &'static Driver,
    ptr: CUdeviceptr,
    _m: PhantomData<(&'m (), *const (), T)>,
}

impl<'a> Module<'a> {
    /// The variable `name`, typed `T`: its size must be `size_of::<T>()`
    /// ([`CudaError::GlobalSizeMismatch`] otherwise).
    pub fn global<T: DeviceCopy>(&self, name: &str) -> Result<DeviceGlobal<'_, T>, CudaError> {
        let cname = CString::new(name)
            .map_err(|_| CudaError::Driver(CUresult::CUDA_ERROR_INVALID_VALUE))?;
        let (mut ptr, mut bytes) = (0, 0usize);
        // SAFETY: valid out-pointers and a NUL-terminated name.
        check(unsafe {
            self.driver.table().cuModuleGetGlobal()?(&mut ptr, &mut bytes, self.raw, cname.as_ptr())
        })?;
        if bytes != size_of::<T>() {
            return Err(CudaError::GlobalSizeMismatch {
                name: name.to_owned(),
                expected: size_of::<T>(),
                found: bytes,
            });
        }
        Ok(DeviceGlobal {
            driver: self.driver,
            ptr,
            _m: PhantomData,
        })
    }
}

impl<T: DeviceCopy> DeviceGlobal<'_, T> {
    /// Its device address.
    pub fn device_ptr(&self) -> CUdeviceptr {
        self.ptr
    }

    /// Reads it (synchronously).
    pub fn read(&self) -> Result<T, CudaError> {
        let mut v = core::mem::MaybeUninit::<T>::uninit();
        // SAFETY: the variable holds `size_of::<T>()` bytes (checked at lookup).
        check(unsafe {
            self.driver.table().cuMemcpyDtoH()?(v.as_mut_ptr().cast(), self.ptr, size_of::<T>())
        })?;
        // SAFETY: fully written by the copy; any bytes are a valid `T` (`DeviceCopy`).
        Ok(unsafe { v.assume_init() })
    }

    /// Writes it (synchronously).
    pub fn write(&mut self, value: &T) -> Result<(), CudaError> {
        // SAFETY: the variable holds `size_of::<T>()` bytes (checked at lookup).
        check(unsafe {
            self.driver.table().cuMemcpyHtoD()?(
                self.ptr,
                (value as *const T).cast(),
                size_of::<T>(),
            )
        })
    }
}

impl<S: Signature> Function<'_, S> {
    /// A function attribute (registers, static shared memory, max threads, ...).
    pub fn attribute(&self, attr: CUfunction_attribute) -> Result<i32, CudaError> {
        let mut v = 0;
        // SAFETY: a valid out-pointer.
        check(unsafe { self.driver.table().cuFuncGetAttribute()?(&mut v, attr, self.raw) })?;
        Ok(v)
    }

    /// Lets launches use up to `bytes` of dynamic shared memory (beyond the 48 KiB
    /// default, up to the device's opt-in limit).
    pub fn set_max_dynamic_shared_memory(&mut self, bytes: u32) -> Result<(), CudaError> {
        let v = i32::try_from(bytes)
            .map_err(|_| CudaError::Driver(CUresult::CUDA_ERROR_INVALID_VALUE))?;
        let attr = CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES;
        // SAFETY: plain values.
        check(unsafe { self.driver.table().cuFuncSetAttribute()?(self.raw, attr, v) })
    }

    /// Prefers more shared memory or more L1 cache for this kernel (a hint).
    pub fn set_cache_config(&mut self, config: CUfunc_cache) -> Result<(), CudaError> {
        // SAFETY: plain values.
        check(unsafe { self.driver.table().cuFuncSetCacheConfig()?(self.raw, config) })
    }

    /// The dynamic shared memory each block can have when `blocks_per_sm` blocks of
    /// `block` threads are resident on one multiprocessor.
    pub fn available_dynamic_shared_memory(
        &self,
        blocks_per_sm: u32,
        block: u32,
    ) -> Result<usize, CudaError> {
        let int = |v: u32| {
            i32::try_from(v).map_err(|_| CudaError::Driver(CUresult::CUDA_ERROR_INVALID_VALUE))
        };
        let mut bytes = 0usize;
        // SAFETY: a valid out-pointer.
        check(unsafe {
            self.driver
                .table()
                .cuOccupancyAvailableDynamicSMemPerBlock()?(
                &mut bytes,
                self.raw,
                int(blocks_per_sm)?,
                int(block)?,
            )
        })?;
        Ok(bytes)
    }

    /// Resident blocks per multiprocessor for `block` threads and `dynamic_shared`
    /// bytes of dynamic shared memory.
    pub fn max_active_blocks_per_multiprocessor(
        &self,
        block: u32,
        dynamic_shared: usize,
    ) -> Result<u32, CudaError> {
        let mut n = 0;
        let b = i32::try_from(block)
            .map_err(|_| CudaError::Driver(CUresult::CUDA_ERROR_INVALID_VALUE))?;
        // SAFETY: a valid out-pointer.
        check(unsafe {
            self.driver
                .table()
                .cuOccupancyMaxActiveBlocksPerMultiprocessor()?(
                &mut n, self.raw, b, dynamic_shared
            )
        })?;
        Ok(n.max(0) as u32)
    }

    /// The block size (a multiple of 32) that keeps the most threads resident, when a
    /// block of `b` threads needs `dynamic_shared(b)` bytes of dynamic shared memory;
    /// and the smallest grid that fills `multiprocessors` SMs with it. Ties go to the
    /// larger block. `(0, 0)` if no block size fits.
    pub fn suggested_block_size(
        &self,
        multiprocessors: u32,
        dynamic_shared: impl Fn(u32) -> usize,
    ) -> Result<(u32, u32), CudaError> {
        let max = self
            .attribute(CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK)?
            .max(0) as u32;
        let (mut best, mut best_threads, mut best_blocks) = (0, 0, 0);
        let mut block = max - max % 32;
        while block >= 32 {
            let blocks = self.max_active_blocks_per_multiprocessor(block, dynamic_shared(block))?;
            let threads = blocks.saturating_mul(block);
            if threads > best_threads {
                (best, best_threads, best_blocks) = (block, threads, blocks);
            }
            block -= 32;
        }
        Ok((best, best_blocks.saturating_mul(multiprocessors)))
    }
}

/// (offset, size) of each parameter of `.entry name` in PTX text, laid out as the
/// PTX ABI does (each aligned to its alignment); `None` if the list cannot be read.
///
/// A parameter reads `.param [.align A] .type [.ptr [.space] [.align B]] name[[N]]`:
/// `A` is the parameter's alignment (else its type's); `B`, after `.ptr`, is the
/// pointee's and does not move the parameter.
pub fn entry_params(ptx: &str, name: &str) -> Option<Vec<(usize, usize)>> {
    let start = ptx.find(&format!(".entry {name}("))?;
    let list = ptx.get(start..)?;
    let open = list.find('(')?;
    let close = open + list.get(open..)?.find(')')?;
    let mut out = Vec::new();
    let mut offset = 0usize;
    for p in list
        .get(open + 1..close)?
        .split(',')
        .map(str::trim)
        .filter(|p| !p.is_empty())
    {
        let words: Vec<&str> = p.split_whitespace().collect();
        let ty_at = words
            .iter()
            .position(|w| w.starts_with('.') && !matches!(*w, ".param" | ".align"))?;
        let elem: usize = match words.get(ty_at)?.get(2..)? {
            "8" => 1,
            "16" => 2,
            "32" => 4,
            "64" => 8,
            _ => return None,
        };
        let count = match words.last()?.split_once('[') {
            Some((_, n)) => n.trim_end_matches(']').parse::<usize>().ok()?,
            None => 1,
        };
        let align = match words.get(..ty_at)?.iter().position(|w| *w == ".align") {
            Some(i) => words.get(i + 1)?.parse::<usize>().ok()?,
            None => elem,
        };
        if !align.is_power_of_two() {
            return None;
        }
        let size = elem.checked_mul(count)?;
        offset = offset.checked_next_multiple_of(align)?;
        out.push((offset, size));
        offset = offset.checked_add(size)?;
    }
    Some(out)
}

impl Drop for Module<'_> {
    fn drop(&mut self) {
        if let Ok(unload) = self.driver.table().cuModuleUnload() {
            // SAFETY: this value owns the module; its functions borrow it, so none is alive.
            let r = unsafe { unload(self.raw) };
            if check(r).is_err() {
                tracing::warn!(?r, "cuModuleUnload failed");
            }
        }
    }
}

/// A kernel of a module, with its declared signature `S`. Borrows its module (CF4).
pub struct Function<'m, S: Signature> {
    pub(crate) driver: &'static Driver,
    pub(crate) raw: CUfunction,
    _m: PhantomData<(&'m (), *const ())>,
    _s: PhantomData<fn(S)>,
}

impl<S: Signature> Function<'_, S> {
    /// The driver's handle.
    pub fn raw(&self) -> CUfunction {
        self.raw
    }
}

static_assertions::assert_not_impl_any!(Module<'static>: Send, Sync);
static_assertions::assert_not_impl_any!(Function<'static, (u32,)>: Send, Sync);
static_assertions::assert_not_impl_any!(DeviceGlobal<'static, u32>: Send, Sync);
static_assertions::assert_impl_all!(JitLog: Send, Sync);
static_assertions::assert_impl_all!(JitDiagnostic: Send, Sync);
static_assertions::assert_impl_all!(JitOptions: Send, Sync);
static_assertions::assert_impl_all!(Severity: Send, Sync, Copy);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ptxas_logs_parse_into_diagnostics() {
        let log = JitLog::parse(
            "ptxas application ptx input, line 6; error   : Unknown instruction 'frob'\n\
             ptxas fatal   : Ptx assembly aborted due to errors\n",
        );
        assert_eq!(log.diagnostics.len(), 2);
        let d = &log.diagnostics[0];
        assert_eq!(
            (d.severity, d.line, d.file.as_deref()),
            (Severity::Error, Some(6), Some("application ptx input"))
        );
        assert_eq!(d.message, "Unknown instruction 'frob'");
        assert_eq!(log.diagnostics[1].severity, Severity::Fatal);
        assert_eq!(log.errors().count(), 2);
        let info = JitLog::parse(
            "ptxas info    : Function properties for k\n    0 bytes stack frame\nptxas info    : Used 8 registers\n",
        );
        assert_eq!(info.diagnostics.len(), 2);
        assert!(info.diagnostics[0].message.ends_with("0 bytes stack frame"));
        assert!(
            log.to_string()
                .contains("error: line 6: Unknown instruction 'frob'")
        );
    }

    #[test]
    fn an_align_after_ptr_is_the_pointees_and_bad_lists_are_none() {
        let ptx =
            ".entry k(\n .param .u32 k_param_0,\n .param .u64 .ptr .global .align 4 k_param_1\n)";
        assert_eq!(entry_params(ptx, "k"), Some(vec![(0, 4), (8, 8)]));
        assert_eq!(entry_params(".entry a)(", "a)"), None);
        assert_eq!(
            entry_params(".entry k(.param .align 0 .b8 p[4])", "k"),
            None
        );
        assert_eq!(entry_params(".entry k(.param . p)", "k"), None);
        assert_eq!(
            entry_params(".entry k(.param .b16 p[18446744073709551615])", "k"),
            None
        );
    }

    fn elf() -> Vec<u8> {
        let mut e = vec![0u8; 64];
        e[..6].copy_from_slice(b"\x7fELF\x02\x01");
        e
    }

    #[test]
    fn elf_headers_and_contents_must_lie_within_the_image() {
        assert_eq!(image_kind(&elf()), Ok(Image::Cubin));
        // One program header at 64 whose segment claims 4 KiB at offset 0.
        let mut e = elf();
        e[0x20..0x28].copy_from_slice(&64u64.to_le_bytes());
        e[0x36..0x38].copy_from_slice(&56u16.to_le_bytes());
        e[0x38..0x3A].copy_from_slice(&1u16.to_le_bytes());
        e.resize(64 + 56, 0);
        assert_eq!(image_kind(&e), Ok(Image::Cubin), "an empty segment fits");
        e[64 + 0x20..64 + 0x28].copy_from_slice(&4096u64.to_le_bytes());
        assert!(matches!(image_kind(&e), Err(CudaError::InvalidImage(m)) if m.contains("segment")));
        // A program-header size other than 56 is refused, not trusted.
        let mut e = elf();
        e[0x20..0x28].copy_from_slice(&63u64.to_le_bytes());
        e[0x36..0x38].copy_from_slice(&1u16.to_le_bytes());
        e[0x38..0x3A].copy_from_slice(&1u16.to_le_bytes());
        assert!(image_kind(&e).is_err());
        // Extended numbering and big-endian files are refused.
        let mut e = elf();
        e[0x28..0x30].copy_from_slice(&64u64.to_le_bytes());
        assert!(image_kind(&e).is_err());
        let mut e = elf();
        e[5] = 2;
        assert!(image_kind(&e).is_err());
    }

    #[test]
    fn a_fatbin_entry_must_have_a_full_header_and_its_elf_is_checked() {
        let fatbin = |kind: u16, header: u32, payload: &[u8]| {
            let mut e = vec![0u8; header as usize];
            e[..2].copy_from_slice(&kind.to_le_bytes());
            e[4..8].copy_from_slice(&header.to_le_bytes());
            e[8..16].copy_from_slice(&(payload.len() as u64).to_le_bytes());
            e.extend_from_slice(payload);
            let mut f = vec![0u8; 16];
            f[..4].copy_from_slice(&0xBA55_ED50u32.to_le_bytes());
            f[6..8].copy_from_slice(&16u16.to_le_bytes());
            f[8..16].copy_from_slice(&(e.len() as u64).to_le_bytes());
            f.extend(e);
            f
        };
        assert_eq!(image_kind(&fatbin(2, 64, &elf())), Ok(Image::Fatbin));
        assert!(
            image_kind(&fatbin(2, 16, &elf())).is_err(),
            "a 16-byte entry header"
        );
        let mut bad = elf();
        bad[5] = 2;
        assert!(
            image_kind(&fatbin(2, 64, &bad)).is_err(),
            "the ELF inside is checked"
        );
        assert_eq!(image_kind(&fatbin(1, 64, b"ptx")), Ok(Image::Fatbin));
    }

    #[test]
    fn entry_parameters_follow_the_ptx_layout() {
        let ptx = ".visible .entry k(\n .param .u64 k_param_0,\n .param .u32 k_param_1,\n .param .align 8 .b8 k_param_2[16],\n .param .f64 k_param_3\n)\n{ ret; }";
        assert_eq!(
            entry_params(ptx, "k"),
            Some(vec![(0, 8), (8, 4), (16, 16), (32, 8)])
        );
        assert_eq!(entry_params(ptx, "other"), None);
    }
}

//! The JIT linker (`cuLink*`): several inputs — PTX, cubins, fatbins, host objects
//! embedding device code, device libraries — linked into one image and loaded as a
//! [`Module`] of the current context.
//!
//! A [`Linker`] borrows the [`CurrentContext`] token, as a module does: what it
//! links is for that context's device, and the module it completes into cannot
//! outlive the token (CF25). The driver writes the logs into buffers the linker owns
//! until it is destroyed.
//!
//! What [`Linker::add`] and [`Linker::add_file`] accept is checked before the driver
//! reads it, with the checks of module images ([`CudaError::InvalidImage`] naming
//! the rule): PTX text must not contain NUL; a cubin must be a consistent ELF file; a
//! fatbin must hold its entries, its uncompressed ELF entries checked as cubins.
//! What is left to the driver is what module loading leaves to it (compressed fatbin
//! entries, relocation offsets, symbol values and sizes, `.nv.info` attributes: see
//! [`module`](crate::module) and `docs/architecture.md`, "Assumed of the driver").
//! [`Linker::add_file`] reads the file (a regular file of at most 1 GiB) and adds its
//! bytes, so the bytes checked are the bytes linked.
//!
//! Host objects and device libraries are not accepted there
//! ([`CudaError::InvalidArgument`]): the driver reads what is inside them — the
//! fatbins embedded in an object's sections (`.nv_fatbin`, `__nv_relfatbin`, and
//! `.nvFatBinSegment`, which holds pointers), an archive's members whatever their
//! format, its symbol index and its long-name table — by rules the crate cannot
//! check completely, and a lie there (an embedded fatbin claiming 1 TiB) would make
//! the driver read out of bounds. They are added with the `unsafe`
//! [`Linker::add_unchecked`] / [`Linker::add_file_unchecked`], whose contract is that
//! the bytes are a well-formed object or archive produced by NVIDIA's tools
//! (`libcudadevrt.a`, an `nvcc -rdc` object). The container is still checked there
//! (an object must be a consistent ELF file; an archive's member headers and members
//! must lie within it, ELF members checked as cubins), which catches a truncated
//! file, but that is not a guarantee.
//!
//! A failed input or link is [`CudaError::JitFailed`] with the driver's code and
//! its log parsed ([`JitLog`](crate::jit::JitLog): an unresolved symbol is an error diagnostic naming
//! it), or the driver's plain code when it gave no diagnostics. The completed image
//! lives in the driver only until the link is destroyed: [`Linker::complete`] loads
//! it before that, [`Linker::complete_image`] copies it into an owned `Vec` (to load
//! later with [`CurrentContext::load_module`], or as a library with
//! [`Driver::load_library`](crate::Driver::load_library)).
//!
//! Kernels of a linked module are looked up with [`Module::function`], checked
//! against `cuFuncGetParamInfo` (drivers 12.4+; the linked image is not PTX text).
//!
//! On a real GPU, a module calling the device runtime (`cudaGraphSetConditional` in
//! `kernels/conditional.cu`) is linked with `libcudadevrt.a`:
//!
//! ```no_run
//! # use oxicuda_driver::link::{LinkInputKind, Linker};
//! # fn f(linker: &mut Linker<'_>) -> Result<(), oxicuda_driver::CudaError> {
//! // SAFETY: the CUDA toolkit's own device runtime library, as NVIDIA ships it.
//! unsafe {
//!     linker.add_file_unchecked("/usr/local/cuda/lib64/libcudadevrt.a", LinkInputKind::Library)?
//! };
//! # Ok(()) }
//! ```

use crate::context::CurrentContext;
use crate::context::Tied;
use crate::error::{CudaError, check};
use crate::jit::{JitCall, JitOptions};
use crate::loader::Driver;
use crate::module::file::read_image_file;
use crate::module::image::{Image, image_kind, invalid};
use crate::module::{Module, aligned_copy, c_name, load_image};
use crate::sys::{CUjitInputType, CUlinkState, CUresult};
use core::ffi::c_void;
use core::marker::PhantomData;
use std::path::Path;

/// One input of a link, by its format.
#[derive(Debug, Clone, Copy)]
pub enum LinkInput<'i> {
    /// PTX text, and the name the logs give it.
    Ptx {
        /// The input's name in the logs (`a.ptx`).
        name: &'i str,
        /// The text.
        text: &'i str,
    },
    /// A cubin (ELF).
    Cubin(&'i [u8]),
    /// A fatbin.
    Fatbin(&'i [u8]),
    /// A host object (ELF) embedding device code: only through the `unsafe`
    /// [`Linker::add_unchecked`] (see the [module docs](self)).
    Object(&'i [u8]),
    /// A device library, an `ar` archive of objects (`libcudadevrt.a`): only through
    /// the `unsafe` [`Linker::add_unchecked`] (see the [module docs](self)).
    Library(&'i [u8]),
}

/// The format of a file given to [`Linker::add_file`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LinkInputKind {
    /// PTX text.
    Ptx,
    /// A cubin.
    Cubin,
    /// A fatbin.
    Fatbin,
    /// A host object: only through the `unsafe` [`Linker::add_file_unchecked`].
    Object,
    /// An `ar` archive: only through the `unsafe` [`Linker::add_file_unchecked`].
    Library,
}

/// A link in progress, for the current context's device. Borrows the context token.
pub struct Linker<'a> {
    driver: &'static Driver,
    raw: CUlinkState,
    /// Option arrays and log buffers, which the driver writes until `cuLinkDestroy`.
    jit: JitCall,
    options: JitOptions,
    inputs: usize,
    _tied: Tied<'a>,
}

impl core::fmt::Debug for Linker<'_> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Linker")
            .field("raw", &self.raw)
            .field("inputs", &self.inputs)
            .finish()
    }
}

impl CurrentContext<'_> {
    /// A linker for this context's device, with the JIT `options` (which also apply
    /// when the completed image is loaded).
    pub fn linker(&self, options: &JitOptions) -> Result<Linker<'_>, CudaError> {
        let mut jit = JitCall::new(options)?;
        let mut raw = CUlinkState::NULL;
        // SAFETY: `JitCall` holds keys and values of the same length and log buffers
        // of the sizes it announces; it moves into the linker, which keeps them (heap
        // memory, at fixed addresses) until `cuLinkDestroy`.
        let r = unsafe {
            self.driver().table().cuLinkCreate()?(jit.len(), jit.keys(), jit.values(), &mut raw)
        };
        if r != CUresult::CUDA_SUCCESS {
            return Err(jit.failure(r));
        }
        crate::leaks::created(crate::leaks::Kind::Linkers, raw);
        Ok(Linker {
            driver: self.driver(),
            raw,
            jit,
            options: options.clone(),
            inputs: 0,
            _tied: PhantomData,
        })
    }
}

/// Checks an `ar` archive's container: its magic, and every member header and member
/// within the bytes (ELF members as cubins). Not the symbol index, long names, or
/// non-ELF members, which the driver reads too: a guard against truncated files for
/// `add_unchecked`, not a guarantee.
fn check_archive(bytes: &[u8]) -> Result<(), CudaError> {
    let mut at = b"!<arch>\n".len();
    if !bytes.starts_with(b"!<arch>\n") {
        return Err(invalid(
            "a library input must be an `ar` archive (`!<arch>`)",
        ));
    }
    while at < bytes.len() {
        let header = bytes.get(at..at + 60).ok_or(invalid(
            "an archive member header lies past the end of the library",
        ))?;
        if header.get(58..60) != Some(b"`\n") {
            return Err(invalid("an archive member header is malformed"));
        }
        let size: usize = core::str::from_utf8(header.get(48..58).unwrap_or_default())
            .ok()
            .and_then(|s| s.trim().parse().ok())
            .ok_or(invalid("an archive member's size is not a number"))?;
        let start = at + 60;
        let member = start
            .checked_add(size)
            .and_then(|end| bytes.get(start..end))
            .ok_or(invalid(
                "an archive member lies past the end of the library",
            ))?;
        if member.starts_with(b"\x7fELF") {
            image_kind(member)?;
        }
        at = start + size + size % 2;
    }
    Ok(())
}

/// The refusal of a host object or library by the safe `add` and `add_file`.
fn needs_unchecked(parameter: &'static str) -> CudaError {
    CudaError::InvalidArgument {
        parameter,
        rule: "a host object or library is not checked completely (the driver reads the \
               fatbins and members inside it): add it with the unsafe `add_unchecked` or \
               `add_file_unchecked`",
    }
}

impl<'a> Linker<'a> {
    /// Adds a PTX, cubin or fatbin input, checked first (see the [module docs](self)).
    /// A host object or library is [`CudaError::InvalidArgument`] (`input`): see
    /// [`add_unchecked`](Linker::add_unchecked). A NUL byte in a PTX input's name is
    /// [`CudaError::InvalidArgument`] (`name`).
    pub fn add(&mut self, input: LinkInput<'_>) -> Result<(), CudaError> {
        if let LinkInput::Object(_) | LinkInput::Library(_) = input {
            return Err(needs_unchecked("input"));
        }
        // SAFETY: neither a host object nor a library: the input is checked in full
        // (as a module image) before the driver reads it.
        unsafe { self.add_input(input, None) }
    }

    /// Adds any input, host objects and device libraries included. PTX, cubins and
    /// fatbins are checked as by [`add`](Linker::add); a host object must be a
    /// consistent ELF file, and a library an `ar` archive whose member headers and
    /// members lie within it (ELF members checked as cubins) — which is not all the
    /// driver reads ([`CudaError::InvalidImage`] otherwise).
    ///
    /// # Safety
    /// For a [`LinkInput::Object`] or [`LinkInput::Library`], the bytes are a
    /// well-formed host object or `ar` archive as NVIDIA's tools produce them
    /// (`nvcc -rdc`, `nvlink`, the CUDA toolkit's `libcudadevrt.a`): every fatbin
    /// embedded in the object's (or a member's) sections holds what its header says,
    /// every archive member is an ELF file or a fatbin that is consistent with its
    /// bytes, and the archive's symbol index and long-name table point inside it. The
    /// driver reads all of that from a bare pointer; bytes from an untrusted source
    /// must not be given here. Nothing more is asked for the other inputs.
    pub unsafe fn add_unchecked(&mut self, input: LinkInput<'_>) -> Result<(), CudaError> {
        // SAFETY: the caller's promise, forwarded.
        unsafe { self.add_input(input, None) }
    }

    /// Checks `input` as far as the crate can and gives it to the driver, named `name`
    /// in the logs (a default naming its position and kind if `None`).
    ///
    /// # Safety
    /// As [`add_unchecked`](Linker::add_unchecked).
    unsafe fn add_input(
        &mut self,
        input: LinkInput<'_>,
        name: Option<String>,
    ) -> Result<(), CudaError> {
        self.inputs += 1;
        let n = self.inputs;
        let (kind, bytes, default_name): (CUjitInputType, &[u8], String) = match input {
            LinkInput::Ptx { name, text } => {
                let text = text.trim_end_matches('\0');
                if text.contains('\0') {
                    return Err(invalid("PTX text must not contain NUL characters"));
                }
                if image_kind(text.as_bytes())? != Image::Ptx {
                    return Err(invalid(
                        "text that starts like a binary image (ELF or fatbin) is not PTX",
                    ));
                }
                (
                    CUjitInputType::CU_JIT_INPUT_PTX,
                    text.as_bytes(),
                    name.to_owned(),
                )
            }
            LinkInput::Cubin(b) => {
                if image_kind(b)? != Image::Cubin {
                    return Err(invalid("a cubin input must be an ELF file"));
                }
                (
                    CUjitInputType::CU_JIT_INPUT_CUBIN,
                    b,
                    format!("input {n} (cubin)"),
                )
            }
            LinkInput::Fatbin(b) => {
                if image_kind(b)? != Image::Fatbin {
                    return Err(invalid("a fatbin input must start with the fatbin magic"));
                }
                (
                    CUjitInputType::CU_JIT_INPUT_FATBINARY,
                    b,
                    format!("input {n} (fatbin)"),
                )
            }
            LinkInput::Object(b) => {
                if image_kind(b)? != Image::Cubin {
                    return Err(invalid("an object input must be an ELF file"));
                }
                (
                    CUjitInputType::CU_JIT_INPUT_OBJECT,
                    b,
                    format!("input {n} (object)"),
                )
            }
            LinkInput::Library(b) => {
                check_archive(b)?;
                (
                    CUjitInputType::CU_JIT_INPUT_LIBRARY,
                    b,
                    format!("input {n} (library)"),
                )
            }
        };
        if bytes.is_empty() {
            return Err(invalid("an empty input"));
        }
        let name = c_name(&name.unwrap_or(default_name))?;
        // Followed by a NUL, which PTX text's size counts (as `cuLinkAddData` wants).
        let aligned = aligned_copy(bytes);
        let size = bytes.len() + usize::from(kind == CUjitInputType::CU_JIT_INPUT_PTX);
        self.jit.clear();
        // SAFETY: `aligned` holds the `bytes.len()` bytes of an input checked above for
        // its kind (its headers against its length), 8-byte aligned, then a NUL (so
        // `size` bytes are readable);
        // what the checks do not cover of an object or library, the caller promised; a
        // NUL-terminated name; no per-input options.
        let r = unsafe {
            self.driver.table().cuLinkAddData()?(
                self.raw,
                kind,
                aligned.as_ptr().cast_mut().cast(),
                size,
                name.as_ptr(),
                0,
                core::ptr::null_mut(),
                core::ptr::null_mut(),
            )
        };
        if r != CUresult::CUDA_SUCCESS {
            return Err(self.jit.failure(r));
        }
        Ok(())
    }

    /// Adds the file at `path`, of format `kind` (PTX, cubin or fatbin): read, checked
    /// and added as by [`add`](Linker::add), the logs naming it by its path. A host
    /// object or library is [`CudaError::InvalidArgument`] (`kind`): see
    /// [`add_file_unchecked`](Linker::add_file_unchecked). A path that is not a regular
    /// file, or a file over 1 GiB, is [`CudaError::InvalidArgument`] (`path`); one that
    /// cannot be read, [`CudaError::ReadFile`].
    pub fn add_file(
        &mut self,
        path: impl AsRef<Path>,
        kind: LinkInputKind,
    ) -> Result<(), CudaError> {
        if let LinkInputKind::Object | LinkInputKind::Library = kind {
            return Err(needs_unchecked("kind"));
        }
        // SAFETY: neither a host object nor a library (see `add`).
        unsafe { self.add_file_unchecked(path, kind) }
    }

    /// Adds the file at `path`, of any format `kind`: read as by
    /// [`add_file`](Linker::add_file), checked and added as by
    /// [`add_unchecked`](Linker::add_unchecked).
    ///
    /// # Safety
    /// As [`add_unchecked`](Linker::add_unchecked), for the file's contents: a host
    /// object or library must be a well-formed one produced by NVIDIA's tools.
    pub unsafe fn add_file_unchecked(
        &mut self,
        path: impl AsRef<Path>,
        kind: LinkInputKind,
    ) -> Result<(), CudaError> {
        let path = path.as_ref();
        let bytes = read_image_file(path)?;
        let name = path.display().to_string();
        let input = match kind {
            LinkInputKind::Ptx => LinkInput::Ptx {
                name: &name,
                text: core::str::from_utf8(&bytes)
                    .map_err(|_| invalid("a PTX input must be UTF-8 text"))?,
            },
            LinkInputKind::Cubin => LinkInput::Cubin(&bytes),
            LinkInputKind::Fatbin => LinkInput::Fatbin(&bytes),
            LinkInputKind::Object => LinkInput::Object(&bytes),
            LinkInputKind::Library => LinkInput::Library(&bytes),
        };
        // SAFETY: the caller's promise, forwarded.
        unsafe { self.add_input(input, Some(name.clone())) }
    }

    /// Links the inputs: the image, copied out of the driver (whose copy lives only
    /// until the link is destroyed).
    fn finish(&mut self) -> Result<Vec<u8>, CudaError> {
        let (mut image, mut size) = (core::ptr::null_mut::<c_void>(), 0usize);
        self.jit.clear();
        // SAFETY: valid out-pointers; the option arrays are alive (owned here).
        let r = unsafe { self.driver.table().cuLinkComplete()?(self.raw, &mut image, &mut size) };
        if r != CUresult::CUDA_SUCCESS {
            return Err(self.jit.failure(r));
        }
        if image.is_null() || size == 0 {
            return Err(invalid("the driver completed the link with an empty image"));
        }
        // SAFETY: the driver's image holds `size` bytes until `cuLinkDestroy` (in
        // `Drop`, after this copy).
        Ok(unsafe { core::slice::from_raw_parts(image.cast::<u8>(), size) }.to_vec())
    }

    /// Links the inputs and loads the result as a module of the current context.
    pub fn complete(mut self) -> Result<Module<'a>, CudaError> {
        let image = self.finish()?;
        let (driver, options) = (self.driver, core::mem::take(&mut self.options));
        drop(self);
        load_image(driver, &image, None, &options)
    }

    /// Links the inputs: the image (a cubin on a GPU driver), owned.
    pub fn complete_image(mut self) -> Result<Vec<u8>, CudaError> {
        self.finish()
    }

    /// The driver's handle.
    pub fn raw(&self) -> CUlinkState {
        self.raw
    }
}

impl Drop for Linker<'_> {
    fn drop(&mut self) {
        if let Ok(destroy) = self.driver.table().cuLinkDestroy() {
            // SAFETY: this value owns the link; nothing else refers to its image (it
            // was copied out).
            if let Err(e) = check(unsafe { destroy(self.raw) }) {
                tracing::warn!(%e, "cuLinkDestroy failed");
            } else {
                crate::leaks::destroyed(crate::leaks::Kind::Linkers, self.raw);
            }
        }
    }
}

static_assertions::assert_not_impl_any!(Linker<'static>: Send, Sync);

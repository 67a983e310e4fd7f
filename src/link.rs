//! The JIT linker (`cuLink*`): several inputs — PTX, cubins, fatbins, host objects
//! embedding device code, device libraries — linked into one image and loaded as a
//! [`Module`] of the current context.
//!
//! A [`Linker`] borrows the [`CurrentContext`] token, as a module does: what it
//! links is for that context's device, and the module it completes into cannot
//! outlive the token (CF25). The driver writes the logs into buffers the linker owns
//! until it is destroyed. Each binary input is checked before the driver reads it,
//! with the checks of module images ([`CudaError::InvalidImage`] naming the rule):
//! a cubin must be a consistent ELF file, a fatbin must hold its entries, a host
//! object is an ELF file checked the same way, and a library must be an `ar`
//! archive whose members lie within it (ELF members checked as cubins). PTX text
//! must not contain NUL. [`Linker::add_file`] reads the file and adds its bytes, so
//! the bytes checked are the bytes linked.
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
//! `linker.add_file("/usr/local/cuda/lib64/libcudadevrt.a", LinkInputKind::Library)`.

use crate::context::CurrentContext;
use crate::error::{CudaError, check};
use crate::jit::{JitCall, JitOptions};
use crate::loader::Driver;
use crate::module::image::{Image, image_kind, invalid};
use crate::module::{Module, aligned_copy, load_image};
use crate::stream::Tied;
use crate::sys::{CUjitInputType, CUlinkState, CUresult};
use core::ffi::c_void;
use core::marker::PhantomData;
use std::ffi::CString;
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
    /// A host object (ELF) embedding device code.
    Object(&'i [u8]),
    /// A device library: an `ar` archive of objects (`libcudadevrt.a`).
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
    /// A host object.
    Object,
    /// An `ar` archive.
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

impl CurrentContext<'_> {
    /// A linker for this context's device, with the JIT `options` (which also apply
    /// when the completed image is loaded).
    pub fn linker(&self, options: &JitOptions) -> Result<Linker<'_>, CudaError> {
        let mut jit = JitCall::new(options);
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

/// Checks an `ar` archive: its magic, and every member header and member within the
/// bytes (ELF members as cubins).
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

impl<'a> Linker<'a> {
    /// Adds an input, checked first (see the [module docs](self)).
    pub fn add(&mut self, input: LinkInput<'_>) -> Result<(), CudaError> {
        self.inputs += 1;
        let n = self.inputs;
        let (kind, bytes, name): (CUjitInputType, Vec<u8>, String) = match input {
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
                let mut b = text.as_bytes().to_vec();
                b.push(0);
                (CUjitInputType::CU_JIT_INPUT_PTX, b, name.to_owned())
            }
            LinkInput::Cubin(b) => {
                if image_kind(b)? != Image::Cubin {
                    return Err(invalid("a cubin input must be an ELF file"));
                }
                (
                    CUjitInputType::CU_JIT_INPUT_CUBIN,
                    b.to_vec(),
                    format!("input {n} (cubin)"),
                )
            }
            LinkInput::Fatbin(b) => {
                if image_kind(b)? != Image::Fatbin {
                    return Err(invalid("a fatbin input must start with the fatbin magic"));
                }
                (
                    CUjitInputType::CU_JIT_INPUT_FATBINARY,
                    b.to_vec(),
                    format!("input {n} (fatbin)"),
                )
            }
            LinkInput::Object(b) => {
                if image_kind(b)? != Image::Cubin {
                    return Err(invalid("an object input must be an ELF file"));
                }
                (
                    CUjitInputType::CU_JIT_INPUT_OBJECT,
                    b.to_vec(),
                    format!("input {n} (object)"),
                )
            }
            LinkInput::Library(b) => {
                check_archive(b)?;
                (
                    CUjitInputType::CU_JIT_INPUT_LIBRARY,
                    b.to_vec(),
                    format!("input {n} (library)"),
                )
            }
        };
        if bytes.is_empty() {
            return Err(invalid("an empty input"));
        }
        let name = CString::new(name)
            .map_err(|_| CudaError::Driver(CUresult::CUDA_ERROR_INVALID_VALUE))?;
        let aligned = aligned_copy(&bytes);
        self.jit.clear();
        // SAFETY: `aligned` holds `bytes.len()` bytes of an input checked above for its
        // kind (its headers against its length), 8-byte aligned; a NUL-terminated
        // name; no per-input options.
        let r = unsafe {
            self.driver.table().cuLinkAddData()?(
                self.raw,
                kind,
                aligned.as_ptr().cast_mut().cast(),
                bytes.len(),
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

    /// Adds the file at `path`, of format `kind`: read, checked and added as by
    /// [`add`](Linker::add) (the logs name it by its path).
    pub fn add_file(
        &mut self,
        path: impl AsRef<Path>,
        kind: LinkInputKind,
    ) -> Result<(), CudaError> {
        let path = path.as_ref();
        let bytes = std::fs::read(path).map_err(|e| CudaError::ReadFile {
            path: path.to_owned(),
            kind: e.kind(),
        })?;
        match kind {
            LinkInputKind::Ptx => {
                let text = core::str::from_utf8(&bytes)
                    .map_err(|_| invalid("a PTX input must be UTF-8 text"))?;
                let name = path.display().to_string();
                self.add(LinkInput::Ptx { name: &name, text })
            }
            LinkInputKind::Cubin => self.add(LinkInput::Cubin(&bytes)),
            LinkInputKind::Fatbin => self.add(LinkInput::Fatbin(&bytes)),
            LinkInputKind::Object => self.add(LinkInput::Object(&bytes)),
            LinkInputKind::Library => self.add(LinkInput::Library(&bytes)),
        }
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
            }
        }
    }
}

static_assertions::assert_not_impl_any!(Linker<'static>: Send, Sync);

//! The kernel parameter kinds of textures and surfaces: [`Texture<E>`] and
//! [`Surface<E>`], and what a launch or a graph kernel node passes for each
//! (`&texture`, `&mut surface`; a graph, which holds its arguments shared for its
//! life, `&surface`).

use super::{SurfaceObject, TextureObject};
use crate::array::ArrayElement;
use crate::launch::{GraphArg, KernelParam, sealed};
use core::ffi::c_void;
use core::marker::PhantomData;

/// A kernel parameter holding a texture object over an array of `E`s:
/// `cudaTextureObject_t` (PTX `.param .u64`). Takes `&texture` of a
/// [`TextureObject<E>`](super::TextureObject).
///
/// Declaring it (the `unsafe` [`Module::function`](crate::module::Module::function))
/// promises that the kernel is correct for every texture over an array of `E`s — any
/// shape, read mode, filtering and addressing — uses the handle only in texture
/// instructions (`tex`, `tld4`, `txq`), never stores through it and never uses it as
/// an address.
pub struct Texture<E: ArrayElement>(PhantomData<fn() -> E>);
/// A kernel parameter holding a surface object over an array of `E`s, which the
/// kernel may store through: `cudaSurfaceObject_t` (PTX `.param .u64`). Takes
/// `&mut surface` of a [`SurfaceObject<E>`](super::SurfaceObject).
///
/// Declaring it promises that the kernel is correct for every surface over an array
/// of `E`s of any shape, uses the handle only in surface instructions (`suld`,
/// `sust`, `suq`) and never uses it as an address.
pub struct Surface<E: ArrayElement>(PhantomData<fn() -> E>);

impl<E: ArrayElement> core::fmt::Debug for Texture<E> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "Texture<{}>", crate::memory::short_type_name::<E>())
    }
}
impl<E: ArrayElement> core::fmt::Debug for Surface<E> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "Surface<{}>", crate::memory::short_type_name::<E>())
    }
}

impl<E: ArrayElement> sealed::Param for Texture<E> {
    type Class = sealed::Free;
}
impl<E: ArrayElement> sealed::Param for Surface<E> {
    type Class = sealed::Free;
}
impl<E: ArrayElement> KernelParam for Texture<E> {
    const SIZE: usize = 8;
    const ALIGN: usize = 8;
}
impl<E: ArrayElement> KernelParam for Surface<E> {
    const SIZE: usize = 8;
    const ALIGN: usize = 8;
}

/// What a launch passing an object over an array with mark `mark` lets the kernel
/// reach: no linear memory; the array, whose mark the launch sets.
fn reach(mark: &crate::order::Mark) -> sealed::Reach<'_> {
    sealed::Reach {
        mark: Some(mark),
        ..sealed::Reach::VALUE
    }
}

impl<E: ArrayElement> crate::launch::Arg<Texture<E>> for &TextureObject<'_, E> {}
impl<E: ArrayElement> GraphArg<Texture<E>> for &TextureObject<'_, E> {}
impl<E: ArrayElement> sealed::ArgBytes<Texture<E>> for &TextureObject<'_, E> {
    fn param(&mut self, _scratch: &mut [u64; 2]) -> *mut c_void {
        self.param_bytes()
    }
    fn reach(&self) -> sealed::Reach<'_> {
        reach(self.array_mark())
    }
}

impl<E: ArrayElement> crate::launch::Arg<Surface<E>> for &mut SurfaceObject<'_, E> {}
impl<E: ArrayElement> GraphArg<Surface<E>> for &mut SurfaceObject<'_, E> {}
impl<E: ArrayElement> sealed::ArgBytes<Surface<E>> for &mut SurfaceObject<'_, E> {
    fn param(&mut self, _scratch: &mut [u64; 2]) -> *mut c_void {
        self.param_bytes()
    }
    fn reach(&self) -> sealed::Reach<'_> {
        reach(self.array_mark())
    }
}
impl<E: ArrayElement> GraphArg<Surface<E>> for &SurfaceObject<'_, E> {}
impl<E: ArrayElement> sealed::ArgBytes<Surface<E>> for &SurfaceObject<'_, E> {
    fn param(&mut self, _scratch: &mut [u64; 2]) -> *mut c_void {
        self.param_bytes()
    }
    fn reach(&self) -> sealed::Reach<'_> {
        reach(self.array_mark())
    }
}

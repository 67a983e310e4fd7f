//! The kernel parameter kinds of a map: [`TensorMapIn<L>`] and [`TensorMapOut<L>`], and
//! what a launch or a graph kernel node passes for each (`&map`, `&mut map`).

use super::{Access, ReadWrite, TensorLayout, TensorMap};
use crate::launch::{GraphArg, KernelParam, sealed};
use crate::sys::CUtensorMap;
use core::ffi::c_void;
use core::marker::PhantomData;

/// A kernel parameter holding a tensor map of layout `L` the kernel only loads
/// through: a `const __grid_constant__ CUtensorMap` (PTX `.param .align 64 .b8
/// name[128]`). Takes `&map` of a [`TensorMap`] of layout `L`. Declaring it promises
/// what [`TensorLayout`]'s contract says.
pub struct TensorMapIn<L: TensorLayout>(PhantomData<fn() -> L>);
/// A kernel parameter holding a tensor map of layout `L` the kernel may also store
/// through (same C++ and PTX form as [`TensorMapIn`]). Takes `&mut map` of a
/// [`ReadWrite`] map of layout `L`.
pub struct TensorMapOut<L: TensorLayout>(PhantomData<fn() -> L>);

impl<L: TensorLayout> core::fmt::Debug for TensorMapIn<L> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "TensorMapIn<{}>", crate::memory::short_type_name::<L>())
    }
}
impl<L: TensorLayout> core::fmt::Debug for TensorMapOut<L> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "TensorMapOut<{}>", crate::memory::short_type_name::<L>())
    }
}

impl<L: TensorLayout> sealed::Param for TensorMapIn<L> {
    type Class = sealed::Free;
}
impl<L: TensorLayout> sealed::Param for TensorMapOut<L> {
    type Class = sealed::Free;
}
impl<L: TensorLayout> KernelParam for TensorMapIn<L> {
    const SIZE: usize = size_of::<CUtensorMap>();
    const ALIGN: usize = align_of::<CUtensorMap>();
}
impl<L: TensorLayout> KernelParam for TensorMapOut<L> {
    const SIZE: usize = size_of::<CUtensorMap>();
    const ALIGN: usize = align_of::<CUtensorMap>();
}

/// The descriptor's bytes, for the driver to copy into the parameter buffer (it only
/// reads them).
fn descriptor(raw: &CUtensorMap) -> *mut c_void {
    (raw as *const CUtensorMap).cast_mut().cast()
}

impl<A: Access, L: TensorLayout> crate::launch::Arg<TensorMapIn<L>> for &TensorMap<'_, A, L> {}
impl<A: Access, L: TensorLayout> sealed::ArgBytes<TensorMapIn<L>> for &TensorMap<'_, A, L> {
    fn param(&mut self, _scratch: &mut [u64; 2]) -> *mut c_void {
        descriptor(&self.raw)
    }
    fn reach(&self) -> sealed::Reach<'_> {
        sealed::Reach {
            order: self.order,
            mark: self.mark,
            ..sealed::Reach::VALUE
        }
    }
}
impl<L: TensorLayout> crate::launch::Arg<TensorMapOut<L>> for &mut TensorMap<'_, ReadWrite, L> {}
impl<L: TensorLayout> sealed::ArgBytes<TensorMapOut<L>> for &mut TensorMap<'_, ReadWrite, L> {
    fn param(&mut self, _scratch: &mut [u64; 2]) -> *mut c_void {
        descriptor(&self.raw)
    }
    fn reach(&self) -> sealed::Reach<'_> {
        sealed::Reach {
            order: self.order,
            mark: self.mark,
            ..sealed::Reach::VALUE
        }
    }
}
impl<A: Access, L: TensorLayout> GraphArg<TensorMapIn<L>> for &TensorMap<'_, A, L> {}
impl<L: TensorLayout> GraphArg<TensorMapOut<L>> for &TensorMap<'_, ReadWrite, L> {}
impl<L: TensorLayout> sealed::ArgBytes<TensorMapOut<L>> for &TensorMap<'_, ReadWrite, L> {
    fn param(&mut self, _scratch: &mut [u64; 2]) -> *mut c_void {
        descriptor(&self.raw)
    }
    fn reach(&self) -> sealed::Reach<'_> {
        sealed::Reach {
            order: self.order,
            mark: self.mark,
            ..sealed::Reach::VALUE
        }
    }
}

//! Surface objects: [`SurfaceObject<'a, E>`] (`cuSurfObjectCreate`), through which a
//! kernel loads and stores the elements of an [`Array`] created for surface
//! load/store ([`Storage`]), borrowing it exclusively.

use crate::array::{Array, ArrayElement, Storage};
use crate::error::{CudaError, check};
use crate::loader::Driver;
use crate::order::Mark;
use crate::sys::{CUDA_RESOURCE_DESC, CUcontext, CUresourcetype, CUsurfObject};
use core::marker::PhantomData;

/// A surface object over an array of `E`s, borrowing it exclusively for `'a`: no
/// copy, texture or other surface of the array exists while it does. A kernel takes
/// it for a [`Surface<E>`](super::Surface) parameter (`&mut surface`). Destroyed when
/// dropped, after its context's work.
pub struct SurfaceObject<'a, E: ArrayElement> {
    driver: &'static Driver,
    ctx: CUcontext,
    raw: CUsurfObject,
    /// Its array's mark: launches that pass it set it.
    mark: &'a Mark,
    _p: PhantomData<(E, &'a mut (), *const ())>,
}

impl<E: ArrayElement> core::fmt::Debug for SurfaceObject<'_, E> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("SurfaceObject")
            .field("element", &crate::memory::short_type_name::<E>())
            .field("raw", &self.raw)
            .finish()
    }
}

impl<'ctx, E: ArrayElement> Array<'ctx, E, Storage> {
    /// A surface over this array (`cuSurfObjectCreate`), holding it exclusively.
    /// Only arrays made with [`storage_array`](crate::CurrentContext::storage_array)
    /// have it (CF39).
    pub fn surface(&mut self) -> Result<SurfaceObject<'_, E>, CudaError> {
        let mut res = CUDA_RESOURCE_DESC {
            resType: CUresourcetype::CU_RESOURCE_TYPE_ARRAY,
            ..Default::default()
        };
        res.res.array.hArray = self.raw();
        let driver = self.driver();
        let mut raw: CUsurfObject = 0;
        // SAFETY: valid out- and in-pointers; a live array made for surface
        // load/store, borrowed for the object's life.
        check(unsafe { driver.table().cuSurfObjectCreate()?(&mut raw, &res) })?;
        crate::leaks::created(crate::leaks::Kind::Surfaces, raw);
        Ok(SurfaceObject {
            driver,
            ctx: self.context(),
            raw,
            mark: self.mark(),
            _p: PhantomData,
        })
    }
}

impl<'a, E: ArrayElement> SurfaceObject<'a, E> {
    /// The handle (`CUsurfObject`), for calls this crate does not wrap. Valid while
    /// `self` lives.
    pub fn raw(&self) -> CUsurfObject {
        self.raw
    }

    pub(crate) fn param_bytes(&self) -> *mut core::ffi::c_void {
        (&self.raw as *const CUsurfObject).cast_mut().cast()
    }

    pub(crate) fn array_mark(&self) -> &'a Mark {
        self.mark
    }
}

impl<E: ArrayElement> Drop for SurfaceObject<'_, E> {
    fn drop(&mut self) {
        // SAFETY: this value owns the object, and nothing uses it after this.
        unsafe {
            crate::wait::release_settled(
                self.driver,
                self.ctx,
                crate::leaks::Kind::Surfaces,
                self.raw,
                self.driver.table().cuSurfObjectDestroy().ok(),
            )
        }
    }
}

//! What every test of softcuda's C ABI starts and ends with.
#![allow(dead_code)] // each test binary uses its own subset

use softcuda::api::init::cuInit;
use softcuda::api::module::{cuLaunchKernel, cuModuleGetFunction};
use softcuda::control;
use softcuda::types::{
    CU_MEM_ALLOCATION_TYPE_PINNED, CU_MEM_HANDLE_TYPE_NONE, CU_MEM_LOCATION_TYPE_DEVICE,
    CUfunction, CUmemLocation, CUmemPoolProps, CUmodule, CUresult, CUstream, code,
};
use std::ffi::{CStr, c_void};
use std::sync::{Mutex, MutexGuard};

static SERIAL: Mutex<()> = Mutex::new(());

/// One test at a time (softcuda's state is global); the driver reset to its default
/// configuration (a failed test leaves nothing behind for the next) and initialised.
pub fn serial() -> MutexGuard<'static, ()> {
    let g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    control::reset();
    // SAFETY: softcuda's export, called as C would call it.
    assert_eq!(unsafe { cuInit(0) }, code::SUCCESS);
    g
}

/// The sticky code of a kernel's access outside any allocation: `ILLEGAL_ADDRESS`,
/// or `LAUNCH_FAILED` while the sanitizer's memcheck runs (`SOFTCUDA_SANITIZE`).
pub fn fault() -> CUresult {
    control::fault_code()
}

/// The call succeeded.
#[track_caller]
pub fn ok(r: CUresult) {
    assert_eq!(r, code::SUCCESS, "driver call failed with {r}");
}

/// softcuda has no live object left. Call it while holding [`serial`]'s guard: the
/// counts are process-wide, so without it they could be another test's (a call
/// without the guard fails here whenever no other test holds it).
#[track_caller]
pub fn no_leaks() {
    if let Ok(_) | Err(std::sync::TryLockError::Poisoned(_)) = SERIAL.try_lock() {
        panic!("no_leaks() called without serial()'s guard: the counts could be another test's");
    }
    assert_eq!(
        control::live_counts(),
        control::Counts::default(),
        "objects left alive"
    );
}

/// The function `name` of module `m`.
#[track_caller]
pub fn function(m: CUmodule, name: &CStr) -> CUfunction {
    let mut f = std::ptr::null_mut();
    // SAFETY: a valid out-pointer and module, a NUL-terminated name.
    ok(unsafe { cuModuleGetFunction(&mut f, m, name.as_ptr()) });
    f
}

/// `cuLaunchKernel` of `f` (`grid` × `block`, `shared` bytes of dynamic shared
/// memory) on `s` with `params`, one pointer per kernel parameter.
pub fn launch_kernel(
    f: CUfunction,
    grid: [u32; 3],
    block: [u32; 3],
    shared: u32,
    s: CUstream,
    params: &mut [*mut c_void],
) -> CUresult {
    // SAFETY: the caller passes one pointer per kernel parameter.
    unsafe {
        cuLaunchKernel(
            f,
            grid[0],
            grid[1],
            grid[2],
            block[0],
            block[1],
            block[2],
            shared,
            s,
            params.as_mut_ptr(),
            std::ptr::null_mut(),
        )
    }
}

/// The properties of a pool of pinned memory on device 0, with no handle type.
pub fn pinned_pool_props() -> CUmemPoolProps {
    CUmemPoolProps {
        allocType: CU_MEM_ALLOCATION_TYPE_PINNED,
        handleTypes: CU_MEM_HANDLE_TYPE_NONE,
        location: CUmemLocation {
            type_: CU_MEM_LOCATION_TYPE_DEVICE,
            id: 0,
        },
        win32SecurityAttributes: std::ptr::null_mut(),
        maxSize: 0,
        usage: 0,
        reserved: [0; 54],
    }
}

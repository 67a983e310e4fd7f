//! What every test of softcuda's C ABI starts and ends with.
#![allow(dead_code)] // each test binary uses its own subset

use softcuda::api::init::cuInit;
use softcuda::control;
use softcuda::types::{CUresult, code};
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

/// The call succeeded.
#[track_caller]
pub fn ok(r: CUresult) {
    assert_eq!(r, code::SUCCESS, "driver call failed with {r}");
}

/// softcuda has no live object left.
#[track_caller]
pub fn no_leaks() {
    assert_eq!(
        control::live_counts(),
        control::Counts::default(),
        "objects left alive"
    );
}

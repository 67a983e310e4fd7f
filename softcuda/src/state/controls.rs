//! The test controls kept beside the state: fault injection, the call log and the
//! allocation budget, and [`enter`], which every export runs first.

use super::*;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{LazyLock, Mutex, MutexGuard, PoisonError};

/// A fault to inject: the `nth` call (1-based) of `function` returns `code`.
#[derive(Debug, Clone)]
struct Fault {
    function: String,
    nth: u64,
    code: CUresult,
    seen: u64,
}

struct Controls {
    faults: Vec<Fault>,
    log: Vec<String>,
}

static CONTROLS: LazyLock<Mutex<Controls>> = LazyLock::new(|| {
    Mutex::new(Controls {
        faults: Vec::new(),
        log: Vec::new(),
    })
});

static ANY_FAULT: AtomicBool = AtomicBool::new(false);

static LOGGING: AtomicBool = AtomicBool::new(false);

/// Allocations fail once this many bytes are allocated (`u64::MAX`: never).
pub static ALLOC_LIMIT: AtomicU64 = AtomicU64::new(u64::MAX);

/// Bytes allocated (device and pinned) while a limit is set.
pub static ALLOCATED: AtomicU64 = AtomicU64::new(0);

fn controls() -> MutexGuard<'static, Controls> {
    CONTROLS.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The prologue of every API function: the call log and injected faults.
#[inline]
pub fn enter(function: &'static str) -> R {
    crate::sanitize::streamcheck::calling(function);
    if !ANY_FAULT.load(Ordering::Relaxed) && !LOGGING.load(Ordering::Relaxed) {
        return Ok(());
    }
    let mut c = controls();
    if LOGGING.load(Ordering::Relaxed) {
        c.log.push(function.to_owned());
    }
    for f in c.faults.iter_mut().filter(|f| f.function == function) {
        f.seen += 1;
        if f.seen == f.nth {
            return Err(f.code);
        }
    }
    Ok(())
}

/// Makes the `nth` call (1-based, counted from now) of `function` return `code`.
pub fn inject_fault(function: &str, nth: u64, code: CUresult) {
    controls().faults.push(Fault {
        function: function.to_owned(),
        nth,
        code,
        seen: 0,
    });
    ANY_FAULT.store(true, Ordering::Relaxed);
}

/// Turns the call log on or off; turning it on clears it.
pub fn set_logging(on: bool) {
    if on {
        controls().log.clear();
    }
    LOGGING.store(on, Ordering::Relaxed);
}

/// The functions called since logging was turned on, in order.
pub fn call_log() -> Vec<String> {
    controls().log.clone()
}

/// Forgets injected faults and the allocation limit.
pub fn clear_faults() {
    controls().faults.clear();
    ANY_FAULT.store(false, Ordering::Relaxed);
    ALLOC_LIMIT.store(u64::MAX, Ordering::Relaxed);
    ALLOCATED.store(0, Ordering::Relaxed);
}

//! Conditional-node handles (`cuGraphConditionalHandleCreate`): the value device
//! code sets with `cudaGraphSetConditional` and conditional nodes test.
//!
//! One value per handle, shared by every executable graph that uses it (the driver
//! keeps one per executable graph). Handles live in their own table behind their own
//! lock, taken by kernels (through `crate::state::KernelMemory`) while they run: it
//! is innermost, nothing else is taken while holding it.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, LazyLock, Mutex, MutexGuard, PoisonError, Weak};

/// A conditional handle.
#[derive(Debug)]
pub struct Cond {
    /// The `CUgraphConditionalHandle` value.
    pub handle: u64,
    /// The graph it was created for.
    pub graph: u64,
    /// The context it was created for.
    pub ctx: u64,
    /// `defaultLaunchValue`.
    pub default: u32,
    /// `CU_GRAPH_COND_ASSIGN_DEFAULT`: the value is reset to `default` at the start
    /// of every launch.
    pub assign_default: bool,
    /// The current value.
    pub value: AtomicU32,
}

impl Cond {
    /// The current value.
    pub fn get(&self) -> u32 {
        self.value.load(Ordering::SeqCst)
    }

    /// Sets the value.
    pub fn put(&self, v: u32) {
        self.value.store(v, Ordering::SeqCst)
    }
}

/// Handles are these bits or'ed with a unique id: never 0, never reused.
const TAG: u64 = 0xC04D_0000_0000_0000;

static HANDLES: LazyLock<Mutex<HashMap<u64, Weak<Cond>>>> =
    LazyLock::new(|| Mutex::new(HashMap::new()));

fn handles() -> MutexGuard<'static, HashMap<u64, Weak<Cond>>> {
    HANDLES.lock().unwrap_or_else(PoisonError::into_inner)
}

/// A new handle for graph `graph` in context `ctx`, its value `default`. The graph
/// keeps it alive (as do the nodes and executable graphs that use it).
pub fn create(graph: u64, ctx: u64, default: u32, assign_default: bool) -> Arc<Cond> {
    let handle = TAG | super::next_id();
    let c = Arc::new(Cond {
        handle,
        graph,
        ctx,
        default,
        assign_default,
        value: AtomicU32::new(default),
    });
    let mut h = handles();
    h.retain(|_, w| w.strong_count() > 0);
    h.insert(handle, Arc::downgrade(&c));
    c
}

/// The live handle `handle`.
pub fn get(handle: u64) -> Option<Arc<Cond>> {
    handles().get(&handle).and_then(Weak::upgrade)
}

/// `cudaGraphSetConditional`: `false` if `handle` is not live.
pub fn set(handle: u64, value: u32) -> bool {
    match get(handle) {
        Some(c) => {
            c.put(value);
            true
        }
        None => false,
    }
}

/// Forgets every handle (`softcuda_reset`).
pub fn reset() {
    handles().clear();
}

//! Conditional nodes (CUDA 12.3+): a body graph run once if its condition is set
//! (`If`), or again and again while it is (`While`). Device code sets the condition
//! with `cudaGraphSetConditional(handle, value)`; the handle reaches a kernel as a
//! [`ConditionalHandle`] parameter. On an older driver the functions are missing and
//! the error is [`CudaError::NotSupported`] naming the 12.3 ABI.

use super::{Graph, Node};
use crate::error::{CudaError, check};
use crate::memory::DeviceCopy;
use crate::sys::{
    CU_GRAPH_COND_ASSIGN_DEFAULT, CUDA_CONDITIONAL_NODE_PARAMS, CUgraph,
    CUgraphConditionalNodeType, CUgraphNode, CUgraphNodeParams, CUgraphNodeType,
};
use core::ops::{Deref, DerefMut};

/// How a conditional node runs its body.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConditionalKind {
    /// Once, if the condition is non-zero when the node runs.
    If,
    /// While the condition is non-zero, checked before each run of the body.
    While,
}

/// The condition of a conditional node, as a kernel parameter
/// (`cudaGraphConditionalHandle`, an unsigned 64-bit value).
#[repr(transparent)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConditionalHandle(pub u64);

// SAFETY: a plain 64-bit value; any bits are a valid `ConditionalHandle` (the device
// runtime validates the handles it is given).
unsafe impl DeviceCopy for ConditionalHandle {}

/// The body of a conditional node, to be built like any graph; it belongs to its
/// node (the driver destroys it with the parent graph), and it keeps the parent
/// borrowed while it is built. What its nodes use is borrowed for the parent's `'g`.
pub struct Body<'p, 'g> {
    graph: Graph<'g>,
    parent: &'p mut Graph<'g>,
}

impl<'g> Deref for Body<'_, 'g> {
    type Target = Graph<'g>;
    fn deref(&self) -> &Graph<'g> {
        &self.graph
    }
}

impl<'g> DerefMut for Body<'_, 'g> {
    fn deref_mut(&mut self) -> &mut Graph<'g> {
        &mut self.graph
    }
}

impl Drop for Body<'_, '_> {
    fn drop(&mut self) {
        // The parent runs the body's host functions: it keeps them alive.
        self.parent.host_fns.append(&mut self.graph.host_fns);
    }
}

impl<'g> Graph<'g> {
    /// Adds a conditional node and returns it, the handle of its condition (for the
    /// kernels that set it), and its body to build. With `default: Some(v)` the
    /// condition is set to `v` at the start of every launch; with `None` it keeps the
    /// value the previous launch left (initially 0).
    pub fn add_conditional(
        &mut self,
        deps: &[Node],
        kind: ConditionalKind,
        default: Option<bool>,
    ) -> Result<(Node, ConditionalHandle, Body<'_, 'g>), CudaError> {
        let t = self.driver.table();
        let create = t.cuGraphConditionalHandleCreate()?;
        // The 12.3 form (with edge data), else the 12.2 one.
        let (add_new, add_old) = match (t.cuGraphAddNode(), t.cuGraphAddNode_v12020()) {
            (Ok(f), _) => (Some(f), None),
            (Err(_), Ok(f)) => (None, Some(f)),
            (Err(e), Err(_)) => return Err(e),
        };
        let ctx = super::current_context(self.driver)?;
        let (value, flags) = match default {
            Some(v) => (u32::from(v), CU_GRAPH_COND_ASSIGN_DEFAULT),
            None => (0, 0),
        };
        let mut handle = 0u64;
        // SAFETY: a valid out-pointer, this graph and the current context.
        check(unsafe { create(&mut handle, self.raw, ctx, value, flags) })?;
        let mut body = CUgraph::NULL;
        // SAFETY: all-zero is a valid `CUgraphNodeParams` (integers, null pointers),
        // and what the driver expects of every field not set below.
        let mut p: CUgraphNodeParams = unsafe { core::mem::zeroed() };
        p.type_ = CUgraphNodeType::CU_GRAPH_NODE_TYPE_CONDITIONAL;
        p.anon_0.conditional = CUDA_CONDITIONAL_NODE_PARAMS {
            handle,
            type_: match kind {
                ConditionalKind::If => CUgraphConditionalNodeType::CU_GRAPH_COND_TYPE_IF,
                ConditionalKind::While => CUgraphConditionalNodeType::CU_GRAPH_COND_TYPE_WHILE,
            },
            size: 1,
            phGraph_out: &mut body,
            ctx,
        };
        let node = self.add(deps, |out, g, d, n| {
            // SAFETY: this graph and its nodes; parameters of a conditional node whose
            // one body graph the driver writes to `body`, which outlives the call.
            unsafe {
                match (add_new, add_old) {
                    (Some(f), _) => f(out, g, d, core::ptr::null(), n, &mut p),
                    (None, Some(f)) => f(out, g, d, n, &mut p),
                    (None, None) => crate::sys::CUresult::CUDA_ERROR_NOT_SUPPORTED,
                }
            }
        })?;
        let mut graph = Graph::from_raw(self.driver, body, Vec::new());
        graph.owned = false;
        Ok((
            node,
            ConditionalHandle(handle),
            Body {
                graph,
                parent: self,
            },
        ))
    }
}

static_assertions::assert_eq_size!(ConditionalHandle, u64);
static_assertions::assert_eq_size!(CUgraphNode, *mut core::ffi::c_void);

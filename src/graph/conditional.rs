//! Conditional nodes (CUDA 12.3+): a body graph run once if its condition is set
//! (`If`), or again and again while it is (`While`). Device code sets the condition
//! with `cudaGraphSetConditional(handle, value)`; the handle reaches a kernel as a
//! [`ConditionalHandle`] parameter of a node of the graph that owns it (or of one of
//! its bodies). On an older driver the functions are missing and the error is
//! [`CudaError::NotSupported`] naming the 12.3 ABI.

use super::{BodyOf, Graph, Kind, Node};
use crate::error::{CudaError, check};
use crate::launch::sealed::{ArgBytes, GraphRef, Param, Reach};
use crate::launch::{GraphArg, KernelParam};
use crate::sys::{
    CU_GRAPH_COND_ASSIGN_DEFAULT, CUDA_CONDITIONAL_NODE_PARAMS, CUgraph,
    CUgraphConditionalNodeType, CUgraphNodeParams, CUgraphNodeType,
};
use core::ffi::c_void;
use std::rc::Rc;

/// How a conditional node runs its body.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConditionalKind {
    /// Once, if the condition is non-zero when the node runs.
    If,
    /// While the condition is non-zero, checked before each run of the body.
    While,
}

/// The condition of a conditional node, as a kernel parameter
/// (`cudaGraphConditionalHandle`: 8 bytes). Made only by
/// [`Graph::add_conditional`]; an argument of graph kernel nodes only — of the graph
/// that owns it and of that graph's bodies — never of a launch or a capture: the
/// device runtime trusts the handle it is given.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConditionalHandle {
    value: u64,
    owner: u64,
}

impl ConditionalHandle {
    /// The driver's handle.
    pub fn raw(&self) -> u64 {
        self.value
    }
}

impl Param for ConditionalHandle {
    type Class = crate::launch::sealed::Free;
}
impl KernelParam for ConditionalHandle {
    const SIZE: usize = 8;
    const ALIGN: usize = 8;
}
impl GraphArg<ConditionalHandle> for ConditionalHandle {}
impl ArgBytes<ConditionalHandle> for ConditionalHandle {
    fn param(&mut self, _scratch: &mut [u64; 2]) -> *mut c_void {
        (&mut self.value as *mut u64).cast()
    }
    fn reach(&self) -> Reach<'_> {
        Reach {
            graph: Some(GraphRef::Condition(self.owner)),
            ..Reach::VALUE
        }
    }
}

impl<'g, K: Kind> Graph<'g, K> {
    /// Adds a conditional node and returns it, the handle of its condition (for the
    /// kernels that set it), and its body to build — a graph its node owns, which
    /// keeps this one mutably borrowed and cannot outlive it. With `default: Some(v)`
    /// the condition is set to `v` at the start of every launch; with `None` it keeps
    /// the value the previous launch left (initially 0).
    pub fn add_conditional(
        &mut self,
        deps: &[Node],
        kind: ConditionalKind,
        default: Option<bool>,
    ) -> Result<(Node, ConditionalHandle, Graph<'g, BodyOf<'_>>), CudaError> {
        let t = self.driver.table();
        let create = t.cuGraphConditionalHandleCreate()?;
        // The 12.3 form (with edge data), else the 12.2 one.
        let (add_new, add_old) = match (t.cuGraphAddNode_v12030(), t.cuGraphAddNode_v12020()) {
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
        // The body shares this graph's host functions (this graph runs them) and its
        // note of writing host memory (a copy of this graph would copy the body).
        let mut graph: Graph<'g, BodyOf<'_>> =
            Graph::from_raw(self.driver, body, Rc::clone(&self.kept));
        graph.writes_host = Rc::clone(&self.writes_host);
        graph.has_conditional = Rc::clone(&self.has_conditional);
        self.has_conditional.set(true);
        graph.ancestors = self.ancestors.iter().copied().chain([self.id]).collect();
        let handle = ConditionalHandle {
            value: handle,
            owner: self.id,
        };
        Ok((node, handle, graph))
    }
}

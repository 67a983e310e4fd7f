//! Executable graphs: instantiate, upload, update, and launch inside a stream scope.

use super::{Graph, KernelNode, kernel_node_params};
use crate::error::{CudaError, check};
use crate::launch::{GraphArgs, Signature};
use crate::stream::{AsyncScope, Stream};
use crate::sys::{
    CUgraphExec, CUgraphExecUpdateResult, CUgraphExecUpdateResultInfo, CUgraphNode, CUresult,
};

/// An instantiated graph: the only state that launches (CF14), and only inside a
/// stream scope ([`AsyncScope::launch_graph`]), so that when it is dropped nothing of
/// it still runs. It keeps the graph it was made from (whose nodes name its nodes) and
/// every borrow of that graph (`'g`). Not `Send`.
pub struct GraphExec<'g> {
    raw: CUgraphExec,
    pub(super) graph: Graph<'g>,
}

impl core::fmt::Debug for GraphExec<'_> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("GraphExec")
            .field("raw", &self.raw)
            .field("graph", &self.graph)
            .finish()
    }
}

impl<'g> GraphExec<'g> {
    pub(super) fn new(graph: Graph<'g>) -> Result<GraphExec<'g>, CudaError> {
        let mut raw = CUgraphExec::NULL;
        // SAFETY: a valid out-pointer and a live graph; no flags.
        check(unsafe {
            graph.driver.table().cuGraphInstantiateWithFlags()?(&mut raw, graph.raw, 0)
        })?;
        crate::leaks::created(crate::leaks::Kind::GraphExecs, raw);
        Ok(GraphExec { raw, graph })
    }

    /// The driver's handle.
    pub fn raw(&self) -> CUgraphExec {
        self.raw
    }

    /// The graph it was instantiated from (node handles of that graph name its nodes).
    pub fn graph(&self) -> &Graph<'g> {
        &self.graph
    }

    /// Uploads the graph's work to the device ahead of its first launch on `stream`.
    pub fn upload(&self, stream: &Stream<'_>) -> Result<(), CudaError> {
        // SAFETY: a live executable graph and a stream of its context.
        check(unsafe { self.graph.driver.table().cuGraphUpload()?(self.raw, stream.raw()) })
    }

    /// Gives the kernel node `node` new arguments — checked by the compiler against its
    /// signature — for the launches that follow. The memory they name is borrowed for
    /// `'g`, like the graph's own.
    ///
    /// A raw-pointer signature's [`Len`](crate::launch::Len) is checked against the
    /// views as for [`Function::launch`](crate::module::Function::launch); a node of
    /// an unbounded signature takes new arguments through
    /// [`set_kernel_args_unchecked`](Self::set_kernel_args_unchecked).
    pub fn set_kernel_args<S: crate::launch::Bounded>(
        &mut self,
        node: &KernelNode<S>,
        args: impl GraphArgs<S> + 'g,
    ) -> Result<(), CudaError> {
        crate::launch::check_bounds::<S, _>(
            &args,
            crate::launch::launch_threads(node.grid, node.block),
        )?;
        self.set_kernel_args_raw(node, args)
    }

    /// [`set_kernel_args`](Self::set_kernel_args) for every signature; no length is
    /// checked.
    ///
    /// # Safety
    /// As for [`Graph::add_kernel_unchecked`](crate::graph::Graph::add_kernel_unchecked),
    /// for every launch that follows with these arguments.
    pub unsafe fn set_kernel_args_unchecked<S: Signature>(
        &mut self,
        node: &KernelNode<S>,
        args: impl GraphArgs<S> + 'g,
    ) -> Result<(), CudaError> {
        self.set_kernel_args_raw(node, args)
    }

    /// New kernel-node arguments, once the bound (if any) is checked or promised.
    fn set_kernel_args_raw<S: Signature>(
        &mut self,
        node: &KernelNode<S>,
        args: impl GraphArgs<S> + 'g,
    ) -> Result<(), CudaError> {
        let raw_node = self.graph.raw_node(node.node)?;
        crate::launch::check_streams::<S, _>(&args, None)?;
        let uses = crate::launch::graph_refs::<S, _>(&args);
        let index = node.node.index();
        self.graph
            .check_uses(&uses, &self.graph.preds[index], Some(index))?;
        // The arguments outlive `'g`: their memory is borrowed for it.
        self.graph
            .kept
            .borrow_mut()
            .note_raw(crate::launch::marks::<S, _>(&args));
        let set = self.graph.driver.table().cuGraphExecKernelNodeSetParams()?;
        crate::launch::with_params::<S, _, _>(args, |params| {
            let p = kernel_node_params(node.func, node.grid, node.block, node.shared_bytes, params);
            // SAFETY: a kernel node of the graph this was instantiated from, its own
            // function, and one pointer per declared parameter (read during the call).
            check(unsafe { set(self.raw, raw_node, &p) })
        })
    }

    /// Takes the parameters of `graph`, which must have the topology and node kinds of
    /// the graph this was instantiated from (`cuGraphExecUpdate`). On failure the error
    /// names the driver's reason and the offending node of `graph`, by index.
    pub fn update(&mut self, graph: Graph<'g>) -> Result<(), CudaError> {
        // Memory nodes fix their addresses at instantiation; the crate checks their
        // uses against one graph's edges, not a second one's.
        if !self.graph.allocations.is_empty() || !graph.allocations.is_empty() {
            return Err(CudaError::GraphMemory {
                allocation: 0,
                rule: "a graph with memory nodes is not updated: instantiate the new graph",
            });
        }
        // An update would leave the executable graph using the new graph's buffers,
        // which are dropped with it (or, failing halfway, some of them).
        if !self.graph.buffers.is_empty() || !graph.buffers.is_empty() {
            return Err(super::buffers::refused(
                "a graph that owns buffers is not updated: write its buffers instead",
            ));
        }
        // A conditional node's handle belongs to the graph that made it, which would be
        // dropped here while the executable graph used it.
        if self.graph.has_conditional.get() || graph.has_conditional.get() {
            return Err(CudaError::ForeignCondition);
        }
        let t = self.graph.driver.table();
        let mut info = CUgraphExecUpdateResultInfo {
            result: CUgraphExecUpdateResult::CU_GRAPH_EXEC_UPDATE_SUCCESS,
            errorNode: CUgraphNode::NULL,
            errorFromNode: CUgraphNode::NULL,
        };
        // The executable graph may call the new graph's host functions from now on,
        // even after a failure that updated part of it: keep them first.
        let fns: super::Kept<'g> = graph.kept.borrow().clone();
        self.graph.kept.borrow_mut().extend(fns);
        // SAFETY: a live executable graph, a live graph and a valid out-pointer.
        let r = unsafe { t.cuGraphExecUpdate()?(self.raw, graph.raw, &mut info) };
        if r == CUresult::CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE {
            let node = (!info.errorNode.is_null())
                .then(|| graph.index_of(info.errorNode))
                .flatten();
            return Err(CudaError::GraphUpdate {
                reason: info.result,
                node,
            });
        }
        check(r)
    }
}

impl<'env> AsyncScope<'_, 'env> {
    /// Queues a launch of `graph` on the scope's stream; the scope returns only after
    /// it has run. The graph stays borrowed until then, so it cannot be dropped (and
    /// release what it borrows) while it may run.
    pub fn launch_graph(&self, graph: &'env GraphExec<'_>) -> Result<(), CudaError> {
        // SAFETY: a live executable graph of the stream's context.
        check(unsafe { self.driver().table().cuGraphLaunch()?(graph.raw, self.stream()) })?;
        // A host access to a buffer the graph owns waits for the launch.
        graph.graph.mark_buffers(self.stream_id());
        graph.graph.kept.borrow().mark_all(self.stream_id());
        Ok(())
    }
}

impl Drop for GraphExec<'_> {
    fn drop(&mut self) {
        if let Ok(destroy) = self.graph.driver.table().cuGraphExecDestroy() {
            // SAFETY: this value owns the executable graph; no launch of it runs (each
            // ran inside a scope that has returned).
            let r = unsafe { destroy(self.raw) };
            if check(r).is_err() {
                tracing::warn!(?r, "cuGraphExecDestroy failed");
            } else {
                crate::leaks::destroyed(crate::leaks::Kind::GraphExecs, self.raw);
            }
        }
    }
}

static_assertions::assert_not_impl_any!(GraphExec<'static>: Send, Sync);

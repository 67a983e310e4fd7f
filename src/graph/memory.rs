//! Memory a graph allocates and frees as it runs (memory-allocation and -free nodes).
//!
//! A [`GraphMemory<T>`] exists only between its allocation node and its free node in
//! the graph's execution order, so its uses are checked against the graph's
//! dependencies as nodes are added — the crate knows every edge it was given: a node
//! that uses the memory must depend (directly or not) on the allocation node; the free
//! node must depend on every node that uses it; no node may use it after the free is
//! added; and a graph is instantiated only when each of its allocations is freed in
//! it. A violation is [`CudaError::GraphMemory`], naming the allocation and the rule.

use super::{Graph, Kind, Node};
use crate::error::{CudaError, check};
use crate::launch::sealed::{ArgBytes, GraphRef, Reach};
use crate::launch::{GraphArg, In, Out, Ptr, PtrMut};
use crate::memory::{DeviceCopy, bytes};
use crate::sys::{
    CUDA_MEM_ALLOC_NODE_PARAMS, CUdevice, CUdeviceptr, CUmemAllocationType, CUmemLocationType,
};
use core::ffi::c_void;
use core::marker::PhantomData;

/// Device memory of `len` elements of `T` that a graph allocates when it runs: an
/// argument of the graph's kernel nodes (for `In<T>`, `Out<T>`, `Ptr<T>` and `PtrMut<T>`
/// alike) that depend
/// on its allocation node and precede its free node. A plain handle (`Copy`): the
/// graph checks each use.
pub struct GraphMemory<T: DeviceCopy> {
    graph: u64,
    index: usize,
    ptr: CUdeviceptr,
    len: usize,
    _t: PhantomData<fn() -> T>,
}

/// What both graph handles ([`GraphMemory`], [`GraphBuffer`](super::GraphBuffer))
/// are: plain `Copy` values of a graph's memory (`$variant`: its [`GraphRef`]), with
/// their extent, and arguments of the graph's kernel nodes for `In<T>`, `Out<T>`,
/// `Ptr<T>` and `PtrMut<T>` — `{ptr, len}` for a slice, the first word for a pointer.
macro_rules! graph_handle {
    ($ty:ident, $variant:ident) => {
        impl<T: DeviceCopy> Clone for $ty<T> {
            fn clone(&self) -> Self {
                *self
            }
        }
        impl<T: DeviceCopy> Copy for $ty<T> {}

        impl<T: DeviceCopy> $ty<T> {
            /// Its length in elements.
            pub fn len(&self) -> usize {
                self.len
            }

            /// Whether it holds no element.
            pub fn is_empty(&self) -> bool {
                self.len == 0
            }

            /// The device address of its first element (the same at every launch).
            pub fn device_ptr(&self) -> CUdeviceptr {
                self.ptr
            }

            /// What it lets a kernel node reach: its elements, within its graph.
            fn reach(&self) -> Reach<'_> {
                Reach {
                    graph: Some(GraphRef::$variant(self.graph, self.index)),
                    elements: self.len,
                    ..Reach::VALUE
                }
            }
        }

        $crate::graph::memory::graph_handle!(@args $ty, In, Out, Ptr, PtrMut);
    };
    (@args $ty:ident, $($kind:ident),*) => {$(
        impl<T: DeviceCopy> GraphArg<$kind<T>> for $ty<T> {}
        impl<T: DeviceCopy> ArgBytes<$kind<T>> for $ty<T> {
            fn param(&mut self, scratch: &mut [u64; 2]) -> *mut c_void {
                *scratch = [self.ptr, self.len as u64];
                scratch.as_mut_ptr().cast()
            }
            fn reach(&self) -> Reach<'_> {
                $ty::reach(self)
            }
        }
    )*};
}
pub(super) use graph_handle;

graph_handle!(GraphMemory, Memory);

impl<T: DeviceCopy> core::fmt::Debug for GraphMemory<T> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("GraphMemory")
            .field("allocation", &self.index)
            .field("len", &self.len)
            .finish()
    }
}

/// What a graph knows of one of its allocations.
#[derive(Debug, Clone)]
pub(crate) struct Allocation {
    /// The allocation node.
    node: usize,
    /// The free node, once added.
    free: Option<usize>,
    /// The nodes that use the memory.
    users: Vec<usize>,
}

fn violation(allocation: usize, rule: &'static str) -> CudaError {
    CudaError::GraphMemory { allocation, rule }
}

impl<'g, K: Kind> Graph<'g, K> {
    /// Adds a node that allocates `len` elements of `T` on the current device each
    /// time the graph runs (at the same address every time), and returns the memory,
    /// to be freed by [`add_free`](Self::add_free) in this graph.
    pub fn add_alloc<T: DeviceCopy>(
        &mut self,
        deps: &[Node],
        len: usize,
    ) -> Result<(Node, GraphMemory<T>), CudaError> {
        let t = self.driver.table();
        let mut device: CUdevice = 0;
        // SAFETY: a valid out-pointer.
        check(unsafe { t.cuCtxGetDevice_v2000()?(&mut device) })?;
        // SAFETY: integers, handles and null pointers: all-zero is valid, and is what
        // the driver expects of the fields not set below.
        let mut p: CUDA_MEM_ALLOC_NODE_PARAMS = unsafe { core::mem::zeroed() };
        p.poolProps.allocType = CUmemAllocationType::CU_MEM_ALLOCATION_TYPE_PINNED;
        p.poolProps.location.type_ = CUmemLocationType::CU_MEM_LOCATION_TYPE_DEVICE;
        p.poolProps.location.id = device;
        p.bytesize = bytes::<T>(len)?;
        let add = t.cuGraphAddMemAllocNode()?;
        // SAFETY: this graph, its nodes, and parameters the driver reads and whose
        // `dptr` it writes.
        let node = self.add(deps, |out, g, d, n| unsafe { add(out, g, d, n, &mut p) })?;
        self.allocations.push(Allocation {
            node: node.index(),
            free: None,
            users: Vec::new(),
        });
        Ok((
            node,
            GraphMemory {
                graph: self.id,
                index: self.allocations.len() - 1,
                ptr: p.dptr,
                len,
                _t: PhantomData,
            },
        ))
    }

    /// Adds the node that frees `memory`; it must depend on every node that uses it.
    pub fn add_free<T: DeviceCopy>(
        &mut self,
        deps: &[Node],
        memory: GraphMemory<T>,
    ) -> Result<Node, CudaError> {
        let a = self.allocation(memory.graph, memory.index)?;
        let start: Vec<usize> = deps.iter().map(|d| d.index()).collect();
        if a.users
            .iter()
            .chain([&a.node])
            .any(|u| !self.reaches(&start, *u))
        {
            return Err(violation(
                memory.index,
                "the free node must depend on the allocation node and on every node that uses the memory",
            ));
        }
        let add = self.driver.table().cuGraphAddMemFreeNode()?;
        let ptr = memory.ptr;
        // SAFETY: this graph, its nodes, and the address its allocation node returned.
        let node = self.add(deps, |out, g, d, n| unsafe { add(out, g, d, n, ptr) })?;
        self.allocations[memory.index].free = Some(node.index());
        Ok(node)
    }

    /// Allocation `index` of graph `graph`, if it is this graph's and not freed.
    fn allocation(&self, graph: u64, index: usize) -> Result<&Allocation, CudaError> {
        let a = match self.allocations.get(index) {
            Some(a) if graph == self.id => a,
            _ => return Err(violation(index, "the memory belongs to another graph")),
        };
        if a.free.is_some() {
            return Err(violation(
                index,
                "the memory is already freed in this graph",
            ));
        }
        Ok(a)
    }

    /// Checks the graph objects a node uses. Memory: each allocation this graph's,
    /// not freed, and its allocation node among `start` or before them; for a node that
    /// exists already (`existing`), an allocation freed after it is accepted too. A
    /// condition: of this graph or of a graph this one is a conditional body of.
    pub(crate) fn check_uses(
        &self,
        uses: &[GraphRef],
        start: &[usize],
        existing: Option<usize>,
    ) -> Result<(), CudaError> {
        for r in uses {
            let (graph, index) = match *r {
                GraphRef::Memory(graph, index) => (graph, index),
                GraphRef::Condition(owner) => {
                    if owner != self.id && !self.ancestors.contains(&owner) {
                        return Err(CudaError::ForeignCondition);
                    }
                    continue;
                }
                GraphRef::Buffer(owner, index) => {
                    self.check_buffer(owner, index)?;
                    continue;
                }
            };
            let a = match (self.allocation(graph, index), existing) {
                (Ok(a), _) => a,
                (Err(e), None) => return Err(e),
                (Err(e), Some(node)) => match self.allocations.get(index) {
                    // An existing node may keep using memory whose free node depends on it.
                    Some(a)
                        if graph == self.id && a.free.is_some_and(|f| self.reaches(&[f], node)) =>
                    {
                        a
                    }
                    _ => return Err(e),
                },
            };
            if !self.reaches(start, a.node) {
                return Err(violation(
                    index,
                    "a node that uses the memory must depend on its allocation node",
                ));
            }
        }
        Ok(())
    }

    pub(crate) fn record_uses(&mut self, uses: &[GraphRef], node: usize) {
        for r in uses {
            if let GraphRef::Memory(_, index) = *r
                && let Some(a) = self.allocations.get_mut(index)
            {
                a.users.push(node);
            }
        }
    }

    /// Every allocation is freed in the graph.
    pub(crate) fn check_all_freed(&self) -> Result<(), CudaError> {
        match self.allocations.iter().position(|a| a.free.is_none()) {
            Some(i) => Err(violation(i, "every allocation must be freed in its graph")),
            None => Ok(()),
        }
    }
}

//! Buffers a graph owns ([`Graph::add_buffer`]): the inputs and outputs of a graph
//! replayed with new data. A graph borrows the buffers its nodes use for its whole
//! life (CF17), so the host cannot write a borrowed input between two launches; a
//! buffer the graph *owns* is reached through the graph instead, by a
//! [`GraphBuffer<T>`] handle:
//!
//! - as a kernel node's argument (`In<T>`, `Out<T>`, `Ptr<T>`, `PtrMut<T>`), in
//!   [`Graph::add_kernel`] and [`GraphExec::set_kernel_args`] — a plain handle, so new
//!   arguments borrow nothing;
//! - in stream order inside the scope that launches the graph:
//!   [`AsyncScope::copy_to_graph`] and [`AsyncScope::copy_from_graph`] queue copies
//!   between host memory and the buffer on the scope's stream, between launches;
//! - as a view, synchronously: [`GraphExec::buffer`] (ordered after the graph's
//!   launches, like any host access: [`crate::order`]) and [`GraphExec::buffer_mut`]
//!   (which needs the executable graph exclusively: no scope that launched it is open).
//!
//! The buffer is freed with the graph. A graph that owns buffers is not cloned, embedded
//! or used as an update ([`CudaError::GraphBuffer`]): the copy's nodes would use
//! memory that the original frees. A conditional body may use its graph's buffers.

use super::{Graph, GraphExec, Kind};
use crate::error::CudaError;
use crate::launch::sealed::{ArgBytes, GraphRef, Reach};
use crate::launch::{GraphArg, In, Out, Ptr, PtrMut};
use crate::memory::{DeviceBuffer, DeviceCopy, DeviceSlice, DeviceSliceMut};
use crate::order::Mark;
use crate::stream::AsyncScope;
use crate::sys::CUdeviceptr;
use core::ffi::c_void;
use core::marker::PhantomData;

/// A buffer a graph owns ([`Graph::add_buffer`]): a plain handle (`Copy`), valid with
/// that graph, its executable graph and its conditional bodies. It reaches the buffer
///
/// - as a kernel node's argument (`In<T>`, `Out<T>`, `Ptr<T>`, `PtrMut<T>`), in
///   [`Graph::add_kernel`] and [`GraphExec::set_kernel_args`] (new arguments that
///   borrow nothing);
/// - in stream order inside the scope that launches the graph:
///   [`AsyncScope::copy_to_graph`], [`AsyncScope::copy_from_graph`];
/// - as a view: [`Graph::buffer`] and [`Graph::buffer_mut`] while the graph is built,
///   [`GraphExec::buffer`] (a host access through it waits for the graph's launches
///   queued before it) and [`GraphExec::buffer_mut`] (the executable graph
///   exclusively: no scope that launched it is open). A view is device memory like
///   any other: a shared one may be an argument of another graph, whose launches then
///   mark it too.
///
/// Any other graph refuses it, as does a capture ([`CudaError::GraphBuffer`]); a graph
/// that owns buffers is not cloned, embedded or used as an update.
pub struct GraphBuffer<T: DeviceCopy> {
    graph: u64,
    index: usize,
    ptr: CUdeviceptr,
    len: usize,
    _t: PhantomData<fn() -> T>,
}

super::memory::graph_handle!(GraphBuffer, Buffer);

impl<T: DeviceCopy> core::fmt::Debug for GraphBuffer<T> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        let name = format!("GraphBuffer<{}>", crate::memory::short_type_name::<T>());
        f.debug_struct(&name)
            .field("buffer", &self.index)
            .field("len", &self.len)
            .finish()
    }
}

/// A buffer kept by its graph: dropped (freed) with it.
pub(crate) trait OwnedBuffer {
    /// The buffer's mark ([`crate::order`]).
    fn mark(&self) -> Option<&Mark>;
}
impl<T: DeviceCopy> OwnedBuffer for DeviceBuffer<'_, T> {
    fn mark(&self) -> Option<&Mark> {
        self.host_mark()
    }
}

/// The rule a graph that owns buffers keeps.
pub(crate) fn refused(rule: &'static str) -> CudaError {
    CudaError::GraphBuffer { buffer: None, rule }
}

impl<'g> Graph<'g> {
    /// Hands `buffer` to the graph, which keeps it (its contents too) and frees it when
    /// dropped; the handle reaches it ([`GraphBuffer`] says how).
    pub fn add_buffer<'b: 'g, T: DeviceCopy>(
        &mut self,
        buffer: DeviceBuffer<'b, T>,
    ) -> GraphBuffer<T> {
        let handle = GraphBuffer {
            graph: self.id,
            index: self.buffers.len(),
            ptr: buffer.device_ptr(),
            len: buffer.len(),
            _t: PhantomData,
        };
        self.buffers.push(Box::new(buffer));
        handle
    }

    /// A shared view of the buffer `h` names (this graph's, else
    /// [`CudaError::GraphBuffer`]).
    pub fn buffer<T: DeviceCopy>(
        &self,
        h: GraphBuffer<T>,
    ) -> Result<DeviceSlice<'_, T>, CudaError> {
        let mark = self.kept(h)?;
        Ok(crate::memory::shared(self.driver, h.ptr, h.len).marked(mark))
    }

    /// An exclusive view of the buffer `h` names (as [`buffer`](Self::buffer)).
    pub fn buffer_mut<T: DeviceCopy>(
        &mut self,
        h: GraphBuffer<T>,
    ) -> Result<DeviceSliceMut<'_, T>, CudaError> {
        let mark = self.kept(h)?;
        Ok(crate::memory::exclusive(self.driver, h.ptr, h.len).marked(mark))
    }

    /// The mark of the buffer `h` names, if it is this graph's.
    fn kept<T: DeviceCopy>(&self, h: GraphBuffer<T>) -> Result<Option<&Mark>, CudaError> {
        match self.buffers.get(h.index) {
            Some(b) if h.graph == self.id => Ok(b.mark()),
            _ => Err(CudaError::GraphBuffer {
                buffer: Some(h.index),
                rule: "the buffer belongs to another graph",
            }),
        }
    }

    /// Marks every buffer the graph owns with `stream`: a launch of it is queued there.
    pub(crate) fn mark_buffers(&self, stream: crate::order::StreamId) {
        for b in &self.buffers {
            if let Some(m) = b.mark() {
                m.set(stream);
            }
        }
    }
}

impl<K: Kind> Graph<'_, K> {
    /// A node of this graph may use the buffer of graph `owner`: this graph's, or one
    /// this graph is a conditional body of.
    pub(crate) fn check_buffer(&self, owner: u64, index: usize) -> Result<(), CudaError> {
        if owner == self.id || self.ancestors.contains(&owner) {
            Ok(())
        } else {
            Err(CudaError::GraphBuffer {
                buffer: Some(index),
                rule: "the buffer belongs to another graph",
            })
        }
    }
}

impl<'g> GraphExec<'g> {
    /// A shared view of the buffer `h` names ([`Graph::buffer`]). A host access
    /// through it waits for the launches of the graph queued before it.
    pub fn buffer<T: DeviceCopy>(
        &self,
        h: GraphBuffer<T>,
    ) -> Result<DeviceSlice<'_, T>, CudaError> {
        self.graph.buffer(h)
    }

    /// An exclusive view of the buffer `h` names ([`Graph::buffer_mut`]): the
    /// executable graph is borrowed exclusively, so no scope that launched it is
    /// open — to write an input between launches inside a scope, use
    /// [`AsyncScope::copy_to_graph`].
    pub fn buffer_mut<T: DeviceCopy>(
        &mut self,
        h: GraphBuffer<T>,
    ) -> Result<DeviceSliceMut<'_, T>, CudaError> {
        self.graph.buffer_mut(h)
    }
}

impl<'env> AsyncScope<'_, 'env> {
    /// Queues a copy of `src` into the buffer of `graph` that `dst` names (same
    /// length), on the scope's stream: a launch of the graph queued after it in the
    /// scope reads it. `graph` stays borrowed until the scope has waited, so the
    /// buffer outlives the copy.
    pub fn copy_to_graph<T: DeviceCopy>(
        &self,
        graph: &'env GraphExec<'_>,
        dst: GraphBuffer<T>,
        src: &'env [T],
    ) -> Result<(), CudaError> {
        let view = graph.buffer(dst)?;
        // SAFETY: the buffer's elements, kept alive by `graph` (borrowed for the
        // scope); the host side stays borrowed until the scope has synchronised.
        unsafe {
            crate::stream::queue_to_device(
                self.driver(),
                self.stream(),
                view.device_ptr(),
                view.len(),
                src,
            )
        }?;
        view.mark_used(self.stream_id());
        Ok(())
    }

    /// Queues a copy of the buffer of `graph` that `src` names into `dst` (same
    /// length), on the scope's stream: after the launches of the graph queued before it
    /// in the scope.
    pub fn copy_from_graph<T: DeviceCopy>(
        &self,
        graph: &'env GraphExec<'_>,
        src: GraphBuffer<T>,
        dst: &'env mut [T],
    ) -> Result<(), CudaError> {
        let view = graph.buffer(src)?;
        // SAFETY: as above; `T: DeviceCopy` makes any bytes written valid.
        unsafe {
            crate::stream::queue_to_host(
                self.driver(),
                self.stream(),
                dst,
                view.device_ptr(),
                view.len(),
            )
        }?;
        view.mark_used(self.stream_id());
        Ok(())
    }
}

static_assertions::assert_impl_all!(GraphBuffer<f32>: Send, Sync, Copy);

//! Executable graphs: instantiation (a cycle is refused), launch (the nodes queued
//! on the stream in an order that respects every dependency, each an item of the
//! stream's queue, so that the sticky-error rules of stream work hold node by
//! node), per-node parameter updates and whole-graph updates.

use super::{CondNode, NodeKind, Store, mem};
use crate::copy::{memcpy3d_job, set_job};
use crate::launch::kernel_job;
use crate::state::{self, R};
use crate::stream::{self, Event, Job, Work};
use crate::types::*;
use core::ffi::c_void;
use std::collections::HashMap;
use std::sync::Arc;

/// One node of an executable graph, in launch order, with the id of the node of
/// the instantiated graph it came from.
#[derive(Clone)]
pub enum Step {
    /// A node that does one thing.
    Leaf(u64, NodeKind),
    /// A child-graph node: its graph's steps.
    Child(u64, Vec<Step>),
    /// A conditional node: its handle and type, and each body's steps.
    Cond(u64, CondNode, Vec<Vec<Step>>),
}

/// What `cuGraphExecUpdate` requires to stay the same about one node: its type, its
/// dependencies (as indices in the order of addition), a kernel's context, a copy's
/// memory types, and a child graph's own shape.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct ShapeNode {
    ty: CUgraphNodeType,
    deps: Vec<usize>,
    ctx: Option<u64>,
    memtypes: Option<(CUmemorytype, CUmemorytype)>,
    child: Option<Vec<ShapeNode>>,
    /// A conditional node's handle, type and bodies.
    cond: Option<(u64, CUgraphConditionalNodeType, Vec<Vec<ShapeNode>>)>,
    /// A memory node's address.
    mem: Option<u64>,
}

/// An executable graph.
pub struct Exec {
    /// The nodes of the graph it was instantiated from, in the order of addition
    /// (what `cuGraphExec*SetParams` and `cuGraphExecUpdate` refer to).
    pub top: Vec<u64>,
    /// That graph's shape.
    pub shape: Vec<ShapeNode>,
    /// What a launch does, in order.
    pub steps: Vec<Step>,
    /// The instantiation flags.
    pub flags: u64,
    /// Completes when the last launch has: the next launch waits for it, so that
    /// launches of one exec never overlap, as on the driver.
    pub last: Option<Arc<Event>>,
    /// The graph it was instantiated from, if that has memory nodes (only one exec
    /// of such a graph may exist at a time).
    pub mem_graph: Option<u64>,
}

/// The steps of graph `g`; `Err(node)` names a node on a cycle.
fn build(s: &Store, g: u64) -> Result<Vec<Step>, u64> {
    let order = s.topo_order(g)?;
    let mut steps = Vec::with_capacity(order.len());
    for n in order {
        let Some(node) = s.nodes.get(&n) else {
            continue;
        };
        steps.push(match &node.kind {
            NodeKind::Child(c) => Step::Child(n, build(s, *c)?),
            NodeKind::Conditional(c) => {
                let mut bodies = Vec::with_capacity(c.bodies.len());
                for b in &c.bodies {
                    bodies.push(build(s, *b)?);
                }
                Step::Cond(n, c.clone(), bodies)
            }
            k => Step::Leaf(n, k.clone()),
        });
    }
    Ok(steps)
}

fn shape(s: &Store, g: u64) -> Vec<ShapeNode> {
    let nodes = s
        .graphs
        .get(&g)
        .map(|x| x.nodes.clone())
        .unwrap_or_default();
    let index: HashMap<u64, usize> = nodes.iter().enumerate().map(|(i, n)| (*n, i)).collect();
    nodes
        .iter()
        .filter_map(|n| s.nodes.get(n))
        .map(|node| {
            let mut deps: Vec<usize> = node
                .deps
                .iter()
                .filter_map(|d| index.get(d).copied())
                .collect();
            deps.sort_unstable();
            ShapeNode {
                ty: node.kind.type_code(),
                deps,
                ctx: match &node.kind {
                    NodeKind::Kernel(k) => Some(k.entry.ctx),
                    _ => None,
                },
                memtypes: match &node.kind {
                    NodeKind::Memcpy(c) => Some((c.0.srcMemoryType, c.0.dstMemoryType)),
                    _ => None,
                },
                child: match &node.kind {
                    NodeKind::Child(c) => Some(shape(s, *c)),
                    _ => None,
                },
                cond: match &node.kind {
                    NodeKind::Conditional(c) => Some((
                        c.cond.handle,
                        c.ty,
                        c.bodies.iter().map(|b| shape(s, *b)).collect(),
                    )),
                    _ => None,
                },
                mem: match &node.kind {
                    NodeKind::MemAlloc(r) => Some(r.base),
                    NodeKind::MemFree(p) => Some(*p),
                    _ => None,
                },
            }
        })
        .collect()
}

/// Instantiates graph `g`; `Err(node)` names a node on a cycle.
pub fn instantiate(s: &Store, g: u64, flags: u64) -> Result<Exec, u64> {
    Ok(Exec {
        top: s
            .graphs
            .get(&g)
            .map(|x| x.nodes.clone())
            .unwrap_or_default(),
        shape: shape(s, g),
        steps: build(s, g)?,
        flags,
        last: None,
        mem_graph: s.has_mem_nodes(g).then_some(g),
    })
}

/// Why an update failed: the `CUgraphExecUpdateResult`, the node of the new graph
/// at fault and, for a changed edge, the other end of that edge.
pub type UpdateError = (CUgraphExecUpdateResult, Option<u64>, Option<u64>);

/// `cuGraphExecUpdate`: graph `g` must have the instantiated graph's shape (nodes
/// paired in the order of addition); then its parameters replace the exec's.
pub fn update(s: &mut Store, exec: u64, g: u64) -> Result<(), UpdateError> {
    let new_nodes = s
        .graphs
        .get(&g)
        .map(|x| x.nodes.clone())
        .unwrap_or_default();
    let new_shape = shape(s, g);
    let e = s
        .execs
        .get(&exec)
        .ok_or((CU_GRAPH_EXEC_UPDATE_ERROR, None, None))?;
    let old = &e.shape;
    for (i, (a, b)) in old.iter().zip(new_shape.iter()).enumerate() {
        let node = Some(new_nodes[i]);
        if a.ty != b.ty {
            return Err((CU_GRAPH_EXEC_UPDATE_ERROR_NODE_TYPE_CHANGED, node, None));
        }
        if a.deps != b.deps {
            let from = b
                .deps
                .iter()
                .find(|d| !a.deps.contains(d))
                .or_else(|| a.deps.iter().find(|d| !b.deps.contains(d)))
                .and_then(|d| new_nodes.get(*d).copied());
            return Err((CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED, node, from));
        }
        if a.ctx != b.ctx {
            return Err((
                CU_GRAPH_EXEC_UPDATE_ERROR_UNSUPPORTED_FUNCTION_CHANGE,
                node,
                None,
            ));
        }
        if a.memtypes != b.memtypes {
            return Err((CU_GRAPH_EXEC_UPDATE_ERROR_PARAMETERS_CHANGED, node, None));
        }
        if a.child != b.child || a.cond.as_ref().map(|c| &c.2) != b.cond.as_ref().map(|c| &c.2) {
            return Err((CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED, node, None));
        }
        if a.cond.as_ref().map(|c| (c.0, c.1)) != b.cond.as_ref().map(|c| (c.0, c.1)) {
            return Err((CU_GRAPH_EXEC_UPDATE_ERROR_PARAMETERS_CHANGED, node, None));
        }
        if a.mem != b.mem {
            // Memory nodes cannot change (their addresses are the graph's).
            return Err((CU_GRAPH_EXEC_UPDATE_ERROR_NOT_SUPPORTED, node, None));
        }
    }
    if old.len() != new_shape.len() {
        let extra = new_nodes.get(old.len()).copied();
        return Err((CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED, extra, None));
    }
    let steps = build(s, g).map_err(|n| (CU_GRAPH_EXEC_UPDATE_ERROR, Some(n), None))?;
    let e = s
        .execs
        .get_mut(&exec)
        .ok_or((CU_GRAPH_EXEC_UPDATE_ERROR, None, None))?;
    // The exec keeps answering to the nodes of the graph it was instantiated from.
    let origin: HashMap<u64, u64> = new_nodes
        .iter()
        .copied()
        .zip(e.top.iter().copied())
        .collect();
    e.steps = steps
        .into_iter()
        .map(|st| match st {
            Step::Leaf(n, k) => Step::Leaf(origin.get(&n).copied().unwrap_or(n), k),
            Step::Child(n, c) => Step::Child(origin.get(&n).copied().unwrap_or(n), c),
            Step::Cond(n, c, b) => Step::Cond(origin.get(&n).copied().unwrap_or(n), c, b),
        })
        .collect();
    Ok(())
}

/// Replaces the parameters of exec `exec`'s node `node` (a node of the graph it was
/// instantiated from) with `kind`, which must be of the same type (a kernel of the
/// same context). `INVALID_VALUE` otherwise.
pub fn set_leaf(s: &mut Store, exec: u64, node: u64, kind: NodeKind) -> R {
    let e = s.execs.get_mut(&exec).ok_or(code::INVALID_VALUE)?;
    for st in e.steps.iter_mut() {
        if let Step::Leaf(n, k) = st
            && *n == node
        {
            let same = match (&*k, &kind) {
                (NodeKind::Kernel(a), NodeKind::Kernel(b)) => a.entry.ctx == b.entry.ctx,
                (a, b) => a.type_code() == b.type_code(),
            };
            if !same {
                return Err(code::INVALID_VALUE);
            }
            *k = kind;
            return Ok(());
        }
    }
    Err(code::INVALID_VALUE)
}

/// What a launch queues: operations, and event records and waits (made into stream
/// work only once every operation was built, so that a refused launch records
/// nothing).
enum Plan {
    Op(Job),
    Record(Arc<Event>),
    Wait(Arc<Event>),
}

/// `CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH`.
const AUTO_FREE_ON_LAUNCH: u64 = 0x1;

/// A host node's function and data, run on a stream's worker.
#[derive(Clone, Copy)]
struct HostCall(unsafe extern "C" fn(*mut c_void), *mut c_void);
// SAFETY: the caller's function with its own data, called as cuLaunchHostFunc does.
unsafe impl Send for HostCall {}

fn plan(steps: &[Step], out: &mut Vec<Plan>) -> R {
    crate::copy::with_graph_memory(|| plan_steps(steps, out))
}

fn plan_steps(steps: &[Step], out: &mut Vec<Plan>) -> R {
    for st in steps {
        match st {
            Step::Child(_, c) => plan_steps(c, out)?,
            Step::Cond(_, c, bodies) => {
                // Checked now, as every node is; built again each time a body runs.
                for b in bodies {
                    plan_steps(b, &mut Vec::new())?;
                }
                let (c, bodies) = (c.clone(), bodies.clone());
                out.push(Plan::Op(Box::new(move || run_conditional(&c, &bodies))));
            }
            Step::Leaf(_, k) => match k {
                NodeKind::Kernel(k) => out.push(Plan::Op(kernel_job(
                    k.entry.clone(),
                    k.cfg,
                    crate::ptx::LaunchExtras {
                        cluster: k.cluster,
                        cooperative: false,
                    },
                    Arc::clone(&k.args),
                ))),
                NodeKind::Memcpy(c) => out.extend(memcpy3d_job(&c.0)?.map(|(j, _)| Plan::Op(j))),
                NodeKind::Memset(m) => out.extend(
                    set_job(
                        m.dst,
                        m.pitch,
                        m.value,
                        m.elementSize as usize,
                        m.width,
                        m.height,
                    )?
                    .map(Plan::Op),
                ),
                NodeKind::Host(h) => {
                    let f = h.0.fn_.ok_or(code::INVALID_VALUE)?;
                    let call = HostCall(f, h.0.userData);
                    out.push(Plan::Op(Box::new(move || {
                        let call = call;
                        // SAFETY: the caller's host function with its own data.
                        unsafe { (call.0)(call.1) };
                        Ok(())
                    })));
                }
                NodeKind::EventRecord(_, e) => out.push(Plan::Record(Arc::clone(e))),
                NodeKind::EventWait(_, e) => out.push(Plan::Wait(Arc::clone(e))),
                NodeKind::MemAlloc(r) => {
                    let r = Arc::clone(r);
                    out.push(Plan::Op(Box::new(move || {
                        mem::map(&r);
                        Ok(())
                    })));
                }
                NodeKind::MemFree(p) => {
                    let p = *p;
                    out.push(Plan::Op(Box::new(move || {
                        mem::unmap(p);
                        Ok(())
                    })));
                }
                NodeKind::Empty | NodeKind::Child(_) | NodeKind::Conditional(_) => {}
            },
        }
    }
    Ok(())
}

/// Runs a conditional node (on the stream, in order): IF runs its first body if the
/// value is non-zero (else its second, if any), WHILE runs its body while the value
/// is non-zero (tested before each iteration), SWITCH runs body `value` if there is
/// one. A body's nodes run in order, inline; the first failure ends the node.
fn run_conditional(c: &CondNode, bodies: &[Vec<Step>]) -> R {
    let run = |steps: &[Step]| -> R {
        let mut plans = Vec::new();
        plan(steps, &mut plans)?;
        for p in plans {
            match p {
                Plan::Op(job) => job()?,
                // Refused at instantiation.
                Plan::Record(_) | Plan::Wait(_) => return Err(code::NOT_SUPPORTED),
            }
        }
        Ok(())
    };
    match c.ty {
        CU_GRAPH_COND_TYPE_WHILE => {
            while c.cond.get() != 0 {
                if let Some(b) = bodies.first() {
                    run(b)?;
                }
            }
            Ok(())
        }
        CU_GRAPH_COND_TYPE_SWITCH => match bodies.get(c.cond.get() as usize) {
            Some(b) => run(b),
            None => Ok(()),
        },
        _ => {
            let pick = if c.cond.get() != 0 { 0 } else { 1 };
            match bodies.get(pick) {
                Some(b) => run(b),
                None => Ok(()),
            }
        }
    }
}

/// The conditional handles of `steps` with `CU_GRAPH_COND_ASSIGN_DEFAULT`, and the
/// allocation and free nodes outside conditional bodies.
fn scan(steps: &[Step], conds: &mut Vec<Arc<super::cond::Cond>>, mems: &mut Vec<NodeKind>) {
    for st in steps {
        match st {
            Step::Child(_, c) => scan(c, conds, mems),
            Step::Cond(_, c, bodies) => {
                if c.cond.assign_default && !conds.iter().any(|x| Arc::ptr_eq(x, &c.cond)) {
                    conds.push(Arc::clone(&c.cond));
                }
                for b in bodies {
                    scan(b, conds, &mut Vec::new());
                }
            }
            Step::Leaf(_, k @ (NodeKind::MemAlloc(_) | NodeKind::MemFree(_))) => {
                mems.push(k.clone())
            }
            Step::Leaf(..) => {}
        }
    }
}

/// `cuGraphLaunch` of exec `exec` on `stream_h` of context `ctx`: every node's work
/// is built (and its memory checked) first, then queued in launch order, after the
/// exec's previous launch (on whatever stream); a refused launch queues nothing.
pub fn launch(exec: u64, ctx: u64, stream_h: CUstream) -> R {
    let (steps, flags) = super::store()
        .execs
        .get(&exec)
        .map(|e| (e.steps.clone(), e.flags))
        .ok_or(code::INVALID_VALUE)?;
    let (mut conds, mut mems) = (Vec::new(), Vec::new());
    scan(&steps, &mut conds, &mut mems);
    let mut plans = Vec::new();
    if !conds.is_empty() {
        plans.push(Plan::Op(Box::new(move || {
            for c in &conds {
                c.put(c.default);
            }
            Ok(())
        })));
    }
    // Allocations this graph does not free stay mapped after a launch: relaunching
    // before they are freed is refused, unless the exec frees them first.
    let mut maps = Vec::new();
    for k in &mems {
        if let NodeKind::MemAlloc(r) = k
            && !mem::freed_in_graph(r.base)
        {
            if mem::launch_maps(r.base, flags & AUTO_FREE_ON_LAUNCH != 0)? {
                let base = r.base;
                plans.push(Plan::Op(Box::new(move || {
                    mem::unmap(base);
                    Ok(())
                })));
            }
            maps.push(r.base);
        }
    }
    plan(&steps, &mut plans)?;
    for base in maps {
        mem::mark_outstanding(base);
    }
    for k in &mems {
        if let NodeKind::MemFree(p) = k {
            mem::freed(*p);
        }
    }
    let target = stream::target(ctx, stream_h)?;
    let sticky = state::sticky_of(&state::state(), ctx)?;
    let done = Event::new(ctx, sticky, stream::DISABLE_TIMING);
    // Under the store's lock: this launch follows the previous one, and the next
    // one follows this.
    let (after, finish) = {
        let mut s = super::store();
        let e = s.execs.get_mut(&exec).ok_or(code::INVALID_VALUE)?;
        let after = e.last.replace(Arc::clone(&done)).map(|p| p.waiter());
        (after, done.record_work())
    };
    let mut result = match after {
        Some(w) => target.clone().run(w),
        None => Ok(()),
    };
    for p in plans {
        if result.is_err() {
            break;
        }
        let work = match p {
            Plan::Op(job) => Work::Op(job),
            Plan::Record(e) => e.record_work(),
            Plan::Wait(e) => e.waiter(),
        };
        result = target.clone().run(work);
    }
    // Always queued: the next launch must not wait for a record never made (in a
    // poisoned context it is resolved as failed).
    let _ = target.run(finish);
    result
}

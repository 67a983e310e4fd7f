//! CUDA graphs and stream capture through the C ABI: every node kind, dependency
//! order, instantiation and launch (sticky errors included), parameter and
//! whole-graph updates, cloning, DOT output, and capture in each mode with its
//! illegal calls, fork/join and unjoined work. Every test ends with no live handle.

mod common;

use common::fault;
use common::{no_leaks, ok, pinned_pool_props, serial};
use softcuda::api::{context::*, graph::*, memory::*, module::*, proc::*, stream::*};
use softcuda::control;
use softcuda::types::*;
use std::ffi::c_void;
use std::ptr::{null, null_mut};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Condvar, Mutex};
use std::time::Duration;

const VECTOR_ADD: &str = concat!(include_str!("../../kernels/vector_add.ptx"), "\0");

/// `poke(p, v)`: one thread stores `v` at address `p`; a wild `p` faults.
const POKE: &str = concat!(
    ".version 8.0\n.target sm_80\n.address_size 64\n",
    ".visible .entry poke(.param .u64 poke_p, .param .u32 poke_v)\n{\n",
    ".reg .b32 %r<2>;\n.reg .b64 %rd<2>;\n",
    "ld.param.u64 %rd1, [poke_p];\nld.param.u32 %r1, [poke_v];\n",
    "st.global.u32 [%rd1], %r1;\nret;\n}\n\0"
);

const N: usize = 1000;
const ONE: u32 = 0x3f80_0000; // 1.0f32
const TWO: u32 = 0x4000_0000; // 2.0f32

/// A created context with `vector_add` and `poke` loaded.
struct Fx {
    ctx: CUcontext,
    vadd: CUfunction,
    poke: CUfunction,
}

impl Fx {
    fn new() -> Fx {
        // SAFETY: softcuda's exports, called as C would call them, with valid pointers.
        unsafe {
            let mut ctx = null_mut();
            ok(cuCtxCreate_v2(&mut ctx, 0, 0));
            let (mut m1, mut m2) = (null_mut(), null_mut());
            ok(cuModuleLoadData(&mut m1, VECTOR_ADD.as_ptr().cast()));
            ok(cuModuleLoadData(&mut m2, POKE.as_ptr().cast()));
            let (mut vadd, mut poke) = (null_mut(), null_mut());
            ok(cuModuleGetFunction(&mut vadd, m1, c"vector_add".as_ptr()));
            ok(cuModuleGetFunction(&mut poke, m2, c"poke".as_ptr()));
            Fx { ctx, vadd, poke }
        }
    }

    fn stream(&self, flags: u32) -> CUstream {
        let mut s = null_mut();
        // SAFETY: a valid out-pointer.
        ok(unsafe { cuStreamCreate(&mut s, flags) });
        s
    }

    fn event(&self) -> CUevent {
        let mut e = null_mut();
        // SAFETY: a valid out-pointer.
        ok(unsafe { cuEventCreate(&mut e, 0) });
        e
    }

    fn destroy(self) {
        // SAFETY: the fixture's own context.
        ok(unsafe { cuCtxDestroy_v2(self.ctx) });
    }
}

fn alloc(bytes: usize) -> CUdeviceptr {
    let mut d = 0;
    // SAFETY: a valid out-pointer.
    ok(unsafe { cuMemAlloc_v2(&mut d, bytes) });
    d
}

fn graph() -> CUgraph {
    let mut g = null_mut();
    // SAFETY: a valid out-pointer.
    ok(unsafe { cuGraphCreate(&mut g, 0) });
    g
}

fn instantiate(g: CUgraph) -> CUgraphExec {
    let mut e = null_mut();
    // SAFETY: a valid out-pointer and graph.
    ok(unsafe { cuGraphInstantiateWithFlags(&mut e, g, 0) });
    e
}

/// The arguments of `vector_add(a, b, c, n)`, kept alive by the caller.
struct VaddArgs {
    a: u64,
    b: u64,
    c: u64,
    n: u32,
    ptrs: [*mut c_void; 4],
}

impl VaddArgs {
    fn new(a: u64, b: u64, c: u64) -> Box<VaddArgs> {
        let mut v = Box::new(VaddArgs {
            a,
            b,
            c,
            n: N as u32,
            ptrs: [null_mut(); 4],
        });
        v.ptrs = [
            (&raw mut v.a).cast(),
            (&raw mut v.b).cast(),
            (&raw mut v.c).cast(),
            (&raw mut v.n).cast(),
        ];
        v
    }
}

fn kernel_params(f: CUfunction, args: &mut VaddArgs) -> CUDA_KERNEL_NODE_PARAMS {
    CUDA_KERNEL_NODE_PARAMS {
        func: f,
        gridDimX: (N as u32).div_ceil(128),
        gridDimY: 1,
        gridDimZ: 1,
        blockDimX: 128,
        blockDimY: 1,
        blockDimZ: 1,
        sharedMemBytes: 0,
        kernelParams: args.ptrs.as_mut_ptr(),
        extra: null_mut(),
        kern: null_mut(),
        ctx: null_mut(),
    }
}

fn memset_params(dst: u64, value: u32) -> CUDA_MEMSET_NODE_PARAMS {
    CUDA_MEMSET_NODE_PARAMS {
        dst,
        pitch: 0,
        value,
        elementSize: 4,
        width: N,
        height: 1,
    }
}

fn copy_dtoh(dst: *mut f32, src: u64, bytes: usize) -> CUDA_MEMCPY3D {
    CUDA_MEMCPY3D {
        srcXInBytes: 0,
        srcY: 0,
        srcZ: 0,
        srcLOD: 0,
        srcMemoryType: CU_MEMORYTYPE_DEVICE,
        srcHost: null(),
        srcDevice: src,
        srcArray: null_mut(),
        reserved0: null_mut(),
        srcPitch: 0,
        srcHeight: 0,
        dstXInBytes: 0,
        dstY: 0,
        dstZ: 0,
        dstLOD: 0,
        dstMemoryType: CU_MEMORYTYPE_HOST,
        dstHost: dst.cast(),
        dstDevice: 0,
        dstArray: null_mut(),
        reserved1: null_mut(),
        dstPitch: 0,
        dstHeight: 0,
        WidthInBytes: bytes,
        Height: 1,
        Depth: 1,
    }
}

/// A host function: adds 1 to the `AtomicU32` it is given.
extern "C" fn bump(data: *mut c_void) {
    // SAFETY: the tests pass a live `AtomicU32`.
    unsafe { &*data.cast::<AtomicU32>() }.fetch_add(1, Ordering::SeqCst);
}

fn host(counter: &AtomicU32) -> CUDA_HOST_NODE_PARAMS {
    CUDA_HOST_NODE_PARAMS {
        fn_: Some(bump),
        userData: (counter as *const AtomicU32).cast_mut().cast(),
    }
}

/// A host function checking, when it runs, that the buffer it is given (N floats)
/// holds 3.0 everywhere, and counting the checks that passed.
struct Check {
    buf: *const f32,
    passed: AtomicU32,
}

extern "C" fn check_buffer(data: *mut c_void) {
    // SAFETY: the tests pass a live `Check` whose buffer holds N floats.
    let c = unsafe { &*data.cast::<Check>() };
    // SAFETY: as above; the graph wrote the buffer before this node runs.
    let all = (0..N).all(|i| unsafe { std::ptr::read_volatile(c.buf.add(i)) } == 3.0);
    if all {
        c.passed.fetch_add(1, Ordering::SeqCst);
    }
}

fn nodes_of(g: CUgraph) -> Vec<CUgraphNode> {
    let mut n = 0;
    // SAFETY: valid pointers; the graph is live.
    unsafe {
        ok(cuGraphGetNodes(g, null_mut(), &mut n));
        let mut v = vec![null_mut(); n];
        ok(cuGraphGetNodes(g, v.as_mut_ptr(), &mut n));
        v
    }
}

fn edges_of(g: CUgraph) -> Vec<(CUgraphNode, CUgraphNode)> {
    let mut n = 0;
    // SAFETY: valid pointers; the graph is live.
    unsafe {
        ok(cuGraphGetEdges(g, null_mut(), null_mut(), &mut n));
        let (mut f, mut t) = (vec![null_mut(); n], vec![null_mut(); n]);
        ok(cuGraphGetEdges(g, f.as_mut_ptr(), t.as_mut_ptr(), &mut n));
        f.into_iter().zip(t).collect()
    }
}

fn node_type(n: CUgraphNode) -> CUgraphNodeType {
    let mut t = 99;
    // SAFETY: a valid out-pointer.
    ok(unsafe { cuGraphNodeGetType(n, &mut t) });
    t
}

/// Nodes are added out of order and ordered by edges added afterwards: the memcpy
/// node (added first) runs after the kernel, which runs after both memsets; a host
/// node checks the result when it runs. Launched twice, on a created stream and on
/// the legacy stream.
#[test]
fn dependencies_order_memset_kernel_memcpy_and_host_nodes() {
    let _g = serial();
    let fx = Fx::new();
    let (a, b, c) = (alloc(N * 4), alloc(N * 4), alloc(N * 4));
    let mut out = vec![0f32; N];
    let check = Box::new(Check {
        buf: out.as_ptr(),
        passed: AtomicU32::new(0),
    });
    let mut args = VaddArgs::new(a, b, c);
    // SAFETY: softcuda's exports with valid pointers; buffers outlive the launches.
    unsafe {
        let g = graph();
        let (mut copy, mut kern, mut set_a, mut set_b, mut chk) =
            (null_mut(), null_mut(), null_mut(), null_mut(), null_mut());
        let cp = copy_dtoh(out.as_mut_ptr(), c, N * 4);
        ok(cuGraphAddMemcpyNode(&mut copy, g, null(), 0, &cp, fx.ctx));
        let kp = kernel_params(fx.vadd, &mut args);
        ok(cuGraphAddKernelNode_v2(&mut kern, g, null(), 0, &kp));
        ok(cuGraphAddMemsetNode(
            &mut set_a,
            g,
            null(),
            0,
            &memset_params(a, ONE),
            fx.ctx,
        ));
        ok(cuGraphAddMemsetNode(
            &mut set_b,
            g,
            null(),
            0,
            &memset_params(b, TWO),
            fx.ctx,
        ));
        let hp = CUDA_HOST_NODE_PARAMS {
            fn_: Some(check_buffer),
            userData: (&*check as *const Check).cast_mut().cast(),
        };
        ok(cuGraphAddHostNode(&mut chk, g, &copy, 1, &hp));
        let from = [set_a, set_b, kern];
        let to = [kern, kern, copy];
        ok(cuGraphAddDependencies(g, from.as_ptr(), to.as_ptr(), 3));
        // The same edge twice, a self-edge, a node of another graph: refused.
        assert_eq!(
            cuGraphAddDependencies(g, &set_a, &kern, 1),
            code::INVALID_VALUE
        );
        assert_eq!(
            cuGraphAddDependencies(g, &kern, &kern, 1),
            code::INVALID_VALUE
        );
        let other = graph();
        let mut stranger = null_mut();
        ok(cuGraphAddEmptyNode(&mut stranger, other, null(), 0));
        assert_eq!(
            cuGraphAddDependencies(g, &stranger, &kern, 1),
            code::INVALID_VALUE
        );
        assert_eq!(
            cuGraphAddEmptyNode(&mut stranger, g, &stranger, 1),
            code::INVALID_VALUE
        );
        ok(cuGraphDestroy(other));

        assert_eq!(edges_of(g).len(), 4);
        let mut roots = [null_mut(); 4];
        let mut n = 4;
        ok(cuGraphGetRootNodes(g, roots.as_mut_ptr(), &mut n));
        assert_eq!((n, &roots[..2]), (2, &[set_a, set_b][..]));
        assert!(roots[2].is_null() && roots[3].is_null());

        let exec = instantiate(g);
        let s = fx.stream(0);
        ok(cuGraphLaunch(exec, s));
        ok(cuStreamSynchronize(s));
        assert!(out.iter().all(|&x| x == 3.0));
        assert_eq!(check.passed.load(Ordering::SeqCst), 1);
        out.fill(0.0);
        ok(cuMemsetD32_v2(c, 0, N));
        ok(cuGraphLaunch(exec, null_mut()));
        assert!(out.iter().all(|&x| x == 3.0));
        assert_eq!(check.passed.load(Ordering::SeqCst), 2);
        ok(cuGraphUpload(exec, s));

        ok(cuGraphExecDestroy(exec));
        ok(cuGraphDestroy(g));
        assert_eq!(cuGraphDestroy(g), code::INVALID_VALUE);
        assert_eq!(cuGraphExecDestroy(exec), code::INVALID_VALUE);
        ok(cuStreamDestroy_v2(s));
    }
    fx.destroy();
    no_leaks();
}

/// Every node kind reports its type; dependencies and dependents, edges in both
/// ABIs, node destruction (with its edges), child graphs cloned at add time.
#[test]
fn node_kinds_queries_and_child_graphs() {
    let _g = serial();
    let fx = Fx::new();
    let counter = AtomicU32::new(0);
    let d = alloc(N * 4);
    let mut out = vec![0f32; N];
    let mut args = VaddArgs::new(d, d, d);
    // SAFETY: softcuda's exports with valid pointers.
    unsafe {
        // The kernel node reads `d`: write it first.
        ok(cuMemsetD32_v2(d, 0, N));
        let ev = fx.event();
        let child = graph();
        let mut h1 = null_mut();
        ok(cuGraphAddHostNode(
            &mut h1,
            child,
            null(),
            0,
            &host(&counter),
        ));

        let g = graph();
        let mut n = [null_mut(); 9];
        ok(cuGraphAddEmptyNode(&mut n[0], g, null(), 0));
        ok(cuGraphAddKernelNode_v2(
            &mut n[1],
            g,
            &n[0],
            1,
            &kernel_params(fx.vadd, &mut args),
        ));
        let cp = copy_dtoh(out.as_mut_ptr(), d, N * 4);
        ok(cuGraphAddMemcpyNode(&mut n[2], g, &n[1], 1, &cp, fx.ctx));
        ok(cuGraphAddMemsetNode(
            &mut n[3],
            g,
            &n[0],
            1,
            &memset_params(d, 0),
            fx.ctx,
        ));
        ok(cuGraphAddHostNode(&mut n[4], g, &n[2], 1, &host(&counter)));
        ok(cuGraphAddChildGraphNode(&mut n[5], g, &n[4], 1, child));
        ok(cuGraphAddEventRecordNode(&mut n[6], g, &n[5], 1, ev));
        ok(cuGraphAddEventWaitNode(&mut n[7], g, &n[6], 1, ev));
        let deps = [n[3], n[7]];
        ok(cuGraphAddEmptyNode(&mut n[8], g, deps.as_ptr(), 2));
        let types: Vec<_> = n.iter().map(|&x| node_type(x)).collect();
        assert_eq!(
            types,
            [
                CU_GRAPH_NODE_TYPE_EMPTY,
                CU_GRAPH_NODE_TYPE_KERNEL,
                CU_GRAPH_NODE_TYPE_MEMCPY,
                CU_GRAPH_NODE_TYPE_MEMSET,
                CU_GRAPH_NODE_TYPE_HOST,
                CU_GRAPH_NODE_TYPE_GRAPH,
                CU_GRAPH_NODE_TYPE_EVENT_RECORD,
                CU_GRAPH_NODE_TYPE_WAIT_EVENT,
                CU_GRAPH_NODE_TYPE_EMPTY,
            ]
        );
        assert_eq!(nodes_of(g), n.to_vec());
        assert_eq!(edges_of(g).len(), 9);
        // The 12.3 ABI: the same edges, default edge data.
        let mut count = 0;
        ok(cuGraphGetEdges_v2(
            g,
            null_mut(),
            null_mut(),
            null_mut(),
            &mut count,
        ));
        assert_eq!(count, 9);
        let (mut f, mut t) = ([null_mut(); 9], [null_mut(); 9]);
        let mut data = [CUgraphEdgeData {
            type_: 7,
            ..Default::default()
        }; 9];
        ok(cuGraphGetEdges_v2(
            g,
            f.as_mut_ptr(),
            t.as_mut_ptr(),
            data.as_mut_ptr(),
            &mut count,
        ));
        assert!(data.iter().all(|e| *e == CUgraphEdgeData::default()));
        assert_eq!(edges_of(g), f.into_iter().zip(t).collect::<Vec<_>>());
        // Dependencies and dependents.
        let mut k = 4;
        let mut list = [null_mut(); 4];
        ok(cuGraphNodeGetDependencies(n[8], list.as_mut_ptr(), &mut k));
        assert_eq!(&list[..k], &[n[3], n[7]]);
        k = 4;
        ok(cuGraphNodeGetDependentNodes(
            n[0],
            list.as_mut_ptr(),
            &mut k,
        ));
        assert_eq!(&list[..k], &[n[1], n[3]]);
        k = 4;
        ok(cuGraphNodeGetDependentNodes_v2(
            n[0],
            list.as_mut_ptr(),
            null_mut(),
            &mut k,
        ));
        assert_eq!(k, 2);
        // Accessors.
        let mut e2 = null_mut();
        ok(cuGraphEventRecordNodeGetEvent(n[6], &mut e2));
        assert_eq!(e2, ev);
        ok(cuGraphEventWaitNodeGetEvent(n[7], &mut e2));
        assert_eq!(e2, ev);
        assert_eq!(
            cuGraphEventWaitNodeGetEvent(n[6], &mut e2),
            code::INVALID_VALUE
        );
        let mut ms = memset_params(0, 0);
        ok(cuGraphMemsetNodeGetParams(n[3], &mut ms));
        assert_eq!((ms.dst, ms.width, ms.elementSize), (d, N, 4));
        let mut cp2 = copy_dtoh(null_mut(), 0, 0);
        ok(cuGraphMemcpyNodeGetParams(n[2], &mut cp2));
        assert_eq!((cp2.srcDevice, cp2.WidthInBytes), (d, N * 4));
        let mut hp = host(&counter);
        hp.fn_ = None;
        ok(cuGraphHostNodeGetParams(n[4], &mut hp));
        assert!(hp.fn_.is_some());
        // The child graph was cloned: a node added to the original later is not
        // in the node's graph.
        let mut h2 = null_mut();
        ok(cuGraphAddHostNode(&mut h2, child, &h1, 1, &host(&counter)));
        let mut embedded = null_mut();
        ok(cuGraphChildGraphNodeGetGraph(n[5], &mut embedded));
        assert_ne!(embedded, child);
        assert_eq!(nodes_of(embedded).len(), 1);
        assert_eq!(cuGraphDestroy(embedded), code::INVALID_VALUE);
        // Bad parameters are refused: an array side naming no array.
        let mut arr = cp;
        arr.srcMemoryType = CU_MEMORYTYPE_ARRAY;
        let mut x = null_mut();
        assert_eq!(
            cuGraphAddMemcpyNode(&mut x, g, null(), 0, &arr, fx.ctx),
            code::INVALID_VALUE
        );
        let mut bad = memset_params(d, 0);
        bad.elementSize = 8;
        assert_eq!(
            cuGraphAddMemsetNode(&mut x, g, null(), 0, &bad, fx.ctx),
            code::INVALID_VALUE
        );
        bad = memset_params(8, 0);
        assert_eq!(
            cuGraphAddMemsetNode(&mut x, g, null(), 0, &bad, fx.ctx),
            code::INVALID_VALUE
        );

        // Launch: one host node in the graph, one in the child.
        let exec = instantiate(g);
        let s = fx.stream(0);
        ok(cuGraphLaunch(exec, s));
        ok(cuStreamSynchronize(s));
        ok(cuEventSynchronize(ev));
        assert_eq!(counter.load(Ordering::SeqCst), 2);

        // Destroying a node takes its edges.
        ok(cuGraphDestroyNode(n[7]));
        assert_eq!(nodes_of(g).len(), 8);
        assert_eq!(edges_of(g).len(), 7);
        assert_eq!(cuGraphNodeGetType(n[7], &mut 0), code::INVALID_VALUE);

        ok(cuGraphExecDestroy(exec));
        ok(cuGraphDestroy(g));
        ok(cuGraphDestroy(child));
        ok(cuStreamDestroy_v2(s));
        ok(cuEventDestroy_v2(ev));
    }
    fx.destroy();
    no_leaks();
}

/// An event-wait node holds back the nodes after it until the event's record (on
/// another stream, behind a gated host function) completes.
#[test]
fn event_wait_node_waits_for_the_record() {
    struct Gate {
        open: Mutex<bool>,
        cv: Condvar,
    }
    extern "C" fn wait_gate(data: *mut c_void) {
        // SAFETY: the test passes a live `Gate`.
        let g = unsafe { &*data.cast::<Gate>() };
        let mut open = g.open.lock().unwrap();
        while !*open {
            open = g.cv.wait(open).unwrap();
        }
    }
    let _g = serial();
    let fx = Fx::new();
    let gate = Gate {
        open: Mutex::new(false),
        cv: Condvar::new(),
    };
    let counter = AtomicU32::new(0);
    // SAFETY: softcuda's exports with valid pointers.
    unsafe {
        let (s1, s2, ev) = (fx.stream(0), fx.stream(0), fx.event());
        ok(cuLaunchHostFunc(
            s1,
            Some(wait_gate),
            (&raw const gate).cast_mut().cast(),
        ));
        ok(cuEventRecord(ev, s1));
        let g = graph();
        let (mut w, mut h) = (null_mut(), null_mut());
        ok(cuGraphAddEventWaitNode(&mut w, g, null(), 0, ev));
        ok(cuGraphAddHostNode(&mut h, g, &w, 1, &host(&counter)));
        let exec = instantiate(g);
        ok(cuGraphLaunch(exec, s2));
        std::thread::sleep(Duration::from_millis(50));
        assert_eq!(counter.load(Ordering::SeqCst), 0);
        assert_eq!(cuStreamQuery(s2), code::NOT_READY);
        *gate.open.lock().unwrap() = true;
        gate.cv.notify_all();
        ok(cuStreamSynchronize(s2));
        assert_eq!(counter.load(Ordering::SeqCst), 1);
        ok(cuGraphExecDestroy(exec));
        ok(cuGraphDestroy(g));
        ok(cuStreamDestroy_v2(s1));
        ok(cuStreamDestroy_v2(s2));
        ok(cuEventDestroy_v2(ev));
    }
    fx.destroy();
    no_leaks();
}

/// Kernel-node parameters: read back (the copied arguments), set on the graph's
/// node, and set on an executable graph's node without touching the graph.
#[test]
fn kernel_node_parameters_get_set_and_exec_set() {
    let _g = serial();
    let fx = Fx::new();
    let (a, b, c1, c2) = (alloc(N * 4), alloc(N * 4), alloc(N * 4), alloc(N * 4));
    let mut out = vec![0f32; N];
    // SAFETY: softcuda's exports with valid pointers.
    unsafe {
        ok(cuMemsetD32_v2(a, ONE, N));
        ok(cuMemsetD32_v2(b, TWO, N));
        let mut args = VaddArgs::new(a, b, c1);
        let g = graph();
        let mut k = null_mut();
        ok(cuGraphAddKernelNode_v2(
            &mut k,
            g,
            null(),
            0,
            &kernel_params(fx.vadd, &mut args),
        ));
        // The arguments were copied at add time: changing them now changes nothing.
        args.c = c2;
        let mut p = kernel_params(null_mut(), &mut VaddArgs::new(0, 0, 0));
        ok(cuGraphKernelNodeGetParams_v2(k, &mut p));
        assert_eq!(p.func, fx.vadd);
        assert_eq!((p.gridDimX, p.blockDimX), ((N as u32).div_ceil(128), 128));
        assert_eq!(p.ctx, fx.ctx);
        assert_eq!(*(*p.kernelParams.add(2)).cast::<u64>(), c1);
        assert_eq!(*(*p.kernelParams.add(3)).cast::<u32>(), N as u32);
        let mut p1 = std::mem::zeroed::<CUDA_KERNEL_NODE_PARAMS_v1>();
        ok(cuGraphKernelNodeGetParams(k, &mut p1));
        assert_eq!((p1.func, p1.gridDimX), (fx.vadd, p.gridDimX));

        let s = fx.stream(0);
        let exec = instantiate(g);
        ok(cuGraphLaunch(exec, s));
        ok(cuStreamSynchronize(s));
        ok(cuMemcpyDtoH_v2(out.as_mut_ptr().cast(), c1, N * 4));
        assert!(out.iter().all(|&x| x == 3.0));

        // The exec's node now writes c2; the graph's node still says c1.
        ok(cuGraphExecKernelNodeSetParams_v2(
            exec,
            k,
            &kernel_params(fx.vadd, &mut args),
        ));
        ok(cuGraphLaunch(exec, s));
        ok(cuStreamSynchronize(s));
        ok(cuMemcpyDtoH_v2(out.as_mut_ptr().cast(), c2, N * 4));
        assert!(out.iter().all(|&x| x == 3.0));
        ok(cuGraphKernelNodeGetParams_v2(k, &mut p));
        assert_eq!(*(*p.kernelParams.add(2)).cast::<u64>(), c1);
        // A different kind of node, or a bad launch shape, is refused.
        let mut e = null_mut();
        ok(cuGraphAddEmptyNode(&mut e, g, null(), 0));
        assert_eq!(
            cuGraphExecKernelNodeSetParams_v2(exec, e, &kernel_params(fx.vadd, &mut args)),
            code::INVALID_VALUE
        );
        let mut zero = kernel_params(fx.vadd, &mut args);
        zero.gridDimX = 0;
        assert_eq!(cuGraphKernelNodeSetParams_v2(k, &zero), code::INVALID_VALUE);
        let mut kern_only = kernel_params(null_mut(), &mut args);
        kern_only.kern = 0x1234 as *mut c_void;
        assert_eq!(
            cuGraphKernelNodeSetParams_v2(k, &kern_only),
            code::INVALID_VALUE
        );

        // Set on the graph's node: a new instantiation uses it.
        args.c = c2;
        ok(cuMemsetD32_v2(c2, 0, N));
        ok(cuGraphKernelNodeSetParams_v2(
            k,
            &kernel_params(fx.vadd, &mut args),
        ));
        ok(cuGraphKernelNodeGetParams_v2(k, &mut p));
        assert_eq!(*(*p.kernelParams.add(2)).cast::<u64>(), c2);

        ok(cuGraphExecDestroy(exec));
        ok(cuGraphDestroy(g));
        ok(cuStreamDestroy_v2(s));
    }
    fx.destroy();
    no_leaks();
}

/// A clone is independent of its original; `cuGraphNodeFindInClone` maps nodes.
#[test]
fn clone_is_independent_and_nodes_are_found_in_it() {
    let _g = serial();
    let fx = Fx::new();
    let counter = AtomicU32::new(0);
    // SAFETY: softcuda's exports with valid pointers.
    unsafe {
        let g = graph();
        let (mut h1, mut h2) = (null_mut(), null_mut());
        ok(cuGraphAddHostNode(&mut h1, g, null(), 0, &host(&counter)));
        ok(cuGraphAddHostNode(&mut h2, g, &h1, 1, &host(&counter)));
        let mut c = null_mut();
        ok(cuGraphClone(&mut c, g));
        let mut found = null_mut();
        ok(cuGraphNodeFindInClone(&mut found, h2, c));
        assert_ne!(found, h2);
        assert_eq!(node_type(found), CU_GRAPH_NODE_TYPE_HOST);
        let mut k = 1;
        let mut dep = [null_mut()];
        ok(cuGraphNodeGetDependencies(found, dep.as_mut_ptr(), &mut k));
        let mut f1 = null_mut();
        ok(cuGraphNodeFindInClone(&mut f1, h1, c));
        assert_eq!(dep[0], f1);
        assert_eq!(cuGraphNodeFindInClone(&mut f1, h1, g), code::INVALID_VALUE);
        // Changing the original leaves the clone alone.
        ok(cuGraphDestroyNode(h2));
        assert_eq!(nodes_of(g).len(), 1);
        assert_eq!(nodes_of(c).len(), 2);
        ok(cuGraphDestroy(g));
        let exec = instantiate(c);
        ok(cuGraphLaunch(exec, null_mut()));
        assert_eq!(counter.load(Ordering::SeqCst), 2);
        ok(cuGraphExecDestroy(exec));
        ok(cuGraphDestroy(c));
    }
    fx.destroy();
    no_leaks();
}

#[test]
fn debug_dot_print_writes_a_dot_file() {
    let _g = serial();
    let fx = Fx::new();
    let d = alloc(N * 4);
    let mut args = VaddArgs::new(d, d, d);
    let path = std::env::temp_dir().join(format!("softcuda-graph-{}.dot", std::process::id()));
    let cpath = std::ffi::CString::new(path.to_str().unwrap()).unwrap();
    // SAFETY: softcuda's exports with valid pointers.
    unsafe {
        let child = graph();
        let mut e = null_mut();
        ok(cuGraphAddEmptyNode(&mut e, child, null(), 0));
        let g = graph();
        let (mut m, mut k, mut c) = (null_mut(), null_mut(), null_mut());
        ok(cuGraphAddMemsetNode(
            &mut m,
            g,
            null(),
            0,
            &memset_params(d, 7),
            fx.ctx,
        ));
        ok(cuGraphAddKernelNode_v2(
            &mut k,
            g,
            &m,
            1,
            &kernel_params(fx.vadd, &mut args),
        ));
        ok(cuGraphAddChildGraphNode(&mut c, g, &k, 1, child));
        ok(cuGraphDebugDotPrint(g, cpath.as_ptr(), 0));
        let text = std::fs::read_to_string(&path).unwrap();
        std::fs::remove_file(&path).unwrap();
        assert!(text.starts_with("digraph dot {"), "{text}");
        assert!(text.trim_end().ends_with('}'));
        assert!(
            text.contains("KERNEL") && text.contains("vector_add"),
            "{text}"
        );
        assert!(text.contains("<<<(8,1,1),(128,1,1),0>>>"), "{text}");
        assert!(text.contains("MEMSET") && text.contains("GRAPH") && text.contains("EMPTY"));
        assert_eq!(text.matches(" -> ").count(), 2, "{text}");
        assert_eq!(text.matches('{').count(), text.matches('}').count());
        assert_eq!(cuGraphDebugDotPrint(g, null(), 0), code::INVALID_VALUE);
        ok(cuGraphDestroy(g));
        ok(cuGraphDestroy(child));
    }
    fx.destroy();
    no_leaks();
}

/// A cycle is refused when the graph is instantiated, with the node at fault.
#[test]
fn a_cycle_is_refused_at_instantiation() {
    let _g = serial();
    let fx = Fx::new();
    // SAFETY: softcuda's exports with valid pointers.
    unsafe {
        let g = graph();
        let (mut a, mut b, mut c) = (null_mut(), null_mut(), null_mut());
        ok(cuGraphAddEmptyNode(&mut a, g, null(), 0));
        ok(cuGraphAddEmptyNode(&mut b, g, &a, 1));
        ok(cuGraphAddEmptyNode(&mut c, g, &b, 1));
        ok(cuGraphAddDependencies(g, &c, &a, 1));
        let mut e = null_mut();
        assert_eq!(
            cuGraphInstantiateWithFlags(&mut e, g, 0),
            code::INVALID_VALUE
        );
        assert!(e.is_null());
        let mut p = CUDA_GRAPH_INSTANTIATE_PARAMS {
            flags: 0,
            hUploadStream: null_mut(),
            hErrNode_out: null_mut(),
            result_out: 0,
        };
        assert_eq!(
            cuGraphInstantiateWithParams(&mut e, g, &mut p),
            code::INVALID_VALUE
        );
        assert_eq!(p.result_out, CUDA_GRAPH_INSTANTIATE_INVALID_STRUCTURE);
        assert!([a, b, c].contains(&p.hErrNode_out));
        // Break the cycle: it instantiates.
        ok(cuGraphRemoveDependencies(g, &c, &a, 1));
        assert_eq!(cuGraphRemoveDependencies(g, &c, &a, 1), code::INVALID_VALUE);
        ok(cuGraphInstantiateWithParams(&mut e, g, &mut p));
        assert_eq!(p.result_out, CUDA_GRAPH_INSTANTIATE_SUCCESS);
        let mut flags = 9;
        ok(cuGraphExecGetFlags(e, &mut flags));
        assert_eq!(flags, 0);
        ok(cuGraphExecDestroy(e));
        assert_eq!(
            cuGraphInstantiateWithFlags(&mut e, g, 0x4),
            code::NOT_SUPPORTED
        );
        ok(cuGraphDestroy(g));
    }
    fx.destroy();
    no_leaks();
}

/// A kernel of a launched graph faults: the context is poisoned, the nodes after
/// it never run, and the synchronisation reports the sticky error.
#[test]
fn a_fault_during_a_graph_launch_is_sticky() {
    let _g = serial();
    let fx = Fx::new();
    let counter = AtomicU32::new(0);
    // SAFETY: softcuda's exports with valid pointers.
    unsafe {
        let (p, v) = (8u64, 1u32);
        let mut args: [*mut c_void; 2] = [
            (&raw const p).cast_mut().cast(),
            (&raw const v).cast_mut().cast(),
        ];
        let kp = CUDA_KERNEL_NODE_PARAMS {
            func: fx.poke,
            gridDimX: 1,
            gridDimY: 1,
            gridDimZ: 1,
            blockDimX: 1,
            blockDimY: 1,
            blockDimZ: 1,
            sharedMemBytes: 0,
            kernelParams: args.as_mut_ptr(),
            extra: null_mut(),
            kern: null_mut(),
            ctx: fx.ctx,
        };
        let g = graph();
        let (mut k, mut h) = (null_mut(), null_mut());
        ok(cuGraphAddKernelNode_v2(&mut k, g, null(), 0, &kp));
        ok(cuGraphAddHostNode(&mut h, g, &k, 1, &host(&counter)));
        let exec = instantiate(g);
        let s = fx.stream(0);
        ok(cuGraphLaunch(exec, s));
        assert_eq!(cuStreamSynchronize(s), fault());
        assert_eq!(counter.load(Ordering::SeqCst), 0);
        assert_eq!(cuGraphLaunch(exec, s), fault());
        ok(cuGraphExecDestroy(exec));
        ok(cuGraphDestroy(g));
    }
    fx.destroy();
    no_leaks();
}

/// `cuGraphExecUpdate`: a graph of the same shape updates the exec's parameters;
/// another type, another edge or another node count fails with the reason and the
/// nodes at fault.
#[test]
fn exec_update_success_and_failures() {
    let _g = serial();
    let fx = Fx::new();
    let (a, b, c1, c2) = (alloc(N * 4), alloc(N * 4), alloc(N * 4), alloc(N * 4));
    let mut out = vec![0f32; N];
    // SAFETY: softcuda's exports with valid pointers.
    unsafe {
        ok(cuMemsetD32_v2(a, ONE, N));
        ok(cuMemsetD32_v2(b, TWO, N));
        let build = |c: u64, args: &mut VaddArgs, memset_first: bool| {
            let g = graph();
            let (mut x, mut y) = (null_mut(), null_mut());
            if memset_first {
                ok(cuGraphAddMemsetNode(
                    &mut x,
                    g,
                    null(),
                    0,
                    &memset_params(c, 0),
                    fx.ctx,
                ));
            } else {
                ok(cuGraphAddEmptyNode(&mut x, g, null(), 0));
            }
            args.c = c;
            ok(cuGraphAddKernelNode_v2(
                &mut y,
                g,
                &x,
                1,
                &kernel_params(fx.vadd, args),
            ));
            (g, x, y)
        };
        let mut args = VaddArgs::new(a, b, c1);
        let (g1, _, _) = build(c1, &mut args, true);
        let exec = instantiate(g1);
        // Same shape, other output: success.
        let (g2, _, _) = build(c2, &mut args, true);
        let mut info = CUgraphExecUpdateResultInfo {
            result: 99,
            errorNode: std::ptr::dangling_mut::<c_void>(),
            errorFromNode: std::ptr::dangling_mut::<c_void>(),
        };
        ok(cuGraphExecUpdate_v2(exec, g2, &mut info));
        assert_eq!(info.result, CU_GRAPH_EXEC_UPDATE_SUCCESS);
        assert!(info.errorNode.is_null() && info.errorFromNode.is_null());
        ok(cuGraphLaunch(exec, null_mut()));
        ok(cuMemcpyDtoH_v2(out.as_mut_ptr().cast(), c2, N * 4));
        assert!(out.iter().all(|&x| x == 3.0));
        // Another node type.
        let (g3, x3, _) = build(c2, &mut args, false);
        assert_eq!(
            cuGraphExecUpdate_v2(exec, g3, &mut info),
            code::GRAPH_EXEC_UPDATE_FAILURE
        );
        assert_eq!(info.result, CU_GRAPH_EXEC_UPDATE_ERROR_NODE_TYPE_CHANGED);
        assert_eq!(info.errorNode, x3);
        // The 10.2 ABI says the same.
        let (mut node, mut result) = (null_mut(), 0);
        assert_eq!(
            cuGraphExecUpdate(exec, g3, &mut node, &mut result),
            code::GRAPH_EXEC_UPDATE_FAILURE
        );
        assert_eq!(
            (node, result),
            (x3, CU_GRAPH_EXEC_UPDATE_ERROR_NODE_TYPE_CHANGED)
        );
        // Another topology: the edge x -> y removed.
        let (g4, x4, y4) = build(c2, &mut args, true);
        ok(cuGraphRemoveDependencies(g4, &x4, &y4, 1));
        assert_eq!(
            cuGraphExecUpdate_v2(exec, g4, &mut info),
            code::GRAPH_EXEC_UPDATE_FAILURE
        );
        assert_eq!(info.result, CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED);
        assert_eq!((info.errorNode, info.errorFromNode), (y4, x4));
        // One node more.
        let (g5, _, y5) = build(c2, &mut args, true);
        let mut extra = null_mut();
        ok(cuGraphAddEmptyNode(&mut extra, g5, &y5, 1));
        assert_eq!(
            cuGraphExecUpdate_v2(exec, g5, &mut info),
            code::GRAPH_EXEC_UPDATE_FAILURE
        );
        assert_eq!(info.result, CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED);
        assert_eq!(info.errorNode, extra);
        // The exec still does what g2 said.
        ok(cuMemsetD32_v2(c2, 0, N));
        ok(cuGraphLaunch(exec, null_mut()));
        ok(cuMemcpyDtoH_v2(out.as_mut_ptr().cast(), c2, N * 4));
        assert!(out.iter().all(|&x| x == 3.0));
        ok(cuGraphExecDestroy(exec));
        for g in [g1, g2, g3, g4, g5] {
            ok(cuGraphDestroy(g));
        }
    }
    fx.destroy();
    no_leaks();
}

fn capture_status(s: CUstream) -> CUstreamCaptureStatus {
    let mut st = 99;
    // SAFETY: a valid out-pointer.
    ok(unsafe { cuStreamIsCapturing(s, &mut st) });
    st
}

/// Work issued to a capturing stream becomes a chain of nodes and does not run;
/// the graph runs it.
#[test]
fn capture_turns_stream_work_into_a_graph() {
    let _g = serial();
    let fx = Fx::new();
    let (a, b, c) = (alloc(N * 4), alloc(N * 4), alloc(N * 4));
    let mut out = vec![0f32; N];
    let counter = AtomicU32::new(0);
    let mut args = VaddArgs::new(a, b, c);
    // SAFETY: softcuda's exports with valid pointers.
    unsafe {
        let s = fx.stream(0);
        assert_eq!(capture_status(s), CU_STREAM_CAPTURE_STATUS_NONE);
        ok(cuStreamBeginCapture_v2(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
        assert_eq!(
            cuStreamBeginCapture_v2(s, CU_STREAM_CAPTURE_MODE_GLOBAL),
            code::ILLEGAL_STATE
        );
        assert_eq!(capture_status(s), CU_STREAM_CAPTURE_STATUS_ACTIVE);
        ok(cuMemsetD32Async(a, ONE, N, s));
        ok(cuMemsetD32Async(b, TWO, N, s));
        ok(cuLaunchKernel(
            fx.vadd,
            8,
            1,
            1,
            128,
            1,
            1,
            0,
            s,
            args.ptrs.as_mut_ptr(),
            null_mut(),
        ));
        // The captured arguments are copies.
        args.c = a;
        ok(cuMemcpyDtoHAsync_v2(out.as_mut_ptr().cast(), c, N * 4, s));
        ok(cuLaunchHostFunc(
            s,
            Some(bump),
            (&raw const counter).cast_mut().cast(),
        ));
        // Capture info, in its three ABIs.
        let (mut st, mut id, mut id2) = (0, 0, 0);
        let (mut gr, mut deps, mut n) = (null_mut(), null(), 0);
        ok(cuStreamGetCaptureInfo(s, &mut st, &mut id));
        ok(cuStreamGetCaptureInfo_v2(
            s, &mut st, &mut id2, &mut gr, &mut deps, &mut n,
        ));
        assert_eq!((st, id), (CU_STREAM_CAPTURE_STATUS_ACTIVE, id2));
        assert_eq!(n, 1);
        assert_eq!(node_type(*deps), CU_GRAPH_NODE_TYPE_HOST);
        let mut edges = null();
        ok(cuStreamGetCaptureInfo_v3(
            s,
            &mut st,
            null_mut(),
            null_mut(),
            &mut deps,
            &mut edges,
            &mut n,
        ));
        assert_eq!(*edges, CUgraphEdgeData::default());
        assert_eq!(nodes_of(gr).len(), 5);
        // Nothing ran.
        std::thread::sleep(Duration::from_millis(20));
        assert_eq!(counter.load(Ordering::SeqCst), 0);
        assert!(out.iter().all(|&x| x == 0.0));

        let mut g = null_mut();
        ok(cuStreamEndCapture(s, &mut g));
        assert_eq!(g, gr);
        assert_eq!(capture_status(s), CU_STREAM_CAPTURE_STATUS_NONE);
        let mut tmp = null_mut();
        assert_eq!(cuStreamEndCapture(s, &mut tmp), code::ILLEGAL_STATE);
        let nodes = nodes_of(g);
        let types: Vec<_> = nodes.iter().map(|&x| node_type(x)).collect();
        assert_eq!(
            types,
            [
                CU_GRAPH_NODE_TYPE_MEMSET,
                CU_GRAPH_NODE_TYPE_MEMSET,
                CU_GRAPH_NODE_TYPE_KERNEL,
                CU_GRAPH_NODE_TYPE_MEMCPY,
                CU_GRAPH_NODE_TYPE_HOST
            ]
        );
        let chain: Vec<_> = nodes.windows(2).map(|w| (w[0], w[1])).collect();
        assert_eq!(edges_of(g), chain);

        let exec = instantiate(g);
        ok(cuGraphLaunch(exec, s));
        ok(cuStreamSynchronize(s));
        assert!(out.iter().all(|&x| x == 3.0));
        assert_eq!(counter.load(Ordering::SeqCst), 1);
        ok(cuGraphExecDestroy(exec));
        ok(cuGraphDestroy(g));
        ok(cuStreamDestroy_v2(s));
    }
    fx.destroy();
    no_leaks();
}

/// Begins a capture on a new stream of `fx`, runs `illegal` (which must return
/// `expect`), and checks that the capture was invalidated: later work on the stream
/// says so, and ending it gives no graph.
fn invalidated_by(
    fx: &Fx,
    flags: u32,
    expect: CUresult,
    illegal: impl FnOnce(CUstream) -> CUresult,
) {
    // SAFETY: softcuda's exports with valid pointers.
    unsafe {
        let s = fx.stream(flags);
        let d = alloc(64);
        ok(cuStreamBeginCapture_v2(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
        ok(cuMemsetD8Async(d, 1, 64, s));
        assert_eq!(illegal(s), expect);
        assert_eq!(capture_status(s), CU_STREAM_CAPTURE_STATUS_INVALIDATED);
        assert_eq!(
            cuMemsetD8Async(d, 1, 64, s),
            code::STREAM_CAPTURE_INVALIDATED
        );
        let mut g = std::ptr::dangling_mut::<c_void>();
        assert_eq!(
            cuStreamEndCapture(s, &mut g),
            code::STREAM_CAPTURE_INVALIDATED
        );
        assert!(g.is_null());
        assert_eq!(capture_status(s), CU_STREAM_CAPTURE_STATUS_NONE);
        ok(cuStreamDestroy_v2(s));
        ok(cuMemFree_v2(d));
    }
}

#[test]
fn calls_illegal_under_capture_invalidate_it() {
    extern "C" fn callback(_s: CUstream, _st: CUresult, _d: *mut c_void) {}
    let _g = serial();
    let fx = Fx::new();
    // SAFETY: softcuda's exports with valid pointers.
    unsafe {
        invalidated_by(&fx, 0, code::STREAM_CAPTURE_UNSUPPORTED, |s| {
            cuStreamSynchronize(s)
        });
        invalidated_by(&fx, 0, code::STREAM_CAPTURE_UNSUPPORTED, |s| {
            cuStreamQuery(s)
        });
        invalidated_by(&fx, 0, code::STREAM_CAPTURE_UNSUPPORTED, |_| {
            cuCtxSynchronize()
        });
        invalidated_by(&fx, 0, code::STREAM_CAPTURE_UNSUPPORTED, |s| {
            cuStreamAddCallback(s, Some(callback), null_mut(), 0)
        });
        // Synchronous work on the legacy stream would wait for the capturing
        // blocking stream.
        let d = alloc(64);
        invalidated_by(&fx, 0, code::STREAM_CAPTURE_IMPLICIT, |_| {
            cuMemsetD8_v2(d, 0, 64)
        });
        invalidated_by(&fx, 0, code::STREAM_CAPTURE_IMPLICIT, |_| {
            cuStreamSynchronize(null_mut())
        });
        // With a non-blocking stream it is an unsafe call, refused in global mode.
        invalidated_by(&fx, 0x1, code::STREAM_CAPTURE_UNSUPPORTED, |_| {
            cuMemsetD8_v2(d, 0, 64)
        });
        invalidated_by(&fx, 0x1, code::STREAM_CAPTURE_UNSUPPORTED, |_| {
            let mut p = 0;
            cuMemAlloc_v2(&mut p, 64)
        });
        // A captured event cannot be queried or waited for.
        let ev = fx.event();
        invalidated_by(&fx, 0, code::CAPTURED_EVENT, |s| {
            ok(cuEventRecord(ev, s));
            cuEventQuery(ev)
        });
        invalidated_by(&fx, 0, code::CAPTURED_EVENT, |s| {
            ok(cuEventRecord(ev, s));
            cuEventSynchronize(ev)
        });
        // Once recorded outside capture it is an ordinary event again.
        ok(cuEventRecord(ev, null_mut()));
        ok(cuEventSynchronize(ev));
        // Waiting for an event recorded outside any capture isolates nothing: it
        // needs CU_EVENT_WAIT_EXTERNAL.
        invalidated_by(&fx, 0, code::STREAM_CAPTURE_ISOLATION, |s| {
            cuStreamWaitEvent(s, ev, 0)
        });
        // The legacy stream itself cannot capture.
        assert_eq!(
            cuStreamBeginCapture_v2(null_mut(), CU_STREAM_CAPTURE_MODE_GLOBAL),
            code::STREAM_CAPTURE_UNSUPPORTED
        );
        ok(cuEventDestroy_v2(ev));
        ok(cuMemFree_v2(d));
    }
    fx.destroy();
    no_leaks();
}

/// Runs `f` on a new thread with `ctx` current there.
fn on_thread<T: Send>(ctx: CUcontext, f: impl FnOnce() -> T + Send) -> T {
    let ctx = ctx as usize;
    std::thread::scope(|sc| {
        sc.spawn(move || {
            // SAFETY: a live context.
            ok(unsafe { cuCtxSetCurrent(ctx as CUcontext) });
            f()
        })
        .join()
        .unwrap()
    })
}

fn try_alloc() -> CUresult {
    let mut p = 0;
    // SAFETY: a valid out-pointer.
    let r = unsafe { cuMemAlloc_v2(&mut p, 64) };
    if r == code::SUCCESS {
        // SAFETY: just allocated.
        ok(unsafe { cuMemFree_v2(p) });
    }
    r
}

/// Which threads may make unsafe calls (`cuMemAlloc`) during a capture, by the
/// capture's mode and the thread's interaction mode.
#[test]
fn capture_modes_decide_who_may_make_unsafe_calls() {
    let _g = serial();
    let fx = Fx::new();
    // SAFETY: softcuda's exports with valid pointers.
    unsafe {
        let s = fx.stream(0x1);
        let end_ok = |s: CUstream| {
            let mut g = null_mut();
            ok(cuStreamEndCapture(s, &mut g));
            ok(cuGraphDestroy(g));
        };
        let end_invalid = |s: CUstream| {
            let mut g = null_mut();
            assert_eq!(
                cuStreamEndCapture(s, &mut g),
                code::STREAM_CAPTURE_INVALIDATED
            );
        };
        // GLOBAL: other threads in global mode may not; in relaxed mode they may.
        ok(cuStreamBeginCapture_v2(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
        let relaxed = on_thread(fx.ctx, || {
            let mut m = CU_STREAM_CAPTURE_MODE_RELAXED;
            ok(cuThreadExchangeStreamCaptureMode(&mut m));
            assert_eq!(m, CU_STREAM_CAPTURE_MODE_GLOBAL);
            try_alloc()
        });
        assert_eq!(relaxed, code::SUCCESS);
        assert_eq!(capture_status(s), CU_STREAM_CAPTURE_STATUS_ACTIVE);
        assert_eq!(
            on_thread(fx.ctx, try_alloc),
            code::STREAM_CAPTURE_UNSUPPORTED
        );
        end_invalid(s);
        // THREAD_LOCAL: other threads may; the capturing thread may not.
        ok(cuStreamBeginCapture_v2(
            s,
            CU_STREAM_CAPTURE_MODE_THREAD_LOCAL,
        ));
        assert_eq!(on_thread(fx.ctx, try_alloc), code::SUCCESS);
        // ... nor may another thread end it.
        let sv = s as usize;
        let other_end = on_thread(fx.ctx, move || {
            let mut g = null_mut();
            cuStreamEndCapture(sv as CUstream, &mut g)
        });
        assert_eq!(other_end, code::STREAM_CAPTURE_WRONG_THREAD);
        assert_eq!(capture_status(s), CU_STREAM_CAPTURE_STATUS_ACTIVE);
        assert_eq!(try_alloc(), code::STREAM_CAPTURE_UNSUPPORTED);
        end_invalid(s);
        // RELAXED: everyone may.
        ok(cuStreamBeginCapture_v2(s, CU_STREAM_CAPTURE_MODE_RELAXED));
        assert_eq!(try_alloc(), code::SUCCESS);
        assert_eq!(on_thread(fx.ctx, try_alloc), code::SUCCESS);
        end_ok(s);
        // The capturing thread in relaxed interaction mode may, even in a global
        // capture.
        ok(cuStreamBeginCapture_v2(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
        let mut m = CU_STREAM_CAPTURE_MODE_RELAXED;
        ok(cuThreadExchangeStreamCaptureMode(&mut m));
        assert_eq!(try_alloc(), code::SUCCESS);
        ok(cuThreadExchangeStreamCaptureMode(&mut m));
        assert_eq!(m, CU_STREAM_CAPTURE_MODE_RELAXED);
        end_ok(s);
        let mut bad = 7;
        assert_eq!(
            cuThreadExchangeStreamCaptureMode(&mut bad),
            code::INVALID_VALUE
        );
        assert_eq!(cuStreamBeginCapture_v2(s, 3), code::INVALID_VALUE);
        ok(cuStreamDestroy_v2(s));
    }
    fx.destroy();
    no_leaks();
}

/// Fork and join through events: a second stream joins the capture by waiting for
/// an event recorded in it, works in parallel, and is joined back.
#[test]
fn fork_and_join_through_events() {
    let _g = serial();
    let fx = Fx::new();
    let (a, b, c) = (alloc(N * 4), alloc(N * 4), alloc(N * 4));
    let mut out = vec![0f32; N];
    let mut args = VaddArgs::new(a, b, c);
    // SAFETY: softcuda's exports with valid pointers.
    unsafe {
        let (s1, s2) = (fx.stream(0), fx.stream(0));
        let (fork, join) = (fx.event(), fx.event());
        ok(cuStreamBeginCapture_v2(s1, CU_STREAM_CAPTURE_MODE_GLOBAL));
        ok(cuMemsetD32Async(a, ONE, N, s1));
        ok(cuEventRecord(fork, s1));
        ok(cuStreamWaitEvent(s2, fork, 0));
        assert_eq!(capture_status(s2), CU_STREAM_CAPTURE_STATUS_ACTIVE);
        let (mut id1, mut id2) = (0, 0);
        let mut st = 0;
        ok(cuStreamGetCaptureInfo(s1, &mut st, &mut id1));
        ok(cuStreamGetCaptureInfo(s2, &mut st, &mut id2));
        assert_eq!(id1, id2);
        ok(cuMemsetD32Async(b, TWO, N, s2)); // in parallel with s1's work
        ok(cuMemsetD32Async(c, 0, N, s1));
        ok(cuEventRecord(join, s2));
        ok(cuStreamWaitEvent(s1, join, 0));
        ok(cuLaunchKernel(
            fx.vadd,
            8,
            1,
            1,
            128,
            1,
            1,
            0,
            s1,
            args.ptrs.as_mut_ptr(),
            null_mut(),
        ));
        ok(cuMemcpyDtoHAsync_v2(out.as_mut_ptr().cast(), c, N * 4, s1));
        // Only the origin stream can end it.
        let mut g = null_mut();
        assert_eq!(
            cuStreamEndCapture(s2, &mut g),
            code::STREAM_CAPTURE_UNMATCHED
        );
        assert_eq!(capture_status(s1), CU_STREAM_CAPTURE_STATUS_INVALIDATED);
        assert_eq!(
            cuStreamEndCapture(s1, &mut g),
            code::STREAM_CAPTURE_INVALIDATED
        );
        assert_eq!(capture_status(s2), CU_STREAM_CAPTURE_STATUS_NONE);

        // Again, ended properly.
        ok(cuStreamBeginCapture_v2(s1, CU_STREAM_CAPTURE_MODE_GLOBAL));
        ok(cuMemsetD32Async(a, ONE, N, s1));
        ok(cuEventRecord(fork, s1));
        ok(cuStreamWaitEvent(s2, fork, 0));
        ok(cuMemsetD32Async(b, TWO, N, s2));
        ok(cuMemsetD32Async(c, 0, N, s1));
        ok(cuEventRecord(join, s2));
        ok(cuStreamWaitEvent(s1, join, 0));
        ok(cuLaunchKernel(
            fx.vadd,
            8,
            1,
            1,
            128,
            1,
            1,
            0,
            s1,
            args.ptrs.as_mut_ptr(),
            null_mut(),
        ));
        ok(cuMemcpyDtoHAsync_v2(out.as_mut_ptr().cast(), c, N * 4, s1));
        ok(cuStreamEndCapture(s1, &mut g));
        assert_eq!(capture_status(s2), CU_STREAM_CAPTURE_STATUS_NONE);
        let nodes = nodes_of(g);
        assert_eq!(nodes.len(), 5);
        // memset a -> memset b (s2), memset a -> memset c, both -> kernel -> copy.
        let mut edges = edges_of(g);
        edges.sort();
        let mut want = vec![
            (nodes[0], nodes[1]),
            (nodes[0], nodes[2]),
            (nodes[2], nodes[3]),
            (nodes[1], nodes[3]),
            (nodes[3], nodes[4]),
        ];
        want.sort();
        assert_eq!(edges, want);
        let exec = instantiate(g);
        ok(cuGraphLaunch(exec, s2));
        ok(cuStreamSynchronize(s2));
        assert!(out.iter().all(|&x| x == 3.0));
        // The events are ordinary events again after the capture.
        ok(cuEventQuery(fork));
        ok(cuGraphExecDestroy(exec));
        ok(cuGraphDestroy(g));
        for s in [s1, s2] {
            ok(cuStreamDestroy_v2(s));
        }
        ok(cuEventDestroy_v2(fork));
        ok(cuEventDestroy_v2(join));
    }
    fx.destroy();
    no_leaks();
}

/// A forked stream whose work the origin stream never waits for: unjoined.
#[test]
fn an_unjoined_fork_fails_the_capture() {
    let _g = serial();
    let fx = Fx::new();
    let d = alloc(64);
    // SAFETY: softcuda's exports with valid pointers.
    unsafe {
        let (s1, s2) = (fx.stream(0), fx.stream(0));
        let fork = fx.event();
        ok(cuStreamBeginCapture_v2(s1, CU_STREAM_CAPTURE_MODE_RELAXED));
        ok(cuMemsetD8Async(d, 1, 64, s1));
        ok(cuEventRecord(fork, s1));
        ok(cuStreamWaitEvent(s2, fork, 0));
        ok(cuMemsetD8Async(d, 2, 64, s2));
        let mut g = std::ptr::dangling_mut::<c_void>();
        assert_eq!(
            cuStreamEndCapture(s1, &mut g),
            code::STREAM_CAPTURE_UNJOINED
        );
        assert!(g.is_null());
        assert_eq!(capture_status(s1), CU_STREAM_CAPTURE_STATUS_NONE);
        assert_eq!(capture_status(s2), CU_STREAM_CAPTURE_STATUS_NONE);
        // A fork that did nothing needs no join.
        ok(cuStreamBeginCapture_v2(s1, CU_STREAM_CAPTURE_MODE_RELAXED));
        ok(cuMemsetD8Async(d, 1, 64, s1));
        ok(cuEventRecord(fork, s1));
        ok(cuStreamWaitEvent(s2, fork, 0));
        ok(cuMemsetD8Async(d, 3, 64, s1));
        ok(cuStreamEndCapture(s1, &mut g));
        assert_eq!(nodes_of(g).len(), 2);
        ok(cuGraphDestroy(g));
        // External event nodes: a record and a wait become nodes.
        ok(cuStreamBeginCapture_v2(s1, CU_STREAM_CAPTURE_MODE_GLOBAL));
        ok(cuEventRecordWithFlags(fork, s1, CU_EVENT_EXTERNAL));
        ok(cuStreamWaitEvent(s1, fork, CU_EVENT_EXTERNAL));
        ok(cuStreamEndCapture(s1, &mut g));
        let types: Vec<_> = nodes_of(g).into_iter().map(node_type).collect();
        assert_eq!(
            types,
            [
                CU_GRAPH_NODE_TYPE_EVENT_RECORD,
                CU_GRAPH_NODE_TYPE_WAIT_EVENT
            ]
        );
        ok(cuGraphDestroy(g));
        // Outside capture, CU_EVENT_WAIT_EXTERNAL is invalid.
        assert_eq!(
            cuStreamWaitEvent(s1, fork, CU_EVENT_EXTERNAL),
            code::INVALID_VALUE
        );
        // Destroying the capturing stream ends the capture.
        ok(cuStreamBeginCapture_v2(s1, CU_STREAM_CAPTURE_MODE_GLOBAL));
        ok(cuMemsetD8Async(d, 1, 64, s1));
        ok(cuStreamDestroy_v2(s1));
        ok(cuStreamDestroy_v2(s2));
        ok(cuEventDestroy_v2(fork));
        ok(cuMemFree_v2(d));
    }
    fx.destroy();
    no_leaks();
}

/// The loader finds the graph functions at each ABI, and the handles they make are
/// counted until destroyed.
#[test]
fn proc_address_and_live_counts() {
    let _g = serial();
    let fx = Fx::new();
    // SAFETY: softcuda's exports with valid pointers.
    unsafe {
        let mut p = null_mut();
        for (name, ver) in [
            (c"cuGraphCreate", 12090),
            (c"cuGraphAddKernelNode", 10000),
            (c"cuGraphAddKernelNode", 12090),
            (c"cuGraphExecUpdate", 12090),
            (c"cuStreamBeginCapture", 12090),
            (c"cuStreamGetCaptureInfo", 12030),
            (c"cuGraphInstantiateWithFlags", 12090),
        ] {
            ok(cuGetProcAddress_v2(
                name.as_ptr(),
                &mut p,
                ver,
                0,
                null_mut(),
            ));
            assert!(!p.is_null());
        }
        let g = graph();
        let exec = instantiate(g);
        let c = control::live_counts();
        assert_eq!((c.graphs, c.graph_execs), (1, 1));
        assert_eq!(control::softcuda_live_count(c"graphs".as_ptr()), 1);
        assert_eq!(control::softcuda_live_count(c"graph_execs".as_ptr()), 1);
        ok(cuGraphExecDestroy(exec));
        ok(cuGraphDestroy(g));
    }
    fx.destroy();
    no_leaks();
}

/// softcuda's mirror types have the header's layouts.
#[test]
fn graph_struct_layouts_match_cuda_h() {
    use std::mem::{offset_of, size_of};
    assert_eq!(size_of::<CUDA_KERNEL_NODE_PARAMS>(), 72);
    assert_eq!(offset_of!(CUDA_KERNEL_NODE_PARAMS, kernelParams), 40);
    assert_eq!(offset_of!(CUDA_KERNEL_NODE_PARAMS, kern), 56);
    assert_eq!(offset_of!(CUDA_KERNEL_NODE_PARAMS, ctx), 64);
    assert_eq!(size_of::<CUDA_KERNEL_NODE_PARAMS_v1>(), 56);
    assert_eq!(size_of::<CUDA_MEMSET_NODE_PARAMS>(), 40);
    assert_eq!(offset_of!(CUDA_MEMSET_NODE_PARAMS, elementSize), 20);
    assert_eq!(size_of::<CUDA_HOST_NODE_PARAMS>(), 16);
    assert_eq!(size_of::<CUgraphExecUpdateResultInfo>(), 24);
    assert_eq!(offset_of!(CUgraphExecUpdateResultInfo, errorNode), 8);
    assert_eq!(size_of::<CUgraphEdgeData>(), 8);
    assert_eq!(size_of::<CUDA_GRAPH_INSTANTIATE_PARAMS>(), 32);
    assert_eq!(offset_of!(CUDA_GRAPH_INSTANTIATE_PARAMS, result_out), 24);
}

/// Destroying the context of a capturing stream ends the capture and its graph.
#[test]
fn destroying_the_context_ends_its_captures() {
    let _g = serial();
    let fx = Fx::new();
    let d = alloc(64);
    // SAFETY: softcuda's exports with valid pointers.
    unsafe {
        let s = fx.stream(0);
        ok(cuStreamBeginCapture_v2(s, CU_STREAM_CAPTURE_MODE_RELAXED));
        ok(cuMemsetD8Async(d, 1, 64, s));
        assert_eq!(control::live_counts().graphs, 1);
    }
    fx.destroy();
    no_leaks();
    // Capture hooks are idle again: ordinary work is unaffected.
    let fx = Fx::new();
    let d = alloc(64);
    // SAFETY: softcuda's exports with valid pointers.
    unsafe {
        ok(cuMemsetD8_v2(d, 1, 64));
        ok(cuCtxSynchronize());
    }
    fx.destroy();
    no_leaks();
}

/// Launches of one exec on two streams never overlap: each follows the previous.
#[test]
fn launches_of_one_exec_are_ordered() {
    static RUNNING: AtomicU32 = AtomicU32::new(0);
    static OVERLAPS: AtomicU32 = AtomicU32::new(0);
    static RUNS: AtomicU32 = AtomicU32::new(0);
    extern "C" fn slow(_: *mut c_void) {
        if RUNNING.fetch_add(1, Ordering::SeqCst) > 0 {
            OVERLAPS.fetch_add(1, Ordering::SeqCst);
        }
        std::thread::sleep(Duration::from_millis(30));
        RUNS.fetch_add(1, Ordering::SeqCst);
        RUNNING.fetch_sub(1, Ordering::SeqCst);
    }
    let _g = serial();
    let fx = Fx::new();
    // SAFETY: softcuda's exports with valid pointers.
    unsafe {
        let g = graph();
        let mut h = null_mut();
        let hp = CUDA_HOST_NODE_PARAMS {
            fn_: Some(slow),
            userData: null_mut(),
        };
        ok(cuGraphAddHostNode(&mut h, g, null(), 0, &hp));
        let exec = instantiate(g);
        let (s1, s2) = (fx.stream(0), fx.stream(0x1));
        ok(cuGraphLaunch(exec, s1));
        ok(cuGraphLaunch(exec, s2));
        ok(cuGraphLaunch(exec, s1));
        ok(cuStreamSynchronize(s2));
        ok(cuStreamSynchronize(s1));
        assert_eq!(RUNS.load(Ordering::SeqCst), 3);
        assert_eq!(OVERLAPS.load(Ordering::SeqCst), 0);
        ok(cuGraphExecDestroy(exec));
        ok(cuGraphDestroy(g));
        ok(cuStreamDestroy_v2(s1));
        ok(cuStreamDestroy_v2(s2));
    }
    fx.destroy();
    no_leaks();
}

// ---- memory nodes -------------------------------------------------------------------

fn alloc_params(bytes: usize) -> CUDA_MEM_ALLOC_NODE_PARAMS {
    CUDA_MEM_ALLOC_NODE_PARAMS {
        poolProps: pinned_pool_props(),
        accessDescs: null(),
        accessDescCount: 0,
        bytesize: bytes,
        dptr: 0,
    }
}

fn launch_args(p: &mut u64, v: &mut u32) -> [*mut c_void; 2] {
    [(p as *mut u64).cast(), (v as *mut u32).cast()]
}

/// Alloc → memset → copy to the host → free: the memory exists only in that window,
/// at the same address every launch; memory nodes cannot be cloned, embedded or
/// removed, and a graph with them has one exec at a time.
#[test]
fn memory_nodes_allocate_for_their_window_only() {
    let _g = serial();
    let fx = Fx::new();
    let bytes = N * 4;
    let mut host_buf = vec![0f32; N];
    // SAFETY: softcuda's exports with valid pointers.
    unsafe {
        let g = graph();
        let mut ap = alloc_params(bytes);
        let (mut a, mut m, mut c, mut f) = (null_mut(), null_mut(), null_mut(), null_mut());
        ok(cuGraphAddMemAllocNode(&mut a, g, null(), 0, &mut ap));
        let d = ap.dptr;
        assert_ne!(d, 0);
        assert_eq!(node_type(a), CU_GRAPH_NODE_TYPE_MEM_ALLOC);
        // Not accessible before the node runs.
        assert_eq!(control::live_counts().allocations, 0);
        let mut probe = [0u8; 4];
        assert_eq!(
            cuMemcpyDtoH_v2(probe.as_mut_ptr().cast(), d, 4),
            code::INVALID_VALUE
        );
        ok(cuGraphAddMemsetNode(
            &mut m,
            g,
            &a,
            1,
            &memset_params(d, TWO),
            fx.ctx,
        ));
        let cp = copy_dtoh(host_buf.as_mut_ptr(), d, bytes);
        ok(cuGraphAddMemcpyNode(&mut c, g, &m, 1, &cp, fx.ctx));
        ok(cuGraphAddMemFreeNode(&mut f, g, &c, 1, d));
        let mut got = alloc_params(0);
        ok(cuGraphMemAllocNodeGetParams(a, &mut got));
        assert_eq!((got.dptr, got.bytesize), (d, bytes));
        let mut fd = 0;
        ok(cuGraphMemFreeNodeGetParams(f, &mut fd));
        assert_eq!(fd, d);
        assert_eq!(cuGraphMemFreeNodeGetParams(a, &mut fd), code::INVALID_VALUE);
        // Errors.
        let mut other = null_mut();
        assert_eq!(
            cuGraphAddMemFreeNode(&mut other, g, &f, 1, d),
            code::INVALID_VALUE
        );
        assert_eq!(
            cuGraphAddMemFreeNode(&mut other, g, null(), 0, d + 4),
            code::INVALID_VALUE
        );
        let mut bad = alloc_params(bytes);
        bad.poolProps.location.id = 7;
        assert_eq!(
            cuGraphAddMemAllocNode(&mut other, g, null(), 0, &mut bad),
            code::INVALID_VALUE
        );
        let mut bad = alloc_params(bytes);
        bad.poolProps.allocType = 0;
        assert_eq!(
            cuGraphAddMemAllocNode(&mut other, g, null(), 0, &mut bad),
            code::INVALID_VALUE
        );
        assert_eq!(
            cuGraphAddMemAllocNode(&mut other, g, null(), 0, &mut alloc_params(0)),
            code::INVALID_VALUE
        );
        let mut clone = null_mut();
        assert_eq!(cuGraphClone(&mut clone, g), code::NOT_SUPPORTED);
        let parent = graph();
        assert_eq!(
            cuGraphAddChildGraphNode(&mut other, parent, null(), 0, g),
            code::NOT_SUPPORTED
        );
        assert_eq!(cuGraphDestroyNode(m), code::NOT_SUPPORTED);
        assert_eq!(cuGraphRemoveDependencies(g, &a, &m, 1), code::NOT_SUPPORTED);
        assert_eq!(cuMemFree_v2(d), code::INVALID_VALUE);
        let exec = instantiate(g);
        let mut exec2 = null_mut();
        assert_eq!(
            cuGraphInstantiateWithFlags(&mut exec2, g, 0),
            code::INVALID_VALUE
        );
        let s = fx.stream(0);
        for round in 0..2 {
            host_buf.fill(0.0);
            ok(cuGraphLaunch(exec, s));
            ok(cuStreamSynchronize(s));
            assert!(host_buf.iter().all(|x| *x == 2.0), "round {round}");
            assert_eq!(control::live_counts().allocations, 0);
        }
        // After the free node, a kernel's access is an illegal address (sticky).
        ok(cuGraphExecDestroy(exec));
        ok(cuGraphDestroy(g));
        ok(cuGraphDestroy(parent));
        let (mut p, mut v) = (d, 1u32);
        let mut args = launch_args(&mut p, &mut v);
        let r = cuLaunchKernel(
            fx.poke,
            1,
            1,
            1,
            1,
            1,
            1,
            0,
            s,
            args.as_mut_ptr(),
            null_mut(),
        );
        ok(r);
        assert_eq!(cuStreamSynchronize(s), fault());
    }
    fx.destroy();
    no_leaks();
}

/// An allocation its graph does not free stays after the launch, until `cuMemFree`;
/// relaunching before is refused, unless the exec frees it on launch.
#[test]
fn an_allocation_without_a_free_node_outlives_the_launch() {
    let _g = serial();
    let fx = Fx::new();
    let bytes = N * 4;
    let mut host_buf = vec![0f32; N];
    // SAFETY: softcuda's exports with valid pointers.
    unsafe {
        let g = graph();
        let mut ap = alloc_params(bytes);
        let (mut a, mut m) = (null_mut(), null_mut());
        ok(cuGraphAddMemAllocNode(&mut a, g, null(), 0, &mut ap));
        let d = ap.dptr;
        ok(cuGraphAddMemsetNode(
            &mut m,
            g,
            &a,
            1,
            &memset_params(d, ONE),
            fx.ctx,
        ));
        let exec = instantiate(g);
        let s = fx.stream(0);
        ok(cuGraphLaunch(exec, s));
        ok(cuStreamSynchronize(s));
        assert_eq!(control::live_counts().allocations, 1);
        ok(cuMemcpyDtoH_v2(host_buf.as_mut_ptr().cast(), d, bytes));
        assert!(host_buf.iter().all(|x| *x == 1.0));
        assert_eq!(cuGraphLaunch(exec, s), code::INVALID_VALUE);
        ok(cuMemFree_v2(d));
        assert_eq!(control::live_counts().allocations, 0);
        assert_eq!(cuMemFree_v2(d), code::INVALID_VALUE);
        ok(cuGraphLaunch(exec, s));
        ok(cuStreamSynchronize(s));
        ok(cuGraphExecDestroy(exec));
        // The memory outlives the exec and the graph until freed.
        ok(cuGraphDestroy(g));
        assert_eq!(control::live_counts().allocations, 1);
        ok(cuMemcpyDtoH_v2(host_buf.as_mut_ptr().cast(), d, bytes));
        ok(cuMemFree_v2(d));
        // Auto free on launch.
        let g = graph();
        let mut ap = alloc_params(bytes);
        ok(cuGraphAddMemAllocNode(&mut a, g, null(), 0, &mut ap));
        let mut exec = null_mut();
        ok(cuGraphInstantiateWithFlags(&mut exec, g, 1));
        for _ in 0..3 {
            ok(cuGraphLaunch(exec, s));
        }
        ok(cuStreamSynchronize(s));
        assert_eq!(control::live_counts().allocations, 1);
        ok(cuMemFree_v2(ap.dptr));
        ok(cuGraphExecDestroy(exec));
        ok(cuGraphDestroy(g));
    }
    fx.destroy();
    no_leaks();
}

// ---- conditional nodes ----------------------------------------------------------------

const CONDITIONAL: &str = concat!(include_str!("../../kernels/conditional.ptx"), "\0");

/// `Slice<unsigned>` of kernels/conditional.cu.
#[repr(C)]
struct Slice {
    ptr: u64,
    len: u64,
}

struct CondFx {
    countdown: CUfunction,
    bump: CUfunction,
    set_condition: CUfunction,
}

fn cond_fx() -> CondFx {
    // SAFETY: softcuda's exports with valid pointers.
    unsafe {
        let mut m = null_mut();
        ok(cuModuleLoadData(&mut m, CONDITIONAL.as_ptr().cast()));
        let (mut countdown, mut bump, mut set_condition) = (null_mut(), null_mut(), null_mut());
        ok(cuModuleGetFunction(
            &mut countdown,
            m,
            c"countdown".as_ptr(),
        ));
        ok(cuModuleGetFunction(&mut bump, m, c"bump".as_ptr()));
        ok(cuModuleGetFunction(
            &mut set_condition,
            m,
            c"set_condition".as_ptr(),
        ));
        CondFx {
            countdown,
            bump,
            set_condition,
        }
    }
}

fn one_thread(func: CUfunction, params: *mut *mut c_void) -> CUDA_KERNEL_NODE_PARAMS {
    CUDA_KERNEL_NODE_PARAMS {
        func,
        gridDimX: 1,
        gridDimY: 1,
        gridDimZ: 1,
        blockDimX: 32,
        blockDimY: 1,
        blockDimZ: 1,
        sharedMemBytes: 0,
        kernelParams: params,
        extra: null_mut(),
        kern: null_mut(),
        ctx: null_mut(),
    }
}

fn handle(g: CUgraph, ctx: CUcontext, default: u32, flags: u32) -> CUgraphConditionalHandle {
    let mut h = 0;
    // SAFETY: a valid out-pointer.
    ok(unsafe { cuGraphConditionalHandleCreate(&mut h, g, ctx, default, flags) });
    h
}

/// Adds a conditional node of `ty` on `h` to `g`; its body graph.
fn add_cond(g: CUgraph, deps: &[CUgraphNode], h: u64, ty: u32) -> (CUgraphNode, CUgraph) {
    let mut body = null_mut();
    let mut p = CUgraphNodeParams {
        type_: CU_GRAPH_NODE_TYPE_CONDITIONAL,
        reserved0: [0; 3],
        anon_0: CUgraphNodeParams_union { reserved1: [0; 29] },
        reserved2: 0,
    };
    p.anon_0.conditional = CUDA_CONDITIONAL_NODE_PARAMS {
        handle: h,
        type_: ty,
        size: 1,
        phGraph_out: &mut body,
        ctx: null_mut(),
    };
    let mut n = null_mut();
    // SAFETY: valid pointers.
    ok(unsafe { cuGraphAddNode_v2(&mut n, g, deps.as_ptr(), null(), deps.len(), &mut p) });
    assert!(!body.is_null());
    (n, body)
}

fn read_u32(d: u64) -> u32 {
    let mut v = 0u32;
    // SAFETY: a valid host buffer.
    ok(unsafe { cuMemcpyDtoH_v2((&raw mut v).cast(), d, 4) });
    v
}

fn write_u32(d: u64, v: u32) {
    // SAFETY: a valid host buffer.
    ok(unsafe { cuMemcpyHtoD_v2(d, (&raw const v).cast(), 4) });
}

/// IF runs its body when the value is non-zero: by the default value, or as a kernel
/// set it before the node.
#[test]
fn if_node_runs_its_body_by_the_value() {
    let _g = serial();
    let fx = Fx::new();
    let cf = cond_fx();
    let counter = alloc(4);
    // SAFETY: softcuda's exports with valid pointers.
    unsafe {
        let mut slice = Slice {
            ptr: counter,
            len: 1,
        };
        let mut bump_args: [*mut c_void; 1] = [(&raw mut slice).cast()];
        for (default, runs) in [(1u32, 1u32), (0, 0), (7, 1)] {
            write_u32(counter, 0);
            let g = graph();
            let h = handle(g, fx.ctx, default, CU_GRAPH_COND_ASSIGN_DEFAULT);
            let (_n, body) = add_cond(g, &[], h, CU_GRAPH_COND_TYPE_IF);
            let mut k = null_mut();
            ok(cuGraphAddKernelNode_v2(
                &mut k,
                body,
                null(),
                0,
                &one_thread(cf.bump, bump_args.as_mut_ptr()),
            ));
            assert_eq!(cuGraphDestroy(body), code::INVALID_VALUE); // owned by the node
            let exec = instantiate(g);
            ok(cuGraphLaunch(exec, null_mut()));
            ok(cuCtxSynchronize());
            assert_eq!(read_u32(counter), runs, "default {default}");
            ok(cuGraphExecDestroy(exec));
            ok(cuGraphDestroy(g));
        }
        // A kernel before the node decides.
        write_u32(counter, 0);
        let g = graph();
        let h = handle(g, fx.ctx, 0, 0);
        let (mut hh, mut val) = (h, 1u32);
        let mut set_args: [*mut c_void; 2] = [(&raw mut hh).cast(), (&raw mut val).cast()];
        let mut set = null_mut();
        ok(cuGraphAddKernelNode_v2(
            &mut set,
            g,
            null(),
            0,
            &one_thread(cf.set_condition, set_args.as_mut_ptr()),
        ));
        let (_n, body) = add_cond(g, &[set], h, CU_GRAPH_COND_TYPE_IF);
        let mut k = null_mut();
        ok(cuGraphAddKernelNode_v2(
            &mut k,
            body,
            null(),
            0,
            &one_thread(cf.bump, bump_args.as_mut_ptr()),
        ));
        let exec = instantiate(g);
        ok(cuGraphLaunch(exec, null_mut()));
        ok(cuCtxSynchronize());
        assert_eq!(read_u32(counter), 1);
        // Errors: a handle of another graph, a bad size, a destroyed body.
        let other = graph();
        let mut p = CUgraphNodeParams {
            type_: CU_GRAPH_NODE_TYPE_CONDITIONAL,
            reserved0: [0; 3],
            anon_0: CUgraphNodeParams_union { reserved1: [0; 29] },
            reserved2: 0,
        };
        let mut bodies = [null_mut(); 2];
        p.anon_0.conditional = CUDA_CONDITIONAL_NODE_PARAMS {
            handle: h,
            type_: CU_GRAPH_COND_TYPE_IF,
            size: 1,
            phGraph_out: bodies.as_mut_ptr(),
            ctx: null_mut(),
        };
        let mut n = null_mut();
        assert_eq!(
            cuGraphAddNode_v2(&mut n, other, null(), null(), 0, &mut p),
            code::INVALID_VALUE
        );
        p.anon_0.conditional.handle = handle(other, fx.ctx, 0, 0);
        p.anon_0.conditional.type_ = CU_GRAPH_COND_TYPE_WHILE;
        p.anon_0.conditional.size = 2;
        assert_eq!(
            cuGraphAddNode_v2(&mut n, other, null(), null(), 0, &mut p),
            code::INVALID_VALUE
        );
        let mut child = null_mut();
        assert_eq!(
            cuGraphAddChildGraphNode(&mut child, other, null(), 0, g),
            code::INVALID_VALUE
        );
        ok(cuGraphExecDestroy(exec));
        ok(cuGraphDestroy(g));
        ok(cuGraphDestroy(other));
        ok(cuMemFree_v2(counter));
    }
    fx.destroy();
    no_leaks();
}

/// WHILE runs its body while the value is non-zero: `countdown` from N runs N times;
/// `CU_GRAPH_COND_ASSIGN_DEFAULT` resets the value at each launch (without it, the
/// loop's final 0 stays). A nested IF runs inside every iteration.
#[test]
fn while_node_loops_until_the_kernel_clears_the_value() {
    let _g = serial();
    let fx = Fx::new();
    let cf = cond_fx();
    let (counter, iters) = (alloc(4), alloc(4));
    // SAFETY: softcuda's exports with valid pointers.
    unsafe {
        for flags in [CU_GRAPH_COND_ASSIGN_DEFAULT, 0] {
            write_u32(iters, 0);
            let g = graph();
            let h = handle(g, fx.ctx, 1, flags);
            let (_w, body) = add_cond(g, &[], h, CU_GRAPH_COND_TYPE_WHILE);
            let mut hh = h;
            let mut cs = Slice {
                ptr: counter,
                len: 1,
            };
            let mut is = Slice { ptr: iters, len: 1 };
            let mut cd_args: [*mut c_void; 2] = [(&raw mut hh).cast(), (&raw mut cs).cast()];
            let mut bump_args: [*mut c_void; 1] = [(&raw mut is).cast()];
            let mut k = null_mut();
            ok(cuGraphAddKernelNode_v2(
                &mut k,
                body,
                null(),
                0,
                &one_thread(cf.countdown, cd_args.as_mut_ptr()),
            ));
            // Nested: IF on a handle of the body graph, always 1.
            let h2 = handle(body, fx.ctx, 1, CU_GRAPH_COND_ASSIGN_DEFAULT);
            let (_i, inner) = add_cond(body, &[k], h2, CU_GRAPH_COND_TYPE_IF);
            let mut b = null_mut();
            ok(cuGraphAddKernelNode_v2(
                &mut b,
                inner,
                null(),
                0,
                &one_thread(cf.bump, bump_args.as_mut_ptr()),
            ));
            let exec = instantiate(g);
            let s = fx.stream(0);
            write_u32(counter, 5);
            ok(cuGraphLaunch(exec, s));
            ok(cuStreamSynchronize(s));
            assert_eq!((read_u32(counter), read_u32(iters)), (0, 5));
            write_u32(counter, 3);
            ok(cuGraphLaunch(exec, s));
            ok(cuStreamSynchronize(s));
            let expect = if flags == 0 { (3, 5) } else { (0, 8) };
            assert_eq!(
                (read_u32(counter), read_u32(iters)),
                expect,
                "flags {flags}"
            );
            ok(cuGraphExecDestroy(exec));
            ok(cuGraphDestroy(g));
            ok(cuStreamDestroy_v2(s));
        }
        ok(cuMemFree_v2(counter));
        ok(cuMemFree_v2(iters));
    }
    fx.destroy();
    no_leaks();
}

#[test]
fn memory_and_conditional_layouts_match_cuda_h() {
    use std::mem::{offset_of, size_of};
    assert_eq!(size_of::<CUmemPoolProps>(), 88);
    assert_eq!(size_of::<CUDA_MEM_ALLOC_NODE_PARAMS>(), 120);
    assert_eq!(offset_of!(CUDA_MEM_ALLOC_NODE_PARAMS, dptr), 112);
    assert_eq!(size_of::<CUmemAccessDesc>(), 12);
    assert_eq!(size_of::<CUDA_CONDITIONAL_NODE_PARAMS>(), 32);
    assert_eq!(size_of::<CUgraphNodeParams>(), 256);
    assert_eq!(offset_of!(CUgraphNodeParams, anon_0), 16);
}

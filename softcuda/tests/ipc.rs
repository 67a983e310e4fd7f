//! Inter-process communication through the C ABI, with two processes: the test
//! binary re-runs itself (`--exact <test>`) with `SOFTCUDA_IPC_ROLE` naming the
//! child's part and the handles in hex in the environment; the child reports on
//! standard output and exits non-zero on any failure. Memory shared both ways
//! (copies and a kernel in the child, seen by the parent), an event ordering work
//! across the processes, memory outliving the exporter's free, stale and malformed
//! handles, refusals, and the same-process path. Every test ends with no live
//! object, in both processes.
#![cfg(target_os = "linux")]

mod common;
#[path = "common/two_process.rs"]
mod two_process;
#[path = "common/vmm.rs"]
mod vmm_common;

use common::{function, launch_kernel, no_leaks, ok, serial};
use softcuda::api::ipc::*;
use softcuda::api::{managed::*, memory::*, module::*, pool::*, stream::*};
use softcuda::control;
use softcuda::types::*;
use std::ffi::c_void;
use std::io::{BufReader, Write};
use std::process::Child;
use std::ptr::null_mut;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;
use two_process::{DONE, INC, expect_line, finish, hex, reported, unhex};
use vmm_common::{ctx, destroy, read, write};

/// The child's part (unset in the parent).
const ROLE: &str = "SOFTCUDA_IPC_ROLE";
const MEM: &str = "SOFTCUDA_IPC_MEM";
const EVENT: &str = "SOFTCUDA_IPC_EVENT";
/// Re-runs test `test` as a child in role `role` with `vars`.
fn spawn_child(test: &str, role: &str, vars: &[(&str, String)]) -> Child {
    two_process::spawn(test, ROLE, role, vars)
}

fn env_bytes(var: &str) -> [u8; 64] {
    unhex(&std::env::var(var).unwrap())
}

fn alloc(size: usize) -> CUdeviceptr {
    let mut p = 0;
    // SAFETY: a valid out-pointer.
    ok(unsafe { cuMemAlloc_v2(&mut p, size) });
    p
}

fn free(p: CUdeviceptr) -> CUresult {
    // SAFETY: plain call; softcuda checks the address.
    unsafe { cuMemFree_v2(p) }
}

fn get_mem(p: CUdeviceptr) -> Result<[u8; 64], CUresult> {
    let mut h = CUipcMemHandle { reserved: [0; 64] };
    // SAFETY: a valid out-pointer.
    match unsafe { cuIpcGetMemHandle(&mut h, p) } {
        code::SUCCESS => Ok(h.reserved),
        e => Err(e),
    }
}

fn open_mem(h: [u8; 64], flags: u32) -> Result<CUdeviceptr, CUresult> {
    let mut p = 0;
    // SAFETY: a valid out-pointer.
    match unsafe { cuIpcOpenMemHandle_v2(&mut p, CUipcMemHandle { reserved: h }, flags) } {
        code::SUCCESS => Ok(p),
        e => Err(e),
    }
}

fn close_mem(p: CUdeviceptr) -> CUresult {
    // SAFETY: plain call; softcuda checks the address.
    unsafe { cuIpcCloseMemHandle(p) }
}

fn event(flags: u32) -> Result<CUevent, CUresult> {
    let mut e = null_mut();
    // SAFETY: a valid out-pointer.
    match unsafe { cuEventCreate(&mut e, flags) } {
        code::SUCCESS => Ok(e),
        r => Err(r),
    }
}

fn get_event(e: CUevent) -> Result<[u8; 64], CUresult> {
    let mut h = CUipcEventHandle { reserved: [0; 64] };
    // SAFETY: a valid out-pointer.
    match unsafe { cuIpcGetEventHandle(&mut h, e) } {
        code::SUCCESS => Ok(h.reserved),
        r => Err(r),
    }
}

fn open_event(h: [u8; 64]) -> Result<CUevent, CUresult> {
    let mut e = null_mut();
    // SAFETY: a valid out-pointer.
    match unsafe { cuIpcOpenEventHandle(&mut e, CUipcEventHandle { reserved: h }) } {
        code::SUCCESS => Ok(e),
        r => Err(r),
    }
}

fn query(e: CUevent) -> CUresult {
    // SAFETY: plain call.
    unsafe { cuEventQuery(e) }
}

fn destroy_event(e: CUevent) {
    // SAFETY: a live event.
    ok(unsafe { cuEventDestroy_v2(e) });
}

fn stream() -> CUstream {
    let mut s = null_mut();
    // SAFETY: a valid out-pointer.
    ok(unsafe { cuStreamCreate(&mut s, 0) });
    s
}

fn sync(s: CUstream) {
    // SAFETY: a live stream.
    ok(unsafe { cuStreamSynchronize(s) });
}

fn destroy_stream(s: CUstream) {
    // SAFETY: a live stream.
    ok(unsafe { cuStreamDestroy_v2(s) });
}

/// Runs `inc` over `n` words at `buf` on the legacy stream.
fn inc(buf: CUdeviceptr, n: u32) -> CUresult {
    let mut m = null_mut();
    // SAFETY: NUL-terminated PTX text.
    ok(unsafe { cuModuleLoadData(&mut m, INC.as_ptr().cast()) });
    let f = function(m, c"inc");
    let (mut b, mut n_) = (buf, n);
    let r = launch_kernel(
        f,
        [n.div_ceil(128), 1, 1],
        [128, 1, 1],
        0,
        null_mut(),
        &mut [(&raw mut b).cast(), (&raw mut n_).cast()],
    );
    // SAFETY: the module loaded above.
    ok(unsafe { cuModuleUnload(m) });
    r
}

fn live(kind: &str) -> usize {
    let c = control::live_counts();
    match kind {
        "ipc_memory" => c.ipc_memory,
        "ipc_events" => c.ipc_events,
        _ => unreachable!(),
    }
}

/// The descriptor number a handle carries (bytes 16..20).
fn fd_of(h: &[u8; 64]) -> i32 {
    i32::from_le_bytes(h[16..20].try_into().unwrap())
}

const N: usize = 1000;

fn pattern() -> Vec<u32> {
    (0..N as u32).map(|i| i * 7 + 3).collect()
}

#[test]
fn memory_is_shared_with_another_process() {
    const TEST: &str = "memory_is_shared_with_another_process";
    if two_process::role(ROLE).as_deref() == Some("importer") {
        let _g = serial();
        let c = ctx();
        let h = env_bytes(MEM);
        let p = open_mem(h, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS).unwrap();
        assert_eq!(live("ipc_memory"), 1);
        assert_eq!(open_mem(h, 0), Ok(p), "a second open: the same mapping");
        assert_eq!(live("ipc_memory"), 1);
        ok(close_mem(p));
        assert_eq!(read(p, N), Ok(pattern()), "the exporter's bytes");
        let (mut base, mut size) = (0, 0);
        // SAFETY: valid out-pointers.
        ok(unsafe { cuMemGetAddressRange_v2(&mut base, &mut size, p + 40) });
        assert_eq!((base, size), (p, N * 4));
        ok(inc(p, N as u32));
        assert_eq!(free(p), code::INVALID_VALUE, "not cuMemFree's to free");
        ok(close_mem(p));
        assert_eq!(
            close_mem(p),
            code::INVALID_VALUE,
            "closed as often as opened"
        );
        assert_eq!(read(p, 1), Err(code::INVALID_VALUE), "unmapped");
        destroy(c);
        no_leaks();
        println!("{DONE}");
        return;
    }
    let _g = serial();
    let c = ctx();
    let a = alloc(N * 4);
    ok(write(a, &pattern()));
    let h = get_mem(a).unwrap();
    assert_eq!(get_mem(a), Ok(h), "the same handle again");
    // The export kept the address, the bytes and the allocation.
    assert_eq!(read(a, N), Ok(pattern()));
    assert_eq!(control::live_counts().allocations, 1);
    let child = spawn_child(TEST, "importer", &[(MEM, hex(&h))]);
    finish(child);
    let want: Vec<u32> = pattern().iter().map(|v| v + 1).collect();
    assert_eq!(read(a, N), Ok(want), "the child's kernel wrote here");
    ok(free(a));
    destroy(c);
    no_leaks();
}

/// Opened by the parent's host function once the child is waiting.
static GATE: AtomicBool = AtomicBool::new(false);

unsafe extern "C" fn wait_for_gate(_: *mut c_void) {
    while !GATE.load(Ordering::SeqCst) {
        std::thread::sleep(Duration::from_millis(1));
    }
}

#[test]
fn an_event_orders_work_across_processes() {
    const TEST: &str = "an_event_orders_work_across_processes";
    if two_process::role(ROLE).as_deref() == Some("waiter") {
        let _g = serial();
        let c = ctx();
        let s = stream();
        let p = open_mem(env_bytes(MEM), 1).unwrap();
        let e = open_event(env_bytes(EVENT)).unwrap();
        assert_eq!(live("ipc_events"), 1);
        assert_eq!(query(e), code::NOT_READY, "the parent's record is pending");
        let d = alloc(N * 4);
        // SAFETY: live stream and event; `d` and `p` hold N words.
        unsafe {
            ok(cuStreamWaitEvent(s, e, 0));
            ok(cuMemcpyDtoDAsync_v2(d, p, N * 4, s));
        }
        println!("READY");
        sync(s);
        assert_eq!(
            read(d, N),
            Ok(vec![7; N]),
            "copied after the parent's memset"
        );
        ok(query(e));
        // A record here moves the shared state too.
        // SAFETY: live stream, event and mapping.
        unsafe {
            ok(cuMemsetD32Async(p, 9, N, s));
            ok(cuEventRecord(e, s));
            ok(cuEventSynchronize(e));
        }
        ok(free(d));
        destroy_event(e);
        ok(close_mem(p));
        destroy_stream(s);
        destroy(c);
        no_leaks();
        println!("{DONE}");
        return;
    }
    let _g = serial();
    GATE.store(false, Ordering::SeqCst);
    let c = ctx();
    let s = stream();
    let a = alloc(N * 4);
    let e = event(CU_EVENT_INTERPROCESS | 2).unwrap();
    let (hm, he) = (get_mem(a).unwrap(), get_event(e).unwrap());
    // SAFETY: live stream, event and allocation; the host function waits on a static.
    unsafe {
        ok(cuLaunchHostFunc(s, Some(wait_for_gate), null_mut()));
        ok(cuMemsetD32Async(a, 7, N, s));
        ok(cuEventRecord(e, s));
    }
    let mut child = spawn_child(TEST, "waiter", &[(MEM, hex(&hm)), (EVENT, hex(&he))]);
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let before = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        expect_line(&mut out, "READY");
        std::thread::sleep(Duration::from_millis(50));
        query(e)
    }));
    GATE.store(true, Ordering::SeqCst);
    assert_eq!(before.unwrap(), code::NOT_READY, "held by the gate");
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut out, &mut rest).unwrap();
    let status = child.wait().unwrap();
    assert!(status.success(), "the child failed: {rest}");
    assert!(reported(&rest), "no report: {rest}");
    // The child's record (generation 2) completed: the event is complete here too.
    ok(query(e));
    // SAFETY: a live event.
    ok(unsafe { cuEventSynchronize(e) });
    assert_eq!(read(a, N), Ok(vec![9; N]), "the child's memset");
    destroy_event(e);
    ok(free(a));
    destroy_stream(s);
    destroy(c);
    no_leaks();
}

#[test]
fn an_importer_keeps_the_memory_after_the_exporter_frees_it() {
    const TEST: &str = "an_importer_keeps_the_memory_after_the_exporter_frees_it";
    if two_process::role(ROLE).as_deref() == Some("keeper") {
        let _g = serial();
        let c = ctx();
        let p = open_mem(env_bytes(MEM), 1).unwrap();
        println!("OPENED");
        let mut line = String::new();
        std::io::stdin().read_line(&mut line).unwrap();
        assert_eq!(line.trim(), "freed");
        assert_eq!(read(p, N), Ok(pattern()), "the pages live while mapped");
        ok(inc(p, N as u32));
        ok(close_mem(p));
        destroy(c);
        no_leaks();
        println!("{DONE}");
        return;
    }
    let _g = serial();
    let c = ctx();
    let a = alloc(N * 4);
    ok(write(a, &pattern()));
    let h = get_mem(a).unwrap();
    let mut child = spawn_child(TEST, "keeper", &[(MEM, hex(&h))]);
    let mut out = BufReader::new(child.stdout.take().unwrap());
    expect_line(&mut out, "OPENED");
    ok(free(a));
    assert_eq!(open_mem(h, 1), Err(code::INVALID_HANDLE), "stale here");
    writeln!(child.stdin.take().unwrap(), "freed").unwrap();
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut out, &mut rest).unwrap();
    assert!(child.wait().unwrap().success(), "the child failed: {rest}");
    assert!(reported(&rest), "no report: {rest}");
    destroy(c);
    no_leaks();
}

#[test]
fn stale_handles_are_refused() {
    const TEST: &str = "stale_handles_are_refused";
    match two_process::role(ROLE).as_deref() {
        Some("exporter") => {
            // Exports, prints the handles, exits (its files close with it).
            let _g = serial();
            let c = ctx();
            let a = alloc(64);
            let e = event(CU_EVENT_INTERPROCESS | 2).unwrap();
            println!("MEM {}", hex(&get_mem(a).unwrap()));
            println!("EVENT {}", hex(&get_event(e).unwrap()));
            destroy_event(e);
            ok(free(a));
            destroy(c);
            no_leaks();
            println!("{DONE}");
            return;
        }
        Some("opener") => {
            let _g = serial();
            let c = ctx();
            // The descriptor now holds another allocation's file: refused.
            assert_eq!(open_mem(env_bytes(MEM), 1), Err(code::INVALID_HANDLE));
            // A descriptor that is no memory file (standard input): refused.
            let mut forged = env_bytes(MEM);
            forged[16..20].copy_from_slice(&0i32.to_le_bytes());
            assert_eq!(open_mem(forged, 1), Err(code::INVALID_HANDLE));
            // The live one opens.
            let p = open_mem(env_bytes("SOFTCUDA_IPC_LIVE"), 1).unwrap();
            ok(close_mem(p));
            destroy(c);
            no_leaks();
            println!("{DONE}");
            return;
        }
        _ => {}
    }
    let _g = serial();
    let c = ctx();
    // A process that has exited.
    let child = spawn_child(TEST, "exporter", &[]);
    let text = finish(child);
    let field = |tag: &str| {
        let l = text
            .lines()
            .find_map(|l| Some(l.split_once(tag)?.1))
            .unwrap();
        unhex(l.trim())
    };
    assert_eq!(open_mem(field("MEM "), 1), Err(code::INVALID_HANDLE));
    assert_eq!(open_event(field("EVENT ")), Err(code::INVALID_HANDLE));
    // Malformed handles.
    assert_eq!(open_mem([0; 64], 1), Err(code::INVALID_VALUE));
    assert_eq!(open_event([0; 64]), Err(code::INVALID_VALUE));
    let mut wrong_kind = field("MEM ");
    wrong_kind[8] = 2;
    assert_eq!(open_mem(wrong_kind, 1), Err(code::INVALID_VALUE));
    // A descriptor number reused for another allocation's file.
    let a = alloc(4096);
    let old = get_mem(a).unwrap();
    ok(free(a));
    let b = alloc(4096);
    let new = get_mem(b).unwrap();
    assert_eq!(fd_of(&old), fd_of(&new), "the descriptor number was reused");
    assert_eq!(open_mem(old, 1), Err(code::INVALID_HANDLE), "same process");
    let child = spawn_child(
        TEST,
        "opener",
        &[(MEM, hex(&old)), ("SOFTCUDA_IPC_LIVE", hex(&new))],
    );
    finish(child);
    ok(free(b));
    destroy(c);
    no_leaks();
}

#[test]
fn refusals_and_the_same_process_path() {
    let _g = serial();
    let mut dummy = CUipcMemHandle { reserved: [0; 64] };
    // SAFETY: a valid out-pointer.
    assert_eq!(
        unsafe { cuIpcGetMemHandle(&mut dummy, 0x1000) },
        code::INVALID_CONTEXT
    );
    let c = ctx();
    let a = alloc(N * 4);
    ok(write(a, &pattern()));
    // Only the base of cuMemAlloc memory.
    assert_eq!(get_mem(a + 4), Err(code::INVALID_VALUE));
    assert_eq!(get_mem(0), Err(code::INVALID_VALUE));
    // SAFETY: null out-pointer, refused.
    assert_eq!(
        unsafe { cuIpcGetMemHandle(null_mut(), a) },
        code::INVALID_VALUE
    );
    let mut host = null_mut();
    // SAFETY: a valid out-pointer.
    ok(unsafe { cuMemAllocHost_v2(&mut host, 64) });
    assert_eq!(
        get_mem(host as u64),
        Err(code::INVALID_VALUE),
        "host memory"
    );
    let mut managed = 0;
    // SAFETY: a valid out-pointer.
    ok(unsafe { cuMemAllocManaged(&mut managed, 64, 1) });
    assert_eq!(get_mem(managed), Err(code::INVALID_VALUE), "managed memory");
    let mut pooled = 0;
    // SAFETY: a valid out-pointer; the legacy stream.
    ok(unsafe { cuMemAllocAsync(&mut pooled, 64, null_mut()) });
    assert_eq!(get_mem(pooled), Err(code::INVALID_VALUE), "pool memory");
    let h = get_mem(a).unwrap();
    // The exporter's allocation still works: bytes, kernels, attributes.
    assert_eq!(read(a, N), Ok(pattern()));
    ok(inc(a, N as u32));
    let want: Vec<u32> = pattern().iter().map(|v| v + 1).collect();
    assert_eq!(read(a, N), Ok(want));
    // Flags: 0 or LAZY_ENABLE_PEER_ACCESS.
    assert_eq!(open_mem(h, 2), Err(code::INVALID_VALUE));
    // SAFETY: null out-pointer, refused.
    assert_eq!(
        unsafe { cuIpcOpenMemHandle_v2(null_mut(), CUipcMemHandle { reserved: h }, 1) },
        code::INVALID_VALUE
    );
    // The same process: the allocation's own address, counted per open.
    assert_eq!(open_mem(h, 1), Ok(a));
    assert_eq!(open_mem(h, 0), Ok(a));
    assert_eq!(live("ipc_memory"), 1);
    ok(close_mem(a));
    ok(close_mem(a));
    assert_eq!(close_mem(a), code::INVALID_VALUE, "closed twice");
    assert_eq!(close_mem(a + 8), code::INVALID_VALUE);
    assert_eq!(live("ipc_memory"), 0);
    // Events: INTERPROCESS needs DISABLE_TIMING; only such events have handles.
    assert_eq!(event(CU_EVENT_INTERPROCESS), Err(code::INVALID_VALUE));
    let plain = event(2).unwrap();
    assert_eq!(get_event(plain), Err(code::INVALID_VALUE));
    assert_eq!(get_event(null_mut()), Err(code::INVALID_HANDLE));
    let e = event(CU_EVENT_INTERPROCESS | 2).unwrap();
    let he = get_event(e).unwrap();
    // Opened in the same process: a second event sharing the state.
    let opened = open_event(he).unwrap();
    assert_eq!(live("ipc_events"), 1);
    assert_eq!(
        get_event(opened),
        Err(code::INVALID_VALUE),
        "not interprocess"
    );
    let s = stream();
    // SAFETY: live stream and events; the host function waits on a static.
    unsafe {
        GATE.store(false, Ordering::SeqCst);
        ok(cuLaunchHostFunc(s, Some(wait_for_gate), null_mut()));
        ok(cuEventRecord(opened, s));
    }
    assert_eq!(
        query(e),
        code::NOT_READY,
        "a record through the other handle"
    );
    GATE.store(true, Ordering::SeqCst);
    // SAFETY: a live event.
    ok(unsafe { cuEventSynchronize(e) });
    ok(query(opened));
    let mut ms = 0.0f32;
    // SAFETY: a valid out-pointer, live events.
    assert_eq!(
        unsafe { cuEventElapsedTime(&mut ms, e, e) },
        code::INVALID_HANDLE,
        "no timing"
    );
    destroy_event(opened);
    destroy_event(e);
    destroy_event(plain);
    destroy_stream(s);
    // SAFETY: live allocations.
    unsafe {
        ok(cuMemFreeHost(host));
        ok(cuMemFree_v2(managed));
        ok(cuMemFreeAsync(pooled, null_mut()));
    }
    ok(free(a));
    destroy(c);
    no_leaks();
}

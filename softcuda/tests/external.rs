//! External resources through the C ABI: memory imported from softcuda's memory
//! files (exported by `cuMemExportToShareableHandle` or made by
//! `control::external_memory_fd`) and mapped as buffers that alias each other and
//! VMM mappings; ownership of the imported descriptors; semaphores (binary and
//! timeline) ordering streams, within one process and across two; every refusal.
//! Every test ends with no live object.
#![cfg(target_os = "linux")]

mod common;
#[path = "common/vmm.rs"]
mod vmm_common;

use common::{no_leaks, ok, serial};
use softcuda::api::external::*;
use softcuda::api::{context::*, graph::*, memory::*, proc::*, stream::*, vmm::*};
use softcuda::control;
use softcuda::types::*;
use std::ffi::{c_int, c_void};
use std::os::fd::{AsRawFd, IntoRawFd, OwnedFd};
use std::ptr::{null, null_mut};
use std::sync::Mutex;
use std::time::Duration;
use vmm_common::*;

unsafe extern "C" {
    fn fcntl(fd: c_int, cmd: c_int, ...) -> c_int;
}
const F_GETFD: c_int = 1;
const F_DUPFD: c_int = 0;

/// The page size (buffer offsets are multiples of it).
const PAGE: u64 = 4096;

/// Whether descriptor `fd` is open.
fn open(fd: c_int) -> bool {
    // SAFETY: reading a descriptor's flags touches no memory.
    unsafe { fcntl(fd, F_GETFD) >= 0 }
}

/// The device and inode of the file behind `fd`.
fn inode(fd: &OwnedFd) -> (u64, u64) {
    use std::os::unix::fs::MetadataExt;
    let m = std::fs::metadata(format!("/proc/self/fd/{}", fd.as_raw_fd())).unwrap();
    (m.dev(), m.ino())
}

/// How many of this process's descriptors refer to the file `id` ([`inode`]).
fn fds_on(id: (u64, u64)) -> usize {
    use std::os::unix::fs::MetadataExt;
    std::fs::read_dir("/proc/self/fd")
        .unwrap()
        .filter_map(|e| std::fs::metadata(e.ok()?.path()).ok())
        .filter(|m| (m.dev(), m.ino()) == id)
        .count()
}

fn mem_desc(fd: c_int, type_: u32, size: u64, flags: u32) -> CUDA_EXTERNAL_MEMORY_HANDLE_DESC {
    CUDA_EXTERNAL_MEMORY_HANDLE_DESC {
        type_,
        handle: CUDA_EXTERNAL_MEMORY_HANDLE_DESC_handle { fd },
        size,
        flags,
        reserved: [0; 16],
    }
}

fn try_import(d: &CUDA_EXTERNAL_MEMORY_HANDLE_DESC) -> Result<CUexternalMemory, CUresult> {
    let mut m = null_mut();
    // SAFETY: a valid out-pointer and descriptor.
    match unsafe { cuImportExternalMemory(&mut m, d) } {
        code::SUCCESS => Ok(m),
        e => Err(e),
    }
}

/// Imports `fd` (given to softcuda) as `size` bytes of opaque-fd memory.
#[track_caller]
fn import(fd: OwnedFd, size: u64) -> CUexternalMemory {
    let m = try_import(&mem_desc(fd.into_raw_fd(), 1, size, 0)).unwrap();
    assert!(!m.is_null());
    m
}

fn try_buffer(m: CUexternalMemory, offset: u64, size: u64, flags: u32) -> Result<u64, CUresult> {
    let d = CUDA_EXTERNAL_MEMORY_BUFFER_DESC {
        offset,
        size,
        flags,
        reserved: [0; 16],
    };
    let mut p = 0;
    // SAFETY: a valid out-pointer and descriptor.
    match unsafe { cuExternalMemoryGetMappedBuffer(&mut p, m, &d) } {
        code::SUCCESS => Ok(p),
        e => Err(e),
    }
}

fn free(p: u64) -> CUresult {
    // SAFETY: softcuda's export.
    unsafe { cuMemFree_v2(p) }
}

fn destroy_memory(m: CUexternalMemory) -> CUresult {
    // SAFETY: softcuda's export.
    unsafe { cuDestroyExternalMemory(m) }
}

fn counts() -> (usize, usize, usize) {
    let c = control::live_counts();
    (
        c.external_memories,
        c.external_buffers,
        c.external_semaphores,
    )
}

#[test]
fn the_descriptors_have_cuda_12s_layout() {
    use core::mem::offset_of;
    type M = CUDA_EXTERNAL_MEMORY_HANDLE_DESC;
    assert_eq!((size_of::<M>(), align_of::<M>()), (104, 8));
    assert_eq!(size_of::<CUDA_EXTERNAL_MEMORY_HANDLE_DESC_handle>(), 16);
    assert_eq!(
        [
            offset_of!(M, handle),
            offset_of!(M, size),
            offset_of!(M, flags)
        ],
        [8, 24, 32]
    );
    assert_eq!(offset_of!(M, reserved), 36);
    type B = CUDA_EXTERNAL_MEMORY_BUFFER_DESC;
    assert_eq!(size_of::<B>(), 88);
    assert_eq!([offset_of!(B, size), offset_of!(B, flags)], [8, 16]);
    type S = CUDA_EXTERNAL_SEMAPHORE_HANDLE_DESC;
    assert_eq!(size_of::<S>(), 96);
    assert_eq!([offset_of!(S, handle), offset_of!(S, flags)], [8, 24]);
    type P = CUDA_EXTERNAL_SEMAPHORE_SIGNAL_PARAMS;
    type PP = CUDA_EXTERNAL_SEMAPHORE_SIGNAL_PARAMS_params;
    assert_eq!((size_of::<P>(), size_of::<PP>()), (144, 72));
    assert_eq!(offset_of!(P, flags), 72);
    assert_eq!(
        [
            offset_of!(PP, nvSciSync),
            offset_of!(PP, keyedMutex),
            offset_of!(PP, reserved)
        ],
        [8, 16, 24]
    );
    type W = CUDA_EXTERNAL_SEMAPHORE_WAIT_PARAMS;
    type WP = CUDA_EXTERNAL_SEMAPHORE_WAIT_PARAMS_params;
    assert_eq!((size_of::<W>(), size_of::<WP>()), (144, 72));
    assert_eq!(size_of::<CUDA_EXTERNAL_SEMAPHORE_WAIT_keyedMutex>(), 16);
    assert_eq!([offset_of!(W, flags), offset_of!(WP, reserved)], [72, 32]);
    // Every entry point is found through cuGetProcAddress, and the device says it
    // has timeline-semaphore interop.
    let _g = serial();
    let mut v = 0;
    // SAFETY: a valid out-pointer, device 0.
    ok(unsafe { softcuda::api::device::cuDeviceGetAttribute(&mut v, 114, 0) });
    assert_eq!(v, 1, "TIMELINE_SEMAPHORE_INTEROP_SUPPORTED");
    for name in [
        c"cuImportExternalMemory",
        c"cuExternalMemoryGetMappedBuffer",
        c"cuDestroyExternalMemory",
        c"cuImportExternalSemaphore",
        c"cuSignalExternalSemaphoresAsync",
        c"cuWaitExternalSemaphoresAsync",
        c"cuDestroyExternalSemaphore",
    ] {
        let mut f = null_mut();
        // SAFETY: valid pointers, a NUL-terminated name.
        ok(unsafe { cuGetProcAddress_v2(name.as_ptr(), &mut f, 12000, 0, null_mut()) });
        assert!(!f.is_null(), "{name:?}");
    }
    no_leaks();
}

#[test]
fn buffers_alias_each_other_and_vmm_mappings() {
    let _g = serial();
    let c = ctx();
    // VMM memory, mapped, exported and imported as external memory.
    let h = try_create(G, &prop(0, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR)).unwrap();
    let base = reserve(G);
    map_rw(base, G, h);
    let mut fd: c_int = -1;
    // SAFETY: a valid out-pointer (an int) and handle.
    ok(unsafe { cuMemExportToShareableHandle((&raw mut fd).cast(), h, 1, 0) });
    let before = free_mem();
    let m = try_import(&mem_desc(fd, 1, G as u64, CUDA_EXTERNAL_MEMORY_DEDICATED)).unwrap();
    let a = try_buffer(m, 0, 16 * PAGE, 0).unwrap();
    let b = try_buffer(m, 4 * PAGE, 2 * PAGE, 0).unwrap();
    assert!(
        a + 16 * PAGE <= b || b + 2 * PAGE <= a,
        "distinct addresses"
    );
    assert_eq!(
        free_mem(),
        before,
        "imported memory is counted by its exporter only"
    );
    assert_eq!(counts(), (1, 2, 0));
    // A copy through one buffer, read through the other and the VMM mapping.
    let pattern: Vec<u32> = (0..1024).map(|i| i * 7 + 1).collect();
    ok(write(a + 4 * PAGE, &pattern));
    assert_eq!(read(b, 1024).unwrap(), pattern);
    assert_eq!(read(base + 4 * PAGE, 1024).unwrap(), pattern);
    // A kernel writing through the VMM mapping, read through both buffers.
    ok(iota(2048, base + 4 * PAGE));
    let want: Vec<u32> = (0..2048).map(|i| 3 * i + 1).collect();
    assert_eq!(read(b, 2048).unwrap(), want);
    assert_eq!(read(a + 4 * PAGE, 2048).unwrap(), want);
    // A kernel writing through a buffer, read through the mapping.
    ok(iota(512, a));
    assert_eq!(read(base, 512).unwrap(), want[..512]);
    // The buffer is device memory of the current context.
    let mut owner: CUcontext = null_mut();
    // SAFETY: a valid out-pointer (CU_POINTER_ATTRIBUTE_CONTEXT).
    ok(unsafe { cuPointerGetAttribute((&raw mut owner).cast(), 1, b) });
    assert_eq!(owner, c);
    let mut mtype = 0u32;
    // SAFETY: a valid out-pointer (CU_POINTER_ATTRIBUTE_MEMORY_TYPE).
    ok(unsafe { cuPointerGetAttribute((&raw mut mtype).cast(), 2, b) });
    assert_eq!(mtype, 2, "CU_MEMORYTYPE_DEVICE");
    // Out of bounds of the buffer: the copy is refused.
    assert_ne!(read(b + 2 * PAGE - 4, 2).map(|_| ()), Ok(()));

    // A control-made file: two buffers, a memset through one.
    let fd2 = control::external_memory_fd(8 * PAGE).unwrap();
    let m2 = import(fd2, 8 * PAGE);
    let c0 = try_buffer(m2, 0, 8 * PAGE, 0).unwrap();
    let c1 = try_buffer(m2, 7 * PAGE, 100, 0).unwrap();
    assert_eq!(read(c1, 25).unwrap(), vec![0; 25], "zeroed");
    // SAFETY: softcuda's export; 1024 words at `c0 + 7 pages`, inside the buffer.
    ok(unsafe { cuMemsetD32_v2(c0 + 7 * PAGE, 0xC0FF_EE00, 1024) });
    assert_eq!(read(c1, 25).unwrap(), vec![0xC0FF_EE00; 25]);
    assert_eq!(counts(), (2, 4, 0));
    for p in [a, b, c0, c1] {
        ok(free(p));
    }
    assert_eq!(counts(), (2, 0, 0));
    ok(destroy_memory(m));
    ok(destroy_memory(m2));
    // The VMM mapping still holds what was written through the buffers.
    assert_eq!(read(base, 512).unwrap(), want[..512]);
    ok(unmap(base, G));
    ok(address_free(base, G));
    ok(release(h));
    destroy(c);
    no_leaks();
}

#[test]
fn refused_imports_leave_the_descriptor_with_the_caller() {
    let _g = serial();
    let fd = control::external_memory_fd(16 * PAGE).unwrap();
    let raw = fd.as_raw_fd();
    let d = |type_, size, flags| mem_desc(raw, type_, size, flags);
    // No current context.
    assert_eq!(try_import(&d(1, PAGE, 0)), Err(code::INVALID_CONTEXT));
    let c = ctx();
    for (desc, want) in [
        (d(2, PAGE, 0), code::NOT_SUPPORTED),           // OPAQUE_WIN32
        (d(4, PAGE, 0), code::NOT_SUPPORTED),           // D3D12_HEAP
        (d(9, PAGE, 0), code::NOT_SUPPORTED),           // DMABUF_FD
        (d(0, PAGE, 0), code::INVALID_VALUE),           // no type
        (d(77, PAGE, 0), code::INVALID_VALUE),          // unknown type
        (d(1, PAGE, 2), code::INVALID_VALUE),           // unknown flag
        (d(1, 0, 0), code::INVALID_VALUE),              // empty
        (d(1, 16 * PAGE + 1, 0), code::INVALID_VALUE),  // past the file's end
        (mem_desc(0, 1, PAGE, 0), code::INVALID_VALUE), // standard input
        (mem_desc(-1, 1, PAGE, 0), code::INVALID_VALUE),
    ] {
        assert_eq!(try_import(&desc), Err(want));
        assert!(open(raw), "the caller still owns its descriptor");
    }
    // SAFETY: a null out-pointer and a null descriptor are refused.
    unsafe {
        assert_eq!(
            cuImportExternalMemory(null_mut(), &d(1, PAGE, 0)),
            code::INVALID_VALUE
        );
        let mut m = null_mut();
        assert_eq!(cuImportExternalMemory(&mut m, null()), code::INVALID_VALUE);
    }
    // A semaphore file is no memory file; neither is a read-only view of one.
    let sem = control::external_semaphore_fd().unwrap();
    assert_eq!(
        try_import(&mem_desc(sem.as_raw_fd(), 1, 8, 0)),
        Err(code::INVALID_VALUE)
    );
    let ro = std::fs::File::open(format!("/proc/self/fd/{raw}")).unwrap();
    assert_eq!(
        try_import(&mem_desc(ro.as_raw_fd(), 1, PAGE, 0)),
        Err(code::INVALID_VALUE)
    );
    assert!(open(raw) && open(sem.as_raw_fd()) && open(ro.as_raw_fd()));
    drop(ro);
    assert_eq!(counts(), (0, 0, 0));
    // A good import takes it: importing the same number again is refused.
    let m = import(fd, 16 * PAGE);
    assert_eq!(try_import(&d(1, PAGE, 0)), Err(code::INVALID_VALUE));
    assert!(open(raw));
    // Bad buffers.
    assert_eq!(
        try_buffer(m, 100, PAGE, 0),
        Err(code::INVALID_VALUE),
        "unaligned"
    );
    assert_eq!(try_buffer(m, 0, 0, 0), Err(code::INVALID_VALUE), "empty");
    assert_eq!(
        try_buffer(m, 15 * PAGE, PAGE + 1, 0),
        Err(code::INVALID_VALUE)
    );
    assert_eq!(try_buffer(m, u64::MAX - 1, 4, 0), Err(code::INVALID_VALUE));
    assert_eq!(try_buffer(m, 0, PAGE, 1), Err(code::INVALID_VALUE), "flags");
    assert_eq!(
        try_buffer(0x1234 as CUexternalMemory, 0, PAGE, 0),
        Err(code::INVALID_VALUE)
    );
    let bd = CUDA_EXTERNAL_MEMORY_BUFFER_DESC {
        offset: 0,
        size: PAGE,
        flags: 0,
        reserved: [0; 16],
    };
    // SAFETY: null pointers are refused.
    unsafe {
        assert_eq!(
            cuExternalMemoryGetMappedBuffer(null_mut(), m, &bd),
            code::INVALID_VALUE
        );
        let mut p = 0;
        assert_eq!(
            cuExternalMemoryGetMappedBuffer(&mut p, m, null()),
            code::INVALID_VALUE
        );
    }
    let last = try_buffer(m, 15 * PAGE, PAGE, 0).unwrap();
    ok(write(last + PAGE - 4, &[9]));
    assert_eq!(counts(), (1, 1, 0));
    ok(free(last));
    ok(destroy_memory(m));
    assert_eq!(destroy_memory(m), code::INVALID_VALUE, "destroyed");
    assert_eq!(destroy_memory(null_mut()), code::INVALID_VALUE);
    drop(sem);
    destroy(c);
    no_leaks();
}

#[test]
fn the_file_lives_until_the_object_and_its_last_buffer_are_gone() {
    let _g = serial();
    let c = ctx();
    let fd = control::external_memory_fd(4 * PAGE).unwrap();
    let ino = inode(&fd);
    assert_eq!(fds_on(ino), 1);
    let m = import(fd, 4 * PAGE);
    assert_eq!(fds_on(ino), 1, "kept, not duplicated");
    let a = try_buffer(m, 0, 4 * PAGE, 0).unwrap();
    let b = try_buffer(m, PAGE, PAGE, 0).unwrap();
    ok(destroy_memory(m));
    assert_eq!(
        try_buffer(m, 0, PAGE, 0),
        Err(code::INVALID_VALUE),
        "handle gone"
    );
    assert_eq!(counts(), (0, 2, 0));
    assert_eq!(fds_on(ino), 1, "open while buffers are mapped");
    // The buffers still work, and still alias.
    ok(iota(256, b));
    assert_eq!(read(a + PAGE, 2).unwrap(), [1, 4]);
    ok(free(a));
    assert_eq!(fds_on(ino), 1);
    assert_eq!(read(b + 4, 1).unwrap(), [4]);
    ok(free(b));
    assert_eq!(fds_on(ino), 0, "closed with the last buffer");
    assert_eq!(read(b, 1), Err(code::INVALID_VALUE), "unmapped");
    destroy(c);
    no_leaks();
}

#[test]
fn context_destruction_frees_the_buffers() {
    let _g = serial();
    let keep = ctx();
    let c = ctx(); // current
    let fd = control::external_memory_fd(2 * PAGE).unwrap();
    let ino = inode(&fd);
    let m = import(fd, 2 * PAGE);
    let a = try_buffer(m, 0, PAGE, 0).unwrap();
    let _b = try_buffer(m, PAGE, PAGE, 0).unwrap();
    ok(write(a, &[5, 6, 7]));
    ok(destroy_memory(m));
    assert_eq!(counts(), (0, 2, 0));
    destroy(c);
    assert_eq!(counts(), (0, 0, 0), "freed with their context");
    assert_eq!(fds_on(ino), 0, "and the file closed");
    // SAFETY: a live context.
    ok(unsafe { cuCtxSetCurrent(keep) });
    assert_eq!(read(a, 1), Err(code::INVALID_VALUE), "gone");
    destroy(keep);
    no_leaks();
}

// ---- semaphores ------------------------------------------------------------------

fn try_import_sem(fd: c_int, type_: u32, flags: u32) -> Result<CUexternalSemaphore, CUresult> {
    let d = CUDA_EXTERNAL_SEMAPHORE_HANDLE_DESC {
        type_,
        handle: CUDA_EXTERNAL_SEMAPHORE_HANDLE_DESC_handle { fd },
        flags,
        reserved: [0; 16],
    };
    let mut s = null_mut();
    // SAFETY: a valid out-pointer and descriptor.
    match unsafe { cuImportExternalSemaphore(&mut s, &d) } {
        code::SUCCESS => Ok(s),
        e => Err(e),
    }
}

/// Imports `fd` (given to softcuda): binary, or timeline if `timeline`.
#[track_caller]
fn import_sem(fd: OwnedFd, timeline: bool) -> CUexternalSemaphore {
    let s = try_import_sem(fd.into_raw_fd(), if timeline { 9 } else { 1 }, 0).unwrap();
    assert!(!s.is_null());
    s
}

fn signal_params(value: u64, flags: u32) -> CUDA_EXTERNAL_SEMAPHORE_SIGNAL_PARAMS {
    CUDA_EXTERNAL_SEMAPHORE_SIGNAL_PARAMS {
        params: CUDA_EXTERNAL_SEMAPHORE_SIGNAL_PARAMS_params {
            fence: CUDA_EXTERNAL_SEMAPHORE_fence { value },
            nvSciSync: CUDA_EXTERNAL_SEMAPHORE_nvSciSync { reserved: 0 },
            keyedMutex: Default::default(),
            reserved: [0; 12],
        },
        flags,
        reserved: [0; 16],
    }
}

fn wait_params(value: u64, flags: u32) -> CUDA_EXTERNAL_SEMAPHORE_WAIT_PARAMS {
    CUDA_EXTERNAL_SEMAPHORE_WAIT_PARAMS {
        params: CUDA_EXTERNAL_SEMAPHORE_WAIT_PARAMS_params {
            fence: CUDA_EXTERNAL_SEMAPHORE_fence { value },
            nvSciSync: CUDA_EXTERNAL_SEMAPHORE_nvSciSync { reserved: 0 },
            keyedMutex: CUDA_EXTERNAL_SEMAPHORE_WAIT_keyedMutex {
                key: 3,
                timeoutMs: 1,
            },
            reserved: [0; 10],
        },
        flags,
        reserved: [0; 16],
    }
}

fn signal(sem: CUexternalSemaphore, value: u64, s: CUstream) -> CUresult {
    let p = signal_params(value, 0);
    // SAFETY: one semaphore, one parameter set.
    unsafe { cuSignalExternalSemaphoresAsync(&sem, &p, 1, s) }
}

fn wait(sem: CUexternalSemaphore, value: u64, s: CUstream) -> CUresult {
    let p = wait_params(value, 0);
    // SAFETY: one semaphore, one parameter set.
    unsafe { cuWaitExternalSemaphoresAsync(&sem, &p, 1, s) }
}

fn destroy_sem(s: CUexternalSemaphore) -> CUresult {
    // SAFETY: softcuda's export.
    unsafe { cuDestroyExternalSemaphore(s) }
}

/// A non-blocking stream (the legacy stream does not wait for it).
fn stream() -> CUstream {
    let mut s = null_mut();
    // SAFETY: a valid out-pointer; CU_STREAM_NON_BLOCKING.
    ok(unsafe { cuStreamCreate(&mut s, 1) });
    s
}

fn sync(s: CUstream) {
    // SAFETY: a live stream.
    ok(unsafe { cuStreamSynchronize(s) });
}

fn query(s: CUstream) -> CUresult {
    // SAFETY: a live stream.
    unsafe { cuStreamQuery(s) }
}

fn destroy_stream(s: CUstream) {
    // SAFETY: a live stream.
    ok(unsafe { cuStreamDestroy_v2(s) });
}

/// The marks the host functions left, in order.
static MARKS: Mutex<Vec<usize>> = Mutex::new(Vec::new());

unsafe extern "C" fn mark(data: *mut c_void) {
    MARKS.lock().unwrap().push(data as usize);
}

/// Queues a host function on `s` that appends `n` to [`MARKS`].
fn mark_on(s: CUstream, n: usize) {
    // SAFETY: a live stream and a host function that takes a number.
    ok(unsafe { cuLaunchHostFunc(s, Some(mark), n as *mut c_void) });
}

fn marks() -> Vec<usize> {
    MARKS.lock().unwrap().clone()
}

#[test]
fn a_binary_semaphore_orders_one_stream() {
    let _g = serial();
    MARKS.lock().unwrap().clear();
    let c = ctx();
    let fd = control::external_semaphore_fd().unwrap();
    let second = fd.try_clone().unwrap();
    let sem = import_sem(fd, false);
    let again = import_sem(second, false);
    assert_ne!(sem, again);
    assert_eq!(counts(), (0, 0, 2));
    let s = stream();
    ok(signal(sem, 0, s));
    ok(wait(sem, 0, s));
    mark_on(s, 1);
    sync(s);
    assert_eq!(marks(), [1]);
    // Signalled through one import, the wait through the other completes, on the
    // default stream (the calling thread waits), and takes the signal.
    ok(signal(sem, 0, null_mut()));
    ok(wait(again, 0, null_mut()));
    // Taken: a wait queued now blocks its stream until the next signal.
    ok(wait(sem, 0, s));
    mark_on(s, 2);
    std::thread::sleep(Duration::from_millis(30));
    assert_eq!(query(s), code::NOT_READY);
    assert_eq!(marks(), [1]);
    ok(signal(again, 0, null_mut()));
    sync(s);
    assert_eq!(marks(), [1, 2]);
    ok(destroy_sem(sem));
    ok(destroy_sem(again));
    destroy_stream(s);
    destroy(c);
    no_leaks();
}

#[test]
fn a_wait_holds_back_its_stream_until_another_stream_signals() {
    let _g = serial();
    MARKS.lock().unwrap().clear();
    let c = ctx();
    let fd = control::external_semaphore_fd().unwrap();
    let dup = fd.try_clone().unwrap();
    let waiter = import_sem(fd, false);
    let signaller = import_sem(dup, false);
    let (a, b) = (stream(), stream());
    let mut buf = 0;
    // SAFETY: a valid out-pointer.
    ok(unsafe { cuMemAlloc_v2(&mut buf, 64) });
    ok(wait(waiter, 0, a));
    // SAFETY: 16 words of a live allocation, on a live stream.
    ok(unsafe { cuMemsetD32Async(buf, 0xAB, 16, a) });
    mark_on(a, 2);
    // The handle goes while the wait is queued: the wait still completes.
    ok(destroy_sem(waiter));
    std::thread::sleep(Duration::from_millis(50));
    assert_eq!(query(a), code::NOT_READY, "held back by the wait");
    assert!(marks().is_empty());
    mark_on(b, 1);
    ok(signal(signaller, 0, b));
    sync(a);
    assert_eq!(marks(), [1, 2], "the signal on b came first");
    assert_eq!(read(buf, 16).unwrap(), vec![0xAB; 16]);
    sync(b);
    ok(destroy_sem(signaller));
    ok(free(buf));
    destroy_stream(a);
    destroy_stream(b);
    destroy(c);
    no_leaks();
}

#[test]
fn a_timeline_wait_needs_its_value() {
    let _g = serial();
    MARKS.lock().unwrap().clear();
    let c = ctx();
    let fd = control::external_semaphore_fd().unwrap();
    let sem = import_sem(fd, true);
    let (a, b) = (stream(), stream());
    ok(wait(sem, 5, a));
    mark_on(a, 5);
    ok(signal(sem, 3, b));
    sync(b);
    std::thread::sleep(Duration::from_millis(30));
    assert_eq!(query(a), code::NOT_READY, "3 is not 5");
    assert!(marks().is_empty());
    ok(signal(sem, 5, b));
    sync(a);
    assert_eq!(marks(), [5]);
    // A timeline never goes back: after 7 and then 4, a wait for 6 (or 5 again)
    // completes at once, on the calling thread.
    ok(signal(sem, 7, null_mut()));
    ok(signal(sem, 4, null_mut()));
    ok(wait(sem, 6, null_mut()));
    ok(wait(sem, 5, a));
    mark_on(a, 6);
    sync(a);
    assert_eq!(marks(), [5, 6]);
    // Several semaphores in one call: all of them are waited for.
    let other = import_sem(control::external_semaphore_fd().unwrap(), true);
    let sems = [sem, other];
    let waits = [wait_params(7, 0), wait_params(1, 0)];
    // SAFETY: two semaphores, two parameter sets.
    ok(unsafe { cuWaitExternalSemaphoresAsync(sems.as_ptr(), waits.as_ptr(), 2, a) });
    mark_on(a, 7);
    std::thread::sleep(Duration::from_millis(30));
    assert_eq!(marks(), [5, 6], "the second semaphore is still 0");
    ok(signal(other, 1, b));
    sync(a);
    assert_eq!(marks(), [5, 6, 7]);
    ok(destroy_sem(sem));
    ok(destroy_sem(other));
    destroy_stream(a);
    destroy_stream(b);
    destroy(c);
    no_leaks();
}

/// The child's end of [`a_semaphore_is_shared_with_another_process`]: the
/// descriptor it inherited, signalled after a pause.
const CHILD_FD: &str = "SOFTCUDA_TEST_SEMAPHORE_FD";

#[test]
fn a_semaphore_is_shared_with_another_process() {
    if let Ok(fd) = std::env::var(CHILD_FD) {
        // The child: import the inherited descriptor, signal it after a while.
        let _g = serial();
        let c = ctx();
        let sem = try_import_sem(fd.parse().unwrap(), 9, 0).unwrap();
        std::thread::sleep(Duration::from_millis(200));
        ok(signal(sem, 2, null_mut()));
        ok(destroy_sem(sem));
        destroy(c);
        no_leaks();
        return;
    }
    let _g = serial();
    MARKS.lock().unwrap().clear();
    let c = ctx();
    let fd = control::external_semaphore_fd().unwrap();
    // An inheritable duplicate for the child (FD_CLOEXEC clear).
    // SAFETY: duplicating a descriptor of ours touches no memory.
    let inherited = unsafe { fcntl(fd.as_raw_fd(), F_DUPFD, 3 as c_int) };
    assert!(inherited >= 0);
    // SAFETY: as above.
    assert_eq!(
        unsafe { fcntl(inherited, F_GETFD) } & 1,
        0,
        "not close-on-exec"
    );
    let sem = import_sem(fd, true);
    let s = stream();
    ok(wait(sem, 2, s));
    mark_on(s, 1);
    let mut child = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "a_semaphore_is_shared_with_another_process",
            "--test-threads=1",
        ])
        .env(CHILD_FD, inherited.to_string())
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // SAFETY: our duplicate (the child has its own copy now), closed here once.
    drop(unsafe { <OwnedFd as std::os::fd::FromRawFd>::from_raw_fd(inherited) });
    assert_eq!(query(s), code::NOT_READY, "waiting for the child");
    assert!(child.wait().unwrap().success(), "the child failed");
    sync(s);
    assert_eq!(marks(), [1]);
    ok(destroy_sem(sem));
    destroy_stream(s);
    destroy(c);
    no_leaks();
}

#[test]
fn semaphore_refusals() {
    let _g = serial();
    let fd = control::external_semaphore_fd().unwrap();
    let raw = fd.as_raw_fd();
    assert_eq!(try_import_sem(raw, 1, 0), Err(code::INVALID_CONTEXT));
    let c = ctx();
    for (type_, flags, want) in [
        (2, 0, code::NOT_SUPPORTED),  // OPAQUE_WIN32
        (4, 0, code::NOT_SUPPORTED),  // D3D12_FENCE
        (6, 0, code::NOT_SUPPORTED),  // NVSCISYNC
        (10, 0, code::NOT_SUPPORTED), // TIMELINE_SEMAPHORE_WIN32
        (0, 0, code::INVALID_VALUE),
        (11, 0, code::INVALID_VALUE),
        (1, 1, code::INVALID_VALUE), // flags
    ] {
        assert_eq!(try_import_sem(raw, type_, flags), Err(want));
        assert!(open(raw));
    }
    // A memory file is no semaphore file.
    let mem = control::external_memory_fd(PAGE).unwrap();
    assert_eq!(
        try_import_sem(mem.as_raw_fd(), 1, 0),
        Err(code::INVALID_VALUE)
    );
    assert_eq!(try_import_sem(-1, 1, 0), Err(code::INVALID_VALUE));
    assert!(open(mem.as_raw_fd()));
    let sem = import_sem(fd, false);
    assert_eq!(
        try_import_sem(raw, 1, 0),
        Err(code::INVALID_VALUE),
        "owned already"
    );
    // SAFETY (all below): softcuda's exports; null arrays with n > 0 are refused
    // before they are read.
    unsafe {
        ok(cuSignalExternalSemaphoresAsync(
            null(),
            null(),
            0,
            null_mut(),
        ));
        ok(cuWaitExternalSemaphoresAsync(null(), null(), 0, null_mut()));
        let p = signal_params(0, 0);
        let w = wait_params(0, 0);
        assert_eq!(
            cuSignalExternalSemaphoresAsync(null(), &p, 1, null_mut()),
            code::INVALID_VALUE
        );
        assert_eq!(
            cuWaitExternalSemaphoresAsync(&sem, null(), 1, null_mut()),
            code::INVALID_VALUE
        );
        let bad = 0x77 as CUexternalSemaphore;
        assert_eq!(
            cuSignalExternalSemaphoresAsync(&bad, &p, 1, null_mut()),
            code::INVALID_HANDLE
        );
        assert_eq!(
            cuWaitExternalSemaphoresAsync(&bad, &w, 1, null_mut()),
            code::INVALID_HANDLE
        );
        let pf = signal_params(0, 1);
        assert_eq!(
            cuSignalExternalSemaphoresAsync(&sem, &pf, 1, null_mut()),
            code::INVALID_VALUE
        );
        let wf = wait_params(0, 2);
        assert_eq!(
            cuWaitExternalSemaphoresAsync(&sem, &wf, 1, null_mut()),
            code::INVALID_VALUE
        );
        assert_eq!(
            cuSignalExternalSemaphoresAsync(&sem, &p, 1, 0x5 as CUstream),
            code::INVALID_HANDLE,
            "a bad stream"
        );
        // Under capture: not supported (no graph nodes).
        let s = stream();
        ok(cuStreamBeginCapture_v2(s, 0));
        assert_eq!(signal(sem, 0, s), code::NOT_SUPPORTED);
        assert_eq!(wait(sem, 0, s), code::NOT_SUPPORTED);
        let mut g = null_mut();
        ok(cuStreamEndCapture(s, &mut g));
        ok(cuGraphDestroy(g));
        destroy_stream(s);
        // The refusals queued nothing: the semaphore is still unsignalled.
        ok(signal(sem, 0, null_mut()));
        ok(wait(sem, 0, null_mut()));
    }
    assert_eq!(counts(), (0, 0, 1));
    ok(destroy_sem(sem));
    assert_eq!(destroy_sem(sem), code::INVALID_HANDLE);
    assert_eq!(
        signal(sem, 0, null_mut()),
        code::INVALID_HANDLE,
        "destroyed"
    );
    drop(mem);
    destroy(c);
    no_leaks();
}

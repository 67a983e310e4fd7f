//! Memory pools shared between processes through the C ABI
//! (`cuMemPoolExportToShareableHandle`, `cuMemPoolImportFromShareableHandle`,
//! `cuMemPoolExportPointer`, `cuMemPoolImportPointer`), with two processes: the test
//! binary re-runs itself (`--exact <test>`) with `SOFTCUDA_POOL_IPC_ROLE` naming
//! the child's part; the child opens the parent's pool descriptor through
//! `/proc/<parent>/fd/<n>` and gets the export data in hex; it reports on standard
//! output and exits non-zero on any failure (or after a minute). Memory shared both
//! ways (a copy and a kernel in the child, seen by the parent), refusals, the
//! stream-ordered free of an imported pointer, and the exporter importing its own
//! pool. Every test ends with no live object, in both processes.
#![cfg(target_os = "linux")]

mod common;
#[path = "common/two_process.rs"]
mod two_process;
#[path = "common/vmm.rs"]
mod vmm_common;

use common::{function, launch_kernel, no_leaks, ok, pinned_pool_props, serial};
use softcuda::api::pool_ipc::*;
use softcuda::api::{memory::*, module::*, pool::*, stream::*};
use softcuda::control;
use softcuda::types::*;
use std::ffi::c_void;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::process::Child;
use std::ptr::null_mut;
use std::time::Duration;
use two_process::{DONE, INC, hex, unhex};
use vmm_common::{ctx, destroy, read, write};

const ROLE: &str = "SOFTCUDA_POOL_IPC_ROLE";
const PID: &str = "SOFTCUDA_POOL_IPC_PID";
const FD: &str = "SOFTCUDA_POOL_IPC_FD";
const DATA: &str = "SOFTCUDA_POOL_IPC_DATA";
const DATA2: &str = "SOFTCUDA_POOL_IPC_DATA2";

const N: usize = 1000;

fn pattern() -> Vec<u32> {
    (0..N as u32).map(|i| i * 5 + 1).collect()
}

fn spawn_child(test: &str, role: &str, vars: &[(&str, String)]) -> Child {
    two_process::spawn(test, ROLE, role, vars)
}

fn env(var: &str) -> String {
    std::env::var(var).unwrap()
}

fn props(handle_types: u32) -> CUmemPoolProps {
    CUmemPoolProps {
        handleTypes: handle_types,
        ..pinned_pool_props()
    }
}

fn create_pool(handle_types: u32) -> Result<CUmemoryPool, CUresult> {
    let mut p = null_mut();
    // SAFETY: valid out-pointer and properties.
    match unsafe { cuMemPoolCreate(&mut p, &props(handle_types)) } {
        code::SUCCESS => Ok(p),
        e => Err(e),
    }
}

fn destroy_pool(p: CUmemoryPool) -> CUresult {
    // SAFETY: plain call; softcuda checks the handle.
    unsafe { cuMemPoolDestroy(p) }
}

fn alloc_from(pool: CUmemoryPool, size: usize, s: CUstream) -> Result<CUdeviceptr, CUresult> {
    let mut d = 0;
    // SAFETY: a valid out-pointer.
    match unsafe { cuMemAllocFromPoolAsync(&mut d, size, pool, s) } {
        code::SUCCESS => Ok(d),
        e => Err(e),
    }
}

fn export_pool(pool: CUmemoryPool, ty: u32, flags: u64) -> Result<OwnedFd, CUresult> {
    let mut fd: i32 = -1;
    // SAFETY: `fd` is an `int`, as the POSIX handle type writes.
    match unsafe { cuMemPoolExportToShareableHandle((&raw mut fd).cast(), pool, ty, flags) } {
        // SAFETY: a new descriptor, ours to close.
        code::SUCCESS => Ok(unsafe { OwnedFd::from_raw_fd(fd) }),
        e => Err(e),
    }
}

fn import_pool(fd: i32, ty: u32, flags: u64) -> Result<CUmemoryPool, CUresult> {
    let mut p = null_mut();
    // SAFETY: a valid out-pointer; the descriptor travels as a pointer.
    match unsafe {
        cuMemPoolImportFromShareableHandle(&mut p, fd as isize as *mut c_void, ty, flags)
    } {
        code::SUCCESS => Ok(p),
        e => Err(e),
    }
}

fn export_ptr(d: CUdeviceptr) -> Result<[u8; 64], CUresult> {
    let mut data = CUmemPoolPtrExportData { reserved: [0; 64] };
    // SAFETY: a valid out-pointer.
    match unsafe { cuMemPoolExportPointer(&mut data, d) } {
        code::SUCCESS => Ok(data.reserved),
        e => Err(e),
    }
}

fn import_ptr(pool: CUmemoryPool, data: [u8; 64]) -> Result<CUdeviceptr, CUresult> {
    let mut d = 0;
    let mut data = CUmemPoolPtrExportData { reserved: data };
    // SAFETY: valid pointers.
    match unsafe { cuMemPoolImportPointer(&mut d, pool, &mut data) } {
        code::SUCCESS => Ok(d),
        e => Err(e),
    }
}

fn free(d: CUdeviceptr) -> CUresult {
    // SAFETY: plain call; softcuda checks the address.
    unsafe { cuMemFree_v2(d) }
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

fn counts() -> (usize, usize) {
    let c = control::live_counts();
    (c.imported_pools, c.pool_imports)
}

/// The child: imports the parent's pool and its two allocations.
fn importer() {
    let _g = serial();
    let c = ctx();
    let s = stream();
    let path = format!("/proc/{}/fd/{}", env(PID), env(FD));
    let file = OwnedFd::from(
        std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(path)
            .unwrap(),
    );
    let pool = import_pool(
        file.as_raw_fd(),
        CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR,
        0,
    )
    .unwrap();
    assert_eq!(counts(), (1, 0));
    assert_eq!(control::live_counts().pools, 0, "not a created pool");
    // An imported pool cannot allocate nor be any other pool call's.
    assert_eq!(alloc_from(pool, 64, s), Err(code::INVALID_VALUE));
    let mut v = 0u64;
    // SAFETY: a valid out-pointer.
    let r = unsafe { cuMemPoolGetAttribute(pool, 5, (&raw mut v).cast()) };
    assert_eq!(r, code::INVALID_VALUE);
    // SAFETY: plain call.
    assert_eq!(unsafe { cuDeviceSetMemPool(0, pool) }, code::INVALID_VALUE);
    let data = unhex(&env(DATA));
    let p = import_ptr(pool, data).unwrap();
    assert_eq!(
        import_ptr(pool, data),
        Ok(p),
        "a second import: the same mapping"
    );
    assert_eq!(counts(), (1, 1));
    assert_eq!(read(p, N), Ok(pattern()), "the parent's bytes");
    ok(inc(p, N as u32));
    assert_eq!(read(p, N), Ok(pattern().iter().map(|x| x + 1).collect()));
    ok(free(p));
    assert_eq!(
        read(p, 1).map(|v| v.len()),
        Ok(1),
        "imported twice: still mapped"
    );
    ok(free(p));
    assert_eq!(counts(), (1, 0));
    assert_eq!(read(p, 1), Err(code::INVALID_VALUE), "unmapped");
    assert_eq!(free(p), code::INVALID_VALUE, "freed as often as imported");
    // Bad data.
    let mut bad = data;
    bad[0] ^= 1;
    assert_eq!(import_ptr(pool, bad), Err(code::INVALID_VALUE), "magic");
    let mut bad = data;
    bad[16] ^= 0x40;
    assert_eq!(
        import_ptr(pool, bad),
        Err(code::INVALID_VALUE),
        "another pool"
    );
    let mut bad = data;
    bad[24] |= 8;
    assert_eq!(import_ptr(pool, bad), Err(code::INVALID_VALUE), "unaligned");
    let mut bad = data;
    bad[30] = 1;
    assert_eq!(
        import_ptr(pool, bad),
        Err(code::INVALID_VALUE),
        "past the file"
    );
    let mut dflt = null_mut();
    // SAFETY: a valid out-pointer.
    ok(unsafe { cuDeviceGetDefaultMemPool(&mut dflt, 0) });
    assert_eq!(
        import_ptr(dflt, data),
        Err(code::INVALID_VALUE),
        "not imported"
    );
    // A stream-ordered free unmaps when the stream reaches it.
    let q = import_ptr(pool, unhex(&env(DATA2))).unwrap();
    assert_eq!(read(q, N), Ok(vec![9; N]));
    assert_eq!(counts(), (1, 1));
    // SAFETY: plain calls: a live stream.
    unsafe {
        ok(cuStreamAddCallback(s, Some(pause), null_mut(), 0));
        ok(cuMemFreeAsync(q, s));
        assert_eq!(cuMemFreeAsync(q, s), code::INVALID_VALUE, "a double free");
    }
    assert_eq!(counts(), (1, 1), "still mapped until the stream reaches it");
    sync(s);
    assert_eq!(counts(), (1, 0));
    assert_eq!(read(q, 1), Err(code::INVALID_VALUE));
    // The descriptor stays ours: it imports again.
    let again = import_pool(
        file.as_raw_fd(),
        CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR,
        0,
    )
    .unwrap();
    assert_eq!(counts(), (2, 0));
    ok(destroy_pool(again));
    // A pointer stays mapped after its pool is destroyed, until freed.
    let p = import_ptr(pool, data).unwrap();
    ok(destroy_pool(pool));
    assert_eq!(destroy_pool(pool), code::INVALID_VALUE, "destroyed already");
    assert_eq!(import_ptr(pool, data), Err(code::INVALID_VALUE));
    assert_eq!(read(p, 1), Ok(vec![pattern()[0] + 1]));
    assert_eq!(counts(), (0, 1));
    // SAFETY: plain call.
    ok(unsafe { cuMemFreeAsync(p, s) });
    sync(s);
    destroy_stream(s);
    destroy(c);
    drop(file);
    no_leaks();
    println!("{DONE}");
}

/// Holds the stream a little, so that the free queued after it has not run yet.
unsafe extern "C" fn pause(_: CUstream, _: CUresult, _: *mut c_void) {
    std::thread::sleep(Duration::from_millis(300));
}

#[test]
fn a_pool_is_shared_with_another_process() {
    const TEST: &str = "a_pool_is_shared_with_another_process";
    if two_process::role(ROLE).as_deref() == Some("importer") {
        importer();
        return;
    }
    let _g = serial();
    let c = ctx();
    let s = stream();
    let pool = create_pool(CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR).unwrap();
    assert_eq!(control::live_counts().pools, 1);
    let a = alloc_from(pool, N * 4, s).unwrap();
    let b = alloc_from(pool, N * 4, s).unwrap();
    sync(s);
    ok(write(a, &pattern()));
    ok(write(b, &[9; N]));
    let fd = export_pool(pool, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0).unwrap();
    let data = export_ptr(a).unwrap();
    assert_eq!(export_ptr(a), Ok(data), "the same data again");
    let data2 = export_ptr(b).unwrap();
    assert_ne!(data, data2);
    let child = spawn_child(
        TEST,
        "importer",
        &[
            (PID, std::process::id().to_string()),
            (FD, fd.as_raw_fd().to_string()),
            (DATA, hex(&data)),
            (DATA2, hex(&data2)),
        ],
    );
    two_process::finish(child);
    let want: Vec<u32> = pattern().iter().map(|v| v + 1).collect();
    assert_eq!(read(a, N), Ok(want), "the child's kernel wrote here");
    assert_eq!(
        read(b, N),
        Ok(vec![9; N]),
        "the child's unmapping left the bytes"
    );
    ok(free(a));
    // SAFETY: plain call.
    ok(unsafe { cuMemFreeAsync(b, s) });
    sync(s);
    ok(destroy_pool(pool));
    drop(fd);
    destroy_stream(s);
    destroy(c);
    no_leaks();
}

#[test]
fn what_cannot_be_shared_is_refused() {
    let _g = serial();
    let c = ctx();
    let s = stream();
    assert_eq!(
        create_pool(CU_MEM_HANDLE_TYPE_WIN32),
        Err(code::NOT_SUPPORTED)
    );
    assert_eq!(
        create_pool(CU_MEM_HANDLE_TYPE_FABRIC),
        Err(code::NOT_SUPPORTED)
    );
    assert_eq!(create_pool(1 | 2), Err(code::NOT_SUPPORTED));
    assert_eq!(create_pool(16), Err(code::INVALID_VALUE), "an unknown bit");
    let plain = create_pool(CU_MEM_HANDLE_TYPE_NONE).unwrap();
    let posix = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
    assert_eq!(
        export_pool(plain, posix, 0).err(),
        Some(code::INVALID_VALUE)
    );
    let mut dflt = null_mut();
    // SAFETY: a valid out-pointer.
    ok(unsafe { cuDeviceGetDefaultMemPool(&mut dflt, 0) });
    assert_eq!(export_pool(dflt, posix, 0).err(), Some(code::INVALID_VALUE));
    let pool = create_pool(posix).unwrap();
    assert_eq!(
        export_pool(pool, posix, 1).err(),
        Some(code::INVALID_VALUE),
        "flags"
    );
    assert_eq!(
        export_pool(pool, CU_MEM_HANDLE_TYPE_WIN32, 0).err(),
        Some(code::NOT_SUPPORTED)
    );
    assert_eq!(export_pool(pool, 16, 0).err(), Some(code::INVALID_VALUE));
    // Pointers of other memory.
    let x = alloc_from(plain, 256, s).unwrap();
    let y = alloc_from(pool, 256, s).unwrap();
    sync(s);
    assert_eq!(
        export_ptr(x),
        Err(code::INVALID_VALUE),
        "a pool that is not exportable"
    );
    assert_eq!(export_ptr(y + 4), Err(code::INVALID_VALUE), "not the start");
    let mut z = 0;
    // SAFETY: a valid out-pointer.
    ok(unsafe { cuMemAlloc_v2(&mut z, 256) });
    assert_eq!(export_ptr(z), Err(code::INVALID_VALUE), "cuMemAlloc memory");
    assert!(export_ptr(y).is_ok());
    // SAFETY: plain call.
    ok(unsafe { cuMemFreeAsync(y, s) });
    assert_eq!(export_ptr(y), Err(code::INVALID_VALUE), "its free called");
    // Descriptors that are no pool file.
    assert_eq!(
        import_pool(0, posix, 0),
        Err(code::INVALID_VALUE),
        "standard input"
    );
    assert_eq!(import_pool(-1, posix, 0), Err(code::INVALID_VALUE));
    let fd = export_pool(pool, posix, 0).unwrap();
    assert_eq!(
        import_pool(fd.as_raw_fd(), posix, 1),
        Err(code::INVALID_VALUE),
        "flags"
    );
    assert_eq!(
        import_pool(fd.as_raw_fd(), CU_MEM_HANDLE_TYPE_FABRIC, 0),
        Err(code::NOT_SUPPORTED)
    );
    assert_eq!(counts(), (0, 0));
    sync(s);
    ok(free(x));
    ok(free(z));
    ok(destroy_pool(plain));
    ok(destroy_pool(pool));
    drop(fd);
    destroy_stream(s);
    destroy(c);
    no_leaks();
}

#[test]
fn the_exporter_may_import_its_own_pool() {
    let _g = serial();
    let c = ctx();
    let s = stream();
    let posix = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
    let pool = create_pool(posix).unwrap();
    let a = alloc_from(pool, N * 4, s).unwrap();
    sync(s);
    ok(write(a, &pattern()));
    let fd = export_pool(pool, posix, 0).unwrap();
    let imported = import_pool(fd.as_raw_fd(), posix, 0).unwrap();
    let alias = import_ptr(imported, export_ptr(a).unwrap()).unwrap();
    assert_ne!(alias, a, "a second mapping");
    assert_eq!(read(alias, N), Ok(pattern()));
    ok(write(alias, &[3; N]));
    assert_eq!(read(a, N), Ok(vec![3; N]), "the same pages");
    // The exporter frees (the block goes back to the system at once: threshold 0):
    // the importer's mapping stays valid and reads zeros.
    ok(free(a));
    assert_eq!(read(alias, N), Ok(vec![0; N]));
    ok(free(alias));
    assert_eq!(counts(), (1, 0));
    ok(destroy_pool(imported));
    ok(destroy_pool(pool));
    drop(fd);
    destroy_stream(s);
    destroy(c);
    no_leaks();
}

#[test]
fn contexts_take_their_imported_pointers_and_reset_takes_the_rest() {
    let _g = serial();
    let c = ctx();
    let s = stream();
    let posix = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
    let pool = create_pool(posix).unwrap();
    let a = alloc_from(pool, 4096, s).unwrap();
    sync(s);
    let fd = export_pool(pool, posix, 0).unwrap();
    let imported = import_pool(fd.as_raw_fd(), posix, 0).unwrap();
    let other = ctx();
    import_ptr(imported, export_ptr(a).unwrap()).unwrap();
    assert_eq!(counts(), (1, 1));
    destroy(other);
    assert_eq!(counts(), (1, 0), "the importing context took its mapping");
    drop(fd);
    destroy_stream(s);
    destroy(c);
    control::reset();
    assert_eq!(counts(), (0, 0), "reset forgets imported pools");
}

//! Virtual memory management through the C ABI, continued: release and retain of
//! handles, export and import as file descriptors, the device-memory budget, context
//! destruction, and unmapping while copies run. Every test ends with no live object
//! (VMM objects included).
#![cfg(target_os = "linux")]

mod common;
#[path = "common/vmm.rs"]
mod vmm_common;

use common::{no_leaks, ok, serial};
use softcuda::api::{context::*, memory::*, vmm::*};
use softcuda::control;
use softcuda::types::*;
use std::ffi::{c_int, c_void};
use std::ptr::null_mut;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use vmm_common::*;

unsafe extern "C" {
    fn close(fd: c_int) -> c_int;
    fn pipe(fds: *mut c_int) -> c_int;
}

#[test]
fn released_memory_lives_until_unmapped() {
    let _g = serial();
    let c = ctx();
    let before = free_mem();
    let h = create(G);
    let base = reserve(G);
    map_rw(base, G, h);
    ok(write(base, &[5, 6, 7]));
    ok(release(h));
    assert_eq!(
        properties(h).err(),
        Some(code::INVALID_VALUE),
        "the handle is gone"
    );
    assert_eq!(read(base, 3).unwrap(), [5, 6, 7], "the memory is not");
    ok(iota(2, base));
    assert_eq!(read(base, 3).unwrap(), [1, 4, 7]);
    assert_eq!(control::live_counts().vmm_allocations, 1);
    assert_eq!(free_mem(), before - G, "still counted");
    ok(unmap(base, G));
    assert_eq!(control::live_counts().vmm_allocations, 0);
    assert_eq!(free_mem(), before, "given back once unmapped");
    ok(address_free(base, G));
    destroy(c);
    no_leaks();
}

#[test]
fn a_retained_handle_needs_its_own_release() {
    let _g = serial();
    let h = create(G);
    let base = reserve(2 * G);
    // SAFETY (all below): softcuda's exports, called as C would call them.
    unsafe {
        ok(cuMemMap(base, G, 0, h, 0));
        let mut r = 0;
        ok(cuMemRetainAllocationHandle(
            &mut r,
            (base + 12345) as *mut c_void,
        ));
        assert_eq!(r, h);
        assert_eq!(
            cuMemRetainAllocationHandle(&mut r, (base + G as u64) as *mut c_void),
            code::INVALID_VALUE,
            "past the mapping"
        );
        assert_eq!(
            cuMemRetainAllocationHandle(null_mut(), base as *mut c_void),
            code::INVALID_VALUE
        );
        ok(release(h));
        assert_eq!(properties(h).unwrap().location.id, 0, "held by the retain");
        ok(release(h));
        assert_eq!(properties(h).err(), Some(code::INVALID_VALUE));
        // Retaining through the mapping makes the handle valid again.
        ok(cuMemRetainAllocationHandle(&mut r, base as *mut c_void));
        assert_eq!(r, h);
        assert!(properties(h).is_ok());
        ok(unmap(base, G));
        assert_eq!(control::live_counts().vmm_allocations, 1, "held");
        ok(release(h));
        ok(address_free(base, 2 * G));
    }
    no_leaks();
}

#[test]
fn exported_memory_imports_as_an_alias() {
    let _g = serial();
    let c = ctx();
    let posix = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
    let h = try_create(G, &prop(1, posix)).unwrap();
    let plain = create(G);
    let mut fd: c_int = -1;
    // SAFETY (all below): softcuda's exports and libc, called as C would call them.
    unsafe {
        assert_eq!(
            cuMemExportToShareableHandle((&raw mut fd).cast(), plain, posix, 0),
            code::INVALID_VALUE,
            "not requested at creation"
        );
        assert_eq!(
            cuMemExportToShareableHandle((&raw mut fd).cast(), h, CU_MEM_HANDLE_TYPE_FABRIC, 0),
            code::NOT_SUPPORTED
        );
        assert_eq!(
            cuMemExportToShareableHandle((&raw mut fd).cast(), h, posix, 1),
            code::INVALID_VALUE,
            "flags"
        );
        ok(cuMemExportToShareableHandle(
            (&raw mut fd).cast(),
            h,
            posix,
            0,
        ));
        assert!(fd >= 0);
        let p = properties(h).unwrap();
        assert_eq!((p.location.id, p.requestedHandleTypes), (1, posix));
        let mut dev1 = [0usize; 2];
        let info = |free: &mut usize| {
            let mut t = 0;
            let mut c1 = null_mut();
            ok(cuCtxCreate_v2(&mut c1, 0, 1));
            ok(cuMemGetInfo_v2(free, &mut t));
            destroy(c1);
            ok(cuCtxSetCurrent(c));
        };
        info(&mut dev1[0]);
        let mut h2 = 0;
        ok(cuMemImportFromShareableHandle(
            &mut h2,
            fd as usize as *mut c_void,
            posix,
        ));
        info(&mut dev1[1]);
        assert_eq!(dev1[0], dev1[1], "an import is not counted again");
        assert_ne!(h2, h);
        let p2 = properties(h2).unwrap();
        assert_eq!(
            (p2.type_, p2.location.type_),
            (CU_MEM_ALLOCATION_TYPE_PINNED, CU_MEM_LOCATION_TYPE_DEVICE)
        );
        assert_eq!((p2.location.id, p2.requestedHandleTypes), (1, posix));
        assert_eq!(close(fd), 0, "the caller keeps its descriptor");
        let base = reserve(2 * G);
        map_rw(base, G, h);
        map_rw(base + G as u64, G, h2);
        ok(write(base + 40, &[11, 22]));
        assert_eq!(read(base + G as u64 + 40, 2).unwrap(), [11, 22]);
        // The original goes; the import keeps the memory.
        ok(unmap(base, G));
        ok(release(h));
        assert_eq!(read(base + G as u64 + 40, 2).unwrap(), [11, 22]);
        ok(unmap(base + G as u64, G));
        ok(release(h2));
        ok(address_free(base, 2 * G));
        ok(release(plain));
        // What is not softcuda VMM memory.
        let mut fds = [-1; 2];
        assert_eq!(pipe(fds.as_mut_ptr()), 0);
        for f in [fds[0], fds[1], 0, -1, 100_000] {
            assert_eq!(
                cuMemImportFromShareableHandle(&mut h2, f as isize as *mut c_void, posix),
                code::INVALID_VALUE,
                "descriptor {f}"
            );
        }
        assert_eq!(
            cuMemImportFromShareableHandle(&mut h2, fds[0] as usize as *mut c_void, 2),
            code::NOT_SUPPORTED
        );
        close(fds[0]);
        close(fds[1]);
    }
    destroy(c);
    no_leaks();
}

#[test]
fn physical_memory_counts_against_the_device() {
    let _g = serial();
    let c = ctx();
    let before = free_mem();
    let all = before / G * G;
    let big = create(all);
    assert!(free_mem() < G);
    assert_eq!(try_create(G, &prop(0, 0)), Err(code::OUT_OF_MEMORY));
    // Device 1 has its own.
    let other = try_create(G, &prop(1, 0)).unwrap();
    ok(release(other));
    // cuMemAlloc shares the budget.
    let mut d = 0;
    // SAFETY: a valid out-pointer.
    assert_eq!(unsafe { cuMemAlloc_v2(&mut d, G) }, code::OUT_OF_MEMORY);
    ok(release(big));
    assert_eq!(free_mem(), before);
    let h = create(G);
    ok(release(h));
    // The allocation budget of the test controls applies too.
    control::fail_allocations_after(G as u64);
    let r = try_create(2 * G, &prop(0, 0));
    let h = try_create(G, &prop(0, 0));
    control::clear_faults();
    assert_eq!(r, Err(code::OUT_OF_MEMORY));
    ok(release(h.unwrap()));
    destroy(c);
    no_leaks();
}

#[test]
fn context_destruction_leaves_mappings_intact() {
    let _g = serial();
    let a = ctx();
    let h = create(G);
    let base = reserve(G);
    map_rw(base, G, h);
    ok(write(base, &[9, 8, 7]));
    let mut owner: CUcontext = null_mut();
    // SAFETY: a pointer-sized out-value.
    ok(unsafe { cuPointerGetAttribute((&raw mut owner).cast(), 1, base) });
    assert_eq!(owner, a);
    destroy(a);
    let b = ctx();
    assert_eq!(read(base, 3).unwrap(), [9, 8, 7]);
    // SAFETY: a pointer-sized out-value.
    ok(unsafe { cuPointerGetAttribute((&raw mut owner).cast(), 1, base) });
    assert!(owner.is_null(), "its context is gone");
    ok(iota(1, base));
    assert_eq!(read(base, 3).unwrap(), [1, 8, 7]);
    ok(unmap(base, G));
    ok(release(h));
    ok(address_free(base, G));
    destroy(b);
    no_leaks();
}

#[test]
fn unmapping_while_copies_run_is_clean() {
    let _g = serial();
    let h = create(G);
    let base = reserve(G);
    const WORDS: usize = 1024;
    static STOP: AtomicBool = AtomicBool::new(false);
    // Copies that met a mapping, as the copier goes.
    static WROTE: AtomicU32 = AtomicU32::new(0);
    static READ_OK: AtomicU32 = AtomicU32::new(0);
    STOP.store(false, Ordering::SeqCst);
    WROTE.store(0, Ordering::SeqCst);
    READ_OK.store(0, Ordering::SeqCst);
    let copier = std::thread::spawn(move || {
        let mut c = ctx();
        let mut last = 0; // a fresh allocation is zero
        let mut k = 0u32;
        while !STOP.load(Ordering::SeqCst) {
            k += 1;
            let mut results = vec![write(base, &vec![k; WORDS])];
            if results[0] == code::SUCCESS {
                last = k;
                WROTE.fetch_add(1, Ordering::SeqCst);
            }
            match read(base, WORDS) {
                Ok(v) => {
                    // The memory file holds the last write that succeeded, whatever
                    // was mapped or unmapped in between.
                    assert!(
                        v.iter().all(|&x| x == last),
                        "read {} after writing {last}",
                        v[0]
                    );
                    READ_OK.fetch_add(1, Ordering::SeqCst);
                }
                Err(e) => results.push(e),
            }
            for r in results {
                assert!(
                    matches!(
                        r,
                        code::SUCCESS | code::INVALID_VALUE | code::ILLEGAL_ADDRESS
                    ),
                    "copy failed with {r}"
                );
                if r == code::ILLEGAL_ADDRESS {
                    // Unmapped between the check and the copy: sticky, as on a GPU.
                    destroy(c);
                    c = ctx();
                }
            }
        }
        destroy(c);
    });
    // 300 cycles at least, and on until copies have met a mapping (the copier
    // may start late on a loaded machine or under valgrind), for a minute at most.
    let met = || WROTE.load(Ordering::SeqCst) > 0 && READ_OK.load(Ordering::SeqCst) > 0;
    let t = std::time::Instant::now();
    let mut cycles = 0;
    while cycles < 300 || (!met() && t.elapsed() < std::time::Duration::from_secs(60)) {
        map_rw(base, G, h);
        std::thread::sleep(std::time::Duration::from_micros(300));
        ok(unmap(base, G));
        cycles += 1;
    }
    STOP.store(true, Ordering::SeqCst);
    copier.join().unwrap();
    let (wrote, read_ok) = (WROTE.load(Ordering::SeqCst), READ_OK.load(Ordering::SeqCst));
    assert!(
        wrote > 0 && read_ok > 0,
        "no copy ever met a mapping ({wrote}, {read_ok})"
    );
    ok(release(h));
    ok(address_free(base, G));
    no_leaks();
}

//! Virtual memory management through the C ABI: granularity and the checks of the
//! allocation properties, physical memory mapped into reserved addresses and used by
//! copies and kernels, aliasing between two mappings of one allocation, adjacent
//! mappings as one stretch of memory, inaccessible addresses, and every refusal.
//! Handles, sharing, the budget and concurrency are `tests/vmm_handles.rs`. Every
//! test ends with no live object (VMM objects included).
#![cfg(target_os = "linux")]

mod common;
#[path = "common/vmm.rs"]
mod vmm_common;

use common::{fault, no_leaks, ok, serial};
use softcuda::api::{context::*, memory::*, proc::*, stream::*, vmm::*};
use softcuda::control;
use softcuda::types::*;
use std::ffi::{c_int, c_void};
use std::ptr::null_mut;
use std::sync::atomic::{AtomicBool, Ordering};
use vmm_common::*;

#[test]
fn the_granularity_is_2_mib_and_properties_are_checked() {
    let _g = serial();
    let mut g = 0usize;
    // SAFETY (all below): softcuda's exports, called as C would call them.
    unsafe {
        for option in [
            CU_MEM_ALLOC_GRANULARITY_MINIMUM,
            CU_MEM_ALLOC_GRANULARITY_RECOMMENDED,
        ] {
            g = 0;
            ok(cuMemGetAllocationGranularity(&mut g, &prop(1, 1), option));
            assert_eq!(g, G);
        }
        let check = |p: CUmemAllocationProp| {
            let mut x = 0usize;
            cuMemGetAllocationGranularity(&mut x, &p, 0)
        };
        let mut p = prop(0, 0);
        p.type_ = CU_MEM_ALLOCATION_TYPE_MANAGED;
        assert_eq!(check(p), code::INVALID_VALUE, "not pinned");
        p = prop(0, 0);
        p.location.type_ = CU_MEM_LOCATION_TYPE_HOST;
        assert_eq!(check(p), code::NOT_SUPPORTED, "host memory");
        p.location.type_ = CU_MEM_LOCATION_TYPE_INVALID;
        assert_eq!(check(p), code::INVALID_VALUE);
        assert_eq!(check(prop(2, 0)), code::INVALID_DEVICE, "two devices");
        assert_eq!(check(prop(-1, 0)), code::INVALID_DEVICE);
        assert_eq!(
            check(prop(0, CU_MEM_HANDLE_TYPE_FABRIC)),
            code::NOT_SUPPORTED
        );
        assert_eq!(
            check(prop(0, CU_MEM_HANDLE_TYPE_WIN32)),
            code::NOT_SUPPORTED
        );
        assert_eq!(check(prop(0, 0x100)), code::INVALID_VALUE);
        ok(check(prop(0, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR)));
        assert_eq!(
            cuMemGetAllocationGranularity(&mut g, &prop(0, 0), 2),
            code::INVALID_VALUE
        );
        assert_eq!(
            cuMemGetAllocationGranularity(null_mut(), &prop(0, 0), 0),
            code::INVALID_VALUE
        );
        assert_eq!(
            cuMemGetAllocationGranularity(&mut g, core::ptr::null(), 0),
            code::INVALID_VALUE
        );
        // The same checks at creation.
        assert_eq!(
            try_create(G, &prop(0, CU_MEM_HANDLE_TYPE_WIN32_KMT)),
            Err(code::NOT_SUPPORTED)
        );
        assert_eq!(try_create(G, &prop(5, 0)), Err(code::INVALID_DEVICE));
        // Found through cuGetProcAddress, and the device says it has VMM.
        let mut f = null_mut();
        ok(cuGetProcAddress_v2(
            c"cuMemMap".as_ptr(),
            &mut f,
            12000,
            0,
            null_mut(),
        ));
        assert!(!f.is_null());
        let mut v = 0;
        ok(softcuda::api::device::cuDeviceGetAttribute(&mut v, 102, 0));
        assert_eq!(v, 1, "VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED");
        ok(softcuda::api::device::cuDeviceGetAttribute(&mut v, 103, 0));
        assert_eq!(v, 1, "HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED");
        // Before cuInit.
        control::reset();
        assert_eq!(
            cuMemGetAllocationGranularity(&mut g, &prop(0, 0), 0),
            code::NOT_INITIALIZED
        );
        assert_eq!(try_create(G, &prop(0, 0)), Err(code::NOT_INITIALIZED));
    }
    // The C layout of CUDA 12's CUmemAllocationProp.
    assert_eq!(size_of::<CUmemAllocationProp>(), 32);
    assert_eq!(align_of::<CUmemAllocationProp>(), 8);
    assert_eq!(
        core::mem::offset_of!(CUmemAllocationProp, requestedHandleTypes),
        4
    );
    assert_eq!(core::mem::offset_of!(CUmemAllocationProp, location), 8);
    assert_eq!(
        core::mem::offset_of!(CUmemAllocationProp, win32HandleMetaData),
        16
    );
    assert_eq!(core::mem::offset_of!(CUmemAllocationProp, allocFlags), 24);
    no_leaks();
}

#[test]
fn mapped_memory_round_trips_through_copies_and_kernels() {
    let _g = serial();
    let c = ctx();
    let before = free_mem();
    let h = create(2 * G);
    assert_eq!(free_mem(), before - 2 * G, "counted as device memory");
    let base = reserve(4 * G);
    map_rw(base, 2 * G, h);
    let words = 2 * G / 4;
    let pattern: Vec<u32> = (0..words as u32).map(|i| i ^ 0xA5A5_0000).collect();
    ok(write(base, &pattern));
    assert_eq!(read(base, words).unwrap(), pattern);
    // A kernel writes into the second half.
    let half = base + G as u64;
    ok(iota(4096, half));
    let got = read(half, 4096).unwrap();
    assert!(got.iter().enumerate().all(|(i, &v)| v == 3 * i as u32 + 1));
    assert_eq!(
        read(base, 4).unwrap(),
        pattern[..4],
        "the first half untouched"
    );
    // A memset and a device-to-device copy.
    // SAFETY (all below): softcuda's exports, called as C would call them.
    unsafe {
        ok(cuMemsetD32_v2(base, 7, 16));
        ok(cuMemcpyDtoD_v2(base + 64, half, 64));
    }
    let v = read(base, 32).unwrap();
    assert_eq!(v[..16], [7; 16]);
    assert_eq!(v[16..], (0..16).map(|i| 3 * i + 1).collect::<Vec<_>>()[..]);
    // What the pointer attributes say: device memory of device 0, the mapping's range.
    let attr = |a: u32| {
        let mut v = 0u64;
        // SAFETY: every attribute asked for fits in 8 bytes.
        ok(unsafe { cuPointerGetAttribute((&raw mut v).cast(), a, half + 12) });
        v
    };
    assert_eq!(attr(2) as u32, CU_MEMORYTYPE_DEVICE);
    assert_eq!(attr(9) as u32, 0, "device ordinal");
    assert_eq!(attr(11), base, "range start");
    assert_eq!(attr(12), 2 * G as u64, "range size");
    assert_eq!(attr(4), 0, "no host pointer");
    assert_eq!(get_access(half, 0), Ok(3));
    assert_eq!(get_access(half, 1), Ok(0));
    assert_eq!(get_access(base + 2 * G as u64, 0), Err(code::INVALID_VALUE));
    assert_eq!(
        control::live_counts(),
        control::Counts {
            contexts: 1,
            vmm_allocations: 1,
            vmm_reservations: 1,
            vmm_mappings: 1,
            ..Default::default()
        }
    );
    // No other free function takes it.
    // SAFETY (all below): softcuda's exports, called as C would call them.
    unsafe {
        assert_eq!(cuMemFree_v2(base), code::INVALID_VALUE);
        assert_eq!(cuMemFreeHost(base as *mut c_void), code::INVALID_VALUE);
        let mut d = 0;
        assert_eq!(
            cuMemHostGetDevicePointer_v2(&mut d, base as *mut c_void, 0),
            code::INVALID_VALUE
        );
    }
    assert_eq!(read(base, 4).unwrap(), [7; 4], "still mapped");
    ok(unmap(base, 2 * G));
    ok(release(h));
    assert_eq!(free_mem(), before, "given back");
    ok(address_free(base, 4 * G));
    destroy(c);
    no_leaks();
}

#[test]
fn two_mappings_of_one_allocation_alias() {
    let _g = serial();
    let c = ctx();
    let h = create(G);
    let base = reserve(2 * G);
    let (a, b) = (base, base + G as u64);
    // SAFETY: softcuda's exports.
    unsafe {
        ok(cuMemMap(a, G, 0, h, 0));
        ok(cuMemMap(b, G, 0, h, 0));
    }
    // One call over both (adjacent) mappings.
    ok(set_access(base, 2 * G, CU_MEM_ACCESS_FLAGS_PROT_READWRITE));
    ok(write(a + 400, &[1, 2, 3, 4]));
    assert_eq!(read(b + 400, 4).unwrap(), [1, 2, 3, 4]);
    ok(iota(64, b));
    assert_eq!(read(a + 8, 2).unwrap(), [7, 10]);
    // A copy across the seam of the two mappings: the end of the allocation, then
    // its start.
    ok(write(b - 8, &[31, 32, 33, 34]));
    assert_eq!(read(a, 2).unwrap(), [33, 34]);
    assert_eq!(read(b + G as u64 - 8, 2).unwrap(), [31, 32]);
    ok(write(a, &[1, 4]));
    // Taking one away leaves the other.
    ok(unmap(a, G));
    assert_eq!(read(b + 400, 4).unwrap(), [1, 2, 3, 4]);
    assert_eq!(read(a + 400, 4), Err(code::INVALID_VALUE));
    ok(release(h));
    ok(unmap(b, G));
    ok(address_free(base, 2 * G));
    destroy(c);
    no_leaks();
}

static GATE: AtomicBool = AtomicBool::new(false);

extern "C" fn wait_gate(_: *mut c_void) {
    while !GATE.load(Ordering::Acquire) {
        std::thread::yield_now();
    }
}

/// Adjacent accessible mappings of different allocations form one stretch of device
/// memory, as on a GPU: copies and kernels cross from one into the next. Unmapping
/// one leaves work queued on what stays valid, and fails work that reached into it.
#[test]
fn adjacent_mappings_are_one_stretch() {
    let _g = serial();
    let c = ctx();
    let (h1, h2) = (create(G), create(G));
    let base = reserve(4 * G);
    let seam = base + G as u64;
    map_rw(base, G, h1);
    map_rw(seam, G, h2); // granted separately
    ok(write(seam - 8, &[1, 2, 3, 4]));
    assert_eq!(read(seam - 8, 4).unwrap(), [1, 2, 3, 4]);
    ok(iota(64, seam - 128));
    assert_eq!(
        read(seam - 128, 64).unwrap(),
        (0..64).map(|i| 3 * i + 1).collect::<Vec<u32>>()
    );
    let attr = |a: u32, p: CUdeviceptr| {
        let mut v = 0u64;
        // SAFETY: an 8-byte out-value.
        ok(unsafe { cuPointerGetAttribute((&raw mut v).cast(), a, p) });
        v
    };
    assert_eq!(
        (attr(11, seam + 4), attr(12, seam + 4)),
        (base, 2 * G as u64)
    );
    // A third mapping, of device 1's memory, right after: a stretch of its own.
    let h3 = try_create(G, &prop(1, 0)).unwrap();
    map_rw(seam + G as u64, G, h3);
    assert_eq!(attr(9, seam + G as u64), 1, "device ordinal");
    assert_eq!(write(seam + G as u64 - 8, &[0; 4]), code::INVALID_VALUE);
    ok(unmap(seam + G as u64, G));
    ok(release(h3));
    // Work queued on the stretch, held back while the second mapping goes: inside
    // what stays, on a stream of this context; across the seam, on a stream of
    // another context (which the failure poisons).
    let (mut s1, mut s2) = (null_mut(), null_mut());
    GATE.store(false, Ordering::Release);
    // SAFETY (all below): softcuda's exports, called as C would call them.
    unsafe {
        ok(cuStreamCreate(&mut s1, 0));
        ok(cuLaunchHostFunc(s1, Some(wait_gate), null_mut()));
        ok(cuMemsetD32Async(base, 5, 4, s1));
    }
    let c2 = ctx();
    // SAFETY (all below): as above.
    unsafe {
        ok(cuStreamCreate(&mut s2, 0));
        ok(cuLaunchHostFunc(s2, Some(wait_gate), null_mut()));
        ok(cuMemsetD32Async(seam - 8, 6, 4, s2));
    }
    ok(unmap(seam, G));
    assert_eq!(
        (attr(11, base), attr(12, base)),
        (base, G as u64),
        "the stretch shrank"
    );
    assert_eq!(write(seam - 8, &[0; 4]), code::INVALID_VALUE);
    GATE.store(true, Ordering::Release);
    // SAFETY (all below): live streams and contexts.
    unsafe {
        assert_eq!(cuStreamSynchronize(s2), code::ILLEGAL_ADDRESS);
        destroy(c2);
        ok(cuCtxSetCurrent(c));
        ok(cuStreamSynchronize(s1));
        ok(cuStreamDestroy_v2(s1));
    }
    assert_eq!(read(base, 4).unwrap(), [5; 4], "the memset inside ran");
    assert_eq!(
        read(seam - 8, 2).unwrap(),
        [91, 94], // what iota wrote there
        "the one across the seam touched nothing"
    );
    ok(release(h2));
    ok(unmap(base, G));
    ok(release(h1));
    ok(address_free(base, 4 * G));
    destroy(c);
    no_leaks();
}

#[test]
fn reserved_and_inaccessible_addresses_are_errors() {
    let _g = serial();
    let c = ctx();
    let h = create(G);
    let base = reserve(2 * G);
    assert_eq!(write(base, &[1]), code::INVALID_VALUE, "reserved only");
    assert_eq!(get_access(base, 0), Err(code::INVALID_VALUE));
    // SAFETY: softcuda's export.
    unsafe { ok(cuMemMap(base, G, 0, h, 0)) };
    assert_eq!(get_access(base, 0), Ok(0));
    assert_eq!(write(base, &[1]), code::INVALID_VALUE, "mapped, no access");
    assert_eq!(read(base, 1), Err(code::INVALID_VALUE));
    // A kernel touching it faults (and poisons its context).
    assert_eq!(iota(1, base), fault());
    destroy(c);
    let c = ctx();
    ok(set_access(base, G, CU_MEM_ACCESS_FLAGS_PROT_READWRITE));
    ok(write(base, &[42]));
    // Access taken away again: the contents stay, unreachable until granted.
    ok(set_access(base, G, CU_MEM_ACCESS_FLAGS_PROT_NONE));
    assert_eq!(get_access(base, 0), Ok(0));
    assert_eq!(read(base, 1), Err(code::INVALID_VALUE));
    assert_eq!(iota(1, base + 64), fault());
    destroy(c);
    let c = ctx();
    ok(set_access(base, G, CU_MEM_ACCESS_FLAGS_PROT_READWRITE));
    assert_eq!(read(base, 1).unwrap(), [42]);
    ok(unmap(base, G));
    assert_eq!(read(base, 1), Err(code::INVALID_VALUE), "unmapped");
    assert_eq!(iota(1, base), fault());
    destroy(c);
    ok(release(h));
    ok(address_free(base, 2 * G));
    no_leaks();
}

#[test]
fn every_misuse_is_refused() {
    let _g = serial();
    let h = create(2 * G);
    let base = reserve(4 * G);
    let end = base + 4 * G as u64;
    // SAFETY (all below): softcuda's exports, called as C would call them.
    unsafe {
        let p = prop(0, 0);
        let mut x = 0;
        // Creation.
        for size in [0, G / 2, G + 4096] {
            assert_eq!(try_create(size, &p), Err(code::INVALID_VALUE), "{size}");
        }
        assert_eq!(cuMemCreate(&mut x, G, &p, 1), code::INVALID_VALUE, "flags");
        assert_eq!(cuMemCreate(null_mut(), G, &p, 0), code::INVALID_VALUE);
        assert_eq!(
            cuMemCreate(&mut x, G, core::ptr::null(), 0),
            code::INVALID_VALUE
        );
        // Reservation.
        let mut r = 0;
        for (size, align, flags) in [
            (G / 2, 0, 0),
            (0, 0, 0),
            (G, 3 * G, 0),
            (G, G / 2, 0),
            (G, 0, 1),
        ] {
            assert_eq!(
                cuMemAddressReserve(&mut r, size, align, 0, flags),
                code::INVALID_VALUE,
                "{size} {align} {flags}"
            );
        }
        assert_eq!(
            cuMemAddressReserve(null_mut(), G, 0, 0, 0),
            code::INVALID_VALUE
        );
        // Mapping.
        let bad_maps = [
            (base + 4096, G, 0, h, 0, "misaligned address"),
            (base, G + 4096, 0, h, 0, "misaligned size"),
            (base, 0, 0, h, 0, "no size"),
            (base, G, G, h, 0, "offset"),
            (base, G, 0, h, 1, "flags"),
            (base, 4 * G, 0, h, 0, "larger than the allocation"),
            (end - G as u64, 2 * G, 0, h, 0, "past the reservation"),
            (end, G, 0, h, 0, "after the reservation: in none"),
            (
                base - G as u64,
                2 * G,
                0,
                h,
                0,
                "across the reservation's start",
            ),
            (base, G, 0, 0x1234, 0, "no such handle"),
        ];
        for (ptr, size, offset, handle, flags, why) in bad_maps {
            assert_eq!(
                cuMemMap(ptr, size, offset, handle, flags),
                code::INVALID_VALUE,
                "{why}"
            );
        }
        ok(cuMemAddressReserve(&mut r, G, 8 * G, 0, 0));
        assert_eq!(r % (8 * G) as u64, 0, "the alignment asked for");
        ok(cuMemMap(base + G as u64, 2 * G, 0, h, 0));
        assert_eq!(
            cuMemMap(base + G as u64, G, 0, h, 0),
            code::INVALID_VALUE,
            "overlap"
        );
        assert_eq!(
            cuMemMap(base, 2 * G, 0, h, 0),
            code::INVALID_VALUE,
            "overlap below"
        );
        assert_eq!(
            cuMemMap(base + 2 * G as u64, 2 * G, 0, h, 0),
            code::INVALID_VALUE,
            "above"
        );
        ok(cuMemMap(base, G, 0, h, 0)); // the free part before it
        // Access.
        let mapped = base + G as u64;
        let rw = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
        assert_eq!(
            set_access(mapped, G, rw),
            code::INVALID_VALUE,
            "part of a mapping"
        );
        assert_eq!(
            set_access(mapped + G as u64, G, rw),
            code::INVALID_VALUE,
            "not at a start"
        );
        assert_eq!(
            set_access(mapped, 3 * G, rw),
            code::INVALID_VALUE,
            "past the mappings"
        );
        assert_eq!(set_access(base, 0, rw), code::INVALID_VALUE);
        assert_eq!(
            set_access(mapped, 2 * G, CU_MEM_ACCESS_FLAGS_PROT_READ),
            code::NOT_SUPPORTED
        );
        assert_eq!(set_access(mapped, 2 * G, 2), code::INVALID_VALUE);
        let far = access(9, rw);
        assert_eq!(cuMemSetAccess(mapped, 2 * G, &far, 1), code::INVALID_DEVICE);
        let d = access(0, rw);
        assert_eq!(cuMemSetAccess(mapped, 2 * G, &d, 0), code::INVALID_VALUE);
        assert_eq!(
            cuMemSetAccess(mapped, 2 * G, core::ptr::null(), 1),
            code::INVALID_VALUE
        );
        let mut f = 0u64;
        assert_eq!(
            cuMemGetAccess(&mut f, core::ptr::null(), mapped),
            code::INVALID_VALUE
        );
        ok(set_access(base, 3 * G, rw)); // both mappings, whole
        // Unmapping and freeing the addresses.
        assert_eq!(unmap(mapped, G), code::INVALID_VALUE, "part of a mapping");
        assert_eq!(
            unmap(mapped + G as u64, G),
            code::INVALID_VALUE,
            "not at a start"
        );
        assert_eq!(unmap(base, 4 * G), code::INVALID_VALUE, "past the mappings");
        assert_eq!(
            address_free(base, 4 * G),
            code::INVALID_VALUE,
            "mappings inside"
        );
        assert_eq!(
            address_free(base, 2 * G),
            code::INVALID_VALUE,
            "not the whole"
        );
        assert_eq!(address_free(base + G as u64, 3 * G), code::INVALID_VALUE);
        ok(unmap(base, 3 * G)); // both at once
        assert_eq!(unmap(base, G), code::INVALID_VALUE, "twice");
        ok(address_free(base, 4 * G));
        assert_eq!(address_free(base, 4 * G), code::INVALID_VALUE, "twice");
        ok(address_free(r, G));
        // Handles.
        ok(release(h));
        assert_eq!(release(h), code::INVALID_VALUE, "released twice");
        assert_eq!(release(0), code::INVALID_VALUE);
        let base = reserve(2 * G);
        assert_eq!(
            cuMemMap(base, G, 0, h, 0),
            code::INVALID_VALUE,
            "released handle"
        );
        assert_eq!(properties(h).err(), Some(code::INVALID_VALUE));
        let mut fd: c_int = -1;
        assert_eq!(
            cuMemExportToShareableHandle((&raw mut fd).cast(), h, 1, 0),
            code::INVALID_VALUE
        );
        assert_eq!(
            cuMemRetainAllocationHandle(&mut x, base as *mut c_void),
            code::INVALID_VALUE,
            "nothing mapped there"
        );
        ok(address_free(base, 2 * G));
    }
    no_leaks();
}

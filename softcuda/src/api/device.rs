//! Device management: enumeration, names, UUIDs, PCI ids, attributes, P2P.

use super::out;
use crate::state::{self, R, State};
use crate::types::{CUdevice, CUresult, CUuuid, code};
use core::ffi::{c_char, c_int, c_uint};

/// The profile index of `dev`, checked.
pub(crate) fn device(s: &State, dev: CUdevice) -> R<usize> {
    state::require_init(s)?;
    usize::try_from(dev)
        .ok()
        .filter(|&d| d < s.config.devices.len())
        .ok_or(code::INVALID_DEVICE)
}

/// Copies `text` with a NUL into a caller buffer of `len` bytes, truncating.
fn write_str(buf: *mut c_char, len: c_int, text: &str) -> R {
    if buf.is_null() || len <= 0 {
        return Err(code::INVALID_VALUE);
    }
    let n = text.len().min(len as usize - 1);
    // SAFETY: the caller's buffer holds `len` bytes (the C contract); we write n + 1 <= len.
    unsafe {
        core::ptr::copy_nonoverlapping(text.as_ptr().cast::<c_char>(), buf, n);
        *buf.add(n) = 0;
    }
    Ok(())
}

/// `cuDeviceGetCount`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuDeviceGetCount(count: *mut c_int) -> CUresult {
    api!("cuDeviceGetCount", {
        let s = state::state();
        state::require_init(&s)?;
        out(count, s.config.devices.len() as c_int)
    })
}

/// `cuDeviceGet`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuDeviceGet(dev: *mut CUdevice, ordinal: c_int) -> CUresult {
    api!("cuDeviceGet", {
        let d = device(&state::state(), ordinal)?;
        out(dev, d as CUdevice)
    })
}

/// `cuDeviceGetName`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuDeviceGetName(name: *mut c_char, len: c_int, dev: CUdevice) -> CUresult {
    api!("cuDeviceGetName", {
        let s = state::state();
        let d = device(&s, dev)?;
        write_str(name, len, &s.config.devices[d].name)
    })
}

/// `cuDeviceGetUuid` (and `_v2`: the same bytes).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuDeviceGetUuid(uuid: *mut CUuuid, dev: CUdevice) -> CUresult {
    api!("cuDeviceGetUuid", {
        let s = state::state();
        let d = device(&s, dev)?;
        out(
            uuid,
            CUuuid {
                bytes: s.config.devices[d].uuid,
            },
        )
    })
}

/// `cuDeviceGetUuid_v2`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuDeviceGetUuid_v2(uuid: *mut CUuuid, dev: CUdevice) -> CUresult {
    // SAFETY: the same contract, passed on.
    unsafe { cuDeviceGetUuid(uuid, dev) }
}

/// `cuDeviceGetLuid`: LUIDs exist only on Windows.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuDeviceGetLuid(
    _luid: *mut c_char,
    _mask: *mut c_uint,
    dev: CUdevice,
) -> CUresult {
    api!("cuDeviceGetLuid", {
        device(&state::state(), dev)?;
        Err(code::NOT_SUPPORTED)
    })
}

/// `cuDeviceTotalMem_v2`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuDeviceTotalMem_v2(bytes: *mut usize, dev: CUdevice) -> CUresult {
    api!("cuDeviceTotalMem", {
        let s = state::state();
        let d = device(&s, dev)?;
        out(bytes, s.config.devices[d].total_mem as usize)
    })
}

/// `cuDeviceGetAttribute`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuDeviceGetAttribute(
    value: *mut c_int,
    attr: c_uint,
    dev: CUdevice,
) -> CUresult {
    api!("cuDeviceGetAttribute", {
        let s = state::state();
        let d = device(&s, dev)?;
        let v = s.config.devices[d]
            .attribute(attr)
            .ok_or(code::INVALID_VALUE)?;
        out(value, v)
    })
}

/// `cuDeviceGetPCIBusId`: `domain:bus:device.0`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuDeviceGetPCIBusId(
    id: *mut c_char,
    len: c_int,
    dev: CUdevice,
) -> CUresult {
    api!("cuDeviceGetPCIBusId", {
        let s = state::state();
        let d = device(&s, dev)?;
        let (dom, bus, devn) = s.config.devices[d].pci;
        write_str(id, len, &format!("{dom:08X}:{bus:02X}:{devn:02X}.0"))
    })
}

/// `cuDeviceGetByPCIBusId`: accepts `[domain:]bus:device[.function]`, hexadecimal.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuDeviceGetByPCIBusId(dev: *mut CUdevice, id: *const c_char) -> CUresult {
    api!("cuDeviceGetByPCIBusId", {
        if id.is_null() {
            return Err(code::INVALID_VALUE);
        }
        // SAFETY: a NUL-terminated string, by the C contract.
        let text = unsafe { core::ffi::CStr::from_ptr(id) }
            .to_str()
            .map_err(|_| code::INVALID_VALUE)?;
        let text = text.split('.').next().unwrap_or_default();
        let parts: Vec<u32> = text
            .split(':')
            .map(|p| u32::from_str_radix(p, 16))
            .collect::<Result<_, _>>()
            .map_err(|_| code::INVALID_VALUE)?;
        let (dom, bus, devn) = match parts.as_slice() {
            [d, b, n] => (*d, *b, *n),
            [b, n] => (0, *b, *n),
            _ => return Err(code::INVALID_VALUE),
        };
        let s = state::state();
        state::require_init(&s)?;
        let d = s
            .config
            .devices
            .iter()
            .position(|p| p.pci == (dom, bus, devn))
            .ok_or(code::INVALID_DEVICE)?;
        out(dev, d as CUdevice)
    })
}

/// Whether `a` can access `b`'s memory, per the configured peer links (by default
/// every distinct pair: all devices share host memory).
pub(crate) fn can_access(s: &State, a: CUdevice, b: CUdevice) -> R<bool> {
    let (a, b) = (device(s, a)?, device(s, b)?);
    Ok(s.config.peer(a, b))
}

/// `cuDeviceCanAccessPeer`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuDeviceCanAccessPeer(
    can: *mut c_int,
    dev: CUdevice,
    peer: CUdevice,
) -> CUresult {
    api!("cuDeviceCanAccessPeer", {
        let yes = can_access(&state::state(), dev, peer)?;
        out(can, yes as c_int)
    })
}

/// `cuDeviceGetP2PAttribute`: for an accessible link, the configured attributes
/// (`SOFTCUDA_P2P`, `control::set_peer_perf`; by default rank 0, native atomics, no
/// CUDA-array access); for a pair without access, 0 for every attribute, as the
/// driver does. A device paired with itself is `INVALID_DEVICE`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuDeviceGetP2PAttribute(
    value: *mut c_int,
    attr: c_uint,
    src: CUdevice,
    dst: CUdevice,
) -> CUresult {
    api!("cuDeviceGetP2PAttribute", {
        let s = state::state();
        let (a, b) = (device(&s, src)?, device(&s, dst)?);
        if a == b {
            return Err(code::INVALID_DEVICE);
        }
        let access = s.config.peer(a, b);
        let p = s.config.peer_perf(a, b);
        let v = match attr {
            1 => p.rank,                       // PERFORMANCE_RANK
            2 => 1,                            // ACCESS_SUPPORTED
            3 => p.native_atomics as c_int,    // NATIVE_ATOMIC_SUPPORTED
            4 => p.cuda_array_access as c_int, // CUDA_ARRAY_ACCESS_SUPPORTED
            _ => return Err(code::INVALID_VALUE),
        };
        out(value, if access { v } else { 0 })
    })
}

/// `cuDeviceComputeCapability` (deprecated).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuDeviceComputeCapability(
    major: *mut c_int,
    minor: *mut c_int,
    dev: CUdevice,
) -> CUresult {
    api!("cuDeviceComputeCapability", {
        let s = state::state();
        let d = device(&s, dev)?;
        let (a, b) = s.config.devices[d].cc;
        out(major, a as c_int)?;
        out(minor, b as c_int)
    })
}

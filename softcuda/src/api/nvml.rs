//! A small NVML surface (the functions `oxicuda_driver::nvml` calls), exported from
//! `libsoftcuda.so` so that the same library can stand in for `libnvidia-ml.so.1`:
//! it describes softcuda's devices and their simulated NVLinks (`SOFTCUDA_NVLINK`,
//! `control::set_nvlinks`).
//!
//! As NVML does: `nvmlInit_v2`/`nvmlShutdown` are counted and every other call needs
//! an initialised library (`NVML_ERROR_UNINITIALIZED`); link queries on a device
//! without NVLink are `NVML_ERROR_NOT_SUPPORTED`, and past its last link
//! `NVML_ERROR_INVALID_ARGUMENT`. Every link is active, GPU to GPU, with P2P and P2P
//! atomics and no system-memory access; its version follows the device's compute
//! capability (9.x: 4.0, 8.x: 3.0, 7.x: 2.0, else 1.0). Nothing here measures or
//! reports bandwidth. Fault injection and the call log see these functions by name.

use crate::state::{self, Config, R};
use core::ffi::{c_char, c_uint, c_void};
use std::sync::atomic::{AtomicU32, Ordering};

/// `nvmlReturn_t` codes used here.
mod ret {
    pub const UNINITIALIZED: u32 = 1;
    pub const INVALID_ARGUMENT: u32 = 2;
    pub const NOT_SUPPORTED: u32 = 3;
    pub const NOT_FOUND: u32 = 6;
    pub const INSUFFICIENT_SIZE: u32 = 7;
}

/// `nvmlPciInfo_t` (NVML 12.x layout: 68 bytes).
#[repr(C)]
#[allow(non_snake_case)]
pub struct NvmlPciInfo {
    busIdLegacy: [c_char; 16],
    domain: c_uint,
    bus: c_uint,
    device: c_uint,
    pciDeviceId: c_uint,
    pciSubSystemId: c_uint,
    busId: [c_char; 32],
}

const _: () = assert!(core::mem::size_of::<NvmlPciInfo>() == 68);

static REFS: AtomicU32 = AtomicU32::new(0);
const HANDLE_TAG: usize = 0x6e76 << 48;

fn require_init() -> R {
    match REFS.load(Ordering::SeqCst) {
        0 => Err(ret::UNINITIALIZED),
        _ => Ok(()),
    }
}

fn handle(d: usize) -> *mut c_void {
    (HANDLE_TAG | (d + 1)) as *mut c_void
}

/// The device of handle `h`, with the configuration.
fn device_of(h: *mut c_void) -> R<(Config, usize)> {
    require_init()?;
    let v = h as usize;
    let config = state::config();
    if v & !0xFFFF_FFFF != HANDLE_TAG || v & 0xFFFF_FFFF == 0 {
        return Err(ret::INVALID_ARGUMENT);
    }
    let d = (v & 0xFFFF_FFFF) - 1;
    if d >= config.devices.len() {
        return Err(ret::INVALID_ARGUMENT);
    }
    Ok((config, d))
}

fn out<T>(p: *mut T, v: T) -> R {
    if p.is_null() {
        return Err(ret::INVALID_ARGUMENT);
    }
    // SAFETY: the NVML contract of an out-parameter: non-null means valid, writable.
    unsafe { p.write(v) };
    Ok(())
}

fn fill(dst: &mut [c_char], text: &str) {
    let room = dst.len().saturating_sub(1);
    for (d, b) in dst.iter_mut().zip(text.bytes().take(room)) {
        *d = b as c_char;
    }
}

fn pci_info(config: &Config, d: usize) -> NvmlPciInfo {
    let (domain, bus, device) = config.devices[d].pci;
    let mut p = NvmlPciInfo {
        busIdLegacy: [0; 16],
        domain,
        bus,
        device,
        pciDeviceId: 0x10de, // NVIDIA's vendor id; device id 0 (softcuda's own)
        pciSubSystemId: 0,
        busId: [0; 32],
    };
    fill(
        &mut p.busIdLegacy,
        &format!("{domain:04X}:{bus:02X}:{device:02X}.0"),
    );
    fill(
        &mut p.busId,
        &format!("{domain:08X}:{bus:02X}:{device:02X}.0"),
    );
    p
}

/// The far end of link `link` of device `d`.
fn far_end(config: &Config, d: usize, link: c_uint) -> R<usize> {
    let links = config.nvlinks_of(d);
    if links.is_empty() {
        return Err(ret::NOT_SUPPORTED);
    }
    links
        .get(link as usize)
        .copied()
        .ok_or(ret::INVALID_ARGUMENT)
}

/// `nvmlInit_v2`: counted; always succeeds.
#[unsafe(no_mangle)]
pub extern "C" fn nvmlInit_v2() -> u32 {
    api!("nvmlInit_v2", {
        REFS.fetch_add(1, Ordering::SeqCst);
        Ok(())
    })
}

/// `nvmlShutdown`: `NVML_ERROR_UNINITIALIZED` without a matching init.
#[unsafe(no_mangle)]
pub extern "C" fn nvmlShutdown() -> u32 {
    api!("nvmlShutdown", {
        REFS.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
            .map(|_| ())
            .map_err(|_| ret::UNINITIALIZED)
    })
}

/// `nvmlErrorString`: NVML's words for the codes it uses, else "Unknown Error".
#[unsafe(no_mangle)]
pub extern "C" fn nvmlErrorString(code: u32) -> *const c_char {
    let text: &'static core::ffi::CStr = match code {
        0 => c"Success",
        1 => c"Uninitialized",
        2 => c"Invalid Argument",
        3 => c"Not Supported",
        6 => c"Not Found",
        7 => c"Insufficient Size",
        _ => c"Unknown Error",
    };
    text.as_ptr()
}

/// `nvmlDeviceGetCount_v2`.
///
/// # Safety
/// `count` is null or valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetCount_v2(count: *mut c_uint) -> u32 {
    api!("nvmlDeviceGetCount_v2", {
        require_init()?;
        out(count, state::config().devices.len() as c_uint)
    })
}

/// `nvmlDeviceGetHandleByIndex_v2`.
///
/// # Safety
/// `device` is null or valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetHandleByIndex_v2(
    index: c_uint,
    device: *mut *mut c_void,
) -> u32 {
    api!("nvmlDeviceGetHandleByIndex_v2", {
        require_init()?;
        if index as usize >= state::config().devices.len() {
            return Err(ret::INVALID_ARGUMENT);
        }
        out(device, handle(index as usize))
    })
}

/// `nvmlDeviceGetHandleByPciBusId_v2`: `[domain:]bus:device[.function]`, hexadecimal.
///
/// # Safety
/// `bus_id` is null or NUL-terminated; `device` is null or valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetHandleByPciBusId_v2(
    bus_id: *const c_char,
    device: *mut *mut c_void,
) -> u32 {
    api!("nvmlDeviceGetHandleByPciBusId_v2", {
        require_init()?;
        if bus_id.is_null() {
            return Err(ret::INVALID_ARGUMENT);
        }
        // SAFETY: NUL-terminated, by the C contract.
        let text = unsafe { super::c_text(bus_id, ret::INVALID_ARGUMENT) }?;
        let text = text.split('.').next().unwrap_or_default();
        let parts: Vec<u32> = text
            .split(':')
            .map(|p| u32::from_str_radix(p, 16))
            .collect::<Result<_, _>>()
            .map_err(|_| ret::INVALID_ARGUMENT)?;
        let pci = match parts.as_slice() {
            [d, b, n] => (*d, *b, *n),
            [b, n] => (0, *b, *n),
            _ => return Err(ret::INVALID_ARGUMENT),
        };
        let d = state::config()
            .devices
            .iter()
            .position(|p| p.pci == pci)
            .ok_or(ret::NOT_FOUND)?;
        out(device, handle(d))
    })
}

/// `nvmlDeviceGetPciInfo_v3`.
///
/// # Safety
/// `pci` is null or valid for a write of an `nvmlPciInfo_t`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetPciInfo_v3(
    device: *mut c_void,
    pci: *mut NvmlPciInfo,
) -> u32 {
    api!("nvmlDeviceGetPciInfo_v3", {
        let (config, d) = device_of(device)?;
        out(pci, pci_info(&config, d))
    })
}

/// `nvmlDeviceGetName`: the profile's name; `NVML_ERROR_INSUFFICIENT_SIZE` when it
/// does not fit.
///
/// # Safety
/// `name` is null or holds `length` bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetName(
    device: *mut c_void,
    name: *mut c_char,
    length: c_uint,
) -> u32 {
    api!("nvmlDeviceGetName", {
        let (config, d) = device_of(device)?;
        let text = &config.devices[d].name;
        if name.is_null() {
            return Err(ret::INVALID_ARGUMENT);
        }
        if text.len() + 1 > length as usize {
            return Err(ret::INSUFFICIENT_SIZE);
        }
        // SAFETY: the buffer holds `length` >= len + 1 bytes (the C contract).
        unsafe {
            core::ptr::copy_nonoverlapping(text.as_ptr().cast::<c_char>(), name, text.len());
            *name.add(text.len()) = 0;
        }
        Ok(())
    })
}

/// `nvmlDeviceGetNvLinkState`: every simulated link is active.
///
/// # Safety
/// `active` is null or valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetNvLinkState(
    device: *mut c_void,
    link: c_uint,
    active: *mut c_uint,
) -> u32 {
    api!("nvmlDeviceGetNvLinkState", {
        let (config, d) = device_of(device)?;
        far_end(&config, d, link)?;
        out(active, 1)
    })
}

/// `nvmlDeviceGetNvLinkVersion`, in `nvmlNvlinkVersion_t`'s encoding.
///
/// # Safety
/// `version` is null or valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetNvLinkVersion(
    device: *mut c_void,
    link: c_uint,
    version: *mut c_uint,
) -> u32 {
    api!("nvmlDeviceGetNvLinkVersion", {
        let (config, d) = device_of(device)?;
        far_end(&config, d, link)?;
        let v = match config.devices[d].cc.0 {
            9.. => 6, // 4.0
            8 => 4,   // 3.0
            7 => 2,   // 2.0
            _ => 1,   // 1.0
        };
        out(version, v)
    })
}

/// `nvmlDeviceGetNvLinkCapability`: P2P and P2P atomics, no system memory, no SLI.
///
/// # Safety
/// `result` is null or valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetNvLinkCapability(
    device: *mut c_void,
    link: c_uint,
    capability: c_uint,
    result: *mut c_uint,
) -> u32 {
    api!("nvmlDeviceGetNvLinkCapability", {
        let (config, d) = device_of(device)?;
        far_end(&config, d, link)?;
        let v = match capability {
            0 | 2 | 5 => 1, // P2P_SUPPORTED, P2P_ATOMICS, VALID
            1 | 3 | 4 => 0, // SYSMEM_ACCESS, SYSMEM_ATOMICS, SLI_BRIDGE
            _ => return Err(ret::INVALID_ARGUMENT),
        };
        out(result, v)
    })
}

/// `nvmlDeviceGetNvLinkRemotePciInfo_v2`: the device at the far end.
///
/// # Safety
/// `pci` is null or valid for a write of an `nvmlPciInfo_t`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetNvLinkRemotePciInfo_v2(
    device: *mut c_void,
    link: c_uint,
    pci: *mut NvmlPciInfo,
) -> u32 {
    api!("nvmlDeviceGetNvLinkRemotePciInfo_v2", {
        let (config, d) = device_of(device)?;
        let far = far_end(&config, d, link)?;
        out(pci, pci_info(&config, far))
    })
}

/// `nvmlDeviceGetNvLinkRemoteDeviceType`: always a GPU (no NVSwitch is simulated).
///
/// # Safety
/// `kind` is null or valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetNvLinkRemoteDeviceType(
    device: *mut c_void,
    link: c_uint,
    kind: *mut c_uint,
) -> u32 {
    api!("nvmlDeviceGetNvLinkRemoteDeviceType", {
        let (config, d) = device_of(device)?;
        far_end(&config, d, link)?;
        out(kind, 0)
    })
}

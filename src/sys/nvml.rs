//! The raw C ABI of the parts of NVML (`nvml.h`, NVML 12.2 — the 535 driver's) that
//! [`crate::nvml`] calls: the return code, the device handle, the PCI record, the
//! NVLink enums and the function-pointer types of the exported symbols.
//!
//! Mirrored by hand from the 12.2.140 `nvml.h`. As in the rest of [`crate::sys`],
//! every C enum is a `#[repr(transparent)]` integer newtype (a value a newer library
//! returns stays representable), structs are `#[repr(C)]` with their size and
//! alignment asserted, and names are the C names. The symbols named here are the
//! versioned ones the header's macros pick (`nvmlInit` is `nvmlInit_v2`, and so on).

#![allow(non_camel_case_types, non_snake_case)]

use core::ffi::{c_char, c_uint, c_void};

use super::macros::c_enum;

c_enum! { #[doc = "`nvmlReturn_t`: what every NVML function returns (the 12.2 header's codes, and the later `RESET_TYPE_NOT_SUPPORTED`)."] nvmlReturn_t: c_uint {
    NVML_SUCCESS = 0,
    NVML_ERROR_UNINITIALIZED = 1,
    NVML_ERROR_INVALID_ARGUMENT = 2,
    NVML_ERROR_NOT_SUPPORTED = 3,
    NVML_ERROR_NO_PERMISSION = 4,
    NVML_ERROR_ALREADY_INITIALIZED = 5,
    NVML_ERROR_NOT_FOUND = 6,
    NVML_ERROR_INSUFFICIENT_SIZE = 7,
    NVML_ERROR_INSUFFICIENT_POWER = 8,
    NVML_ERROR_DRIVER_NOT_LOADED = 9,
    NVML_ERROR_TIMEOUT = 10,
    NVML_ERROR_IRQ_ISSUE = 11,
    NVML_ERROR_LIBRARY_NOT_FOUND = 12,
    NVML_ERROR_FUNCTION_NOT_FOUND = 13,
    NVML_ERROR_CORRUPTED_INFOROM = 14,
    NVML_ERROR_GPU_IS_LOST = 15,
    NVML_ERROR_RESET_REQUIRED = 16,
    NVML_ERROR_OPERATING_SYSTEM = 17,
    NVML_ERROR_LIB_RM_VERSION_MISMATCH = 18,
    NVML_ERROR_IN_USE = 19,
    NVML_ERROR_MEMORY = 20,
    NVML_ERROR_NO_DATA = 21,
    NVML_ERROR_VGPU_ECC_NOT_SUPPORTED = 22,
    NVML_ERROR_INSUFFICIENT_RESOURCES = 23,
    NVML_ERROR_FREQ_NOT_SUPPORTED = 24,
    NVML_ERROR_ARGUMENT_VERSION_MISMATCH = 25,
    NVML_ERROR_DEPRECATED = 26,
    NVML_ERROR_NOT_READY = 27,
    NVML_ERROR_GPU_NOT_FOUND = 28,
    NVML_ERROR_INVALID_STATE = 29,
    NVML_ERROR_RESET_TYPE_NOT_SUPPORTED = 30,
    NVML_ERROR_UNKNOWN = 999,
}}

c_enum! { #[doc = "`nvmlEnableState_t`: a generic enabled/disabled state (here, whether an NVLink is active)."] nvmlEnableState_t: c_uint {
    NVML_FEATURE_DISABLED = 0,
    NVML_FEATURE_ENABLED = 1,
}}

c_enum! { #[doc = "`nvmlNvLinkCapability_t`: what `nvmlDeviceGetNvLinkCapability` can be asked about a link."] nvmlNvLinkCapability_t: c_uint {
    NVML_NVLINK_CAP_P2P_SUPPORTED = 0,
    NVML_NVLINK_CAP_SYSMEM_ACCESS = 1,
    NVML_NVLINK_CAP_P2P_ATOMICS = 2,
    NVML_NVLINK_CAP_SYSMEM_ATOMICS = 3,
    NVML_NVLINK_CAP_SLI_BRIDGE = 4,
    NVML_NVLINK_CAP_VALID = 5,
}}

c_enum! { #[doc = "`nvmlIntNvLinkDeviceType_t`: what is at the far end of an NVLink."] nvmlIntNvLinkDeviceType_t: c_uint {
    NVML_NVLINK_DEVICE_TYPE_GPU = 0x00,
    NVML_NVLINK_DEVICE_TYPE_IBMNPU = 0x01,
    NVML_NVLINK_DEVICE_TYPE_SWITCH = 0x02,
    NVML_NVLINK_DEVICE_TYPE_UNKNOWN = 0xFF,
}}

c_enum! { #[doc = "`nvmlNvlinkVersion_t`: the encoding of the value `nvmlDeviceGetNvLinkVersion` returns, as later headers enumerate it (the 12.2 header says only \"the version\"; `1` is NVLink 1.0, `4` is 3.0)."] nvmlNvlinkVersion_t: c_uint {
    NVML_NVLINK_VERSION_INVALID = 0,
    NVML_NVLINK_VERSION_1_0 = 1,
    NVML_NVLINK_VERSION_2_0 = 2,
    NVML_NVLINK_VERSION_2_2 = 3,
    NVML_NVLINK_VERSION_3_0 = 4,
    NVML_NVLINK_VERSION_3_1 = 5,
    NVML_NVLINK_VERSION_4_0 = 6,
    NVML_NVLINK_VERSION_5_0 = 7,
}}

/// `NVML_NVLINK_MAX_LINKS`: the most NVLinks a device has (12.2 header).
pub const NVML_NVLINK_MAX_LINKS: c_uint = 18;
/// `NVML_DEVICE_PCI_BUS_ID_BUFFER_SIZE`: the size of [`nvmlPciInfo_t::busId`].
pub const NVML_DEVICE_PCI_BUS_ID_BUFFER_SIZE: usize = 32;
/// `NVML_DEVICE_PCI_BUS_ID_BUFFER_V2_SIZE`: the size of [`nvmlPciInfo_t::busIdLegacy`].
pub const NVML_DEVICE_PCI_BUS_ID_BUFFER_V2_SIZE: usize = 16;
/// `NVML_DEVICE_NAME_V2_BUFFER_SIZE`: a buffer large enough for any device name.
pub const NVML_DEVICE_NAME_V2_BUFFER_SIZE: usize = 96;

/// `nvmlDevice_t`: an opaque device handle (`struct nvmlDevice_st *`), valid from
/// `nvmlInit` to `nvmlShutdown`.
#[repr(transparent)]
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct nvmlDevice_t(pub *mut c_void);

impl Default for nvmlDevice_t {
    fn default() -> Self {
        Self(core::ptr::null_mut())
    }
}

/// `nvmlPciInfo_t` (`struct nvmlPciInfo_st`): a device's PCI identity, as
/// `nvmlDeviceGetPciInfo_v3` and `nvmlDeviceGetNvLinkRemotePciInfo_v2` fill it.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct nvmlPciInfo_t {
    /// `domain:bus:device.function`, 4-digit domain, NUL-terminated.
    pub busIdLegacy: [c_char; NVML_DEVICE_PCI_BUS_ID_BUFFER_V2_SIZE],
    /// The PCI domain.
    pub domain: c_uint,
    /// The bus, 0 to 0xff.
    pub bus: c_uint,
    /// The device on the bus, 0 to 31.
    pub device: c_uint,
    /// The 16-bit device id (high half) and 16-bit vendor id (low half).
    pub pciDeviceId: c_uint,
    /// The 32-bit subsystem id.
    pub pciSubSystemId: c_uint,
    /// `domain:bus:device.function`, 8-digit domain, NUL-terminated.
    pub busId: [c_char; NVML_DEVICE_PCI_BUS_ID_BUFFER_SIZE],
}

static_assertions::assert_eq_size!(nvmlPciInfo_t, [u8; 68]);
static_assertions::const_assert_eq!(core::mem::align_of::<nvmlPciInfo_t>(), 4);
static_assertions::const_assert_eq!(core::mem::offset_of!(nvmlPciInfo_t, domain), 16);
static_assertions::const_assert_eq!(core::mem::offset_of!(nvmlPciInfo_t, busId), 36);
static_assertions::assert_eq_size!(nvmlReturn_t, u32);
static_assertions::assert_eq_size!(nvmlDevice_t, *mut c_void);

/// The C signatures of the NVML functions [`crate::nvml`] resolves, by exported name.
pub mod pfn {
    use super::*;

    /// `nvmlReturn_t nvmlInit_v2(void)`.
    pub type nvmlInit_v2 = unsafe extern "C" fn() -> nvmlReturn_t;
    /// `nvmlReturn_t nvmlShutdown(void)`.
    pub type nvmlShutdown = unsafe extern "C" fn() -> nvmlReturn_t;
    /// `const char *nvmlErrorString(nvmlReturn_t)`.
    pub type nvmlErrorString = unsafe extern "C" fn(nvmlReturn_t) -> *const c_char;
    /// `nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int *)`.
    pub type nvmlDeviceGetCount_v2 = unsafe extern "C" fn(*mut c_uint) -> nvmlReturn_t;
    /// `nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int, nvmlDevice_t *)`.
    pub type nvmlDeviceGetHandleByIndex_v2 =
        unsafe extern "C" fn(c_uint, *mut nvmlDevice_t) -> nvmlReturn_t;
    /// `nvmlReturn_t nvmlDeviceGetHandleByPciBusId_v2(const char *, nvmlDevice_t *)`.
    pub type nvmlDeviceGetHandleByPciBusId_v2 =
        unsafe extern "C" fn(*const c_char, *mut nvmlDevice_t) -> nvmlReturn_t;
    /// `nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvmlDevice_t, nvmlPciInfo_t *)`.
    pub type nvmlDeviceGetPciInfo_v3 =
        unsafe extern "C" fn(nvmlDevice_t, *mut nvmlPciInfo_t) -> nvmlReturn_t;
    /// `nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t, char *, unsigned int)`.
    pub type nvmlDeviceGetName =
        unsafe extern "C" fn(nvmlDevice_t, *mut c_char, c_uint) -> nvmlReturn_t;
    /// `nvmlReturn_t nvmlDeviceGetNvLinkState(nvmlDevice_t, unsigned int, nvmlEnableState_t *)`.
    pub type nvmlDeviceGetNvLinkState =
        unsafe extern "C" fn(nvmlDevice_t, c_uint, *mut nvmlEnableState_t) -> nvmlReturn_t;
    /// `nvmlReturn_t nvmlDeviceGetNvLinkVersion(nvmlDevice_t, unsigned int, unsigned int *)`.
    pub type nvmlDeviceGetNvLinkVersion =
        unsafe extern "C" fn(nvmlDevice_t, c_uint, *mut c_uint) -> nvmlReturn_t;
    /// `nvmlReturn_t nvmlDeviceGetNvLinkCapability(nvmlDevice_t, unsigned int,
    /// nvmlNvLinkCapability_t, unsigned int *)`.
    pub type nvmlDeviceGetNvLinkCapability = unsafe extern "C" fn(
        nvmlDevice_t,
        c_uint,
        nvmlNvLinkCapability_t,
        *mut c_uint,
    ) -> nvmlReturn_t;
    /// `nvmlReturn_t nvmlDeviceGetNvLinkRemotePciInfo_v2(nvmlDevice_t, unsigned int,
    /// nvmlPciInfo_t *)`.
    pub type nvmlDeviceGetNvLinkRemotePciInfo_v2 =
        unsafe extern "C" fn(nvmlDevice_t, c_uint, *mut nvmlPciInfo_t) -> nvmlReturn_t;
    /// `nvmlReturn_t nvmlDeviceGetNvLinkRemoteDeviceType(nvmlDevice_t, unsigned int,
    /// nvmlIntNvLinkDeviceType_t *)`.
    pub type nvmlDeviceGetNvLinkRemoteDeviceType =
        unsafe extern "C" fn(nvmlDevice_t, c_uint, *mut nvmlIntNvLinkDeviceType_t) -> nvmlReturn_t;
}

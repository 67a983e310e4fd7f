//! The C types of the Driver API that softcuda's exports use, declared here so that
//! softcuda depends on nothing (the main crate may depend on softcuda, never the
//! reverse). `tests/abi.rs` of the main crate checks the struct layouts against cuda.h.
#![allow(non_camel_case_types, missing_docs)]

use core::ffi::{c_int, c_uint, c_void};

/// `CUresult`: 0 is success.
pub type CUresult = c_uint;
pub type CUdevice = c_int;
pub type CUdeviceptr = u64;
pub type CUcontext = *mut c_void;
pub type CUmodule = *mut c_void;
pub type CUfunction = *mut c_void;
pub type CUstream = *mut c_void;
pub type CUevent = *mut c_void;
pub type CUhostFn = Option<unsafe extern "C" fn(user_data: *mut c_void)>;
pub type CUstreamCallback =
    Option<unsafe extern "C" fn(stream: CUstream, status: CUresult, user_data: *mut c_void)>;
pub type CUoccupancyB2DSize = Option<unsafe extern "C" fn(block_size: c_int) -> usize>;

/// The `CUresult` codes softcuda returns.
pub mod code {
    use super::CUresult;
    pub const SUCCESS: CUresult = 0;
    pub const INVALID_VALUE: CUresult = 1;
    pub const OUT_OF_MEMORY: CUresult = 2;
    pub const NOT_INITIALIZED: CUresult = 3;
    pub const DEINITIALIZED: CUresult = 4;
    pub const NO_DEVICE: CUresult = 100;
    pub const INVALID_DEVICE: CUresult = 101;
    pub const INVALID_IMAGE: CUresult = 200;
    pub const INVALID_CONTEXT: CUresult = 201;
    pub const CONTEXT_ALREADY_CURRENT: CUresult = 202;
    pub const NO_BINARY_FOR_GPU: CUresult = 209;
    pub const INVALID_PTX: CUresult = 218;
    pub const INVALID_SOURCE: CUresult = 300;
    pub const FILE_NOT_FOUND: CUresult = 301;
    pub const INVALID_HANDLE: CUresult = 400;
    pub const ILLEGAL_STATE: CUresult = 401;
    pub const NOT_FOUND: CUresult = 500;
    pub const NOT_READY: CUresult = 600;
    pub const ILLEGAL_ADDRESS: CUresult = 700;
    pub const LAUNCH_OUT_OF_RESOURCES: CUresult = 701;
    pub const PEER_ACCESS_ALREADY_ENABLED: CUresult = 704;
    pub const PEER_ACCESS_NOT_ENABLED: CUresult = 705;
    pub const PRIMARY_CONTEXT_ACTIVE: CUresult = 708;
    pub const CONTEXT_IS_DESTROYED: CUresult = 709;
    pub const ASSERT: CUresult = 710;
    pub const HOST_MEMORY_ALREADY_REGISTERED: CUresult = 712;
    pub const HOST_MEMORY_NOT_REGISTERED: CUresult = 713;
    pub const HARDWARE_STACK_ERROR: CUresult = 714;
    pub const ILLEGAL_INSTRUCTION: CUresult = 715;
    pub const MISALIGNED_ADDRESS: CUresult = 716;
    pub const LAUNCH_FAILED: CUresult = 719;
    pub const NOT_PERMITTED: CUresult = 800;
    pub const NOT_SUPPORTED: CUresult = 801;
    pub const UNKNOWN: CUresult = 999;
}

/// `CUuuid`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CUuuid {
    pub bytes: [u8; 16],
}

/// `CUmemorytype`.
pub type CUmemorytype = c_uint;
pub const CU_MEMORYTYPE_HOST: CUmemorytype = 1;
pub const CU_MEMORYTYPE_DEVICE: CUmemorytype = 2;
pub const CU_MEMORYTYPE_ARRAY: CUmemorytype = 3;
pub const CU_MEMORYTYPE_UNIFIED: CUmemorytype = 4;

/// `CUDA_MEMCPY2D` (`struct CUDA_MEMCPY2D_st`).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct CUDA_MEMCPY2D {
    pub srcXInBytes: usize,
    pub srcY: usize,
    pub srcMemoryType: CUmemorytype,
    pub srcHost: *const c_void,
    pub srcDevice: CUdeviceptr,
    pub srcArray: *mut c_void,
    pub srcPitch: usize,
    pub dstXInBytes: usize,
    pub dstY: usize,
    pub dstMemoryType: CUmemorytype,
    pub dstHost: *mut c_void,
    pub dstDevice: CUdeviceptr,
    pub dstArray: *mut c_void,
    pub dstPitch: usize,
    pub WidthInBytes: usize,
    pub Height: usize,
}

/// `CUDA_MEMCPY3D` (`struct CUDA_MEMCPY3D_st`).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct CUDA_MEMCPY3D {
    pub srcXInBytes: usize,
    pub srcY: usize,
    pub srcZ: usize,
    pub srcLOD: usize,
    pub srcMemoryType: CUmemorytype,
    pub srcHost: *const c_void,
    pub srcDevice: CUdeviceptr,
    pub srcArray: *mut c_void,
    pub reserved0: *mut c_void,
    pub srcPitch: usize,
    pub srcHeight: usize,
    pub dstXInBytes: usize,
    pub dstY: usize,
    pub dstZ: usize,
    pub dstLOD: usize,
    pub dstMemoryType: CUmemorytype,
    pub dstHost: *mut c_void,
    pub dstDevice: CUdeviceptr,
    pub dstArray: *mut c_void,
    pub reserved1: *mut c_void,
    pub dstPitch: usize,
    pub dstHeight: usize,
    pub WidthInBytes: usize,
    pub Height: usize,
    pub Depth: usize,
}

/// `CUipcMemHandle`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct CUipcMemHandle {
    pub reserved: [u8; 64],
}

/// `CUdriverProcAddressQueryResult`.
pub type CUdriverProcAddressQueryResult = c_uint;
pub const CU_GET_PROC_ADDRESS_SUCCESS: CUdriverProcAddressQueryResult = 0;
pub const CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND: CUdriverProcAddressQueryResult = 1;
pub const CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT: CUdriverProcAddressQueryResult = 2;
pub const CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM: u64 = 2;

/// `CU_STREAM_LEGACY` and `CU_STREAM_PER_THREAD`.
pub const CU_STREAM_LEGACY: usize = 0x1;
pub const CU_STREAM_PER_THREAD: usize = 0x2;

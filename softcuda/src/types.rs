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
    pub const PEER_ACCESS_UNSUPPORTED: CUresult = 217;
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
    pub const COOPERATIVE_LAUNCH_TOO_LARGE: CUresult = 720;
    pub const NOT_PERMITTED: CUresult = 800;
    pub const NOT_SUPPORTED: CUresult = 801;
    pub const STREAM_CAPTURE_UNSUPPORTED: CUresult = 900;
    pub const STREAM_CAPTURE_INVALIDATED: CUresult = 901;
    pub const STREAM_CAPTURE_MERGE: CUresult = 902;
    pub const STREAM_CAPTURE_UNMATCHED: CUresult = 903;
    pub const STREAM_CAPTURE_UNJOINED: CUresult = 904;
    pub const STREAM_CAPTURE_ISOLATION: CUresult = 905;
    pub const STREAM_CAPTURE_IMPLICIT: CUresult = 906;
    pub const CAPTURED_EVENT: CUresult = 907;
    pub const STREAM_CAPTURE_WRONG_THREAD: CUresult = 908;
    pub const GRAPH_EXEC_UPDATE_FAILURE: CUresult = 910;
    pub const INVALID_CLUSTER_SIZE: CUresult = 912;
    pub const INVALID_RESOURCE_TYPE: CUresult = 914;
    pub const INVALID_RESOURCE_CONFIGURATION: CUresult = 915;
    pub const STREAM_DETACHED: CUresult = 917;
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

/// `CUarray` and `CUmipmappedArray`: softcuda handles (`crate::array`).
pub type CUarray = *mut c_void;
pub type CUmipmappedArray = *mut c_void;
/// `CUarray_format`.
pub type CUarray_format = c_uint;

/// `CUDA_ARRAY_DESCRIPTOR` (`struct CUDA_ARRAY_DESCRIPTOR_st`, the `_v2` ABI).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CUDA_ARRAY_DESCRIPTOR {
    pub Width: usize,
    pub Height: usize,
    pub Format: CUarray_format,
    pub NumChannels: c_uint,
}

/// `CUDA_ARRAY3D_DESCRIPTOR` (`struct CUDA_ARRAY3D_DESCRIPTOR_st`, the `_v2` ABI).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CUDA_ARRAY3D_DESCRIPTOR {
    pub Width: usize,
    pub Height: usize,
    pub Depth: usize,
    pub Format: CUarray_format,
    pub NumChannels: c_uint,
    pub Flags: c_uint,
}

/// `CUDA_ARRAY_MEMORY_REQUIREMENTS` (`struct CUDA_ARRAY_MEMORY_REQUIREMENTS_st`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CUDA_ARRAY_MEMORY_REQUIREMENTS {
    pub size: usize,
    pub alignment: usize,
    pub reserved: [c_uint; 4],
}

/// `CUarray_format` values with a plain element size (the others: `crate::array`).
pub const CU_AD_FORMAT_UNSIGNED_INT8: CUarray_format = 0x01;
pub const CU_AD_FORMAT_UNSIGNED_INT16: CUarray_format = 0x02;
pub const CU_AD_FORMAT_UNSIGNED_INT32: CUarray_format = 0x03;
pub const CU_AD_FORMAT_SIGNED_INT8: CUarray_format = 0x08;
pub const CU_AD_FORMAT_SIGNED_INT16: CUarray_format = 0x09;
pub const CU_AD_FORMAT_SIGNED_INT32: CUarray_format = 0x0a;
pub const CU_AD_FORMAT_HALF: CUarray_format = 0x10;
pub const CU_AD_FORMAT_FLOAT: CUarray_format = 0x20;
pub const CU_AD_FORMAT_NV12: CUarray_format = 0xb0;
pub const CU_AD_FORMAT_UNORM_INT8X1: CUarray_format = 0xc0;
pub const CU_AD_FORMAT_SNORM_INT16X4: CUarray_format = 0xcb;
pub const CU_AD_FORMAT_BC1_UNORM: CUarray_format = 0x91;

/// `CUDA_ARRAY3D_*` flags.
pub const CUDA_ARRAY3D_LAYERED: c_uint = 0x01;
pub const CUDA_ARRAY3D_SURFACE_LDST: c_uint = 0x02;
pub const CUDA_ARRAY3D_CUBEMAP: c_uint = 0x04;
pub const CUDA_ARRAY3D_TEXTURE_GATHER: c_uint = 0x08;
pub const CUDA_ARRAY3D_DEPTH_TEXTURE: c_uint = 0x10;
pub const CUDA_ARRAY3D_COLOR_ATTACHMENT: c_uint = 0x20;
pub const CUDA_ARRAY3D_SPARSE: c_uint = 0x40;
pub const CUDA_ARRAY3D_DEFERRED_MAPPING: c_uint = 0x80;
pub const CUDA_ARRAY3D_VIDEO_ENCODE_DECODE: c_uint = 0x100;

/// `CUipcMemHandle`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct CUipcMemHandle {
    pub reserved: [u8; 64],
}

/// `CUipcEventHandle`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct CUipcEventHandle {
    pub reserved: [u8; 64],
}

/// `CU_EVENT_INTERPROCESS`.
pub const CU_EVENT_INTERPROCESS: c_uint = 0x4;
/// `CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS`.
pub const CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS: c_uint = 0x1;

/// `CUdriverProcAddressQueryResult`.
pub type CUdriverProcAddressQueryResult = c_uint;
pub const CU_GET_PROC_ADDRESS_SUCCESS: CUdriverProcAddressQueryResult = 0;
pub const CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND: CUdriverProcAddressQueryResult = 1;
pub const CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT: CUdriverProcAddressQueryResult = 2;
pub const CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM: u64 = 2;

/// `CU_STREAM_LEGACY` and `CU_STREAM_PER_THREAD`.
pub const CU_STREAM_LEGACY: usize = 0x1;
pub const CU_STREAM_PER_THREAD: usize = 0x2;

// ---- graphs and stream capture ------------------------------------------------------

pub type CUgraph = *mut c_void;
pub type CUgraphNode = *mut c_void;
pub type CUgraphExec = *mut c_void;
pub type CUkernel = *mut c_void;
/// `CUgraphNodeType`.
pub type CUgraphNodeType = c_uint;
/// `CUstreamCaptureStatus`.
pub type CUstreamCaptureStatus = c_uint;
/// `CUstreamCaptureMode`.
pub type CUstreamCaptureMode = c_uint;
/// `CUgraphExecUpdateResult`.
pub type CUgraphExecUpdateResult = c_uint;
/// `CUgraphInstantiateResult`.
pub type CUgraphInstantiateResult = c_uint;

pub const CU_GRAPH_NODE_TYPE_KERNEL: CUgraphNodeType = 0;
pub const CU_GRAPH_NODE_TYPE_MEMCPY: CUgraphNodeType = 1;
pub const CU_GRAPH_NODE_TYPE_MEMSET: CUgraphNodeType = 2;
pub const CU_GRAPH_NODE_TYPE_HOST: CUgraphNodeType = 3;
pub const CU_GRAPH_NODE_TYPE_GRAPH: CUgraphNodeType = 4;
pub const CU_GRAPH_NODE_TYPE_EMPTY: CUgraphNodeType = 5;
pub const CU_GRAPH_NODE_TYPE_WAIT_EVENT: CUgraphNodeType = 6;
pub const CU_GRAPH_NODE_TYPE_EVENT_RECORD: CUgraphNodeType = 7;
pub const CU_GRAPH_NODE_TYPE_MEM_ALLOC: CUgraphNodeType = 10;
pub const CU_GRAPH_NODE_TYPE_MEM_FREE: CUgraphNodeType = 11;
pub const CU_GRAPH_NODE_TYPE_CONDITIONAL: CUgraphNodeType = 13;

/// `CUgraphConditionalHandle`.
pub type CUgraphConditionalHandle = u64;
/// `CUgraphConditionalNodeType`.
pub type CUgraphConditionalNodeType = c_uint;
pub const CU_GRAPH_COND_TYPE_IF: CUgraphConditionalNodeType = 0;
pub const CU_GRAPH_COND_TYPE_WHILE: CUgraphConditionalNodeType = 1;
pub const CU_GRAPH_COND_TYPE_SWITCH: CUgraphConditionalNodeType = 2;
/// `CU_GRAPH_COND_ASSIGN_DEFAULT`.
pub const CU_GRAPH_COND_ASSIGN_DEFAULT: c_uint = 1;

pub const CU_MEM_ALLOCATION_TYPE_INVALID: c_uint = 0;
pub const CU_MEM_ALLOCATION_TYPE_PINNED: c_uint = 1;
pub const CU_MEM_ALLOCATION_TYPE_MANAGED: c_uint = 2;
pub const CU_MEM_LOCATION_TYPE_INVALID: c_uint = 0;
pub const CU_MEM_LOCATION_TYPE_DEVICE: c_uint = 1;
pub const CU_MEM_LOCATION_TYPE_HOST: c_uint = 2;
pub const CU_MEM_LOCATION_TYPE_HOST_NUMA: c_uint = 3;
pub const CU_MEM_LOCATION_TYPE_HOST_NUMA_CURRENT: c_uint = 4;
/// `CUmemAllocationHandleType` (bits).
pub type CUmemAllocationHandleType = c_uint;
pub const CU_MEM_HANDLE_TYPE_NONE: CUmemAllocationHandleType = 0;
pub const CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR: CUmemAllocationHandleType = 1;
pub const CU_MEM_HANDLE_TYPE_WIN32: CUmemAllocationHandleType = 2;
pub const CU_MEM_HANDLE_TYPE_WIN32_KMT: CUmemAllocationHandleType = 4;
pub const CU_MEM_HANDLE_TYPE_FABRIC: CUmemAllocationHandleType = 8;
pub const CU_MEM_ACCESS_FLAGS_PROT_NONE: c_uint = 0;
pub const CU_MEM_ACCESS_FLAGS_PROT_READ: c_uint = 1;
pub const CU_MEM_ACCESS_FLAGS_PROT_READWRITE: c_uint = 3;
/// `CUmemAllocationGranularity_flags`.
pub type CUmemAllocationGranularity_flags = c_uint;
pub const CU_MEM_ALLOC_GRANULARITY_MINIMUM: CUmemAllocationGranularity_flags = 0;
pub const CU_MEM_ALLOC_GRANULARITY_RECOMMENDED: CUmemAllocationGranularity_flags = 1;

/// `CUmemGenericAllocationHandle`: physical memory made by `cuMemCreate`.
pub type CUmemGenericAllocationHandle = u64;

/// `CUmemLocation`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct CUmemLocation {
    pub type_: c_uint,
    pub id: c_int,
}

/// `CUmemPoolProps`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct CUmemPoolProps {
    pub allocType: c_uint,
    pub handleTypes: c_uint,
    pub location: CUmemLocation,
    pub win32SecurityAttributes: *mut c_void,
    pub maxSize: usize,
    pub usage: u16,
    pub reserved: [u8; 54],
}

/// The `allocFlags` member of `CUmemAllocationProp`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct CUmemAllocationProp_allocFlags {
    pub compressionType: u8,
    pub gpuDirectRDMACapable: u8,
    pub usage: u16,
    pub reserved: [u8; 4],
}

/// `CUmemAllocationProp` (`_v1`): 32 bytes, pointer-aligned.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct CUmemAllocationProp {
    pub type_: c_uint,
    pub requestedHandleTypes: CUmemAllocationHandleType,
    pub location: CUmemLocation,
    pub win32HandleMetaData: *mut c_void,
    pub allocFlags: CUmemAllocationProp_allocFlags,
}

/// `CUmemAccessDesc`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct CUmemAccessDesc {
    pub location: CUmemLocation,
    pub flags: c_uint,
}

/// `CUDA_MEM_ALLOC_NODE_PARAMS` (v1 and v2 have this layout).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct CUDA_MEM_ALLOC_NODE_PARAMS {
    pub poolProps: CUmemPoolProps,
    pub accessDescs: *const CUmemAccessDesc,
    pub accessDescCount: usize,
    pub bytesize: usize,
    pub dptr: CUdeviceptr,
}

/// `CUDA_MEM_FREE_NODE_PARAMS`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct CUDA_MEM_FREE_NODE_PARAMS {
    pub dptr: CUdeviceptr,
}

/// `CUDA_CONDITIONAL_NODE_PARAMS`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct CUDA_CONDITIONAL_NODE_PARAMS {
    pub handle: CUgraphConditionalHandle,
    pub type_: CUgraphConditionalNodeType,
    pub size: c_uint,
    pub phGraph_out: *mut CUgraph,
    pub ctx: CUcontext,
}

/// The parameter union of `CUgraphNodeParams` (the members softcuda reads).
#[repr(C)]
#[derive(Clone, Copy)]
pub union CUgraphNodeParams_union {
    pub reserved1: [i64; 29],
    pub alloc: CUDA_MEM_ALLOC_NODE_PARAMS,
    pub free: CUDA_MEM_FREE_NODE_PARAMS,
    pub conditional: CUDA_CONDITIONAL_NODE_PARAMS,
}

/// `CUgraphNodeParams`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct CUgraphNodeParams {
    pub type_: CUgraphNodeType,
    pub reserved0: [c_int; 3],
    pub anon_0: CUgraphNodeParams_union,
    pub reserved2: i64,
}

pub const CU_STREAM_CAPTURE_STATUS_NONE: CUstreamCaptureStatus = 0;
pub const CU_STREAM_CAPTURE_STATUS_ACTIVE: CUstreamCaptureStatus = 1;
pub const CU_STREAM_CAPTURE_STATUS_INVALIDATED: CUstreamCaptureStatus = 2;

pub const CU_STREAM_CAPTURE_MODE_GLOBAL: CUstreamCaptureMode = 0;
pub const CU_STREAM_CAPTURE_MODE_THREAD_LOCAL: CUstreamCaptureMode = 1;
pub const CU_STREAM_CAPTURE_MODE_RELAXED: CUstreamCaptureMode = 2;

pub const CU_GRAPH_EXEC_UPDATE_SUCCESS: CUgraphExecUpdateResult = 0;
pub const CU_GRAPH_EXEC_UPDATE_ERROR: CUgraphExecUpdateResult = 1;
pub const CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED: CUgraphExecUpdateResult = 2;
pub const CU_GRAPH_EXEC_UPDATE_ERROR_NODE_TYPE_CHANGED: CUgraphExecUpdateResult = 3;
pub const CU_GRAPH_EXEC_UPDATE_ERROR_FUNCTION_CHANGED: CUgraphExecUpdateResult = 4;
pub const CU_GRAPH_EXEC_UPDATE_ERROR_PARAMETERS_CHANGED: CUgraphExecUpdateResult = 5;
pub const CU_GRAPH_EXEC_UPDATE_ERROR_NOT_SUPPORTED: CUgraphExecUpdateResult = 6;
pub const CU_GRAPH_EXEC_UPDATE_ERROR_UNSUPPORTED_FUNCTION_CHANGE: CUgraphExecUpdateResult = 7;

pub const CUDA_GRAPH_INSTANTIATE_SUCCESS: CUgraphInstantiateResult = 0;
pub const CUDA_GRAPH_INSTANTIATE_ERROR: CUgraphInstantiateResult = 1;
pub const CUDA_GRAPH_INSTANTIATE_INVALID_STRUCTURE: CUgraphInstantiateResult = 2;

/// `CU_EVENT_RECORD_EXTERNAL` / `CU_EVENT_WAIT_EXTERNAL`.
pub const CU_EVENT_EXTERNAL: c_uint = 0x1;

/// `CUDA_KERNEL_NODE_PARAMS_v1` (the 10.0 ABI).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct CUDA_KERNEL_NODE_PARAMS_v1 {
    pub func: CUfunction,
    pub gridDimX: c_uint,
    pub gridDimY: c_uint,
    pub gridDimZ: c_uint,
    pub blockDimX: c_uint,
    pub blockDimY: c_uint,
    pub blockDimZ: c_uint,
    pub sharedMemBytes: c_uint,
    pub kernelParams: *mut *mut c_void,
    pub extra: *mut *mut c_void,
}

/// `CUDA_KERNEL_NODE_PARAMS_v2` (`CUDA_KERNEL_NODE_PARAMS` of the 12.x header).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct CUDA_KERNEL_NODE_PARAMS {
    pub func: CUfunction,
    pub gridDimX: c_uint,
    pub gridDimY: c_uint,
    pub gridDimZ: c_uint,
    pub blockDimX: c_uint,
    pub blockDimY: c_uint,
    pub blockDimZ: c_uint,
    pub sharedMemBytes: c_uint,
    pub kernelParams: *mut *mut c_void,
    pub extra: *mut *mut c_void,
    pub kern: CUkernel,
    pub ctx: CUcontext,
}

/// `CUDA_MEMSET_NODE_PARAMS` (`_v1`).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct CUDA_MEMSET_NODE_PARAMS {
    pub dst: CUdeviceptr,
    pub pitch: usize,
    pub value: c_uint,
    pub elementSize: c_uint,
    pub width: usize,
    pub height: usize,
}

/// `CUDA_HOST_NODE_PARAMS` (`_v1`).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct CUDA_HOST_NODE_PARAMS {
    pub fn_: CUhostFn,
    pub userData: *mut c_void,
}

/// `CUgraphExecUpdateResultInfo`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct CUgraphExecUpdateResultInfo {
    pub result: CUgraphExecUpdateResult,
    pub errorNode: CUgraphNode,
    pub errorFromNode: CUgraphNode,
}

/// `CUgraphEdgeData`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CUgraphEdgeData {
    pub from_port: u8,
    pub to_port: u8,
    pub type_: u8,
    pub reserved: [u8; 5],
}

/// `CUDA_GRAPH_INSTANTIATE_PARAMS`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct CUDA_GRAPH_INSTANTIATE_PARAMS {
    pub flags: u64,
    pub hUploadStream: CUstream,
    pub hErrNode_out: CUgraphNode,
    pub result_out: CUgraphInstantiateResult,
}

/// `CUexternalMemory`: an imported memory object (`cuImportExternalMemory`).
pub type CUexternalMemory = *mut c_void;
/// `CUexternalSemaphore`: an imported semaphore (`cuImportExternalSemaphore`).
pub type CUexternalSemaphore = *mut c_void;

/// `CUexternalMemoryHandleType`.
pub type CUexternalMemoryHandleType = c_uint;
pub const CU_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD: CUexternalMemoryHandleType = 1;
pub const CU_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_WIN32: CUexternalMemoryHandleType = 2;
pub const CU_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_WIN32_KMT: CUexternalMemoryHandleType = 3;
pub const CU_EXTERNAL_MEMORY_HANDLE_TYPE_D3D12_HEAP: CUexternalMemoryHandleType = 4;
pub const CU_EXTERNAL_MEMORY_HANDLE_TYPE_D3D12_RESOURCE: CUexternalMemoryHandleType = 5;
pub const CU_EXTERNAL_MEMORY_HANDLE_TYPE_D3D11_RESOURCE: CUexternalMemoryHandleType = 6;
pub const CU_EXTERNAL_MEMORY_HANDLE_TYPE_D3D11_RESOURCE_KMT: CUexternalMemoryHandleType = 7;
pub const CU_EXTERNAL_MEMORY_HANDLE_TYPE_NVSCIBUF: CUexternalMemoryHandleType = 8;
pub const CU_EXTERNAL_MEMORY_HANDLE_TYPE_DMABUF_FD: CUexternalMemoryHandleType = 9;
/// `CUDA_EXTERNAL_MEMORY_DEDICATED`.
pub const CUDA_EXTERNAL_MEMORY_DEDICATED: c_uint = 1;

/// `CUexternalSemaphoreHandleType`.
pub type CUexternalSemaphoreHandleType = c_uint;
pub const CU_EXTERNAL_SEMAPHORE_HANDLE_TYPE_OPAQUE_FD: CUexternalSemaphoreHandleType = 1;
pub const CU_EXTERNAL_SEMAPHORE_HANDLE_TYPE_OPAQUE_WIN32: CUexternalSemaphoreHandleType = 2;
pub const CU_EXTERNAL_SEMAPHORE_HANDLE_TYPE_OPAQUE_WIN32_KMT: CUexternalSemaphoreHandleType = 3;
pub const CU_EXTERNAL_SEMAPHORE_HANDLE_TYPE_D3D12_FENCE: CUexternalSemaphoreHandleType = 4;
pub const CU_EXTERNAL_SEMAPHORE_HANDLE_TYPE_D3D11_FENCE: CUexternalSemaphoreHandleType = 5;
pub const CU_EXTERNAL_SEMAPHORE_HANDLE_TYPE_NVSCISYNC: CUexternalSemaphoreHandleType = 6;
pub const CU_EXTERNAL_SEMAPHORE_HANDLE_TYPE_D3D11_KEYED_MUTEX: CUexternalSemaphoreHandleType = 7;
pub const CU_EXTERNAL_SEMAPHORE_HANDLE_TYPE_D3D11_KEYED_MUTEX_KMT: CUexternalSemaphoreHandleType =
    8;
pub const CU_EXTERNAL_SEMAPHORE_HANDLE_TYPE_TIMELINE_SEMAPHORE_FD: CUexternalSemaphoreHandleType =
    9;
pub const CU_EXTERNAL_SEMAPHORE_HANDLE_TYPE_TIMELINE_SEMAPHORE_WIN32:
    CUexternalSemaphoreHandleType = 10;

/// The Win32 member of the handle unions of the external handle descriptors.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct CUDA_EXTERNAL_HANDLE_win32 {
    pub handle: *mut c_void,
    pub name: *const c_void,
}

/// The `handle` union of `CUDA_EXTERNAL_MEMORY_HANDLE_DESC` (16 bytes).
#[repr(C)]
#[derive(Clone, Copy)]
pub union CUDA_EXTERNAL_MEMORY_HANDLE_DESC_handle {
    pub fd: c_int,
    pub win32: CUDA_EXTERNAL_HANDLE_win32,
    pub nvSciBufObject: *const c_void,
}

/// `CUDA_EXTERNAL_MEMORY_HANDLE_DESC` (`_v1`): 104 bytes.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct CUDA_EXTERNAL_MEMORY_HANDLE_DESC {
    pub type_: CUexternalMemoryHandleType,
    pub handle: CUDA_EXTERNAL_MEMORY_HANDLE_DESC_handle,
    pub size: u64,
    pub flags: c_uint,
    pub reserved: [c_uint; 16],
}

/// `CUDA_EXTERNAL_MEMORY_BUFFER_DESC` (`_v1`): 88 bytes.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct CUDA_EXTERNAL_MEMORY_BUFFER_DESC {
    pub offset: u64,
    pub size: u64,
    pub flags: c_uint,
    pub reserved: [c_uint; 16],
}

/// The `handle` union of `CUDA_EXTERNAL_SEMAPHORE_HANDLE_DESC` (16 bytes).
#[repr(C)]
#[derive(Clone, Copy)]
pub union CUDA_EXTERNAL_SEMAPHORE_HANDLE_DESC_handle {
    pub fd: c_int,
    pub win32: CUDA_EXTERNAL_HANDLE_win32,
    pub nvSciSyncObj: *const c_void,
}

/// `CUDA_EXTERNAL_SEMAPHORE_HANDLE_DESC` (`_v1`): 96 bytes.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct CUDA_EXTERNAL_SEMAPHORE_HANDLE_DESC {
    pub type_: CUexternalSemaphoreHandleType,
    pub handle: CUDA_EXTERNAL_SEMAPHORE_HANDLE_DESC_handle,
    pub flags: c_uint,
    pub reserved: [c_uint; 16],
}

/// The `fence` member of the semaphore signal and wait parameters.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct CUDA_EXTERNAL_SEMAPHORE_fence {
    pub value: u64,
}

/// The `nvSciSync` union of the semaphore signal and wait parameters.
#[repr(C)]
#[derive(Clone, Copy)]
pub union CUDA_EXTERNAL_SEMAPHORE_nvSciSync {
    pub fence: *mut c_void,
    pub reserved: u64,
}

/// The `keyedMutex` member of `CUDA_EXTERNAL_SEMAPHORE_SIGNAL_PARAMS`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct CUDA_EXTERNAL_SEMAPHORE_SIGNAL_keyedMutex {
    pub key: u64,
}

/// The `params` member of `CUDA_EXTERNAL_SEMAPHORE_SIGNAL_PARAMS` (72 bytes).
#[repr(C)]
#[derive(Clone, Copy)]
pub struct CUDA_EXTERNAL_SEMAPHORE_SIGNAL_PARAMS_params {
    pub fence: CUDA_EXTERNAL_SEMAPHORE_fence,
    pub nvSciSync: CUDA_EXTERNAL_SEMAPHORE_nvSciSync,
    pub keyedMutex: CUDA_EXTERNAL_SEMAPHORE_SIGNAL_keyedMutex,
    pub reserved: [c_uint; 12],
}

/// `CUDA_EXTERNAL_SEMAPHORE_SIGNAL_PARAMS` (`_v1`): 144 bytes.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct CUDA_EXTERNAL_SEMAPHORE_SIGNAL_PARAMS {
    pub params: CUDA_EXTERNAL_SEMAPHORE_SIGNAL_PARAMS_params,
    pub flags: c_uint,
    pub reserved: [c_uint; 16],
}

/// The `keyedMutex` member of `CUDA_EXTERNAL_SEMAPHORE_WAIT_PARAMS`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct CUDA_EXTERNAL_SEMAPHORE_WAIT_keyedMutex {
    pub key: u64,
    pub timeoutMs: c_uint,
}

/// The `params` member of `CUDA_EXTERNAL_SEMAPHORE_WAIT_PARAMS` (72 bytes).
#[repr(C)]
#[derive(Clone, Copy)]
pub struct CUDA_EXTERNAL_SEMAPHORE_WAIT_PARAMS_params {
    pub fence: CUDA_EXTERNAL_SEMAPHORE_fence,
    pub nvSciSync: CUDA_EXTERNAL_SEMAPHORE_nvSciSync,
    pub keyedMutex: CUDA_EXTERNAL_SEMAPHORE_WAIT_keyedMutex,
    pub reserved: [c_uint; 10],
}

/// `CUDA_EXTERNAL_SEMAPHORE_WAIT_PARAMS` (`_v1`): 144 bytes.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct CUDA_EXTERNAL_SEMAPHORE_WAIT_PARAMS {
    pub params: CUDA_EXTERNAL_SEMAPHORE_WAIT_PARAMS_params,
    pub flags: c_uint,
    pub reserved: [c_uint; 16],
}

// ---- green contexts and device resources (12.4) -----------------------------------

/// `CUgreenCtx`.
pub type CUgreenCtx = *mut c_void;
/// `CUdevResourceDesc`.
pub type CUdevResourceDesc = *mut c_void;
/// `CUdevResourceType`.
pub type CUdevResourceType = c_uint;
/// `CU_DEV_RESOURCE_TYPE_INVALID`.
pub const CU_DEV_RESOURCE_TYPE_INVALID: CUdevResourceType = 0;
/// `CU_DEV_RESOURCE_TYPE_SM`.
pub const CU_DEV_RESOURCE_TYPE_SM: CUdevResourceType = 1;
/// `CU_DEV_SM_RESOURCE_SPLIT_IGNORE_SM_COSCHEDULING`.
pub const CU_DEV_SM_RESOURCE_SPLIT_IGNORE_SM_COSCHEDULING: c_uint = 1;
/// `CU_DEV_SM_RESOURCE_SPLIT_MAX_POTENTIAL_CLUSTER_SIZE`.
pub const CU_DEV_SM_RESOURCE_SPLIT_MAX_POTENTIAL_CLUSTER_SIZE: c_uint = 2;
/// `CU_GREEN_CTX_DEFAULT_STREAM`.
pub const CU_GREEN_CTX_DEFAULT_STREAM: c_uint = 1;

/// `CUdevResource` (`_v1`, the 12.x layout): 144 bytes. `_internal_padding` is the
/// driver's (softcuda keeps its record of the resource there); `data` is the union
/// whose `sm.smCount` is the first `u32`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct CUdevResource {
    pub type_: CUdevResourceType,
    pub _internal_padding: [u8; 92],
    pub data: [u8; 48],
}

impl CUdevResource {
    /// An all-zero resource (`CU_DEV_RESOURCE_TYPE_INVALID`).
    pub const fn zeroed() -> Self {
        CUdevResource {
            type_: CU_DEV_RESOURCE_TYPE_INVALID,
            _internal_padding: [0; 92],
            data: [0; 48],
        }
    }

    /// `sm.smCount`.
    pub fn sm_count(&self) -> c_uint {
        c_uint::from_ne_bytes([self.data[0], self.data[1], self.data[2], self.data[3]])
    }
}

/// `CUtexObject` and `CUsurfObject`: softcuda handles (`crate::texture`).
pub type CUtexObject = u64;
pub type CUsurfObject = u64;
/// `CUresourcetype`.
pub type CUresourcetype = c_uint;
pub const CU_RESOURCE_TYPE_ARRAY: CUresourcetype = 0;
pub const CU_RESOURCE_TYPE_MIPMAPPED_ARRAY: CUresourcetype = 1;
pub const CU_RESOURCE_TYPE_LINEAR: CUresourcetype = 2;
pub const CU_RESOURCE_TYPE_PITCH2D: CUresourcetype = 3;
/// `CUaddress_mode`.
pub type CUaddress_mode = c_uint;
pub const CU_TR_ADDRESS_MODE_WRAP: CUaddress_mode = 0;
pub const CU_TR_ADDRESS_MODE_CLAMP: CUaddress_mode = 1;
pub const CU_TR_ADDRESS_MODE_MIRROR: CUaddress_mode = 2;
pub const CU_TR_ADDRESS_MODE_BORDER: CUaddress_mode = 3;
/// `CUfilter_mode`.
pub type CUfilter_mode = c_uint;
pub const CU_TR_FILTER_MODE_POINT: CUfilter_mode = 0;
pub const CU_TR_FILTER_MODE_LINEAR: CUfilter_mode = 1;
/// `CU_TRSF_*` texture flags.
pub const CU_TRSF_READ_AS_INTEGER: c_uint = 0x01;
pub const CU_TRSF_NORMALIZED_COORDINATES: c_uint = 0x02;
pub const CU_TRSF_SRGB: c_uint = 0x10;
pub const CU_TRSF_DISABLE_TRILINEAR_OPTIMIZATION: c_uint = 0x20;
pub const CU_TRSF_SEAMLESS_CUBEMAP: c_uint = 0x40;

/// `res.array` of `CUDA_RESOURCE_DESC`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct CUDA_RESOURCE_DESC_array {
    pub hArray: CUarray,
}

/// `res.mipmap` of `CUDA_RESOURCE_DESC`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct CUDA_RESOURCE_DESC_mipmap {
    pub hMipmappedArray: CUmipmappedArray,
}

/// `res.linear` of `CUDA_RESOURCE_DESC`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CUDA_RESOURCE_DESC_linear {
    pub devPtr: CUdeviceptr,
    pub format: CUarray_format,
    pub numChannels: c_uint,
    pub sizeInBytes: usize,
}

/// `res.pitch2D` of `CUDA_RESOURCE_DESC`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CUDA_RESOURCE_DESC_pitch2D {
    pub devPtr: CUdeviceptr,
    pub format: CUarray_format,
    pub numChannels: c_uint,
    pub width: usize,
    pub height: usize,
    pub pitchInBytes: usize,
}

/// The `res` union of `CUDA_RESOURCE_DESC` (128 bytes).
#[repr(C)]
#[derive(Clone, Copy)]
pub union CUDA_RESOURCE_DESC_res {
    pub array: CUDA_RESOURCE_DESC_array,
    pub mipmap: CUDA_RESOURCE_DESC_mipmap,
    pub linear: CUDA_RESOURCE_DESC_linear,
    pub pitch2D: CUDA_RESOURCE_DESC_pitch2D,
    pub reserved: [core::ffi::c_int; 32],
}

/// `CUDA_RESOURCE_DESC` (`struct CUDA_RESOURCE_DESC_st`): 144 bytes.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct CUDA_RESOURCE_DESC {
    pub resType: CUresourcetype,
    pub res: CUDA_RESOURCE_DESC_res,
    pub flags: c_uint,
}

impl Default for CUDA_RESOURCE_DESC {
    fn default() -> Self {
        CUDA_RESOURCE_DESC {
            resType: 0,
            res: CUDA_RESOURCE_DESC_res { reserved: [0; 32] },
            flags: 0,
        }
    }
}

impl core::fmt::Debug for CUDA_RESOURCE_DESC {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("CUDA_RESOURCE_DESC")
            .field("resType", &self.resType)
            .field("flags", &self.flags)
            .finish()
    }
}

/// `CUDA_TEXTURE_DESC` (`struct CUDA_TEXTURE_DESC_st`): 104 bytes.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct CUDA_TEXTURE_DESC {
    pub addressMode: [CUaddress_mode; 3],
    pub filterMode: CUfilter_mode,
    pub flags: c_uint,
    pub maxAnisotropy: c_uint,
    pub mipmapFilterMode: CUfilter_mode,
    pub mipmapLevelBias: f32,
    pub minMipmapLevelClamp: f32,
    pub maxMipmapLevelClamp: f32,
    pub borderColor: [f32; 4],
    pub reserved: [core::ffi::c_int; 12],
}

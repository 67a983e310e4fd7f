//! `cuGetProcAddress` (`_v2` and the 11.3 form): the entry point through which the
//! loader finds every other function.
//!
//! Semantics: a request for `name` at version V means the newest ABI of `name` that
//! the 12.9 or 13.5 header lists at or below V. If that ABI is newer than the configured
//! driver version, or softcuda does not implement that ABI, the answer is "not found"
//! — the real driver would silently hand back an older ABI instead.

use super::launch_ex::*;
use super::tensor_map::*;
use super::texture::*;
use super::{array::*, green::*, library::*, link::*};
use super::{context::*, device::*, graph::*, init::*, memory::*, module::*, stream::*};
use super::{external::*, ipc::*, managed::*, pool::*, pool_ipc::*, vmm::*};
use crate::abi_versions::ABI_VERSIONS;
use crate::state;
use crate::types::*;
use core::ffi::{CStr, c_char, c_int, c_void};

/// Every exported function: (base name, ABI version, entry point).
macro_rules! exports {
    ($($name:literal @ $ver:literal => $f:expr,)*) => {
        /// The implemented functions, by base name and ABI version.
        pub(crate) fn exports() -> &'static [(&'static str, u32, usize)] {
            static TABLE: std::sync::OnceLock<Vec<(&'static str, u32, usize)>> = std::sync::OnceLock::new();
            TABLE.get_or_init(|| {
                let mut v = vec![$(($name, $ver, $f as *const () as usize)),*];
                v.sort_unstable();
                v
            })
        }
    };
}

exports! {
    "cuInit" @ 2000 => cuInit,
    "cuDriverGetVersion" @ 2020 => cuDriverGetVersion,
    "cuGetErrorName" @ 6000 => cuGetErrorName,
    "cuGetErrorString" @ 6000 => cuGetErrorString,
    "cuGetProcAddress" @ 11030 => cuGetProcAddress,
    "cuGetProcAddress" @ 12000 => cuGetProcAddress_v2,
    "cuDeviceGet" @ 2000 => cuDeviceGet,
    "cuDeviceGetCount" @ 2000 => cuDeviceGetCount,
    "cuDeviceGetName" @ 2000 => cuDeviceGetName,
    "cuDeviceGetUuid" @ 9020 => cuDeviceGetUuid,
    "cuDeviceGetUuid" @ 11040 => cuDeviceGetUuid_v2,
    "cuDeviceGetLuid" @ 10000 => cuDeviceGetLuid,
    "cuDeviceTotalMem" @ 3020 => cuDeviceTotalMem_v2,
    "cuDeviceGetAttribute" @ 2000 => cuDeviceGetAttribute,
    "cuDeviceGetPCIBusId" @ 4010 => cuDeviceGetPCIBusId,
    "cuDeviceGetByPCIBusId" @ 4010 => cuDeviceGetByPCIBusId,
    "cuDeviceCanAccessPeer" @ 4000 => cuDeviceCanAccessPeer,
    "cuDeviceGetP2PAttribute" @ 8000 => cuDeviceGetP2PAttribute,
    "cuDeviceComputeCapability" @ 2000 => cuDeviceComputeCapability,
    "cuDevicePrimaryCtxRetain" @ 7000 => cuDevicePrimaryCtxRetain,
    "cuDevicePrimaryCtxRelease" @ 11000 => cuDevicePrimaryCtxRelease_v2,
    "cuDevicePrimaryCtxSetFlags" @ 11000 => cuDevicePrimaryCtxSetFlags_v2,
    "cuDevicePrimaryCtxGetState" @ 7000 => cuDevicePrimaryCtxGetState,
    "cuDevicePrimaryCtxReset" @ 11000 => cuDevicePrimaryCtxReset_v2,
    "cuCtxCreate" @ 3020 => cuCtxCreate_v2,
    "cuCtxDestroy" @ 4000 => cuCtxDestroy_v2,
    "cuCtxPushCurrent" @ 4000 => cuCtxPushCurrent_v2,
    "cuCtxPopCurrent" @ 4000 => cuCtxPopCurrent_v2,
    "cuCtxSetCurrent" @ 4000 => cuCtxSetCurrent,
    "cuCtxGetCurrent" @ 4000 => cuCtxGetCurrent,
    "cuCtxGetDevice" @ 2000 => cuCtxGetDevice,
    "cuCtxGetFlags" @ 7000 => cuCtxGetFlags,
    "cuCtxGetId" @ 12000 => cuCtxGetId,
    "cuCtxGetApiVersion" @ 3020 => cuCtxGetApiVersion,
    "cuCtxSynchronize" @ 2000 => cuCtxSynchronize,
    "cuCtxSetLimit" @ 3010 => cuCtxSetLimit,
    "cuCtxGetLimit" @ 3010 => cuCtxGetLimit,
    "cuCtxGetCacheConfig" @ 3020 => cuCtxGetCacheConfig,
    "cuCtxSetCacheConfig" @ 3020 => cuCtxSetCacheConfig,
    "cuCtxGetStreamPriorityRange" @ 5050 => cuCtxGetStreamPriorityRange,
    "cuCtxEnablePeerAccess" @ 4000 => cuCtxEnablePeerAccess,
    "cuCtxDisablePeerAccess" @ 4000 => cuCtxDisablePeerAccess,
    "cuMemAlloc" @ 3020 => cuMemAlloc_v2,
    "cuMemAllocPitch" @ 3020 => cuMemAllocPitch_v2,
    "cuMemFree" @ 3020 => cuMemFree_v2,
    "cuMemGetInfo" @ 3020 => cuMemGetInfo_v2,
    "cuMemGetAddressRange" @ 3020 => cuMemGetAddressRange_v2,
    "cuMemHostAlloc" @ 2020 => cuMemHostAlloc,
    "cuMemAllocHost" @ 3020 => cuMemAllocHost_v2,
    "cuMemFreeHost" @ 2000 => cuMemFreeHost,
    "cuMemHostGetDevicePointer" @ 3020 => cuMemHostGetDevicePointer_v2,
    "cuMemHostGetFlags" @ 2030 => cuMemHostGetFlags,
    "cuMemHostRegister" @ 6050 => cuMemHostRegister_v2,
    "cuMemHostUnregister" @ 4000 => cuMemHostUnregister,
    "cuMemcpy" @ 4000 => cuMemcpy,
    "cuMemcpyAsync" @ 4000 => cuMemcpyAsync,
    "cuMemcpyHtoD" @ 3020 => cuMemcpyHtoD_v2,
    "cuMemcpyHtoDAsync" @ 3020 => cuMemcpyHtoDAsync_v2,
    "cuMemcpyDtoH" @ 3020 => cuMemcpyDtoH_v2,
    "cuMemcpyDtoHAsync" @ 3020 => cuMemcpyDtoHAsync_v2,
    "cuMemcpyDtoD" @ 3020 => cuMemcpyDtoD_v2,
    "cuMemcpyDtoDAsync" @ 3020 => cuMemcpyDtoDAsync_v2,
    "cuMemcpyPeer" @ 4000 => cuMemcpyPeer,
    "cuMemcpyPeerAsync" @ 4000 => cuMemcpyPeerAsync,
    "cuMemcpy2D" @ 3020 => cuMemcpy2D_v2,
    "cuMemcpy2DUnaligned" @ 3020 => cuMemcpy2DUnaligned_v2,
    "cuMemcpy2DAsync" @ 3020 => cuMemcpy2DAsync_v2,
    "cuMemcpy3D" @ 3020 => cuMemcpy3D_v2,
    "cuMemcpy3DAsync" @ 3020 => cuMemcpy3DAsync_v2,
    "cuArrayCreate" @ 3020 => cuArrayCreate_v2,
    "cuArray3DCreate" @ 3020 => cuArray3DCreate_v2,
    "cuArrayDestroy" @ 2000 => cuArrayDestroy,
    "cuArrayGetDescriptor" @ 3020 => cuArrayGetDescriptor_v2,
    "cuArray3DGetDescriptor" @ 3020 => cuArray3DGetDescriptor_v2,
    "cuArrayGetMemoryRequirements" @ 11060 => cuArrayGetMemoryRequirements,
    "cuMipmappedArrayCreate" @ 5000 => cuMipmappedArrayCreate,
    "cuMipmappedArrayGetLevel" @ 5000 => cuMipmappedArrayGetLevel,
    "cuMipmappedArrayDestroy" @ 5000 => cuMipmappedArrayDestroy,
    "cuMipmappedArrayGetMemoryRequirements" @ 11060 => cuMipmappedArrayGetMemoryRequirements,
    "cuTexObjectCreate" @ 5000 => cuTexObjectCreate,
    "cuTexObjectDestroy" @ 5000 => cuTexObjectDestroy,
    "cuTexObjectGetResourceDesc" @ 5000 => cuTexObjectGetResourceDesc,
    "cuTexObjectGetTextureDesc" @ 5000 => cuTexObjectGetTextureDesc,
    "cuTexObjectGetResourceViewDesc" @ 5000 => cuTexObjectGetResourceViewDesc,
    "cuSurfObjectCreate" @ 5000 => cuSurfObjectCreate,
    "cuSurfObjectDestroy" @ 5000 => cuSurfObjectDestroy,
    "cuSurfObjectGetResourceDesc" @ 5000 => cuSurfObjectGetResourceDesc,
    "cuMemcpyHtoA" @ 3020 => cuMemcpyHtoA_v2,
    "cuMemcpyHtoAAsync" @ 3020 => cuMemcpyHtoAAsync_v2,
    "cuMemcpyAtoH" @ 3020 => cuMemcpyAtoH_v2,
    "cuMemcpyAtoHAsync" @ 3020 => cuMemcpyAtoHAsync_v2,
    "cuMemcpyAtoD" @ 3020 => cuMemcpyAtoD_v2,
    "cuMemcpyDtoA" @ 3020 => cuMemcpyDtoA_v2,
    "cuMemcpyAtoA" @ 3020 => cuMemcpyAtoA_v2,
    "cuMemsetD8" @ 3020 => cuMemsetD8_v2,
    "cuMemsetD16" @ 3020 => cuMemsetD16_v2,
    "cuMemsetD32" @ 3020 => cuMemsetD32_v2,
    "cuMemsetD8Async" @ 3020 => cuMemsetD8Async,
    "cuMemsetD16Async" @ 3020 => cuMemsetD16Async,
    "cuMemsetD32Async" @ 3020 => cuMemsetD32Async,
    "cuMemsetD2D8" @ 3020 => cuMemsetD2D8_v2,
    "cuMemsetD2D16" @ 3020 => cuMemsetD2D16_v2,
    "cuMemsetD2D32" @ 3020 => cuMemsetD2D32_v2,
    "cuMemsetD2D8Async" @ 3020 => cuMemsetD2D8Async,
    "cuMemsetD2D16Async" @ 3020 => cuMemsetD2D16Async,
    "cuMemsetD2D32Async" @ 3020 => cuMemsetD2D32Async,
    "cuPointerGetAttribute" @ 4000 => cuPointerGetAttribute,
    "cuPointerGetAttributes" @ 7000 => cuPointerGetAttributes,
    "cuIpcGetMemHandle" @ 4010 => cuIpcGetMemHandle,
    "cuIpcOpenMemHandle" @ 11000 => cuIpcOpenMemHandle_v2,
    "cuIpcCloseMemHandle" @ 4010 => cuIpcCloseMemHandle,
    "cuIpcGetEventHandle" @ 4010 => cuIpcGetEventHandle,
    "cuIpcOpenEventHandle" @ 4010 => cuIpcOpenEventHandle,
    "cuStreamCreate" @ 2000 => cuStreamCreate,
    "cuStreamCreateWithPriority" @ 5050 => cuStreamCreateWithPriority,
    "cuStreamDestroy" @ 4000 => cuStreamDestroy_v2,
    "cuStreamSynchronize" @ 2000 => cuStreamSynchronize,
    "cuStreamQuery" @ 2000 => cuStreamQuery,
    "cuStreamGetFlags" @ 5050 => cuStreamGetFlags,
    "cuStreamGetPriority" @ 5050 => cuStreamGetPriority,
    "cuStreamGetCtx" @ 9020 => cuStreamGetCtx,
    "cuStreamWaitEvent" @ 3020 => cuStreamWaitEvent,
    "cuStreamAddCallback" @ 5000 => cuStreamAddCallback,
    "cuStreamGetAttribute" @ 11000 => cuStreamGetAttribute,
    "cuStreamSetAttribute" @ 11000 => cuStreamSetAttribute,
    "cuStreamCopyAttributes" @ 11000 => cuStreamCopyAttributes,
    "cuLaunchHostFunc" @ 10000 => cuLaunchHostFunc,
    "cuEventCreate" @ 2000 => cuEventCreate,
    "cuEventDestroy" @ 4000 => cuEventDestroy_v2,
    "cuEventRecord" @ 2000 => cuEventRecord,
    "cuEventRecordWithFlags" @ 11010 => cuEventRecordWithFlags,
    "cuEventQuery" @ 2000 => cuEventQuery,
    "cuEventSynchronize" @ 2000 => cuEventSynchronize,
    "cuEventElapsedTime" @ 2000 => cuEventElapsedTime,
    "cuModuleLoad" @ 2000 => cuModuleLoad,
    "cuModuleLoadData" @ 2000 => cuModuleLoadData,
    "cuModuleLoadDataEx" @ 2010 => cuModuleLoadDataEx,
    "cuModuleLoadFatBinary" @ 2000 => cuModuleLoadFatBinary,
    "cuModuleUnload" @ 2000 => cuModuleUnload,
    "cuModuleGetFunction" @ 2000 => cuModuleGetFunction,
    "cuModuleGetGlobal" @ 3020 => cuModuleGetGlobal_v2,
    "cuModuleGetFunctionCount" @ 12040 => cuModuleGetFunctionCount,
    "cuFuncGetAttribute" @ 2020 => cuFuncGetAttribute,
    "cuFuncSetAttribute" @ 9000 => cuFuncSetAttribute,
    "cuFuncSetCacheConfig" @ 3000 => cuFuncSetCacheConfig,
    "cuFuncGetParamInfo" @ 12040 => cuFuncGetParamInfo,
    "cuFuncGetParamCount" @ 13020 => cuFuncGetParamCount,
    "cuFuncGetName" @ 12030 => cuFuncGetName,
    "cuFuncGetModule" @ 11000 => cuFuncGetModule,
    "cuLaunchKernel" @ 4000 => cuLaunchKernel,
    "cuOccupancyMaxActiveBlocksPerMultiprocessor" @ 6050 => cuOccupancyMaxActiveBlocksPerMultiprocessor,
    "cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags" @ 7000 => cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags,
    "cuOccupancyMaxPotentialBlockSize" @ 6050 => cuOccupancyMaxPotentialBlockSize,
    "cuOccupancyMaxPotentialBlockSizeWithFlags" @ 7000 => cuOccupancyMaxPotentialBlockSizeWithFlags,
    "cuOccupancyAvailableDynamicSMemPerBlock" @ 10020 => cuOccupancyAvailableDynamicSMemPerBlock,
    "cuGraphCreate" @ 10000 => cuGraphCreate,
    "cuGraphDestroy" @ 10000 => cuGraphDestroy,
    "cuGraphClone" @ 10000 => cuGraphClone,
    "cuGraphNodeFindInClone" @ 10000 => cuGraphNodeFindInClone,
    "cuGraphGetNodes" @ 10000 => cuGraphGetNodes,
    "cuGraphGetRootNodes" @ 10000 => cuGraphGetRootNodes,
    "cuGraphGetEdges" @ 10000 => cuGraphGetEdges,
    "cuGraphGetEdges" @ 12030 => cuGraphGetEdges_v2,
    "cuGraphAddDependencies" @ 10000 => cuGraphAddDependencies,
    "cuGraphAddDependencies" @ 12030 => cuGraphAddDependencies_v2,
    "cuGraphRemoveDependencies" @ 10000 => cuGraphRemoveDependencies,
    "cuGraphRemoveDependencies" @ 12030 => cuGraphRemoveDependencies_v2,
    "cuGraphNodeGetDependencies" @ 10000 => cuGraphNodeGetDependencies,
    "cuGraphNodeGetDependencies" @ 12030 => cuGraphNodeGetDependencies_v2,
    "cuGraphNodeGetDependentNodes" @ 10000 => cuGraphNodeGetDependentNodes,
    "cuGraphNodeGetDependentNodes" @ 12030 => cuGraphNodeGetDependentNodes_v2,
    "cuGraphNodeGetType" @ 10000 => cuGraphNodeGetType,
    "cuGraphDestroyNode" @ 10000 => cuGraphDestroyNode,
    "cuGraphAddMemAllocNode" @ 11040 => cuGraphAddMemAllocNode,
    "cuGraphAddMemFreeNode" @ 11040 => cuGraphAddMemFreeNode,
    "cuGraphMemAllocNodeGetParams" @ 11040 => cuGraphMemAllocNodeGetParams,
    "cuGraphMemFreeNodeGetParams" @ 11040 => cuGraphMemFreeNodeGetParams,
    "cuDeviceGraphMemTrim" @ 11040 => cuDeviceGraphMemTrim,
    "cuGraphConditionalHandleCreate" @ 12030 => cuGraphConditionalHandleCreate,
    "cuGraphAddNode" @ 12020 => cuGraphAddNode,
    "cuGraphAddNode" @ 12030 => cuGraphAddNode_v2,
    "cuGraphDebugDotPrint" @ 11030 => cuGraphDebugDotPrint,
    "cuGraphAddKernelNode" @ 10000 => cuGraphAddKernelNode,
    "cuGraphAddKernelNode" @ 12000 => cuGraphAddKernelNode_v2,
    "cuGraphKernelNodeGetParams" @ 10000 => cuGraphKernelNodeGetParams,
    "cuGraphKernelNodeGetParams" @ 12000 => cuGraphKernelNodeGetParams_v2,
    "cuGraphKernelNodeSetParams" @ 10000 => cuGraphKernelNodeSetParams,
    "cuGraphKernelNodeSetParams" @ 12000 => cuGraphKernelNodeSetParams_v2,
    "cuGraphAddMemcpyNode" @ 10000 => cuGraphAddMemcpyNode,
    "cuGraphMemcpyNodeGetParams" @ 10000 => cuGraphMemcpyNodeGetParams,
    "cuGraphMemcpyNodeSetParams" @ 10000 => cuGraphMemcpyNodeSetParams,
    "cuGraphAddMemsetNode" @ 10000 => cuGraphAddMemsetNode,
    "cuGraphMemsetNodeGetParams" @ 10000 => cuGraphMemsetNodeGetParams,
    "cuGraphMemsetNodeSetParams" @ 10000 => cuGraphMemsetNodeSetParams,
    "cuGraphAddHostNode" @ 10000 => cuGraphAddHostNode,
    "cuGraphHostNodeGetParams" @ 10000 => cuGraphHostNodeGetParams,
    "cuGraphHostNodeSetParams" @ 10000 => cuGraphHostNodeSetParams,
    "cuGraphAddEmptyNode" @ 10000 => cuGraphAddEmptyNode,
    "cuGraphAddEventRecordNode" @ 11010 => cuGraphAddEventRecordNode,
    "cuGraphAddEventWaitNode" @ 11010 => cuGraphAddEventWaitNode,
    "cuGraphEventRecordNodeGetEvent" @ 11010 => cuGraphEventRecordNodeGetEvent,
    "cuGraphEventRecordNodeSetEvent" @ 11010 => cuGraphEventRecordNodeSetEvent,
    "cuGraphEventWaitNodeGetEvent" @ 11010 => cuGraphEventWaitNodeGetEvent,
    "cuGraphEventWaitNodeSetEvent" @ 11010 => cuGraphEventWaitNodeSetEvent,
    "cuGraphAddChildGraphNode" @ 10000 => cuGraphAddChildGraphNode,
    "cuGraphChildGraphNodeGetGraph" @ 10000 => cuGraphChildGraphNodeGetGraph,
    "cuGraphInstantiateWithFlags" @ 11040 => cuGraphInstantiateWithFlags,
    "cuGraphInstantiateWithParams" @ 12000 => cuGraphInstantiateWithParams,
    "cuGraphLaunch" @ 10000 => cuGraphLaunch,
    "cuGraphUpload" @ 11010 => cuGraphUpload,
    "cuGraphExecDestroy" @ 10000 => cuGraphExecDestroy,
    "cuGraphExecGetFlags" @ 12000 => cuGraphExecGetFlags,
    "cuGraphExecKernelNodeSetParams" @ 10010 => cuGraphExecKernelNodeSetParams,
    "cuGraphExecKernelNodeSetParams" @ 12000 => cuGraphExecKernelNodeSetParams_v2,
    "cuGraphExecMemcpyNodeSetParams" @ 10020 => cuGraphExecMemcpyNodeSetParams,
    "cuGraphExecMemsetNodeSetParams" @ 10020 => cuGraphExecMemsetNodeSetParams,
    "cuGraphExecHostNodeSetParams" @ 10020 => cuGraphExecHostNodeSetParams,
    "cuGraphExecEventRecordNodeSetEvent" @ 11010 => cuGraphExecEventRecordNodeSetEvent,
    "cuGraphExecEventWaitNodeSetEvent" @ 11010 => cuGraphExecEventWaitNodeSetEvent,
    "cuGraphExecUpdate" @ 10020 => cuGraphExecUpdate,
    "cuGraphExecUpdate" @ 12000 => cuGraphExecUpdate_v2,
    "cuStreamBeginCapture" @ 10010 => cuStreamBeginCapture_v2,
    "cuStreamEndCapture" @ 10000 => cuStreamEndCapture,
    "cuStreamIsCapturing" @ 10000 => cuStreamIsCapturing,
    "cuStreamGetCaptureInfo" @ 10010 => cuStreamGetCaptureInfo,
    "cuStreamGetCaptureInfo" @ 11030 => cuStreamGetCaptureInfo_v2,
    "cuStreamGetCaptureInfo" @ 12030 => cuStreamGetCaptureInfo_v3,
    "cuThreadExchangeStreamCaptureMode" @ 10010 => cuThreadExchangeStreamCaptureMode,
    "cuLinkCreate" @ 6050 => cuLinkCreate_v2,
    "cuLinkAddData" @ 6050 => cuLinkAddData_v2,
    "cuLinkAddFile" @ 6050 => cuLinkAddFile_v2,
    "cuLinkComplete" @ 5050 => cuLinkComplete,
    "cuLinkDestroy" @ 5050 => cuLinkDestroy,
    "cuLibraryLoadData" @ 12000 => cuLibraryLoadData,
    "cuLibraryLoadFromFile" @ 12000 => cuLibraryLoadFromFile,
    "cuLibraryUnload" @ 12000 => cuLibraryUnload,
    "cuLibraryGetKernel" @ 12000 => cuLibraryGetKernel,
    "cuLibraryGetKernelCount" @ 12040 => cuLibraryGetKernelCount,
    "cuLibraryEnumerateKernels" @ 12040 => cuLibraryEnumerateKernels,
    "cuLibraryGetModule" @ 12000 => cuLibraryGetModule,
    "cuLibraryGetGlobal" @ 12000 => cuLibraryGetGlobal,
    "cuKernelGetFunction" @ 12000 => cuKernelGetFunction,
    "cuKernelGetName" @ 12030 => cuKernelGetName,
    "cuKernelGetLibrary" @ 12050 => cuKernelGetLibrary,
    "cuKernelGetParamInfo" @ 12040 => cuKernelGetParamInfo,
    "cuKernelGetParamCount" @ 13020 => cuKernelGetParamCount,
    "cuKernelGetAttribute" @ 12000 => cuKernelGetAttribute,
    "cuKernelSetAttribute" @ 12000 => cuKernelSetAttribute,
    "cuTensorMapEncodeTiled" @ 12000 => cuTensorMapEncodeTiled,
    "cuTensorMapEncodeIm2col" @ 12000 => cuTensorMapEncodeIm2col,
    "cuTensorMapEncodeIm2colWide" @ 12080 => cuTensorMapEncodeIm2colWide,
    "cuTensorMapReplaceAddress" @ 12000 => cuTensorMapReplaceAddress,
    "cuDeviceGetDefaultMemPool" @ 11020 => cuDeviceGetDefaultMemPool,
    "cuDeviceGetMemPool" @ 11020 => cuDeviceGetMemPool,
    "cuDeviceSetMemPool" @ 11020 => cuDeviceSetMemPool,
    "cuMemPoolCreate" @ 11020 => cuMemPoolCreate,
    "cuMemPoolDestroy" @ 11020 => cuMemPoolDestroy,
    "cuMemPoolGetAttribute" @ 11020 => cuMemPoolGetAttribute,
    "cuMemPoolSetAttribute" @ 11020 => cuMemPoolSetAttribute,
    "cuMemPoolTrimTo" @ 11020 => cuMemPoolTrimTo,
    "cuMemPoolSetAccess" @ 11020 => cuMemPoolSetAccess,
    "cuMemPoolGetAccess" @ 11020 => cuMemPoolGetAccess,
    "cuMemPoolExportToShareableHandle" @ 11020 => cuMemPoolExportToShareableHandle,
    "cuMemPoolImportFromShareableHandle" @ 11020 => cuMemPoolImportFromShareableHandle,
    "cuMemPoolExportPointer" @ 11020 => cuMemPoolExportPointer,
    "cuMemPoolImportPointer" @ 11020 => cuMemPoolImportPointer,
    "cuMemAllocAsync" @ 11020 => cuMemAllocAsync,
    "cuMemAllocFromPoolAsync" @ 11020 => cuMemAllocFromPoolAsync,
    "cuMemFreeAsync" @ 11020 => cuMemFreeAsync,
    "cuMemGetAllocationGranularity" @ 10020 => cuMemGetAllocationGranularity,
    "cuMemCreate" @ 10020 => cuMemCreate,
    "cuMemRelease" @ 10020 => cuMemRelease,
    "cuMemRetainAllocationHandle" @ 11000 => cuMemRetainAllocationHandle,
    "cuMemGetAllocationPropertiesFromHandle" @ 10020 => cuMemGetAllocationPropertiesFromHandle,
    "cuMemExportToShareableHandle" @ 10020 => cuMemExportToShareableHandle,
    "cuMemImportFromShareableHandle" @ 10020 => cuMemImportFromShareableHandle,
    "cuMemAddressReserve" @ 10020 => cuMemAddressReserve,
    "cuMemAddressFree" @ 10020 => cuMemAddressFree,
    "cuImportExternalMemory" @ 10000 => cuImportExternalMemory,
    "cuExternalMemoryGetMappedBuffer" @ 10000 => cuExternalMemoryGetMappedBuffer,
    "cuDestroyExternalMemory" @ 10000 => cuDestroyExternalMemory,
    "cuImportExternalSemaphore" @ 10000 => cuImportExternalSemaphore,
    "cuSignalExternalSemaphoresAsync" @ 10000 => cuSignalExternalSemaphoresAsync,
    "cuWaitExternalSemaphoresAsync" @ 10000 => cuWaitExternalSemaphoresAsync,
    "cuDestroyExternalSemaphore" @ 10000 => cuDestroyExternalSemaphore,
    "cuMemMap" @ 10020 => cuMemMap,
    "cuMemSetAccess" @ 10020 => cuMemSetAccess,
    "cuMemGetAccess" @ 10020 => cuMemGetAccess,
    "cuMemUnmap" @ 10020 => cuMemUnmap,
    "cuMemAllocManaged" @ 6000 => cuMemAllocManaged,
    "cuStreamAttachMemAsync" @ 6000 => cuStreamAttachMemAsync,
    "cuMemPrefetchAsync" @ 8000 => cuMemPrefetchAsync,
    "cuMemPrefetchAsync" @ 12020 => cuMemPrefetchAsync_v2,
    "cuMemAdvise" @ 8000 => cuMemAdvise,
    "cuMemAdvise" @ 12020 => cuMemAdvise_v2,
    "cuMemRangeGetAttribute" @ 8000 => cuMemRangeGetAttribute,
    "cuMemRangeGetAttributes" @ 8000 => cuMemRangeGetAttributes,
    "cuLaunchKernelEx" @ 11060 => cuLaunchKernelEx,
    "cuLaunchCooperativeKernel" @ 9000 => cuLaunchCooperativeKernel,
    "cuLaunchCooperativeKernelMultiDevice" @ 9000 => cuLaunchCooperativeKernelMultiDevice,
    "cuOccupancyMaxActiveClusters" @ 11070 => cuOccupancyMaxActiveClusters,
    "cuOccupancyMaxPotentialClusterSize" @ 11070 => cuOccupancyMaxPotentialClusterSize,
    "cuDeviceGetDevResource" @ 12040 => cuDeviceGetDevResource,
    "cuCtxGetDevResource" @ 12040 => cuCtxGetDevResource,
    "cuGreenCtxGetDevResource" @ 12040 => cuGreenCtxGetDevResource,
    "cuDevSmResourceSplitByCount" @ 12040 => cuDevSmResourceSplitByCount,
    "cuDevResourceGenerateDesc" @ 12040 => cuDevResourceGenerateDesc,
    "cuGreenCtxCreate" @ 12040 => cuGreenCtxCreate,
    "cuGreenCtxDestroy" @ 12040 => cuGreenCtxDestroy,
    "cuCtxFromGreenCtx" @ 12040 => cuCtxFromGreenCtx,
    "cuGreenCtxRecordEvent" @ 12040 => cuGreenCtxRecordEvent,
    "cuGreenCtxWaitEvent" @ 12040 => cuGreenCtxWaitEvent,
    "cuStreamGetGreenCtx" @ 12040 => cuStreamGetGreenCtx,
    "cuGreenCtxStreamCreate" @ 12050 => cuGreenCtxStreamCreate,
    "cuStreamGetCtx" @ 12050 => cuStreamGetCtx_v2,
    "cuGreenCtxGetId" @ 12090 => cuGreenCtxGetId,
}

/// The entry point for `name` at requested version `version`, or the status saying
/// why there is none.
pub(crate) fn resolve(name: &str, version: c_int) -> Result<usize, CUdriverProcAddressQueryResult> {
    let abis = ABI_VERSIONS
        .binary_search_by_key(&name, |(n, _)| n)
        .map(|i| ABI_VERSIONS[i].1)
        .map_err(|_| CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND)?;
    let abi = abis
        .iter()
        .rev()
        .copied()
        .find(|v| i64::from(*v) <= i64::from(version))
        .ok_or(CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT)?;
    if abi as i32 > state::state().config.version {
        return Err(CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT);
    }
    let table = exports();
    table
        .binary_search_by(|(n, v, _)| (*n, *v).cmp(&(name, abi)))
        .map(|i| table[i].2)
        .map_err(|_| CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND)
}

fn get_proc(
    symbol: *const c_char,
    pfn: *mut *mut c_void,
    version: c_int,
) -> Result<*mut c_void, CUdriverProcAddressQueryResult> {
    if symbol.is_null() || pfn.is_null() {
        return Err(CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND);
    }
    // SAFETY: a NUL-terminated name, by the C contract.
    let name = unsafe { CStr::from_ptr(symbol) }
        .to_str()
        .map_err(|_| CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND)?;
    resolve(name, version).map(|p| p as *mut c_void)
}

/// `cuGetProcAddress_v2`. The per-thread-default-stream flag is accepted and answered
/// with the same functions (see docs/softcuda.md).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuGetProcAddress_v2(
    symbol: *const c_char,
    pfn: *mut *mut c_void,
    version: c_int,
    flags: u64,
    status: *mut CUdriverProcAddressQueryResult,
) -> CUresult {
    super::api!("cuGetProcAddress", {
        if symbol.is_null() || pfn.is_null() || flags > 2 {
            return Err(code::INVALID_VALUE);
        }
        let r = get_proc(symbol, pfn, version);
        let (p, st) = match r {
            Ok(p) => (p, CU_GET_PROC_ADDRESS_SUCCESS),
            Err(st) => (core::ptr::null_mut(), st),
        };
        super::out(pfn, p)?;
        if !status.is_null() {
            super::out(status, st)?;
        }
        if p.is_null() {
            Err(code::NOT_FOUND)
        } else {
            Ok(())
        }
    })
}

/// `cuGetProcAddress` (the CUDA 11.3 form, without the status).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuGetProcAddress(
    symbol: *const c_char,
    pfn: *mut *mut c_void,
    version: c_int,
    flags: u64,
) -> CUresult {
    // SAFETY: the same contract, passed on.
    unsafe { cuGetProcAddress_v2(symbol, pfn, version, flags, core::ptr::null_mut()) }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each export's version is one the header lists for that function: otherwise a
    /// loader asking at the header's version would never find it.
    #[test]
    fn every_export_is_at_an_abi_version_of_the_header() {
        for (name, ver, _) in exports() {
            let listed = ABI_VERSIONS
                .iter()
                .find(|(n, _)| n == name)
                .map(|(_, v)| *v)
                .unwrap_or_default();
            assert!(
                listed.contains(ver),
                "{name} @ {ver}: the header lists {listed:?}"
            );
        }
    }
}

// The driver-function list: one line per function and ABI version.
//
// `name @ version (params);` -- `version` is the CUDA version whose ABI the signature
// matches: cudaTypedefs.h spells it `PFN_<name>_v<version>`. The unsuffixed field is the
// newest ABI of the 12.9 header; an older ABI still worth calling on older drivers is a
// line of its own, its field suffixed `_v<version>` (the driver symbol is the base name).
// Generated first by scripts/gen_sys.py; tests/abi.rs checks every line against
// cudaTypedefs.h.
#![allow(non_snake_case)] // the C parameter names
use crate::sys::*;
#[allow(unused_imports)]
use core::ffi::{c_char, c_int, c_longlong, c_uchar, c_uint, c_ulonglong, c_ushort, c_void};

driver_table! {
    cuArray3DCreate @ 3020 (pHandle: *mut CUarray, pAllocateArray: *const CUDA_ARRAY3D_DESCRIPTOR_v2);
    cuArray3DGetDescriptor @ 3020 (pArrayDescriptor: *mut CUDA_ARRAY3D_DESCRIPTOR_v2, hArray: CUarray);
    cuArrayCreate @ 3020 (pHandle: *mut CUarray, pAllocateArray: *const CUDA_ARRAY_DESCRIPTOR_v2);
    cuArrayDestroy @ 2000 (hArray: CUarray);
    cuArrayGetDescriptor @ 3020 (pArrayDescriptor: *mut CUDA_ARRAY_DESCRIPTOR_v2, hArray: CUarray);
    cuArrayGetMemoryRequirements @ 11060 (memoryRequirements: *mut CUDA_ARRAY_MEMORY_REQUIREMENTS_v1, array: CUarray, device: CUdevice);
    cuArrayGetPlane @ 11020 (pPlaneArray: *mut CUarray, hArray: CUarray, planeIdx: c_uint);
    cuArrayGetSparseProperties @ 11010 (sparseProperties: *mut CUDA_ARRAY_SPARSE_PROPERTIES_v1, array: CUarray);
    cuCheckpointProcessCheckpoint @ 12080 (pid: c_int, args: *mut CUcheckpointCheckpointArgs);
    cuCheckpointProcessGetRestoreThreadId @ 12080 (pid: c_int, tid: *mut c_int);
    cuCheckpointProcessGetState @ 12080 (pid: c_int, state: *mut CUprocessState);
    cuCheckpointProcessLock @ 12080 (pid: c_int, args: *mut CUcheckpointLockArgs);
    cuCheckpointProcessRestore @ 12080 (pid: c_int, args: *mut CUcheckpointRestoreArgs);
    cuCheckpointProcessUnlock @ 12080 (pid: c_int, args: *mut CUcheckpointUnlockArgs);
    cuCoredumpGetAttribute @ 12010 (get: CUcoredumpSettings, value: *mut c_void, size: *mut usize);
    cuCoredumpGetAttributeGlobal @ 12010 (get: CUcoredumpSettings, value: *mut c_void, size: *mut usize);
    cuCoredumpSetAttribute @ 12010 (set: CUcoredumpSettings, value: *mut c_void, size: *mut usize);
    cuCoredumpSetAttributeGlobal @ 12010 (set: CUcoredumpSettings, value: *mut c_void, size: *mut usize);
    cuCtxAttach @ 2000 (pctx: *mut CUcontext, flags: c_uint);
    cuCtxCreate @ 12050 (pctx: *mut CUcontext, ctxCreateParams: *mut CUctxCreateParams, flags: c_uint, dev: CUdevice);
    cuCtxCreate_v11040 @ 11040 (pctx: *mut CUcontext, paramsArray: *mut CUexecAffinityParam, numParams: c_int, flags: c_uint, dev: CUdevice_v1);
    cuCtxCreate_v3020 @ 3020 (pctx: *mut CUcontext, flags: c_uint, dev: CUdevice_v1);
    cuCtxDestroy @ 4000 (ctx: CUcontext);
    cuCtxDetach @ 2000 (ctx: CUcontext);
    cuCtxDisablePeerAccess @ 4000 (peerContext: CUcontext);
    cuCtxEnablePeerAccess @ 4000 (peerContext: CUcontext, Flags: c_uint);
    cuCtxFromGreenCtx @ 12040 (pContext: *mut CUcontext, hCtx: CUgreenCtx);
    cuCtxGetApiVersion @ 3020 (ctx: CUcontext, version: *mut c_uint);
    cuCtxGetCacheConfig @ 3020 (pconfig: *mut CUfunc_cache);
    cuCtxGetCurrent @ 4000 (pctx: *mut CUcontext);
    cuCtxGetDevResource @ 12040 (hCtx: CUcontext, result: *mut CUdevResource, type_: CUdevResourceType);
    cuCtxGetDevice @ 2000 (device: *mut CUdevice_v1);
    cuCtxGetExecAffinity @ 11040 (pExecAffinity: *mut CUexecAffinityParam, type_: CUexecAffinityType);
    cuCtxGetFlags @ 7000 (flags: *mut c_uint);
    cuCtxGetId @ 12000 (ctx: CUcontext, ctxId: *mut c_ulonglong);
    cuCtxGetLimit @ 3010 (pvalue: *mut usize, limit: CUlimit);
    cuCtxGetSharedMemConfig @ 4020 (pConfig: *mut CUsharedconfig);
    cuCtxGetStreamPriorityRange @ 5050 (leastPriority: *mut c_int, greatestPriority: *mut c_int);
    cuCtxPopCurrent @ 4000 (pctx: *mut CUcontext);
    cuCtxPushCurrent @ 4000 (ctx: CUcontext);
    cuCtxRecordEvent @ 12050 (hCtx: CUcontext, hEvent: CUevent);
    cuCtxResetPersistingL2Cache @ 11000 ();
    cuCtxSetCacheConfig @ 3020 (config: CUfunc_cache);
    cuCtxSetCurrent @ 4000 (ctx: CUcontext);
    cuCtxSetFlags @ 12010 (flags: c_uint);
    cuCtxSetLimit @ 3010 (limit: CUlimit, value: usize);
    cuCtxSetSharedMemConfig @ 4020 (config: CUsharedconfig);
    cuCtxSynchronize @ 2000 ();
    cuCtxWaitEvent @ 12050 (hCtx: CUcontext, hEvent: CUevent);
    cuDestroyExternalMemory @ 10000 (extMem: CUexternalMemory);
    cuDestroyExternalSemaphore @ 10000 (extSem: CUexternalSemaphore);
    cuDevResourceGenerateDesc @ 12040 (phDesc: *mut CUdevResourceDesc, resources: *mut CUdevResource, nbResources: c_uint);
    cuDevSmResourceSplitByCount @ 12040 (result: *mut CUdevResource, nbGroups: *mut c_uint, input: *const CUdevResource, remaining: *mut CUdevResource, useFlags: c_uint, minCount: c_uint);
    cuDeviceCanAccessPeer @ 4000 (canAccessPeer: *mut c_int, dev: CUdevice_v1, peerDev: CUdevice_v1);
    cuDeviceComputeCapability @ 2000 (major: *mut c_int, minor: *mut c_int, dev: CUdevice_v1);
    cuDeviceGet @ 2000 (device: *mut CUdevice_v1, ordinal: c_int);
    cuDeviceGetAttribute @ 2000 (pi: *mut c_int, attrib: CUdevice_attribute, dev: CUdevice_v1);
    cuDeviceGetByPCIBusId @ 4010 (dev: *mut CUdevice_v1, pciBusId: *const c_char);
    cuDeviceGetCount @ 2000 (count: *mut c_int);
    cuDeviceGetDefaultMemPool @ 11020 (pool_out: *mut CUmemoryPool, dev: CUdevice_v1);
    cuDeviceGetDevResource @ 12040 (dev: CUdevice, result: *mut CUdevResource, type_: CUdevResourceType);
    cuDeviceGetExecAffinitySupport @ 11040 (pi: *mut c_int, type_: CUexecAffinityType, dev: CUdevice);
    cuDeviceGetGraphMemAttribute @ 11040 (device: CUdevice, attr: CUgraphMem_attribute, value: *mut c_void);
    cuDeviceGetLuid @ 10000 (luid: *mut c_char, deviceNodeMask: *mut c_uint, dev: CUdevice_v1);
    cuDeviceGetMemPool @ 11020 (pool: *mut CUmemoryPool, dev: CUdevice_v1);
    cuDeviceGetName @ 2000 (name: *mut c_char, len: c_int, dev: CUdevice_v1);
    cuDeviceGetNvSciSyncAttributes @ 10020 (nvSciSyncAttrList: *mut c_void, dev: CUdevice_v1, flags: c_int);
    cuDeviceGetP2PAttribute @ 8000 (value: *mut c_int, attrib: CUdevice_P2PAttribute, srcDevice: CUdevice_v1, dstDevice: CUdevice_v1);
    cuDeviceGetPCIBusId @ 4010 (pciBusId: *mut c_char, len: c_int, dev: CUdevice_v1);
    cuDeviceGetProperties @ 2000 (prop: *mut CUdevprop_v1, dev: CUdevice_v1);
    cuDeviceGetTexture1DLinearMaxWidth @ 11010 (maxWidthInElements: *mut usize, format: CUarray_format, numChannels: c_uint, dev: CUdevice_v1);
    cuDeviceGetUuid @ 11040 (uuid: *mut CUuuid, dev: CUdevice_v1);
    cuDeviceGetUuid_v9020 @ 9020 (uuid: *mut CUuuid, dev: CUdevice_v1);
    cuDeviceGraphMemTrim @ 11040 (device: CUdevice);
    cuDevicePrimaryCtxGetState @ 7000 (dev: CUdevice_v1, flags: *mut c_uint, active: *mut c_int);
    cuDevicePrimaryCtxRelease @ 11000 (dev: CUdevice_v1);
    cuDevicePrimaryCtxReset @ 11000 (dev: CUdevice_v1);
    cuDevicePrimaryCtxRetain @ 7000 (pctx: *mut CUcontext, dev: CUdevice_v1);
    cuDevicePrimaryCtxSetFlags @ 11000 (dev: CUdevice_v1, flags: c_uint);
    cuDeviceRegisterAsyncNotification @ 12040 (device: CUdevice, callbackFunc: CUasyncCallback, userData: *mut c_void, callback: *mut CUasyncCallbackHandle);
    cuDeviceSetGraphMemAttribute @ 11040 (device: CUdevice, attr: CUgraphMem_attribute, value: *mut c_void);
    cuDeviceSetMemPool @ 11020 (dev: CUdevice_v1, pool: CUmemoryPool);
    cuDeviceTotalMem @ 3020 (bytes: *mut usize, dev: CUdevice_v1);
    cuDeviceUnregisterAsyncNotification @ 12040 (device: CUdevice, callback: CUasyncCallbackHandle);
    cuDriverGetVersion @ 2020 (driverVersion: *mut c_int);
    cuEventCreate @ 2000 (phEvent: *mut CUevent, Flags: c_uint);
    cuEventDestroy @ 4000 (hEvent: CUevent);
    cuEventElapsedTime @ 12080 (pMilliseconds: *mut f32, hStart: CUevent, hEnd: CUevent);
    cuEventElapsedTime_v2000 @ 2000 (pMilliseconds: *mut f32, hStart: CUevent, hEnd: CUevent);
    cuEventQuery @ 2000 (hEvent: CUevent);
    cuEventRecord @ 2000 (hEvent: CUevent, hStream: CUstream);
    cuEventRecordWithFlags @ 11010 (hEvent: CUevent, hStream: CUstream, flags: c_uint);
    cuEventSynchronize @ 2000 (hEvent: CUevent);
    cuExternalMemoryGetMappedBuffer @ 10000 (devPtr: *mut CUdeviceptr_v2, extMem: CUexternalMemory, bufferDesc: *const CUDA_EXTERNAL_MEMORY_BUFFER_DESC_v1);
    cuExternalMemoryGetMappedMipmappedArray @ 10000 (mipmap: *mut CUmipmappedArray, extMem: CUexternalMemory, mipmapDesc: *const CUDA_EXTERNAL_MEMORY_MIPMAPPED_ARRAY_DESC_v1);
    cuFlushGPUDirectRDMAWrites @ 11030 (target: CUflushGPUDirectRDMAWritesTarget, scope: CUflushGPUDirectRDMAWritesScope);
    cuFuncGetAttribute @ 2020 (pi: *mut c_int, attrib: CUfunction_attribute, hfunc: CUfunction);
    cuFuncGetModule @ 11000 (hmod: *mut CUmodule, hfunc: CUfunction);
    cuFuncGetName @ 12030 (name: *mut *const c_char, hfunc: CUfunction);
    cuFuncGetParamInfo @ 12040 (func: CUfunction, paramIndex: usize, paramOffset: *mut usize, paramSize: *mut usize);
    cuFuncIsLoaded @ 12040 (state: *mut CUfunctionLoadingState, hfunc: CUfunction);
    cuFuncLoad @ 12040 (hfunc: CUfunction);
    cuFuncSetAttribute @ 9000 (hfunc: CUfunction, attrib: CUfunction_attribute, value: c_int);
    cuFuncSetBlockShape @ 2000 (hfunc: CUfunction, x: c_int, y: c_int, z: c_int);
    cuFuncSetCacheConfig @ 3000 (hfunc: CUfunction, config: CUfunc_cache);
    cuFuncSetSharedMemConfig @ 4020 (hfunc: CUfunction, config: CUsharedconfig);
    cuFuncSetSharedSize @ 2000 (hfunc: CUfunction, bytes: c_uint);
    cuGetErrorName @ 6000 (error: CUresult, pStr: *mut *const c_char);
    cuGetErrorString @ 6000 (error: CUresult, pStr: *mut *const c_char);
    cuGetExportTable @ 3000 (ppExportTable: *mut *const c_void, pExportTableId: *const CUuuid);
    cuGetProcAddress @ 12000 (symbol: *const c_char, pfn: *mut *mut c_void, driverVersion: c_int, flags: cuuint64_t, symbolFound: *mut CUdriverProcAddressQueryResult);
    cuGetProcAddress_v11030 @ 11030 (symbol: *const c_char, pfn: *mut *mut c_void, driverVersion: c_int, flags: cuuint64_t);
    cuGraphAddBatchMemOpNode @ 11070 (phGraphNode: *mut CUgraphNode, hGraph: CUgraph, dependencies: *const CUgraphNode, numDependencies: usize, nodeParams: *const CUDA_BATCH_MEM_OP_NODE_PARAMS);
    cuGraphAddChildGraphNode @ 10000 (phGraphNode: *mut CUgraphNode, hGraph: CUgraph, dependencies: *const CUgraphNode, numDependencies: usize, childGraph: CUgraph);
    cuGraphAddDependencies @ 12030 (hGraph: CUgraph, from: *const CUgraphNode, to: *const CUgraphNode, edgeData: *const CUgraphEdgeData, numDependencies: usize);
    cuGraphAddDependencies_v10000 @ 10000 (hGraph: CUgraph, from: *const CUgraphNode, to: *const CUgraphNode, numDependencies: usize);
    cuGraphAddEmptyNode @ 10000 (phGraphNode: *mut CUgraphNode, hGraph: CUgraph, dependencies: *const CUgraphNode, numDependencies: usize);
    cuGraphAddEventRecordNode @ 11010 (phGraphNode: *mut CUgraphNode, hGraph: CUgraph, dependencies: *const CUgraphNode, numDependencies: usize, event: CUevent);
    cuGraphAddEventWaitNode @ 11010 (phGraphNode: *mut CUgraphNode, hGraph: CUgraph, dependencies: *const CUgraphNode, numDependencies: usize, event: CUevent);
    cuGraphAddExternalSemaphoresSignalNode @ 11020 (phGraphNode: *mut CUgraphNode, hGraph: CUgraph, dependencies: *const CUgraphNode, numDependencies: usize, nodeParams: *const CUDA_EXT_SEM_SIGNAL_NODE_PARAMS_v1);
    cuGraphAddExternalSemaphoresWaitNode @ 11020 (phGraphNode: *mut CUgraphNode, hGraph: CUgraph, dependencies: *const CUgraphNode, numDependencies: usize, nodeParams: *const CUDA_EXT_SEM_WAIT_NODE_PARAMS_v1);
    cuGraphAddHostNode @ 10000 (phGraphNode: *mut CUgraphNode, hGraph: CUgraph, dependencies: *const CUgraphNode, numDependencies: usize, nodeParams: *const CUDA_HOST_NODE_PARAMS_v1);
    cuGraphAddKernelNode @ 12000 (phGraphNode: *mut CUgraphNode, hGraph: CUgraph, dependencies: *const CUgraphNode, numDependencies: usize, nodeParams: *const CUDA_KERNEL_NODE_PARAMS_v2);
    cuGraphAddKernelNode_v10000 @ 10000 (phGraphNode: *mut CUgraphNode, hGraph: CUgraph, dependencies: *const CUgraphNode, numDependencies: usize, nodeParams: *const CUDA_KERNEL_NODE_PARAMS_v1);
    cuGraphAddMemAllocNode @ 11040 (phGraphNode: *mut CUgraphNode, hGraph: CUgraph, dependencies: *const CUgraphNode, numDependencies: usize, nodeParams: *mut CUDA_MEM_ALLOC_NODE_PARAMS);
    cuGraphAddMemFreeNode @ 11040 (phGraphNode: *mut CUgraphNode, hGraph: CUgraph, dependencies: *const CUgraphNode, numDependencies: usize, dptr: CUdeviceptr);
    cuGraphAddMemcpyNode @ 10000 (phGraphNode: *mut CUgraphNode, hGraph: CUgraph, dependencies: *const CUgraphNode, numDependencies: usize, copyParams: *const CUDA_MEMCPY3D_v2, ctx: CUcontext);
    cuGraphAddMemsetNode @ 10000 (phGraphNode: *mut CUgraphNode, hGraph: CUgraph, dependencies: *const CUgraphNode, numDependencies: usize, memsetParams: *const CUDA_MEMSET_NODE_PARAMS_v1, ctx: CUcontext);
    cuGraphAddNode @ 12030 (phGraphNode: *mut CUgraphNode, hGraph: CUgraph, dependencies: *const CUgraphNode, dependencyData: *const CUgraphEdgeData, numDependencies: usize, nodeParams: *mut CUgraphNodeParams);
    cuGraphAddNode_v12020 @ 12020 (phGraphNode: *mut CUgraphNode, hGraph: CUgraph, dependencies: *const CUgraphNode, numDependencies: usize, nodeParams: *mut CUgraphNodeParams);
    cuGraphBatchMemOpNodeGetParams @ 11070 (hNode: CUgraphNode, nodeParams_out: *mut CUDA_BATCH_MEM_OP_NODE_PARAMS);
    cuGraphBatchMemOpNodeSetParams @ 11070 (hNode: CUgraphNode, nodeParams: *const CUDA_BATCH_MEM_OP_NODE_PARAMS);
    cuGraphChildGraphNodeGetGraph @ 10000 (hNode: CUgraphNode, phGraph: *mut CUgraph);
    cuGraphClone @ 10000 (phGraphClone: *mut CUgraph, originalGraph: CUgraph);
    cuGraphConditionalHandleCreate @ 12030 (pHandle_out: *mut CUgraphConditionalHandle, hGraph: CUgraph, ctx: CUcontext, defaultLaunchValue: c_uint, flags: c_uint);
    cuGraphCreate @ 10000 (phGraph: *mut CUgraph, flags: c_uint);
    cuGraphDebugDotPrint @ 11030 (hGraph: CUgraph, path: *const c_char, flags: c_uint);
    cuGraphDestroy @ 10000 (hGraph: CUgraph);
    cuGraphDestroyNode @ 10000 (hNode: CUgraphNode);
    cuGraphEventRecordNodeGetEvent @ 11010 (hNode: CUgraphNode, event_out: *mut CUevent);
    cuGraphEventRecordNodeSetEvent @ 11010 (hNode: CUgraphNode, event: CUevent);
    cuGraphEventWaitNodeGetEvent @ 11010 (hNode: CUgraphNode, event_out: *mut CUevent);
    cuGraphEventWaitNodeSetEvent @ 11010 (hNode: CUgraphNode, event: CUevent);
    cuGraphExecBatchMemOpNodeSetParams @ 11070 (graphExec: CUgraphExec, node: CUgraphNode, nodeParams: *const CUDA_BATCH_MEM_OP_NODE_PARAMS);
    cuGraphExecChildGraphNodeSetParams @ 11010 (hGraphExec: CUgraphExec, hNode: CUgraphNode, childGraph: CUgraph);
    cuGraphExecDestroy @ 10000 (hGraphExec: CUgraphExec);
    cuGraphExecEventRecordNodeSetEvent @ 11010 (hGraphExec: CUgraphExec, hNode: CUgraphNode, event: CUevent);
    cuGraphExecEventWaitNodeSetEvent @ 11010 (hGraphExec: CUgraphExec, hNode: CUgraphNode, event: CUevent);
    cuGraphExecExternalSemaphoresSignalNodeSetParams @ 11020 (hGraphExec: CUgraphExec, hNode: CUgraphNode, nodeParams: *const CUDA_EXT_SEM_SIGNAL_NODE_PARAMS_v1);
    cuGraphExecExternalSemaphoresWaitNodeSetParams @ 11020 (hGraphExec: CUgraphExec, hNode: CUgraphNode, nodeParams: *const CUDA_EXT_SEM_WAIT_NODE_PARAMS_v1);
    cuGraphExecGetFlags @ 12000 (hGraphExec: CUgraphExec, flags: *mut cuuint64_t);
    cuGraphExecHostNodeSetParams @ 10020 (hGraphExec: CUgraphExec, hNode: CUgraphNode, nodeParams: *const CUDA_HOST_NODE_PARAMS_v1);
    cuGraphExecKernelNodeSetParams @ 12000 (hGraphExec: CUgraphExec, hNode: CUgraphNode, nodeParams: *const CUDA_KERNEL_NODE_PARAMS_v2);
    cuGraphExecKernelNodeSetParams_v10010 @ 10010 (hGraphExec: CUgraphExec, hNode: CUgraphNode, nodeParams: *const CUDA_KERNEL_NODE_PARAMS_v1);
    cuGraphExecMemcpyNodeSetParams @ 10020 (hGraphExec: CUgraphExec, hNode: CUgraphNode, copyParams: *const CUDA_MEMCPY3D_v2, ctx: CUcontext);
    cuGraphExecMemsetNodeSetParams @ 10020 (hGraphExec: CUgraphExec, hNode: CUgraphNode, memsetParams: *const CUDA_MEMSET_NODE_PARAMS_v1, ctx: CUcontext);
    cuGraphExecNodeSetParams @ 12020 (hGraphExec: CUgraphExec, hNode: CUgraphNode, nodeParams: *mut CUgraphNodeParams);
    cuGraphExecUpdate @ 12000 (hGraphExec: CUgraphExec, hGraph: CUgraph, resultInfo: *mut CUgraphExecUpdateResultInfo);
    cuGraphExecUpdate_v10020 @ 10020 (hGraphExec: CUgraphExec, hGraph: CUgraph, hErrorNode_out: *mut CUgraphNode, updateResult_out: *mut CUgraphExecUpdateResult);
    cuGraphExternalSemaphoresSignalNodeGetParams @ 11020 (hNode: CUgraphNode, params_out: *mut CUDA_EXT_SEM_SIGNAL_NODE_PARAMS_v1);
    cuGraphExternalSemaphoresSignalNodeSetParams @ 11020 (hNode: CUgraphNode, nodeParams: *const CUDA_EXT_SEM_SIGNAL_NODE_PARAMS_v1);
    cuGraphExternalSemaphoresWaitNodeGetParams @ 11020 (hNode: CUgraphNode, params_out: *mut CUDA_EXT_SEM_WAIT_NODE_PARAMS_v1);
    cuGraphExternalSemaphoresWaitNodeSetParams @ 11020 (hNode: CUgraphNode, nodeParams: *const CUDA_EXT_SEM_WAIT_NODE_PARAMS_v1);
    cuGraphGetEdges @ 12030 (hGraph: CUgraph, from: *mut CUgraphNode, to: *mut CUgraphNode, edgeData: *mut CUgraphEdgeData, numEdges: *mut usize);
    cuGraphGetEdges_v10000 @ 10000 (hGraph: CUgraph, from: *mut CUgraphNode, to: *mut CUgraphNode, numEdges: *mut usize);
    cuGraphGetNodes @ 10000 (hGraph: CUgraph, nodes: *mut CUgraphNode, numNodes: *mut usize);
    cuGraphGetRootNodes @ 10000 (hGraph: CUgraph, rootNodes: *mut CUgraphNode, numRootNodes: *mut usize);
    cuGraphHostNodeGetParams @ 10000 (hNode: CUgraphNode, nodeParams: *mut CUDA_HOST_NODE_PARAMS_v1);
    cuGraphHostNodeSetParams @ 10000 (hNode: CUgraphNode, nodeParams: *const CUDA_HOST_NODE_PARAMS_v1);
    cuGraphInstantiateWithFlags @ 11040 (phGraphExec: *mut CUgraphExec, hGraph: CUgraph, flags: c_ulonglong);
    cuGraphInstantiateWithParams @ 12000 (phGraphExec: *mut CUgraphExec, hGraph: CUgraph, instantiateParams: *mut CUDA_GRAPH_INSTANTIATE_PARAMS);
    cuGraphKernelNodeCopyAttributes @ 11000 (dst: CUgraphNode, src: CUgraphNode);
    cuGraphKernelNodeGetAttribute @ 11000 (hNode: CUgraphNode, attr: CUkernelNodeAttrID, value_out: *mut CUkernelNodeAttrValue_v1);
    cuGraphKernelNodeGetParams @ 12000 (hNode: CUgraphNode, nodeParams: *mut CUDA_KERNEL_NODE_PARAMS_v2);
    cuGraphKernelNodeGetParams_v10000 @ 10000 (hNode: CUgraphNode, nodeParams: *mut CUDA_KERNEL_NODE_PARAMS_v1);
    cuGraphKernelNodeSetAttribute @ 11000 (hNode: CUgraphNode, attr: CUkernelNodeAttrID, value: *const CUkernelNodeAttrValue_v1);
    cuGraphKernelNodeSetParams @ 12000 (hNode: CUgraphNode, nodeParams: *const CUDA_KERNEL_NODE_PARAMS_v2);
    cuGraphKernelNodeSetParams_v10000 @ 10000 (hNode: CUgraphNode, nodeParams: *const CUDA_KERNEL_NODE_PARAMS_v1);
    cuGraphLaunch @ 10000 (hGraph: CUgraphExec, hStream: CUstream);
    cuGraphMemAllocNodeGetParams @ 11040 (hNode: CUgraphNode, params_out: *mut CUDA_MEM_ALLOC_NODE_PARAMS);
    cuGraphMemFreeNodeGetParams @ 11040 (hNode: CUgraphNode, dptr_out: *mut CUdeviceptr);
    cuGraphMemcpyNodeGetParams @ 10000 (hNode: CUgraphNode, nodeParams: *mut CUDA_MEMCPY3D_v2);
    cuGraphMemcpyNodeSetParams @ 10000 (hNode: CUgraphNode, nodeParams: *const CUDA_MEMCPY3D_v2);
    cuGraphMemsetNodeGetParams @ 10000 (hNode: CUgraphNode, nodeParams: *mut CUDA_MEMSET_NODE_PARAMS_v1);
    cuGraphMemsetNodeSetParams @ 10000 (hNode: CUgraphNode, nodeParams: *const CUDA_MEMSET_NODE_PARAMS_v1);
    cuGraphNodeFindInClone @ 10000 (phNode: *mut CUgraphNode, hOriginalNode: CUgraphNode, hClonedGraph: CUgraph);
    cuGraphNodeGetDependencies @ 12030 (hNode: CUgraphNode, dependencies: *mut CUgraphNode, edgeData: *mut CUgraphEdgeData, numDependencies: *mut usize);
    cuGraphNodeGetDependencies_v10000 @ 10000 (hNode: CUgraphNode, dependencies: *mut CUgraphNode, numDependencies: *mut usize);
    cuGraphNodeGetDependentNodes @ 12030 (hNode: CUgraphNode, dependentNodes: *mut CUgraphNode, edgeData: *mut CUgraphEdgeData, numDependentNodes: *mut usize);
    cuGraphNodeGetDependentNodes_v10000 @ 10000 (hNode: CUgraphNode, dependentNodes: *mut CUgraphNode, numDependentNodes: *mut usize);
    cuGraphNodeGetEnabled @ 11060 (hGraphExec: CUgraphExec, hNode: CUgraphNode, isEnabled: *mut c_uint);
    cuGraphNodeGetType @ 10000 (hNode: CUgraphNode, type_: *mut CUgraphNodeType);
    cuGraphNodeSetEnabled @ 11060 (hGraphExec: CUgraphExec, hNode: CUgraphNode, isEnabled: c_uint);
    cuGraphNodeSetParams @ 12020 (hNode: CUgraphNode, nodeParams: *mut CUgraphNodeParams);
    cuGraphReleaseUserObject @ 11030 (graph: CUgraph, object: CUuserObject, count: c_uint);
    cuGraphRemoveDependencies @ 12030 (hGraph: CUgraph, from: *const CUgraphNode, to: *const CUgraphNode, edgeData: *const CUgraphEdgeData, numDependencies: usize);
    cuGraphRemoveDependencies_v10000 @ 10000 (hGraph: CUgraph, from: *const CUgraphNode, to: *const CUgraphNode, numDependencies: usize);
    cuGraphRetainUserObject @ 11030 (graph: CUgraph, object: CUuserObject, count: c_uint, flags: c_uint);
    cuGraphUpload @ 11010 (hGraph: CUgraphExec, hStream: CUstream);
    cuGreenCtxCreate @ 12040 (phCtx: *mut CUgreenCtx, desc: CUdevResourceDesc, dev: CUdevice, flags: c_uint);
    cuGreenCtxDestroy @ 12040 (hCtx: CUgreenCtx);
    cuGreenCtxGetDevResource @ 12040 (hCtx: CUgreenCtx, result: *mut CUdevResource, type_: CUdevResourceType);
    cuGreenCtxRecordEvent @ 12040 (hCtx: CUgreenCtx, hEvent: CUevent);
    cuGreenCtxStreamCreate @ 12050 (phStream: *mut CUstream, greenCtx: CUgreenCtx, flags: c_uint, priority: c_int);
    cuGreenCtxWaitEvent @ 12040 (hCtx: CUgreenCtx, hEvent: CUevent);
    cuImportExternalMemory @ 10000 (extMem_out: *mut CUexternalMemory, memHandleDesc: *const CUDA_EXTERNAL_MEMORY_HANDLE_DESC_v1);
    cuImportExternalSemaphore @ 10000 (extSem_out: *mut CUexternalSemaphore, semHandleDesc: *const CUDA_EXTERNAL_SEMAPHORE_HANDLE_DESC_v1);
    cuInit @ 2000 (Flags: c_uint);
    cuIpcCloseMemHandle @ 4010 (dptr: CUdeviceptr_v2);
    cuIpcGetEventHandle @ 4010 (pHandle: *mut CUipcEventHandle_v1, event: CUevent);
    cuIpcGetMemHandle @ 4010 (pHandle: *mut CUipcMemHandle_v1, dptr: CUdeviceptr_v2);
    cuIpcOpenEventHandle @ 4010 (phEvent: *mut CUevent, handle: CUipcEventHandle_v1);
    cuIpcOpenMemHandle @ 11000 (pdptr: *mut CUdeviceptr_v2, handle: CUipcMemHandle_v1, Flags: c_uint);
    cuKernelGetAttribute @ 12000 (pi: *mut c_int, attrib: CUfunction_attribute, kernel: CUkernel, dev: CUdevice);
    cuKernelGetFunction @ 12000 (pFunc: *mut CUfunction, kernel: CUkernel);
    cuKernelGetLibrary @ 12050 (pLib: *mut CUlibrary, kernel: CUkernel);
    cuKernelGetName @ 12030 (name: *mut *const c_char, hfunc: CUkernel);
    cuKernelGetParamInfo @ 12040 (kernel: CUkernel, paramIndex: usize, paramOffset: *mut usize, paramSize: *mut usize);
    cuKernelSetAttribute @ 12000 (attrib: CUfunction_attribute, val: c_int, kernel: CUkernel, dev: CUdevice);
    cuKernelSetCacheConfig @ 12000 (kernel: CUkernel, config: CUfunc_cache, dev: CUdevice);
    cuLaunch @ 2000 (f: CUfunction);
    cuLaunchCooperativeKernel @ 9000 (f: CUfunction, gridDimX: c_uint, gridDimY: c_uint, gridDimZ: c_uint, blockDimX: c_uint, blockDimY: c_uint, blockDimZ: c_uint, sharedMemBytes: c_uint, hStream: CUstream, kernelParams: *mut *mut c_void);
    cuLaunchCooperativeKernelMultiDevice @ 9000 (launchParamsList: *mut CUDA_LAUNCH_PARAMS_v1, numDevices: c_uint, flags: c_uint);
    cuLaunchGrid @ 2000 (f: CUfunction, grid_width: c_int, grid_height: c_int);
    cuLaunchGridAsync @ 2000 (f: CUfunction, grid_width: c_int, grid_height: c_int, hStream: CUstream);
    cuLaunchHostFunc @ 10000 (hStream: CUstream, fn_: CUhostFn, userData: *mut c_void);
    cuLaunchKernel @ 4000 (f: CUfunction, gridDimX: c_uint, gridDimY: c_uint, gridDimZ: c_uint, blockDimX: c_uint, blockDimY: c_uint, blockDimZ: c_uint, sharedMemBytes: c_uint, hStream: CUstream, kernelParams: *mut *mut c_void, extra: *mut *mut c_void);
    cuLaunchKernelEx @ 11060 (config: *const CUlaunchConfig, f: CUfunction, kernelParams: *mut *mut c_void, extra: *mut *mut c_void);
    cuLibraryEnumerateKernels @ 12040 (kernels: *mut CUkernel, numKernels: c_uint, lib: CUlibrary);
    cuLibraryGetGlobal @ 12000 (dptr: *mut CUdeviceptr, bytes: *mut usize, library: CUlibrary, name: *const c_char);
    cuLibraryGetKernel @ 12000 (pKernel: *mut CUkernel, library: CUlibrary, name: *const c_char);
    cuLibraryGetKernelCount @ 12040 (count: *mut c_uint, lib: CUlibrary);
    cuLibraryGetManaged @ 12000 (dptr: *mut CUdeviceptr, bytes: *mut usize, library: CUlibrary, name: *const c_char);
    cuLibraryGetModule @ 12000 (pMod: *mut CUmodule, library: CUlibrary);
    cuLibraryGetUnifiedFunction @ 12000 (fptr: *mut *mut c_void, library: CUlibrary, symbol: *const c_char);
    cuLibraryLoadData @ 12000 (library: *mut CUlibrary, code: *const c_void, jitOptions: *mut CUjit_option, jitOptionsValues: *mut *mut c_void, numJitOptions: c_uint, libraryOptions: *mut CUlibraryOption, libraryOptionValues: *mut *mut c_void, numLibraryOptions: c_uint);
    cuLibraryLoadFromFile @ 12000 (library: *mut CUlibrary, fileName: *const c_char, jitOptions: *mut CUjit_option, jitOptionsValues: *mut *mut c_void, numJitOptions: c_uint, libraryOptions: *mut CUlibraryOption, libraryOptionValues: *mut *mut c_void, numLibraryOptions: c_uint);
    cuLibraryUnload @ 12000 (library: CUlibrary);
    cuLinkAddData @ 6050 (state: CUlinkState, type_: CUjitInputType, data: *mut c_void, size: usize, name: *const c_char, numOptions: c_uint, options: *mut CUjit_option, optionValues: *mut *mut c_void);
    cuLinkAddFile @ 6050 (state: CUlinkState, type_: CUjitInputType, path: *const c_char, numOptions: c_uint, options: *mut CUjit_option, optionValues: *mut *mut c_void);
    cuLinkComplete @ 5050 (state: CUlinkState, cubinOut: *mut *mut c_void, sizeOut: *mut usize);
    cuLinkCreate @ 6050 (numOptions: c_uint, options: *mut CUjit_option, optionValues: *mut *mut c_void, stateOut: *mut CUlinkState);
    cuLinkDestroy @ 5050 (state: CUlinkState);
    cuLogsCurrent @ 12090 (iterator: *mut CUlogIterator, flags: c_uint);
    cuLogsDumpToFile @ 12090 (iterator: *mut CUlogIterator, pathToFile: *const c_char, flags: c_uint);
    cuLogsDumpToMemory @ 12090 (iterator: *mut CUlogIterator, buffer: *mut c_char, size: *mut usize, flags: c_uint);
    cuLogsRegisterCallback @ 12090 (callbackFunc: CUlogsCallback, userData: *mut c_void, callback: *mut CUlogsCallbackHandle);
    cuLogsUnregisterCallback @ 12090 (callback: CUlogsCallbackHandle);
    cuMemAddressFree @ 10020 (ptr: CUdeviceptr_v2, size: usize);
    cuMemAddressReserve @ 10020 (ptr: *mut CUdeviceptr_v2, size: usize, alignment: usize, addr: CUdeviceptr_v2, flags: c_ulonglong);
    cuMemAdvise @ 12020 (devPtr: CUdeviceptr_v2, count: usize, advice: CUmem_advise, location: CUmemLocation_v1);
    cuMemAdvise_v8000 @ 8000 (devPtr: CUdeviceptr_v2, count: usize, advice: CUmem_advise, device: CUdevice_v1);
    cuMemAlloc @ 3020 (dptr: *mut CUdeviceptr_v2, bytesize: usize);
    cuMemAllocAsync @ 11020 (dptr: *mut CUdeviceptr_v2, bytesize: usize, hStream: CUstream);
    cuMemAllocFromPoolAsync @ 11020 (dptr: *mut CUdeviceptr_v2, bytesize: usize, pool: CUmemoryPool, hStream: CUstream);
    cuMemAllocHost @ 3020 (pp: *mut *mut c_void, bytesize: usize);
    cuMemAllocManaged @ 6000 (dptr: *mut CUdeviceptr_v2, bytesize: usize, flags: c_uint);
    cuMemAllocPitch @ 3020 (dptr: *mut CUdeviceptr_v2, pPitch: *mut usize, WidthInBytes: usize, Height: usize, ElementSizeBytes: c_uint);
    cuMemBatchDecompressAsync @ 12060 (paramsArray: *mut CUmemDecompressParams, count: usize, flags: c_uint, errorIndex: *mut usize, stream: CUstream);
    cuMemCreate @ 10020 (handle: *mut CUmemGenericAllocationHandle_v1, size: usize, prop: *const CUmemAllocationProp_v1, flags: c_ulonglong);
    cuMemExportToShareableHandle @ 10020 (shareableHandle: *mut c_void, handle: CUmemGenericAllocationHandle_v1, handleType: CUmemAllocationHandleType, flags: c_ulonglong);
    cuMemFree @ 3020 (dptr: CUdeviceptr_v2);
    cuMemFreeAsync @ 11020 (dptr: CUdeviceptr_v2, hStream: CUstream);
    cuMemFreeHost @ 2000 (p: *mut c_void);
    cuMemGetAccess @ 10020 (flags: *mut c_ulonglong, location: *const CUmemLocation_v1, ptr: CUdeviceptr_v2);
    cuMemGetAddressRange @ 3020 (pbase: *mut CUdeviceptr_v2, psize: *mut usize, dptr: CUdeviceptr_v2);
    cuMemGetAllocationGranularity @ 10020 (granularity: *mut usize, prop: *const CUmemAllocationProp_v1, option: CUmemAllocationGranularity_flags);
    cuMemGetAllocationPropertiesFromHandle @ 10020 (prop: *mut CUmemAllocationProp_v1, handle: CUmemGenericAllocationHandle_v1);
    cuMemGetHandleForAddressRange @ 11070 (handle: *mut c_void, dptr: CUdeviceptr, size: usize, handleType: CUmemRangeHandleType, flags: c_ulonglong);
    cuMemGetInfo @ 3020 (free: *mut usize, total: *mut usize);
    cuMemHostAlloc @ 2020 (pp: *mut *mut c_void, bytesize: usize, Flags: c_uint);
    cuMemHostGetDevicePointer @ 3020 (pdptr: *mut CUdeviceptr_v2, p: *mut c_void, Flags: c_uint);
    cuMemHostGetFlags @ 2030 (pFlags: *mut c_uint, p: *mut c_void);
    cuMemHostRegister @ 6050 (p: *mut c_void, bytesize: usize, Flags: c_uint);
    cuMemHostUnregister @ 4000 (p: *mut c_void);
    cuMemImportFromShareableHandle @ 10020 (handle: *mut CUmemGenericAllocationHandle_v1, osHandle: *mut c_void, shHandleType: CUmemAllocationHandleType);
    cuMemMap @ 10020 (ptr: CUdeviceptr_v2, size: usize, offset: usize, handle: CUmemGenericAllocationHandle_v1, flags: c_ulonglong);
    cuMemMapArrayAsync @ 11010 (mapInfoList: *mut CUarrayMapInfo_v1, count: c_uint, hStream: CUstream);
    cuMemPoolCreate @ 11020 (pool: *mut CUmemoryPool, poolProps: *const CUmemPoolProps_v1);
    cuMemPoolDestroy @ 11020 (pool: CUmemoryPool);
    cuMemPoolExportPointer @ 11020 (shareData_out: *mut CUmemPoolPtrExportData_v1, ptr: CUdeviceptr_v2);
    cuMemPoolExportToShareableHandle @ 11020 (handle_out: *mut c_void, pool: CUmemoryPool, handleType: CUmemAllocationHandleType, flags: c_ulonglong);
    cuMemPoolGetAccess @ 11020 (flags: *mut CUmemAccess_flags, memPool: CUmemoryPool, location: *mut CUmemLocation_v1);
    cuMemPoolGetAttribute @ 11020 (pool: CUmemoryPool, attr: CUmemPool_attribute, value: *mut c_void);
    cuMemPoolImportFromShareableHandle @ 11020 (pool_out: *mut CUmemoryPool, handle: *mut c_void, handleType: CUmemAllocationHandleType, flags: c_ulonglong);
    cuMemPoolImportPointer @ 11020 (ptr_out: *mut CUdeviceptr_v2, pool: CUmemoryPool, shareData: *mut CUmemPoolPtrExportData_v1);
    cuMemPoolSetAccess @ 11020 (pool: CUmemoryPool, map: *const CUmemAccessDesc_v1, count: usize);
    cuMemPoolSetAttribute @ 11020 (pool: CUmemoryPool, attr: CUmemPool_attribute, value: *mut c_void);
    cuMemPoolTrimTo @ 11020 (pool: CUmemoryPool, minBytesToKeep: usize);
    cuMemPrefetchAsync @ 12020 (devPtr: CUdeviceptr_v2, count: usize, location: CUmemLocation_v1, flags: c_uint, hStream: CUstream);
    cuMemPrefetchAsync_v8000 @ 8000 (devPtr: CUdeviceptr_v2, count: usize, dstDevice: CUdevice_v1, hStream: CUstream);
    cuMemRangeGetAttribute @ 8000 (data: *mut c_void, dataSize: usize, attribute: CUmem_range_attribute, devPtr: CUdeviceptr_v2, count: usize);
    cuMemRangeGetAttributes @ 8000 (data: *mut *mut c_void, dataSizes: *mut usize, attributes: *mut CUmem_range_attribute, numAttributes: usize, devPtr: CUdeviceptr_v2, count: usize);
    cuMemRelease @ 10020 (handle: CUmemGenericAllocationHandle_v1);
    cuMemRetainAllocationHandle @ 11000 (handle: *mut CUmemGenericAllocationHandle_v1, addr: *mut c_void);
    cuMemSetAccess @ 10020 (ptr: CUdeviceptr_v2, size: usize, desc: *const CUmemAccessDesc_v1, count: usize);
    cuMemUnmap @ 10020 (ptr: CUdeviceptr_v2, size: usize);
    cuMemcpy @ 4000 (dst: CUdeviceptr_v2, src: CUdeviceptr_v2, ByteCount: usize);
    cuMemcpy2D @ 3020 (pCopy: *const CUDA_MEMCPY2D_v2);
    cuMemcpy2DAsync @ 3020 (pCopy: *const CUDA_MEMCPY2D_v2, hStream: CUstream);
    cuMemcpy2DUnaligned @ 3020 (pCopy: *const CUDA_MEMCPY2D_v2);
    cuMemcpy3D @ 3020 (pCopy: *const CUDA_MEMCPY3D_v2);
    cuMemcpy3DAsync @ 3020 (pCopy: *const CUDA_MEMCPY3D_v2, hStream: CUstream);
    cuMemcpy3DBatchAsync @ 12080 (numParams: usize, opList: *mut CUDA_MEMCPY3D_BATCH_OP_v1, failIdx: *mut usize, flags: c_ulonglong, hStream: CUstream);
    cuMemcpy3DPeer @ 4000 (pCopy: *const CUDA_MEMCPY3D_PEER_v1);
    cuMemcpy3DPeerAsync @ 4000 (pCopy: *const CUDA_MEMCPY3D_PEER_v1, hStream: CUstream);
    cuMemcpyAsync @ 4000 (dst: CUdeviceptr_v2, src: CUdeviceptr_v2, ByteCount: usize, hStream: CUstream);
    cuMemcpyAtoA @ 3020 (dstArray: CUarray, dstOffset: usize, srcArray: CUarray, srcOffset: usize, ByteCount: usize);
    cuMemcpyAtoD @ 3020 (dstDevice: CUdeviceptr_v2, srcArray: CUarray, srcOffset: usize, ByteCount: usize);
    cuMemcpyAtoH @ 3020 (dstHost: *mut c_void, srcArray: CUarray, srcOffset: usize, ByteCount: usize);
    cuMemcpyAtoHAsync @ 3020 (dstHost: *mut c_void, srcArray: CUarray, srcOffset: usize, ByteCount: usize, hStream: CUstream);
    cuMemcpyBatchAsync @ 12080 (dsts: *mut CUdeviceptr_v2, srcs: *mut CUdeviceptr_v2, sizes: *mut usize, count: usize, attrs: *mut CUmemcpyAttributes_v1, attrIdxs: *mut usize, numAttrs: usize, failIdx: *mut usize, hStream: CUstream);
    cuMemcpyDtoA @ 3020 (dstArray: CUarray, dstOffset: usize, srcDevice: CUdeviceptr_v2, ByteCount: usize);
    cuMemcpyDtoD @ 3020 (dstDevice: CUdeviceptr_v2, srcDevice: CUdeviceptr_v2, ByteCount: usize);
    cuMemcpyDtoDAsync @ 3020 (dstDevice: CUdeviceptr_v2, srcDevice: CUdeviceptr_v2, ByteCount: usize, hStream: CUstream);
    cuMemcpyDtoH @ 3020 (dstHost: *mut c_void, srcDevice: CUdeviceptr_v2, ByteCount: usize);
    cuMemcpyDtoHAsync @ 3020 (dstHost: *mut c_void, srcDevice: CUdeviceptr_v2, ByteCount: usize, hStream: CUstream);
    cuMemcpyHtoA @ 3020 (dstArray: CUarray, dstOffset: usize, srcHost: *const c_void, ByteCount: usize);
    cuMemcpyHtoAAsync @ 3020 (dstArray: CUarray, dstOffset: usize, srcHost: *const c_void, ByteCount: usize, hStream: CUstream);
    cuMemcpyHtoD @ 3020 (dstDevice: CUdeviceptr_v2, srcHost: *const c_void, ByteCount: usize);
    cuMemcpyHtoDAsync @ 3020 (dstDevice: CUdeviceptr_v2, srcHost: *const c_void, ByteCount: usize, hStream: CUstream);
    cuMemcpyPeer @ 4000 (dstDevice: CUdeviceptr_v2, dstContext: CUcontext, srcDevice: CUdeviceptr_v2, srcContext: CUcontext, ByteCount: usize);
    cuMemcpyPeerAsync @ 4000 (dstDevice: CUdeviceptr_v2, dstContext: CUcontext, srcDevice: CUdeviceptr_v2, srcContext: CUcontext, ByteCount: usize, hStream: CUstream);
    cuMemsetD16 @ 3020 (dstDevice: CUdeviceptr_v2, us: c_ushort, N: usize);
    cuMemsetD16Async @ 3020 (dstDevice: CUdeviceptr_v2, us: c_ushort, N: usize, hStream: CUstream);
    cuMemsetD2D16 @ 3020 (dstDevice: CUdeviceptr_v2, dstPitch: usize, us: c_ushort, Width: usize, Height: usize);
    cuMemsetD2D16Async @ 3020 (dstDevice: CUdeviceptr_v2, dstPitch: usize, us: c_ushort, Width: usize, Height: usize, hStream: CUstream);
    cuMemsetD2D32 @ 3020 (dstDevice: CUdeviceptr_v2, dstPitch: usize, ui: c_uint, Width: usize, Height: usize);
    cuMemsetD2D32Async @ 3020 (dstDevice: CUdeviceptr_v2, dstPitch: usize, ui: c_uint, Width: usize, Height: usize, hStream: CUstream);
    cuMemsetD2D8 @ 3020 (dstDevice: CUdeviceptr_v2, dstPitch: usize, uc: c_uchar, Width: usize, Height: usize);
    cuMemsetD2D8Async @ 3020 (dstDevice: CUdeviceptr_v2, dstPitch: usize, uc: c_uchar, Width: usize, Height: usize, hStream: CUstream);
    cuMemsetD32 @ 3020 (dstDevice: CUdeviceptr_v2, ui: c_uint, N: usize);
    cuMemsetD32Async @ 3020 (dstDevice: CUdeviceptr_v2, ui: c_uint, N: usize, hStream: CUstream);
    cuMemsetD8 @ 3020 (dstDevice: CUdeviceptr_v2, uc: c_uchar, N: usize);
    cuMemsetD8Async @ 3020 (dstDevice: CUdeviceptr_v2, uc: c_uchar, N: usize, hStream: CUstream);
    cuMipmappedArrayCreate @ 5000 (pHandle: *mut CUmipmappedArray, pMipmappedArrayDesc: *const CUDA_ARRAY3D_DESCRIPTOR_v2, numMipmapLevels: c_uint);
    cuMipmappedArrayDestroy @ 5000 (hMipmappedArray: CUmipmappedArray);
    cuMipmappedArrayGetLevel @ 5000 (pLevelArray: *mut CUarray, hMipmappedArray: CUmipmappedArray, level: c_uint);
    cuMipmappedArrayGetMemoryRequirements @ 11060 (memoryRequirements: *mut CUDA_ARRAY_MEMORY_REQUIREMENTS_v1, mipmap: CUmipmappedArray, device: CUdevice);
    cuMipmappedArrayGetSparseProperties @ 11010 (sparseProperties: *mut CUDA_ARRAY_SPARSE_PROPERTIES_v1, mipmap: CUmipmappedArray);
    cuModuleEnumerateFunctions @ 12040 (functions: *mut CUfunction, numFunctions: c_uint, mod_: CUmodule);
    cuModuleGetFunction @ 2000 (hfunc: *mut CUfunction, hmod: CUmodule, name: *const c_char);
    cuModuleGetFunctionCount @ 12040 (count: *mut c_uint, hmod: CUmodule);
    cuModuleGetGlobal @ 3020 (dptr: *mut CUdeviceptr_v2, bytes: *mut usize, hmod: CUmodule, name: *const c_char);
    cuModuleGetLoadingMode @ 11070 (mode: *mut CUmoduleLoadingMode);
    cuModuleGetSurfRef @ 3000 (pSurfRef: *mut CUsurfref, hmod: CUmodule, name: *const c_char);
    cuModuleGetTexRef @ 2000 (pTexRef: *mut CUtexref, hmod: CUmodule, name: *const c_char);
    cuModuleLoad @ 2000 (module: *mut CUmodule, fname: *const c_char);
    cuModuleLoadData @ 2000 (module: *mut CUmodule, image: *const c_void);
    cuModuleLoadDataEx @ 2010 (module: *mut CUmodule, image: *const c_void, numOptions: c_uint, options: *mut CUjit_option, optionValues: *mut *mut c_void);
    cuModuleLoadFatBinary @ 2000 (module: *mut CUmodule, fatCubin: *const c_void);
    cuModuleUnload @ 2000 (hmod: CUmodule);
    cuMulticastAddDevice @ 12010 (mcHandle: CUmemGenericAllocationHandle, dev: CUdevice);
    cuMulticastBindAddr @ 12010 (mcHandle: CUmemGenericAllocationHandle, mcOffset: usize, memptr: CUdeviceptr, size: usize, flags: c_ulonglong);
    cuMulticastBindMem @ 12010 (mcHandle: CUmemGenericAllocationHandle, mcOffset: usize, memHandle: CUmemGenericAllocationHandle, memOffset: usize, size: usize, flags: c_ulonglong);
    cuMulticastCreate @ 12010 (mcHandle: *mut CUmemGenericAllocationHandle, prop: *const CUmulticastObjectProp);
    cuMulticastGetGranularity @ 12010 (granularity: *mut usize, prop: *const CUmulticastObjectProp, option: CUmulticastGranularity_flags);
    cuMulticastUnbind @ 12010 (mcHandle: CUmemGenericAllocationHandle, dev: CUdevice, mcOffset: usize, size: usize);
    cuOccupancyAvailableDynamicSMemPerBlock @ 10020 (dynamicSmemSize: *mut usize, func: CUfunction, numBlocks: c_int, blockSize: c_int);
    cuOccupancyMaxActiveBlocksPerMultiprocessor @ 6050 (numBlocks: *mut c_int, func: CUfunction, blockSize: c_int, dynamicSMemSize: usize);
    cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags @ 7000 (numBlocks: *mut c_int, func: CUfunction, blockSize: c_int, dynamicSMemSize: usize, flags: c_uint);
    cuOccupancyMaxActiveClusters @ 11070 (numClusters: *mut c_int, func: CUfunction, config: *const CUlaunchConfig);
    cuOccupancyMaxPotentialBlockSize @ 6050 (minGridSize: *mut c_int, blockSize: *mut c_int, func: CUfunction, blockSizeToDynamicSMemSize: CUoccupancyB2DSize, dynamicSMemSize: usize, blockSizeLimit: c_int);
    cuOccupancyMaxPotentialBlockSizeWithFlags @ 7000 (minGridSize: *mut c_int, blockSize: *mut c_int, func: CUfunction, blockSizeToDynamicSMemSize: CUoccupancyB2DSize, dynamicSMemSize: usize, blockSizeLimit: c_int, flags: c_uint);
    cuOccupancyMaxPotentialClusterSize @ 11070 (clusterSize: *mut c_int, func: CUfunction, config: *const CUlaunchConfig);
    cuParamSetSize @ 2000 (hfunc: CUfunction, numbytes: c_uint);
    cuParamSetTexRef @ 2000 (hfunc: CUfunction, texunit: c_int, hTexRef: CUtexref);
    cuParamSetf @ 2000 (hfunc: CUfunction, offset: c_int, value: f32);
    cuParamSeti @ 2000 (hfunc: CUfunction, offset: c_int, value: c_uint);
    cuParamSetv @ 2000 (hfunc: CUfunction, offset: c_int, ptr: *mut c_void, numbytes: c_uint);
    cuPointerGetAttribute @ 4000 (data: *mut c_void, attribute: CUpointer_attribute, ptr: CUdeviceptr_v2);
    cuPointerGetAttributes @ 7000 (numAttributes: c_uint, attributes: *mut CUpointer_attribute, data: *mut *mut c_void, ptr: CUdeviceptr_v2);
    cuPointerSetAttribute @ 6000 (value: *const c_void, attribute: CUpointer_attribute, ptr: CUdeviceptr_v2);
    cuProfilerStart @ 4000 ();
    cuProfilerStop @ 4000 ();
    cuSignalExternalSemaphoresAsync @ 10000 (extSemArray: *const CUexternalSemaphore, paramsArray: *const CUDA_EXTERNAL_SEMAPHORE_SIGNAL_PARAMS_v1, numExtSems: c_uint, stream: CUstream);
    cuStreamAddCallback @ 5000 (hStream: CUstream, callback: CUstreamCallback, userData: *mut c_void, flags: c_uint);
    cuStreamAttachMemAsync @ 6000 (hStream: CUstream, dptr: CUdeviceptr_v2, length: usize, flags: c_uint);
    cuStreamBatchMemOp @ 11070 (stream: CUstream, count: c_uint, paramArray: *mut CUstreamBatchMemOpParams, flags: c_uint);
    cuStreamBatchMemOp_v8000 @ 8000 (stream: CUstream, count: c_uint, paramArray: *mut CUstreamBatchMemOpParams, flags: c_uint);
    cuStreamBeginCapture @ 10010 (hStream: CUstream, mode: CUstreamCaptureMode);
    cuStreamBeginCaptureToGraph @ 12030 (hStream: CUstream, hGraph: CUgraph, dependencies: *const CUgraphNode, dependencyData: *const CUgraphEdgeData, numDependencies: usize, mode: CUstreamCaptureMode);
    cuStreamCopyAttributes @ 11000 (dstStream: CUstream, srcStream: CUstream);
    cuStreamCreate @ 2000 (phStream: *mut CUstream, Flags: c_uint);
    cuStreamCreateWithPriority @ 5050 (phStream: *mut CUstream, flags: c_uint, priority: c_int);
    cuStreamDestroy @ 4000 (hStream: CUstream);
    cuStreamEndCapture @ 10000 (hStream: CUstream, phGraph: *mut CUgraph);
    cuStreamGetAttribute @ 11000 (hStream: CUstream, attr: CUstreamAttrID, value: *mut CUstreamAttrValue_v1);
    cuStreamGetCaptureInfo @ 12030 (hStream: CUstream, captureStatus_out: *mut CUstreamCaptureStatus, id_out: *mut cuuint64_t, graph_out: *mut CUgraph, dependencies_out: *mut *const CUgraphNode, edgeData_out: *mut *const CUgraphEdgeData, numDependencies_out: *mut usize);
    cuStreamGetCaptureInfo_v11030 @ 11030 (hStream: CUstream, captureStatus_out: *mut CUstreamCaptureStatus, id_out: *mut cuuint64_t, graph_out: *mut CUgraph, dependencies_out: *mut *const CUgraphNode, numDependencies_out: *mut usize);
    cuStreamGetCaptureInfo_v10010 @ 10010 (hStream: CUstream, captureStatus_out: *mut CUstreamCaptureStatus, id_out: *mut cuuint64_t);
    cuStreamGetCtx @ 12050 (hStream: CUstream, pctx: *mut CUcontext, pGreenCtx: *mut CUgreenCtx);
    cuStreamGetCtx_v9020 @ 9020 (hStream: CUstream, pctx: *mut CUcontext);
    cuStreamGetDevice @ 12080 (hStream: CUstream, device: *mut CUdevice);
    cuStreamGetFlags @ 5050 (hStream: CUstream, flags: *mut c_uint);
    cuStreamGetGreenCtx @ 12040 (hStream: CUstream, phCtx: *mut CUgreenCtx);
    cuStreamGetId @ 12000 (hStream: CUstream, streamId: *mut c_ulonglong);
    cuStreamGetPriority @ 5050 (hStream: CUstream, priority: *mut c_int);
    cuStreamIsCapturing @ 10000 (hStream: CUstream, captureStatus: *mut CUstreamCaptureStatus);
    cuStreamQuery @ 2000 (hStream: CUstream);
    cuStreamSetAttribute @ 11000 (hStream: CUstream, attr: CUstreamAttrID, param: *const CUstreamAttrValue_v1);
    cuStreamSynchronize @ 2000 (hStream: CUstream);
    cuStreamUpdateCaptureDependencies @ 12030 (hStream: CUstream, dependencies: *mut CUgraphNode, dependencyData: *const CUgraphEdgeData, numDependencies: usize, flags: c_uint);
    cuStreamUpdateCaptureDependencies_v11030 @ 11030 (hStream: CUstream, dependencies: *mut CUgraphNode, numDependencies: usize, flags: c_uint);
    cuStreamWaitEvent @ 3020 (hStream: CUstream, hEvent: CUevent, Flags: c_uint);
    cuStreamWaitValue32 @ 11070 (stream: CUstream, addr: CUdeviceptr_v2, value: cuuint32_t, flags: c_uint);
    cuStreamWaitValue32_v8000 @ 8000 (stream: CUstream, addr: CUdeviceptr_v2, value: cuuint32_t, flags: c_uint);
    cuStreamWaitValue64 @ 11070 (stream: CUstream, addr: CUdeviceptr_v2, value: cuuint64_t, flags: c_uint);
    cuStreamWaitValue64_v9000 @ 9000 (stream: CUstream, addr: CUdeviceptr_v2, value: cuuint64_t, flags: c_uint);
    cuStreamWriteValue32 @ 11070 (stream: CUstream, addr: CUdeviceptr_v2, value: cuuint32_t, flags: c_uint);
    cuStreamWriteValue32_v8000 @ 8000 (stream: CUstream, addr: CUdeviceptr_v2, value: cuuint32_t, flags: c_uint);
    cuStreamWriteValue64 @ 11070 (stream: CUstream, addr: CUdeviceptr_v2, value: cuuint64_t, flags: c_uint);
    cuStreamWriteValue64_v9000 @ 9000 (stream: CUstream, addr: CUdeviceptr_v2, value: cuuint64_t, flags: c_uint);
    cuSurfObjectCreate @ 5000 (pSurfObject: *mut CUsurfObject_v1, pResDesc: *const CUDA_RESOURCE_DESC_v1);
    cuSurfObjectDestroy @ 5000 (surfObject: CUsurfObject_v1);
    cuSurfObjectGetResourceDesc @ 5000 (pResDesc: *mut CUDA_RESOURCE_DESC_v1, surfObject: CUsurfObject_v1);
    cuSurfRefGetArray @ 3000 (phArray: *mut CUarray, hSurfRef: CUsurfref);
    cuSurfRefSetArray @ 3000 (hSurfRef: CUsurfref, hArray: CUarray, Flags: c_uint);
    cuTensorMapEncodeIm2col @ 12000 (tensorMap: *mut CUtensorMap, tensorDataType: CUtensorMapDataType, tensorRank: cuuint32_t, globalAddress: *mut c_void, globalDim: *const cuuint64_t, globalStrides: *const cuuint64_t, pixelBoxLowerCorner: *const c_int, pixelBoxUpperCorner: *const c_int, channelsPerPixel: cuuint32_t, pixelsPerColumn: cuuint32_t, elementStrides: *const cuuint32_t, interleave: CUtensorMapInterleave, swizzle: CUtensorMapSwizzle, l2Promotion: CUtensorMapL2promotion, oobFill: CUtensorMapFloatOOBfill);
    cuTensorMapEncodeIm2colWide @ 12080 (tensorMap: *mut CUtensorMap, tensorDataType: CUtensorMapDataType, tensorRank: cuuint32_t, globalAddress: *mut c_void, globalDim: *const cuuint64_t, globalStrides: *const cuuint64_t, pixelBoxLowerCornerWidth: c_int, pixelBoxUpperCornerWidth: c_int, channelsPerPixel: cuuint32_t, pixelsPerColumn: cuuint32_t, elementStrides: *const cuuint32_t, interleave: CUtensorMapInterleave, mode: CUtensorMapIm2ColWideMode, swizzle: CUtensorMapSwizzle, l2Promotion: CUtensorMapL2promotion, oobFill: CUtensorMapFloatOOBfill);
    cuTensorMapEncodeTiled @ 12000 (tensorMap: *mut CUtensorMap, tensorDataType: CUtensorMapDataType, tensorRank: cuuint32_t, globalAddress: *mut c_void, globalDim: *const cuuint64_t, globalStrides: *const cuuint64_t, boxDim: *const cuuint32_t, elementStrides: *const cuuint32_t, interleave: CUtensorMapInterleave, swizzle: CUtensorMapSwizzle, l2Promotion: CUtensorMapL2promotion, oobFill: CUtensorMapFloatOOBfill);
    cuTensorMapReplaceAddress @ 12000 (tensorMap: *mut CUtensorMap, globalAddress: *mut c_void);
    cuTexObjectCreate @ 5000 (pTexObject: *mut CUtexObject_v1, pResDesc: *const CUDA_RESOURCE_DESC_v1, pTexDesc: *const CUDA_TEXTURE_DESC_v1, pResViewDesc: *const CUDA_RESOURCE_VIEW_DESC_v1);
    cuTexObjectDestroy @ 5000 (texObject: CUtexObject_v1);
    cuTexObjectGetResourceDesc @ 5000 (pResDesc: *mut CUDA_RESOURCE_DESC_v1, texObject: CUtexObject_v1);
    cuTexObjectGetResourceViewDesc @ 5000 (pResViewDesc: *mut CUDA_RESOURCE_VIEW_DESC_v1, texObject: CUtexObject_v1);
    cuTexObjectGetTextureDesc @ 5000 (pTexDesc: *mut CUDA_TEXTURE_DESC_v1, texObject: CUtexObject_v1);
    cuTexRefCreate @ 2000 (pTexRef: *mut CUtexref);
    cuTexRefDestroy @ 2000 (hTexRef: CUtexref);
    cuTexRefGetAddress @ 3020 (pdptr: *mut CUdeviceptr_v2, hTexRef: CUtexref);
    cuTexRefGetAddressMode @ 2000 (pam: *mut CUaddress_mode, hTexRef: CUtexref, dim: c_int);
    cuTexRefGetArray @ 2000 (phArray: *mut CUarray, hTexRef: CUtexref);
    cuTexRefGetBorderColor @ 8000 (pBorderColor: *mut f32, hTexRef: CUtexref);
    cuTexRefGetFilterMode @ 2000 (pfm: *mut CUfilter_mode, hTexRef: CUtexref);
    cuTexRefGetFlags @ 2000 (pFlags: *mut c_uint, hTexRef: CUtexref);
    cuTexRefGetFormat @ 2000 (pFormat: *mut CUarray_format, pNumChannels: *mut c_int, hTexRef: CUtexref);
    cuTexRefGetMaxAnisotropy @ 5000 (pmaxAniso: *mut c_int, hTexRef: CUtexref);
    cuTexRefGetMipmapFilterMode @ 5000 (pfm: *mut CUfilter_mode, hTexRef: CUtexref);
    cuTexRefGetMipmapLevelBias @ 5000 (pbias: *mut f32, hTexRef: CUtexref);
    cuTexRefGetMipmapLevelClamp @ 5000 (pminMipmapLevelClamp: *mut f32, pmaxMipmapLevelClamp: *mut f32, hTexRef: CUtexref);
    cuTexRefGetMipmappedArray @ 5000 (phMipmappedArray: *mut CUmipmappedArray, hTexRef: CUtexref);
    cuTexRefSetAddress @ 3020 (ByteOffset: *mut usize, hTexRef: CUtexref, dptr: CUdeviceptr_v2, bytes: usize);
    cuTexRefSetAddress2D @ 4010 (hTexRef: CUtexref, desc: *const CUDA_ARRAY_DESCRIPTOR_v2, dptr: CUdeviceptr_v2, Pitch: usize);
    cuTexRefSetAddressMode @ 2000 (hTexRef: CUtexref, dim: c_int, am: CUaddress_mode);
    cuTexRefSetArray @ 2000 (hTexRef: CUtexref, hArray: CUarray, Flags: c_uint);
    cuTexRefSetBorderColor @ 8000 (hTexRef: CUtexref, pBorderColor: *mut f32);
    cuTexRefSetFilterMode @ 2000 (hTexRef: CUtexref, fm: CUfilter_mode);
    cuTexRefSetFlags @ 2000 (hTexRef: CUtexref, Flags: c_uint);
    cuTexRefSetFormat @ 2000 (hTexRef: CUtexref, fmt: CUarray_format, NumPackedComponents: c_int);
    cuTexRefSetMaxAnisotropy @ 5000 (hTexRef: CUtexref, maxAniso: c_uint);
    cuTexRefSetMipmapFilterMode @ 5000 (hTexRef: CUtexref, fm: CUfilter_mode);
    cuTexRefSetMipmapLevelBias @ 5000 (hTexRef: CUtexref, bias: f32);
    cuTexRefSetMipmapLevelClamp @ 5000 (hTexRef: CUtexref, minMipmapLevelClamp: f32, maxMipmapLevelClamp: f32);
    cuTexRefSetMipmappedArray @ 5000 (hTexRef: CUtexref, hMipmappedArray: CUmipmappedArray, Flags: c_uint);
    cuThreadExchangeStreamCaptureMode @ 10010 (mode: *mut CUstreamCaptureMode);
    cuUserObjectCreate @ 11030 (object_out: *mut CUuserObject, ptr: *mut c_void, destroy: CUhostFn, initialRefcount: c_uint, flags: c_uint);
    cuUserObjectRelease @ 11030 (object: CUuserObject, count: c_uint);
    cuUserObjectRetain @ 11030 (object: CUuserObject, count: c_uint);
    cuWaitExternalSemaphoresAsync @ 10000 (extSemArray: *const CUexternalSemaphore, paramsArray: *const CUDA_EXTERNAL_SEMAPHORE_WAIT_PARAMS_v1, numExtSems: c_uint, stream: CUstream);
}

/// Lines whose per-thread-default-stream variant (`_ptsz`/`_ptds`, same ABI) the driver
/// registers under a later version than the line's: (field, version to ask for).
pub(crate) const PER_THREAD_VERSIONS: &[(&str, u32)] = &[
    ("cuEventRecord", 7000),
    ("cuLaunchKernel", 7000),
    ("cuMemcpy", 7000),
    ("cuMemcpy2D", 7000),
    ("cuMemcpy2DAsync", 7000),
    ("cuMemcpy2DUnaligned", 7000),
    ("cuMemcpy3D", 7000),
    ("cuMemcpy3DAsync", 7000),
    ("cuMemcpy3DPeer", 7000),
    ("cuMemcpy3DPeerAsync", 7000),
    ("cuMemcpyAsync", 7000),
    ("cuMemcpyAtoA", 7000),
    ("cuMemcpyAtoD", 7000),
    ("cuMemcpyAtoH", 7000),
    ("cuMemcpyAtoHAsync", 7000),
    ("cuMemcpyDtoA", 7000),
    ("cuMemcpyDtoD", 7000),
    ("cuMemcpyDtoDAsync", 7000),
    ("cuMemcpyDtoH", 7000),
    ("cuMemcpyDtoHAsync", 7000),
    ("cuMemcpyHtoA", 7000),
    ("cuMemcpyHtoAAsync", 7000),
    ("cuMemcpyHtoD", 7000),
    ("cuMemcpyHtoDAsync", 7000),
    ("cuMemcpyPeer", 7000),
    ("cuMemcpyPeerAsync", 7000),
    ("cuMemsetD16", 7000),
    ("cuMemsetD16Async", 7000),
    ("cuMemsetD2D16", 7000),
    ("cuMemsetD2D16Async", 7000),
    ("cuMemsetD2D32", 7000),
    ("cuMemsetD2D32Async", 7000),
    ("cuMemsetD2D8", 7000),
    ("cuMemsetD2D8Async", 7000),
    ("cuMemsetD32", 7000),
    ("cuMemsetD32Async", 7000),
    ("cuMemsetD8", 7000),
    ("cuMemsetD8Async", 7000),
    ("cuStreamAddCallback", 7000),
    ("cuStreamAttachMemAsync", 7000),
    ("cuStreamBatchMemOp_v8000", 11070),
    ("cuStreamGetFlags", 7000),
    ("cuStreamGetPriority", 7000),
    ("cuStreamQuery", 7000),
    ("cuStreamSynchronize", 7000),
    ("cuStreamWaitEvent", 7000),
    ("cuStreamWaitValue32", 8000),
    ("cuStreamWaitValue32_v8000", 11070),
    ("cuStreamWaitValue64", 9000),
    ("cuStreamWaitValue64_v9000", 11070),
    ("cuStreamWriteValue32", 8000),
    ("cuStreamWriteValue32_v8000", 11070),
    ("cuStreamWriteValue64", 9000),
    ("cuStreamWriteValue64_v9000", 11070),
];

/// Exported symbol of each function whose cuda.h name carries a suffix, for drivers
/// without cuGetProcAddress (older than 11.3). Only functions with one line are
/// resolved that way.
pub(crate) const DLSYM_SYMBOLS: &[(&str, &str)] = &[
    ("cuArray3DCreate", "cuArray3DCreate_v2"),
    ("cuArray3DGetDescriptor", "cuArray3DGetDescriptor_v2"),
    ("cuArrayCreate", "cuArrayCreate_v2"),
    ("cuArrayGetDescriptor", "cuArrayGetDescriptor_v2"),
    ("cuCtxDestroy", "cuCtxDestroy_v2"),
    ("cuCtxPopCurrent", "cuCtxPopCurrent_v2"),
    ("cuCtxPushCurrent", "cuCtxPushCurrent_v2"),
    ("cuDevicePrimaryCtxRelease", "cuDevicePrimaryCtxRelease_v2"),
    ("cuDevicePrimaryCtxReset", "cuDevicePrimaryCtxReset_v2"),
    (
        "cuDevicePrimaryCtxSetFlags",
        "cuDevicePrimaryCtxSetFlags_v2",
    ),
    ("cuDeviceTotalMem", "cuDeviceTotalMem_v2"),
    ("cuEventDestroy", "cuEventDestroy_v2"),
    ("cuIpcOpenMemHandle", "cuIpcOpenMemHandle_v2"),
    ("cuLinkAddData", "cuLinkAddData_v2"),
    ("cuLinkAddFile", "cuLinkAddFile_v2"),
    ("cuLinkCreate", "cuLinkCreate_v2"),
    ("cuMemAlloc", "cuMemAlloc_v2"),
    ("cuMemAllocHost", "cuMemAllocHost_v2"),
    ("cuMemAllocPitch", "cuMemAllocPitch_v2"),
    ("cuMemFree", "cuMemFree_v2"),
    ("cuMemGetAddressRange", "cuMemGetAddressRange_v2"),
    ("cuMemGetInfo", "cuMemGetInfo_v2"),
    ("cuMemHostGetDevicePointer", "cuMemHostGetDevicePointer_v2"),
    ("cuMemHostRegister", "cuMemHostRegister_v2"),
    ("cuModuleGetGlobal", "cuModuleGetGlobal_v2"),
    ("cuStreamDestroy", "cuStreamDestroy_v2"),
    ("cuTexRefGetAddress", "cuTexRefGetAddress_v2"),
    ("cuTexRefSetAddress", "cuTexRefSetAddress_v2"),
    ("cuTexRefSetAddress2D", "cuTexRefSetAddress2D_v3"),
];

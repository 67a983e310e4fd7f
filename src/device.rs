//! Devices: enumeration, identity (name, UUID, PCI bus id, memory), every
//! `CUdevice_attribute` through one typed query, and grouped views of the attributes
//! a kernel author usually needs together.

use crate::error::{CudaError, check};
use crate::loader::Driver;
use crate::sys::{CUdevice, CUdevice_attribute as A, CUuuid};
use core::ffi::{CStr, c_char, c_int};

/// A CUDA device of a loaded, initialised driver.
#[derive(Clone, Copy)]
pub struct Device {
    driver: &'static Driver,
    raw: CUdevice,
}

impl core::fmt::Debug for Device {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "Device({})", self.raw)
    }
}

impl PartialEq for Device {
    fn eq(&self, other: &Self) -> bool {
        self.raw == other.raw && core::ptr::eq(self.driver, other.driver)
    }
}

impl Eq for Device {}

impl Driver {
    /// How many devices the driver sees.
    pub fn device_count(&self) -> Result<usize, CudaError> {
        let mut n: c_int = 0;
        // SAFETY: a valid out-pointer.
        check(unsafe { self.table().cuDeviceGetCount()?(&mut n) })?;
        Ok(n.max(0) as usize)
    }

    /// The device of this ordinal.
    pub fn device(&'static self, ordinal: usize) -> Result<Device, CudaError> {
        let ordinal = c_int::try_from(ordinal)
            .map_err(|_| CudaError::Driver(crate::sys::CUresult::CUDA_ERROR_INVALID_DEVICE))?;
        let mut raw: CUdevice = 0;
        // SAFETY: a valid out-pointer.
        check(unsafe { self.table().cuDeviceGet()?(&mut raw, ordinal) })?;
        Ok(Device { driver: self, raw })
    }

    /// Every device, in ordinal order.
    pub fn list_devices(&'static self) -> Result<Vec<Device>, CudaError> {
        (0..self.device_count()?).map(|i| self.device(i)).collect()
    }

    /// The device most kernels run fastest on, by a documented criterion: the highest
    /// compute capability, then the most multiprocessors, then the most memory, then
    /// the lowest ordinal. `CUDA_ERROR_NO_DEVICE` when there is none.
    pub fn best_device(&'static self) -> Result<Device, CudaError> {
        type Rank = ((u32, u32), i32, usize);
        let mut best: Option<(Device, Rank)> = None;
        for d in self.list_devices()? {
            let key = (
                d.compute_capability()?,
                d.attribute(A::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)?,
                d.total_memory()?,
            );
            if best.as_ref().is_none_or(|(_, k)| key > *k) {
                best = Some((d, key));
            }
        }
        best.map(|(d, _)| d).ok_or(CudaError::Driver(
            crate::sys::CUresult::CUDA_ERROR_NO_DEVICE,
        ))
    }
}

/// Compute capability and architecture.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ComputeInfo {
    /// (major, minor), e.g. (9, 0).
    pub capability: (u32, u32),
    /// Streaming multiprocessors.
    pub multiprocessors: u32,
    /// Threads per warp.
    pub warp_size: u32,
    /// Core clock, kHz.
    pub clock_khz: u32,
}

/// What one launch may ask for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LaunchLimits {
    /// Threads per block.
    pub max_threads_per_block: u32,
    /// Block dimensions (x, y, z).
    pub max_block_dim: [u32; 3],
    /// Grid dimensions (x, y, z).
    pub max_grid_dim: [u32; 3],
    /// Shared memory per block without opting in, bytes.
    pub max_shared_per_block: u32,
    /// Shared memory per block with `MAX_DYNAMIC_SHARED_SIZE_BYTES` opt-in, bytes.
    pub max_shared_per_block_optin: u32,
    /// 32-bit registers per block.
    pub max_registers_per_block: u32,
    /// Resident threads per multiprocessor.
    pub max_threads_per_multiprocessor: u32,
    /// Resident blocks per multiprocessor.
    pub max_blocks_per_multiprocessor: u32,
}

/// Memory system.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MemoryInfo {
    /// Device memory, bytes.
    pub total: usize,
    /// Constant memory, bytes.
    pub total_constant: u32,
    /// L2 cache, bytes.
    pub l2_cache: u32,
    /// Memory bus width, bits.
    pub bus_width_bits: u32,
    /// Memory clock, kHz.
    pub clock_khz: u32,
    /// Shared memory per multiprocessor, bytes.
    pub shared_per_multiprocessor: u32,
}

/// Optional features (each an attribute that is 0 or 1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Features {
    /// One address space for host and devices.
    pub unified_addressing: bool,
    /// Managed (unified) memory.
    pub managed_memory: bool,
    /// Kernels of different streams run concurrently.
    pub concurrent_kernels: bool,
    /// Copies overlap kernels (`ASYNC_ENGINE_COUNT > 0`).
    pub async_copies: bool,
    /// Host memory can be mapped into the device.
    pub map_host_memory: bool,
    /// Cooperative launch.
    pub cooperative_launch: bool,
    /// Thread-block clusters.
    pub cluster_launch: bool,
    /// Stream-ordered memory pools.
    pub memory_pools: bool,
    /// Virtual memory management.
    pub virtual_memory_management: bool,
    /// Stream priorities.
    pub stream_priorities: bool,
    /// Tensor-map (TMA) access.
    pub tensor_map_access: bool,
}

/// The text a driver wrote into `buf`: up to the first NUL, or all of it if the
/// driver left none (read from the buffer's bounds, never past them).
fn c_string(buf: &[c_char]) -> String {
    let bytes: Vec<u8> = buf.iter().map(|&c| c as u8).collect();
    let text = CStr::from_bytes_until_nul(&bytes)
        .map(CStr::to_bytes)
        .unwrap_or(&bytes);
    String::from_utf8_lossy(text).into_owned()
}

impl Device {
    /// The driver's handle.
    pub fn raw(&self) -> CUdevice {
        self.raw
    }

    /// The ordinal.
    pub fn ordinal(&self) -> usize {
        self.raw.max(0) as usize
    }

    /// The driver this device belongs to.
    pub fn driver(&self) -> &'static Driver {
        self.driver
    }

    /// Any attribute, typed by the header's enum (every value of 12.9, Blackwell's
    /// included); an attribute the driver does not know is its `INVALID_VALUE`.
    pub fn attribute(&self, attr: A) -> Result<i32, CudaError> {
        let mut v: c_int = 0;
        // SAFETY: a valid out-pointer; any attribute value is accepted by the driver
        // (unknown ones are an error, not undefined behaviour).
        check(unsafe { self.driver.table().cuDeviceGetAttribute()?(&mut v, attr, self.raw) })?;
        Ok(v)
    }

    fn u(&self, attr: A) -> Result<u32, CudaError> {
        Ok(self.attribute(attr)?.max(0) as u32)
    }

    fn flag(&self, attr: A) -> Result<bool, CudaError> {
        Ok(self.attribute(attr)? != 0)
    }

    /// The name.
    pub fn name(&self) -> Result<String, CudaError> {
        let mut buf = [0 as c_char; 256];
        // SAFETY: the buffer's length is passed; the driver writes within it.
        check(unsafe {
            self.driver.table().cuDeviceGetName()?(buf.as_mut_ptr(), buf.len() as c_int, self.raw)
        })?;
        Ok(c_string(&buf))
    }

    /// The UUID.
    pub fn uuid(&self) -> Result<[u8; 16], CudaError> {
        let mut u = CUuuid::default();
        let t = self.driver.table();
        // SAFETY: a valid out-pointer; the 11.4 ABI where available, else 9.2.
        match t.cuDeviceGetUuid() {
            Ok(f) => check(unsafe { f(&mut u, self.raw) })?,
            Err(_) => check(unsafe { t.cuDeviceGetUuid_v9020()?(&mut u, self.raw) })?,
        }
        Ok(u.bytes.map(|b| b as u8))
    }

    /// The PCI bus id, `domain:bus:device.function`.
    pub fn pci_bus_id(&self) -> Result<String, CudaError> {
        let mut buf = [0 as c_char; 64];
        // SAFETY: the buffer's length is passed; the driver writes within it.
        check(unsafe {
            self.driver.table().cuDeviceGetPCIBusId()?(
                buf.as_mut_ptr(),
                buf.len() as c_int,
                self.raw,
            )
        })?;
        Ok(c_string(&buf))
    }

    /// Device memory, bytes.
    pub fn total_memory(&self) -> Result<usize, CudaError> {
        let mut bytes = 0usize;
        // SAFETY: a valid out-pointer.
        check(unsafe { self.driver.table().cuDeviceTotalMem()?(&mut bytes, self.raw) })?;
        Ok(bytes)
    }

    /// (major, minor) compute capability.
    pub fn compute_capability(&self) -> Result<(u32, u32), CudaError> {
        Ok((
            self.u(A::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR)?,
            self.u(A::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)?,
        ))
    }

    /// Compute capability and architecture.
    pub fn compute(&self) -> Result<ComputeInfo, CudaError> {
        Ok(ComputeInfo {
            capability: self.compute_capability()?,
            multiprocessors: self.u(A::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)?,
            warp_size: self.u(A::CU_DEVICE_ATTRIBUTE_WARP_SIZE)?,
            clock_khz: self.u(A::CU_DEVICE_ATTRIBUTE_CLOCK_RATE)?,
        })
    }

    /// What one launch may ask for.
    pub fn launch_limits(&self) -> Result<LaunchLimits, CudaError> {
        Ok(LaunchLimits {
            max_threads_per_block: self.u(A::CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK)?,
            max_block_dim: [
                self.u(A::CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X)?,
                self.u(A::CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y)?,
                self.u(A::CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z)?,
            ],
            max_grid_dim: [
                self.u(A::CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X)?,
                self.u(A::CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y)?,
                self.u(A::CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z)?,
            ],
            max_shared_per_block: self.u(A::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK)?,
            max_shared_per_block_optin: self
                .u(A::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN)?,
            max_registers_per_block: self.u(A::CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK)?,
            max_threads_per_multiprocessor: self
                .u(A::CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR)?,
            max_blocks_per_multiprocessor: self
                .u(A::CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR)?,
        })
    }

    /// The memory system.
    pub fn memory(&self) -> Result<MemoryInfo, CudaError> {
        Ok(MemoryInfo {
            total: self.total_memory()?,
            total_constant: self.u(A::CU_DEVICE_ATTRIBUTE_TOTAL_CONSTANT_MEMORY)?,
            l2_cache: self.u(A::CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE)?,
            bus_width_bits: self.u(A::CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH)?,
            clock_khz: self.u(A::CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE)?,
            shared_per_multiprocessor: self
                .u(A::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR)?,
        })
    }

    /// Optional features.
    pub fn features(&self) -> Result<Features, CudaError> {
        Ok(Features {
            unified_addressing: self.flag(A::CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING)?,
            managed_memory: self.flag(A::CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY)?,
            concurrent_kernels: self.flag(A::CU_DEVICE_ATTRIBUTE_CONCURRENT_KERNELS)?,
            async_copies: self.flag(A::CU_DEVICE_ATTRIBUTE_ASYNC_ENGINE_COUNT)?,
            map_host_memory: self.flag(A::CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY)?,
            cooperative_launch: self.flag(A::CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH)?,
            cluster_launch: self.flag(A::CU_DEVICE_ATTRIBUTE_CLUSTER_LAUNCH)?,
            memory_pools: self.flag(A::CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED)?,
            virtual_memory_management: self
                .flag(A::CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED)?,
            stream_priorities: self.flag(A::CU_DEVICE_ATTRIBUTE_STREAM_PRIORITIES_SUPPORTED)?,
            tensor_map_access: self.flag(A::CU_DEVICE_ATTRIBUTE_TENSOR_MAP_ACCESS_SUPPORTED)?,
        })
    }

    /// Whether this device can access `peer`'s memory.
    pub fn can_access_peer(&self, peer: &Device) -> Result<bool, CudaError> {
        let mut can: c_int = 0;
        // SAFETY: a valid out-pointer.
        check(unsafe {
            self.driver.table().cuDeviceCanAccessPeer()?(&mut can, self.raw, peer.raw)
        })?;
        Ok(can != 0)
    }
}
static_assertions::assert_impl_all!(ComputeInfo: Send, Sync);
static_assertions::assert_impl_all!(LaunchLimits: Send, Sync);
static_assertions::assert_impl_all!(MemoryInfo: Send, Sync);
static_assertions::assert_impl_all!(Features: Send, Sync);

#[cfg(test)]
mod tests {
    use super::c_string;

    #[test]
    fn text_without_a_nul_stays_within_the_buffer() {
        let full = [b'G' as core::ffi::c_char; 8];
        assert_eq!(c_string(&full), "GGGGGGGG");
        let mut short = [0 as core::ffi::c_char; 8];
        short[0] = b'H' as core::ffi::c_char;
        short[1] = b'i' as core::ffi::c_char;
        assert_eq!(c_string(&short), "Hi");
    }
}

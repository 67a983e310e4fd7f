//! Device profiles: what each simulated device is (name, compute capability, memory,
//! PCI location) and how it answers every `CUdevice_attribute`.
//!
//! Limits are those of the real architecture; capabilities are those softcuda
//! implements (features it does not implement — managed memory, pools, cooperative or
//! cluster launch, virtual memory management, ... — are reported absent).

/// One simulated device.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Profile {
    /// The device name (`cuDeviceGetName`).
    pub name: String,
    /// Compute capability (major, minor).
    pub cc: (u32, u32),
    /// Device memory in bytes: allocations beyond it fail with out-of-memory.
    pub total_mem: u64,
    /// Streaming multiprocessors.
    pub sm_count: u32,
    /// PCI (domain, bus, device).
    pub pci: (u32, u32, u32),
    /// The UUID (`cuDeviceGetUuid`).
    pub uuid: [u8; 16],
}

impl Profile {
    /// A profile of compute capability `major.minor` with `mem_mib` MiB, as device `ordinal`.
    pub fn new(ordinal: u32, major: u32, minor: u32, mem_mib: u64) -> Self {
        let sm_count = match (major, minor) {
            (9, _) => 132,
            (8, 0) => 108,
            (8, _) => 84,
            (7, _) => 80,
            _ => 40,
        };
        let mut uuid = *b"softcuda-dev-\0\0\0";
        uuid[13] = b'0' + (ordinal % 10) as u8;
        uuid[14] = major as u8;
        uuid[15] = minor as u8;
        Self {
            name: format!("softcuda sm_{major}{minor} (device {ordinal})"),
            cc: (major, minor),
            total_mem: mem_mib << 20,
            sm_count,
            pci: (0, 0x10 + ordinal, 0),
            uuid,
        }
    }

    /// The default machine: two devices of different architectures.
    pub fn defaults() -> Vec<Profile> {
        vec![Profile::new(0, 9, 0, 8192), Profile::new(1, 8, 0, 4096)]
    }

    /// Parses `SOFTCUDA_DEVICES`: comma-separated `major.minor:MiB`, e.g. `9.0:8192,8.0:4096`.
    pub fn parse_list(spec: &str) -> Option<Vec<Profile>> {
        let mut out = Vec::new();
        for (i, part) in spec
            .split(',')
            .map(str::trim)
            .filter(|p| !p.is_empty())
            .enumerate()
        {
            let (cc, mib) = part.split_once(':')?;
            let (major, minor) = cc.split_once('.')?;
            out.push(Profile::new(
                i as u32,
                major.parse().ok()?,
                minor.parse().ok()?,
                mib.parse().ok()?,
            ));
        }
        Some(out)
    }

    /// Shared memory per SM, in bytes.
    pub fn shared_per_sm(&self) -> u32 {
        match self.cc.0 {
            9 => 233_472,
            8 if self.cc.1 == 0 => 167_936,
            8 => 102_400,
            _ => 98_304,
        }
    }

    /// Shared memory a block may opt in to, in bytes.
    pub fn shared_per_block_optin(&self) -> u32 {
        self.shared_per_sm() - 1024
    }

    /// Maximum resident threads per SM.
    pub fn threads_per_sm(&self) -> u32 {
        if self.cc == (8, 6) || self.cc == (8, 9) {
            1536
        } else {
            2048
        }
    }

    /// Maximum resident blocks per SM.
    pub fn blocks_per_sm(&self) -> u32 {
        match self.cc {
            (9, _) => 32,
            (8, 0) => 32,
            (8, _) => 16,
            _ => 32,
        }
    }

    /// The value of `CUdevice_attribute` `attr`, or `None` for an attribute this
    /// header generation does not define.
    pub fn attribute(&self, attr: u32) -> Option<i32> {
        let (major, minor) = (self.cc.0 as i32, self.cc.1 as i32);
        let hopper = major >= 9;
        let cma = i32::from(major >= 6); // concurrent managed access: Pascal and later
        Some(match attr {
            1 => 1024,       // MAX_THREADS_PER_BLOCK
            2 | 3 => 1024,   // MAX_BLOCK_DIM_X/Y
            4 => 64,         // MAX_BLOCK_DIM_Z
            5 => i32::MAX,   // MAX_GRID_DIM_X
            6 | 7 => 65_535, // MAX_GRID_DIM_Y/Z
            8 => 49_152,     // MAX_SHARED_MEMORY_PER_BLOCK
            9 => 65_536,     // TOTAL_CONSTANT_MEMORY
            10 => 32,        // WARP_SIZE
            11 => i32::MAX,  // MAX_PITCH
            12 => 65_536,    // MAX_REGISTERS_PER_BLOCK
            13 => {
                if hopper {
                    1_755_000
                } else {
                    1_410_000
                }
            } // CLOCK_RATE (kHz)
            14 => 512,       // TEXTURE_ALIGNMENT
            15 => 1,         // GPU_OVERLAP
            16 => self.sm_count as i32, // MULTIPROCESSOR_COUNT
            17 => 0,         // KERNEL_EXEC_TIMEOUT
            18 => 0,         // INTEGRATED
            19 => 1,         // CAN_MAP_HOST_MEMORY
            20 => 0,         // COMPUTE_MODE: default
            // The sizes of CUDA arrays (crate::array checks them), as on the
            // 8.0/9.0 GPUs: 1-D, 2-D, 3-D, 2-D layered, 1-D layered, gather, 3-D
            // alternate, cubemap (layered), 2-D and 1-D mipmapped.
            21 | 22 => 131_072,
            23 => 65_536,
            24..=26 => 16_384,
            27 | 28 => 32_768,
            29 | 43 => 2_048,
            42 | 45 | 46 => 32_768,
            47 | 48 => 8_192,
            49 => 32_768,
            52 | 53 | 73 | 74 | 77 => 32_768,
            54 => 2_046,
            // Surfaces and linear textures (crate::texture), as on the 8.0/9.0 GPUs.
            30 => 512, // SURFACE_ALIGNMENT
            55 | 61 | 63 | 64 | 66 | 67 => 32_768,
            56 => 131_072,
            57 => 65_536,
            58..=60 => 16_384,
            62 | 65 => 2_048,
            68 => 2_046,
            69 => 1 << 28,           // TEXTURE1D_LINEAR_WIDTH
            70 => 131_072,           // TEXTURE2D_LINEAR_WIDTH
            71 => 65_000,            // TEXTURE2D_LINEAR_HEIGHT
            72 => 2_097_120,         // TEXTURE2D_LINEAR_PITCH
            31 => 1,                 // CONCURRENT_KERNELS
            32 => 0,                 // ECC_ENABLED
            33 => self.pci.1 as i32, // PCI_BUS_ID
            34 => self.pci.2 as i32, // PCI_DEVICE_ID
            35 => 0,                 // TCC_DRIVER
            36 => {
                if hopper {
                    2_619_000
                } else {
                    1_215_000
                }
            } // MEMORY_CLOCK_RATE (kHz)
            37 => 5120,              // GLOBAL_MEMORY_BUS_WIDTH
            38 => {
                if hopper {
                    50 << 20
                } else {
                    40 << 20
                }
            } // L2_CACHE_SIZE
            39 => self.threads_per_sm() as i32, // MAX_THREADS_PER_MULTIPROCESSOR
            40 => 2,                 // ASYNC_ENGINE_COUNT
            41 => 1,                 // UNIFIED_ADDRESSING
            44 => 0,                 // CAN_TEX2D_GATHER
            50 => self.pci.0 as i32, // PCI_DOMAIN_ID
            51 => 32,                // TEXTURE_PITCH_ALIGNMENT
            75 => major,             // COMPUTE_CAPABILITY_MAJOR
            76 => minor,             // COMPUTE_CAPABILITY_MINOR
            78 => 1,                 // STREAM_PRIORITIES_SUPPORTED
            79 | 80 => 1,            // GLOBAL/LOCAL_L1_CACHE_SUPPORTED
            81 => self.shared_per_sm() as i32, // MAX_SHARED_MEMORY_PER_MULTIPROCESSOR
            82 => 65_536,            // MAX_REGISTERS_PER_MULTIPROCESSOR
            83 => 1,                 // MANAGED_MEMORY
            84 | 85 => 0,            // MULTI_GPU_BOARD(_GROUP_ID)
            86 => 0,                 // HOST_NATIVE_ATOMIC_SUPPORTED
            87 => 2,                 // SINGLE_TO_DOUBLE_PRECISION_PERF_RATIO
            88 => 0,                 // PAGEABLE_MEMORY_ACCESS: host memory is not device memory
            89 => cma,               // CONCURRENT_MANAGED_ACCESS: compute capability 6.0 and later
            90 => 1,                 // COMPUTE_PREEMPTION_SUPPORTED
            91 => 1,                 // CAN_USE_HOST_POINTER_FOR_REGISTERED_MEM
            92..=94 => 0,            // stream memory operations (v1): not implemented
            95 => 1,                 // COOPERATIVE_LAUNCH (api/launch_ex.rs)
            96 => 0,                 // COOPERATIVE_MULTI_DEVICE_LAUNCH: not implemented
            97 => self.shared_per_block_optin() as i32, // MAX_SHARED_MEMORY_PER_BLOCK_OPTIN
            98 => 0,                 // CAN_FLUSH_REMOTE_WRITES
            99 => 1,                 // HOST_REGISTER_SUPPORTED
            100 => 0,                // PAGEABLE_MEMORY_ACCESS_USES_HOST_PAGE_TABLES
            101 => 1,                // DIRECT_MANAGED_MEM_ACCESS_FROM_HOST: one address space
            102 | 103 => i32::from(cfg!(target_os = "linux")), // VMM, POSIX fd handles (crate::vmm)
            104 | 105 => 0,          // Win32 handle types
            106 => self.blocks_per_sm() as i32, // MAX_BLOCKS_PER_MULTIPROCESSOR
            107 => 0,                // GENERIC_COMPRESSION_SUPPORTED
            108 => {
                if hopper {
                    0x1F0_0000
                } else {
                    0x1E0_0000
                }
            } // MAX_PERSISTING_L2_CACHE_SIZE
            109 => 134_213_632,      // MAX_ACCESS_POLICY_WINDOW_SIZE
            110 => 0,                // GPU_DIRECT_RDMA_WITH_CUDA_VMM_SUPPORTED
            111 => 1024,             // RESERVED_SHARED_MEMORY_PER_BLOCK
            112 | 113 => 0,          // sparse arrays, read-only host register
            114 => i32::from(cfg!(target_os = "linux")), // timeline semaphores (crate::external)
            115 => 1,                // MEMORY_POOLS_SUPPORTED
            116..=118 => 0,          // GPUDirect RDMA
            119 => i32::from(cfg!(target_os = "linux")), // MEMPOOL_SUPPORTED_HANDLE_TYPES: POSIX fd (crate::ipc::pool)
            120 => i32::from(hopper), // CLUSTER_LAUNCH: on compute capability 9.0+
            121 => 0,                 // DEFERRED_MAPPING_CUDA_ARRAY_SUPPORTED
            122 | 123 => 0,           // 64-bit stream mem ops, wait value NOR
            124 => 0,                 // DMA_BUF
            125 => i32::from(cfg!(target_os = "linux")), // IPC_EVENT (crate::ipc)
            126 => {
                if hopper {
                    4
                } else {
                    1
                }
            } // MEM_SYNC_DOMAIN_COUNT
            127 => 0, // TENSOR_MAP_ACCESS_SUPPORTED: maps encode, TMA instructions do not run
            128 | 129 => 0, // fabric handles, unified function pointers
            130 => 0, // NUMA_CONFIG: none
            131 => -1, // NUMA_ID
            132 | 133 => 0, // MULTICAST_SUPPORTED, MPS_ENABLED
            134 => -1, // HOST_NUMA_ID
            135 => 0, // D3D12_CIG_SUPPORTED
            136 | 137 => 0, // decompression
            138 => 0, // VULKAN_CIG_SUPPORTED
            139 | 140 => 0, // GPU_PCI_DEVICE_ID, GPU_PCI_SUBSYSTEM_ID
            141..=143 => 0, // host NUMA features
            _ => return None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_defined_attribute_has_a_value_and_others_none() {
        let p = Profile::new(0, 9, 0, 1024);
        for a in 1..0x90 {
            assert!(p.attribute(a).is_some(), "attribute {a}");
        }
        assert_eq!(p.attribute(0), None);
        assert_eq!(p.attribute(0x90), None);
        assert_eq!(p.attribute(75), Some(9));
        assert_eq!(p.attribute(16), Some(132));
    }

    #[test]
    fn device_lists_parse() {
        let l = Profile::parse_list("9.0:100, 8.6:50").unwrap();
        assert_eq!(l.len(), 2);
        assert_eq!(l[1].cc, (8, 6));
        assert_eq!(l[1].total_mem, 50 << 20);
        assert_eq!(Profile::parse_list("9:1"), None);
    }
}

//! Function attributes and occupancy: [`Function::attribute`], the shared-memory and
//! cache settings of a kernel, and the occupancy calculator's questions (resident
//! blocks, available dynamic shared memory, a suggested block size).

use super::Function;
use crate::error::{CudaError, check};
use crate::signature::{LaunchKind, Signature};
use crate::sys::{CUfunc_cache, CUfunction_attribute, CUresult};

impl<S: Signature, K: LaunchKind> Function<'_, S, K> {
    /// A function attribute (registers, static shared memory, max threads, ...).
    pub fn attribute(&self, attr: CUfunction_attribute) -> Result<i32, CudaError> {
        let mut v = 0;
        // SAFETY: a valid out-pointer.
        check(unsafe { self.driver.table().cuFuncGetAttribute()?(&mut v, attr, self.raw) })?;
        Ok(v)
    }

    /// Lets launches use up to `bytes` of dynamic shared memory (beyond the 48 KiB
    /// default, up to the device's opt-in limit).
    pub fn set_max_dynamic_shared_memory(&mut self, bytes: u32) -> Result<(), CudaError> {
        let v = i32::try_from(bytes)
            .map_err(|_| CudaError::Driver(CUresult::CUDA_ERROR_INVALID_VALUE))?;
        let attr = CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES;
        // SAFETY: plain values.
        check(unsafe { self.driver.table().cuFuncSetAttribute()?(self.raw, attr, v) })
    }

    /// Prefers more shared memory or more L1 cache for this kernel (a hint).
    pub fn set_cache_config(&mut self, config: CUfunc_cache) -> Result<(), CudaError> {
        // SAFETY: plain values.
        check(unsafe { self.driver.table().cuFuncSetCacheConfig()?(self.raw, config) })
    }

    /// The dynamic shared memory each block can have when `blocks_per_sm` blocks of
    /// `block` threads are resident on one multiprocessor.
    pub fn available_dynamic_shared_memory(
        &self,
        blocks_per_sm: u32,
        block: u32,
    ) -> Result<usize, CudaError> {
        let int = |v: u32| {
            i32::try_from(v).map_err(|_| CudaError::Driver(CUresult::CUDA_ERROR_INVALID_VALUE))
        };
        let mut bytes = 0usize;
        // SAFETY: a valid out-pointer.
        check(unsafe {
            self.driver
                .table()
                .cuOccupancyAvailableDynamicSMemPerBlock()?(
                &mut bytes,
                self.raw,
                int(blocks_per_sm)?,
                int(block)?,
            )
        })?;
        Ok(bytes)
    }

    /// Resident blocks per multiprocessor for `block` threads and `dynamic_shared`
    /// bytes of dynamic shared memory.
    pub fn max_active_blocks_per_multiprocessor(
        &self,
        block: u32,
        dynamic_shared: usize,
    ) -> Result<u32, CudaError> {
        let mut n = 0;
        let b = i32::try_from(block)
            .map_err(|_| CudaError::Driver(CUresult::CUDA_ERROR_INVALID_VALUE))?;
        // SAFETY: a valid out-pointer.
        check(unsafe {
            self.driver
                .table()
                .cuOccupancyMaxActiveBlocksPerMultiprocessor()?(
                &mut n, self.raw, b, dynamic_shared
            )
        })?;
        Ok(n.max(0) as u32)
    }

    /// The block size (a multiple of 32) that keeps the most threads resident, when a
    /// block of `b` threads needs `dynamic_shared(b)` bytes of dynamic shared memory;
    /// and the smallest grid that fills `multiprocessors` SMs with it. Ties go to the
    /// larger block. `(0, 0)` if no block size fits.
    pub fn suggested_block_size(
        &self,
        multiprocessors: u32,
        dynamic_shared: impl Fn(u32) -> usize,
    ) -> Result<(u32, u32), CudaError> {
        let max = self
            .attribute(CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK)?
            .max(0) as u32;
        let (mut best, mut best_threads, mut best_blocks) = (0, 0, 0);
        let mut block = max - max % 32;
        while block >= 32 {
            let blocks = self.max_active_blocks_per_multiprocessor(block, dynamic_shared(block))?;
            let threads = blocks.saturating_mul(block);
            if threads > best_threads {
                (best, best_threads, best_blocks) = (block, threads, blocks);
            }
            block -= 32;
        }
        Ok((best, best_blocks.saturating_mul(multiprocessors)))
    }
}

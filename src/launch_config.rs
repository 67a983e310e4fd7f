//! Extended kernel launch (`cuLaunchKernelEx`): a [`LaunchConfig`] builder with typed
//! launch attributes — thread-block clusters, cooperative (grid-synchronising)
//! launch, priority, programmatic stream serialization, memory-synchronization
//! domain — and the cluster occupancy questions.
//!
//! Every attribute set on a [`LaunchConfig`] reaches the driver: the attribute array
//! is built on the stack from every field that is set, nothing is dropped, and the
//! launch allocates nothing. Before the driver is called, [`Function::launch_with`]
//! checks the rules the driver documents and returns a typed error naming the rule
//! ([`CudaError::InvalidLaunch`], [`CudaError::CooperativeGridTooLarge`]):
//!
//! - always, without asking the driver: each grid dimension at least 1, x at most
//!   2³¹ − 1 and y, z at most 65535; each block dimension at least 1, x and y at
//!   most 1024, z at most 64, and at most 1024 threads in all (the limits of every
//!   CUDA device); arithmetic on dimensions is wide, so no input overflows;
//! - once an attribute that needs the device is set (cluster, cooperative,
//!   programmatic serialization, domain map): the block within the function's
//!   `MAX_THREADS_PER_BLOCK` and the dynamic shared memory within its
//!   `MAX_DYNAMIC_SHARED_SIZE_BYTES`, and the function's compiled-in cluster shape
//!   (`REQUIRED_CLUSTER_WIDTH/HEIGHT/DEPTH`, from `__cluster_dims__` or
//!   `.reqnctapercluster`), which a cluster attribute must equal and which is
//!   checked as one is;
//! - a cluster needs compute capability 9.0 or newer (of the current context's
//!   device, which is the function's: a [`Function`] borrows its module, which
//!   borrows the [`CurrentContext`](crate::CurrentContext) token), each cluster
//!   dimension must be non-zero and divide the grid's, and a cluster holds at most 8
//!   blocks, or 16 once [`Function::set_non_portable_cluster_size_allowed`] allows it;
//! - a cooperative launch needs a device with `COOPERATIVE_LAUNCH`, and a grid that
//!   is co-resident: no more blocks than the occupancy calculator's resident blocks
//!   per multiprocessor times the multiprocessors; a function declared cooperative
//!   ([`Cooperative`](crate::launch::Cooperative), from
//!   [`Module::cooperative_function`](crate::module::Module::cooperative_function))
//!   launches only with a configuration that sets
//!   [`cooperative`](LaunchConfig::cooperative) — checked before anything else but
//!   the shape, without asking the driver;
//! - programmatic stream serialization needs compute capability 9.0;
//! - a memory-synchronization domain map names domains the device has.
//!
//! Arguments are checked by the compiler as for [`Function::launch`] (`Args<S>`), so
//! an extended launch is exactly as sound: the attributes carry no pointers (the
//! access-policy window and the programmatic and completion events, which would,
//! are not offered here). Checks that need the driver (occupancy, the device's
//! compute capability) are made only when the attribute that needs them is set, so
//! a configuration without attributes costs the `cuLaunchKernelEx` call alone (a
//! compiled-in cluster shape of such a launch is then checked by the driver, which
//! refuses a wrong one with its own error); and [`Function::launch`] is unchanged.
//!
//! ```no_run
//! # use oxicuda_driver::{launch::{In, Out}, launch_config::LaunchConfig, module::Function, stream::Stream};
//! # fn f(k: &Function<'_, (In<u32>, Out<u32>)>, s: &Stream<'_>,
//! #      a: &oxicuda_driver::memory::DeviceBuffer<'_, u32>,
//! #      b: &mut oxicuda_driver::memory::DeviceBuffer<'_, u32>) -> Result<(), oxicuda_driver::CudaError> {
//! let cfg = LaunchConfig::new(8, 128).cluster(4).priority(-1);
//! k.launch_with(s, &cfg, (a, b))?;
//! # Ok(()) }
//! ```

use crate::error::{CudaError, check};
use crate::launch::{Args, Bounded, Dim3, LaunchKind, Signature, with_params};
use crate::module::Function;
use crate::stream::Stream;
use crate::sys::{
    CUclusterSchedulingPolicy, CUdevice, CUdevice_attribute, CUfunction_attribute,
    CUlaunchAttribute, CUlaunchAttributeID, CUlaunchAttributeValue, CUlaunchConfig,
    CUlaunchMemSyncDomain, CUlaunchMemSyncDomainMap,
};

/// The most blocks in a cluster that every cluster-capable device supports.
pub const PORTABLE_CLUSTER_SIZE: u32 = 8;
/// The most blocks in a cluster once a function allows non-portable sizes (9.0).
pub const NON_PORTABLE_CLUSTER_SIZE: u32 = 16;
/// The most attributes a [`LaunchConfig`] can set: one per optional field. The
/// array literal in `LaunchConfig::attributes`, built from an exhaustive
/// destructuring of the config, must have exactly this many entries, so a new field
/// cannot be forgotten and no attribute can be dropped.
const MAX_ATTRIBUTES: usize = 7;
/// The largest grid of every CUDA device (`MAX_GRID_DIM_X/Y/Z`).
const MAX_GRID: Dim3 = Dim3(i32::MAX as u32, 65535, 65535);
/// The largest block of every CUDA device (`MAX_BLOCK_DIM_X/Y/Z`).
const MAX_BLOCK: Dim3 = Dim3(1024, 1024, 64);
/// The most threads in a block (`MAX_THREADS_PER_BLOCK`).
const MAX_THREADS: u64 = 1024;

/// The memory-synchronization domain of a launch (`CU_LAUNCH_MEM_SYNC_DOMAIN_*`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MemSyncDomain {
    /// The default domain.
    Default,
    /// The remote domain (for kernels communicating with other devices).
    Remote,
}

/// How the blocks of clusters are spread over the GPU
/// (`CU_CLUSTER_SCHEDULING_POLICY_*`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClusterScheduling {
    /// The driver's choice.
    Default,
    /// Spread the blocks of a cluster over the SMs.
    Spread,
    /// Balance the load (may place blocks of a cluster together).
    LoadBalancing,
}

/// A kernel launch's configuration: grid, block, dynamic shared memory and the
/// launch attributes. Built with [`LaunchConfig::new`] and the setters; every
/// attribute set reaches the driver ([`Function::launch_with`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LaunchConfig {
    grid: Dim3,
    block: Dim3,
    shared: u32,
    cluster: Option<Dim3>,
    cooperative: bool,
    priority: Option<i32>,
    programmatic_serialization: Option<bool>,
    mem_sync_domain: Option<MemSyncDomain>,
    mem_sync_domain_map: Option<(u8, u8)>,
    cluster_scheduling: Option<ClusterScheduling>,
}

impl LaunchConfig {
    /// `grid` blocks of `block` threads, no dynamic shared memory, no attributes.
    pub fn new(grid: impl Into<Dim3>, block: impl Into<Dim3>) -> LaunchConfig {
        LaunchConfig {
            grid: grid.into(),
            block: block.into(),
            shared: 0,
            cluster: None,
            cooperative: false,
            priority: None,
            programmatic_serialization: None,
            mem_sync_domain: None,
            mem_sync_domain_map: None,
            cluster_scheduling: None,
        }
    }

    /// Bytes of dynamic shared memory per block.
    pub fn shared(mut self, bytes: u32) -> Self {
        self.shared = bytes;
        self
    }

    /// Thread-block clusters of `dims` blocks (`CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION`):
    /// compute capability 9.0 or newer; each dimension divides the grid's.
    pub fn cluster(mut self, dims: impl Into<Dim3>) -> Self {
        self.cluster = Some(dims.into());
        self
    }

    /// A cooperative launch (`CU_LAUNCH_ATTRIBUTE_COOPERATIVE`): every block is
    /// resident at once, so the grid can synchronise (`this_grid().sync()`).
    pub fn cooperative(mut self, cooperative: bool) -> Self {
        self.cooperative = cooperative;
        self
    }

    /// The launch's priority (`CU_LAUNCH_ATTRIBUTE_PRIORITY`; the driver clamps it to
    /// the context's stream-priority range, lower is higher priority).
    pub fn priority(mut self, priority: i32) -> Self {
        self.priority = Some(priority);
        self
    }

    /// Whether the next kernel in the stream may start before this one ends
    /// (`CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION`, compute capability
    /// 9.0).
    pub fn programmatic_serialization(mut self, allowed: bool) -> Self {
        self.programmatic_serialization = Some(allowed);
        self
    }

    /// The memory-synchronization domain (`CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN`).
    pub fn mem_sync_domain(mut self, domain: MemSyncDomain) -> Self {
        self.mem_sync_domain = Some(domain);
        self
    }

    /// The domain ids the default and remote domains map to
    /// (`CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN_MAP`); each below the device's
    /// `MEM_SYNC_DOMAIN_COUNT`.
    pub fn mem_sync_domain_map(mut self, default: u8, remote: u8) -> Self {
        self.mem_sync_domain_map = Some((default, remote));
        self
    }

    /// The cluster scheduling policy
    /// (`CU_LAUNCH_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE`).
    pub fn cluster_scheduling(mut self, policy: ClusterScheduling) -> Self {
        self.cluster_scheduling = Some(policy);
        self
    }

    /// The grid, in blocks.
    pub fn grid(&self) -> Dim3 {
        self.grid
    }

    /// The block, in threads.
    pub fn block(&self) -> Dim3 {
        self.block
    }

    /// Dynamic shared memory per block.
    pub fn shared_bytes(&self) -> u32 {
        self.shared
    }

    /// The cluster shape, if set.
    pub fn cluster_dims(&self) -> Option<Dim3> {
        self.cluster
    }

    /// Whether the launch is cooperative.
    pub fn is_cooperative(&self) -> bool {
        self.cooperative
    }

    /// The attributes, on the stack: `(array, count)`. One entry per optional field
    /// (the destructuring names every field, the array literal has
    /// `MAX_ATTRIBUTES` entries: both are checked by the compiler), compacted in
    /// order; the count is at most `MAX_ATTRIBUTES`, so nothing is dropped.
    fn attributes(&self) -> ([CUlaunchAttribute; MAX_ATTRIBUTES], usize) {
        let LaunchConfig {
            grid: _,
            block: _,
            shared: _,
            cluster,
            cooperative,
            priority,
            programmatic_serialization,
            mem_sync_domain,
            mem_sync_domain_map,
            cluster_scheduling,
        } = *self;
        let attr = |id: CUlaunchAttributeID, set: &dyn Fn(&mut CUlaunchAttributeValue)| {
            let mut value = CUlaunchAttributeValue { pad: [0; 64] };
            set(&mut value);
            CUlaunchAttribute {
                id,
                pad: [0; 4],
                value,
            }
        };
        use CUlaunchAttributeID as Id;
        let all: [Option<CUlaunchAttribute>; MAX_ATTRIBUTES] = [
            cluster.map(|c| {
                attr(Id::CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION, &|v| {
                    v.clusterDim.x = c.0;
                    v.clusterDim.y = c.1;
                    v.clusterDim.z = c.2;
                })
            }),
            cooperative.then(|| {
                attr(Id::CU_LAUNCH_ATTRIBUTE_COOPERATIVE, &|v| v.cooperative = 1)
            }),
            priority.map(|p| attr(Id::CU_LAUNCH_ATTRIBUTE_PRIORITY, &|v| v.priority = p)),
            programmatic_serialization.map(|a| {
                attr(
                    Id::CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION,
                    &|v| v.programmaticStreamSerializationAllowed = i32::from(a),
                )
            }),
            mem_sync_domain.map(|d| {
                attr(Id::CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN, &|v| {
                    v.memSyncDomain = match d {
                        MemSyncDomain::Default => {
                            CUlaunchMemSyncDomain::CU_LAUNCH_MEM_SYNC_DOMAIN_DEFAULT
                        }
                        MemSyncDomain::Remote => {
                            CUlaunchMemSyncDomain::CU_LAUNCH_MEM_SYNC_DOMAIN_REMOTE
                        }
                    }
                })
            }),
            mem_sync_domain_map.map(|(d, r)| {
                attr(Id::CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN_MAP, &|v| {
                    v.memSyncDomainMap = CUlaunchMemSyncDomainMap {
                        default_: d,
                        remote: r,
                    }
                })
            }),
            cluster_scheduling.map(|p| {
                attr(
                    Id::CU_LAUNCH_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE,
                    &|v| {
                        v.clusterSchedulingPolicyPreference = match p {
                            ClusterScheduling::Default => {
                                CUclusterSchedulingPolicy::CU_CLUSTER_SCHEDULING_POLICY_DEFAULT
                            }
                            ClusterScheduling::Spread => {
                                CUclusterSchedulingPolicy::CU_CLUSTER_SCHEDULING_POLICY_SPREAD
                            }
                            ClusterScheduling::LoadBalancing => {
                                CUclusterSchedulingPolicy::CU_CLUSTER_SCHEDULING_POLICY_LOAD_BALANCING
                            }
                        }
                    },
                )
            }),
        ];
        let blank = CUlaunchAttribute {
            id: Id::CU_LAUNCH_ATTRIBUTE_IGNORE,
            pad: [0; 4],
            value: CUlaunchAttributeValue { pad: [0; 64] },
        };
        let mut out = [blank; MAX_ATTRIBUTES];
        let mut n = 0;
        // `out` and `all` have the same length, and `flatten` yields at most as many
        // items as `all` has: every set attribute gets a slot.
        for (slot, a) in out.iter_mut().zip(all.into_iter().flatten()) {
            *slot = a;
            n += 1;
        }
        (out, n)
    }

    /// The raw configuration over `attrs` (which must outlive its use).
    fn raw(&self, stream: crate::sys::CUstream, attrs: &mut [CUlaunchAttribute]) -> CUlaunchConfig {
        CUlaunchConfig {
            gridDimX: self.grid.0,
            gridDimY: self.grid.1,
            gridDimZ: self.grid.2,
            blockDimX: self.block.0,
            blockDimY: self.block.1,
            blockDimZ: self.block.2,
            sharedMemBytes: self.shared,
            hStream: stream,
            attrs: attrs.as_mut_ptr(),
            numAttrs: attrs.len() as u32,
        }
    }
}

fn invalid(parameter: &'static str, rule: String) -> CudaError {
    CudaError::InvalidLaunch { parameter, rule }
}

/// The blocks (or threads) of `d`, saturating: no input overflows.
fn blocks(d: Dim3) -> u64 {
    u64::from(d.0)
        .saturating_mul(u64::from(d.1))
        .saturating_mul(u64::from(d.2))
}

fn any_zero(d: Dim3) -> bool {
    d.0 == 0 || d.1 == 0 || d.2 == 0
}

fn exceeds(d: Dim3, max: Dim3) -> bool {
    d.0 > max.0 || d.1 > max.1 || d.2 > max.2
}

/// The block against the limits of every device (no driver call).
fn check_block(b: Dim3) -> Result<(), CudaError> {
    if any_zero(b) {
        return Err(invalid(
            "block",
            format!("every dimension must be at least 1 (block {b:?})"),
        ));
    }
    if exceeds(b, MAX_BLOCK) || blocks(b) > MAX_THREADS {
        return Err(invalid(
            "block",
            format!(
                "a block is at most {MAX_BLOCK:?} and {MAX_THREADS} threads (block {b:?} has {})",
                blocks(b)
            ),
        ));
    }
    Ok(())
}

/// The grid and the block against the limits of every device (no driver call).
fn check_shape(g: Dim3, b: Dim3) -> Result<(), CudaError> {
    if any_zero(g) {
        return Err(invalid(
            "grid",
            format!("every dimension must be at least 1 (grid {g:?})"),
        ));
    }
    if exceeds(g, MAX_GRID) {
        return Err(invalid(
            "grid",
            format!("a grid is at most {MAX_GRID:?} (grid {g:?})"),
        ));
    }
    check_block(b)
}

impl<S: Signature, K: LaunchKind> Function<'_, S, K> {
    /// The current context's device (the function's: see the module docs).
    fn device_raw(&self) -> Result<CUdevice, CudaError> {
        let mut dev: CUdevice = 0;
        // SAFETY: a valid out-pointer.
        check(unsafe { self.driver.table().cuCtxGetDevice_v2000()?(&mut dev) })?;
        Ok(dev)
    }

    fn device_attribute(&self, dev: CUdevice, attr: CUdevice_attribute) -> Result<i32, CudaError> {
        let mut v = 0;
        // SAFETY: a valid out-pointer.
        check(unsafe { self.driver.table().cuDeviceGetAttribute()?(&mut v, attr, dev) })?;
        Ok(v)
    }

    /// The SMs the current context (the function's: no other can be pushed while
    /// the function is usable, CF3) runs on: a green context's partition
    /// (`cuCtxGetDevResource`), or the device's count on drivers before CUDA 12.4
    /// (and drivers that refuse the query with a code that is not sticky).
    fn multiprocessors(&self, dev: CUdevice) -> Result<u32, CudaError> {
        if let Ok(get) = self.driver.table().cuCtxGetDevResource() {
            let ctx = crate::context::current(self.driver)?;
            let mut res = crate::sys::CUdevResource::default();
            // SAFETY: the current context is live; a valid out-pointer.
            let r = unsafe {
                get(
                    ctx,
                    &mut res,
                    crate::sys::CUdevResourceType::CU_DEV_RESOURCE_TYPE_SM,
                )
            };
            if r == crate::sys::CUresult::CUDA_SUCCESS {
                // SAFETY: an SM resource the driver filled; any bits are a valid `c_uint`.
                return Ok(unsafe { res.anon_0.sm.smCount });
            }
            // A sticky code is the context's end; any other (not supported, not
            // permitted under MPS, ...) falls back to the device's count: a driver that
            // cannot answer has made no green context.
            if r.is_sticky() {
                check(r)?;
            }
        }
        let sms = self.device_attribute(
            dev,
            CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT,
        )?;
        Ok(sms.max(0) as u32)
    }

    /// Lets launches of this function use clusters of up to 16 blocks instead of 8
    /// (`CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED`; compute capability 9.0).
    pub fn set_non_portable_cluster_size_allowed(
        &mut self,
        allowed: bool,
    ) -> Result<(), CudaError> {
        let attr = CUfunction_attribute::CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED;
        // SAFETY: plain values.
        check(unsafe {
            self.driver.table().cuFuncSetAttribute()?(self.raw, attr, i32::from(allowed))
        })
    }

    /// The largest cluster this function may be launched with: 16 if it allows
    /// non-portable sizes, else 8.
    pub fn max_cluster_size(&self) -> Result<u32, CudaError> {
        let v = self
            .attribute(CUfunction_attribute::CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED)?;
        Ok(if v != 0 {
            NON_PORTABLE_CLUSTER_SIZE
        } else {
            PORTABLE_CLUSTER_SIZE
        })
    }

    /// The function's compiled-in cluster shape (`REQUIRED_CLUSTER_WIDTH/HEIGHT/
    /// DEPTH`; dimensions left at 0 count as 1), if it has one.
    fn required_cluster(&self) -> Result<Option<Dim3>, CudaError> {
        use CUfunction_attribute as F;
        let d = [
            F::CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH,
            F::CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_HEIGHT,
            F::CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_DEPTH,
        ]
        .map(|a| self.attribute(a).map(|v| u32::try_from(v).unwrap_or(0)));
        let [x, y, z] = d;
        let (x, y, z) = (x?, y?, z?);
        Ok((x, y, z)
            .ne(&(0, 0, 0))
            .then(|| Dim3(x.max(1), y.max(1), z.max(1))))
    }

    /// The block within the function's `MAX_THREADS_PER_BLOCK` and the dynamic
    /// shared memory within its `MAX_DYNAMIC_SHARED_SIZE_BYTES`.
    fn check_function_limits(&self, config: &LaunchConfig) -> Result<(), CudaError> {
        let b = config.block;
        let max = self.attribute(CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK)?;
        if blocks(b) > u64::try_from(max).unwrap_or(0) {
            return Err(invalid(
                "block",
                format!(
                    "the function allows at most {max} threads per block (block {b:?} has {})",
                    blocks(b)
                ),
            ));
        }
        let max =
            self.attribute(CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES)?;
        if u64::from(config.shared) > u64::try_from(max).unwrap_or(0) {
            return Err(invalid(
                "shared",
                format!(
                    "the function may use at most {max} bytes of dynamic shared memory ({} asked)",
                    config.shared
                ),
            ));
        }
        Ok(())
    }

    /// Checks `config` against the driver's rules (module docs), asking the driver
    /// only what the attributes set need.
    pub fn validate_launch(&self, config: &LaunchConfig) -> Result<(), CudaError> {
        let (g, b) = (config.grid, config.block);
        check_shape(g, b)?;
        if K::COOPERATIVE && !config.cooperative {
            return Err(invalid(
                "cooperative",
                "a kernel declared cooperative (`Module::cooperative_function`) launches only cooperatively: set `LaunchConfig::cooperative(true)`".into(),
            ));
        }
        let needs_device = config.cluster.is_some()
            || config.cooperative
            || config.programmatic_serialization.is_some()
            || config.mem_sync_domain_map.is_some();
        if !needs_device {
            return Ok(());
        }
        let dev = self.device_raw()?;
        let major = self.device_attribute(
            dev,
            CUdevice_attribute::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR,
        )?;
        let minor = self.device_attribute(
            dev,
            CUdevice_attribute::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR,
        )?;
        self.check_function_limits(config)?;
        let required = self.required_cluster()?;
        if let (Some(c), Some(r)) = (config.cluster, required)
            && c != r
        {
            return Err(invalid(
                "cluster",
                format!(
                    "the function's compiled-in cluster shape is {r:?}; the launch asks for {c:?}"
                ),
            ));
        }
        if let Some(c) = config.cluster.or(required) {
            if major < 9 {
                return Err(invalid(
                    "cluster",
                    format!(
                        "thread-block clusters need compute capability 9.0 or newer; the device has {major}.{minor}"
                    ),
                ));
            }
            if any_zero(c) {
                return Err(invalid(
                    "cluster",
                    format!("every dimension must be at least 1 (cluster {c:?})"),
                ));
            }
            if g.0 % c.0 != 0 || g.1 % c.1 != 0 || g.2 % c.2 != 0 {
                return Err(invalid(
                    "cluster",
                    format!(
                        "each cluster dimension must divide the grid's (cluster {c:?}, grid {g:?})"
                    ),
                ));
            }
            let max = self.max_cluster_size()?;
            if blocks(c) > u64::from(max) {
                return Err(invalid(
                    "cluster",
                    format!(
                        "a cluster holds at most {max} blocks{} (cluster {c:?} has {})",
                        if max == PORTABLE_CLUSTER_SIZE {
                            " unless the function allows non-portable sizes"
                        } else {
                            ""
                        },
                        blocks(c)
                    ),
                ));
            }
        }
        if config.programmatic_serialization.is_some() && major < 9 {
            return Err(invalid(
                "programmatic_serialization",
                format!(
                    "programmatic stream serialization needs compute capability 9.0 or newer; the device has {major}.{minor}"
                ),
            ));
        }
        if let Some((d, r)) = config.mem_sync_domain_map {
            let count = self.device_attribute(
                dev,
                CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MEM_SYNC_DOMAIN_COUNT,
            )?;
            if i32::from(d.max(r)) >= count {
                return Err(invalid(
                    "mem_sync_domain_map",
                    format!("domains must be below the device's {count} (map {d}, {r})"),
                ));
            }
        }
        if config.cooperative {
            let ok = self.device_attribute(
                dev,
                CUdevice_attribute::CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH,
            )?;
            if ok == 0 {
                return Err(invalid(
                    "cooperative",
                    "the device does not support cooperative launch".into(),
                ));
            }
            // At most 1024 (`check_shape`).
            let threads = blocks(b) as u32;
            let per_sm =
                self.max_active_blocks_per_multiprocessor(threads, config.shared as usize)?;
            let sms = self.multiprocessors(dev)?;
            let max = u64::from(per_sm) * u64::from(sms);
            if blocks(g) > max {
                return Err(CudaError::CooperativeGridTooLarge {
                    blocks: blocks(g),
                    max,
                });
            }
        }
        Ok(())
    }

    /// Launches the kernel on `stream` with `config` (grid, block, shared memory and
    /// every attribute set) through `cuLaunchKernelEx`, after
    /// [`validate_launch`](Self::validate_launch). `args` are checked by the compiler
    /// against `S`, as for [`launch`](Function::launch). A function declared
    /// [`Cooperative`](crate::launch::Cooperative) needs a configuration that sets
    /// [`LaunchConfig::cooperative`] ([`CudaError::InvalidLaunch`] otherwise).
    ///
    /// A signature with raw pointer parameters launches here only when one
    /// [`Len`](crate::launch::Len) bounds them, checked as for
    /// [`launch`](Function::launch); else through
    /// [`launch_with_unchecked`](Self::launch_with_unchecked).
    pub fn launch_with(
        &self,
        stream: &Stream<'_>,
        config: &LaunchConfig,
        args: impl Args<S>,
    ) -> Result<(), CudaError>
    where
        S: Bounded,
    {
        crate::launch::check_bounds::<S, _>(
            &args,
            crate::launch::launch_threads(config.grid, config.block),
        )?;
        self.launch_with_raw(stream, config, args)
    }

    /// [`launch_with`](Self::launch_with) for every signature, raw pointers without a
    /// [`Len`](crate::launch::Len) included; no length is checked.
    ///
    /// # Safety
    /// As for [`Function::launch_unchecked`]: for this launch the kernel stays inside
    /// the view passed for each raw pointer argument.
    pub unsafe fn launch_with_unchecked(
        &self,
        stream: &Stream<'_>,
        config: &LaunchConfig,
        args: impl Args<S>,
    ) -> Result<(), CudaError> {
        self.launch_with_raw(stream, config, args)
    }

    /// The configured launch, once the bound (if any) is checked or promised.
    #[inline(always)]
    fn launch_with_raw(
        &self,
        stream: &Stream<'_>,
        config: &LaunchConfig,
        args: impl Args<S>,
    ) -> Result<(), CudaError> {
        self.validate_launch(config)?;
        crate::launch::check_and_mark::<S, _>(&args, stream)?;
        let launch = self.driver.table().cuLaunchKernelEx()?;
        let (mut attrs, n) = config.attributes();
        let attrs = attrs.get_mut(..n).unwrap_or_default();
        let raw = config.raw(stream.raw(), attrs);
        with_params::<S, _, _>(args, |params| {
            let mut call = move || {
                // SAFETY: `params` holds one pointer per declared parameter, each to a
                // value of its declared size (the signature was checked at lookup); `raw`
                // points to `attrs`, alive on this frame, with `numAttrs` initialised
                // attributes carrying no pointers; function and stream belong to the
                // current context.
                let r =
                    unsafe { launch(&raw, self.raw, params.as_mut_ptr(), core::ptr::null_mut()) };
                if r == crate::sys::CUresult::CUDA_SUCCESS {
                    Ok(())
                } else {
                    let (g, b, shared) = (config.grid, config.block, config.shared);
                    let (d, f) = (self.driver, self.raw);
                    let e =
                        crate::launch::launch_failed(d, f, g.0, g.1, g.2, b.0, b.1, b.2, shared, r);
                    Err(e)
                }
            };
            if crate::trace::may_trace() {
                let (g, b) = (config.grid, config.block);
                let l = crate::trace::Launch {
                    driver: self.driver,
                    function: self.raw,
                    api: "cuLaunchKernelEx",
                    grid: (g.0, g.1, g.2),
                    block: (b.0, b.1, b.2),
                    shared_bytes: config.shared,
                    stream: stream.raw(),
                    cooperative: config.cooperative,
                };
                return crate::trace::traced(&l, call);
            }
            call()
        })
    }

    /// A cooperative launch of `grid × block` threads: [`launch_with`](Self::launch_with)
    /// with [`LaunchConfig::cooperative`]. The launch of a function declared
    /// [`Cooperative`](crate::launch::Cooperative); a [`Plain`](crate::launch::Plain)
    /// one may be launched so too.
    pub fn launch_cooperative(
        &self,
        stream: &Stream<'_>,
        grid: impl Into<Dim3>,
        block: impl Into<Dim3>,
        shared_bytes: u32,
        args: impl Args<S>,
    ) -> Result<(), CudaError>
    where
        S: Bounded,
    {
        let cfg = LaunchConfig::new(grid, block)
            .shared(shared_bytes)
            .cooperative(true);
        self.launch_with(stream, &cfg, args)
    }

    /// [`launch_cooperative`](Self::launch_cooperative) for every signature, raw
    /// pointers without a [`Len`](crate::launch::Len) included; no length is checked.
    ///
    /// # Safety
    /// As for [`Function::launch_unchecked`]: for this launch the kernel stays inside
    /// the view passed for each raw pointer argument.
    pub unsafe fn launch_cooperative_unchecked(
        &self,
        stream: &Stream<'_>,
        grid: impl Into<Dim3>,
        block: impl Into<Dim3>,
        shared_bytes: u32,
        args: impl Args<S>,
    ) -> Result<(), CudaError> {
        let cfg = LaunchConfig::new(grid, block)
            .shared(shared_bytes)
            .cooperative(true);
        self.launch_with_raw(stream, &cfg, args)
    }

    /// How many clusters of `config`'s cluster shape (and block, shared memory) can
    /// be resident at once (`cuOccupancyMaxActiveClusters`).
    ///
    /// Without a cluster shape in `config`, the function's compiled-in one
    /// (`REQUIRED_CLUSTER_*`) is used; without either, an error. The block is
    /// checked first (module docs).
    pub fn max_active_clusters(&self, config: &LaunchConfig) -> Result<u32, CudaError> {
        check_block(config.block)?;
        if config.cluster.is_none() && self.required_cluster()?.is_none() {
            return Err(invalid(
                "cluster",
                "the configuration sets no cluster shape and the function has no compiled-in one"
                    .into(),
            ));
        }
        self.cluster_occupancy(config, self.driver.table().cuOccupancyMaxActiveClusters()?)
    }

    /// The largest cluster (in blocks) with which `config`'s block and shared memory
    /// can be resident (`cuOccupancyMaxPotentialClusterSize`). The block is checked
    /// first (module docs).
    pub fn max_potential_cluster_size(&self, config: &LaunchConfig) -> Result<u32, CudaError> {
        check_block(config.block)?;
        self.cluster_occupancy(
            config,
            self.driver.table().cuOccupancyMaxPotentialClusterSize()?,
        )
    }

    /// What `query` (one of the `cuOccupancy*Cluster*` functions, which share a
    /// signature) answers for this function under `config`.
    fn cluster_occupancy(
        &self,
        config: &LaunchConfig,
        query: crate::table::pfn::cuOccupancyMaxActiveClusters,
    ) -> Result<u32, CudaError> {
        let (mut attrs, n) = config.attributes();
        let attrs = attrs.get_mut(..n).unwrap_or_default();
        let raw = config.raw(crate::sys::CUstream(core::ptr::null_mut()), attrs);
        let mut v = 0;
        // SAFETY: a valid out-pointer; `raw` points to `attrs`, alive on this frame.
        check(unsafe { query(&mut v, self.raw, &raw) })?;
        Ok(v.max(0) as u32)
    }
}

static_assertions::assert_impl_all!(LaunchConfig: Send, Sync, Copy);

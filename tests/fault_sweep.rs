//! The fault-injection sweep: every safe function of the crate that calls the
//! driver, with each driver function it calls made to fail through softcuda's
//! control surface (`softcuda::control::inject_fault`). Each row of the table names
//! one safe entry point and one driver function it reaches; its case sets up what
//! it needs and calls the entry point. First the case runs without a fault and must
//! succeed with nothing left behind (so an injected failure is the only cause of
//! what follows). Then, for every code injected at the function's first call — the
//! error the driver documents for that call, `OUT_OF_MEMORY`, `ILLEGAL_ADDRESS`
//! (sticky), `LAUNCH_FAILED` (sticky), `NOT_INITIALIZED` and an unknown code
//! (12345) — and for the documented code at each later call, the test asserts:
//!
//! - the call reached the driver function (softcuda's call log says so), so the row
//!   tests what it names;
//! - the entry point returned a typed error carrying the code (`CudaError::Driver`,
//!   or the documented wrapper: `JitFailed { source }`, `GraphUpdate`), or — for a
//!   destructor, which cannot return an error — returned at all;
//! - nothing unwound (each case runs under `catch_unwind`); the one documented
//!   abort (a failed wait at the end of an async scope) is checked in a child
//!   process;
//! - a sticky code marked the bound context's handle (`Context::sticky_error`), and
//!   no other code did;
//! - the case released what it made before its context was destroyed, and once
//!   everything is dropped softcuda has no live object left. A release the driver
//!   refuses leaves its object behind, which the crate cannot help: for an object a
//!   context owns, destroying the context reclaims it (checked); for a context, a
//!   primary-context retain, a library, a pool, a graph, a link state or pool
//!   memory, the row says `Refused` and the test reclaims it with
//!   `softcuda::control::reset`.
//!
//! A second test scans `src/` for the driver functions the safe layer calls, and
//! the public functions that call one themselves, and fails naming any that no row
//! covers (an allow-list says why one cannot be: `cuFuncGetName`). A third,
//! weaker pass makes every call each case makes fail in turn (the entry point's and
//! those of the drops that end the case). The tests print lines for
//! `docs/reliability.md`, e.g.
//! `reliability: sweep entry_points=N driver_functions=M faults=K leaks=0 ...`.
//!
//! softcuda only: the GPU suite has no fault injection.
#![cfg(not(feature = "gpu-tests"))]

mod common;

use common::driver;
use oxicuda_driver::array::ArrayShape;
use oxicuda_driver::event::{Interprocess, NoTiming, Timing};
use oxicuda_driver::external::{Binary, Timeline};
use oxicuda_driver::graph::{CaptureMode, ConditionalKind};
use oxicuda_driver::green::{GreenContext, SplitFlags};
use oxicuda_driver::launch::{In, Out};
use oxicuda_driver::launch_config::LaunchConfig;
use oxicuda_driver::link::LinkInput;
use oxicuda_driver::managed::{Advice, Attach, Location};
use oxicuda_driver::module::{JitOptions, Module};
use oxicuda_driver::peer::PeerGroup;
use oxicuda_driver::pool::{Access, ReusePolicy};
use oxicuda_driver::sys::{
    CUctx_flags, CUdevice_attribute, CUfunc_cache, CUfunction_attribute, CUlimit,
    CUmemhostalloc_flags, CUmemhostregister_flags, CUresult, CUstream_flags,
    CUtensorMapDataType as Dt,
};
use oxicuda_driver::tensor_map::{TensorKind, TensorLayout, TensorMap};
use oxicuda_driver::texture::TextureDesc;
use oxicuda_driver::{Context, CudaError, CurrentContext, Driver, DriverOptions, PrimaryContext};
use std::collections::BTreeSet;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::Path;

const SLICES: &str = include_str!("../kernels/slices.ptx");
const GLOBALS: &str = include_str!("../kernels/globals.ptx");
const CLUSTER: &str = include_str!("../kernels/cluster.ptx");
const LINK_A: &str = include_str!("../kernels/link_a.ptx");
const LINK_B: &str = include_str!("../kernels/link_b.ptx");

/// What a row's entry point does with an injected failure.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Outcome {
    /// Returns it, typed.
    Error,
    /// A destructor: it cannot return the error; it logs it. What it failed to
    /// release, its context's destruction reclaims.
    Swallowed,
    /// A destructor of something no context owns (a context, a primary retain, a
    /// library): the driver kept it; the test reclaims it with a softcuda reset.
    Refused,
    /// Returns the typed error of a release the driver refused (the join of a fork:
    /// `cuEventDestroy`), or whose stream a sticky error stopped before it got there
    /// (a pool allocation's free queued behind the failing call); the context's end
    /// reclaims the object.
    ErrorHeld,
    /// Returns the typed error, and the driver kept what was to be released (a
    /// stream-ordered free: the memory stays in its pool, which no context owns).
    ErrorRefused,
    /// The end of an async scope: a sticky error comes back typed (the context is
    /// dead, its work abandoned); any other failure of the wait aborts the process,
    /// as `Stream::scope` documents — copies may still be writing host memory the
    /// scope borrowed, and there is no way left to wait for them. Run in a child
    /// process, which must die of `SIGABRT`.
    AbortsUnlessSticky,
}

type CtxCase = fn(&mut CurrentContext<'_>, &dyn Fn()) -> Result<(), CudaError>;
type BareCase = fn(&'static Driver, &dyn Fn()) -> Result<(), CudaError>;

/// How a row runs: under a fresh context of device 0, or with only the driver.
enum Run {
    Ctx(CtxCase),
    Bare(BareCase),
}

/// One safe entry point and one driver function it calls. The case sets up what it
/// needs, calls `arm()` (which injects the fault into the next call of `func`) just
/// before the entry point, and returns what the entry point returned.
struct Row {
    entry: &'static str,
    func: &'static str,
    documented: CUresult,
    outcome: Outcome,
    run: Run,
}

/// A row under a fresh context: `ctx!(entry, func, DOC, [Outcome,] |cur, arm| body)`,
/// or one row for each `(func, DOC)` of a list whose calls the same case reaches:
/// `ctx!(entry, [(func, DOC), ...], [Outcome,] |cur, arm| body)`.
macro_rules! ctx {
    ($entry:literal, [$(($func:literal, $doc:ident)),+ $(,)?], $out:ident, |$cur:ident, $arm:ident| $body:block) => {{
        let run: CtxCase = |$cur: &mut CurrentContext<'_>, $arm: &dyn Fn()| -> Result<(), CudaError> {
            #[allow(unused_mut, unused_variables)]
            let $cur = $cur;
            $body
        };
        vec![$(Row {
            entry: $entry,
            func: $func,
            documented: CUresult::$doc,
            outcome: Outcome::$out,
            run: Run::Ctx(run),
        }),+]
    }};
    ($entry:literal, [$(($func:literal, $doc:ident)),+ $(,)?], |$cur:ident, $arm:ident| $body:block) => {
        ctx!($entry, [$(($func, $doc)),+], Error, |$cur, $arm| $body)
    };
    ($entry:literal, $func:literal, $doc:ident, $out:ident, |$cur:ident, $arm:ident| $body:block) => {
        ctx!($entry, [($func, $doc)], $out, |$cur, $arm| $body)
    };
    ($entry:literal, $func:literal, $doc:ident, |$cur:ident, $arm:ident| $body:block) => {
        ctx!($entry, [($func, $doc)], Error, |$cur, $arm| $body)
    };
}

/// A row with only the driver, in the forms of [`ctx!`].
macro_rules! bare {
    ($entry:literal, [$(($func:literal, $doc:ident)),+ $(,)?], $out:ident, |$d:ident, $arm:ident| $body:block) => {{
        let run: BareCase =
            |$d: &'static Driver, $arm: &dyn Fn()| -> Result<(), CudaError> { $body };
        vec![$(Row {
            entry: $entry,
            func: $func,
            documented: CUresult::$doc,
            outcome: Outcome::$out,
            run: Run::Bare(run),
        }),+]
    }};
    ($entry:literal, [$(($func:literal, $doc:ident)),+ $(,)?], |$d:ident, $arm:ident| $body:block) => {
        bare!($entry, [$(($func, $doc)),+], Error, |$d, $arm| $body)
    };
    ($entry:literal, $func:literal, $doc:ident, $out:ident, |$d:ident, $arm:ident| $body:block) => {
        bare!($entry, [($func, $doc)], $out, |$d, $arm| $body)
    };
    ($entry:literal, $func:literal, $doc:ident, |$d:ident, $arm:ident| $body:block) => {
        bare!($entry, [($func, $doc)], Error, |$d, $arm| $body)
    };
}

type Add = (In<f32>, In<f32>, Out<f32>);

fn slices<'a>(cur: &'a CurrentContext<'_>) -> Result<Module<'a>, CudaError> {
    cur.load_ptx(SLICES, &JitOptions::default())
}

fn add_fn<'m>(m: &'m Module<'_>) -> Result<oxicuda_driver::module::Function<'m, Add>, CudaError> {
    // SAFETY: kernels/slices.cu: vector_add writes its output only below its length
    // and reads its inputs only below theirs.
    unsafe { m.function::<Add>("vector_add") }
}

fn stream<'a>(
    cur: &'a CurrentContext<'_>,
) -> Result<oxicuda_driver::stream::Stream<'a>, CudaError> {
    cur.create_stream(CUstream_flags::CU_STREAM_NON_BLOCKING)
}

fn dev1(cur: &CurrentContext<'_>) -> Result<oxicuda_driver::Device, CudaError> {
    cur.driver().device(1)
}

/// Two created contexts, on devices 0 and 1, for a peer group.
fn two_contexts(d: &'static Driver) -> Result<(Context, Context), CudaError> {
    Ok((
        Context::new(&d.device(0)?, CUctx_flags::empty())?,
        Context::new(&d.device(1)?, CUctx_flags::empty())?,
    ))
}

/// Ends the injection and the call log early: what the case drops afterwards (a
/// green context, whose drop pushes and waits) is another row's.
fn disarm() {
    softcuda::control::clear_faults();
    softcuda::control::log_calls(false);
}

fn unit<T>(r: Result<T, CudaError>) -> Result<(), CudaError> {
    r.map(drop)
}

fn flat<T>(r: Result<Result<T, CudaError>, CudaError>) -> Result<(), CudaError> {
    r.and_then(unit)
}

/// An 8 KiB tiled tensor map's parameters (as tests/tensor_map.rs).
const DIMS: [u64; 3] = [64, 8, 4];
const STRIDES: [u64; 2] = [256, 2048];
const BOXES: [u32; 3] = [16, 4, 2];
const ES: [u32; 3] = [1, 1, 1];

/// The tensor-map layouts the sweep encodes.
struct SweepTiled;
impl TensorLayout for SweepTiled {
    const DATA_TYPE: Dt = Dt::CU_TENSOR_MAP_DATA_TYPE_FLOAT32;
    const KIND: TensorKind = TensorKind::Tiled { box_dims: &BOXES };
    const ELEMENT_STRIDES: &'static [u32] = &ES;
}
struct SweepIm2col;
impl TensorLayout for SweepIm2col {
    const DATA_TYPE: Dt = Dt::CU_TENSOR_MAP_DATA_TYPE_FLOAT32;
    const KIND: TensorKind = TensorKind::Im2col {
        channels_per_pixel: 16,
        pixels_per_column: 4,
    };
    const ELEMENT_STRIDES: &'static [u32] = &ES;
}
struct SweepIm2colWide;
impl TensorLayout for SweepIm2colWide {
    const DATA_TYPE: Dt = Dt::CU_TENSOR_MAP_DATA_TYPE_FLOAT16;
    const KIND: TensorKind = TensorKind::Im2colWide {
        channels_per_pixel: 32,
        pixels_per_column: 64,
        mode: oxicuda_driver::sys::CUtensorMapIm2ColWideMode::CU_TENSOR_MAP_IM2COL_WIDE_MODE_W,
    };
    const ELEMENT_STRIDES: &'static [u32] = &ES;
    const SWIZZLE: oxicuda_driver::sys::CUtensorMapSwizzle =
        oxicuda_driver::sys::CUtensorMapSwizzle::CU_TENSOR_MAP_SWIZZLE_128B;
}

/// softcuda configured with a compute capability 10.0 device 0 while alive; the
/// default devices again when dropped (after every context is gone).
struct Blackwell(i32);

impl Blackwell {
    fn configure() -> Blackwell {
        let version = softcuda::control::config().version;
        let mut devices = softcuda::control::Profile::defaults();
        devices[0] = softcuda::control::Profile::new(0, 10, 0, 8192);
        softcuda::control::configure(version, devices).unwrap();
        Blackwell(version)
    }
}

impl Drop for Blackwell {
    fn drop(&mut self) {
        if softcuda::control::configure(self.0, softcuda::control::Profile::defaults()).is_err() {
            // A context outlived the case (its destruction was refused): reclaim it.
            reclaim();
            softcuda::control::configure(self.0, softcuda::control::Profile::defaults()).unwrap();
        }
    }
}

fn rows() -> Vec<Row> {
    [
        // --- the driver and its devices -------------------------------------------
        bare!("Driver::init", "cuInit", CUDA_ERROR_NO_DEVICE, |_d, arm| {
            // A driver of its own: `init` asks cuInit once per Driver.
            let fresh = Driver::load(&DriverOptions::software())?;
            arm();
            fresh.init()
        }),
        // --- peer work: a group of two contexts, one per device ----------------------
        bare!(
            "PeerGroup::enable_peer_access",
            "cuCtxEnablePeerAccess",
            CUDA_ERROR_PEER_ACCESS_UNSUPPORTED,
            |d, arm| {
                let (c0, c1) = two_contexts(d)?;
                flat(PeerGroup::bind([&c0, &c1], |g| {
                    let (m0, m1) = (g.member(0).unwrap(), g.member(1).unwrap());
                    arm();
                    g.enable_peer_access(m0, m1)
                }))
            }
        ),
        bare!(
            "PeerGroup::alloc",
            "cuMemAlloc",
            CUDA_ERROR_OUT_OF_MEMORY,
            |d, arm| {
                let (c0, c1) = two_contexts(d)?;
                flat(PeerGroup::bind([&c0, &c1], |g| {
                    let m1 = g.member(1).unwrap();
                    arm();
                    unit(g.alloc::<u32>(m1, 4))
                }))
            }
        ),
        bare!(
            "PeerBuffer::copy_from_host",
            "cuMemcpyHtoD",
            CUDA_ERROR_INVALID_VALUE,
            |d, arm| {
                let (c0, c1) = two_contexts(d)?;
                flat(PeerGroup::bind([&c0, &c1], |g| {
                    let mut b = g.alloc::<u32>(g.member(1).unwrap(), 4)?;
                    arm();
                    b.copy_from_host(&[1, 2, 3, 4])
                }))
            }
        ),
        bare!(
            "PeerBuffer::to_vec",
            "cuMemcpyDtoH",
            CUDA_ERROR_INVALID_VALUE,
            |d, arm| {
                let (c0, c1) = two_contexts(d)?;
                flat(PeerGroup::bind([&c0, &c1], |g| {
                    let b = g.alloc::<u32>(g.member(0).unwrap(), 4)?;
                    arm();
                    unit(b.to_vec())
                }))
            }
        ),
        bare!(
            "PeerBuffer::copy_from_peer",
            "cuMemcpyPeer",
            CUDA_ERROR_INVALID_VALUE,
            |d, arm| {
                let (c0, c1) = two_contexts(d)?;
                flat(PeerGroup::bind([&c0, &c1], |g| {
                    let (m0, m1) = (g.member(0).unwrap(), g.member(1).unwrap());
                    let (mut a, b) = (g.alloc::<u32>(m0, 4)?, g.alloc::<u32>(m1, 4)?);
                    arm();
                    a.copy_from_peer(0, &b, ..)
                }))
            }
        ),
        bare!(
            "PeerBuffer::copy_from_peer_async",
            "cuMemcpyPeerAsync",
            CUDA_ERROR_INVALID_VALUE,
            |d, arm| {
                let (c0, c1) = two_contexts(d)?;
                flat(PeerGroup::bind([&c0, &c1], |g| {
                    let (m0, m1) = (g.member(0).unwrap(), g.member(1).unwrap());
                    let (mut a, b) = (g.alloc::<u32>(m0, 4)?, g.alloc::<u32>(m1, 4)?);
                    flat(g.enter(m0, |e| {
                        let s = stream(e)?;
                        arm();
                        a.copy_from_peer_async(0, &b, .., &s, e)
                    }))
                }))
            }
        ),
        bare!(
            "PeerGroup::enter (end)",
            "cuCtxSynchronize",
            CUDA_ERROR_INVALID_CONTEXT,
            AbortsUnlessSticky,
            |d, arm| {
                let (c0, c1) = two_contexts(d)?;
                flat(PeerGroup::bind([&c0, &c1], |g| {
                    g.enter(g.member(1).unwrap(), |_| arm())
                }))
            }
        ),
        bare!(
            "PeerBuffer::drop",
            "cuMemFree",
            CUDA_ERROR_INVALID_VALUE,
            Swallowed,
            |d, arm| {
                let (c0, c1) = two_contexts(d)?;
                PeerGroup::bind([&c0, &c1], |g| {
                    let b = g.alloc::<u32>(g.member(1).unwrap(), 4);
                    arm();
                    drop(b);
                })
            }
        ),
        bare!(
            "Driver::query_version",
            "cuDriverGetVersion",
            CUDA_ERROR_INVALID_VALUE,
            |d, arm| {
                arm();
                unit(d.query_version())
            }
        ),
        bare!(
            "Driver::device_count",
            "cuDeviceGetCount",
            CUDA_ERROR_INVALID_VALUE,
            |d, arm| {
                arm();
                unit(d.device_count())
            }
        ),
        bare!(
            "Driver::device",
            "cuDeviceGet",
            CUDA_ERROR_INVALID_DEVICE,
            |d, arm| {
                arm();
                unit(d.device(0))
            }
        ),
        bare!(
            "Driver::list_devices",
            "cuDeviceGet",
            CUDA_ERROR_INVALID_DEVICE,
            |d, arm| {
                arm();
                unit(d.list_devices())
            }
        ),
        bare!(
            "Device::attribute",
            "cuDeviceGetAttribute",
            CUDA_ERROR_INVALID_VALUE,
            |d, arm| {
                let dev = d.device(0)?;
                arm();
                unit(dev.attribute(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_WARP_SIZE))
            }
        ),
        bare!(
            "Device::name",
            "cuDeviceGetName",
            CUDA_ERROR_INVALID_DEVICE,
            |d, arm| {
                let dev = d.device(0)?;
                arm();
                unit(dev.name())
            }
        ),
        bare!(
            "Device::uuid",
            "cuDeviceGetUuid",
            CUDA_ERROR_INVALID_DEVICE,
            |d, arm| {
                let dev = d.device(0)?;
                arm();
                unit(dev.uuid())
            }
        ),
        bare!(
            "Device::pci_bus_id",
            "cuDeviceGetPCIBusId",
            CUDA_ERROR_INVALID_DEVICE,
            |d, arm| {
                let dev = d.device(0)?;
                arm();
                unit(dev.pci_bus_id())
            }
        ),
        bare!(
            "Device::total_memory",
            "cuDeviceTotalMem",
            CUDA_ERROR_INVALID_DEVICE,
            |d, arm| {
                let dev = d.device(0)?;
                arm();
                unit(dev.total_memory())
            }
        ),
        bare!(
            "Device::can_access_peer",
            "cuDeviceCanAccessPeer",
            CUDA_ERROR_INVALID_DEVICE,
            |d, arm| {
                let (a, b) = (d.device(0)?, d.device(1)?);
                arm();
                unit(a.can_access_peer(&b))
            }
        ),
        bare!(
            "Topology::probe_with_sysfs",
            [
                ("cuDeviceGetP2PAttribute", CUDA_ERROR_INVALID_DEVICE),
                ("cuDeviceGetPCIBusId", CUDA_ERROR_INVALID_DEVICE),
            ],
            |d, arm| {
                arm();
                unit(oxicuda_driver::topology::Topology::probe_with_sysfs(
                    d,
                    None,
                    Path::new("/nonexistent"),
                ))
            }
        ),
        // --- contexts ---------------------------------------------------------------
        bare!(
            "Context::new",
            [
                ("cuCtxCreate", CUDA_ERROR_INVALID_DEVICE),
                ("cuCtxPopCurrent", CUDA_ERROR_INVALID_CONTEXT)
            ],
            |d, arm| {
                let dev = d.device(0)?;
                arm();
                unit(Context::new(&dev, CUctx_flags::empty()))
            }
        ),
        bare!(
            "Context::drop",
            "cuCtxDestroy",
            CUDA_ERROR_INVALID_CONTEXT,
            Refused,
            |d, arm| {
                let ctx = Context::new(&d.device(0)?, CUctx_flags::empty())?;
                arm();
                drop(ctx);
                Ok(())
            }
        ),
        bare!(
            "Context::bind",
            [
                ("cuCtxGetCurrent", CUDA_ERROR_INVALID_CONTEXT),
                ("cuCtxPushCurrent", CUDA_ERROR_INVALID_CONTEXT)
            ],
            |d, arm| {
                let ctx = Context::new(&d.device(0)?, CUctx_flags::empty())?;
                arm();
                ctx.bind(|_| ())
            }
        ),
        bare!(
            "Context::bind (end)",
            "cuCtxPopCurrent",
            CUDA_ERROR_INVALID_CONTEXT,
            |d, arm| {
                let ctx = Context::new(&d.device(0)?, CUctx_flags::empty())?;
                ctx.bind(|_| arm())
            }
        ),
        bare!(
            "PrimaryContext::retain",
            "cuDevicePrimaryCtxRetain",
            CUDA_ERROR_INVALID_DEVICE,
            |d, arm| {
                let dev = d.device(0)?;
                arm();
                unit(PrimaryContext::retain(&dev))
            }
        ),
        bare!(
            "PrimaryContext::state",
            "cuDevicePrimaryCtxGetState",
            CUDA_ERROR_INVALID_DEVICE,
            |d, arm| {
                let p = PrimaryContext::retain(&d.device(0)?)?;
                arm();
                unit(p.state())
            }
        ),
        bare!(
            "PrimaryContext::set_flags",
            "cuDevicePrimaryCtxSetFlags",
            CUDA_ERROR_INVALID_DEVICE,
            |d, arm| {
                let mut p = PrimaryContext::retain(&d.device(0)?)?;
                arm();
                p.set_flags(CUctx_flags::empty())
            }
        ),
        bare!(
            "PrimaryContext::reset",
            "cuDevicePrimaryCtxReset",
            CUDA_ERROR_INVALID_DEVICE,
            |d, arm| {
                let mut p = PrimaryContext::retain(&d.device(0)?)?;
                arm();
                // SAFETY: nothing uses the primary context.
                unsafe { p.reset() }
            }
        ),
        bare!(
            "PrimaryContext::drop",
            "cuDevicePrimaryCtxRelease",
            CUDA_ERROR_INVALID_DEVICE,
            Refused,
            |d, arm| {
                let p = PrimaryContext::retain(&d.device(0)?)?;
                arm();
                drop(p);
                Ok(())
            }
        ),
        bare!(
            "PrimaryContext::bind",
            "cuCtxPushCurrent",
            CUDA_ERROR_INVALID_CONTEXT,
            |d, arm| {
                let p = PrimaryContext::retain(&d.device(0)?)?;
                arm();
                p.bind(|_| ())
            }
        ),
        ctx!(
            "CurrentContext::push",
            "cuCtxPushCurrent",
            CUDA_ERROR_INVALID_CONTEXT,
            |cur, arm| {
                let other = Context::new(&cur.driver().device(0)?, CUctx_flags::empty())?;
                arm();
                cur.push(&other, |_| ())
            }
        ),
        ctx!(
            "CurrentContext::push_primary",
            "cuCtxPushCurrent",
            CUDA_ERROR_INVALID_CONTEXT,
            |cur, arm| {
                let p = PrimaryContext::retain(&cur.driver().device(0)?)?;
                arm();
                cur.push_primary(&p, |_| ())
            }
        ),
        ctx!(
            "CurrentContext::enable_peer_access",
            "cuCtxEnablePeerAccess",
            CUDA_ERROR_PEER_ACCESS_UNSUPPORTED,
            |cur, arm| {
                let other = Context::new(&dev1(cur)?, CUctx_flags::empty())?;
                arm();
                cur.enable_peer_access(&other)
            }
        ),
        ctx!(
            "CurrentContext::disable_peer_access",
            "cuCtxDisablePeerAccess",
            CUDA_ERROR_PEER_ACCESS_NOT_ENABLED,
            |cur, arm| {
                let other = Context::new(&dev1(cur)?, CUctx_flags::empty())?;
                cur.enable_peer_access(&other)?;
                arm();
                cur.disable_peer_access(&other)
            }
        ),
        ctx!(
            "CurrentContext::synchronize",
            "cuCtxSynchronize",
            CUDA_ERROR_INVALID_CONTEXT,
            |cur, arm| {
                arm();
                cur.synchronize()
            }
        ),
        ctx!(
            "CurrentContext::device",
            "cuCtxGetDevice",
            CUDA_ERROR_INVALID_CONTEXT,
            |cur, arm| {
                arm();
                unit(cur.device())
            }
        ),
        ctx!(
            "CurrentContext::flags",
            "cuCtxGetFlags",
            CUDA_ERROR_INVALID_CONTEXT,
            |cur, arm| {
                arm();
                unit(cur.flags())
            }
        ),
        ctx!(
            "CurrentContext::limit",
            "cuCtxGetLimit",
            CUDA_ERROR_UNSUPPORTED_LIMIT,
            |cur, arm| {
                arm();
                unit(cur.limit(CUlimit::CU_LIMIT_STACK_SIZE))
            }
        ),
        ctx!(
            "CurrentContext::set_limit",
            "cuCtxSetLimit",
            CUDA_ERROR_UNSUPPORTED_LIMIT,
            |cur, arm| {
                arm();
                cur.set_limit(CUlimit::CU_LIMIT_STACK_SIZE, 1024)
            }
        ),
        ctx!(
            "CurrentContext::cache_config",
            "cuCtxGetCacheConfig",
            CUDA_ERROR_INVALID_CONTEXT,
            |cur, arm| {
                arm();
                unit(cur.cache_config())
            }
        ),
        ctx!(
            "CurrentContext::set_cache_config",
            "cuCtxSetCacheConfig",
            CUDA_ERROR_INVALID_CONTEXT,
            |cur, arm| {
                arm();
                cur.set_cache_config(CUfunc_cache::CU_FUNC_CACHE_PREFER_NONE)
            }
        ),
        ctx!(
            "CurrentContext::stream_priority_range",
            "cuCtxGetStreamPriorityRange",
            CUDA_ERROR_INVALID_CONTEXT,
            |cur, arm| {
                arm();
                unit(cur.stream_priority_range())
            }
        ),
        ctx!(
            "CurrentContext::api_version",
            "cuCtxGetApiVersion",
            CUDA_ERROR_INVALID_CONTEXT,
            |cur, arm| {
                arm();
                unit(cur.api_version())
            }
        ),
        // --- device memory ------------------------------------------------------------
        ctx!(
            "CurrentContext::alloc",
            "cuMemAlloc",
            CUDA_ERROR_OUT_OF_MEMORY,
            |cur, arm| {
                arm();
                unit(cur.alloc::<u32>(16))
            }
        ),
        ctx!(
            "CurrentContext::alloc_from",
            "cuMemcpyHtoD",
            CUDA_ERROR_INVALID_VALUE,
            |cur, arm| {
                arm();
                unit(cur.alloc_from(&[1u32, 2, 3]))
            }
        ),
        ctx!(
            "DeviceBuffer::drop",
            "cuMemFree",
            CUDA_ERROR_INVALID_VALUE,
            Swallowed,
            |cur, arm| {
                let b = cur.alloc::<u32>(16)?;
                arm();
                drop(b);
                Ok(())
            }
        ),
        ctx!(
            "CurrentContext::memory_info",
            "cuMemGetInfo",
            CUDA_ERROR_INVALID_CONTEXT,
            |cur, arm| {
                arm();
                unit(cur.memory_info())
            }
        ),
        ctx!(
            "DeviceBuffer::copy_from_host",
            "cuMemcpyHtoD",
            CUDA_ERROR_INVALID_VALUE,
            |cur, arm| {
                let mut b = cur.alloc::<u32>(4)?;
                arm();
                b.copy_from_host(&[1, 2, 3, 4])
            }
        ),
        ctx!(
            "DeviceBuffer::copy_to_host",
            "cuMemcpyDtoH",
            CUDA_ERROR_INVALID_VALUE,
            |cur, arm| {
                let b = cur.alloc::<u32>(4)?;
                let mut h = [0u32; 4];
                arm();
                b.copy_to_host(&mut h)
            }
        ),
        ctx!(
            "DeviceBuffer::to_vec",
            "cuMemcpyDtoH",
            CUDA_ERROR_INVALID_VALUE,
            |cur, arm| {
                let b = cur.alloc::<u32>(4)?;
                arm();
                unit(b.to_vec())
            }
        ),
        ctx!(
            "DeviceSlice::copy_to_host",
            "cuMemcpyDtoH",
            CUDA_ERROR_INVALID_VALUE,
            |cur, arm| {
                let b = cur.alloc::<u32>(4)?;
                let mut h = [0u32; 2];
                arm();
                b.as_slice().slice(1..3)?.copy_to_host(&mut h)
            }
        ),
        ctx!(
            "DeviceSliceMut::copy_from_host",
            "cuMemcpyHtoD",
            CUDA_ERROR_INVALID_VALUE,
            |cur, arm| {
                let mut b = cur.alloc::<u32>(4)?;
                arm();
                b.as_mut_slice().slice(1..3)?.copy_from_host(&[1, 2])
            }
        ),
        ctx!(
            "DeviceBuffer::copy_from",
            "cuMemcpyDtoD",
            CUDA_ERROR_INVALID_VALUE,
            |cur, arm| {
                let (mut a, b) = (cur.alloc::<u32>(4)?, cur.alloc::<u32>(4)?);
                arm();
                a.copy_from(&b)
            }
        ),
        ctx!(
            "DeviceSliceMut::copy_from",
            "cuMemcpyDtoD",
            CUDA_ERROR_INVALID_VALUE,
            |cur, arm| {
                let (mut a, b) = (cur.alloc::<u32>(4)?, cur.alloc::<u32>(4)?);
                arm();
                a.as_mut_slice().copy_from(&b)
            }
        ),
        ctx!(
            "DeviceBuffer::fill (u8)",
            "cuMemsetD8",
            CUDA_ERROR_INVALID_VALUE,
            |cur, arm| {
                let mut b = cur.alloc::<u8>(4)?;
                arm();
                b.fill(7)
            }
        ),
        ctx!(
            "DeviceBuffer::fill (u16)",
            "cuMemsetD16",
            CUDA_ERROR_INVALID_VALUE,
            |cur, arm| {
                let mut b = cur.alloc::<u16>(4)?;
                arm();
                b.fill(7)
            }
        ),
        ctx!(
            "DeviceBuffer::fill (u32)",
            "cuMemsetD32",
            CUDA_ERROR_INVALID_VALUE,
            |cur, arm| {
                let mut b = cur.alloc::<u32>(4)?;
                arm();
                b.fill(7)
            }
        ),
        ctx!(
            "DeviceBuffer::zero",
            "cuMemsetD8",
            CUDA_ERROR_INVALID_VALUE,
            |cur, arm| {
                let mut b = cur.alloc::<u32>(4)?;
                arm();
                b.zero()
            }
        ),
        ctx!(
            "Stream::fill (u8)",
            "cuMemsetD8Async",
            CUDA_ERROR_INVALID_VALUE,
            |cur, arm| {
                let (s, mut b) = (stream(cur)?, cur.alloc::<u8>(4)?);
                arm();
                s.fill(&mut b, 7)
            }
        ),
        ctx!(
            "Stream::fill (u16)",
            "cuMemsetD16Async",
            CUDA_ERROR_INVALID_VALUE,
            |cur, arm| {
                let (s, mut b) = (stream(cur)?, cur.alloc::<u16>(4)?);
                arm();
                s.fill(&mut b, 7)
            }
        ),
        ctx!(
            "Stream::fill (u32)",
            "cuMemsetD32Async",
            CUDA_ERROR_INVALID_VALUE,
            |cur, arm| {
                let (s, mut b) = (stream(cur)?, cur.alloc::<u32>(4)?);
                arm();
                s.fill(&mut b, 7)
            }
        ),
        ctx!(
            "Stream::copy",
            "cuMemcpyDtoDAsync",
            CUDA_ERROR_INVALID_VALUE,
            |cur, arm| {
                let (s, mut b) = (stream(cur)?, cur.alloc::<u32>(4)?);
                let a = cur.alloc::<u32>(4)?;
                arm();
                s.copy(&mut b, &a)
            }
        ),
        // --- pinned host memory -------------------------------------------------------
        ctx!(
            "CurrentContext::alloc_host",
            [
                ("cuMemHostAlloc", CUDA_ERROR_OUT_OF_MEMORY),
                ("cuCtxGetCurrent", CUDA_ERROR_INVALID_CONTEXT)
            ],
            |cur, arm| {
                arm();
                unit(cur.alloc_host::<u32>(16, CUmemhostalloc_flags::empty()))
            }
        ),
        ctx!(
            "HostBuffer::drop",
            "cuMemFreeHost",
            CUDA_ERROR_INVALID_VALUE,
            Swallowed,
            |cur, arm| {
                let h = cur.alloc_host::<u32>(16, CUmemhostalloc_flags::empty())?;
                arm();
                drop(h);
                Ok(())
            }
        ),
        ctx!(
            "CurrentContext::register_host",
            "cuMemHostRegister",
            CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED,
            |cur, arm| {
                let mut v = vec![0u32; 1024];
                arm();
                unit(cur.register_host(&mut v, CUmemhostregister_flags::empty()))
            }
        ),
        ctx!(
            "Registered::drop",
            "cuMemHostUnregister",
            CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED,
            Swallowed,
            |cur, arm| {
                let mut v = vec![0u32; 1024];
                let r = cur.register_host(&mut v, CUmemhostregister_flags::empty())?;
                arm();
                drop(r);
                Ok(())
            }
        ),
        // --- streams and events -------------------------------------------------------
        ctx!(
            "CurrentContext::create_stream",
            "cuStreamCreate",
            CUDA_ERROR_OUT_OF_MEMORY,
            |cur, arm| {
                arm();
                unit(stream(cur))
            }
        ),
        ctx!(
            "CurrentContext::create_stream_with_priority",
            "cuStreamCreateWithPriority",
            CUDA_ERROR_INVALID_VALUE,
            |cur, arm| {
                arm();
                unit(cur.create_stream_with_priority(CUstream_flags::CU_STREAM_NON_BLOCKING, 0))
            }
        ),
        ctx!(
            "Stream::drop",
            "cuStreamDestroy",
            CUDA_ERROR_INVALID_HANDLE,
            Swallowed,
            |cur, arm| {
                let s = stream(cur)?;
                arm();
                drop(s);
                Ok(())
            }
        ),
        ctx!(
            "Stream::synchronize",
            "cuStreamSynchronize",
            CUDA_ERROR_INVALID_HANDLE,
            |cur, arm| {
                let s = stream(cur)?;
                arm();
                s.synchronize()
            }
        ),
        ctx!(
            "Stream::is_done",
            "cuStreamQuery",
            CUDA_ERROR_INVALID_HANDLE,
            |cur, arm| {
                let s = stream(cur)?;
                arm();
                unit(s.is_done())
            }
        ),
        ctx!(
            "Stream::wait",
            "cuStreamWaitEvent",
            CUDA_ERROR_INVALID_HANDLE,
            |cur, arm| {
                let (s, e) = (stream(cur)?, cur.create_event::<NoTiming>()?);
                arm();
                s.wait(&e)
            }
        ),
        ctx!(
            "Stream::launch_host_fn",
            "cuStreamAddCallback",
            CUDA_ERROR_INVALID_HANDLE,
            |cur, arm| {
                let s = stream(cur)?;
                arm();
                s.launch_host_fn(|| {})?;
                s.synchronize()
            }
        ),
        ctx!(
            "Stream::priority",
            "cuStreamGetPriority",
            CUDA_ERROR_INVALID_HANDLE,
            |cur, arm| {
                let s = stream(cur)?;
                arm();
                unit(s.priority())
            }
        ),
        ctx!(
            "Stream::scope",
            "cuStreamIsCapturing",
            CUDA_ERROR_INVALID_HANDLE,
            |cur, arm| {
                let s = stream(cur)?;
                arm();
                s.scope(|_| ())
            }
        ),
        ctx!(
            "Stream::scope (end)",
            "cuStreamSynchronize",
            CUDA_ERROR_INVALID_HANDLE,
            AbortsUnlessSticky,
            |cur, arm| {
                let s = stream(cur)?;
                s.scope(|_| arm())
            }
        ),
        ctx!(
            "AsyncScope::copy_to_device",
            "cuMemcpyHtoDAsync",
            CUDA_ERROR_INVALID_VALUE,
            |cur, arm| {
                let (s, mut b) = (stream(cur)?, cur.alloc::<u32>(4)?);
                let h = [1u32, 2, 3, 4];
                flat(s.scope(|sc| {
                    arm();
                    sc.copy_to_device(&mut b, &h)
                }))
            }
        ),
        ctx!(
            "AsyncScope::copy_to_host",
            "cuMemcpyDtoHAsync",
            CUDA_ERROR_INVALID_VALUE,
            |cur, arm| {
                let (s, b) = (stream(cur)?, cur.alloc::<u32>(4)?);
                let mut h = [0u32; 4];
                flat(s.scope(|sc| {
                    arm();
                    sc.copy_to_host(&mut h, &b)
                }))
            }
        ),
        ctx!(
            "CurrentContext::create_event",
            "cuEventCreate",
            CUDA_ERROR_OUT_OF_MEMORY,
            |cur, arm| {
                arm();
                unit(cur.create_event::<Timing>())
            }
        ),
        ctx!(
            "Event::drop",
            "cuEventDestroy",
            CUDA_ERROR_INVALID_HANDLE,
            Swallowed,
            |cur, arm| {
                let e = cur.create_event::<Timing>()?;
                arm();
                drop(e);
                Ok(())
            }
        ),
        ctx!(
            "Event::record",
            "cuEventRecord",
            CUDA_ERROR_INVALID_HANDLE,
            |cur, arm| {
                let (s, e) = (stream(cur)?, cur.create_event::<Timing>()?);
                arm();
                e.record(&s)
            }
        ),
        ctx!(
            "Event::synchronize",
            "cuEventSynchronize",
            CUDA_ERROR_INVALID_HANDLE,
            |cur, arm| {
                let e = cur.create_event::<Timing>()?;
                arm();
                e.synchronize()
            }
        ),
        ctx!(
            "Event::is_done",
            "cuEventQuery",
            CUDA_ERROR_INVALID_HANDLE,
            |cur, arm| {
                let e = cur.create_event::<Timing>()?;
                arm();
                unit(e.is_done())
            }
        ),
        ctx!(
            "Event::elapsed_since",
            "cuEventElapsedTime",
            CUDA_ERROR_INVALID_HANDLE,
            |cur, arm| {
                let s = stream(cur)?;
                let (a, b) = (cur.create_event::<Timing>()?, cur.create_event::<Timing>()?);
                a.record(&s)?;
                b.record(&s)?;
                s.synchronize()?;
                arm();
                unit(b.elapsed_since(&a))
            }
        ),
        // --- modules, functions, launches ---------------------------------------------
        ctx!(
            "CurrentContext::load_ptx",
            "cuModuleLoadDataEx",
            CUDA_ERROR_INVALID_PTX,
            |cur, arm| {
                arm();
                unit(slices(cur))
            }
        ),
        ctx!(
            "CurrentContext::load_module",
            "cuModuleLoadDataEx",
            CUDA_ERROR_INVALID_IMAGE,
            |cur, arm| {
                arm();
                unit(cur.load_module(SLICES.as_bytes(), &JitOptions::default()))
            }
        ),
        ctx!(
            "CurrentContext::load_module_file",
            "cuModuleLoadDataEx",
            CUDA_ERROR_INVALID_IMAGE,
            |cur, arm| {
                arm();
                let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("kernels/slices.ptx");
                unit(cur.load_module_file(path, &JitOptions::default()))
            }
        ),
        ctx!(
            "Module::drop",
            "cuModuleUnload",
            CUDA_ERROR_INVALID_HANDLE,
            Swallowed,
            |cur, arm| {
                let m = slices(cur)?;
                arm();
                drop(m);
                Ok(())
            }
        ),
        // INVALID_VALUE is how cuFuncGetParamInfo says "past the last parameter": the
        // crate reads it as the end of the list (a SignatureMismatch here); every
        // other code is returned.
        ctx!(
            "Module::function",
            [
                ("cuModuleGetFunction", CUDA_ERROR_NOT_FOUND),
                ("cuFuncGetParamInfo", CUDA_ERROR_INVALID_HANDLE)
            ],
            |cur, arm| {
                let m = slices(cur)?;
                arm();
                unit(add_fn(&m))
            }
        ),
        ctx!(
            "Module::global",
            "cuModuleGetGlobal",
            CUDA_ERROR_NOT_FOUND,
            |cur, arm| {
                let m = cur.load_ptx(GLOBALS, &JitOptions::default())?;
                arm();
                unit(m.global::<u32>("evaluated"))
            }
        ),
        ctx!(
            "DeviceGlobal::read",
            "cuMemcpyDtoH",
            CUDA_ERROR_INVALID_VALUE,
            |cur, arm| {
                let m = cur.load_ptx(GLOBALS, &JitOptions::default())?;
                let g = m.global::<u32>("evaluated")?;
                arm();
                unit(g.read())
            }
        ),
        ctx!(
            "DeviceGlobal::write",
            "cuMemcpyHtoD",
            CUDA_ERROR_INVALID_VALUE,
            |cur, arm| {
                let m = cur.load_ptx(GLOBALS, &JitOptions::default())?;
                let mut g = m.global::<u32>("evaluated")?;
                arm();
                g.write(&2)
            }
        ),
        ctx!(
            "Function::attribute",
            "cuFuncGetAttribute",
            CUDA_ERROR_INVALID_VALUE,
            |cur, arm| {
                let m = slices(cur)?;
                let f = add_fn(&m)?;
                arm();
                unit(f.attribute(CUfunction_attribute::CU_FUNC_ATTRIBUTE_NUM_REGS))
            }
        ),
        ctx!(
            "Function::set_max_dynamic_shared_memory",
            "cuFuncSetAttribute",
            CUDA_ERROR_INVALID_VALUE,
            |cur, arm| {
                let m = slices(cur)?;
                let mut f = add_fn(&m)?;
                arm();
                f.set_max_dynamic_shared_memory(1024)
            }
        ),
        ctx!(
            "Function::set_cache_config",
            "cuFuncSetCacheConfig",
            CUDA_ERROR_INVALID_VALUE,
            |cur, arm| {
                let m = slices(cur)?;
                let mut f = add_fn(&m)?;
                arm();
                f.set_cache_config(CUfunc_cache::CU_FUNC_CACHE_PREFER_L1)
            }
        ),
        ctx!(
            "Function::available_dynamic_shared_memory",
            "cuOccupancyAvailableDynamicSMemPerBlock",
            CUDA_ERROR_INVALID_VALUE,
            |cur, arm| {
                let m = slices(cur)?;
                let f = add_fn(&m)?;
                arm();
                unit(f.available_dynamic_shared_memory(1, 64))
            }
        ),
        ctx!(
            "Function::max_active_blocks_per_multiprocessor",
            "cuOccupancyMaxActiveBlocksPerMultiprocessor",
            CUDA_ERROR_INVALID_VALUE,
            |cur, arm| {
                let m = slices(cur)?;
                let f = add_fn(&m)?;
                arm();
                unit(f.max_active_blocks_per_multiprocessor(64, 0))
            }
        ),
        ctx!(
            "Function::launch",
            "cuLaunchKernel",
            CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES,
            |cur, arm| {
                let m = slices(cur)?;
                let f = add_fn(&m)?;
                let (s, a, b, mut c) = (
                    stream(cur)?,
                    cur.alloc_zeros::<f32>(32)?,
                    cur.alloc_zeros::<f32>(32)?,
                    cur.alloc::<f32>(32)?,
                );
                arm();
                f.launch(&s, 1, 32, 0, (&a, &b, &mut c))
            }
        ),
        ctx!(
            "Function::launch_with",
            "cuLaunchKernelEx",
            CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES,
            |cur, arm| {
                let m = slices(cur)?;
                let f = add_fn(&m)?;
                let (s, a, b, mut c) = (
                    stream(cur)?,
                    cur.alloc_zeros::<f32>(32)?,
                    cur.alloc_zeros::<f32>(32)?,
                    cur.alloc::<f32>(32)?,
                );
                arm();
                f.launch_with(&s, &LaunchConfig::new(1, 32), (&a, &b, &mut c))
            }
        ),
        // A cluster makes the launch check the device's compute capability.
        ctx!(
            "Function::launch_with",
            "cuCtxGetDevice",
            CUDA_ERROR_INVALID_CONTEXT,
            |cur, arm| {
                let m = slices(cur)?;
                let f = add_fn(&m)?;
                let (s, a, b, mut c) = (
                    stream(cur)?,
                    cur.alloc_zeros::<f32>(64)?,
                    cur.alloc_zeros::<f32>(64)?,
                    cur.alloc::<f32>(64)?,
                );
                arm();
                f.launch_with(&s, &LaunchConfig::new(2, 32).cluster(2), (&a, &b, &mut c))
            }
        ),
        ctx!(
            "Function::validate_launch",
            "cuDeviceGetAttribute",
            CUDA_ERROR_INVALID_VALUE,
            |cur, arm| {
                let m = slices(cur)?;
                let f = add_fn(&m)?;
                arm();
                f.validate_launch(&LaunchConfig::new(2, 32).cluster(2))
            }
        ),
        ctx!(
            "Function::launch_cooperative",
            "cuLaunchKernelEx",
            CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE,
            |cur, arm| {
                let m = slices(cur)?;
                let f = add_fn(&m)?;
                let (s, a, b, mut c) = (
                    stream(cur)?,
                    cur.alloc_zeros::<f32>(32)?,
                    cur.alloc_zeros::<f32>(32)?,
                    cur.alloc::<f32>(32)?,
                );
                arm();
                f.launch_cooperative(&s, 1, 32, 0, (&a, &b, &mut c))
            }
        ),
        ctx!(
            "Function::set_non_portable_cluster_size_allowed",
            "cuFuncSetAttribute",
            CUDA_ERROR_INVALID_VALUE,
            |cur, arm| {
                let m = cur.load_ptx(CLUSTER, &JitOptions::default())?;
                // SAFETY: only its attributes are used.
                let mut f =
                    unsafe { m.function_unchecked::<(Out<u32>, Out<u32>)>("cluster_info")? };
                arm();
                f.set_non_portable_cluster_size_allowed(true)
            }
        ),
        ctx!(
            "Function::max_cluster_size",
            "cuFuncGetAttribute",
            CUDA_ERROR_INVALID_VALUE,
            |cur, arm| {
                let m = slices(cur)?;
                let f = add_fn(&m)?;
                arm();
                unit(f.max_cluster_size())
            }
        ),
        ctx!(
            "Function::max_active_clusters",
            "cuOccupancyMaxActiveClusters",
            CUDA_ERROR_INVALID_CLUSTER_SIZE,
            |cur, arm| {
                let m = slices(cur)?;
                let f = add_fn(&m)?;
                arm();
                unit(f.max_active_clusters(&LaunchConfig::new(2, 32).cluster(2)))
            }
        ),
        ctx!(
            "Function::max_potential_cluster_size",
            "cuOccupancyMaxPotentialClusterSize",
            CUDA_ERROR_INVALID_CLUSTER_SIZE,
            |cur, arm| {
                let m = slices(cur)?;
                let f = add_fn(&m)?;
                arm();
                unit(f.max_potential_cluster_size(&LaunchConfig::new(2, 32)))
            }
        ),
        // --- linker ---------------------------------------------------------------------
        ctx!(
            "CurrentContext::linker",
            "cuLinkCreate",
            CUDA_ERROR_INVALID_VALUE,
            |cur, arm| {
                arm();
                unit(cur.linker(&JitOptions::default()))
            }
        ),
        ctx!(
            "Linker::add",
            "cuLinkAddData",
            CUDA_ERROR_INVALID_PTX,
            |cur, arm| {
                let mut l = cur.linker(&JitOptions::default())?;
                arm();
                l.add(LinkInput::Ptx {
                    name: "a.ptx",
                    text: LINK_A,
                })
            }
        ),
        ctx!(
            "Linker::complete",
            [
                ("cuLinkComplete", CUDA_ERROR_NO_BINARY_FOR_GPU),
                ("cuModuleLoadDataEx", CUDA_ERROR_INVALID_IMAGE)
            ],
            |cur, arm| {
                let mut l = cur.linker(&JitOptions::default())?;
                l.add(LinkInput::Ptx {
                    name: "a.ptx",
                    text: LINK_A,
                })?;
                l.add(LinkInput::Ptx {
                    name: "b.ptx",
                    text: LINK_B,
                })?;
                arm();
                unit(l.complete())
            }
        ),
        ctx!(
            "Linker::drop",
            "cuLinkDestroy",
            CUDA_ERROR_INVALID_HANDLE,
            Refused,
            |cur, arm| {
                let l = cur.linker(&JitOptions::default())?;
                arm();
                drop(l);
                Ok(())
            }
        ),
        // --- libraries ------------------------------------------------------------------
        bare!(
            "Driver::load_library",
            "cuLibraryLoadData",
            CUDA_ERROR_INVALID_PTX,
            |d, arm| {
                arm();
                unit(d.load_library(SLICES.as_bytes(), &JitOptions::default()))
            }
        ),
        bare!(
            "Driver::load_library_file",
            "cuLibraryLoadData",
            CUDA_ERROR_INVALID_IMAGE,
            |d, arm| {
                arm();
                let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("kernels/slices.ptx");
                unit(d.load_library_file(path, &JitOptions::default()))
            }
        ),
        bare!(
            "Library::drop",
            "cuLibraryUnload",
            CUDA_ERROR_INVALID_HANDLE,
            Refused,
            |d, arm| {
                let lib = d.load_library(SLICES.as_bytes(), &JitOptions::default())?;
                arm();
                drop(lib);
                Ok(())
            }
        ),
        bare!(
            "Library::kernel_count",
            "cuLibraryGetKernelCount",
            CUDA_ERROR_INVALID_HANDLE,
            |d, arm| {
                let lib = d.load_library(SLICES.as_bytes(), &JitOptions::default())?;
                arm();
                unit(lib.kernel_count())
            }
        ),
        bare!(
            "Library::kernel_names",
            [
                ("cuLibraryEnumerateKernels", CUDA_ERROR_INVALID_HANDLE),
                ("cuKernelGetName", CUDA_ERROR_INVALID_HANDLE)
            ],
            |d, arm| {
                let lib = d.load_library(SLICES.as_bytes(), &JitOptions::default())?;
                arm();
                unit(lib.kernel_names())
            }
        ),
        // As cuFuncGetParamInfo: INVALID_VALUE ends the parameter list.
        bare!(
            "Library::kernel",
            [
                ("cuLibraryGetKernel", CUDA_ERROR_NOT_FOUND),
                ("cuKernelGetParamInfo", CUDA_ERROR_INVALID_HANDLE)
            ],
            |d, arm| {
                let lib = d.load_library(SLICES.as_bytes(), &JitOptions::default())?;
                arm();
                // SAFETY: as `add_fn`.
                unit(unsafe { lib.kernel::<Add>("vector_add") })
            }
        ),
        bare!(
            "Kernel::attribute",
            "cuKernelGetAttribute",
            CUDA_ERROR_INVALID_VALUE,
            |d, arm| {
                let lib = d.load_library(SLICES.as_bytes(), &JitOptions::default())?;
                // SAFETY: as `add_fn`.
                let k = unsafe { lib.kernel::<Add>("vector_add")? };
                arm();
                unit(k.attribute(
                    CUfunction_attribute::CU_FUNC_ATTRIBUTE_NUM_REGS,
                    &d.device(0)?,
                ))
            }
        ),
        bare!(
            "Kernel::set_max_dynamic_shared_memory",
            "cuKernelSetAttribute",
            CUDA_ERROR_INVALID_VALUE,
            |d, arm| {
                let lib = d.load_library(SLICES.as_bytes(), &JitOptions::default())?;
                // SAFETY: as `add_fn`.
                let k = unsafe { lib.kernel::<Add>("vector_add")? };
                arm();
                k.set_max_dynamic_shared_memory(&d.device(0)?, 1024)
            }
        ),
        ctx!(
            "Kernel::function",
            "cuKernelGetFunction",
            CUDA_ERROR_INVALID_CONTEXT,
            |cur, arm| {
                let lib = cur
                    .driver()
                    .load_library(SLICES.as_bytes(), &JitOptions::default())?;
                // SAFETY: as `add_fn`.
                let k = unsafe { lib.kernel::<Add>("vector_add")? };
                arm();
                unit(k.function(cur))
            }
        ),
        ctx!(
            "Library::global",
            "cuLibraryGetGlobal",
            CUDA_ERROR_NOT_FOUND,
            |cur, arm| {
                let lib = cur
                    .driver()
                    .load_library(GLOBALS.as_bytes(), &JitOptions::default())?;
                arm();
                unit(lib.global::<u32>(cur, "evaluated"))
            }
        ),
        // --- memory pools and stream-ordered allocation -------------------------------
        ctx!(
            "CurrentContext::default_memory_pool",
            "cuDeviceGetDefaultMemPool",
            CUDA_ERROR_NOT_SUPPORTED,
            |cur, arm| {
                arm();
                unit(cur.default_memory_pool())
            }
        ),
        ctx!(
            "CurrentContext::create_memory_pool",
            "cuMemPoolCreate",
            CUDA_ERROR_NOT_SUPPORTED,
            |cur, arm| {
                arm();
                unit(cur.create_memory_pool(None))
            }
        ),
        ctx!(
            "MemoryPool::drop",
            "cuMemPoolDestroy",
            CUDA_ERROR_INVALID_HANDLE,
            Refused,
            |cur, arm| {
                let p = cur.create_memory_pool(None)?;
                arm();
                drop(p);
                Ok(())
            }
        ),
        ctx!(
            "MemoryPool::release_threshold",
            "cuMemPoolGetAttribute",
            CUDA_ERROR_INVALID_VALUE,
            |cur, arm| {
                let p = cur.create_memory_pool(None)?;
                arm();
                unit(p.release_threshold())
            }
        ),
        ctx!(
            "MemoryPool::set_release_threshold",
            "cuMemPoolSetAttribute",
            CUDA_ERROR_INVALID_VALUE,
            |cur, arm| {
                let p = cur.create_memory_pool(None)?;
                arm();
                p.set_release_threshold(1 << 20)
            }
        ),
        ctx!(
            "MemoryPool::reuse",
            "cuMemPoolGetAttribute",
            CUDA_ERROR_INVALID_VALUE,
            |cur, arm| {
                let p = cur.create_memory_pool(None)?;
                arm();
                unit(p.reuse(ReusePolicy::AllowOpportunistic))
            }
        ),
        ctx!(
            "MemoryPool::set_reuse",
            "cuMemPoolSetAttribute",
            CUDA_ERROR_INVALID_VALUE,
            |cur, arm| {
                let p = cur.create_memory_pool(None)?;
                arm();
                p.set_reuse(ReusePolicy::AllowOpportunistic, false)
            }
        ),
        ctx!(
            "MemoryPool::used_high",
            "cuMemPoolGetAttribute",
            CUDA_ERROR_INVALID_VALUE,
            |cur, arm| {
                let p = cur.create_memory_pool(None)?;
                arm();
                unit(p.used_high())
            }
        ),
        ctx!(
            "MemoryPool::reset_high_watermarks",
            "cuMemPoolSetAttribute",
            CUDA_ERROR_INVALID_VALUE,
            |cur, arm| {
                let p = cur.create_memory_pool(None)?;
                arm();
                p.reset_high_watermarks()
            }
        ),
        ctx!(
            "MemoryPool::trim_to",
            "cuMemPoolTrimTo",
            CUDA_ERROR_INVALID_HANDLE,
            |cur, arm| {
                let p = cur.create_memory_pool(None)?;
                arm();
                p.trim_to(0)
            }
        ),
        ctx!(
            "MemoryPool::set_access",
            "cuMemPoolSetAccess",
            CUDA_ERROR_INVALID_DEVICE,
            |cur, arm| {
                let p = cur.create_memory_pool(None)?;
                let d1 = dev1(cur)?;
                arm();
                p.set_access(&d1, Access::ReadWrite)
            }
        ),
        ctx!(
            "MemoryPool::access",
            "cuMemPoolGetAccess",
            CUDA_ERROR_INVALID_DEVICE,
            |cur, arm| {
                let p = cur.create_memory_pool(None)?;
                let d1 = dev1(cur)?;
                arm();
                unit(p.access(&d1))
            }
        ),
        ctx!(
            "Stream::alloc_async",
            "cuMemAllocAsync",
            CUDA_ERROR_OUT_OF_MEMORY,
            |cur, arm| {
                let s = stream(cur)?;
                arm();
                unit(s.alloc_async::<u32>(64))
            }
        ),
        ctx!(
            "Stream::alloc_from_pool",
            "cuMemAllocFromPoolAsync",
            CUDA_ERROR_OUT_OF_MEMORY,
            |cur, arm| {
                let (s, p) = (stream(cur)?, cur.create_memory_pool(None)?);
                arm();
                unit(s.alloc_from_pool::<u32>(&p, 64))
            }
        ),
        ctx!(
            "StreamBuffer::free_async",
            "cuMemFreeAsync",
            CUDA_ERROR_INVALID_VALUE,
            ErrorRefused,
            |cur, arm| {
                let s = stream(cur)?;
                let b = s.alloc_async::<u32>(64)?;
                arm();
                b.free_async()
            }
        ),
        ctx!(
            "StreamBuffer::drop",
            "cuMemFreeAsync",
            CUDA_ERROR_INVALID_VALUE,
            Refused,
            |cur, arm| {
                let s = stream(cur)?;
                let b = s.alloc_async::<u32>(64)?;
                arm();
                drop(b);
                Ok(())
            }
        ),
        // --- virtual memory ------------------------------------------------------------
        ctx!(
            "CurrentContext::granularity",
            "cuMemGetAllocationGranularity",
            CUDA_ERROR_INVALID_VALUE,
            |cur, arm| {
                arm();
                unit(cur.granularity())
            }
        ),
        ctx!(
            "CurrentContext::create_physical",
            "cuMemCreate",
            CUDA_ERROR_OUT_OF_MEMORY,
            |cur, arm| {
                let g = cur.granularity()?.minimum();
                arm();
                unit(cur.create_physical(g))
            }
        ),
        ctx!(
            "CurrentContext::create_physical_shareable",
            "cuMemCreate",
            CUDA_ERROR_OUT_OF_MEMORY,
            |cur, arm| {
                let g = cur.granularity()?.minimum();
                arm();
                unit(cur.create_physical_shareable(g))
            }
        ),
        ctx!(
            "PhysicalMemory::export_fd",
            "cuMemExportToShareableHandle",
            CUDA_ERROR_INVALID_VALUE,
            |cur, arm| {
                let p = cur.create_physical_shareable(cur.granularity()?.minimum())?;
                arm();
                unit(p.export_fd())
            }
        ),
        ctx!(
            "CurrentContext::import_physical",
            [
                ("cuMemImportFromShareableHandle", CUDA_ERROR_INVALID_VALUE),
                (
                    "cuMemGetAllocationPropertiesFromHandle",
                    CUDA_ERROR_INVALID_VALUE
                )
            ],
            |cur, arm| {
                let g = cur.granularity()?.minimum();
                let p = cur.create_physical_shareable(g)?;
                let fd = p.export_fd()?;
                arm();
                // SAFETY: the imported memory is never mapped.
                unit(unsafe { cur.import_physical(std::os::fd::AsFd::as_fd(&fd), g) })
            }
        ),
        ctx!(
            "PhysicalMemory::drop",
            "cuMemRelease",
            CUDA_ERROR_INVALID_VALUE,
            Refused,
            |cur, arm| {
                let p = cur.create_physical(cur.granularity()?.minimum())?;
                arm();
                drop(p);
                Ok(())
            }
        ),
        ctx!(
            "CurrentContext::reserve_addresses",
            "cuMemAddressReserve",
            CUDA_ERROR_OUT_OF_MEMORY,
            |cur, arm| {
                let g = cur.granularity()?.minimum();
                arm();
                unit(cur.reserve_addresses(4 * g))
            }
        ),
        ctx!(
            "AddressRange::map",
            [
                ("cuMemMap", CUDA_ERROR_OUT_OF_MEMORY),
                ("cuMemSetAccess", CUDA_ERROR_INVALID_VALUE)
            ],
            |cur, arm| {
                let g = cur.granularity()?.minimum();
                let mut range = cur.reserve_addresses(g)?;
                let p = cur.create_physical(g)?;
                arm();
                range.map(0, p).map_err(CudaError::from)
            }
        ),
        ctx!(
            "AddressRange::unmap",
            [
                ("cuCtxSynchronize", CUDA_ERROR_INVALID_CONTEXT),
                ("cuMemUnmap", CUDA_ERROR_INVALID_VALUE)
            ],
            |cur, arm| {
                let g = cur.granularity()?.minimum();
                let mut range = cur.reserve_addresses(g)?;
                range.map(0, cur.create_physical(g)?)?;
                arm();
                unit(range.unmap(0))
            }
        ),
        ctx!(
            "AddressRange::drop",
            [
                ("cuCtxPushCurrent", CUDA_ERROR_INVALID_CONTEXT),
                ("cuMemUnmap", CUDA_ERROR_INVALID_VALUE),
                ("cuMemAddressFree", CUDA_ERROR_INVALID_VALUE)
            ],
            Refused,
            |cur, arm| {
                let g = cur.granularity()?.minimum();
                let mut range = cur.reserve_addresses(g)?;
                range.map(0, cur.create_physical(g)?)?;
                arm();
                drop(range);
                Ok(())
            }
        ),
        // --- external resources --------------------------------------------------------
        ctx!(
            "CurrentContext::import_external_memory",
            "cuImportExternalMemory",
            CUDA_ERROR_INVALID_VALUE,
            |cur, arm| {
                let g = cur.granularity()?.minimum();
                let p = cur.create_physical_shareable(g)?;
                let fd = p.export_fd()?;
                arm();
                // SAFETY: the allocation's own export; never mapped elsewhere.
                unit(
                    unsafe { cur.import_external_memory(fd, g as u64, false) }
                        .map_err(CudaError::from),
                )
            }
        ),
        ctx!(
            "ExternalMemory::buffer",
            "cuExternalMemoryGetMappedBuffer",
            CUDA_ERROR_OUT_OF_MEMORY,
            |cur, arm| {
                let g = cur.granularity()?.minimum();
                let p = cur.create_physical_shareable(g)?;
                // SAFETY: as above.
                let m = unsafe { cur.import_external_memory(p.export_fd()?, g as u64, false)? };
                arm();
                unit(m.buffer::<u32>(0, 64))
            }
        ),
        ctx!(
            "ExternalBuffer::drop",
            "cuMemFree",
            CUDA_ERROR_INVALID_VALUE,
            Swallowed,
            |cur, arm| {
                let g = cur.granularity()?.minimum();
                let p = cur.create_physical_shareable(g)?;
                // SAFETY: as above.
                let m = unsafe { cur.import_external_memory(p.export_fd()?, g as u64, false)? };
                let b = m.buffer::<u32>(0, 64)?;
                arm();
                drop(b);
                Ok(())
            }
        ),
        ctx!(
            "ExternalMemory::drop",
            "cuDestroyExternalMemory",
            CUDA_ERROR_INVALID_VALUE,
            Refused,
            |cur, arm| {
                let g = cur.granularity()?.minimum();
                let p = cur.create_physical_shareable(g)?;
                // SAFETY: as above.
                let m = unsafe { cur.import_external_memory(p.export_fd()?, g as u64, false)? };
                arm();
                drop(m);
                Ok(())
            }
        ),
        ctx!(
            "CurrentContext::import_external_semaphore",
            "cuImportExternalSemaphore",
            CUDA_ERROR_INVALID_VALUE,
            |cur, arm| {
                let fd = softcuda::control::external_semaphore_fd().unwrap();
                arm();
                // SAFETY: a semaphore file of softcuda's, used only here.
                unit(
                    unsafe { cur.import_external_semaphore::<Timeline>(fd) }
                        .map_err(CudaError::from),
                )
            }
        ),
        ctx!(
            "ExternalSemaphore::signal",
            "cuSignalExternalSemaphoresAsync",
            CUDA_ERROR_INVALID_HANDLE,
            |cur, arm| {
                let fd = softcuda::control::external_semaphore_fd().unwrap();
                // SAFETY: as above.
                let sem = unsafe { cur.import_external_semaphore::<Timeline>(fd)? };
                let s = stream(cur)?;
                arm();
                sem.signal(&s, 1)
            }
        ),
        ctx!(
            "ExternalSemaphore::wait",
            "cuWaitExternalSemaphoresAsync",
            CUDA_ERROR_INVALID_HANDLE,
            |cur, arm| {
                let fd = softcuda::control::external_semaphore_fd().unwrap();
                // SAFETY: as above.
                let sem = unsafe { cur.import_external_semaphore::<Binary>(fd)? };
                let s = stream(cur)?;
                sem.signal(&s)?;
                arm();
                sem.wait(&s)
            }
        ),
        ctx!(
            "ExternalSemaphore::drop",
            "cuDestroyExternalSemaphore",
            CUDA_ERROR_INVALID_VALUE,
            Refused,
            |cur, arm| {
                let fd = softcuda::control::external_semaphore_fd().unwrap();
                // SAFETY: as above.
                let sem = unsafe { cur.import_external_semaphore::<Binary>(fd)? };
                arm();
                drop(sem);
                Ok(())
            }
        ),
        // --- arrays, textures and surfaces -----------------------------------------------
        ctx!(
            "CurrentContext::array",
            "cuArray3DCreate",
            CUDA_ERROR_OUT_OF_MEMORY,
            |cur, arm| {
                arm();
                unit(cur.array::<f32>(ArrayShape::d2(16, 8)))
            }
        ),
        ctx!(
            "CurrentContext::storage_array",
            "cuArray3DCreate",
            CUDA_ERROR_OUT_OF_MEMORY,
            |cur, arm| {
                arm();
                unit(cur.storage_array::<[u8; 4]>(ArrayShape::d1(64)))
            }
        ),
        ctx!(
            "CurrentContext::mipmapped_array",
            [
                ("cuMipmappedArrayCreate", CUDA_ERROR_OUT_OF_MEMORY),
                ("cuMipmappedArrayGetLevel", CUDA_ERROR_INVALID_VALUE)
            ],
            |cur, arm| {
                arm();
                unit(cur.mipmapped_array::<f32>(ArrayShape::d2(16, 8), 3))
            }
        ),
        ctx!(
            "Array::copy_from_host",
            "cuMemcpy3D",
            CUDA_ERROR_INVALID_VALUE,
            |cur, arm| {
                let mut a = cur.array::<f32>(ArrayShape::d2(16, 8))?;
                arm();
                a.copy_from_host(&[1.0; 128])
            }
        ),
        ctx!(
            "Array::to_vec",
            "cuMemcpy3D",
            CUDA_ERROR_INVALID_VALUE,
            |cur, arm| {
                let a = cur.array::<f32>(ArrayShape::d3(4, 4, 4))?;
                arm();
                unit(a.to_vec())
            }
        ),
        ctx!(
            "Array::copy_to",
            [
                ("cuMemcpy3D", CUDA_ERROR_INVALID_VALUE),
                ("cuStreamSynchronize", CUDA_ERROR_ILLEGAL_ADDRESS)
            ],
            |cur, arm| {
                let a = cur.array::<u32>(ArrayShape::d1(64))?;
                let mut b = cur.alloc_zeros::<u32>(64)?;
                arm();
                a.copy_to(&mut b)
            }
        ),
        ctx!(
            "Array::copy_from",
            "cuMemcpy3D",
            CUDA_ERROR_INVALID_VALUE,
            |cur, arm| {
                let mut a = cur.array::<u32>(ArrayShape::d1(64))?;
                let b = cur.alloc_zeros::<u32>(64)?;
                arm();
                a.copy_from(&b)
            }
        ),
        ctx!(
            "MipLevelMut::copy_from_host",
            "cuMemcpy3D",
            CUDA_ERROR_INVALID_VALUE,
            |cur, arm| {
                let mut m = cur.mipmapped_array::<f32>(ArrayShape::d2(8, 8), 2)?;
                let mut level = m.level_mut(1)?;
                arm();
                level.copy_from_host(&[2.0; 16])
            }
        ),
        ctx!(
            "Array::drop",
            [
                ("cuCtxSynchronize", CUDA_ERROR_INVALID_CONTEXT),
                ("cuArrayDestroy", CUDA_ERROR_INVALID_VALUE)
            ],
            Swallowed,
            |cur, arm| {
                let a = cur.array::<f32>(ArrayShape::d2(16, 8))?;
                arm();
                drop(a);
                Ok(())
            }
        ),
        ctx!(
            "MipmappedArray::drop",
            "cuMipmappedArrayDestroy",
            CUDA_ERROR_INVALID_VALUE,
            Swallowed,
            |cur, arm| {
                let m = cur.mipmapped_array::<f32>(ArrayShape::d2(16, 8), 2)?;
                arm();
                drop(m);
                Ok(())
            }
        ),
        ctx!(
            "Array::texture",
            "cuTexObjectCreate",
            CUDA_ERROR_INVALID_VALUE,
            |cur, arm| {
                let a = cur.array::<f32>(ArrayShape::d2(16, 8))?;
                arm();
                unit(a.texture(&TextureDesc::default()))
            }
        ),
        ctx!(
            "MipmappedArray::texture",
            "cuTexObjectCreate",
            CUDA_ERROR_INVALID_VALUE,
            |cur, arm| {
                let m = cur.mipmapped_array::<f32>(ArrayShape::d2(16, 8), 2)?;
                arm();
                unit(m.texture(&TextureDesc::default()))
            }
        ),
        ctx!(
            "Array::surface",
            "cuSurfObjectCreate",
            CUDA_ERROR_INVALID_VALUE,
            |cur, arm| {
                let mut a = cur.storage_array::<u32>(ArrayShape::d2(16, 8))?;
                arm();
                unit(a.surface())
            }
        ),
        ctx!(
            "TextureObject::drop",
            "cuTexObjectDestroy",
            CUDA_ERROR_INVALID_VALUE,
            Swallowed,
            |cur, arm| {
                let a = cur.array::<f32>(ArrayShape::d2(16, 8))?;
                let t = a.texture(&TextureDesc::default())?;
                arm();
                drop(t);
                Ok(())
            }
        ),
        ctx!(
            "SurfaceObject::drop",
            "cuSurfObjectDestroy",
            CUDA_ERROR_INVALID_VALUE,
            Swallowed,
            |cur, arm| {
                let mut a = cur.storage_array::<u32>(ArrayShape::d2(16, 8))?;
                let s = a.surface()?;
                arm();
                drop(s);
                Ok(())
            }
        ),
        // --- green contexts ---------------------------------------------------------------
        bare!(
            "Device::sm_resource",
            "cuDeviceGetDevResource",
            CUDA_ERROR_INVALID_RESOURCE_TYPE,
            |d, arm| {
                let dev = d.device(0)?;
                arm();
                unit(dev.sm_resource())
            }
        ),
        bare!(
            "SmResource::split",
            "cuDevSmResourceSplitByCount",
            CUDA_ERROR_INVALID_RESOURCE_CONFIGURATION,
            |d, arm| {
                let all = d.device(0)?.sm_resource()?;
                arm();
                unit(all.split(2, 8, SplitFlags::empty()))
            }
        ),
        bare!(
            "SmResource::groups_possible",
            "cuDevSmResourceSplitByCount",
            CUDA_ERROR_INVALID_RESOURCE_CONFIGURATION,
            |d, arm| {
                let all = d.device(0)?.sm_resource()?;
                arm();
                unit(all.groups_possible(8, SplitFlags::empty()))
            }
        ),
        bare!(
            "GreenContext::new",
            [
                (
                    "cuDevResourceGenerateDesc",
                    CUDA_ERROR_INVALID_RESOURCE_CONFIGURATION
                ),
                ("cuGreenCtxCreate", CUDA_ERROR_OUT_OF_MEMORY),
                ("cuCtxFromGreenCtx", CUDA_ERROR_INVALID_VALUE)
            ],
            |d, arm| {
                let dev = d.device(0)?;
                let split = dev.sm_resource()?.split(2, 8, SplitFlags::empty())?;
                arm();
                unit(GreenContext::new(&dev, &split.groups[..1]))
            }
        ),
        bare!(
            "GreenContext::sm_resource",
            "cuGreenCtxGetDevResource",
            CUDA_ERROR_INVALID_VALUE,
            |d, arm| {
                let dev = d.device(0)?;
                let split = dev.sm_resource()?.split(2, 8, SplitFlags::empty())?;
                let green = GreenContext::new(&dev, &split.groups[..1])?;
                arm();
                unit(green.sm_resource())
            }
        ),
        bare!(
            "GreenContext::bind",
            "cuCtxPushCurrent",
            CUDA_ERROR_INVALID_CONTEXT,
            |d, arm| {
                let dev = d.device(0)?;
                let split = dev.sm_resource()?.split(2, 8, SplitFlags::empty())?;
                let green = GreenContext::new(&dev, &split.groups[..1])?;
                arm();
                let r = green.bind(|_| ());
                disarm();
                r
            }
        ),
        bare!(
            "GreenContext::drop",
            [
                ("cuCtxPushCurrent", CUDA_ERROR_INVALID_CONTEXT),
                ("cuGreenCtxDestroy", CUDA_ERROR_INVALID_VALUE)
            ],
            Refused,
            |d, arm| {
                let dev = d.device(0)?;
                let split = dev.sm_resource()?.split(2, 8, SplitFlags::empty())?;
                let green = GreenContext::new(&dev, &split.groups[..1])?;
                arm();
                drop(green);
                Ok(())
            }
        ),
        ctx!(
            "CurrentContext::sm_resource",
            "cuCtxGetDevResource",
            CUDA_ERROR_INVALID_CONTEXT,
            |cur, arm| {
                arm();
                unit(cur.sm_resource())
            }
        ),
        ctx!(
            "CurrentContext::push_green",
            "cuCtxPushCurrent",
            CUDA_ERROR_INVALID_CONTEXT,
            |cur, arm| {
                let dev = cur.driver().device(0)?;
                let split = dev.sm_resource()?.split(2, 8, SplitFlags::empty())?;
                let green = GreenContext::new(&dev, &split.groups[..1])?;
                arm();
                let r = cur.push_green(&green, |_| ());
                disarm();
                r
            }
        ),
        // --- inter-process communication (one process: softcuda opens its own handles) ---
        ctx!(
            "DeviceBuffer::ipc_handle",
            "cuIpcGetMemHandle",
            CUDA_ERROR_INVALID_VALUE,
            |cur, arm| {
                let b = cur.alloc_zeros::<u32>(64)?;
                arm();
                unit(b.ipc_handle())
            }
        ),
        ctx!(
            "CurrentContext::open_ipc_memory",
            [
                ("cuIpcOpenMemHandle", CUDA_ERROR_INVALID_HANDLE),
                ("cuMemGetAddressRange", CUDA_ERROR_INVALID_VALUE)
            ],
            |cur, arm| {
                let b = cur.alloc_zeros::<u32>(64)?;
                let h = b.ipc_handle()?;
                arm();
                // SAFETY: softcuda opens a handle of this process as the buffer's own
                // address; nothing here uses the opening beside the buffer.
                unit(unsafe { cur.open_ipc_memory(&h) })
            }
        ),
        ctx!(
            "IpcMemory::drop",
            [
                ("cuCtxSynchronize", CUDA_ERROR_INVALID_CONTEXT),
                ("cuIpcCloseMemHandle", CUDA_ERROR_INVALID_VALUE)
            ],
            Swallowed,
            |cur, arm| {
                let b = cur.alloc_zeros::<u32>(64)?;
                // SAFETY: as above.
                let m = unsafe { cur.open_ipc_memory(&b.ipc_handle()?)? };
                arm();
                drop(m);
                Ok(())
            }
        ),
        ctx!(
            "Event::ipc_handle",
            "cuIpcGetEventHandle",
            CUDA_ERROR_INVALID_VALUE,
            |cur, arm| {
                let e = cur.create_event::<Interprocess>()?;
                arm();
                unit(e.ipc_handle())
            }
        ),
        ctx!(
            "CurrentContext::open_ipc_event",
            "cuIpcOpenEventHandle",
            CUDA_ERROR_INVALID_VALUE,
            |cur, arm| {
                let e = cur.create_event::<Interprocess>()?;
                let h = e.ipc_handle()?;
                arm();
                // SAFETY: softcuda opens an event of this process; the exported event
                // outlives the opening.
                unit(unsafe { cur.open_ipc_event(&h) })
            }
        ),
        ctx!(
            "MemoryPool::export_fd",
            "cuMemPoolExportToShareableHandle",
            CUDA_ERROR_INVALID_VALUE,
            |cur, arm| {
                let pool = cur.create_shareable_memory_pool(None)?;
                arm();
                unit(pool.export_fd())
            }
        ),
        ctx!(
            "StreamBuffer::pool_pointer",
            "cuMemPoolExportPointer",
            CUDA_ERROR_INVALID_VALUE,
            ErrorHeld,
            |cur, arm| {
                let pool = cur.create_shareable_memory_pool(None)?;
                let s = stream(cur)?;
                let b = s.alloc_from_pool::<u32>(&pool, 64)?;
                arm();
                unit(b.pool_pointer())
            }
        ),
        ctx!(
            "CurrentContext::import_memory_pool",
            "cuMemPoolImportFromShareableHandle",
            CUDA_ERROR_INVALID_VALUE,
            |cur, arm| {
                use std::os::fd::AsFd;
                let pool = cur.create_shareable_memory_pool(None)?;
                let fd = pool.export_fd()?;
                arm();
                // SAFETY: softcuda imports a pool of this process; the pool outlives
                // the import.
                unit(unsafe { cur.import_memory_pool(fd.as_fd()) })
            }
        ),
        ctx!(
            "ImportedPool::import",
            [
                ("cuMemPoolImportPointer", CUDA_ERROR_INVALID_VALUE),
                ("cuMemGetAddressRange", CUDA_ERROR_INVALID_VALUE)
            ],
            ErrorHeld,
            |cur, arm| {
                use std::os::fd::AsFd;
                let pool = cur.create_shareable_memory_pool(None)?;
                let s = stream(cur)?;
                let b = s.alloc_from_pool::<u32>(&pool, 64)?;
                let fd = pool.export_fd()?;
                // SAFETY: as above; the allocation outlives the import.
                let theirs = unsafe { cur.import_memory_pool(fd.as_fd())? };
                let pointer = b.pool_pointer()?;
                arm();
                // SAFETY: as above.
                unit(unsafe { theirs.import::<u32>(&pointer, 64) })
            }
        ),
        ctx!(
            "ImportedBuffer::drop",
            "cuMemFree",
            CUDA_ERROR_INVALID_VALUE,
            Swallowed,
            |cur, arm| {
                use std::os::fd::AsFd;
                let pool = cur.create_shareable_memory_pool(None)?;
                let s = stream(cur)?;
                let b = s.alloc_from_pool::<u32>(&pool, 64)?;
                let fd = pool.export_fd()?;
                // SAFETY: as above.
                let theirs = unsafe { cur.import_memory_pool(fd.as_fd())? };
                // SAFETY: as above.
                let imported = unsafe { theirs.import::<u32>(&b.pool_pointer()?, 64)? };
                arm();
                drop(imported);
                Ok(())
            }
        ),
        ctx!(
            "ImportedPool::drop",
            "cuMemPoolDestroy",
            CUDA_ERROR_INVALID_VALUE,
            Refused,
            |cur, arm| {
                use std::os::fd::AsFd;
                let pool = cur.create_shareable_memory_pool(None)?;
                let fd = pool.export_fd()?;
                // SAFETY: as above.
                let theirs = unsafe { cur.import_memory_pool(fd.as_fd())? };
                arm();
                drop(theirs);
                Ok(())
            }
        ),
        // --- managed memory -------------------------------------------------------------
        ctx!(
            "CurrentContext::alloc_managed",
            [
                ("cuMemAllocManaged", CUDA_ERROR_OUT_OF_MEMORY),
                ("cuMemsetD8", CUDA_ERROR_INVALID_VALUE),
                ("cuDeviceGetCount", CUDA_ERROR_INVALID_VALUE)
            ],
            |cur, arm| {
                arm();
                unit(cur.alloc_managed::<u32>(64, Attach::Global))
            }
        ),
        ctx!(
            "ManagedBuffer::drop",
            "cuMemFree",
            CUDA_ERROR_INVALID_VALUE,
            Swallowed,
            |cur, arm| {
                let m = cur.alloc_managed::<u32>(64, Attach::Global)?;
                arm();
                drop(m);
                Ok(())
            }
        ),
        ctx!(
            "ManagedBuffer::host",
            "cuCtxSynchronize",
            CUDA_ERROR_INVALID_CONTEXT,
            |cur, arm| {
                let mut m = cur.alloc_managed::<u32>(64, Attach::Global)?;
                arm();
                unit(m.host())
            }
        ),
        ctx!(
            "ManagedBuffer::attach",
            "cuStreamAttachMemAsync",
            CUDA_ERROR_INVALID_VALUE,
            |cur, arm| {
                let s = stream(cur)?;
                let mut m = cur.alloc_managed::<u32>(64, Attach::Global)?;
                arm();
                m.attach(&s, Attach::Host)
            }
        ),
        ctx!(
            "ManagedBuffer::prefetch",
            "cuMemPrefetchAsync",
            CUDA_ERROR_INVALID_DEVICE,
            |cur, arm| {
                let s = stream(cur)?;
                let m = cur.alloc_managed::<u32>(64, Attach::Global)?;
                let d0 = cur.device()?;
                arm();
                m.prefetch(&s, Location::Device(d0))
            }
        ),
        ctx!(
            "ManagedBuffer::advise",
            "cuMemAdvise",
            CUDA_ERROR_INVALID_DEVICE,
            |cur, arm| {
                let m = cur.alloc_managed::<u32>(64, Attach::Global)?;
                arm();
                m.advise(Advice::SetReadMostly)
            }
        ),
        ctx!(
            "ManagedBuffer::read_mostly",
            "cuMemRangeGetAttribute",
            CUDA_ERROR_INVALID_VALUE,
            |cur, arm| {
                let m = cur.alloc_managed::<u32>(64, Attach::Global)?;
                arm();
                unit(m.read_mostly())
            }
        ),
        // --- tensor maps ------------------------------------------------------------------
        ctx!(
            "TensorMapBuilder::encode (tiled)",
            "cuTensorMapEncodeTiled",
            CUDA_ERROR_INVALID_VALUE,
            |cur, arm| {
                let b = cur.alloc::<u8>(8192)?;
                arm();
                unit(TensorMap::<_, SweepTiled>::tiled(b.as_slice(), &DIMS, &STRIDES).encode(cur))
            }
        ),
        ctx!(
            "TensorMapBuilder::encode (im2col)",
            "cuTensorMapEncodeIm2col",
            CUDA_ERROR_INVALID_VALUE,
            |cur, arm| {
                let b = cur.alloc::<u8>(8192)?;
                arm();
                unit(
                    TensorMap::<_, SweepIm2col>::im2col(b.as_slice(), &DIMS, &STRIDES, &[0], &[0])
                        .encode(cur),
                )
            }
        ),
        // im2col-wide maps need compute capability 10.0: a device of its own.
        bare!(
            "TensorMapBuilder::encode (im2col wide)",
            "cuTensorMapEncodeIm2colWide",
            CUDA_ERROR_INVALID_VALUE,
            |d, arm| {
                let _restore = Blackwell::configure();
                let ctx = Context::new(&d.device(0)?, CUctx_flags::empty())?;
                flat(ctx.bind(|cur| {
                    // f16 NWC, C = 32, W = 64, N = 2 (as tests/tensor_map.rs).
                    let b = cur.alloc::<u16>(32 * 64 * 2)?;
                    arm();
                    unit(
                        TensorMap::<_, SweepIm2colWide>::im2col_wide(
                            b.as_slice(),
                            &[32, 64, 2],
                            &[64, 4096],
                            -2,
                            2,
                        )
                        .encode(cur),
                    )
                }))
            }
        ),
        ctx!(
            "TensorMap::replace_address",
            "cuTensorMapReplaceAddress",
            CUDA_ERROR_INVALID_VALUE,
            |cur, arm| {
                let b = cur.alloc::<u8>(8192)?;
                let c = cur.alloc::<u8>(8192)?;
                let mut map =
                    TensorMap::<_, SweepTiled>::tiled(b.as_slice(), &DIMS, &STRIDES).encode(cur)?;
                arm();
                map.replace_address(c.as_slice())
            }
        ),
        // --- graphs -----------------------------------------------------------------------
        ctx!(
            "CurrentContext::create_graph",
            "cuGraphCreate",
            CUDA_ERROR_OUT_OF_MEMORY,
            |cur, arm| {
                arm();
                unit(cur.create_graph())
            }
        ),
        ctx!(
            "Graph::add_copy_to_device",
            [
                ("cuCtxGetCurrent", CUDA_ERROR_INVALID_CONTEXT),
                ("cuGraphAddMemcpyNode", CUDA_ERROR_INVALID_VALUE)
            ],
            |cur, arm| {
                let b = cur.alloc::<u32>(4)?;
                let h = [1u32; 4];
                let mut g = cur.create_graph()?;
                arm();
                unit(g.add_copy_to_device(&[], &b, &h))
            }
        ),
        ctx!(
            "Graph::drop",
            "cuGraphDestroy",
            CUDA_ERROR_INVALID_VALUE,
            Refused,
            |cur, arm| {
                let g = cur.create_graph()?;
                arm();
                drop(g);
                Ok(())
            }
        ),
        ctx!(
            "Graph::add_empty",
            "cuGraphAddEmptyNode",
            CUDA_ERROR_INVALID_VALUE,
            |cur, arm| {
                let mut g = cur.create_graph()?;
                arm();
                unit(g.add_empty(&[]))
            }
        ),
        ctx!(
            "Graph::add_kernel",
            "cuGraphAddKernelNode",
            CUDA_ERROR_INVALID_VALUE,
            |cur, arm| {
                let m = slices(cur)?;
                let f = add_fn(&m)?;
                let (a, b, c) = (
                    cur.alloc::<f32>(32)?,
                    cur.alloc::<f32>(32)?,
                    cur.alloc::<f32>(32)?,
                );
                let mut g = cur.create_graph()?;
                arm();
                unit(g.add_kernel(&[], &f, 1, 32, 0, (&a, &b, &c)))
            }
        ),
        ctx!(
            "Graph::add_copy_to_host",
            "cuGraphAddMemcpyNode",
            CUDA_ERROR_INVALID_VALUE,
            |cur, arm| {
                let b = cur.alloc::<u32>(4)?;
                let mut h = [1u32; 4];
                let mut g = cur.create_graph()?;
                arm();
                unit(g.add_copy_to_host(&[], &mut h, &b))
            }
        ),
        ctx!(
            "Graph::add_copy",
            "cuGraphAddMemcpyNode",
            CUDA_ERROR_INVALID_VALUE,
            |cur, arm| {
                let (a, b) = (cur.alloc::<u32>(4)?, cur.alloc::<u32>(4)?);
                let mut g = cur.create_graph()?;
                arm();
                unit(g.add_copy(&[], &a, &b))
            }
        ),
        ctx!(
            "Graph::add_fill",
            "cuGraphAddMemsetNode",
            CUDA_ERROR_INVALID_VALUE,
            |cur, arm| {
                let b = cur.alloc::<u32>(4)?;
                let mut g = cur.create_graph()?;
                arm();
                unit(g.add_fill(&[], &b, 7u32))
            }
        ),
        ctx!(
            "Graph::add_host_fn",
            "cuGraphAddHostNode",
            CUDA_ERROR_INVALID_VALUE,
            |cur, arm| {
                let mut g = cur.create_graph()?;
                arm();
                unit(g.add_host_fn(&[], || {}))
            }
        ),
        ctx!(
            "Graph::add_event_record",
            "cuGraphAddEventRecordNode",
            CUDA_ERROR_INVALID_VALUE,
            |cur, arm| {
                let e = cur.create_event::<NoTiming>()?;
                let mut g = cur.create_graph()?;
                arm();
                unit(g.add_event_record(&[], &e))
            }
        ),
        ctx!(
            "Graph::add_event_wait",
            "cuGraphAddEventWaitNode",
            CUDA_ERROR_INVALID_VALUE,
            |cur, arm| {
                let e = cur.create_event::<NoTiming>()?;
                let mut g = cur.create_graph()?;
                arm();
                unit(g.add_event_wait(&[], &e))
            }
        ),
        ctx!(
            "Graph::add_dependency",
            "cuGraphAddDependencies",
            CUDA_ERROR_INVALID_VALUE,
            |cur, arm| {
                let mut g = cur.create_graph()?;
                let (a, b) = (g.add_empty(&[])?, g.add_empty(&[])?);
                arm();
                g.add_dependency(a, b)
            }
        ),
        ctx!(
            "Graph::node_type",
            "cuGraphNodeGetType",
            CUDA_ERROR_INVALID_VALUE,
            |cur, arm| {
                let mut g = cur.create_graph()?;
                let a = g.add_empty(&[])?;
                arm();
                unit(g.node_type(a))
            }
        ),
        ctx!(
            "Graph::driver_node_count",
            "cuGraphGetNodes",
            CUDA_ERROR_INVALID_VALUE,
            |cur, arm| {
                let mut g = cur.create_graph()?;
                g.add_empty(&[])?;
                arm();
                unit(g.driver_node_count())
            }
        ),
        ctx!(
            "Graph::write_dot",
            "cuGraphDebugDotPrint",
            CUDA_ERROR_OPERATING_SYSTEM,
            |cur, arm| {
                let mut g = cur.create_graph()?;
                g.add_empty(&[])?;
                let path =
                    std::env::temp_dir().join(format!("fault_sweep_{}.dot", std::process::id()));
                arm();
                let r = g.write_dot(&path);
                let _ = std::fs::remove_file(&path);
                r
            }
        ),
        ctx!(
            "Graph::add_child",
            "cuGraphAddChildGraphNode",
            CUDA_ERROR_INVALID_VALUE,
            |cur, arm| {
                let mut g = cur.create_graph()?;
                let mut child = cur.create_graph()?;
                child.add_empty(&[])?;
                arm();
                unit(g.add_child(&[], &child))
            }
        ),
        ctx!(
            "Graph::try_clone",
            [
                ("cuGraphClone", CUDA_ERROR_OUT_OF_MEMORY),
                ("cuGraphNodeFindInClone", CUDA_ERROR_INVALID_VALUE)
            ],
            |cur, arm| {
                let mut g = cur.create_graph()?;
                g.add_empty(&[])?;
                arm();
                unit(g.try_clone())
            }
        ),
        ctx!(
            "Graph::add_conditional",
            [
                ("cuGraphConditionalHandleCreate", CUDA_ERROR_INVALID_VALUE),
                ("cuGraphAddNode", CUDA_ERROR_INVALID_VALUE)
            ],
            |cur, arm| {
                let mut g = cur.create_graph()?;
                arm();
                unit(g.add_conditional(&[], ConditionalKind::If, Some(false)))
            }
        ),
        ctx!(
            "Graph::add_alloc",
            [
                ("cuGraphAddMemAllocNode", CUDA_ERROR_OUT_OF_MEMORY),
                ("cuCtxGetDevice", CUDA_ERROR_INVALID_CONTEXT)
            ],
            |cur, arm| {
                let mut g = cur.create_graph()?;
                arm();
                unit(g.add_alloc::<u32>(&[], 64))
            }
        ),
        ctx!(
            "Graph::add_free",
            "cuGraphAddMemFreeNode",
            CUDA_ERROR_INVALID_VALUE,
            |cur, arm| {
                let mut g = cur.create_graph()?;
                let (n, mem) = g.add_alloc::<u32>(&[], 64)?;
                arm();
                unit(g.add_free(&[n], mem))
            }
        ),
        ctx!(
            "Graph::instantiate",
            "cuGraphInstantiateWithFlags",
            CUDA_ERROR_INVALID_VALUE,
            |cur, arm| {
                let mut g = cur.create_graph()?;
                g.add_empty(&[])?;
                arm();
                unit(g.instantiate())
            }
        ),
        ctx!(
            "GraphExec::drop",
            "cuGraphExecDestroy",
            CUDA_ERROR_INVALID_VALUE,
            Refused,
            |cur, arm| {
                let mut g = cur.create_graph()?;
                g.add_empty(&[])?;
                let e = g.instantiate()?;
                arm();
                drop(e);
                Ok(())
            }
        ),
        ctx!(
            "GraphExec::upload",
            "cuGraphUpload",
            CUDA_ERROR_INVALID_VALUE,
            |cur, arm| {
                let s = stream(cur)?;
                let mut g = cur.create_graph()?;
                g.add_empty(&[])?;
                let e = g.instantiate()?;
                arm();
                e.upload(&s)
            }
        ),
        ctx!(
            "GraphExec::set_kernel_args",
            "cuGraphExecKernelNodeSetParams",
            CUDA_ERROR_INVALID_VALUE,
            |cur, arm| {
                let m = slices(cur)?;
                let f = add_fn(&m)?;
                let (a, b, c) = (
                    cur.alloc::<f32>(32)?,
                    cur.alloc::<f32>(32)?,
                    cur.alloc::<f32>(32)?,
                );
                let mut g = cur.create_graph()?;
                let k = g.add_kernel(&[], &f, 1, 32, 0, (&a, &b, &c))?;
                let mut e = g.instantiate()?;
                arm();
                e.set_kernel_args(&k, (&b, &a, &c))
            }
        ),
        ctx!(
            "GraphExec::update",
            "cuGraphExecUpdate",
            CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE,
            |cur, arm| {
                let mut g = cur.create_graph()?;
                g.add_empty(&[])?;
                let mut e = g.instantiate()?;
                let mut g2 = cur.create_graph()?;
                g2.add_empty(&[])?;
                arm();
                e.update(g2)
            }
        ),
        ctx!(
            "AsyncScope::launch_graph",
            "cuGraphLaunch",
            CUDA_ERROR_INVALID_VALUE,
            |cur, arm| {
                let s = stream(cur)?;
                let mut g = cur.create_graph()?;
                g.add_empty(&[])?;
                let e = g.instantiate()?;
                flat(s.scope(|sc| {
                    arm();
                    sc.launch_graph(&e)
                }))
            }
        ),
        // --- stream capture ---------------------------------------------------------------
        ctx!(
            "Stream::capture",
            [
                ("cuStreamGetFlags", CUDA_ERROR_INVALID_HANDLE),
                (
                    "cuStreamBeginCapture",
                    CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED
                ),
                (
                    "cuStreamGetCaptureInfo",
                    CUDA_ERROR_STREAM_CAPTURE_INVALIDATED
                )
            ],
            |cur, arm| {
                let mut s = stream(cur)?;
                arm();
                unit(s.capture(CaptureMode::ThreadLocal, |_| Ok(())))
            }
        ),
        ctx!(
            "Stream::capture",
            "cuStreamEndCapture",
            CUDA_ERROR_STREAM_CAPTURE_INVALIDATED,
            |cur, arm| {
                let mut s = stream(cur)?;
                unit(s.capture(CaptureMode::ThreadLocal, |_| {
                    arm();
                    Ok(())
                }))
            }
        ),
        ctx!(
            "Capturing::launch",
            "cuLaunchKernel",
            CUDA_ERROR_STREAM_CAPTURE_INVALIDATED,
            |cur, arm| {
                let m = slices(cur)?;
                let f = add_fn(&m)?;
                let (a, b, c) = (
                    cur.alloc::<f32>(32)?,
                    cur.alloc::<f32>(32)?,
                    cur.alloc::<f32>(32)?,
                );
                let mut s = stream(cur)?;
                unit(s.capture(CaptureMode::ThreadLocal, |cap| {
                    arm();
                    cap.launch(&f, 1, 32, 0, (&a, &b, &c))
                }))
            }
        ),
        ctx!(
            "Capturing::copy_to_device",
            "cuMemcpyHtoDAsync",
            CUDA_ERROR_STREAM_CAPTURE_INVALIDATED,
            |cur, arm| {
                let b = cur.alloc::<u32>(4)?;
                let h = [1u32; 4];
                let mut s = stream(cur)?;
                unit(s.capture(CaptureMode::ThreadLocal, |cap| {
                    arm();
                    cap.copy_to_device(&b, &h)
                }))
            }
        ),
        ctx!(
            "Capturing::copy_to_host",
            "cuMemcpyDtoHAsync",
            CUDA_ERROR_STREAM_CAPTURE_INVALIDATED,
            |cur, arm| {
                let b = cur.alloc::<u32>(4)?;
                let mut h = [1u32; 4];
                let mut s = stream(cur)?;
                unit(s.capture(CaptureMode::ThreadLocal, |cap| {
                    arm();
                    cap.copy_to_host(&mut h, &b)
                }))
            }
        ),
        ctx!(
            "Capturing::fill",
            "cuMemsetD32Async",
            CUDA_ERROR_STREAM_CAPTURE_INVALIDATED,
            |cur, arm| {
                let b = cur.alloc::<u32>(4)?;
                let mut s = stream(cur)?;
                unit(s.capture(CaptureMode::ThreadLocal, |cap| {
                    arm();
                    cap.fill(&b, 7u32)
                }))
            }
        ),
        ctx!(
            "Capturing::host_fn",
            "cuLaunchHostFunc",
            CUDA_ERROR_STREAM_CAPTURE_INVALIDATED,
            |cur, arm| {
                let mut s = stream(cur)?;
                unit(s.capture(CaptureMode::ThreadLocal, |cap| {
                    arm();
                    cap.host_fn(|| {})
                }))
            }
        ),
        ctx!(
            "Capturing::record",
            "cuEventRecordWithFlags",
            CUDA_ERROR_STREAM_CAPTURE_INVALIDATED,
            |cur, arm| {
                let e = cur.create_event::<NoTiming>()?;
                let mut s = stream(cur)?;
                unit(s.capture(CaptureMode::ThreadLocal, |cap| {
                    arm();
                    cap.record(&e)
                }))
            }
        ),
        ctx!(
            "Capturing::wait",
            "cuStreamWaitEvent",
            CUDA_ERROR_STREAM_CAPTURE_INVALIDATED,
            |cur, arm| {
                let e = cur.create_event::<NoTiming>()?;
                let mut s = stream(cur)?;
                unit(s.capture(CaptureMode::ThreadLocal, |cap| {
                    arm();
                    cap.wait(&e)
                }))
            }
        ),
        ctx!(
            "Capturing::fork",
            [
                ("cuEventCreate", CUDA_ERROR_OUT_OF_MEMORY),
                ("cuEventRecord", CUDA_ERROR_STREAM_CAPTURE_INVALIDATED),
                ("cuStreamWaitEvent", CUDA_ERROR_STREAM_CAPTURE_INVALIDATED)
            ],
            |cur, arm| {
                let (mut s, mut side) = (stream(cur)?, stream(cur)?);
                unit(
                    s.capture_with(CaptureMode::ThreadLocal, &mut [&mut side], |cap, br| {
                        arm();
                        cap.fork(&mut br[0], |_| Ok(()))
                    }),
                )
            }
        ),
        ctx!(
            "Capturing::fork (join)",
            "cuEventDestroy",
            CUDA_ERROR_INVALID_HANDLE,
            ErrorHeld,
            |cur, arm| {
                let (mut s, mut side) = (stream(cur)?, stream(cur)?);
                unit(
                    s.capture_with(CaptureMode::ThreadLocal, &mut [&mut side], |cap, br| {
                        cap.fork(&mut br[0], |_| {
                            arm();
                            Ok(())
                        })
                    }),
                )
            }
        ),
        ctx!(
            "DeviceBuffer::drop (during a global capture)",
            "cuThreadExchangeStreamCaptureMode",
            CUDA_ERROR_INVALID_VALUE,
            Swallowed,
            |cur, arm| {
                let b = cur.alloc::<u32>(4)?;
                let mut s = stream(cur)?;
                let r = s.capture(CaptureMode::Global, |_| {
                    arm();
                    drop(b);
                    Ok(())
                });
                let _ = r;
                Ok(())
            }
        ),
        ctx!(
            "Stream::capture_with",
            "cuStreamBeginCapture",
            CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED,
            |cur, arm| {
                let (mut s, mut side) = (stream(cur)?, stream(cur)?);
                arm();
                unit(s.capture_with(CaptureMode::ThreadLocal, &mut [&mut side], |_, _| Ok(())))
            }
        ),
        ctx!(
            "Module::function_unchecked",
            "cuModuleGetFunction",
            CUDA_ERROR_NOT_FOUND,
            |cur, arm| {
                let m = slices(cur)?;
                arm();
                // SAFETY: as `add_fn`.
                unit(unsafe { m.function_unchecked::<Add>("vector_add") })
            }
        ),
        bare!(
            "Library::kernel_unchecked",
            "cuLibraryGetKernel",
            CUDA_ERROR_NOT_FOUND,
            |d, arm| {
                let lib = d.load_library(SLICES.as_bytes(), &JitOptions::default())?;
                arm();
                // SAFETY: as `add_fn`.
                unit(unsafe { lib.kernel_unchecked::<Add>("vector_add") })
            }
        ),
    ]
    .into_iter()
    .flatten()
    .collect()
}

/// The codes every row is made to fail with, after its documented one.
fn common_codes() -> [CUresult; 5] {
    [
        CUresult::CUDA_ERROR_OUT_OF_MEMORY,
        CUresult::CUDA_ERROR_ILLEGAL_ADDRESS,
        CUresult::CUDA_ERROR_LAUNCH_FAILED,
        CUresult::CUDA_ERROR_NOT_INITIALIZED,
        CUresult(12345),
    ]
}

/// Whether `e` is the typed error that carries `code`.
fn carries(e: &CudaError, code: CUresult) -> bool {
    match e {
        CudaError::Driver(c) => *c == code,
        CudaError::JitFailed { source, .. } => *source == code,
        // cuGraphExecUpdate's failure, with the reason and node the driver gave.
        CudaError::GraphUpdate { .. } => code == CUresult::CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE,
        // A name lookup's NOT_FOUND, with the name.
        CudaError::NotFound { .. } => code == CUresult::CUDA_ERROR_NOT_FOUND,
        _ => false,
    }
}

/// A driver function's base name: `cuCtxCreate_v3020` → `cuCtxCreate`.
fn base(name: &str) -> &str {
    match name.rsplit_once("_v") {
        Some((b, v)) if !v.is_empty() && v.bytes().all(|c| c.is_ascii_digit()) => b,
        _ => name,
    }
}

fn no_live_objects() -> bool {
    softcuda::control::live_counts() == softcuda::control::Counts::default()
}

/// Puts softcuda back as the crate's driver found it: no object, initialised (the
/// crate's `Driver::init` asks `cuInit` once per driver, so a reset's uninitialised
/// state would outlive it), nothing current on this thread.
fn reclaim() {
    softcuda::control::reset();
    // SAFETY: flags 0.
    assert_eq!(unsafe { softcuda::api::init::cuInit(0) }, 0);
}

#[derive(Default)]
struct Tally {
    entry_points: BTreeSet<&'static str>,
    functions: BTreeSet<&'static str>,
    faults: usize,
    leaks: usize,
    refused: usize,
    aborts: usize,
    failures: Vec<String>,
}

/// The environment variable that makes the sweep run one case, in a child.
const CHILD: &str = "OXICUDA_FAULT_SWEEP_CASE";

/// Runs the case in a child process (this test, with `CHILD` naming the case) and
/// checks that it died of `SIGABRT`.
fn run_aborting_case(row: &Row, index: usize, code: CUresult, nth: u64, t: &mut Tally) {
    use std::os::unix::process::ExitStatusExt;
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "every_injected_fault_comes_back_typed_with_nothing_leaked",
            "--exact",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD, format!("{index}:{}:{nth}", code.0))
        .output()
        .unwrap();
    t.faults += 1;
    t.aborts += 1;
    if out.status.signal() != Some(6) {
        t.failures.push(format!(
            "{} / {} / {code:?} (call {nth}): expected the child to abort, got {:?}: {}",
            row.entry,
            row.func,
            out.status,
            String::from_utf8_lossy(&out.stderr)
        ));
    }
}

/// Runs the case with no fault: it must succeed. Returns the driver functions it
/// called from `arm()` on, in order.
fn dry_run(d: &'static Driver, row: &Row, t: &mut Tally) -> Vec<String> {
    let arm = || softcuda::control::log_calls(true);
    let r = catch_unwind(AssertUnwindSafe(|| match row.run {
        Run::Ctx(f) => {
            let ctx = Context::new(&d.device(0).unwrap(), CUctx_flags::empty()).unwrap();
            let r = ctx.bind(|cur| f(cur, &arm)).and_then(|r| r);
            drop(ctx);
            r
        }
        Run::Bare(f) => f(d, &arm),
    }));
    let log = softcuda::control::call_log();
    softcuda::control::log_calls(false);
    if !matches!(r, Ok(Ok(()))) {
        t.failures.push(format!(
            "{} / {}: without a fault the case fails: {r:?}",
            row.entry, row.func
        ));
    }
    if !no_live_objects() {
        t.failures.push(format!(
            "{} / {}: without a fault the case leaks",
            row.entry, row.func
        ));
        reclaim();
    }
    log
}

fn run_case(d: &'static Driver, row: &Row, code: CUresult, nth: u64, t: &mut Tally) {
    let func = row.func;
    let arm = move || {
        softcuda::control::log_calls(true);
        softcuda::control::inject_fault(func, nth, code.0 as _);
    };
    if std::env::var_os("SWEEP_TRACE").is_some() {
        eprintln!(
            "case: {} / {} / {:?} / call {nth}",
            row.entry, row.func, code
        );
    }
    let mut log = Vec::new();
    let mut marked = None;
    let mut held = softcuda::control::Counts {
        contexts: 1,
        ..Default::default()
    };
    let result = catch_unwind(AssertUnwindSafe(|| match row.run {
        Run::Ctx(f) => {
            let ctx = Context::new(&d.device(0).unwrap(), CUctx_flags::empty()).unwrap();
            let r = ctx.bind(|cur| f(cur, &arm)).and_then(|r| r);
            log = softcuda::control::call_log();
            softcuda::control::clear_faults();
            softcuda::control::log_calls(false);
            // Everything the case made is dropped: only the context is left — unless
            // the driver refused a release, which the context's end reclaims.
            held = softcuda::control::live_counts();
            marked = Some(ctx.sticky_error());
            drop(ctx);
            r
        }
        Run::Bare(f) => {
            let r = f(d, &arm);
            log = softcuda::control::call_log();
            r
        }
    }));
    softcuda::control::clear_faults();
    softcuda::control::log_calls(false);
    t.faults += 1;
    let case = format!("{} / {} / {:?} / call {nth}", row.entry, row.func, code);
    match result {
        Err(_) => t.failures.push(format!("{case}: panicked")),
        Ok(r) => {
            if !log.iter().any(|c| c == func) {
                t.failures
                    .push(format!("{case}: never reached {func} (calls: {log:?})"));
            }
            match (row.outcome, r) {
                (
                    Outcome::Error
                    | Outcome::ErrorHeld
                    | Outcome::ErrorRefused
                    | Outcome::AbortsUnlessSticky,
                    Err(e),
                ) if carries(&e, code) => {}
                (
                    Outcome::Error
                    | Outcome::ErrorHeld
                    | Outcome::ErrorRefused
                    | Outcome::AbortsUnlessSticky,
                    other,
                ) => t.failures.push(format!(
                    "{case}: expected a typed error carrying the code, got {other:?}"
                )),
                (_, Ok(())) => {}
                (_, Err(e)) => t
                    .failures
                    .push(format!("{case}: a destructor row returned {e:?}")),
            }
        }
    }
    // A sticky code the entry point returned marks the bound context's handle; no
    // other code does.
    if let Some(marked) = marked
        && row.outcome != Outcome::Swallowed
    {
        // A sticky answer to a nested push marks the pushed handle, not the bound one
        // (tests/fault_recovery.rs checks the pushed handle).
        let pushes = row.entry.starts_with("CurrentContext::push");
        let expected = (code.is_sticky() && !pushes).then_some(code);
        if marked != expected {
            t.failures.push(format!(
                "{case}: the context's sticky mark is {marked:?}, expected {expected:?}"
            ));
        }
    }
    let only_the_context = softcuda::control::Counts {
        contexts: 1,
        ..Default::default()
    };
    if held != only_the_context && row.outcome == Outcome::Error {
        t.leaks += 1;
        t.failures.push(format!(
            "{case}: held {held:?} until its context was destroyed"
        ));
    }
    if !no_live_objects() {
        let counts = softcuda::control::live_counts();
        if matches!(row.outcome, Outcome::Refused | Outcome::ErrorRefused) {
            t.refused += 1;
        } else {
            t.leaks += 1;
            t.failures.push(format!("{case}: left {counts:?}"));
        }
        reclaim();
    } else if matches!(row.outcome, Outcome::Refused | Outcome::ErrorRefused) {
        t.failures
            .push(format!("{case}: the refused release left nothing behind?"));
    }
    // Nothing may be left current on this thread (a failed pop leaves it there).
    let mut c: softcuda::types::CUcontext = std::ptr::null_mut();
    // SAFETY: a valid out-pointer.
    unsafe { softcuda::api::context::cuCtxGetCurrent(&mut c) };
    if !c.is_null() {
        t.failures.push(format!("{case}: left a context current"));
        reclaim();
    }
}

#[test]
fn every_injected_fault_comes_back_typed_with_nothing_leaked() {
    let (d, _g) = driver();
    assert!(no_live_objects(), "softcuda starts empty");
    let rows = rows();
    let mut t = Tally::default();
    if let Some(case) = std::env::var_os(CHILD) {
        // A child of `run_aborting_case`: run that one case (it should abort).
        let case = case.into_string().unwrap();
        let mut parts = case.split(':').map(|p| p.parse::<u64>().unwrap());
        let (index, code, nth) = (
            parts.next().unwrap(),
            parts.next().unwrap(),
            parts.next().unwrap(),
        );
        run_case(d, &rows[index as usize], CUresult(code as _), nth, &mut t);
        return;
    }
    for (index, row) in rows.iter().enumerate() {
        t.entry_points.insert(row.entry);
        t.functions.insert(base(row.func));
        // Every code at the first call; the documented one at each later call too.
        let log = dry_run(d, row, &mut t);
        let calls = log.iter().filter(|c| *c == row.func).count() as u64;
        let cases = std::iter::once(row.documented)
            .chain(common_codes())
            .map(|code| (code, 1))
            .chain((2..=calls).map(|nth| (row.documented, nth)));
        for (code, nth) in cases {
            if row.outcome == Outcome::AbortsUnlessSticky && !code.is_sticky() {
                run_aborting_case(row, index, code, nth, &mut t);
            } else {
                run_case(d, row, code, nth, &mut t);
            }
        }
    }
    println!(
        "reliability: sweep entry_points={} driver_functions={} faults={} leaks={} refused_releases={} aborts={} rows={}",
        t.entry_points.len(),
        t.functions.len(),
        t.faults,
        t.leaks,
        t.refused,
        t.aborts,
        rows.len()
    );
    assert!(
        t.failures.is_empty(),
        "{} failures:\n{}",
        t.failures.len(),
        t.failures.join("\n")
    );
}

/// Driver functions the safe layer calls through the table that no row injects
/// into, and why. (`cuGetProcAddress`, which the loader calls through a raw pointer
/// while it builds the table, is not a table call; load failures are
/// tests/loader.rs's.)
const NOT_INJECTED: &[(&str, &str)] = &[
    (
        "cuFuncGetName",
        "called only when a tracing subscriber formats a launch span's kernel name; a \
         failure is written into that field as text and never returned (no entry point \
         fails with it)",
    ),
    (
        "cuFuncGetParamCount",
        "CUDA 13.2: this sweep's softcuda reports 12.9, so no entry point reaches it \
         here; tests/cuda13.rs injects into it on softcuda reporting 13.5",
    ),
    (
        "cuKernelGetParamCount",
        "CUDA 13.2, as cuFuncGetParamCount; tests/cuda13.rs covers its failure path \
         through cuKernelGetParamInfo",
    ),
];

/// What `src/` calls through the driver table (`.cuName(` after a table
/// expression), everything but the generated `sys` and `table` code: the driver
/// functions by base name, and the public functions that make such a call
/// themselves (`pub fn name` enclosing the call; the private helpers they share are
/// reached through the public ones, and their driver functions are counted).
#[derive(Default)]
struct Scan {
    functions: BTreeSet<String>,
    /// (file, pub fn) pairs.
    entry_points: BTreeSet<(String, String)>,
}

/// The name of the last `fn` declared before `at`, and whether it is `pub`.
fn enclosing_fn(text: &str, at: usize) -> Option<(bool, String)> {
    let before = &text[..at];
    let mut from = before.len();
    while let Some(i) = before[..from].rfind("fn ") {
        from = i;
        // A declaration starts its line (after indentation and qualifiers).
        let line_start = before[..i].rfind('\n').map_or(0, |n| n + 1);
        let head = before[line_start..i].trim();
        let qualifiers = [
            "",
            "pub",
            "pub unsafe",
            "unsafe",
            "pub(crate)",
            "pub(crate) unsafe",
            "const",
            "pub const",
        ];
        if qualifiers.contains(&head) {
            let name: String = before[i + 3..]
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            return Some((head == "pub" || head == "pub unsafe", name));
        }
    }
    None
}

fn called_from_src() -> BTreeSet<String> {
    scan_src().functions
}

fn scan_src() -> Scan {
    fn walk(dir: &Path, out: &mut Scan) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                if !path.ends_with("sys") && !path.ends_with("table") {
                    walk(&path, out);
                }
                continue;
            }
            if path.extension().is_none_or(|e| e != "rs") {
                continue;
            }
            let text = std::fs::read_to_string(&path).unwrap();
            for (i, _) in text.match_indices(".cu") {
                let rest = &text[i + 1..];
                let name: String = rest
                    .chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                    .collect();
                let starts_upper = name[2..].starts_with(|c: char| c.is_ascii_uppercase());
                if starts_upper && rest[name.len()..].starts_with('(') {
                    out.functions.insert(base(&name).to_owned());
                    if let Some((true, f)) = enclosing_fn(&text, i) {
                        let file = path.file_name().unwrap().to_string_lossy().into_owned();
                        out.entry_points.insert((file, f));
                    }
                }
            }
        }
    }
    let mut out = Scan::default();
    walk(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src"), &mut out);
    out
}

#[test]
fn the_sweep_covers_every_driver_function_the_safe_layer_calls() {
    let called = called_from_src();
    assert!(called.len() > 100, "the scan found only {called:?}");
    let swept: BTreeSet<String> = rows().iter().map(|r| base(r.func).to_owned()).collect();
    let allowed: BTreeSet<&str> = NOT_INJECTED.iter().map(|(f, _)| *f).collect();
    let missing: Vec<&String> = called
        .iter()
        .filter(|f| !swept.contains(*f) && !allowed.contains(f.as_str()))
        .collect();
    assert!(
        missing.is_empty(),
        "driver functions no sweep row injects into: {missing:?}"
    );
    let stale: Vec<&String> = swept.iter().filter(|f| !called.contains(*f)).collect();
    assert!(
        stale.is_empty(),
        "rows name functions src/ never calls: {stale:?}"
    );
    // Every public function that calls the driver itself has a row (by method name:
    // `Type::name`, optionally followed by a note).
    let rows = rows();
    let methods: BTreeSet<&str> = rows
        .iter()
        .filter_map(|r| r.entry.split("::").nth(1))
        .map(|m| m.split(' ').next().unwrap_or(m))
        .collect();
    let entry_points = scan_src().entry_points;
    assert!(
        entry_points.len() > 80,
        "the scan found only {entry_points:?}"
    );
    let unswept: Vec<_> = entry_points
        .iter()
        .filter(|(_, f)| !methods.contains(f.as_str()))
        .collect();
    assert!(
        unswept.is_empty(),
        "public functions that call the driver with no sweep row: {unswept:?}"
    );
    println!(
        "reliability: coverage pub_fns_calling_the_driver={} driver_functions_called={} swept={} allow_listed={}",
        entry_points.len(),
        called.len(),
        swept.len(),
        allowed.len()
    );
}

/// Releases whose refusal leaves behind something no context owns (see
/// `Outcome::Refused`): the exhaustive pass reclaims it with a softcuda reset.
const RELEASES: &[&str] = &[
    "cuCtxDestroy",
    "cuDevicePrimaryCtxRelease",
    "cuLibraryUnload",
    "cuLinkDestroy",
    "cuMemPoolDestroy",
    "cuGraphDestroy",
    "cuGraphExecDestroy",
    "cuMemFreeAsync",
    "cuMemRelease",
    "cuMemUnmap",
    "cuMemAddressFree",
    "cuDestroyExternalMemory",
    "cuDestroyExternalSemaphore",
    "cuGreenCtxDestroy",
];

/// Every driver call a case makes from `arm()` on — the entry point's, and those of
/// the drops that end the case — made to fail in turn (code 12345, which nothing
/// treats specially). Weaker than the sweep, since a failing call may be a
/// destructor's: no panic; a result that is `Ok` or carries the code; nothing left
/// once the context is destroyed (bar a refused release, reclaimed). The wait that
/// ends an async scope is left out: its failure aborts (the sweep checks that).
///
/// A refused `cuCtxPopCurrent` at a binding's end leaves that context on the
/// thread's stack: the binding returns the error; a created context's destruction
/// takes it off, a primary context stays current (the next root binding on the
/// thread is then refused, `ContextAlreadyBound`), and an enclosing binding finds
/// it on top when it ends — it pops both and reports `ContextMismatch`. Those are
/// accepted here for that function only (and the stack reclaimed). So is what an
/// `AddressRange`, an `ExternalSemaphore`, an `IpcMemory` or a `GreenContext` leaves in
/// place when the wait before its release fails.
#[test]
fn every_call_of_every_case_can_fail() {
    let (d, _g) = driver();
    let code = CUresult(12345);
    let mut t = Tally::default();
    let mut pairs = BTreeSet::new();
    for row in rows() {
        let log = dry_run(d, &row, &mut t);
        let mut seen: std::collections::BTreeMap<&str, u64> = Default::default();
        for func in &log {
            let nth = {
                let n = seen.entry(func.as_str()).or_default();
                *n += 1;
                *n
            };
            let scope = row.entry.contains("scope") || row.entry.starts_with("AsyncScope");
            // Likewise the wait that ends a peer group's `enter`.
            let enter = row.entry.starts_with("Peer");
            if (scope && func == "cuStreamSynchronize") || (enter && func == "cuCtxSynchronize") {
                continue;
            }
            pairs.insert((row.entry, func.clone()));
            let f = func.clone();
            let arm = move || {
                softcuda::control::log_calls(true);
                softcuda::control::inject_fault(&f, nth, code.0 as _);
            };
            let result = catch_unwind(AssertUnwindSafe(|| match row.run {
                Run::Ctx(f) => {
                    let ctx = Context::new(&d.device(0).unwrap(), CUctx_flags::empty()).unwrap();
                    let r = ctx.bind(|cur| f(cur, &arm)).and_then(|r| r);
                    softcuda::control::clear_faults();
                    drop(ctx);
                    r
                }
                Run::Bare(f) => f(d, &arm),
            }));
            softcuda::control::clear_faults();
            softcuda::control::log_calls(false);
            t.faults += 1;
            let case = format!("{} / {func} (call {nth})", row.entry);
            let popping = func == "cuCtxPopCurrent";
            // An address range dropped while its context's work cannot be waited for
            // leaves its mappings and addresses in place (`vmm`'s module docs).
            let unsettled = (row.entry.starts_with("AddressRange")
                || row.entry.starts_with("ExternalSemaphore")
                || row.entry.starts_with("IpcMemory")
                || row.entry.starts_with("GreenContext"))
                && (func == "cuCtxPushCurrent" || func == "cuCtxSynchronize");
            match result {
                Err(_) => t.failures.push(format!("{case}: panicked")),
                Ok(Ok(())) => {}
                Ok(Err(e)) if carries(&e, code) => {}
                Ok(Err(CudaError::ContextMismatch { .. })) if popping => {}
                Ok(Err(e)) => t.failures.push(format!("{case}: returned {e:?}")),
            }
            let mut c: softcuda::types::CUcontext = std::ptr::null_mut();
            // SAFETY: a valid out-pointer.
            unsafe { softcuda::api::context::cuCtxGetCurrent(&mut c) };
            if !c.is_null() {
                if !popping {
                    t.failures.push(format!("{case}: left a context current"));
                }
                reclaim();
            }
            if !no_live_objects() {
                if RELEASES.contains(&func.as_str()) || popping || unsettled {
                    t.refused += 1;
                } else {
                    t.leaks += 1;
                    t.failures.push(format!(
                        "{case}: left {:?}",
                        softcuda::control::live_counts()
                    ));
                }
                reclaim();
            }
        }
    }
    println!(
        "reliability: exhaustive pairs={} faults={} leaks={} refused_releases={}",
        pairs.len(),
        t.faults,
        t.leaks,
        t.refused
    );
    assert!(
        t.failures.is_empty(),
        "{} failures:\n{}",
        t.failures.len(),
        t.failures.join("\n")
    );
}

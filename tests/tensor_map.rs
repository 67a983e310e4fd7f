//! Tensor maps through the safe layer, on softcuda (or with `--features gpu-tests` the
//! driver the environment names): valid tiled, im2col and im2col-wide maps encode;
//! each documented rule is refused before the driver is called, with the parameter it
//! concerns — and the same parameters passed raw to the driver are refused by it too
//! (softcuda's independent checks), except where only the safe layer can know (the
//! memory's extent, the device); the address replaced; the 128-byte descriptor reaches
//! a kernel whole at its 64-byte-aligned offset. No live object is left behind.

mod common;

use common::{ON_GPU, on_device0};

use oxicuda_driver::launch::Out;
use oxicuda_driver::memory::DeviceBuffer;
use oxicuda_driver::module::{JitOptions, entry_params};
use oxicuda_driver::sys::{
    CUresult, CUstream_flags, CUtensorMap, CUtensorMapDataType as Dt, CUtensorMapFloatOOBfill,
    CUtensorMapIm2ColWideMode as Mode, CUtensorMapInterleave as Il, CUtensorMapL2promotion,
    CUtensorMapSwizzle as Sw,
};
use oxicuda_driver::tensor_map::{
    ReadOnly, TensorKind, TensorLayout, TensorMap, TensorMapIn, TensorMapOut,
};
use oxicuda_driver::{CudaError, CurrentContext};

const KERNEL: &str = include_str!("../kernels/handwritten_tensor_map.ptx");
const NVRTC_KERNEL: &str = include_str!("../kernels/tensor_map.ptx");

const F32: Dt = Dt::CU_TENSOR_MAP_DATA_TYPE_FLOAT32;
const F16: Dt = Dt::CU_TENSOR_MAP_DATA_TYPE_FLOAT16;
const U4A16: Dt = Dt::CU_TENSOR_MAP_DATA_TYPE_16U4_ALIGN16B;
const U4A8: Dt = Dt::CU_TENSOR_MAP_DATA_TYPE_16U4_ALIGN8B;
const U6: Dt = Dt::CU_TENSOR_MAP_DATA_TYPE_16U6_ALIGN16B;
const IL_NONE: Il = Il::CU_TENSOR_MAP_INTERLEAVE_NONE;
const IL16: Il = Il::CU_TENSOR_MAP_INTERLEAVE_16B;
const IL32: Il = Il::CU_TENSOR_MAP_INTERLEAVE_32B;
const SW_NONE: Sw = Sw::CU_TENSOR_MAP_SWIZZLE_NONE;
const SW32: Sw = Sw::CU_TENSOR_MAP_SWIZZLE_32B;
const SW64: Sw = Sw::CU_TENSOR_MAP_SWIZZLE_64B;
const SW128: Sw = Sw::CU_TENSOR_MAP_SWIZZLE_128B;

/// A layout type: `layout!(Name: data type, kind, element strides[, interleave,
/// swizzle])`, as a user writes one.
macro_rules! layout {
    ($($name:ident: $dt:expr, $kind:expr, $es:expr $(, $il:expr, $sw:expr)?;)*) => {$(
        struct $name;
        impl TensorLayout for $name {
            const DATA_TYPE: Dt = $dt;
            const KIND: TensorKind = $kind;
            const ELEMENT_STRIDES: &'static [u32] = $es;
            $(
                const INTERLEAVE: Il = $il;
                const SWIZZLE: Sw = $sw;
            )?
        }
    )*};
}

const fn tile(box_dims: &'static [u32]) -> TensorKind {
    TensorKind::Tiled { box_dims }
}
const fn im2(channels_per_pixel: u32, pixels_per_column: u32) -> TensorKind {
    TensorKind::Im2col {
        channels_per_pixel,
        pixels_per_column,
    }
}
const fn wide_kind(channels_per_pixel: u32, pixels_per_column: u32, mode: Mode) -> TensorKind {
    TensorKind::Im2colWide {
        channels_per_pixel,
        pixels_per_column,
        mode,
    }
}
const W: Mode = Mode::CU_TENSOR_MAP_IM2COL_WIDE_MODE_W;
const W128: Mode = Mode::CU_TENSOR_MAP_IM2COL_WIDE_MODE_W128;
const ES3: &[u32] = &[1, 1, 1];
const ES4: &[u32] = &[1, 1, 1, 1];

// Tiled layouts: the base (f32 boxes of 16 × 4 × 2), one per rule, one per valid twin.
layout! {
    Base: F32, tile(&[16, 4, 2]), ES3;
    UnknownType: Dt(99), tile(&[16, 4, 2]), ES3;
    UnknownInterleave: F32, tile(&[16, 4, 2]), ES3, Il(7), SW_NONE;
    UnknownSwizzle: F32, tile(&[16, 4, 2]), ES3, IL_NONE, Sw(9);
    Rank0: F32, tile(&[]), &[];
    Rank6: F32, tile(&[4; 6]), &[1; 6];
    Rank2Interleaved: F32, tile(&[16, 4]), &[1, 1], IL16, SW_NONE;
    Rank1: F32, tile(&[4]), &[1];
    PackedU4: U4A16, tile(&[128, 1, 1]), ES3;
    PackedU6: U6, tile(&[128, 1, 1]), ES3;
    HalfBytes: U4A8, tile(&[16, 4, 2]), ES3;
    HalfBytes32: U4A8, tile(&[32, 4, 2]), ES3;
    Es2: F32, tile(&[16, 4, 2]), &[1, 1];
    Es0: F32, tile(&[16, 4, 2]), &[1, 0, 1];
    Es9: F32, tile(&[16, 4, 2]), &[1, 9, 1];
    Es188: F32, tile(&[16, 4, 2]), &[1, 8, 8];
    Box2: F32, tile(&[16, 4]), ES3;
    Box0: F32, tile(&[16, 0, 2]), ES3;
    Box257: F32, tile(&[16, 257, 2]), ES3;
    Box3: F32, tile(&[3, 4, 2]), ES3;
    Box16Sw32: F32, tile(&[16, 4, 2]), ES3, IL_NONE, SW32;
    Box8Sw32: F32, tile(&[8, 4, 2]), ES3, IL_NONE, SW32;
    Box32Sw64: F32, tile(&[32, 4, 2]), ES3, IL_NONE, SW64;
    U6Box64: U6, tile(&[64, 1, 1]), ES3;
    Il32: F32, tile(&[8, 4, 2]), ES3, IL32, SW32;
    Il32NoSwizzle: F32, tile(&[8, 4, 2]), ES3, IL32, SW_NONE;
    Il16: F32, tile(&[3, 4, 2]), ES3, IL16, SW_NONE;
    HalfIl32: F16, tile(&[8, 4, 2]), ES3, IL32, SW32;
    U6Il16: U6, tile(&[128, 1, 1]), ES3, IL16, SW_NONE;
    U4Sw64: U4A16, tile(&[128, 1, 1]), ES3, IL_NONE, SW64;
    U4Atom64: U4A16, tile(&[128, 1, 1]), ES3, IL_NONE, Sw::CU_TENSOR_MAP_SWIZZLE_128B_ATOM_64B;
    U6Sw32: U6, tile(&[128, 1, 1]), ES3, IL_NONE, SW32;
    U6Atom64: U6, tile(&[128, 1, 1]), ES3, IL_NONE, Sw::CU_TENSOR_MAP_SWIZZLE_128B_ATOM_64B;
    U32Tile: Dt::CU_TENSOR_MAP_DATA_TYPE_UINT32, tile(&[16, 4, 2]), ES3;
    HalfBox8: F16, tile(&[8, 4, 2]), ES3;
}

/// A layout's values (for the raw driver calls), with the safe encoder of its maps.
#[derive(Clone, Copy)]
struct Spec<E> {
    dtype: Dt,
    kind: TensorKind,
    es: &'static [u32],
    il: Il,
    sw: Sw,
    encode: E,
}

impl<E> Spec<E> {
    fn of<L: TensorLayout>(encode: E) -> Self {
        Spec {
            dtype: L::DATA_TYPE,
            kind: L::KIND,
            es: L::ELEMENT_STRIDES,
            il: L::INTERLEAVE,
            sw: L::SWIZZLE,
            encode,
        }
    }

    fn box_dims(&self) -> &'static [u32] {
        match self.kind {
            TensorKind::Tiled { box_dims } => box_dims,
            _ => &[],
        }
    }

    /// (channels per pixel, pixels per column).
    fn pixels(&self) -> (u32, u32) {
        match self.kind {
            TensorKind::Im2col {
                channels_per_pixel,
                pixels_per_column,
            }
            | TensorKind::Im2colWide {
                channels_per_pixel,
                pixels_per_column,
                ..
            } => (channels_per_pixel, pixels_per_column),
            TensorKind::Tiled { .. } => (0, 0),
        }
    }
}

/// Encodes a tiled case's map; its descriptor's words.
type TiledFn =
    fn(&Tiled, &CurrentContext<'_>, &DeviceBuffer<'_, u8>) -> Result<[u64; 16], CudaError>;

/// The tiled layout `L`'s values and encoder.
fn t<L: TensorLayout>() -> Spec<TiledFn> {
    Spec::of::<L>(Tiled::encode_as::<L>)
}

/// A tiled map's parameters, as the C function takes them.
#[derive(Clone)]
struct Tiled {
    layout: Spec<TiledFn>,
    dims: Vec<u64>,
    strides: Vec<u64>,
    l2: CUtensorMapL2promotion,
    oob: CUtensorMapFloatOOBfill,
    /// The view's first byte in the 8 KiB (+ 64) buffer, and its length.
    at: usize,
    len: usize,
}

const BYTES: usize = 8192;

/// f32, 64 × 8 × 4, rows of 256 bytes, boxes of 16 × 4 × 2: 8 KiB exactly.
fn tiled() -> Tiled {
    Tiled {
        layout: t::<Base>(),
        dims: vec![64, 8, 4],
        strides: vec![256, 2048],
        l2: CUtensorMapL2promotion::CU_TENSOR_MAP_L2_PROMOTION_NONE,
        oob: CUtensorMapFloatOOBfill::CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE,
        at: 0,
        len: BYTES,
    }
}

/// Packed (dimension 0 a multiple of 128, boxes of 128).
fn packed(layout: Spec<TiledFn>) -> Tiled {
    Tiled {
        layout,
        dims: vec![128, 8, 4],
        strides: vec![128, 1024],
        ..tiled()
    }
}

/// f32 with 32-byte interleave: dimension 0 one chunk (8 values), 64 × 4 of them,
/// boxes of 8 × 4 × 2: 8 KiB exactly.
fn interleaved() -> Tiled {
    Tiled {
        layout: t::<Il32>(),
        dims: vec![8, 64, 4],
        strides: vec![32, 2048],
        ..tiled()
    }
}

impl Tiled {
    fn encode(
        &self,
        cur: &CurrentContext<'_>,
        buf: &DeviceBuffer<'_, u8>,
    ) -> Result<[u64; 16], CudaError> {
        (self.layout.encode)(self, cur, buf)
    }

    fn encode_as<L: TensorLayout>(
        &self,
        cur: &CurrentContext<'_>,
        buf: &DeviceBuffer<'_, u8>,
    ) -> Result<[u64; 16], CudaError> {
        let view = buf.as_slice().slice(self.at..self.at + self.len)?;
        let map = TensorMap::<_, L>::tiled(view, &self.dims, &self.strides)
            .l2_promotion(self.l2)
            .oob_fill(self.oob)
            .encode(cur)?;
        Ok(map.as_raw().opaque)
    }

    /// The same parameters straight to the driver (every array as long as the rank
    /// says: only for cases that keep them so).
    fn raw(&self, cur: &CurrentContext<'_>, address: u64) -> CUresult {
        let mut map = CUtensorMap { opaque: [0; 16] };
        let l = &self.layout;
        // SAFETY: every array holds the rank's count (the callers' cases keep them so);
        // the map is 64-byte aligned; softcuda only writes the map.
        unsafe {
            cur.driver().table().cuTensorMapEncodeTiled().unwrap()(
                &mut map,
                l.dtype,
                self.dims.len() as u32,
                address as *mut _,
                self.dims.as_ptr(),
                self.strides.as_ptr(),
                l.box_dims().as_ptr(),
                l.es.as_ptr(),
                l.il,
                l.sw,
                self.l2,
                self.oob,
            )
        }
    }
}

/// The parameter a refusal names.
fn refused<T: std::fmt::Debug>(r: Result<T, CudaError>) -> &'static str {
    match r {
        Err(CudaError::InvalidTensorMap { parameter, rule }) => {
            assert!(!rule.is_empty());
            parameter
        }
        other => panic!("expected InvalidTensorMap, got {other:?}"),
    }
}

/// Whether the driver is softcuda, whose descriptor layout the tests may read.
const SOFT: bool = !ON_GPU;

/// The base tiled map of `buf` (8 KiB + 64), read-only.
fn base_map<'b>(
    cur: &CurrentContext<'_>,
    buf: &'b DeviceBuffer<'_, u8>,
) -> Result<TensorMap<'b, ReadOnly, Base>, CudaError> {
    let t = tiled();
    TensorMap::<_, Base>::tiled(buf, &t.dims, &t.strides).encode(cur)
}

#[test]
fn a_valid_tiled_map_encodes_and_reaches_a_kernel_whole_and_aligned() {
    on_device0(|cur| {
        let buf = cur.alloc::<u8>(BYTES + 64)?;
        let map = base_map(cur, &buf)?;
        let raw = map.as_raw().opaque;
        if SOFT {
            // softcuda's layout (docs/softcuda.md): magic, kind, rank, type; address.
            assert_eq!(&raw[0].to_le_bytes()[..7], b"SCTM\x01\x03\x07");
            assert_eq!(raw[2], buf.device_ptr());
            assert_eq!(&raw[3..6], &[64, 8, 4]);
            assert_eq!(&raw[8..10], &[256, 2048]);
            // The box and element strides are the layout's (bytes 96-100, 101-105).
            let bytes = raw[12].to_le_bytes();
            assert_eq!(&bytes[..3], &[15, 3, 1]);
            assert_eq!(&bytes[5..8], &[1, 1, 1]);
        }
        // The PTX parameter scan reads the descriptor as 128 bytes at offset 64.
        assert_eq!(
            entry_params(KERNEL, "copy_tensor_map"),
            Some(vec![(0, 4), (64, 128), (192, 16)])
        );
        let module = cur.load_ptx(KERNEL, &JitOptions::default())?;
        // SAFETY: kernels/handwritten_tensor_map.ptx: thread 0 writes `out` below its
        // length only, and uses the map for nothing but reading its bytes.
        let k =
            unsafe { module.function::<(u32, TensorMapIn<Base>, Out<u64>)>("copy_tensor_map")? };
        let mut out = cur.alloc::<u64>(17)?;
        out.zero()?;
        let stream = cur.create_stream(CUstream_flags::CU_STREAM_NON_BLOCKING)?;
        k.launch(&stream, 1, 32, 0, (0xC0FFEEu32, &map, &mut out))?;
        stream.synchronize()?;
        let got = out.to_vec()?;
        assert_eq!(&got[..16], &raw[..]);
        assert_eq!(got[16], 0xC0FFEE);
        Ok(())
    });
}

#[test]
fn a_grid_constant_map_compiled_by_nvrtc_is_read_by_index() {
    on_device0(|cur| {
        let buf = cur.alloc::<u8>(BYTES)?;
        let map = base_map(cur, &buf)?;
        // What NVRTC emits for `const __grid_constant__ CUtensorMap`.
        assert_eq!(
            entry_params(NVRTC_KERNEL, "copy_grid_constant_map"),
            Some(vec![(0, 4), (64, 128), (192, 16)])
        );
        let module = cur.load_ptx(NVRTC_KERNEL, &JitOptions::default())?;
        // SAFETY: kernels/tensor_map.cu: writes `out` below its length only, and reads
        // the map's bytes, nothing through it.
        let k = unsafe {
            module.function::<(u32, TensorMapIn<Base>, Out<u64>)>("copy_grid_constant_map")?
        };
        let mut out = cur.alloc::<u64>(17)?;
        out.zero()?;
        let stream = cur.create_stream(CUstream_flags::CU_STREAM_NON_BLOCKING)?;
        k.launch(&stream, 1, 32, 0, (9u32, &map, &mut out))?;
        stream.synchronize()?;
        let got = out.to_vec()?;
        assert_eq!(&got[..16], &map.as_raw().opaque[..]);
        assert_eq!(got[16], 9);
        Ok(())
    });
}

#[test]
fn a_graph_kernel_node_takes_a_map() {
    on_device0(|cur| {
        let mut buf = cur.alloc::<u8>(BYTES)?;
        let t = tiled();
        let map = TensorMap::<_, Base>::tiled(&mut buf, &t.dims, &t.strides).encode(cur)?;
        let module = cur.load_ptx(KERNEL, &JitOptions::default())?;
        // SAFETY: as in the first test.
        let load =
            unsafe { module.function::<(u32, TensorMapIn<Base>, Out<u64>)>("copy_tensor_map")? };
        // SAFETY: as above; storing through the map would be allowed, and is not done.
        let store =
            unsafe { module.function::<(u32, TensorMapOut<Base>, Out<u64>)>("copy_tensor_map")? };
        let (a, b) = (cur.alloc::<u64>(17)?, cur.alloc::<u64>(17)?);
        let stream = cur.create_stream(CUstream_flags::CU_STREAM_NON_BLOCKING)?;
        {
            let mut g = cur.create_graph()?;
            let first = g.add_kernel(&[], &load, 1, 1, 0, (5u32, &map, &a))?;
            g.add_kernel(&[first.node()], &store, 1, 1, 0, (6u32, &map, &b))?;
            let exec = g.instantiate()?;
            stream.scope(|s| s.launch_graph(&exec))??;
        }
        let words = map.as_raw().opaque;
        let (a, b) = (a.to_vec()?, b.to_vec()?);
        assert_eq!((&a[..16], a[16]), (&words[..], 5));
        assert_eq!((&b[..16], b[16]), (&words[..], 6));
        Ok(())
    });
}

#[test]
fn a_graph_refuses_a_map_of_a_stream_buffer_for_either_parameter_kind() {
    on_device0(|cur| {
        let stream = cur.create_stream(CUstream_flags::CU_STREAM_NON_BLOCKING)?;
        let mut buf = stream.alloc_async::<u8>(BYTES)?;
        let t = tiled();
        let map =
            TensorMap::<_, Base>::tiled(buf.as_mut_slice(), &t.dims, &t.strides).encode(cur)?;
        let module = cur.load_ptx(KERNEL, &JitOptions::default())?;
        // SAFETY: as in the first test.
        let load =
            unsafe { module.function::<(u32, TensorMapIn<Base>, Out<u64>)>("copy_tensor_map")? };
        // SAFETY: as above.
        let store =
            unsafe { module.function::<(u32, TensorMapOut<Base>, Out<u64>)>("copy_tensor_map")? };
        let a = cur.alloc::<u64>(17)?;
        let wrong = Err(CudaError::WrongStream { argument: Some(1) });
        let mut g = cur.create_graph()?;
        let node = g.add_kernel(&[], &load, 1, 1, 0, (5u32, &map, &a));
        assert_eq!(node.map(|_| ()), wrong);
        // A read-write map borrowed shared for a `TensorMapOut` node parameter.
        let node = g.add_kernel(&[], &store, 1, 1, 0, (6u32, &map, &a));
        assert_eq!(node.map(|_| ()), wrong);
        drop(g);
        drop(map);
        drop(buf);
        stream.synchronize()
    });
}

#[test]
fn a_read_write_map_passes_for_a_tensor_map_out_parameter() {
    on_device0(|cur| {
        let mut buf = cur.alloc::<f32>(BYTES / 4)?;
        let t = tiled();
        let mut map = TensorMap::<_, Base>::tiled(&mut buf, &t.dims, &t.strides)
            .l2_promotion(CUtensorMapL2promotion::CU_TENSOR_MAP_L2_PROMOTION_L2_128B)
            .oob_fill(CUtensorMapFloatOOBfill::CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA)
            .encode(cur)?;
        let module = cur.load_ptx(KERNEL, &JitOptions::default())?;
        // SAFETY: as above; storing through the map would be allowed, and is not done.
        let k =
            unsafe { module.function::<(u32, TensorMapOut<Base>, Out<u64>)>("copy_tensor_map")? };
        let mut out = cur.alloc::<u64>(16)?;
        let stream = cur.create_stream(CUstream_flags::CU_STREAM_NON_BLOCKING)?;
        k.launch(&stream, 1, 1, 0, (1u32, &mut map, &mut out))?;
        stream.synchronize()?;
        assert_eq!(out.to_vec()?, map.as_raw().opaque.to_vec());
        drop(map);
        // The buffer is usable again once the map is gone.
        buf.zero()?;
        Ok(())
    });
}

#[test]
fn a_declared_tensor_map_must_be_a_128_byte_parameter_aligned_to_64() {
    on_device0(|cur| {
        let module = cur.load_ptx(KERNEL, &JitOptions::default())?;
        // SAFETY: refused at lookup (the layout differs), never launched.
        let r = unsafe { module.function::<(u32, u64, Out<u64>)>("copy_tensor_map") };
        assert!(matches!(
            r,
            Err(CudaError::SignatureMismatch { parameter: 1, .. })
        ));
        // SAFETY: as above.
        let r = unsafe { module.function::<(TensorMapIn<Base>, Out<u64>)>("copy_tensor_map") };
        assert!(matches!(r, Err(CudaError::SignatureMismatch { .. })));
        Ok(())
    });
}

#[test]
fn every_rule_of_a_tiled_map_is_refused_naming_its_parameter() {
    let nan = CUtensorMapFloatOOBfill::CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA;
    // (what, case, parameter, whether the driver gets the same arrays).
    let cases: Vec<(&str, Tiled, &str, bool)> = vec![
        (
            "unknown type",
            Tiled {
                layout: t::<UnknownType>(),
                ..tiled()
            },
            "tensorDataType",
            true,
        ),
        (
            "unknown interleave",
            Tiled {
                layout: t::<UnknownInterleave>(),
                ..tiled()
            },
            "interleave",
            true,
        ),
        (
            "unknown swizzle",
            Tiled {
                layout: t::<UnknownSwizzle>(),
                ..tiled()
            },
            "swizzle",
            true,
        ),
        (
            "unknown L2",
            Tiled {
                l2: CUtensorMapL2promotion(9),
                ..tiled()
            },
            "l2Promotion",
            true,
        ),
        (
            "unknown fill",
            Tiled {
                oob: CUtensorMapFloatOOBfill(5),
                ..tiled()
            },
            "oobFill",
            true,
        ),
        (
            "rank 0",
            Tiled {
                layout: t::<Rank0>(),
                dims: vec![],
                strides: vec![],
                ..tiled()
            },
            "tensorRank",
            true,
        ),
        (
            "rank 6",
            Tiled {
                layout: t::<Rank6>(),
                dims: vec![4, 1, 1, 1, 1, 1],
                strides: vec![16; 5],
                ..tiled()
            },
            "tensorRank",
            true,
        ),
        (
            "interleave below rank 3",
            Tiled {
                layout: t::<Rank2Interleaved>(),
                dims: vec![64, 8],
                strides: vec![256],
                ..tiled()
            },
            "tensorRank",
            true,
        ),
        (
            "zero dimension",
            Tiled {
                dims: vec![64, 0, 4],
                ..tiled()
            },
            "globalDim",
            true,
        ),
        (
            "dimension over 2^32",
            Tiled {
                dims: vec![64, (1 << 32) + 1, 4],
                ..tiled()
            },
            "globalDim",
            true,
        ),
        (
            "ALIGN16B dimension 0",
            Tiled {
                dims: vec![64, 8, 4],
                ..packed(t::<PackedU4>())
            },
            "globalDim",
            true,
        ),
        (
            "ALIGN8B odd dimension 0",
            Tiled {
                layout: t::<HalfBytes>(),
                dims: vec![63, 8, 4],
                ..tiled()
            },
            "globalDim",
            true,
        ),
        (
            "stride count",
            Tiled {
                strides: vec![256],
                ..tiled()
            },
            "globalStrides",
            false,
        ),
        (
            "stride not a multiple of 16",
            Tiled {
                strides: vec![264, 2112],
                ..tiled()
            },
            "globalStrides",
            true,
        ),
        (
            "stride at 2^40",
            Tiled {
                strides: vec![256, 1 << 40],
                ..tiled()
            },
            "globalStrides",
            true,
        ),
        (
            "stride 0 below a row",
            Tiled {
                strides: vec![128, 2048],
                ..tiled()
            },
            "globalStrides",
            true,
        ),
        (
            "stride 1 below a plane",
            Tiled {
                strides: vec![256, 1024],
                ..tiled()
            },
            "globalStrides",
            true,
        ),
        (
            "32B interleave stride",
            Tiled {
                strides: vec![48, 3072],
                ..interleaved()
            },
            "globalStrides",
            true,
        ),
        (
            "ALIGN16B stride",
            Tiled {
                strides: vec![144, 1152],
                ..packed(t::<PackedU4>())
            },
            "globalStrides",
            true,
        ),
        (
            "element stride count",
            Tiled {
                layout: t::<Es2>(),
                ..tiled()
            },
            "elementStrides",
            false,
        ),
        (
            "element stride 0",
            Tiled {
                layout: t::<Es0>(),
                ..tiled()
            },
            "elementStrides",
            true,
        ),
        (
            "element stride 9",
            Tiled {
                layout: t::<Es9>(),
                ..tiled()
            },
            "elementStrides",
            true,
        ),
        (
            "box count",
            Tiled {
                layout: t::<Box2>(),
                ..tiled()
            },
            "boxDim",
            false,
        ),
        (
            "box 0",
            Tiled {
                layout: t::<Box0>(),
                ..tiled()
            },
            "boxDim",
            true,
        ),
        (
            "box 257",
            Tiled {
                layout: t::<Box257>(),
                ..tiled()
            },
            "boxDim",
            true,
        ),
        (
            "inner box not 16 bytes",
            Tiled {
                layout: t::<Box3>(),
                ..tiled()
            },
            "boxDim",
            true,
        ),
        (
            "inner box over the swizzle span",
            Tiled {
                layout: t::<Box16Sw32>(),
                ..tiled()
            },
            "boxDim",
            true,
        ),
        (
            "inner box over the 64B span",
            Tiled {
                layout: t::<Box32Sw64>(),
                ..tiled()
            },
            "boxDim",
            true,
        ),
        ("ALIGN16B box", packed(t::<U6Box64>()), "boxDim", true),
        (
            "32B interleave without the 32B swizzle",
            Tiled {
                layout: t::<Il32NoSwizzle>(),
                ..interleaved()
            },
            "swizzle",
            true,
        ),
        (
            "16U6 with interleave",
            packed(t::<U6Il16>()),
            "interleave",
            true,
        ),
        (
            "16U4_ALIGN16B swizzle",
            packed(t::<U4Sw64>()),
            "swizzle",
            true,
        ),
        (
            "16U4_ALIGN16B store-only swizzle",
            packed(t::<U4Atom64>()),
            "swizzle",
            true,
        ),
        ("16U6 swizzle", packed(t::<U6Sw32>()), "swizzle", true),
        (
            "NaN fill of integers",
            Tiled {
                layout: t::<U32Tile>(),
                oob: nan,
                ..tiled()
            },
            "oobFill",
            true,
        ),
        (
            "NaN fill of packed values",
            Tiled {
                oob: nan,
                ..packed(t::<PackedU6>())
            },
            "oobFill",
            true,
        ),
        (
            "address not 16-byte aligned",
            Tiled { at: 8, ..tiled() },
            "globalAddress",
            true,
        ),
        (
            "address not 32-byte aligned with 32B interleave",
            Tiled {
                at: 16,
                ..interleaved()
            },
            "globalAddress",
            true,
        ),
        (
            "address not 32-byte aligned for ALIGN16B",
            Tiled {
                at: 16,
                ..packed(t::<PackedU4>())
            },
            "globalAddress",
            true,
        ),
        // Only the safe layer knows the memory's extent.
        (
            "tensor past the memory",
            Tiled {
                dims: vec![64, 8, 5],
                ..tiled()
            },
            "globalAddress",
            false,
        ),
        (
            "tensor past a view",
            Tiled {
                len: BYTES - 1,
                ..tiled()
            },
            "globalAddress",
            false,
        ),
        (
            "32B interleave rounds dimension 0 up to its chunk",
            Tiled {
                layout: t::<HalfIl32>(),
                at: 32,
                len: BYTES - 12,
                ..interleaved()
            },
            "globalAddress",
            false,
        ),
        // This crate's rule (the driver does not document it).
        (
            "dimension 0 over one 32-byte interleave chunk",
            Tiled {
                dims: vec![16, 64, 4],
                strides: vec![64, 4096],
                ..interleaved()
            },
            "globalDim",
            false,
        ),
        (
            "dimension 0 over one 16-byte interleave chunk",
            Tiled {
                layout: t::<Il16>(),
                ..interleaved()
            },
            "globalDim",
            false,
        ),
    ];
    on_device0(|cur| {
        let buf = cur.alloc::<u8>(BYTES + 64)?;
        for (what, case, parameter, same_arrays) in &cases {
            assert_eq!(refused(case.encode(cur, &buf)), *parameter, "{what}");
            if *same_arrays && !ON_GPU {
                let address = buf.device_ptr() + case.at as u64;
                assert_eq!(
                    case.raw(cur, address),
                    CUresult::CUDA_ERROR_INVALID_VALUE,
                    "{what}: softcuda accepted it"
                );
            }
        }
        // Each family of cases has a valid twin that encodes, so the refusals above are
        // the rules', not the base's.
        for ok in [
            tiled(),
            Tiled {
                layout: t::<Es188>(),
                ..tiled()
            },
            Tiled {
                layout: t::<Box8Sw32>(),
                ..tiled()
            },
            interleaved(),
            Tiled {
                layout: t::<Il16>(),
                dims: vec![4, 64, 4],
                ..interleaved()
            },
            Tiled {
                layout: t::<HalfIl32>(),
                at: 32,
                ..interleaved()
            },
            Tiled {
                layout: t::<HalfBytes32>(),
                dims: vec![64, 8, 4],
                ..tiled()
            },
            Tiled {
                layout: t::<Rank1>(),
                dims: vec![64],
                strides: vec![],
                ..tiled()
            },
            packed(t::<PackedU4>()),
            packed(t::<U6Atom64>()),
            Tiled {
                layout: t::<HalfBox8>(),
                oob: nan,
                ..tiled()
            },
        ] {
            ok.encode(cur, &buf)?;
            if !ON_GPU {
                assert_eq!(
                    ok.raw(cur, buf.device_ptr() + ok.at as u64),
                    CUresult::CUDA_SUCCESS
                );
            }
        }
        Ok(())
    });
}

#[test]
fn an_interleaved_dimension_0_holds_one_chunk_so_the_span_is_exact() {
    on_device0(|cur| {
        let buf = cur.alloc::<u8>(BYTES + 64)?;
        // The driver's own rules allow a wider dimension 0 (softcuda accepts it); the
        // safe layer refuses it, naming globalDim.
        let wide = Tiled {
            dims: vec![16, 64, 4],
            strides: vec![64, 4096],
            len: BYTES + 64,
            ..interleaved()
        };
        let r = wide.encode(cur, &buf);
        match &r {
            Err(CudaError::InvalidTensorMap { parameter, rule }) => {
                assert_eq!(*parameter, "globalDim");
                assert!(rule.contains("32-byte chunk"), "{rule}");
            }
            other => panic!("expected InvalidTensorMap, got {other:?}"),
        }
        if !ON_GPU {
            assert_eq!(
                wide.raw(cur, buf.device_ptr()),
                CUresult::CUDA_SUCCESS,
                "softcuda follows the driver's documented rules"
            );
        }
        // One chunk exactly: the span is 32 + 63 × 32 + 3 × 2048 = 8192 bytes; the
        // memory may hold exactly that, not a byte less.
        let exact = interleaved();
        exact.encode(cur, &buf)?;
        let short = Tiled {
            len: BYTES - 1,
            ..interleaved()
        };
        assert_eq!(refused(short.encode(cur, &buf)), "globalAddress");
        // Less than a chunk (f16 × 8 = 16 bytes) still spans the whole chunk.
        let half = Tiled {
            layout: t::<HalfIl32>(),
            len: BYTES - 16,
            ..interleaved()
        };
        assert_eq!(refused(half.encode(cur, &buf)), "globalAddress");
        Ok(())
    });
}

#[test]
fn a_constructor_of_another_kind_than_the_layout_is_refused() {
    on_device0(|cur| {
        let buf = cur.alloc::<u8>(BYTES)?;
        let t = tiled();
        let r = TensorMap::<_, Im2colBase>::tiled(&buf, &t.dims, &t.strides).encode(cur);
        assert_eq!(refused(r), "TensorLayout::KIND");
        let i = im2col();
        let r =
            TensorMap::<_, Base>::im2col(&buf, &i.dims, &i.strides, &i.lower, &i.upper).encode(cur);
        assert_eq!(refused(r), "TensorLayout::KIND");
        let r = TensorMap::<_, Im2colBase>::im2col_wide(&buf, &[32, 64, 2], &[64, 4096], -2, 2)
            .encode(cur);
        assert_eq!(refused(r), "TensorLayout::KIND");
        let r = TensorMap::<_, WideBase>::im2col(&buf, &i.dims, &i.strides, &i.lower, &i.upper)
            .encode(cur);
        assert_eq!(refused(r), "TensorLayout::KIND");
        // The right constructor encodes the same arrays.
        TensorMap::<_, Im2colBase>::im2col(&buf, &i.dims, &i.strides, &i.lower, &i.upper)
            .encode(cur)?;
        Ok(())
    });
}

#[test]
fn tensor_maps_need_compute_capability_9() {
    let (d, _g) = common::driver();
    let dev = common::second_device(d);
    let (major, _) = dev.compute_capability().unwrap();
    let ctx =
        oxicuda_driver::Context::new(&dev, oxicuda_driver::sys::CUctx_flags::empty()).unwrap();
    ctx.bind(|cur| {
        let buf = cur.alloc::<u8>(BYTES).unwrap();
        let r = tiled().encode(cur, &buf);
        if major >= 9 {
            r.unwrap();
        } else {
            assert_eq!(refused(r), "device");
        }
    })
    .unwrap();
    drop(ctx);
    common::no_leaks();
}

// Im2col layouts: the base (f16, 32 channels × 64 pixels, rank 4), one per rule.
layout! {
    Im2colBase: F16, im2(32, 64), ES4;
    Im2colRank5: F16, im2(16, 64), &[1; 5];
    Im2colRank2: F16, im2(32, 64), &[1, 1];
    Im2colNoChannels: F16, im2(0, 64), ES4;
    Im2col257Channels: F16, im2(257, 64), ES4;
    Im2colNoPixels: F16, im2(32, 0), ES4;
    Im2col1025Pixels: F16, im2(32, 1025), ES4;
    Im2colSw32: F16, im2(32, 64), ES4, IL_NONE, SW32;
}

/// Encodes an im2col case's map; its descriptor's words.
type Im2colFn =
    fn(&Im2col, &CurrentContext<'_>, &DeviceBuffer<'_, u16>) -> Result<[u64; 16], CudaError>;

/// The im2col layout `L`'s values and encoder.
fn i<L: TensorLayout>() -> Spec<Im2colFn> {
    Spec::of::<L>(Im2col::encode_as::<L>)
}

/// An im2col map's parameters: f16 NHWC, C = 32, W = H = 8, N = 2.
#[derive(Clone)]
struct Im2col {
    layout: Spec<Im2colFn>,
    dims: Vec<u64>,
    strides: Vec<u64>,
    lower: Vec<i32>,
    upper: Vec<i32>,
}

fn im2col() -> Im2col {
    Im2col {
        layout: i::<Im2colBase>(),
        dims: vec![32, 8, 8, 2],
        strides: vec![64, 512, 4096],
        lower: vec![-1, -1],
        upper: vec![1, 1],
    }
}

impl Im2col {
    fn encode(
        &self,
        cur: &CurrentContext<'_>,
        buf: &DeviceBuffer<'_, u16>,
    ) -> Result<[u64; 16], CudaError> {
        (self.layout.encode)(self, cur, buf)
    }

    fn encode_as<L: TensorLayout>(
        &self,
        cur: &CurrentContext<'_>,
        buf: &DeviceBuffer<'_, u16>,
    ) -> Result<[u64; 16], CudaError> {
        let map =
            TensorMap::<_, L>::im2col(buf, &self.dims, &self.strides, &self.lower, &self.upper)
                .encode(cur)?;
        Ok(map.as_raw().opaque)
    }
}

#[test]
fn im2col_maps_encode_and_their_rules_are_refused() {
    on_device0(|cur| {
        let buf = cur.alloc::<u16>(4096)?;
        let b = im2col().encode(cur, &buf)?;
        if SOFT {
            assert_eq!(&b[0].to_le_bytes()[..7], b"SCTM\x02\x04\x06");
            // channels 32, pixels 64; the corners as i16.
            assert_eq!(b[1] >> 32, 32 | 64 << 16);
            let corners = b[13].to_le_bytes();
            assert_eq!(&corners[2..6], &[0xff, 0xff, 0xff, 0xff]);
        }
        let rank5 = Im2col {
            layout: i::<Im2colRank5>(),
            dims: vec![16, 4, 4, 4, 2],
            strides: vec![32, 128, 512, 2048],
            lower: vec![-16, 0, 0],
            upper: vec![15, 0, 0],
        };
        rank5.encode(cur, &buf)?;
        let cases: Vec<(&str, Im2col, &str)> = vec![
            (
                "rank 2",
                Im2col {
                    layout: i::<Im2colRank2>(),
                    dims: vec![32, 8],
                    strides: vec![64],
                    lower: vec![],
                    upper: vec![],
                },
                "tensorRank",
            ),
            (
                "corner count",
                Im2col {
                    lower: vec![0],
                    ..im2col()
                },
                "pixelBoxLowerCorner",
            ),
            (
                "rank-4 lower corner",
                Im2col {
                    lower: vec![-129, 0],
                    ..im2col()
                },
                "pixelBoxLowerCorner",
            ),
            (
                "rank-4 upper corner",
                Im2col {
                    upper: vec![0, 128],
                    ..im2col()
                },
                "pixelBoxUpperCorner",
            ),
            (
                "rank-5 corner",
                Im2col {
                    lower: vec![16, 0, 0],
                    ..rank5.clone()
                },
                "pixelBoxLowerCorner",
            ),
            (
                "empty box",
                Im2col {
                    lower: vec![4, 0],
                    upper: vec![-4, 0],
                    ..im2col()
                },
                "pixelBoxUpperCorner",
            ),
            (
                "no channels",
                Im2col {
                    layout: i::<Im2colNoChannels>(),
                    ..im2col()
                },
                "channelsPerPixel",
            ),
            (
                "257 channels",
                Im2col {
                    layout: i::<Im2col257Channels>(),
                    ..im2col()
                },
                "channelsPerPixel",
            ),
            (
                "no pixels",
                Im2col {
                    layout: i::<Im2colNoPixels>(),
                    ..im2col()
                },
                "pixelsPerColumn",
            ),
            (
                "1025 pixels",
                Im2col {
                    layout: i::<Im2col1025Pixels>(),
                    ..im2col()
                },
                "pixelsPerColumn",
            ),
            (
                "channels over the swizzle span",
                Im2col {
                    layout: i::<Im2colSw32>(),
                    ..im2col()
                },
                "channelsPerPixel",
            ),
            (
                "tensor past the memory",
                Im2col {
                    dims: vec![32, 8, 8, 3],
                    ..im2col()
                },
                "globalAddress",
            ),
        ];
        for (what, case, parameter) in &cases {
            assert_eq!(refused(case.encode(cur, &buf)), *parameter, "{what}");
        }
        // softcuda refuses the same corners, given the same arrays.
        if !ON_GPU {
            for case in [
                &cases[2].1,
                &cases[3].1,
                &cases[5].1,
                &cases[6].1,
                &cases[9].1,
                &cases[10].1,
            ] {
                let mut raw = CUtensorMap { opaque: [0; 16] };
                let l = &case.layout;
                let (channels, pixels) = l.pixels();
                // SAFETY: arrays of the rank's counts; a 64-byte-aligned map.
                let r = unsafe {
                    cur.driver().table().cuTensorMapEncodeIm2col().unwrap()(
                        &mut raw,
                        l.dtype,
                        4,
                        buf.device_ptr() as *mut _,
                        case.dims.as_ptr(),
                        case.strides.as_ptr(),
                        case.lower.as_ptr(),
                        case.upper.as_ptr(),
                        channels,
                        pixels,
                        l.es.as_ptr(),
                        l.il,
                        l.sw,
                        CUtensorMapL2promotion::CU_TENSOR_MAP_L2_PROMOTION_NONE,
                        CUtensorMapFloatOOBfill::CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE,
                    )
                };
                assert_eq!(r, CUresult::CUDA_ERROR_INVALID_VALUE);
            }
        }
        Ok(())
    });
}

/// Runs `f` under a context of a device of compute capability 10.0: softcuda's third
/// device, configured for this binary (every test here configures the same devices).
/// In the GPU suite, device 0 whatever it is.
fn on_cc10<R>(f: impl for<'c> FnOnce(&mut CurrentContext<'c>) -> Result<R, CudaError>) -> R {
    let (d, _g) = common::driver();
    if !ON_GPU {
        use softcuda::control::Profile;
        let devices = vec![
            Profile::new(0, 9, 0, 8192),
            Profile::new(1, 8, 0, 4096),
            Profile::new(2, 10, 0, 1024),
        ];
        softcuda::control::configure(12090, devices).unwrap();
    }
    let dev = d.device(if ON_GPU { 0 } else { 2 }).unwrap();
    let ctx =
        oxicuda_driver::Context::new(&dev, oxicuda_driver::sys::CUctx_flags::empty()).unwrap();
    let r = ctx.bind(f).unwrap().unwrap();
    drop(ctx);
    if !ON_GPU {
        softcuda::control::configure(12090, softcuda::control::Profile::defaults()).unwrap();
    }
    common::no_leaks();
    r
}

// Im2col-wide layouts: the base (f16, 32 channels × 64 pixels, W mode, 128-byte
// swizzle), one per rule.
layout! {
    WideBase: F16, wide_kind(32, 64, W), ES3, IL_NONE, SW128;
    WideW128NoPixels: F16, wide_kind(32, 0, W128), ES3, IL_NONE, SW128;
    WideW128ManyPixels: F16, wide_kind(32, 5000, W128), ES3, IL_NONE, SW128;
    WideSw64: F16, wide_kind(32, 64, W), ES3, IL_NONE, SW64;
    WideNoSwizzle: F16, wide_kind(32, 64, W), ES3, IL_NONE, SW_NONE;
    WideSw32: F16, wide_kind(32, 64, W), ES3, IL_NONE, SW32;
    WideFlip: F16, wide_kind(32, 64, W), ES3, IL_NONE, Sw::CU_TENSOR_MAP_SWIZZLE_128B_ATOM_32B_FLIP_8B;
    WideMode7: F16, wide_kind(32, 64, Mode(7)), ES3, IL_NONE, SW128;
    Wide1025Pixels: F16, wide_kind(32, 1025, W), ES3, IL_NONE, SW128;
    Wide128Channels: F16, wide_kind(128, 64, W), ES3, IL_NONE, SW64;
}

/// Encodes an im2col-wide case's map; its descriptor's words.
type WideFn =
    fn(&Wide, &CurrentContext<'_>, &mut DeviceBuffer<'_, u16>) -> Result<[u64; 16], CudaError>;

/// The im2col-wide layout `L`'s values and encoder.
fn w<L: TensorLayout>() -> Spec<WideFn> {
    Spec::of::<L>(Wide::encode_as::<L>)
}

/// An im2col-wide map's parameters: f16 NWC, C = 32, W = 64, N = 2.
#[derive(Clone)]
struct Wide {
    layout: Spec<WideFn>,
    lower: i32,
    upper: i32,
}

fn wide() -> Wide {
    Wide {
        layout: w::<WideBase>(),
        lower: -2,
        upper: 2,
    }
}

impl Wide {
    fn encode(
        &self,
        cur: &CurrentContext<'_>,
        buf: &mut DeviceBuffer<'_, u16>,
    ) -> Result<[u64; 16], CudaError> {
        (self.layout.encode)(self, cur, buf)
    }

    fn encode_as<L: TensorLayout>(
        &self,
        cur: &CurrentContext<'_>,
        buf: &mut DeviceBuffer<'_, u16>,
    ) -> Result<[u64; 16], CudaError> {
        let map =
            TensorMap::<_, L>::im2col_wide(buf, &[32, 64, 2], &[64, 4096], self.lower, self.upper)
                .encode(cur)?;
        Ok(map.as_raw().opaque)
    }
}

#[test]
fn im2col_wide_maps_need_compute_capability_10_and_keep_their_rules() {
    // On a 9.0 device: refused, naming the device.
    on_device0(|cur| {
        let mut buf = cur.alloc::<u16>(4096)?;
        let (major, _) = cur.device()?.compute_capability()?;
        let r = wide().encode(cur, &mut buf);
        if major < 10 {
            assert_eq!(refused(r), "device");
        }
        Ok(())
    });
    on_cc10(|cur| {
        let (major, _) = cur.device()?.compute_capability()?;
        let mut buf = cur.alloc::<u16>(4096)?;
        if major < 10 {
            assert_eq!(refused(wide().encode(cur, &mut buf)), "device");
            return Ok(());
        }
        let b = wide().encode(cur, &mut buf)?;
        if SOFT {
            assert_eq!(&b[0].to_le_bytes()[..7], b"SCTM\x03\x03\x06");
        }
        // W128 ignores pixelsPerColumn (0 or over 1024).
        for ok in [
            w::<WideW128NoPixels>(),
            w::<WideW128ManyPixels>(),
            w::<WideSw64>(),
        ] {
            Wide {
                layout: ok,
                ..wide()
            }
            .encode(cur, &mut buf)?;
        }
        let cases: Vec<(&str, Wide, &str)> = vec![
            (
                "no swizzle",
                Wide {
                    layout: w::<WideNoSwizzle>(),
                    ..wide()
                },
                "swizzle",
            ),
            (
                "32B swizzle",
                Wide {
                    layout: w::<WideSw32>(),
                    ..wide()
                },
                "swizzle",
            ),
            (
                "flip swizzle",
                Wide {
                    layout: w::<WideFlip>(),
                    ..wide()
                },
                "swizzle",
            ),
            (
                "unknown mode",
                Wide {
                    layout: w::<WideMode7>(),
                    ..wide()
                },
                "mode",
            ),
            (
                "lower width",
                Wide {
                    lower: 40_000,
                    ..wide()
                },
                "pixelBoxLowerCornerWidth",
            ),
            (
                "upper width",
                Wide {
                    upper: -40_000,
                    ..wide()
                },
                "pixelBoxUpperCornerWidth",
            ),
            (
                "empty box",
                Wide {
                    lower: 40,
                    upper: -30,
                    ..wide()
                },
                "pixelBoxUpperCornerWidth",
            ),
            (
                "pixels in W mode",
                Wide {
                    layout: w::<Wide1025Pixels>(),
                    ..wide()
                },
                "pixelsPerColumn",
            ),
            (
                "channels over the span",
                Wide {
                    layout: w::<Wide128Channels>(),
                    ..wide()
                },
                "channelsPerPixel",
            ),
        ];
        for (what, case, parameter) in &cases {
            assert_eq!(refused(case.encode(cur, &mut buf)), *parameter, "{what}");
        }
        Ok(())
    });
}

#[test]
fn replacing_the_address_checks_alignment_and_extent() {
    on_device0(|cur| {
        let (a, b) = (cur.alloc::<u8>(BYTES + 64)?, cur.alloc::<u8>(BYTES + 64)?);
        let mut map = base_map(cur, &a)?;
        map.replace_address(b.as_slice())?;
        if SOFT {
            assert_eq!(map.as_raw().opaque[2], b.device_ptr());
        }
        let before = map.as_raw().opaque;
        // Misaligned, and too short: refused, the map unchanged.
        assert_eq!(
            refused(map.replace_address(b.as_slice().slice(8..)?)),
            "globalAddress"
        );
        assert_eq!(
            refused(map.replace_address(b.as_slice().slice(..BYTES - 16)?)),
            "globalAddress"
        );
        assert_eq!(map.as_raw().opaque, before);
        map.replace_address(a.as_slice().slice(32..)?)?;
        if SOFT {
            assert_eq!(map.as_raw().opaque[2], a.device_ptr() + 32);
        }
        Ok(())
    });
}

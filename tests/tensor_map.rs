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
use oxicuda_driver::module::{JitOptions, entry_params};
use oxicuda_driver::sys::{
    CUresult, CUstream_flags, CUtensorMap, CUtensorMapDataType as Dt, CUtensorMapFloatOOBfill,
    CUtensorMapIm2ColWideMode as Mode, CUtensorMapInterleave as Il, CUtensorMapL2promotion,
    CUtensorMapSwizzle as Sw,
};
use oxicuda_driver::tensor_map::{TensorMap, TensorMapIn, TensorMapOut};
use oxicuda_driver::{CudaError, CurrentContext};

const KERNEL: &str = include_str!("../kernels/handwritten_tensor_map.ptx");
const NVRTC_KERNEL: &str = include_str!("../kernels/tensor_map.ptx");

/// A tiled map's parameters, as the C function takes them.
#[derive(Clone)]
struct Tiled {
    dtype: Dt,
    dims: Vec<u64>,
    strides: Vec<u64>,
    boxes: Vec<u32>,
    es: Vec<u32>,
    il: Il,
    sw: Sw,
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
        dtype: Dt::CU_TENSOR_MAP_DATA_TYPE_FLOAT32,
        dims: vec![64, 8, 4],
        strides: vec![256, 2048],
        boxes: vec![16, 4, 2],
        es: vec![1, 1, 1],
        il: Il::CU_TENSOR_MAP_INTERLEAVE_NONE,
        sw: Sw::CU_TENSOR_MAP_SWIZZLE_NONE,
        l2: CUtensorMapL2promotion::CU_TENSOR_MAP_L2_PROMOTION_NONE,
        oob: CUtensorMapFloatOOBfill::CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE,
        at: 0,
        len: BYTES,
    }
}

/// Packed `dtype` (dimension 0 a multiple of 128, boxes of 128).
fn packed(dtype: Dt) -> Tiled {
    Tiled {
        dtype,
        dims: vec![128, 8, 4],
        strides: vec![128, 1024],
        boxes: vec![128, 1, 1],
        ..tiled()
    }
}

impl Tiled {
    fn encode<'b>(
        &self,
        cur: &CurrentContext<'_>,
        buf: &'b oxicuda_driver::memory::DeviceBuffer<'_, u8>,
    ) -> Result<TensorMap<'b, oxicuda_driver::tensor_map::ReadOnly>, CudaError> {
        let view = buf.as_slice().slice(self.at..self.at + self.len)?;
        TensorMap::tiled(
            self.dtype,
            view,
            &self.dims,
            &self.strides,
            &self.boxes,
            &self.es,
        )
        .interleave(self.il)
        .swizzle(self.sw)
        .l2_promotion(self.l2)
        .oob_fill(self.oob)
        .encode(cur)
    }

    /// The same parameters straight to the driver (every array as long as the rank
    /// says: only for cases that keep them so).
    fn raw(&self, cur: &CurrentContext<'_>, address: u64) -> CUresult {
        let mut map = CUtensorMap { opaque: [0; 16] };
        // SAFETY: every array holds the rank's count (the callers' cases keep them so);
        // the map is 64-byte aligned; softcuda only writes the map.
        unsafe {
            cur.driver().table().cuTensorMapEncodeTiled().unwrap()(
                &mut map,
                self.dtype,
                self.dims.len() as u32,
                address as *mut _,
                self.dims.as_ptr(),
                self.strides.as_ptr(),
                self.boxes.as_ptr(),
                self.es.as_ptr(),
                self.il,
                self.sw,
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

#[test]
fn a_valid_tiled_map_encodes_and_reaches_a_kernel_whole_and_aligned() {
    on_device0(|cur| {
        let buf = cur.alloc::<u8>(BYTES + 64)?;
        let t = tiled();
        let map = t.encode(cur, &buf)?;
        let raw = map.as_raw().opaque;
        if SOFT {
            // softcuda's layout (docs/softcuda.md): magic, kind, rank, type; address.
            assert_eq!(&raw[0].to_le_bytes()[..7], b"SCTM\x01\x03\x07");
            assert_eq!(raw[2], buf.device_ptr());
            assert_eq!(&raw[3..6], &[64, 8, 4]);
            assert_eq!(&raw[8..10], &[256, 2048]);
        }
        // The PTX parameter scan reads the descriptor as 128 bytes at offset 64.
        assert_eq!(
            entry_params(KERNEL, "copy_tensor_map"),
            Some(vec![(0, 4), (64, 128), (192, 16)])
        );
        let module = cur.load_ptx(KERNEL, &JitOptions::default())?;
        // SAFETY: kernels/handwritten_tensor_map.ptx: thread 0 writes `out` below its
        // length only, and uses the map for nothing but reading its bytes.
        let k = unsafe { module.function::<(u32, TensorMapIn, Out<u64>)>("copy_tensor_map")? };
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
        let map = tiled().encode(cur, &buf)?;
        // What NVRTC emits for `const __grid_constant__ CUtensorMap`.
        assert_eq!(
            entry_params(NVRTC_KERNEL, "copy_grid_constant_map"),
            Some(vec![(0, 4), (64, 128), (192, 16)])
        );
        let module = cur.load_ptx(NVRTC_KERNEL, &JitOptions::default())?;
        // SAFETY: kernels/tensor_map.cu: writes `out` below its length only, and reads
        // the map's bytes, nothing through it.
        let k =
            unsafe { module.function::<(u32, TensorMapIn, Out<u64>)>("copy_grid_constant_map")? };
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
        let map = TensorMap::tiled(t.dtype, &mut buf, &t.dims, &t.strides, &t.boxes, &t.es)
            .encode(cur)?;
        let module = cur.load_ptx(KERNEL, &JitOptions::default())?;
        // SAFETY: as in the first test.
        let load = unsafe { module.function::<(u32, TensorMapIn, Out<u64>)>("copy_tensor_map")? };
        // SAFETY: as above; storing through the map would be allowed, and is not done.
        let store = unsafe { module.function::<(u32, TensorMapOut, Out<u64>)>("copy_tensor_map")? };
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
fn a_read_write_map_passes_for_a_tensor_map_out_parameter() {
    on_device0(|cur| {
        let mut buf = cur.alloc::<f32>(BYTES / 4)?;
        let t = tiled();
        let mut map = TensorMap::tiled(t.dtype, &mut buf, &t.dims, &t.strides, &t.boxes, &t.es)
            .l2_promotion(CUtensorMapL2promotion::CU_TENSOR_MAP_L2_PROMOTION_L2_128B)
            .oob_fill(CUtensorMapFloatOOBfill::CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA)
            .encode(cur)?;
        let module = cur.load_ptx(KERNEL, &JitOptions::default())?;
        // SAFETY: as above; storing through the map would be allowed, and is not done.
        let k = unsafe { module.function::<(u32, TensorMapOut, Out<u64>)>("copy_tensor_map")? };
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
        let r = unsafe { module.function::<(TensorMapIn, Out<u64>)>("copy_tensor_map") };
        assert!(matches!(r, Err(CudaError::SignatureMismatch { .. })));
        Ok(())
    });
}

#[test]
fn every_rule_of_a_tiled_map_is_refused_naming_its_parameter() {
    let f16 = Dt::CU_TENSOR_MAP_DATA_TYPE_FLOAT16;
    let u4a16 = Dt::CU_TENSOR_MAP_DATA_TYPE_16U4_ALIGN16B;
    let u6 = Dt::CU_TENSOR_MAP_DATA_TYPE_16U6_ALIGN16B;
    let nan = CUtensorMapFloatOOBfill::CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA;
    let il32 = Il::CU_TENSOR_MAP_INTERLEAVE_32B;
    let sw32 = Sw::CU_TENSOR_MAP_SWIZZLE_32B;
    // (what, case, parameter, whether the driver gets the same arrays).
    let cases: Vec<(&str, Tiled, &str, bool)> = vec![
        (
            "unknown type",
            Tiled {
                dtype: Dt(99),
                ..tiled()
            },
            "tensorDataType",
            true,
        ),
        (
            "unknown interleave",
            Tiled {
                il: Il(7),
                ..tiled()
            },
            "interleave",
            true,
        ),
        (
            "unknown swizzle",
            Tiled {
                sw: Sw(9),
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
                dims: vec![],
                strides: vec![],
                boxes: vec![],
                es: vec![],
                ..tiled()
            },
            "tensorRank",
            true,
        ),
        (
            "rank 6",
            Tiled {
                dims: vec![4, 1, 1, 1, 1, 1],
                strides: vec![16; 5],
                boxes: vec![4; 6],
                es: vec![1; 6],
                ..tiled()
            },
            "tensorRank",
            true,
        ),
        (
            "interleave below rank 3",
            Tiled {
                dims: vec![64, 8],
                strides: vec![256],
                boxes: vec![16, 4],
                es: vec![1, 1],
                il: Il::CU_TENSOR_MAP_INTERLEAVE_16B,
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
                ..packed(u4a16)
            },
            "globalDim",
            true,
        ),
        (
            "ALIGN8B odd dimension 0",
            Tiled {
                dtype: Dt::CU_TENSOR_MAP_DATA_TYPE_16U4_ALIGN8B,
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
                strides: vec![272, 2176],
                il: il32,
                sw: sw32,
                ..tiled()
            },
            "globalStrides",
            true,
        ),
        (
            "ALIGN16B stride",
            Tiled {
                strides: vec![144, 1152],
                ..packed(u4a16)
            },
            "globalStrides",
            true,
        ),
        (
            "element stride count",
            Tiled {
                es: vec![1, 1],
                ..tiled()
            },
            "elementStrides",
            false,
        ),
        (
            "element stride 0",
            Tiled {
                es: vec![1, 0, 1],
                ..tiled()
            },
            "elementStrides",
            true,
        ),
        (
            "element stride 9",
            Tiled {
                es: vec![1, 9, 1],
                ..tiled()
            },
            "elementStrides",
            true,
        ),
        (
            "box count",
            Tiled {
                boxes: vec![16, 4],
                ..tiled()
            },
            "boxDim",
            false,
        ),
        (
            "box 0",
            Tiled {
                boxes: vec![16, 0, 2],
                ..tiled()
            },
            "boxDim",
            true,
        ),
        (
            "box 257",
            Tiled {
                boxes: vec![16, 257, 2],
                ..tiled()
            },
            "boxDim",
            true,
        ),
        (
            "inner box not 16 bytes",
            Tiled {
                boxes: vec![3, 4, 2],
                ..tiled()
            },
            "boxDim",
            true,
        ),
        (
            "inner box over the swizzle span",
            Tiled {
                sw: sw32,
                ..tiled()
            },
            "boxDim",
            true,
        ),
        (
            "inner box over the 64B span",
            Tiled {
                boxes: vec![32, 4, 2],
                sw: Sw::CU_TENSOR_MAP_SWIZZLE_64B,
                ..tiled()
            },
            "boxDim",
            true,
        ),
        (
            "ALIGN16B box",
            Tiled {
                boxes: vec![64, 1, 1],
                ..packed(u6)
            },
            "boxDim",
            true,
        ),
        (
            "32B interleave without the 32B swizzle",
            Tiled {
                il: il32,
                ..tiled()
            },
            "swizzle",
            true,
        ),
        (
            "16U6 with interleave",
            Tiled {
                il: Il::CU_TENSOR_MAP_INTERLEAVE_16B,
                ..packed(u6)
            },
            "interleave",
            true,
        ),
        (
            "16U4_ALIGN16B swizzle",
            Tiled {
                sw: Sw::CU_TENSOR_MAP_SWIZZLE_64B,
                ..packed(u4a16)
            },
            "swizzle",
            true,
        ),
        (
            "16U4_ALIGN16B store-only swizzle",
            Tiled {
                sw: Sw::CU_TENSOR_MAP_SWIZZLE_128B_ATOM_64B,
                ..packed(u4a16)
            },
            "swizzle",
            true,
        ),
        (
            "16U6 swizzle",
            Tiled {
                sw: sw32,
                ..packed(u6)
            },
            "swizzle",
            true,
        ),
        (
            "NaN fill of integers",
            Tiled {
                dtype: Dt::CU_TENSOR_MAP_DATA_TYPE_UINT32,
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
                ..packed(u6)
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
                il: il32,
                sw: sw32,
                boxes: vec![8, 4, 2],
                ..tiled()
            },
            "globalAddress",
            true,
        ),
        (
            "address not 32-byte aligned for ALIGN16B",
            Tiled {
                at: 16,
                ..packed(u4a16)
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
            "32B interleave rounds rows up",
            Tiled {
                dtype: f16,
                dims: vec![120, 8, 4],
                strides: vec![256, 2048],
                boxes: vec![16, 4, 2],
                il: il32,
                sw: sw32,
                at: 32,
                len: 8180,
                ..tiled()
            },
            "globalAddress",
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
                es: vec![1, 8, 8],
                ..tiled()
            },
            Tiled {
                boxes: vec![8, 4, 2],
                sw: sw32,
                ..tiled()
            },
            Tiled {
                boxes: vec![8, 4, 2],
                il: il32,
                sw: sw32,
                ..tiled()
            },
            Tiled {
                il: Il::CU_TENSOR_MAP_INTERLEAVE_16B,
                boxes: vec![3, 4, 2],
                ..tiled()
            },
            Tiled {
                dtype: f16,
                dims: vec![120, 8, 4],
                boxes: vec![16, 4, 2],
                il: il32,
                sw: sw32,
                at: 32,
                len: 8192,
                ..tiled()
            },
            Tiled {
                dtype: Dt::CU_TENSOR_MAP_DATA_TYPE_16U4_ALIGN8B,
                dims: vec![64, 8, 4],
                boxes: vec![32, 4, 2],
                ..tiled()
            },
            Tiled {
                dims: vec![64],
                strides: vec![],
                boxes: vec![4],
                es: vec![1],
                ..tiled()
            },
            packed(u4a16),
            Tiled {
                sw: Sw::CU_TENSOR_MAP_SWIZZLE_128B_ATOM_64B,
                ..packed(u6)
            },
            Tiled {
                oob: nan,
                dtype: f16,
                boxes: vec![8, 4, 2],
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

/// An im2col map's parameters: f16 NHWC, C = 32, W = H = 8, N = 2.
#[derive(Clone)]
struct Im2col {
    dims: Vec<u64>,
    strides: Vec<u64>,
    lower: Vec<i32>,
    upper: Vec<i32>,
    channels: u32,
    pixels: u32,
    es: Vec<u32>,
    sw: Sw,
}

fn im2col() -> Im2col {
    Im2col {
        dims: vec![32, 8, 8, 2],
        strides: vec![64, 512, 4096],
        lower: vec![-1, -1],
        upper: vec![1, 1],
        channels: 32,
        pixels: 64,
        es: vec![1, 1, 1, 1],
        sw: Sw::CU_TENSOR_MAP_SWIZZLE_NONE,
    }
}

impl Im2col {
    fn encode<'b>(
        &self,
        cur: &CurrentContext<'_>,
        buf: &'b oxicuda_driver::memory::DeviceBuffer<'_, u16>,
    ) -> Result<TensorMap<'b, oxicuda_driver::tensor_map::ReadOnly>, CudaError> {
        TensorMap::im2col(
            Dt::CU_TENSOR_MAP_DATA_TYPE_FLOAT16,
            buf,
            &self.dims,
            &self.strides,
            &self.lower,
            &self.upper,
            self.channels,
            self.pixels,
            &self.es,
        )
        .swizzle(self.sw)
        .encode(cur)
    }
}

#[test]
fn im2col_maps_encode_and_their_rules_are_refused() {
    on_device0(|cur| {
        let buf = cur.alloc::<u16>(4096)?;
        let map = im2col().encode(cur, &buf)?;
        if SOFT {
            let b = map.as_raw().opaque;
            assert_eq!(&b[0].to_le_bytes()[..7], b"SCTM\x02\x04\x06");
            // channels 32, pixels 64; the corners as i16.
            assert_eq!(b[1] >> 32, 32 | 64 << 16);
            let corners = b[13].to_le_bytes();
            assert_eq!(&corners[2..6], &[0xff, 0xff, 0xff, 0xff]);
        }
        let rank5 = Im2col {
            dims: vec![16, 4, 4, 4, 2],
            strides: vec![32, 128, 512, 2048],
            lower: vec![-16, 0, 0],
            upper: vec![15, 0, 0],
            channels: 16,
            es: vec![1; 5],
            ..im2col()
        };
        rank5.encode(cur, &buf)?;
        let cases: Vec<(&str, Im2col, &str)> = vec![
            (
                "rank 2",
                Im2col {
                    dims: vec![32, 8],
                    strides: vec![64],
                    lower: vec![],
                    upper: vec![],
                    es: vec![1, 1],
                    ..im2col()
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
                    channels: 0,
                    ..im2col()
                },
                "channelsPerPixel",
            ),
            (
                "257 channels",
                Im2col {
                    channels: 257,
                    ..im2col()
                },
                "channelsPerPixel",
            ),
            (
                "no pixels",
                Im2col {
                    pixels: 0,
                    ..im2col()
                },
                "pixelsPerColumn",
            ),
            (
                "1025 pixels",
                Im2col {
                    pixels: 1025,
                    ..im2col()
                },
                "pixelsPerColumn",
            ),
            (
                "channels over the swizzle span",
                Im2col {
                    sw: Sw::CU_TENSOR_MAP_SWIZZLE_32B,
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
                // SAFETY: arrays of the rank's counts; a 64-byte-aligned map.
                let r = unsafe {
                    cur.driver().table().cuTensorMapEncodeIm2col().unwrap()(
                        &mut raw,
                        Dt::CU_TENSOR_MAP_DATA_TYPE_FLOAT16,
                        4,
                        buf.device_ptr() as *mut _,
                        case.dims.as_ptr(),
                        case.strides.as_ptr(),
                        case.lower.as_ptr(),
                        case.upper.as_ptr(),
                        case.channels,
                        case.pixels,
                        case.es.as_ptr(),
                        Il::CU_TENSOR_MAP_INTERLEAVE_NONE,
                        case.sw,
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

/// An im2col-wide map's parameters: f16 NWC, C = 32, W = 64, N = 2.
#[derive(Clone)]
struct Wide {
    lower: i32,
    upper: i32,
    channels: u32,
    pixels: u32,
    sw: Sw,
    mode: Mode,
}

fn wide() -> Wide {
    Wide {
        lower: -2,
        upper: 2,
        channels: 32,
        pixels: 64,
        sw: Sw::CU_TENSOR_MAP_SWIZZLE_128B,
        mode: Mode::CU_TENSOR_MAP_IM2COL_WIDE_MODE_W,
    }
}

impl Wide {
    fn encode<'b>(
        &self,
        cur: &CurrentContext<'_>,
        buf: &'b mut oxicuda_driver::memory::DeviceBuffer<'_, u16>,
    ) -> Result<TensorMap<'b>, CudaError> {
        TensorMap::im2col_wide(
            Dt::CU_TENSOR_MAP_DATA_TYPE_FLOAT16,
            buf,
            &[32, 64, 2],
            &[64, 4096],
            self.lower,
            self.upper,
            self.channels,
            self.pixels,
            &[1, 1, 1],
        )
        .swizzle(self.sw)
        .wide_mode(self.mode)
        .encode(cur)
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
        let map = wide().encode(cur, &mut buf)?;
        if SOFT {
            let b = map.as_raw().opaque;
            assert_eq!(&b[0].to_le_bytes()[..7], b"SCTM\x03\x03\x06");
        }
        drop(map);
        // W128 ignores pixelsPerColumn (0 or over 1024).
        Wide {
            pixels: 0,
            mode: Mode::CU_TENSOR_MAP_IM2COL_WIDE_MODE_W128,
            ..wide()
        }
        .encode(cur, &mut buf)?;
        Wide {
            pixels: 5000,
            mode: Mode::CU_TENSOR_MAP_IM2COL_WIDE_MODE_W128,
            ..wide()
        }
        .encode(cur, &mut buf)?;
        Wide {
            sw: Sw::CU_TENSOR_MAP_SWIZZLE_64B,
            ..wide()
        }
        .encode(cur, &mut buf)?;
        let cases: Vec<(&str, Wide, &str)> = vec![
            (
                "no swizzle",
                Wide {
                    sw: Sw::CU_TENSOR_MAP_SWIZZLE_NONE,
                    ..wide()
                },
                "swizzle",
            ),
            (
                "32B swizzle",
                Wide {
                    sw: Sw::CU_TENSOR_MAP_SWIZZLE_32B,
                    ..wide()
                },
                "swizzle",
            ),
            (
                "flip swizzle",
                Wide {
                    sw: Sw::CU_TENSOR_MAP_SWIZZLE_128B_ATOM_32B_FLIP_8B,
                    ..wide()
                },
                "swizzle",
            ),
            (
                "unknown mode",
                Wide {
                    mode: Mode(7),
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
                    pixels: 1025,
                    ..wide()
                },
                "pixelsPerColumn",
            ),
            (
                "channels over the span",
                Wide {
                    channels: 128,
                    sw: Sw::CU_TENSOR_MAP_SWIZZLE_64B,
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
        let t = tiled();
        let mut map = t.encode(cur, &a)?;
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

//! The test kernels (kernels/*.cu, their NVRTC PTX beside them) run on softcuda loaded
//! through `dlopen` of `libsoftcuda.so`, exactly as the real driver is loaded, and
//! each result is compared with a CPU reference. After each test softcuda's live
//! object counts are back to zero. With `--features gpu-tests` the same kernels run
//! on the driver the environment names (the system driver by default), against the
//! same references; the PTX is read from `$OXICUDA_KERNELS` when that is set.

mod common;

use common::{ON_GPU, libsoftcuda};

use oxicuda_driver::error::check;
use oxicuda_driver::sys::{CUcontext, CUdeviceptr, CUfunction, CUmodule, CUstream};
use oxicuda_driver::{Driver, DriverOptions};
use std::ffi::{CStr, CString, c_char, c_int, c_void};
use std::path::PathBuf;
use std::sync::{Mutex, MutexGuard};

static SERIAL: Mutex<()> = Mutex::new(());

/// A context on softcuda's device 0, with helpers; checks for leaks when dropped.
struct Gpu {
    d: Driver,
    ctx: CUcontext,
    modules: Vec<CUmodule>,
    buffers: Vec<CUdeviceptr>,
    /// softcuda's library, for its live counts; `None` in the GPU suite.
    live_count: Option<libloading::Library>,
    _serial: MutexGuard<'static, ()>,
}

/// Kernel arguments: pointers to each value, as `cuLaunchKernel` takes them.
macro_rules! args {
    ($($v:expr),* $(,)?) => { [$((&raw const $v).cast_mut().cast::<c_void>()),*] };
}

impl Gpu {
    fn new() -> Gpu {
        let serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
        let path = libsoftcuda();
        let options = if ON_GPU {
            DriverOptions::from_env().unwrap()
        } else {
            // SAFETY: libsoftcuda.so implements the driver ABI.
            unsafe { DriverOptions::new().path(&path) }
        };
        let d = Driver::load(&options).unwrap();
        d.init().unwrap();
        let mut ctx = CUcontext::NULL;
        check(unsafe { d.table().cuCtxCreate_v3020().unwrap()(&mut ctx, 0, 0) }).unwrap();
        // The same library, for its test controls (dlopen shares the instance).
        let live_count = (!ON_GPU).then(|| unsafe { libloading::Library::new(&path) }.unwrap());
        Gpu {
            d,
            ctx,
            modules: Vec::new(),
            buffers: Vec::new(),
            live_count,
            _serial: serial,
        }
    }

    fn function(&mut self, ptx_file: &str, name: &str) -> CUfunction {
        let path = std::env::var_os("OXICUDA_KERNELS")
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("kernels"))
            .join(ptx_file);
        let text = CString::new(std::fs::read_to_string(path).unwrap()).unwrap();
        let t = self.d.table();
        let (mut m, mut f) = (CUmodule::NULL, CUfunction::NULL);
        check(unsafe { t.cuModuleLoadData().unwrap()(&mut m, text.as_ptr().cast()) }).unwrap();
        self.modules.push(m);
        let name = CString::new(name).unwrap();
        check(unsafe { t.cuModuleGetFunction().unwrap()(&mut f, m, name.as_ptr()) }).unwrap();
        f
    }

    fn upload<T: Copy>(&mut self, data: &[T]) -> CUdeviceptr {
        let t = self.d.table();
        let bytes = size_of_val(data).max(1);
        let mut p = 0;
        check(unsafe { t.cuMemAlloc().unwrap()(&mut p, bytes) }).unwrap();
        if !data.is_empty() {
            check(unsafe { t.cuMemcpyHtoD().unwrap()(p, data.as_ptr().cast(), bytes) }).unwrap();
        }
        self.buffers.push(p);
        p
    }

    fn download<T: Copy + Default>(&self, p: CUdeviceptr, n: usize) -> Vec<T> {
        let mut v = vec![T::default(); n];
        let t = self.d.table();
        check(unsafe { t.cuMemcpyDtoH().unwrap()(v.as_mut_ptr().cast(), p, n * size_of::<T>()) })
            .unwrap();
        v
    }

    fn launch(
        &self,
        f: CUfunction,
        grid: (u32, u32, u32),
        block: (u32, u32, u32),
        args: &mut [*mut c_void],
    ) {
        let t = self.d.table();
        let launch = t.cuLaunchKernel().unwrap();
        let r = unsafe {
            launch(
                f,
                grid.0,
                grid.1,
                grid.2,
                block.0,
                block.1,
                block.2,
                0,
                CUstream::NULL,
                args.as_mut_ptr(),
                std::ptr::null_mut(),
            )
        };
        check(r).unwrap();
    }
}

impl Drop for Gpu {
    fn drop(&mut self) {
        let t = self.d.table();
        unsafe {
            for p in self.buffers.drain(..) {
                check(t.cuMemFree().unwrap()(p)).unwrap();
            }
            for m in self.modules.drain(..) {
                check(t.cuModuleUnload().unwrap()(m)).unwrap();
            }
            check(t.cuCtxDestroy().unwrap()(self.ctx)).unwrap();
            let Some(lib) = &self.live_count else { return };
            let count = lib
                .get::<unsafe extern "C" fn(*const c_char) -> c_int>(b"softcuda_live_count\0")
                .unwrap();
            for kind in [
                c"contexts",
                c"modules",
                c"allocations",
                c"streams",
                c"events",
            ] {
                let n = count(kind.as_ptr());
                if !std::thread::panicking() {
                    assert_eq!(n, 0, "{} left alive", CStr::to_str(kind).unwrap());
                }
            }
        }
    }
}

fn close(a: f32, b: f32) -> bool {
    (a - b).abs() <= 1e-4 * a.abs().max(b.abs()).max(1.0)
}

// vector_add, saxpy, daxpy and the grid-stride loop launch through the safe layer:
// `pointer_kernels` below.

#[test]
fn shared_memory_reduction() {
    let mut g = Gpu::new();
    let f = g.function("reduce_shared.ptx", "reduce_sum");
    let n = 10_000u32;
    let input: Vec<f32> = (0..n).map(|i| (i % 13) as f32).collect();
    let blocks = n.div_ceil(256);
    let (din, dpart) = (g.upload(&input), g.upload(&vec![0f32; blocks as usize]));
    g.launch(f, (blocks, 1, 1), (256, 1, 1), &mut args![din, dpart, n]);
    let partial: Vec<f32> = g.download(dpart, blocks as usize);
    for (b, p) in partial.iter().enumerate() {
        let want: f32 = input.iter().skip(b * 256).take(256).sum();
        assert!(close(*p, want), "block {b}: {p} vs {want}");
    }
}

#[test]
fn warp_shuffle_reduction_with_atomics() {
    let mut g = Gpu::new();
    let fi = g.function("warp_reduce.ptx", "warp_sum_i32");
    let n = 4099i32;
    let input: Vec<i32> = (0..n).map(|i| i % 100 - 50).collect();
    let (din, dtotal) = (g.upload(&input), g.upload(&[0i32]));
    g.launch(
        fi,
        ((n as u32).div_ceil(256), 1, 1),
        (256, 1, 1),
        &mut args![din, dtotal, n],
    );
    let total: Vec<i32> = g.download(dtotal, 1);
    assert_eq!(total[0], input.iter().sum::<i32>());

    let ff = g.function("warp_reduce.ptx", "warp_sum_f32");
    let input: Vec<f32> = (0..n).map(|i| (i % 10) as f32 * 0.25).collect();
    let (din, dtotal) = (g.upload(&input), g.upload(&[0f32]));
    g.launch(
        ff,
        ((n as u32).div_ceil(128), 1, 1),
        (128, 1, 1),
        &mut args![din, dtotal, n],
    );
    let total: Vec<f32> = g.download(dtotal, 1);
    assert!(close(total[0], input.iter().sum::<f32>()), "{}", total[0]);
}

#[test]
fn two_dimensional_kernels() {
    let mut g = Gpu::new();
    let (rows, cols) = (45i32, 70i32);
    let input: Vec<f32> = (0..rows * cols).map(|i| i as f32).collect();
    let t = g.function("transpose.ptx", "transpose");
    let (din, dout) = (
        g.upload(&input),
        g.upload(&vec![0f32; (rows * cols) as usize]),
    );
    g.launch(
        t,
        ((cols as u32).div_ceil(32), (rows as u32).div_ceil(32), 1),
        (32, 8, 1),
        &mut args![din, dout, rows, cols],
    );
    let out: Vec<f32> = g.download(dout, (rows * cols) as usize);
    for r in 0..rows {
        for c in 0..cols {
            assert_eq!(out[(c * rows + r) as usize], input[(r * cols + c) as usize]);
        }
    }
    let add = g.function("transpose.ptx", "add2d");
    let a: Vec<i32> = (0..rows * cols).collect();
    let b: Vec<i32> = (0..rows * cols).map(|i| 7 * i).collect();
    let (da, db, dc) = (
        g.upload(&a),
        g.upload(&b),
        g.upload(&vec![0i32; (rows * cols) as usize]),
    );
    g.launch(
        add,
        ((cols as u32).div_ceil(16), (rows as u32).div_ceil(16), 1),
        (16, 16, 1),
        &mut args![da, db, dc, rows, cols],
    );
    let c: Vec<i32> = g.download(dc, (rows * cols) as usize);
    assert!((0..(rows * cols) as usize).all(|i| c[i] == 8 * a[i]));
}

#[test]
fn a_kernel_calling_device_functions() {
    let mut g = Gpu::new();
    let f = g.function("device_call.ptx", "poly");
    let n = 500i32;
    let degree = 5i32;
    let x: Vec<f32> = (0..n).map(|i| i as f32 / n as f32).collect();
    let coeffs: Vec<f32> = (0..8).map(|k| k as f32 - 2.0).collect();
    let (dx, dc, dy, dz) = (
        g.upload(&x),
        g.upload(&coeffs),
        g.upload(&vec![0f32; n as usize]),
        g.upload(&vec![0i64; n as usize]),
    );
    g.launch(
        f,
        (4, 1, 1),
        (128, 1, 1),
        &mut args![dx, dc, dy, dz, degree, n],
    );
    let y: Vec<f32> = g.download(dy, n as usize);
    let z: Vec<i64> = g.download(dz, n as usize);
    for i in 0..n as usize {
        let want = (0..=degree as usize)
            .rev()
            .fold(0f32, |acc, k| acc * x[i] + coeffs[k & 7]);
        assert!(close(y[i], want), "y[{i}] = {} vs {want}", y[i]);
        assert_eq!(z[i], ((i as i64) << 33) * 3 + i as i64);
    }
}

#[test]
fn tiled_matrix_multiply() {
    let mut g = Gpu::new();
    let f = g.function("matmul_tiled.ptx", "matmul_tiled");
    let (m, n, k) = (37i32, 29i32, 43i32);
    let a: Vec<f32> = (0..m * k).map(|i| ((i % 11) as f32 - 5.0) * 0.5).collect();
    let b: Vec<f32> = (0..k * n).map(|i| ((i % 7) as f32 - 3.0) * 0.25).collect();
    let (da, db, dc) = (
        g.upload(&a),
        g.upload(&b),
        g.upload(&vec![0f32; (m * n) as usize]),
    );
    g.launch(
        f,
        ((n as u32).div_ceil(16), (m as u32).div_ceil(16), 1),
        (16, 16, 1),
        &mut args![da, db, dc, m, n, k],
    );
    let c: Vec<f32> = g.download(dc, (m * n) as usize);
    for r in 0..m as usize {
        for col in 0..n as usize {
            let want: f32 = (0..k as usize)
                .map(|j| a[r * k as usize + j] * b[j * n as usize + col])
                .sum();
            assert!(
                close(c[r * n as usize + col], want),
                "C[{r}][{col}] = {} vs {want}",
                c[r * n as usize + col]
            );
        }
    }
}

// Kernels as existing CUDA code writes them (raw pointers and a count), launched
// through the safe layer: `Ptr`/`PtrMut` parameters bounded by a `Len` the launch
// checks, and `launch_unchecked` where nothing bounds them.

mod pointer_kernels {
    use super::common::on_device0;
    use oxicuda_driver::CudaError;
    use oxicuda_driver::graph::Graph;
    use oxicuda_driver::launch::{Len, Ptr, PtrMut};
    use oxicuda_driver::module::JitOptions;
    use oxicuda_driver::sys::CUstream_flags;

    const VECTOR_ADD: &str = include_str!("../kernels/vector_add.ptx");
    const MANGLED: &str = include_str!("../kernels/vector_add_mangled.ptx");
    const REDUCE: &str = include_str!("../kernels/reduce_shared.ptx");
    const SAXPY: &str = include_str!("../kernels/saxpy.ptx");
    const GRID_STRIDE: &str = include_str!("../kernels/grid_stride.ptx");
    const DAXPY: &str = include_str!("../kernels/daxpy.ptx");
    const TRANSPOSE: &str = include_str!("../kernels/transpose.ptx");

    type VectorAdd = (Ptr<f32>, Ptr<f32>, PtrMut<f32>, Len<u32>);

    #[test]
    fn vector_add_with_a_checked_length() {
        on_device0(|cur| -> Result<(), CudaError> {
            let m = cur.load_ptx(VECTOR_ADD, &JitOptions::default())?;
            // SAFETY: kernels/vector_add.cu touches a, b and c only below n.
            let k = unsafe { m.function::<VectorAdd>("vector_add")? };
            let s = cur.create_stream(CUstream_flags::CU_STREAM_NON_BLOCKING)?;
            let n = 5000u32;
            let a: Vec<f32> = (0..n).map(|i| i as f32 * 0.5).collect();
            let b: Vec<f32> = (0..n).map(|i| 1.0 - i as f32).collect();
            let (da, db) = (cur.alloc_from(&a)?, cur.alloc_from(&b)?);
            let mut dc = cur.alloc_from(&vec![0f32; n as usize])?;
            k.launch(&s, n.div_ceil(256), 256, 0, (&da, &db, &mut dc, n))?;
            s.synchronize()?;
            let c = dc.to_vec()?;
            assert!((0..n as usize).all(|i| c[i] == a[i] + b[i]));
            // A shorter length touches only the head; views of a longer buffer are fine.
            dc.fill(0.0)?;
            k.launch(&s, 1, 256, 0, (&da, &db, &mut dc, 10))?;
            s.synchronize()?;
            let c = dc.to_vec()?;
            assert!(
                c[..10]
                    .iter()
                    .zip(&a)
                    .zip(&b)
                    .all(|((c, a), b)| *c == a + b)
            );
            assert!(c[10..].iter().all(|c| *c == 0.0));
            Ok(())
        });
    }

    #[test]
    fn saxpy_and_daxpy_with_a_checked_length() {
        on_device0(|cur| -> Result<(), CudaError> {
            let s = cur.create_stream(CUstream_flags::CU_STREAM_NON_BLOCKING)?;
            let m = cur.load_ptx(SAXPY, &JitOptions::default())?;
            // SAFETY: kernels/saxpy.cu touches x and y only below n.
            let k = unsafe { m.function::<(f32, Ptr<f32>, PtrMut<f32>, Len<i32>)>("saxpy")? };
            let n = 3000i32;
            let x: Vec<f32> = (0..n).map(|i| i as f32).collect();
            let y: Vec<f32> = (0..n).map(|i| (i % 7) as f32).collect();
            let dx = cur.alloc_from(&x)?;
            let mut dy = cur.alloc_from(&y)?;
            let a = 2.5f32;
            k.launch(&s, (n as u32).div_ceil(128), 128, 0, (a, &dx, &mut dy, n))?;
            s.synchronize()?;
            let out = dy.to_vec()?;
            // saxpy compiles to fma.rn.f32: one rounding.
            assert!((0..n as usize).all(|i| out[i] == a.mul_add(x[i], y[i])));

            let m = cur.load_ptx(DAXPY, &JitOptions::default())?;
            // SAFETY: kernels/daxpy.cu touches x and y only below n.
            let k = unsafe { m.function::<(f64, Ptr<f64>, PtrMut<f64>, Len<i32>)>("daxpy")? };
            let n = 1000i32;
            let x: Vec<f64> = (0..n).map(|i| i as f64 / 3.0).collect();
            let y: Vec<f64> = (0..n).map(|i| (i * i) as f64).collect();
            let dx = cur.alloc_from(&x)?;
            let mut dy = cur.alloc_from(&y)?;
            let a = -1.25f64;
            k.launch(&s, 8, 128, 0, (a, &dx, &mut dy, n))?;
            s.synchronize()?;
            let out = dy.to_vec()?;
            // daxpy compiles to fma.rn.f64: one rounding.
            assert!((0..n as usize).all(|i| out[i] == a.mul_add(x[i], y[i])));
            Ok(())
        });
    }

    #[test]
    fn a_grid_stride_loop_with_a_64_bit_length() {
        on_device0(|cur| -> Result<(), CudaError> {
            let s = cur.create_stream(CUstream_flags::CU_STREAM_NON_BLOCKING)?;
            let m = cur.load_ptx(GRID_STRIDE, &JitOptions::default())?;
            // SAFETY: kernels/grid_stride.cu touches x and y only below n.
            let k = unsafe { m.function::<(Ptr<f32>, PtrMut<f32>, Len<u64>)>("square_plus_one")? };
            let n = 100_000u64;
            let x: Vec<f32> = (0..n).map(|i| (i % 1000) as f32 * 0.01).collect();
            let dx = cur.alloc_from(&x)?;
            let mut dy = cur.alloc_from(&vec![0f32; n as usize])?;
            k.launch(&s, 7, 64, 0, (&dx, &mut dy, n))?;
            s.synchronize()?;
            let y = dy.to_vec()?;
            // NVRTC contracts x * x + 1 into one fma.rn.f32: a single rounding.
            assert!((0..n as usize).all(|i| y[i] == x[i].mul_add(x[i], 1.0)));
            Ok(())
        });
    }

    #[test]
    fn a_short_view_is_refused_at_each_pointer_position() {
        on_device0(|cur| -> Result<(), CudaError> {
            let m = cur.load_ptx(VECTOR_ADD, &JitOptions::default())?;
            // SAFETY: kernels/vector_add.cu touches a, b and c only below n.
            let k = unsafe { m.function::<VectorAdd>("vector_add")? };
            let s = cur.create_stream(CUstream_flags::CU_STREAM_NON_BLOCKING)?;
            let full = cur.alloc_from(&[1f32; 64])?;
            let mut out = cur.alloc_from(&[0f32; 64])?;
            let short = full.as_slice().slice(..63)?;
            let r = k.launch(&s, 1, 64, 0, (short, &full, &mut out, 64));
            let want = |parameter| CudaError::ViewTooShort {
                parameter,
                len: 63,
                value: 64,
            };
            assert_eq!(r, Err(want(0)));
            let r = k.launch(
                &s,
                1,
                64,
                0,
                (&full, full.as_slice().slice(..63)?, &mut out, 64),
            );
            assert_eq!(r, Err(want(1)));
            let r = k.launch(
                &s,
                1,
                64,
                0,
                (&full, &full, out.as_mut_slice().slice(..63)?, 64),
            );
            assert_eq!(r, Err(want(2)));
            s.synchronize()?;
            // Nothing ran.
            assert!(out.to_vec()?.iter().all(|v| *v == 0.0));
            Ok(())
        });
    }

    #[test]
    fn a_mangled_kernel_refuses_a_negative_length_and_runs_the_empty_case() {
        on_device0(|cur| -> Result<(), CudaError> {
            let m = cur.load_ptx(MANGLED, &JitOptions::default())?;
            // SAFETY: kernels/vector_add_mangled.cu touches a, b and c only below n.
            let k = unsafe {
                m.function::<(Ptr<f32>, Ptr<f32>, PtrMut<f32>, Len<i32>)>("_Z9vectorAddPKfS0_Pfi")?
            };
            let s = cur.create_stream(CUstream_flags::CU_STREAM_NON_BLOCKING)?;
            let a = cur.alloc_from(&[2f32; 32])?;
            let mut c = cur.alloc_from(&[0f32; 32])?;
            let r = k.launch(&s, 1, 32, 0, (&a, &a, &mut c, -1));
            assert_eq!(
                r,
                Err(CudaError::NegativeLength {
                    parameter: 3,
                    value: -1
                })
            );
            // The empty case: empty views, length 0.
            let empty = a.as_slice().slice(..0)?;
            k.launch(
                &s,
                1,
                32,
                0,
                (empty, empty, c.as_mut_slice().slice(..0)?, 0),
            )?;
            s.synchronize()?;
            assert!(c.to_vec()?.iter().all(|v| *v == 0.0));
            k.launch(&s, 1, 32, 0, (&a, &a, &mut c, 32))?;
            s.synchronize()?;
            assert!(c.to_vec()?.iter().all(|v| *v == 4.0));
            Ok(())
        });
    }

    #[test]
    fn launch_unchecked_runs_a_block_reduction_and_a_2d_kernel() {
        on_device0(|cur| -> Result<(), CudaError> {
            let s = cur.create_stream(CUstream_flags::CU_STREAM_NON_BLOCKING)?;
            let m = cur.load_ptx(REDUCE, &JitOptions::default())?;
            // SAFETY: kernels/reduce_shared.cu reads `in` below n and writes one
            // partial sum per block: launches below pass views that hold them.
            let k = unsafe { m.function::<(Ptr<f32>, PtrMut<f32>, u32)>("reduce_sum")? };
            let n = 10_000u32;
            let input: Vec<f32> = (0..n).map(|i| (i % 13) as f32).collect();
            let blocks = n.div_ceil(256);
            let din = cur.alloc_from(&input)?;
            let mut part = cur.alloc_from(&vec![0f32; blocks as usize])?;
            // SAFETY: `din` holds n elements, `part` one per block of the grid.
            unsafe { k.launch_unchecked(&s, blocks, 256, 0, (&din, &mut part, n))? };
            s.synchronize()?;
            for (b, p) in part.to_vec()?.iter().enumerate() {
                let want: f32 = input.iter().skip(b * 256).take(256).sum();
                assert!(super::close(*p, want), "block {b}: {p} vs {want}");
            }

            let m = cur.load_ptx(TRANSPOSE, &JitOptions::default())?;
            // SAFETY: kernels/transpose.cu touches `in` and `out` below rows·cols.
            let t = unsafe { m.function::<(Ptr<f32>, PtrMut<f32>, i32, i32)>("transpose")? };
            let (rows, cols) = (37i32, 53i32);
            let src: Vec<f32> = (0..rows * cols).map(|i| i as f32).collect();
            let din = cur.alloc_from(&src)?;
            let mut dout = cur.alloc_from(&vec![0f32; src.len()])?;
            let grid = ((cols as u32).div_ceil(32), (rows as u32).div_ceil(32));
            // SAFETY: both views hold rows·cols elements.
            unsafe { t.launch_unchecked(&s, grid, (32, 8), 0, (&din, &mut dout, rows, cols))? };
            s.synchronize()?;
            let out = dout.to_vec()?;
            for r in 0..rows as usize {
                for c in 0..cols as usize {
                    assert_eq!(out[c * rows as usize + r], src[r * cols as usize + c]);
                }
            }
            Ok(())
        });
    }

    #[test]
    fn graph_nodes_and_captures_of_pointer_kernels() {
        on_device0(|cur| -> Result<(), CudaError> {
            let m = cur.load_ptx(VECTOR_ADD, &JitOptions::default())?;
            // SAFETY: kernels/vector_add.cu touches a, b and c only below n.
            let k = unsafe { m.function::<VectorAdd>("vector_add")? };
            let m2 = cur.load_ptx(REDUCE, &JitOptions::default())?;
            // SAFETY: kernels/reduce_shared.cu reads `in` below n and writes one
            // partial sum per block.
            let r = unsafe { m2.function::<(Ptr<f32>, PtrMut<f32>, u32)>("reduce_sum")? };
            let s = cur.create_stream(CUstream_flags::CU_STREAM_NON_BLOCKING)?;
            let n = 512u32;
            let a = cur.alloc_from(&vec![1f32; n as usize])?;
            let c = cur.alloc_from(&vec![0f32; n as usize])?;
            let sums = cur.alloc_from(&[0f32; 2])?;
            {
                let mut g = cur.create_graph()?;
                // A node's Len is checked when it is added.
                assert!(matches!(
                    g.add_kernel(&[], &k, 2, 256, 0, (&a, &a, &c, n + 1)),
                    Err(CudaError::ViewTooShort { parameter: 0, .. })
                ));
                let add = g.add_kernel(&[], &k, 2, 256, 0, (&a, &a, &c, n))?; // c = 2
                // SAFETY: `c` holds n = 2·256 elements, `sums` one per block.
                unsafe { g.add_kernel_unchecked(&[add.node()], &r, 2, 256, 0, (&c, &sums, n))? };
                let exec = g.instantiate()?;
                s.scope(|sc| sc.launch_graph(&exec))??;
            }
            assert_eq!(sums.to_vec()?, [512.0, 512.0]);
            let d = cur.alloc_from(&vec![0f32; n as usize])?;
            let mut main = cur.create_stream(CUstream_flags::CU_STREAM_NON_BLOCKING)?;
            let graph: Graph<'_> =
                main.capture(oxicuda_driver::graph::CaptureMode::Global, |cap| {
                    assert!(matches!(
                        cap.launch(&k, 2, 256, 0, (&a, &c, d.as_slice().slice(..1)?, n)),
                        Err(CudaError::ViewTooShort {
                            parameter: 2,
                            len: 1,
                            ..
                        })
                    ));
                    cap.launch(&k, 2, 256, 0, (&a, &c, &d, n))?; // d = 3
                    // SAFETY: as above.
                    unsafe { cap.launch_unchecked(&r, 2, 256, 0, (&d, &sums, n)) }
                })?;
            let exec = graph.instantiate()?;
            main.scope(|sc| sc.launch_graph(&exec))??;
            drop(exec);
            assert_eq!(sums.to_vec()?, [768.0, 768.0]);
            Ok(())
        });
    }

    #[test]
    fn the_lookup_checks_pointer_and_length_widths() {
        on_device0(|cur| -> Result<(), CudaError> {
            let m = cur.load_ptx(VECTOR_ADD, &JitOptions::default())?;
            // SAFETY: refused at lookup (a 64-bit length for `unsigned int n`).
            let r =
                unsafe { m.function::<(Ptr<f32>, Ptr<f32>, PtrMut<f32>, Len<u64>)>("vector_add") };
            assert!(matches!(
                r.map(|_| ()),
                Err(CudaError::SignatureMismatch { parameter: 3, .. })
            ));
            // SAFETY: refused at lookup (a pointer for the 4-byte count).
            let r =
                unsafe { m.function::<(Ptr<f32>, Ptr<f32>, PtrMut<f32>, Ptr<u32>)>("vector_add") };
            assert!(matches!(
                r.map(|_| ()),
                Err(CudaError::SignatureMismatch { parameter: 3, .. })
            ));
            // SAFETY: refused at lookup (a 16-byte buffer for an 8-byte pointer).
            let r = unsafe {
                m.function::<(
                    oxicuda_driver::launch::In<f32>,
                    Ptr<f32>,
                    PtrMut<f32>,
                    Len<u32>,
                )>("vector_add")
            };
            assert!(matches!(
                r.map(|_| ()),
                Err(CudaError::SignatureMismatch { parameter: 0, .. })
            ));
            Ok(())
        });
    }
}

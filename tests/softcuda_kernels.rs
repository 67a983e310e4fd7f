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

#[test]
fn vector_add() {
    let mut g = Gpu::new();
    let f = g.function("vector_add.ptx", "vector_add");
    let n = 5000u32;
    let a: Vec<f32> = (0..n).map(|i| i as f32 * 0.5).collect();
    let b: Vec<f32> = (0..n).map(|i| 1.0 - i as f32).collect();
    let (da, db, dc) = (
        g.upload(&a),
        g.upload(&b),
        g.upload(&vec![0f32; n as usize]),
    );
    g.launch(
        f,
        (n.div_ceil(256), 1, 1),
        (256, 1, 1),
        &mut args![da, db, dc, n],
    );
    let c: Vec<f32> = g.download(dc, n as usize);
    assert!((0..n as usize).all(|i| c[i] == a[i] + b[i]));
}

#[test]
fn saxpy() {
    let mut g = Gpu::new();
    let f = g.function("saxpy.ptx", "saxpy");
    let n = 3000i32;
    let x: Vec<f32> = (0..n).map(|i| i as f32).collect();
    let y: Vec<f32> = (0..n).map(|i| (i % 7) as f32).collect();
    let (dx, dy) = (g.upload(&x), g.upload(&y));
    let a = 2.5f32;
    g.launch(
        f,
        ((n as u32).div_ceil(128), 1, 1),
        (128, 1, 1),
        &mut args![a, dx, dy, n],
    );
    let out: Vec<f32> = g.download(dy, n as usize);
    // saxpy compiles to fma.rn.f32: one rounding.
    assert!((0..n as usize).all(|i| out[i] == a.mul_add(x[i], y[i])));
}

#[test]
fn daxpy_f64() {
    let mut g = Gpu::new();
    let f = g.function("daxpy.ptx", "daxpy");
    let n = 1000i32;
    let x: Vec<f64> = (0..n).map(|i| i as f64 / 3.0).collect();
    let y: Vec<f64> = (0..n).map(|i| (i * i) as f64).collect();
    let (dx, dy) = (g.upload(&x), g.upload(&y));
    let a = -1.25f64;
    g.launch(f, (8, 1, 1), (128, 1, 1), &mut args![a, dx, dy, n]);
    let out: Vec<f64> = g.download(dy, n as usize);
    // daxpy compiles to fma.rn.f64: one rounding.
    assert!((0..n as usize).all(|i| out[i] == a.mul_add(x[i], y[i])));
}

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
fn grid_stride_loop() {
    let mut g = Gpu::new();
    let f = g.function("grid_stride.ptx", "square_plus_one");
    let n = 100_000u64;
    let x: Vec<f32> = (0..n).map(|i| (i % 1000) as f32 * 0.01).collect();
    let (dx, dy) = (g.upload(&x), g.upload(&vec![0f32; n as usize]));
    g.launch(f, (7, 1, 1), (64, 1, 1), &mut args![dx, dy, n]);
    let y: Vec<f32> = g.download(dy, n as usize);
    // NVRTC contracts x * x + 1 into one fma.rn.f32: a single rounding.
    assert!((0..n as usize).all(|i| y[i] == x[i].mul_add(x[i], 1.0)));
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

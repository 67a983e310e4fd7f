//! The test kernels (kernels/*.cu, their NVRTC PTX beside them), launched through the
//! safe layer on softcuda, each result compared with a CPU reference. After each test
//! softcuda's live object counts are back to zero. With `--features gpu-tests` the
//! same kernels run on the driver the environment names (the system driver by
//! default), against the same references; the PTX of the tests above
//! `pointer_kernels` is read from `$OXICUDA_KERNELS` when that is set.

mod common;

use common::on_device0;
use oxicuda_driver::CudaError;
use oxicuda_driver::launch::{Ptr, PtrMut};
use oxicuda_driver::module::{JitOptions, Module};
use oxicuda_driver::stream::Stream;
use oxicuda_driver::sys::CUstream_flags;
use oxicuda_driver::{CurrentContext, memory::DeviceCopy};
use std::path::PathBuf;

/// The PTX of `kernels/<file>`, or of `$OXICUDA_KERNELS/<file>` when that is set (the
/// GPU suite's bundle).
fn kernel_text(file: &str) -> String {
    let path = std::env::var_os("OXICUDA_KERNELS")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("kernels"))
        .join(file);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// `kernels/<file>`, loaded into the current context.
fn load<'a>(cur: &'a CurrentContext<'_>, file: &str) -> Result<Module<'a>, CudaError> {
    cur.load_ptx(&kernel_text(file), &JitOptions::default())
}

/// A non-blocking stream of the current context.
fn stream<'a>(cur: &'a CurrentContext<'_>) -> Result<Stream<'a>, CudaError> {
    cur.create_stream(CUstream_flags::CU_STREAM_NON_BLOCKING)
}

/// Waits for `s`, then reads `buf` back.
fn read<T: DeviceCopy + Default>(
    s: &Stream<'_>,
    buf: &oxicuda_driver::memory::DeviceBuffer<'_, T>,
) -> Result<Vec<T>, CudaError> {
    s.synchronize()?;
    buf.to_vec()
}

fn close(a: f32, b: f32) -> bool {
    (a - b).abs() <= 1e-4 * a.abs().max(b.abs()).max(1.0)
}

// Kernels written as existing CUDA code is — raw pointers, `int n`, 2-D indexing, one
// output per block, shared-memory tiles — whose pointers no single length bounds:
// typed, borrow-checked arguments and the `unsafe` `launch_unchecked`, whose
// promise each launch states. vector_add, saxpy, daxpy and the grid-stride loop
// launch through the safe `launch`: `pointer_kernels` below.

#[test]
fn shared_memory_reduction() {
    on_device0(|cur| -> Result<(), CudaError> {
        let m = load(cur, "reduce_shared.ptx")?;
        // SAFETY: kernels/reduce_shared.cu reads `in` below n and writes
        // partial[blockIdx.x] once per block.
        let f = unsafe { m.function::<(Ptr<f32>, PtrMut<f32>, u32)>("reduce_sum")? };
        let s = stream(cur)?;
        let n = 10_000u32;
        let input: Vec<f32> = (0..n).map(|i| (i % 13) as f32).collect();
        let blocks = n.div_ceil(256);
        let din = cur.alloc_from(&input)?;
        let mut dpart = cur.alloc_from(&vec![0f32; blocks as usize])?;
        // SAFETY: `din` holds n elements, `dpart` one per block of the grid.
        unsafe { f.launch_unchecked(&s, blocks, 256, 0, (&din, &mut dpart, n))? };
        let partial = read(&s, &dpart)?;
        for (b, p) in partial.iter().enumerate() {
            let want: f32 = input.iter().skip(b * 256).take(256).sum();
            assert!(close(*p, want), "block {b}: {p} vs {want}");
        }
        Ok(())
    });
}

#[test]
fn warp_shuffle_reduction_with_atomics() {
    on_device0(|cur| -> Result<(), CudaError> {
        let m = load(cur, "warp_reduce.ptx")?;
        // SAFETY: kernels/warp_reduce.cu reads `in` below n and adds to total[0].
        let fi = unsafe { m.function::<(Ptr<i32>, PtrMut<i32>, i32)>("warp_sum_i32")? };
        // SAFETY: as above.
        let ff = unsafe { m.function::<(Ptr<f32>, PtrMut<f32>, i32)>("warp_sum_f32")? };
        let s = stream(cur)?;
        let n = 4099i32;
        let input: Vec<i32> = (0..n).map(|i| i % 100 - 50).collect();
        let (din, mut dtotal) = (cur.alloc_from(&input)?, cur.alloc_from(&[0i32])?);
        let grid = (n as u32).div_ceil(256);
        // SAFETY: `din` holds n elements, `dtotal` one.
        unsafe { fi.launch_unchecked(&s, grid, 256, 0, (&din, &mut dtotal, n))? };
        assert_eq!(read(&s, &dtotal)?[0], input.iter().sum::<i32>());

        let input: Vec<f32> = (0..n).map(|i| (i % 10) as f32 * 0.25).collect();
        let (din, mut dtotal) = (cur.alloc_from(&input)?, cur.alloc_from(&[0f32])?);
        let grid = (n as u32).div_ceil(128);
        // SAFETY: as above.
        unsafe { ff.launch_unchecked(&s, grid, 128, 0, (&din, &mut dtotal, n))? };
        let total = read(&s, &dtotal)?[0];
        assert!(close(total, input.iter().sum::<f32>()), "{total}");
        Ok(())
    });
}

#[test]
fn two_dimensional_kernels() {
    on_device0(|cur| -> Result<(), CudaError> {
        let m = load(cur, "transpose.ptx")?;
        // SAFETY: kernels/transpose.cu touches `in` and `out` only below rows·cols.
        let t = unsafe { m.function::<(Ptr<f32>, PtrMut<f32>, i32, i32)>("transpose")? };
        // SAFETY: as above, for a, b and c.
        let add = unsafe { m.function::<(Ptr<i32>, Ptr<i32>, PtrMut<i32>, i32, i32)>("add2d")? };
        let s = stream(cur)?;
        let (rows, cols) = (45i32, 70i32);
        let cells = (rows * cols) as usize;
        let input: Vec<f32> = (0..rows * cols).map(|i| i as f32).collect();
        let (din, mut dout) = (cur.alloc_from(&input)?, cur.alloc_from(&vec![0f32; cells])?);
        let grid = ((cols as u32).div_ceil(32), (rows as u32).div_ceil(32));
        // SAFETY: both views hold rows·cols elements.
        unsafe { t.launch_unchecked(&s, grid, (32, 8), 0, (&din, &mut dout, rows, cols))? };
        let out = read(&s, &dout)?;
        for r in 0..rows {
            for c in 0..cols {
                assert_eq!(out[(c * rows + r) as usize], input[(r * cols + c) as usize]);
            }
        }
        let a: Vec<i32> = (0..rows * cols).collect();
        let b: Vec<i32> = (0..rows * cols).map(|i| 7 * i).collect();
        let (da, db) = (cur.alloc_from(&a)?, cur.alloc_from(&b)?);
        let mut dc = cur.alloc_from(&vec![0i32; cells])?;
        let grid = ((cols as u32).div_ceil(16), (rows as u32).div_ceil(16));
        // SAFETY: the three views hold rows·cols elements.
        unsafe { add.launch_unchecked(&s, grid, (16, 16), 0, (&da, &db, &mut dc, rows, cols))? };
        let c = read(&s, &dc)?;
        assert!((0..cells).all(|i| c[i] == 8 * a[i]));
        Ok(())
    });
}

#[test]
fn a_kernel_calling_device_functions() {
    on_device0(|cur| -> Result<(), CudaError> {
        let m = load(cur, "device_call.ptx")?;
        // SAFETY: kernels/device_call.cu reads x below n and coeffs below 8, writes y
        // and z below n.
        let f = unsafe {
            m.function::<(Ptr<f32>, Ptr<f32>, PtrMut<f32>, PtrMut<i64>, i32, i32)>("poly")?
        };
        let s = stream(cur)?;
        let n = 500i32;
        let degree = 5i32;
        let x: Vec<f32> = (0..n).map(|i| i as f32 / n as f32).collect();
        let coeffs: Vec<f32> = (0..8).map(|k| k as f32 - 2.0).collect();
        let (dx, dc) = (cur.alloc_from(&x)?, cur.alloc_from(&coeffs)?);
        let mut dy = cur.alloc_from(&vec![0f32; n as usize])?;
        let mut dz = cur.alloc_from(&vec![0i64; n as usize])?;
        // SAFETY: x, y and z hold n elements, coeffs 8.
        unsafe { f.launch_unchecked(&s, 4, 128, 0, (&dx, &dc, &mut dy, &mut dz, degree, n))? };
        let (y, z) = (read(&s, &dy)?, dz.to_vec()?);
        for i in 0..n as usize {
            let want = (0..=degree as usize)
                .rev()
                .fold(0f32, |acc, k| acc * x[i] + coeffs[k & 7]);
            assert!(close(y[i], want), "y[{i}] = {} vs {want}", y[i]);
            assert_eq!(z[i], ((i as i64) << 33) * 3 + i as i64);
        }
        Ok(())
    });
}

#[test]
fn tiled_matrix_multiply() {
    on_device0(|cur| -> Result<(), CudaError> {
        let module = load(cur, "matmul_tiled.ptx")?;
        // SAFETY: kernels/matmul_tiled.cu reads A below m·k and B below k·n, writes
        // C below m·n.
        let f = unsafe {
            module.function::<(Ptr<f32>, Ptr<f32>, PtrMut<f32>, i32, i32, i32)>("matmul_tiled")?
        };
        let s = stream(cur)?;
        let (m, n, k) = (37i32, 29i32, 43i32);
        let a: Vec<f32> = (0..m * k).map(|i| ((i % 11) as f32 - 5.0) * 0.5).collect();
        let b: Vec<f32> = (0..k * n).map(|i| ((i % 7) as f32 - 3.0) * 0.25).collect();
        let (da, db) = (cur.alloc_from(&a)?, cur.alloc_from(&b)?);
        let mut dc = cur.alloc_from(&vec![0f32; (m * n) as usize])?;
        let grid = ((n as u32).div_ceil(16), (m as u32).div_ceil(16));
        // SAFETY: A holds m·k elements, B k·n, C m·n.
        unsafe { f.launch_unchecked(&s, grid, (16, 16), 0, (&da, &db, &mut dc, m, n, k))? };
        let c = read(&s, &dc)?;
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
        Ok(())
    });
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
            // 2^31 threads: more than an `int` index counts (it would wrap below
            // zero and pass the kernel's `i < n`): refused before the driver.
            let r = k.launch(&s, 1u32 << 21, 1024, 0, (&a, &a, &mut c, 32));
            assert_eq!(
                r,
                Err(CudaError::TooManyThreadsForLen {
                    parameter: 3,
                    threads: 1 << 31,
                    max: i32::MAX as u64,
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
            // Graph memory for pointer parameters: bounded by the Len, tied to its
            // allocation and free like any use.
            let mut e = cur.alloc_from(&vec![0f32; n as usize])?;
            let long = cur.alloc_from(&vec![1f32; n as usize + 1])?;
            {
                let mut g = cur.create_graph()?;
                let (alloc, scratch) = g.add_alloc::<f32>(&[], n as usize)?;
                assert!(matches!(
                    g.add_kernel(&[alloc], &k, 2, 256, 0, (&long, &long, scratch, n + 1)),
                    Err(CudaError::ViewTooShort {
                        parameter: 2,
                        len: 512,
                        value: 513
                    })
                ));
                assert!(matches!(
                    g.add_kernel(&[], &k, 2, 256, 0, (&a, &a, scratch, n)),
                    Err(CudaError::GraphMemory { allocation: 0, .. })
                ));
                let two = g.add_kernel(&[alloc], &k, 2, 256, 0, (&a, &a, scratch, n))?;
                let three = g.add_kernel(&[two.node()], &k, 2, 256, 0, (scratch, &a, &mut e, n))?;
                g.add_free(&[three.node()], scratch)?;
                let exec = g.instantiate()?;
                s.scope(|sc| sc.launch_graph(&exec))??;
            }
            assert!(e.to_vec()?.iter().all(|v| *v == 3.0));
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

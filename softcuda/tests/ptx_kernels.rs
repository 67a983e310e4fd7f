//! Integration tests of the PTX front end and interpreter (`softcuda::ptx`): the
//! kernels of `kernels/*.cu` (PTX by NVRTC 12.9) loaded with `Module::load`, run with
//! `launch` over Vec-backed device memory, and compared with CPU references; plus
//! load-time refusals, launch errors and the parameter layout.

use softcuda::ptx::{
    DeviceMemory, JitOptions, Kernel, LaunchConfig, LaunchError, Module, Space, launch,
};
use std::sync::{Mutex, RwLock};

// ---------------------------------------------------------------- harness

/// Device memory for tests: buffers of 16-byte-aligned host memory, at their real
/// addresses (the kernels write through them).
#[derive(Default)]
struct Dev {
    bufs: Mutex<Vec<Vec<u128>>>,
    ranges: RwLock<Vec<(u64, u64)>>,
    /// Answer `region` (the fast path) as well as `accessible`.
    regions: bool,
}

impl DeviceMemory for Dev {
    fn accessible(&self, addr: u64, len: u64) -> bool {
        let end = addr + len;
        self.ranges
            .read()
            .unwrap()
            .iter()
            .any(|&(s, e)| addr >= s && end <= e)
    }

    fn region(&self, addr: u64) -> Option<(u64, u64)> {
        if !self.regions {
            return None;
        }
        self.ranges
            .read()
            .unwrap()
            .iter()
            .copied()
            .find(|&(s, e)| addr >= s && addr < e)
    }
}

/// Plain data that can be copied to and from device buffers.
trait Elem: Copy {
    const SIZE: usize;
    fn put(self, out: &mut Vec<u8>);
    fn get(b: &[u8]) -> Self;
}

macro_rules! elem {
    ($($t:ty),*) => {$(
        impl Elem for $t {
            const SIZE: usize = size_of::<$t>();
            fn put(self, out: &mut Vec<u8>) {
                out.extend_from_slice(&self.to_le_bytes());
            }
            fn get(b: &[u8]) -> Self {
                <$t>::from_le_bytes(b.try_into().unwrap())
            }
        }
    )*};
}
elem!(u8, i32, u32, i64, u64, f32, f64);

impl Dev {
    fn new() -> Self {
        Dev {
            regions: true,
            ..Default::default()
        }
    }

    /// A buffer holding `bytes`, returning its device address.
    fn alloc_bytes(&self, bytes: &[u8]) -> u64 {
        let mut v: Vec<u128> = bytes
            .chunks(16)
            .map(|c| {
                let mut w = [0u8; 16];
                w[..c.len()].copy_from_slice(c);
                u128::from_le_bytes(w)
            })
            .collect();
        if v.is_empty() {
            v.push(0);
        }
        let addr = v.as_ptr() as u64;
        self.ranges
            .write()
            .unwrap()
            .push((addr, addr + bytes.len() as u64));
        self.bufs.lock().unwrap().push(v);
        addr
    }

    fn alloc<T: Elem>(&self, data: &[T]) -> u64 {
        let mut b = Vec::with_capacity(data.len() * T::SIZE);
        for &x in data {
            x.put(&mut b);
        }
        self.alloc_bytes(&b)
    }

    fn zeros<T: Elem>(&self, n: usize) -> u64 {
        self.alloc_bytes(&vec![0u8; n * T::SIZE])
    }

    fn read<T: Elem>(&self, addr: u64, n: usize) -> Vec<T> {
        let bufs = self.bufs.lock().unwrap();
        let buf = bufs
            .iter()
            .find(|b| b.as_ptr() as u64 == addr)
            .expect("not a buffer address");
        let bytes: Vec<u8> = buf
            .iter()
            .flat_map(|w| w.to_le_bytes())
            .take(n * T::SIZE)
            .collect();
        assert_eq!(bytes.len(), n * T::SIZE, "read past the buffer");
        bytes.chunks_exact(T::SIZE).map(T::get).collect()
    }
}

/// A kernel argument.
#[derive(Clone, Copy)]
enum A {
    P(u64),
    I(i32),
    U(u32),
    L(u64),
    F(f32),
    D(f64),
}

/// Packs arguments per the kernel's parameter layout, checking each size.
fn pack(k: &Kernel, args: &[A]) -> Vec<u8> {
    assert_eq!(k.params.len(), args.len(), "argument count of {}", k.name);
    let mut buf = vec![0u8; k.param_bytes as usize];
    for (p, a) in k.params.iter().zip(args) {
        let bytes: Vec<u8> = match *a {
            A::P(v) | A::L(v) => v.to_le_bytes().to_vec(),
            A::I(v) => v.to_le_bytes().to_vec(),
            A::U(v) => v.to_le_bytes().to_vec(),
            A::F(v) => v.to_le_bytes().to_vec(),
            A::D(v) => v.to_le_bytes().to_vec(),
        };
        assert_eq!(bytes.len(), p.size as usize, "parameter size of {}", k.name);
        buf[p.offset as usize..][..bytes.len()].copy_from_slice(&bytes);
    }
    buf
}

/// The PTX of `kernels/{name}.cu`. To run the suite on PTX from other compiler
/// options (`-G`, `--use_fast_math`, another architecture), set `PTX_DIR` to a folder
/// of `{name}{PTX_SUFFIX}.ptx` files.
fn ptx(name: &str) -> String {
    let path = match std::env::var("PTX_DIR") {
        Ok(dir) => format!(
            "{dir}/{name}{}.ptx",
            std::env::var("PTX_SUFFIX").unwrap_or_default()
        ),
        Err(_) => format!("{}/../kernels/{name}.ptx", env!("CARGO_MANIFEST_DIR")),
    };
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn load(name: &str) -> Module {
    match Module::load(&ptx(name), &JitOptions::default()) {
        Ok((m, _)) => m,
        Err(log) => panic!("{name}.ptx failed to load:\n{log}"),
    }
}

fn cfg(grid: [u32; 3], block: [u32; 3]) -> LaunchConfig {
    LaunchConfig {
        grid,
        block,
        dynamic_shared_bytes: 0,
    }
}

fn grid1(n: usize, block: u32) -> LaunchConfig {
    cfg([(n as u32).div_ceil(block), 1, 1], [block, 1, 1])
}

/// Allocates the module's globals with their initializers.
fn globals(dev: &Dev, m: &Module) -> Vec<u64> {
    m.globals()
        .iter()
        .map(|g| dev.alloc_bytes(&g.init))
        .collect()
}

/// Loads `module`, launches `kernel` with `args`, panicking on errors.
fn run(dev: &Dev, m: &Module, kernel: &str, c: LaunchConfig, args: &[A]) {
    let k = m
        .kernel(kernel)
        .unwrap_or_else(|| panic!("no kernel {kernel}"));
    let g = globals(dev, m);
    launch(m, k, &c, &pack(k, args), &g, dev).unwrap_or_else(|e| panic!("{kernel}: {e}"));
}

fn try_run(
    dev: &Dev,
    m: &Module,
    kernel: &str,
    c: LaunchConfig,
    args: &[A],
) -> Result<(), LaunchError> {
    let k = m.kernel(kernel).unwrap();
    let g = globals(dev, m);
    launch(m, k, &c, &pack(k, args), &g, dev)
}

/// Deterministic pseudo-random values.
fn rng(seed: u64) -> impl FnMut() -> u64 {
    let mut s = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    move || {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        s
    }
}

fn floats(n: usize, seed: u64) -> Vec<f32> {
    let mut r = rng(seed);
    (0..n)
        .map(|_| ((r() % 20001) as f32 - 10000.0) / 1000.0)
        .collect()
}

// ---------------------------------------------------------------- kernels

#[test]
fn vector_add() {
    let m = load("vector_add");
    let n = 10_007;
    let a = floats(n, 1);
    let b = floats(n, 2);
    let dev = Dev::new();
    let (da, db, dc) = (dev.alloc(&a), dev.alloc(&b), dev.zeros::<f32>(n));
    run(
        &dev,
        &m,
        "vector_add",
        grid1(n, 256),
        &[A::P(da), A::P(db), A::P(dc), A::U(n as u32)],
    );
    let c: Vec<f32> = dev.read(dc, n);
    for i in 0..n {
        assert_eq!(c[i], a[i] + b[i], "c[{i}]");
    }
}

#[test]
fn vector_add_through_accessible_only() {
    // Without `region`, every access asks `accessible`.
    let m = load("vector_add");
    let n = 1000;
    let a = floats(n, 3);
    let dev = Dev {
        regions: false,
        ..Dev::new()
    };
    let (da, dc) = (dev.alloc(&a), dev.zeros::<f32>(n));
    run(
        &dev,
        &m,
        "vector_add",
        grid1(n, 128),
        &[A::P(da), A::P(da), A::P(dc), A::U(n as u32)],
    );
    let c: Vec<f32> = dev.read(dc, n);
    assert!((0..n).all(|i| c[i] == a[i] * 2.0));
}

#[test]
fn saxpy() {
    let m = load("saxpy");
    let n = 5000;
    let (x, y) = (floats(n, 4), floats(n, 5));
    let dev = Dev::new();
    let (dx, dy) = (dev.alloc(&x), dev.alloc(&y));
    run(
        &dev,
        &m,
        "saxpy",
        grid1(n, 128),
        &[A::F(2.5), A::P(dx), A::P(dy), A::I(n as i32)],
    );
    let out: Vec<f32> = dev.read(dy, n);
    for i in 0..n {
        assert_eq!(out[i], 2.5f32.mul_add(x[i], y[i]), "y[{i}]");
    }
}

#[test]
fn daxpy() {
    let m = load("daxpy");
    let n = 3001;
    let x: Vec<f64> = floats(n, 6).iter().map(|&v| f64::from(v) / 3.0).collect();
    let y: Vec<f64> = floats(n, 7).iter().map(|&v| f64::from(v) * 1.25).collect();
    let dev = Dev::new();
    let (dx, dy) = (dev.alloc(&x), dev.alloc(&y));
    run(
        &dev,
        &m,
        "daxpy",
        grid1(n, 64),
        &[A::D(-0.75), A::P(dx), A::P(dy), A::I(n as i32)],
    );
    let out: Vec<f64> = dev.read(dy, n);
    for i in 0..n {
        assert_eq!(out[i], (-0.75f64).mul_add(x[i], y[i]), "y[{i}]");
    }
}

#[test]
fn shared_memory_reduction() {
    let m = load("reduce_shared");
    let n: usize = 256 * 37 + 100;
    let input: Vec<f32> = (0..n).map(|i| (i % 17) as f32 * 0.5).collect();
    let blocks = n.div_ceil(256);
    let dev = Dev::new();
    let (din, dp) = (dev.alloc(&input), dev.zeros::<f32>(blocks));
    run(
        &dev,
        &m,
        "reduce_sum",
        grid1(n, 256),
        &[A::P(din), A::P(dp), A::U(n as u32)],
    );
    let partial: Vec<f32> = dev.read(dp, blocks);
    for b in 0..blocks {
        let expect: f32 = input[b * 256..((b + 1) * 256).min(n)].iter().sum();
        assert!(
            (partial[b] - expect).abs() <= 1e-3,
            "block {b}: {} vs {expect}",
            partial[b]
        );
    }
}

#[test]
fn warp_shuffle_reduction_with_atomics() {
    let m = load("warp_reduce");
    let n = 10_000;
    let dev = Dev::new();
    let ints: Vec<i32> = (0..n as i32).map(|i| (i * 7919) % 1000 - 500).collect();
    let (din, dtot) = (dev.alloc(&ints), dev.zeros::<i32>(1));
    // 96-thread blocks: every warp full; n is not a multiple of the block.
    run(
        &dev,
        &m,
        "warp_sum_i32",
        grid1(n, 96),
        &[A::P(din), A::P(dtot), A::I(n as i32)],
    );
    assert_eq!(dev.read::<i32>(dtot, 1)[0], ints.iter().sum::<i32>());

    let fl: Vec<f32> = (0..n).map(|i| (i % 8) as f32 * 0.25).collect();
    let (dfl, dft) = (dev.alloc(&fl), dev.zeros::<f32>(1));
    run(
        &dev,
        &m,
        "warp_sum_f32",
        grid1(n, 256),
        &[A::P(dfl), A::P(dft), A::I(n as i32)],
    );
    // All partial sums are exact multiples of 0.25 well within f32's precision.
    assert_eq!(dev.read::<f32>(dft, 1)[0], fl.iter().sum::<f32>());
}

#[test]
fn grid_stride_loop() {
    let m = load("grid_stride");
    let n = 100_003usize;
    let x = floats(n, 8);
    let dev = Dev::new();
    let (dx, dy) = (dev.alloc(&x), dev.zeros::<f32>(n));
    // 7 blocks of 128 threads cover n many times over.
    run(
        &dev,
        &m,
        "square_plus_one",
        cfg([7, 1, 1], [128, 1, 1]),
        &[A::P(dx), A::P(dy), A::L(n as u64)],
    );
    let y: Vec<f32> = dev.read(dy, n);
    for i in 0..n {
        assert_eq!(y[i], x[i].mul_add(x[i], 1.0), "y[{i}]");
    }
}

#[test]
fn two_dimensional_kernels() {
    let m = load("transpose");
    let (rows, cols) = (45usize, 70usize);
    let input: Vec<f32> = (0..rows * cols).map(|i| i as f32).collect();
    let dev = Dev::new();
    let (din, dout) = (dev.alloc(&input), dev.zeros::<f32>(rows * cols));
    let c = cfg(
        [(cols as u32).div_ceil(32), (rows as u32).div_ceil(32), 1],
        [32, 8, 1],
    );
    run(
        &dev,
        &m,
        "transpose",
        c,
        &[A::P(din), A::P(dout), A::I(rows as i32), A::I(cols as i32)],
    );
    let out: Vec<f32> = dev.read(dout, rows * cols);
    for r in 0..rows {
        for col in 0..cols {
            assert_eq!(out[col * rows + r], input[r * cols + col], "({r}, {col})");
        }
    }

    let a: Vec<i32> = (0..rows * cols).map(|i| i as i32 * 3).collect();
    let b: Vec<i32> = (0..rows * cols).map(|i| 1000 - i as i32).collect();
    let (da, db, dc) = (dev.alloc(&a), dev.alloc(&b), dev.zeros::<i32>(rows * cols));
    let c = cfg(
        [(cols as u32).div_ceil(16), (rows as u32).div_ceil(4), 1],
        [16, 4, 1],
    );
    run(
        &dev,
        &m,
        "add2d",
        c,
        &[
            A::P(da),
            A::P(db),
            A::P(dc),
            A::I(rows as i32),
            A::I(cols as i32),
        ],
    );
    let out: Vec<i32> = dev.read(dc, rows * cols);
    assert!((0..rows * cols).all(|i| out[i] == a[i] + b[i]));
}

#[test]
fn device_function_calls_and_local_arrays() {
    let m = load("device_call");
    let n = 300;
    let x: Vec<f32> = (0..n).map(|i| (i as f32 - 150.0) / 64.0).collect();
    let coeffs: Vec<f32> = vec![1.0, -0.5, 0.25, 2.0, -1.5, 0.125, 3.0, -0.75];
    let dev = Dev::new();
    let (dx, dc, dy, dz) = (
        dev.alloc(&x),
        dev.alloc(&coeffs),
        dev.zeros::<f32>(n),
        dev.zeros::<i64>(n),
    );
    let degree = 11;
    run(
        &dev,
        &m,
        "poly",
        grid1(n, 64),
        &[
            A::P(dx),
            A::P(dc),
            A::P(dy),
            A::P(dz),
            A::I(degree),
            A::I(n as i32),
        ],
    );
    let y: Vec<f32> = dev.read(dy, n);
    let z: Vec<i64> = dev.read(dz, n);
    for i in 0..n {
        let mut acc = 0.0f32;
        for k in (0..=degree as usize).rev() {
            acc = acc.mul_add(x[i], coeffs[k & 7]);
        }
        assert_eq!(y[i], acc, "y[{i}]");
        assert_eq!(z[i], ((i as i64) << 33) * 3 + i as i64, "z[{i}]");
    }
    let k = m.kernel("poly").unwrap();
    assert!(
        k.local_bytes >= 32,
        "the callee's local array is on the stack"
    );
}

#[test]
fn tiled_matrix_multiply() {
    let m = load("matmul_tiled");
    let (mm, nn, kk) = (37usize, 29usize, 45usize);
    let a: Vec<f32> = (0..mm * kk).map(|i| ((i * 7) % 13) as f32 - 6.0).collect();
    let b: Vec<f32> = (0..kk * nn)
        .map(|i| ((i * 5) % 11) as f32 * 0.5 - 2.0)
        .collect();
    let dev = Dev::new();
    let (da, db, dc) = (dev.alloc(&a), dev.alloc(&b), dev.zeros::<f32>(mm * nn));
    let c = cfg(
        [(nn as u32).div_ceil(16), (mm as u32).div_ceil(16), 1],
        [16, 16, 1],
    );
    run(
        &dev,
        &m,
        "matmul_tiled",
        c,
        &[
            A::P(da),
            A::P(db),
            A::P(dc),
            A::I(mm as i32),
            A::I(nn as i32),
            A::I(kk as i32),
        ],
    );
    let out: Vec<f32> = dev.read(dc, mm * nn);
    for r in 0..mm {
        for col in 0..nn {
            // Small integers and halves: every partial sum is exact.
            let expect: f32 = (0..kk).map(|j| a[r * kk + j] * b[j * nn + col]).sum();
            assert_eq!(out[r * nn + col], expect, "C[{r}][{col}]");
        }
    }
    assert_eq!(
        m.kernel("matmul_tiled").unwrap().static_shared_bytes,
        2 * 16 * 16 * 4
    );
}

#[test]
fn shared_memory_atomics_histogram() {
    let m = load("histogram");
    let n = 50_000;
    let mut r = rng(9);
    let data: Vec<u8> = (0..n)
        .map(|_| (r() % 256) as u8 / (1 + (r() % 3) as u8))
        .collect();
    let dev = Dev::new();
    let (dd, db) = (dev.alloc(&data), dev.zeros::<u32>(256));
    run(
        &dev,
        &m,
        "histogram",
        cfg([13, 1, 1], [192, 1, 1]),
        &[A::P(dd), A::U(n as u32), A::P(db)],
    );
    let bins: Vec<u32> = dev.read(db, 256);
    let mut expect = [0u32; 256];
    for &d in &data {
        expect[d as usize] += 1;
    }
    assert_eq!(bins, expect.to_vec());
}

#[test]
fn dynamic_shared_memory() {
    let m = load("dyn_shared");
    let k = m.kernel("reverse_block").unwrap();
    assert_eq!(k.static_shared_bytes, 0);
    let n = 1000;
    let data: Vec<i32> = (0..n as i32).collect();
    let dev = Dev::new();
    let dd = dev.alloc(&data);
    let block = 128u32;
    let mut c = grid1(n, block);
    c.dynamic_shared_bytes = block * 4;
    run(&dev, &m, "reverse_block", c, &[A::P(dd), A::I(n as i32)]);
    let out: Vec<i32> = dev.read(dd, n);
    for b in 0..n.div_ceil(block as usize) {
        let lo = b * block as usize;
        let hi = (lo + block as usize).min(n);
        let mut expect = data[lo..hi].to_vec();
        expect.reverse();
        assert_eq!(out[lo..hi], expect[..], "block {b}");
    }
    // Too little dynamic shared memory: the kernel's accesses fall outside it.
    c.dynamic_shared_bytes = 64;
    let err = try_run(&dev, &m, "reverse_block", c, &[A::P(dd), A::I(n as i32)]).unwrap_err();
    assert!(
        matches!(err, LaunchError::IllegalAddress { len: 4, .. }),
        "{err:?}"
    );
}

#[test]
fn module_globals_and_constants() {
    let m = load("globals");
    let names: Vec<(&str, Space, u64)> = m
        .globals()
        .iter()
        .map(|g| (g.name.as_str(), g.space, g.size))
        .collect();
    assert!(names.contains(&("coeffs", Space::Const, 16)), "{names:?}");
    assert!(
        names.contains(&("evaluated", Space::Global, 4)),
        "{names:?}"
    );
    assert!(names.contains(&("offsets", Space::Global, 12)), "{names:?}");
    let coeffs = m.globals().iter().find(|g| g.name == "coeffs").unwrap();
    assert_eq!(
        coeffs.init,
        [1.0f32, -2.0, 0.5, 0.25]
            .iter()
            .flat_map(|f| f.to_le_bytes())
            .collect::<Vec<u8>>()
    );

    let n = 777;
    let x = floats(n, 10);
    let dev = Dev::new();
    let (dx, dy, ds) = (dev.alloc(&x), dev.zeros::<f32>(n), dev.zeros::<i32>(n));
    let k = m.kernel("eval_poly").unwrap();
    let g = globals(&dev, &m);
    launch(
        &m,
        k,
        &grid1(n, 100),
        &pack(k, &[A::P(dx), A::P(dy), A::P(ds), A::I(n as i32)]),
        &g,
        &dev,
    )
    .unwrap();
    let y: Vec<f32> = dev.read(dy, n);
    let s: Vec<i32> = dev.read(ds, n);
    for i in 0..n {
        let v = x[i];
        let expect = v.mul_add(v.mul_add(v.mul_add(0.25, 0.5), -2.0), 1.0);
        assert!(
            (y[i] - expect).abs() <= 1e-5 * expect.abs().max(1.0),
            "y[{i}] {} vs {expect}",
            y[i]
        );
        assert_eq!(s[i], i as i32 + [10, 20, 30][i % 3]);
    }
    let ev = m
        .globals()
        .iter()
        .position(|g| g.name == "evaluated")
        .unwrap();
    assert_eq!(dev.read::<u32>(g[ev], 1)[0], n as u32);
}

#[test]
fn generic_pointers_to_shared_local_and_global() {
    let m = load("generic_ptrs");
    let blocks = 3;
    let input: Vec<i32> = (0..64 * blocks as i32).map(|i| i * 3 - 50).collect();
    let dev = Dev::new();
    let (din, dout) = (dev.alloc(&input), dev.zeros::<i32>(64 * blocks));
    run(
        &dev,
        &m,
        "generic_ptrs",
        cfg([blocks as u32, 1, 1], [64, 1, 1]),
        &[A::P(din), A::P(dout)],
    );
    let out: Vec<i32> = dev.read(dout, 64 * blocks);
    for b in 0..blocks {
        let sum: i32 = input[b * 64..][..64].iter().sum();
        for t in 0..64 {
            let v = input[b * 64 + t];
            let local: i32 = (0..8 - (t & 3) as i32).map(|k| v * k).sum();
            assert_eq!(out[b * 64 + t], 3 * sum + local, "block {b} thread {t}");
        }
    }
}

#[test]
fn integer_and_bit_operations() {
    let m = load("int_ops");
    let mut r = rng(11);
    let mut a: Vec<i32> = (0..500).map(|_| r() as i32).collect();
    let mut b: Vec<i32> = (0..500).map(|_| (r() as i32) >> (r() % 31)).collect();
    a.extend([0, -1, i32::MIN, i32::MAX, 7, -7, 1 << 20]);
    b.extend([5, 3, -1, 0, 0, 2, -3]);
    let n = a.len();
    let dev = Dev::new();
    let (da, db, d32, d64) = (
        dev.alloc(&a),
        dev.alloc(&b),
        dev.zeros::<i32>(16 * n),
        dev.zeros::<i64>(2 * n),
    );
    run(
        &dev,
        &m,
        "int_ops",
        grid1(n, 64),
        &[A::P(da), A::P(db), A::P(d32), A::P(d64), A::I(n as i32)],
    );
    let o: Vec<i32> = dev.read(d32, 16 * n);
    let o64: Vec<i64> = dev.read(d64, 2 * n);
    for i in 0..n {
        let (x, y) = (a[i], b[i]);
        let (ux, uy) = (x as u32, y as u32);
        let byte_perm = |x: u32, y: u32, s: u32| {
            let bytes = (u64::from(y) << 32) | u64::from(x);
            (0..4).fold(0u32, |acc, k| {
                acc | ((((bytes >> (8 * ((s >> (4 * k)) & 7))) & 0xff) as u32) << (8 * k))
            })
        };
        let expect = [
            if y != 0 { x.wrapping_div(y) } else { -1 },
            if y != 0 { x.wrapping_rem(y) } else { -1 },
            ux.checked_div(uy).map_or(-1, |q| q as i32),
            ux.checked_rem(uy).map_or(-1, |r| r as i32),
            x.min(y) ^ x.max(y),
            (ux.min(uy) as i32).wrapping_add(ux.max(uy) as i32),
            ux.count_ones() as i32 + 100 * x.leading_zeros() as i32,
            ux.reverse_bits() as i32,
            x >> (y & 31),
            ((ux >> (uy & 31)) as i32) ^ (x << (y & 15)),
            ((i64::from(x) * i64::from(y)) >> 32) as i32,
            ((u64::from(ux) * u64::from(uy)) >> 32) as i32,
            x.wrapping_abs().wrapping_sub(!y),
            ((ux >> 3) & 0x1f) as i32 | (((ux >> 7) & 0xff) << 8) as i32,
            (if x == 0 {
                0
            } else {
                x.trailing_zeros() as i32 + 1
            }) + 64 * ((x as i64 as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15)).count_ones() as i32,
            byte_perm(ux, uy, 0x5140) as i32,
        ];
        for (j, e) in expect.iter().enumerate() {
            assert_eq!(o[16 * i + j], *e, "out[{j}] for a={x}, b={y}");
        }
        let wx = i64::from(x) * i64::from(y);
        assert_eq!(
            o64[2 * i],
            wx.wrapping_add(i64::from(x) << 32),
            "out64[0] for a={x}, b={y}"
        );
        let q = if y != 0 {
            (i64::from(x) * 1_000_003) / i64::from(y)
        } else {
            0
        };
        assert_eq!(o64[2 * i + 1], q, "out64[1] for a={x}, b={y}");
    }
}

#[test]
fn float_conversions_and_math() {
    let m = load("float_ops");
    let mut x = floats(400, 12);
    x.extend([
        0.0,
        -0.0,
        0.5,
        -0.5,
        1.5,
        2.5,
        -2.5,
        1e30,
        -1e30,
        f32::NAN,
        123456.7,
        3e-39,
    ]);
    let n = x.len();
    let d: Vec<f64> = (0..n).map(|i| (i as f64 - 200.0) * 1.37 + 1e-3).collect();
    let dev = Dev::new();
    let (dx, dd) = (dev.alloc(&x), dev.alloc(&d));
    let (dof, doi, dod) = (
        dev.zeros::<f32>(8 * n),
        dev.zeros::<i32>(8 * n),
        dev.zeros::<f64>(4 * n),
    );
    run(
        &dev,
        &m,
        "float_ops",
        grid1(n, 128),
        &[
            A::P(dx),
            A::P(dd),
            A::P(dof),
            A::P(doi),
            A::P(dod),
            A::I(n as i32),
        ],
    );
    let of: Vec<f32> = dev.read(dof, 8 * n);
    let oi: Vec<i32> = dev.read(doi, 8 * n);
    let od: Vec<f64> = dev.read(dod, 4 * n);
    let close = |got: f32, want: f32, rel: f32| {
        (got.is_nan() && want.is_nan())
            || got == want
            || (got - want).abs() <= rel * want.abs().max(1e-30)
    };
    for i in 0..n {
        let (v, w) = (x[i], d[i]);
        let o = &of[8 * i..][..8];
        if v.is_nan() {
            assert_eq!(o[0].to_bits(), 0x7fff_ffff, "the GPU's canonical NaN");
        } else {
            assert_eq!(o[0].to_bits(), v.abs().sqrt().to_bits(), "sqrtf({v})");
        }
        assert!(
            close(o[1], v / (v + 3.5), 0.0),
            "division for {v}: {}",
            o[1]
        );
        assert!(
            close(o[2], v.min(1.5) + v.max(-2.0), 0.0),
            "fmin/fmax for {v}"
        );
        assert!(
            close(o[3], (v * 0.01).exp(), 2e-6),
            "__expf({v}) = {}",
            o[3]
        );
        if v.abs() < 1e5 {
            assert!(
                (o[4] - v.sin()).abs() <= 2e-6,
                "sinf({v}) = {} vs {}",
                o[4],
                v.sin()
            );
        } else if v.is_finite() {
            assert!((-1.0..=1.0).contains(&o[4]), "sinf({v}) = {}", o[4]);
        }
        assert!(
            close(o[5], (v.abs() + 1.0).ln(), 2e-7),
            "logf = {} vs {}",
            o[5],
            (v.abs() + 1.0).ln()
        );
        assert_eq!(o[6], w as f32, "(float){w}");
        assert!(
            close(o[7], 1.0 / (v.abs() + 1.0).sqrt(), 1e-6),
            "rsqrtf({v})"
        );
        let io = &oi[8 * i..][..8];
        assert_eq!(io[0], v as i32, "(int){v}");
        assert_eq!(io[1], v.round_ties_even() as i32, "__float2int_rn({v})");
        assert_eq!(io[2], v.floor() as i32, "floorf({v})");
        assert_eq!(io[3], v.ceil() as i32, "ceilf({v})");
        assert_eq!(io[4], v.abs() as u32 as i32, "(unsigned)fabsf({v})");
        assert_eq!(io[5], i32::from(v < 0.5), "{v} < 0.5");
        assert_eq!(io[6], i32::from((v / v).is_nan()), "isnan({v}/{v})");
        assert_eq!(io[7], (w * 1e3) as i64 as i32, "(long long)({w} * 1e3)");
        let dd = &od[4 * i..][..4];
        assert_eq!(dd[0], w.abs().sqrt());
        assert_eq!(dd[1], w / 7.0);
        let prod = f64::from(v) * w;
        assert!(
            dd[2] == prod || (dd[2].is_nan() && prod.is_nan()),
            "{v} * {w}"
        );
        assert_eq!(dd[3], (i as f64 - 7.0) + i as f64);
    }
}

#[test]
fn warp_collectives_votes_and_block_count() {
    let m = load("warp_ops");
    let n = 200; // the last of two 128-thread blocks is partly idle
    let input: Vec<i32> = (0..n as i32).map(|i| (i * 37) % 23 - 9).collect();
    let dev = Dev::new();
    let (din, dout) = (dev.alloc(&input), dev.zeros::<i32>(8 * n));
    run(
        &dev,
        &m,
        "warp_ops",
        cfg([2, 1, 1], [128, 1, 1]),
        &[A::P(din), A::P(dout), A::I(n as i32)],
    );
    let out: Vec<i32> = dev.read(dout, 8 * n);
    let v = |i: usize| if i < n { input[i] } else { 0 };
    for i in 0..n {
        let (w0, lane) = (i / 32 * 32, i % 32);
        let block0 = i / 128 * 128;
        let o = &out[8 * i..][..8];
        let scan: i32 = (w0..=i).map(v).sum();
        assert_eq!(o[0], scan, "scan at {i}");
        assert_eq!(o[1], v(w0 + (lane ^ 5)), "xor shuffle at {i}");
        assert_eq!(o[2], v(w0 + lane / 8 * 8 + 3), "width-8 shuffle at {i}");
        let ballot = (0..32)
            .filter(|&l| v(w0 + l) > 0)
            .fold(0u32, |b, l| b | (1 << l));
        assert_eq!(o[3] as u32, ballot, "ballot at {i}");
        assert_eq!(o[4], 1, "all at {i}");
        assert_eq!(
            o[5],
            i32::from((0..32).any(|l| v(w0 + l) == 7)),
            "any at {i}"
        );
        let count = (block0..block0 + 128).filter(|&t| v(t) & 1 != 0).count() as i32;
        assert_eq!(o[6], count, "__syncthreads_count at {i}");
        // Only the lanes with i < n are inside the `if` that calls __activemask().
        let active = (0..32)
            .filter(|&l| w0 + l < n)
            .fold(0u32, |b, l| b | (1 << l));
        assert_eq!(o[7] as u32, active, "activemask at {i}");
    }
}

#[test]
fn math_library_functions() {
    let m = load("math_lib");
    let mut x = floats(300, 15);
    x.extend([0.0, -0.0, 1.0, -1.0, 0.5, 88.0, -87.0, 1e-20, 3.0]);
    let n = x.len();
    let xd: Vec<f64> = x.iter().map(|&v| f64::from(v) * 1.000_000_1).collect();
    let dev = Dev::new();
    let (dx, dxd) = (dev.alloc(&x), dev.alloc(&xd));
    let (of, od) = (dev.zeros::<f32>(8 * n), dev.zeros::<f64>(8 * n));
    run(
        &dev,
        &m,
        "math_f32",
        grid1(n, 64),
        &[A::P(dx), A::P(of), A::I(n as i32)],
    );
    run(
        &dev,
        &m,
        "math_f64",
        grid1(n, 64),
        &[A::P(dxd), A::P(od), A::I(n as i32)],
    );
    let f: Vec<f32> = dev.read(of, 8 * n);
    let d: Vec<f64> = dev.read(od, 8 * n);
    let erf = |v: f64| {
        // Abramowitz-Stegun 7.1.26 is too coarse; integrate instead (Simpson, 2000 steps).
        let h = v / 2000.0;
        let g = |t: f64| (-t * t).exp();
        let s: f64 = (0..=2000)
            .map(|k| {
                let w = if k == 0 || k == 2000 {
                    1.0
                } else if k % 2 == 1 {
                    4.0
                } else {
                    2.0
                };
                w * g(k as f64 * h)
            })
            .sum();
        s * h / 3.0 * 2.0 / std::f64::consts::PI.sqrt()
    };
    for i in 0..n {
        let v = f64::from(x[i]);
        let want32 = [
            v.exp(),
            f64::from(x[i].abs() + 1e-3).ln(),
            v.abs().powf(1.7f32 as f64),
            v.tanh(),
            v.cos(),
            v.atan2(0.3f32 as f64),
            erf(v),
            v.cbrt(),
        ];
        for (j, w) in want32.iter().enumerate() {
            let got = f64::from(f[8 * i + j]);
            let tol = 4.0 * f64::from(f32::EPSILON) * w.abs() + 1e-37;
            let tol = if j == 4 { tol + 1e-7 } else { tol };
            assert!(
                (got - w).abs() <= tol || (w.is_infinite() && got == *w),
                "f32 function {j} of {v}: {got} vs {w}"
            );
        }
        let v = xd[i];
        let want64 = [
            v.exp(),
            (v.abs() + 1e-3).ln(),
            v.abs().powf(1.7),
            v.tanh(),
            v.sin(),
            v.cos(),
            v.atan2(0.3),
            v % 0.7,
        ];
        for (j, w) in want64.iter().enumerate() {
            let got = d[8 * i + j];
            let tol =
                4.0 * f64::EPSILON * w.abs() + if matches!(j, 4 | 5) { 1e-16 } else { 1e-300 };
            assert!(
                (got - w).abs() <= tol,
                "f64 function {j} of {v}: {got} vs {w}"
            );
        }
    }
}

#[test]
fn global_atomics_of_every_kind() {
    let m = load("atomics");
    let dev = Dev::new();
    let ip = dev.alloc(&[0i32, 0, i32::MIN, i32::MAX, 0, 0]);
    let up = dev.alloc(&[0xffff_ffffu32, 0, 0, 0, 0]);
    let lp = dev.alloc(&[0u64, 0]);
    let fp = dev.alloc(&[0.0f32, 1.0]);
    let dp = dev.alloc(&[0.0f64]);
    let (blocks, threads) = (5u32, 96u32);
    let total = (blocks * threads) as i64;
    run(
        &dev,
        &m,
        "atomics",
        cfg([blocks, 1, 1], [threads, 1, 1]),
        &[A::P(ip), A::P(up), A::P(lp), A::P(fp), A::P(dp)],
    );
    let i: Vec<i32> = dev.read(ip, 6);
    assert_eq!(i[0] as i64, total * (total - 1) / 2);
    assert_eq!(i[1] as i64, -2 * total);
    assert_eq!(
        i[2],
        (0..total).map(|t| t % 1000 - 300).max().unwrap() as i32
    );
    assert_eq!(i[3], (500 - (total - 1)) as i32);
    assert_eq!(i[4], 42);
    assert!(
        (1..=total as i32).contains(&i[5]),
        "the first CAS wins: {}",
        i[5]
    );
    let u: Vec<u32> = dev.read(up, 5);
    assert_eq!(u[0], 0x8000_0000);
    assert_eq!(u[1], 0x7fff_ffff);
    let xor = (0..total).fold(0u32, |a, t| a ^ (1 << (t & 7)));
    assert_eq!(u[2], xor);
    let (mut inc, mut dec) = (0u32, 0u32);
    for _ in 0..total {
        inc = if inc >= 9 { 0 } else { inc + 1 };
        dec = if dec == 0 || dec > 9 { 9 } else { dec - 1 };
    }
    assert_eq!((u[3], u[4]), (inc, dec));
    let l: Vec<u64> = dev.read(lp, 2);
    assert_eq!(l[0], (total as u64) << 33);
    assert_eq!(l[1], (total as u64 - 1) * 1_000_000_007);
    let f: Vec<f32> = dev.read(fp, 2);
    assert_eq!(f[0], total as f32 * 0.5);
    let mut prod = 1.0f32;
    for _ in 0..total {
        prod *= 1.0001;
    }
    assert_eq!(f[1], prod, "CAS loop");
    assert_eq!(dev.read::<f64>(dp, 1)[0], total as f64 * 0.25);
}

#[test]
fn recursion_and_switch() {
    let m = load("control_flow");
    let dev = Dev::new();
    let out = dev.zeros::<i32>(64);
    run(
        &dev,
        &m,
        "recursion",
        cfg([1, 1, 1], [64, 1, 1]),
        &[A::P(out)],
    );
    let fib = |n: i32| (0..n).fold((0, 1), |(a, b), _| (b, a + b)).0;
    assert_eq!(
        dev.read::<i32>(out, 64),
        (0..64).map(|t| fib(t % 16)).collect::<Vec<_>>()
    );

    let input: Vec<i32> = (0..100).map(|i| i * 37 - 1000).collect();
    let (din, dout) = (dev.alloc(&input), dev.zeros::<i32>(100));
    run(
        &dev,
        &m,
        "switchy",
        cfg([1, 1, 1], [100, 1, 1]),
        &[A::P(din), A::P(dout)],
    );
    let expect: Vec<i32> = input
        .iter()
        .map(|&v| match v & 15 {
            0 => 5,
            1 => v * 3,
            2 => v ^ 7,
            3 => -v,
            4 => v << 2,
            5 => v >> 1,
            6 => 99,
            7 => v % 5,
            8 => 1,
            9 => 2,
            10 => 3,
            _ => 4,
        })
        .collect();
    assert_eq!(dev.read::<i32>(dout, 100), expect);
}

#[test]
fn device_printf() {
    // Prints 2 lines on stdout (not captured by the test harness).
    let m = load("printf");
    let dev = Dev::new();
    let ret = dev.zeros::<i32>(2);
    run(
        &dev,
        &m,
        "hello",
        cfg([1, 1, 1], [2, 1, 1]),
        &[A::P(ret), A::F(1.25)],
    );
    assert_eq!(
        dev.read::<i32>(ret, 2),
        vec![4; 2],
        "printf returns the number of arguments"
    );
}

#[test]
fn concurrent_launches_use_real_atomics() {
    // Four host threads run the same kernel at once, all adding into one counter.
    let m = load("warp_reduce");
    let dev = Dev::new();
    let n = 20_000;
    let ints: Vec<i32> = (0..n as i32).map(|i| i % 7 - 3).collect();
    let (din, dtot) = (dev.alloc(&ints), dev.zeros::<i32>(1));
    std::thread::scope(|s| {
        for _ in 0..4 {
            s.spawn(|| {
                run(
                    &dev,
                    &m,
                    "warp_sum_i32",
                    grid1(n, 128),
                    &[A::P(din), A::P(dtot), A::I(n as i32)],
                )
            });
        }
    });
    assert_eq!(dev.read::<i32>(dtot, 1)[0], 4 * ints.iter().sum::<i32>());
}

#[test]
fn hand_written_ptx_features() {
    let m = load("handwritten_features");
    let dev = Dev::new();
    let out = dev.zeros::<u32>(64 * 32);
    let k = m.kernel("k").unwrap();
    let mut params = vec![0u8; k.param_bytes as usize];
    params[..8].copy_from_slice(&out.to_le_bytes());
    for (i, v) in [1u32, 2, 3, 4].iter().enumerate() {
        params[k.params[1].offset as usize + 4 * i..][..4].copy_from_slice(&v.to_le_bytes());
    }
    let c = LaunchConfig {
        dynamic_shared_bytes: 64,
        ..cfg([1, 1, 1], [64, 1, 1])
    };
    launch(&m, k, &c, &params, &[], &dev).unwrap();
    let o: Vec<u32> = dev.read(out, 64 * 32);
    let half_of_third = 0.333_251_95_f32; // 1/3 rounded to f16
    for t in 0..64u32 {
        let r = &o[32 * t as usize..][..32];
        let lane = t % 32;
        let odd = t & 1 == 1;
        let mut w = vec![
            t + 7,
            0,
            t + 2,
            u32::MAX,
            t.wrapping_sub(1),
            u32::from(t < 10 && odd) + 2 * u32::from(t >= 10 && odd),
            u32::from(t > 50 || !odd),
            1 + 8 * u32::from(lane < 2),
            if lane >= 3 { 1000 + t - 3 } else { t },
            if lane < 5 { 0x1f } else { 0xffff_ffe0 },
            (1 << lane) - 1,
            if t >= 32 { (t - 32) * 3 } else { 0 },
            t + 100,
            1,
            2,
            3,
        ];
        let x = t * 37;
        w.push(((((x >> 2) & 31) << 27) as i32 >> 27) as u32);
        w.push((((0x8000_0001u64 << 32 | u64::from(t)) << (t & 31)) >> 32) as u32);
        let (a, b, cc) = (t, 0x0f0f, 0x3333);
        w.push((a & b) | (a & cc) | (b & cc));
        w.push(1);
        w.push((-2.0f32).to_bits());
        w.push(half_of_third.to_bits());
        w.push((t as i32 * 10 - 100).clamp(0, 255) as u32);
        w.push((t as i32 - 30).wrapping_mul(0x7f_ffff) as u32);
        w.push(t.abs_diff(20) + 5);
        let warp = t / 32 * 32;
        w.push(
            (warp..warp + 32)
                .map(|u| (u * 7 % 13) as i32 - 6)
                .min()
                .unwrap() as u32,
        );
        w.push(0xffff_fffe);
        w.push(64);
        w.push(32);
        let bfind = if t == 0 {
            u32::MAX
        } else {
            31 - t.leading_zeros()
        };
        w.push(
            ((u64::from(t) * 0x01_0101_0101).count_ones() + t.leading_zeros())
                ^ bfind
                ^ t.reverse_bits(),
        );
        w.push((t as i32 - 40).max(-5) as u32);
        w.push((i64::from(t) * -1000 / 7) as u32);
        for (k, want) in w.iter().enumerate() {
            assert_eq!(r[k], *want, "thread {t}, word {k}");
        }
    }
}

// ---------------------------------------------------------------- errors and layout

#[test]
fn out_of_bounds_access_is_an_error_not_a_crash() {
    let m = load("vector_add");
    let dev = Dev::new();
    let a = dev.alloc(&[1.0f32; 100]);
    let c = dev.zeros::<f32>(100);
    // n = 1000 with 100-element buffers: thread 100 reads past the end.
    let err = try_run(
        &dev,
        &m,
        "vector_add",
        grid1(1000, 128),
        &[A::P(a), A::P(a), A::P(c), A::U(1000)],
    )
    .unwrap_err();
    match err {
        LaunchError::IllegalAddress { addr, len } => {
            assert_eq!(len, 4);
            assert!(addr >= a + 400 || addr >= c + 400, "{addr:#x}");
        }
        e => panic!("expected IllegalAddress, got {e:?}"),
    }
    // A null pointer too.
    let err = try_run(
        &dev,
        &m,
        "vector_add",
        grid1(10, 32),
        &[A::P(0), A::P(a), A::P(c), A::U(10)],
    )
    .unwrap_err();
    assert_eq!(err, LaunchError::IllegalAddress { addr: 0, len: 4 });
}

#[test]
fn unknown_instruction_is_refused_with_its_line() {
    let text = ptx("vector_add");
    let line = text.lines().position(|l| l.contains("add.f32")).unwrap() + 1;
    let bad: String = text
        .lines()
        .map(|l| {
            if l.contains("add.f32") {
                "\tfrobnicate.u32 %r1, %r2;"
            } else {
                l
            }
        })
        .collect::<Vec<_>>()
        .join("\n");
    let log = Module::load(&bad, &JitOptions::default()).unwrap_err();
    assert!(
        log.contains(&format!("ptxas application ptx input, line {line}; error   : Unknown instruction 'frobnicate.u32'")),
        "{log}"
    );
    assert!(
        log.ends_with("ptxas fatal   : Ptx assembly aborted due to errors\n"),
        "{log}"
    );
}

#[test]
fn unsupported_forms_are_refused_at_load() {
    let cases = [
        (
            "div.rz.f32 %f1, %f1, %f1;",
            "Unsupported modifier '.rz' in instruction 'div.rz.f32'",
        ),
        ("add.f16 %f1, %f1, %f1;", "Unsupported type '.f16'"),
        ("cvt.s32.f32 %r1, %f1;", "Rounding modifier required"),
        (
            "tld4.r.2d.v4.f32.f32 {%f1, %f1, %f1, %f1}, [%rd1, {%f1, %f1}];",
            "Unsupported instruction 'tld4.r.2d.v4.f32.f32'",
        ),
        (
            "ld.global.foo.u32 %r1, [%rd1];",
            "Unsupported modifier '.foo'",
        ),
        ("mov.u32 %r1, %nosuch;", "Unknown symbol '%nosuch'"),
        ("bra $L_missing;", "Unknown label '$L_missing'"),
        ("shfl.down.b32 %r1, %r1, 1, 31;", "only shfl.sync"),
        (
            "prmt.b32.f4e %r1, %r1, %r1, %r1;",
            "Unsupported modifier '.f4e'",
        ),
    ];
    for (inst, msg) in cases {
        let text = format!(
            ".version 8.0\n.target sm_80\n.address_size 64\n.visible .entry k()\n{{\n.reg .b32 %r<2>;\n.reg .f32 %f<2>;\n.reg .b64 %rd<2>;\n{inst}\nret;\n}}\n"
        );
        let log = Module::load(&text, &JitOptions::default()).unwrap_err();
        assert!(
            log.contains("line 9; error   : ") && log.contains(msg),
            "{inst}:\n{log}"
        );
    }
}

#[test]
fn module_header_is_checked() {
    let k = ".visible .entry k()\n{\nret;\n}\n";
    let opts = JitOptions {
        target_sm: 80,
        ..JitOptions::default()
    };
    let log = Module::load(
        &format!(".version 8.0\n.target sm_90\n.address_size 64\n{k}"),
        &opts,
    )
    .unwrap_err();
    assert!(
        log.contains("line 2; error") && log.contains("sm_90"),
        "{log}"
    );
    let log = Module::load(
        &format!(".version 9.0\n.target sm_80\n.address_size 64\n{k}"),
        &opts,
    )
    .unwrap_err();
    assert!(
        log.contains("line 1; error") && log.contains(".version 9.0"),
        "{log}"
    );
    assert!(
        Module::load(
            &format!(".version 7.0\n.target sm_52\n.address_size 64\n{k}"),
            &opts
        )
        .is_ok()
    );
    let log = Module::load(
        ".version 8.0\n.target sm_80\n.address_size 64\n.entry k(\n{\n}\n",
        &opts,
    )
    .unwrap_err();
    assert!(log.contains("line 5; error   : syntax error"), "{log}");
}

#[test]
fn parameter_layout_follows_ptx_alignment() {
    let m = load("vector_add");
    let k = m.kernel("vector_add").unwrap();
    let got: Vec<(u32, u32, u32)> = k
        .params
        .iter()
        .map(|p| (p.offset, p.size, p.align))
        .collect();
    assert_eq!(got, vec![(0, 8, 8), (8, 8, 8), (16, 8, 8), (24, 4, 4)]);
    assert_eq!(k.param_bytes, 28);

    let text = ".version 8.0\n.target sm_80\n.address_size 64\n\
        .visible .entry k(.param .u8 k_0, .param .align 8 .b8 k_1[12], .param .u16 k_2, .param .f64 k_3, \
        .param .u32 k_4, .param .u64 .ptr .global .align 16 k_5)\n.maxntid 128, 2\n{\nret;\n}\n";
    let (m, _) = Module::load(text, &JitOptions::default()).unwrap();
    let k = &m.kernels()[0];
    let got: Vec<(u32, u32)> = k.params.iter().map(|p| (p.offset, p.size)).collect();
    assert_eq!(
        got,
        vec![(0, 1), (8, 12), (20, 2), (24, 8), (32, 4), (40, 8)]
    );
    assert_eq!(k.params[1].align, 8);
    assert_eq!(k.max_threads_per_block, Some(256));
    assert_eq!(k.maxntid, Some([128, 2, 1]));
}

#[test]
fn info_log_when_verbose() {
    let opts = JitOptions {
        verbose: true,
        ..JitOptions::default()
    };
    let (m, info) = Module::load(&ptx("vector_add"), &opts).unwrap();
    let k = m.kernel("vector_add").unwrap();
    assert!(info.starts_with("ptxas info    : 0 bytes gmem\n"), "{info}");
    assert!(
        info.contains("ptxas info    : Compiling entry function 'vector_add' for 'sm_90'\n"),
        "{info}"
    );
    assert!(
        info.contains("    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n"),
        "{info}"
    );
    assert!(
        info.contains(&format!(
            "ptxas info    : Used {} registers, 380 bytes cmem[0]\n",
            k.num_regs
        )),
        "{info}"
    );
    assert!((4..=40).contains(&k.num_regs), "{}", k.num_regs);
    let (_, quiet) = Module::load(&ptx("vector_add"), &JitOptions::default()).unwrap();
    assert!(quiet.is_empty());
    let (_, info) = Module::load(&ptx("matmul_tiled"), &opts).unwrap();
    assert!(
        info.contains("registers, 2048 bytes smem, 388 bytes cmem[0]"),
        "{info}"
    );
}

/// A small kernel written directly in PTX.
fn inline(body: &str) -> Module {
    let text = format!(
        ".version 8.0\n.target sm_80\n.address_size 64\n.visible .entry k(.param .u64 k_0)\n{{\n\
         .reg .pred %p<4>;\n.reg .b32 %r<16>;\n.reg .b64 %rd<16>;\n{body}\n}}\n"
    );
    match Module::load(&text, &JitOptions::default()) {
        Ok((m, _)) => m,
        Err(log) => panic!("{log}"),
    }
}

#[test]
fn trap_misalignment_and_launch_checks() {
    let dev = Dev::new();
    let buf = dev.zeros::<u32>(4);
    let m = inline("trap;\nret;");
    assert_eq!(
        try_run(&dev, &m, "k", grid1(1, 1), &[A::P(buf)]),
        Err(LaunchError::Trap)
    );

    let m = inline("ld.param.u64 %rd1, [k_0];\nld.global.u32 %r1, [%rd1+2];\nret;");
    assert_eq!(
        try_run(&dev, &m, "k", grid1(1, 1), &[A::P(buf)]),
        Err(LaunchError::MisalignedAddress { addr: buf + 2 })
    );

    let m = inline("ret;");
    let bad = |c: LaunchConfig| try_run(&dev, &m, "k", c, &[A::P(buf)]).unwrap_err();
    assert!(matches!(
        bad(cfg([1, 1, 1], [1025, 1, 1])),
        LaunchError::InvalidValue(_)
    ));
    assert!(matches!(
        bad(cfg([0, 1, 1], [1, 1, 1])),
        LaunchError::InvalidValue(_)
    ));
    assert!(matches!(
        bad(cfg([1, 1, 1], [32, 32, 2])),
        LaunchError::InvalidValue(_)
    ));
    let big = LaunchConfig {
        dynamic_shared_bytes: 1 << 20,
        ..cfg([1, 1, 1], [32, 1, 1])
    };
    assert!(matches!(bad(big), LaunchError::OutOfResources(_)));
    let k = m.kernel("k").unwrap();
    assert!(matches!(
        launch(&m, k, &cfg([1, 1, 1], [1, 1, 1]), &[0u8; 4], &[], &dev),
        Err(LaunchError::InvalidValue(_))
    ));
}

#[test]
fn exited_threads_do_not_block_barriers_and_deadlocks_end() {
    let dev = Dev::new();
    let out = dev.zeros::<u32>(64);
    // Threads >= 16 exit; the others sync twice, then write.
    let m = inline(
        "mov.u32 %r1, %tid.x;\nsetp.ge.u32 %p1, %r1, 16;\n@%p1 exit;\nbar.sync 0;\nbar.sync 0;\n\
         ld.param.u64 %rd1, [k_0];\nmul.wide.u32 %rd2, %r1, 4;\nadd.s64 %rd3, %rd1, %rd2;\nst.global.u32 [%rd3], 7;\nret;",
    );
    try_run(&dev, &m, "k", grid1(64, 64), &[A::P(out)]).unwrap();
    let o: Vec<u32> = dev.read(out, 64);
    assert!(o[..16].iter().all(|&v| v == 7) && o[16..].iter().all(|&v| v == 0));

    // Thread 0 waits at barrier 1, the others at barrier 0: it can never complete.
    let m = inline(
        "mov.u32 %r1, %tid.x;\nsetp.eq.u32 %p1, %r1, 0;\n@%p1 bar.sync 1;\n@!%p1 bar.sync 0;\nret;",
    );
    match try_run(&dev, &m, "k", grid1(64, 64), &[A::P(out)]) {
        Err(LaunchError::IllegalInstruction(msg)) => assert!(msg.contains("deadlock"), "{msg}"),
        r => panic!("expected a deadlock error, got {r:?}"),
    }
}

#[test]
fn empty_kernel_and_vector_add_speed() {
    let m = load("vector_add");
    let k = m.kernel("vector_add").unwrap();
    let n = 1 << 20;
    let dev = Dev::new();
    let (a, b) = (floats(n, 13), floats(n, 14));
    let (da, db, dc) = (dev.alloc(&a), dev.alloc(&b), dev.zeros::<f32>(n));
    let params = pack(k, &[A::P(da), A::P(db), A::P(dc), A::U(n as u32)]);
    let t = std::time::Instant::now();
    launch(&m, k, &grid1(n, 256), &params, &[], &dev).unwrap();
    let vadd = t.elapsed();
    let c: Vec<f32> = dev.read(dc, n);
    assert!((0..n).all(|i| c[i] == a[i] + b[i]));

    let e = inline("ret;");
    let ek = e.kernel("k").unwrap();
    let one = cfg([1, 1, 1], [1, 1, 1]);
    let p = pack(ek, &[A::P(0)]);
    let reps = 100_000;
    let t = std::time::Instant::now();
    for _ in 0..reps {
        launch(&e, ek, &one, &p, &[], &dev).unwrap();
    }
    let empty = t.elapsed() / reps;
    println!("vector_add 1M floats: {vadd:?}; empty kernel launch: {empty:?}");
    if !cfg!(debug_assertions) {
        assert!(vadd.as_secs_f64() < 1.0, "vector_add 1M took {vadd:?}");
        assert!(empty.as_secs_f64() < 2e-6, "empty launch took {empty:?}");
    }
}

//! `#[derive(DeviceCopy)]` (the `derive` feature, issue 29 item 5): a derived struct
//! is a kernel parameter and a buffer element like a hand-written one; what it refuses
//! is in `compile-fail/memory/cf33_*`.

mod common;

use common::on_device0;
use oxicuda_driver::launch::{In, Out};
use oxicuda_driver::memory::DeviceCopy;
use oxicuda_driver::module::JitOptions;
use oxicuda_driver::sys::CUstream_flags;

const SLICES: &str = include_str!("../kernels/slices.ptx");

/// kernels/slices.cu's `struct Affine { float scale; float offset; }`.
#[derive(Clone, Copy, Debug, PartialEq, DeviceCopy)]
#[repr(C)]
struct Affine {
    scale: f32,
    offset: f32,
}

/// Padding, arrays, nesting and generics.
#[derive(Clone, Copy, Debug, PartialEq, DeviceCopy)]
#[repr(C)]
struct Particle<T: DeviceCopy> {
    kind: u8,
    position: [T; 3],
    affine: Affine,
}

#[derive(Clone, Copy, Debug, PartialEq, DeviceCopy)]
#[repr(transparent)]
struct Meters(f64);

fn is_device_copy<T: DeviceCopy>() {}

#[test]
fn a_derived_struct_is_a_kernel_parameter() {
    is_device_copy::<Particle<f32>>();
    is_device_copy::<Meters>();
    on_device0(|cur| {
        let module = cur.load_ptx(SLICES, &JitOptions::default())?;
        // SAFETY: kernels/slices.cu: affine reads x and writes y, each below its length;
        // `Affine` has the C struct's layout (the lookup checks its size).
        let affine = unsafe { module.function::<(Affine, In<f32>, Out<f32>)>("affine")? };
        let stream = cur.create_stream(CUstream_flags::CU_STREAM_NON_BLOCKING)?;
        let x = cur.alloc_from(&[1.0f32, 2.0, 3.0, 4.0])?;
        let mut y = cur.alloc_zeros::<f32>(4)?;
        let p = Affine {
            scale: 2.0,
            offset: 0.5,
        };
        affine.launch(&stream, 1, 4, 0, (p, &x, &mut y))?;
        assert_eq!(y.to_vec()?, [2.5, 4.5, 6.5, 8.5]);
        Ok(())
    });
}

#[test]
fn a_derived_struct_is_a_buffer_element() {
    on_device0(|cur| {
        let p = Particle {
            kind: 3,
            position: [1.0f64, 2.0, 3.0],
            affine: Affine {
                scale: 1.0,
                offset: -1.0,
            },
        };
        let buf = cur.alloc_from(&[p, p])?;
        assert_eq!(buf.to_vec()?, [p, p]);
        let m = cur.alloc_box(Meters(4.5))?;
        assert_eq!(m.get()?, Meters(4.5));
        Ok(())
    });
}

/// A generic parameter that is itself a field: its bound is written twice (inline and
/// by the derive), which clippy must not flag in the user's code.
#[derive(Clone, Copy, Debug, PartialEq, DeviceCopy)]
#[repr(transparent)]
struct Wrap<T: DeviceCopy>(T);

#[test]
fn a_generic_wrapper_derives() {
    is_device_copy::<Wrap<u16>>();
}

//! Inter-process communication through the safe layer, with two processes: this
//! test binary runs itself again as the child (`OXICUDA_IPC_CHILD`). On softcuda (or
//! with `--features gpu-tests` the driver the environment names) the parent exports a
//! buffer and an interprocess event it records after slow work; the child opens
//! both, waits for the event in stream order, sees the parent's data, runs a kernel
//! that writes the parent's buffer, and closes; the parent sees what the child wrote.
//! Bad handles and a second opening are typed errors. No live object is left behind.
#![cfg(target_os = "linux")]

mod common;

use common::on_device0;

use oxicuda_driver::CudaError;
use oxicuda_driver::event::Interprocess;
use oxicuda_driver::ipc::{IpcEventHandle, IpcMemHandle, PoolPointer};
use oxicuda_driver::launch::{In, Out};
use oxicuda_driver::module::JitOptions;
use oxicuda_driver::sys::CUstream_flags;
use std::process::Command;
use std::time::Duration;

const SLICES: &str = include_str!("../kernels/slices.ptx");
const N: usize = 4096;
const CHILD: &str = "OXICUDA_IPC_CHILD";

fn hex(bytes: &[u8; 64]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn unhex(s: &str) -> [u8; 64] {
    let mut out = [0u8; 64];
    for (i, o) in out.iter_mut().enumerate() {
        *o = u8::from_str_radix(&s[2 * i..2 * i + 2], 16).unwrap();
    }
    out
}

/// The child's side: open the parent's buffer and event, wait for the event, check
/// the parent's data, and add `2·1` to every element with a kernel.
fn child(mem: IpcMemHandle, event: IpcEventHandle) {
    on_device0(|cur| -> Result<(), CudaError> {
        let module = cur.load_ptx(SLICES, &JitOptions::default())?;
        // SAFETY: kernels/slices.cu's saxpy reads `x` and writes `y`, each only below
        // the length passed with it.
        let saxpy = unsafe { module.function::<(f32, In<f32>, Out<f32>)>("saxpy")? };
        let stream = cur.create_stream(CUstream_flags::CU_STREAM_NON_BLOCKING)?;
        // SAFETY: the parent keeps the buffer until this process has exited.
        let mut theirs = unsafe { cur.open_ipc_memory(&mem)? };
        assert!(theirs.size() >= N * 4, "{} bytes", theirs.size());
        // SAFETY: as above; a second opening of the same allocation is refused.
        match unsafe { cur.open_ipc_memory(&mem) } {
            Err(CudaError::AlreadyMapped { start, .. }) => {
                assert_eq!(start as u64, theirs.device_ptr())
            }
            other => panic!("expected AlreadyMapped, got {other:?}"),
        }
        // Nor in another context of this process, on another thread: the handle is
        // open here already.
        let driver = cur.driver();
        let again = std::thread::spawn(move || {
            let other = oxicuda_driver::Context::new(
                &driver.device(0).unwrap(),
                oxicuda_driver::sys::CUctx_flags::empty(),
            )
            .unwrap();
            other
                .bind(|inner| {
                    // SAFETY: as above; refused before the driver is called.
                    unsafe { inner.open_ipc_memory(&mem) }.map(|m| m.size())
                })
                .unwrap()
        })
        .join()
        .unwrap();
        assert!(
            matches!(again, Err(CudaError::AlreadyMapped { .. })),
            "{again:?}"
        );
        // SAFETY: the parent keeps its event until this process has exited.
        let ready = unsafe { cur.open_ipc_event(&event)? };
        // The parent fills its buffer with 7 after a delay, then records the event:
        // waiting for it in stream order is what makes the copy see the 7s.
        stream.wait(&ready)?;
        let mut seen = cur.alloc::<f32>(N)?;
        stream.copy(&mut seen, &theirs.slice::<f32>(..N)?)?;
        let got = seen.to_vec()?;
        assert!(
            got.iter().all(|&v| v == 7.0),
            "the child saw {:?}",
            &got[..4]
        );
        let ones = cur.alloc_from(&vec![1.0f32; N])?;
        saxpy.launch(
            &stream,
            (N as u32).div_ceil(256),
            256,
            0,
            (2.0f32, &ones, &mut theirs.slice_mut::<f32>(..N)?),
        )?;
        stream.synchronize()?;
        println!("ipc child: saw 7 after the event, wrote 9");
        Ok(())
    });
}

#[test]
fn two_processes_share_a_buffer_and_an_event() {
    if let Ok(handles) = std::env::var(CHILD) {
        let (mem, event) = handles.split_once(':').unwrap();
        child(
            IpcMemHandle::from_bytes(unhex(mem)),
            IpcEventHandle::from_bytes(unhex(event)),
        );
        return;
    }
    on_device0(|cur| -> Result<(), CudaError> {
        let stream = cur.create_stream(CUstream_flags::CU_STREAM_NON_BLOCKING)?;
        let mut buf = cur.alloc_from(&vec![1.0f32; N])?;
        let ready = cur.create_event::<Interprocess>()?;
        let (mem, event) = (buf.ipc_handle()?, ready.ipc_handle()?);
        assert_eq!(IpcMemHandle::from_bytes(mem.to_bytes()), mem);
        // Slow work, then the data, then the event.
        stream.launch_host_fn(|| std::thread::sleep(Duration::from_millis(700)))?;
        stream.fill(&mut buf, 7.0f32)?;
        ready.record(&stream)?;
        let out = Command::new(std::env::current_exe().unwrap())
            .args([
                "two_processes_share_a_buffer_and_an_event",
                "--exact",
                "--nocapture",
                "--test-threads=1",
            ])
            .env(
                CHILD,
                format!("{}:{}", hex(&mem.to_bytes()), hex(&event.to_bytes())),
            )
            .output()
            .unwrap();
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(out.status.success(), "the child failed:\n{text}");
        assert!(
            text.contains("ipc child: saw 7 after the event, wrote 9"),
            "{text}"
        );
        let got = buf.to_vec()?;
        assert!(
            got.iter().all(|&v| v == 9.0),
            "the parent sees {:?}",
            &got[..4]
        );
        Ok(())
    });
}

#[test]
fn bad_handles_are_typed_errors() {
    on_device0(|cur| -> Result<(), CudaError> {
        let empty = cur.alloc::<f32>(0)?;
        assert!(matches!(
            empty.ipc_handle(),
            Err(CudaError::InvalidArgument {
                parameter: "self",
                ..
            })
        ));
        // SAFETY: refused by the driver: no allocation has this handle.
        let forged = unsafe { cur.open_ipc_memory(&IpcMemHandle::from_bytes([0xa5; 64])) };
        assert!(matches!(forged, Err(CudaError::Driver(_))), "{forged:?}");
        // SAFETY: refused by the driver: no event has this handle.
        let forged = unsafe { cur.open_ipc_event(&IpcEventHandle::from_bytes([0x5a; 64])) };
        assert!(matches!(forged, Err(CudaError::Driver(_))), "{forged:?}");
        Ok(())
    });
}

const POOL_CHILD: &str = "OXICUDA_IPC_POOL_CHILD";

unsafe extern "C" {
    fn fcntl(fd: i32, cmd: i32, ...) -> i32;
}

/// The child's side of a pool: import the pool from the inherited descriptor and the
/// allocation from its export data, check it, and add `2·1` with a kernel.
fn pool_child(fd: i32, pointer: PoolPointer) {
    on_device0(|cur| -> Result<(), CudaError> {
        let module = cur.load_ptx(SLICES, &JitOptions::default())?;
        // SAFETY: kernels/slices.cu's saxpy reads `x` and writes `y`, each only below
        // the length passed with it.
        let saxpy = unsafe { module.function::<(f32, In<f32>, Out<f32>)>("saxpy")? };
        let stream = cur.create_stream(CUstream_flags::CU_STREAM_NON_BLOCKING)?;
        // SAFETY: the descriptor was inherited from the parent and stays open here.
        let fd = unsafe { std::os::fd::BorrowedFd::borrow_raw(fd) };
        // SAFETY: the parent keeps its pool and allocation until this process exits.
        let pool = unsafe { cur.import_memory_pool(fd)? };
        // SAFETY: as above.
        let mut theirs = unsafe { pool.import::<f32>(&pointer, N)? };
        // SAFETY: as above; refused while the first import lives.
        match unsafe { pool.import::<f32>(&pointer, N) } {
            Err(CudaError::AlreadyMapped { start, .. }) => {
                assert_eq!(start as u64, theirs.device_ptr())
            }
            other => panic!("expected AlreadyMapped, got {other:?}"),
        }
        assert!(theirs.to_vec()?.iter().all(|&v| v == 3.0));
        let ones = cur.alloc_from(&vec![1.0f32; N])?;
        saxpy.launch(
            &stream,
            (N as u32).div_ceil(256),
            256,
            0,
            (2.0f32, &ones, &mut theirs),
        )?;
        stream.synchronize()?;
        println!("pool child: saw 3, wrote 5");
        Ok(())
    });
}

#[test]
fn two_processes_share_a_memory_pool() {
    if let Ok(args) = std::env::var(POOL_CHILD) {
        let (fd, pointer) = args.split_once(':').unwrap();
        pool_child(fd.parse().unwrap(), PoolPointer::from_bytes(unhex(pointer)));
        return;
    }
    on_device0(|cur| -> Result<(), CudaError> {
        let stream = cur.create_stream(CUstream_flags::CU_STREAM_NON_BLOCKING)?;
        let plain = cur.create_memory_pool(None)?;
        assert!(!plain.is_shareable());
        assert!(matches!(
            plain.export_fd(),
            Err(CudaError::InvalidArgument {
                parameter: "self",
                ..
            })
        ));
        let pool = cur.create_shareable_memory_pool(None)?;
        assert!(pool.is_shareable());
        let mut buf = stream.alloc_from_pool::<f32>(&pool, N)?;
        stream.fill(&mut buf, 3.0f32)?;
        stream.synchronize()?;
        let fd = pool.export_fd()?;
        let pointer = buf.pool_pointer()?;
        use std::os::fd::AsRawFd;
        // SAFETY: F_SETFD (2) with no flags on a descriptor this test owns: the child
        // inherits it.
        assert_eq!(unsafe { fcntl(fd.as_raw_fd(), 2, 0) }, 0);
        let out = Command::new(std::env::current_exe().unwrap())
            .args([
                "two_processes_share_a_memory_pool",
                "--exact",
                "--nocapture",
                "--test-threads=1",
            ])
            .env(
                POOL_CHILD,
                format!("{}:{}", fd.as_raw_fd(), hex(&pointer.to_bytes())),
            )
            .output()
            .unwrap();
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(out.status.success(), "the child failed:\n{text}");
        assert!(text.contains("pool child: saw 3, wrote 5"), "{text}");
        let got = buf.to_vec()?;
        assert!(
            got.iter().all(|&v| v == 5.0),
            "the parent sees {:?}",
            &got[..4]
        );
        Ok(())
    });
}

//! The two-process harness of the IPC suites (`ipc.rs`, `pool_ipc.rs`): the test
//! binary re-runs itself (`--exact <test>`) as a child whose part the environment
//! variable the suite names says; handles travel in hex; the child prints [`DONE`]
//! last when all went well and gives up after a minute. Also the kernel both suites
//! launch on shared memory.
#![allow(dead_code)]

use std::io::BufRead;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// What a child prints last when all went well.
pub const DONE: &str = "CHILD OK";

/// Adds 1 to word `i` of `buf` for `i < n`.
pub const INC: &str = concat!(
    ".version 8.0\n.target sm_80\n.address_size 64\n",
    ".visible .entry inc(.param .u64 inc_buf, .param .u32 inc_n)\n{\n",
    ".reg .pred %p<2>;\n.reg .b32 %r<7>;\n.reg .b64 %rd<4>;\n",
    "ld.param.u64 %rd1, [inc_buf];\nld.param.u32 %r1, [inc_n];\n",
    "mov.u32 %r2, %ctaid.x;\nmov.u32 %r3, %ntid.x;\nmov.u32 %r4, %tid.x;\n",
    "mad.lo.s32 %r2, %r2, %r3, %r4;\nsetp.ge.u32 %p1, %r2, %r1;\n@%p1 bra $DONE;\n",
    "mul.wide.u32 %rd2, %r2, 4;\nadd.s64 %rd3, %rd1, %rd2;\n",
    "ld.global.u32 %r5, [%rd3];\nadd.s32 %r6, %r5, 1;\nst.global.u32 [%rd3], %r6;\n",
    "$DONE:\nret;\n}\n\0"
);

/// The child's part (the value of `var`), if this process is a child; a child gives
/// up (exit status 3) after a minute, so that a parent never waits forever.
pub fn role(var: &str) -> Option<String> {
    let r = std::env::var(var).ok()?;
    std::thread::spawn(|| {
        std::thread::sleep(Duration::from_secs(60));
        eprintln!("the child timed out");
        std::process::exit(3);
    });
    Some(r)
}

pub fn hex(b: &[u8; 64]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

pub fn unhex(s: &str) -> [u8; 64] {
    let mut b = [0u8; 64];
    for (i, x) in b.iter_mut().enumerate() {
        *x = u8::from_str_radix(&s[2 * i..2 * i + 2], 16).unwrap();
    }
    b
}

/// Re-runs test `test` as a child with `role_var` = `role` and `vars`; its standard
/// input and output piped.
pub fn spawn(test: &str, role_var: &str, role: &str, vars: &[(&str, String)]) -> Child {
    let mut c = Command::new(std::env::current_exe().unwrap());
    c.args(["--exact", test, "--nocapture", "--test-threads=1"])
        .env(role_var, role)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped());
    for (k, v) in vars {
        c.env(k, v);
    }
    c.spawn().unwrap()
}

/// Waits for `child`; asserts that it succeeded and reported [`DONE`]; its output.
#[track_caller]
pub fn finish(child: Child) -> String {
    let o = child.wait_with_output().unwrap();
    let text = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(o.status.success(), "the child failed: {text}");
    assert!(reported(&text), "no report: {text}");
    text
}

/// Reads the child's output up to a line ending in `want` (the test harness may
/// have begun the line with the test's name); panics at its end.
pub fn expect_line(out: &mut impl BufRead, want: &str) {
    let mut seen = String::new();
    loop {
        let mut l = String::new();
        assert_ne!(out.read_line(&mut l).unwrap(), 0, "no {want:?} in {seen}");
        if l.trim_end().ends_with(want) {
            return;
        }
        seen.push_str(&l);
    }
}

/// Whether the child's output `text` has a line ending in [`DONE`].
pub fn reported(text: &str) -> bool {
    text.lines().any(|l| l.ends_with(DONE))
}

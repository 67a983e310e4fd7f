//! The sanitizer's report: compute-sanitizer's text conventions (every line
//! prefixed `========= `, a finding as one block, `========= ERROR SUMMARY: N errors`
//! at the end), where it goes (standard error, or `SOFTCUDA_SANITIZE_LOG`), the cap
//! on repeated reports of one kind at one site, and the error count.
//!
//! Every finding counts in the summary; only the first [`CAP`] of one kind at one
//! site (kernel and instruction, or host call) are printed, and the summary says
//! how many more there were. A copy of what is printed is kept for
//! [`take_report`] (tests read the report there), up to [`KEEP`] bytes.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::Write;
use std::sync::{Mutex, MutexGuard, Once, PoisonError};

/// Reports printed per kind and site; later ones are only counted.
pub const CAP: u64 = 3;
/// Most bytes of report text kept for [`take_report`].
pub const KEEP: usize = 1 << 20;
/// The prefix of every line.
pub const PREFIX: &str = "========= ";

#[derive(Default)]
struct Sink {
    log: Option<File>,
    kept: String,
    errors: u64,
    /// (finding's first line, site) → how many.
    sites: BTreeMap<(String, String), u64>,
}

static SINK: Mutex<Option<Sink>> = Mutex::new(None);

fn sink() -> MutexGuard<'static, Option<Sink>> {
    SINK.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Sink {
    /// Prints `lines`, each prefixed.
    fn emit(&mut self, lines: &[String]) {
        let mut text = String::new();
        for l in lines {
            text.push_str(PREFIX);
            text.push_str(l);
            text.push('\n');
        }
        // A report that cannot be written must not fail the program it checks.
        match &mut self.log {
            Some(f) => {
                let _ = f.write_all(text.as_bytes()).and_then(|()| f.flush());
            }
            None => {
                let _ = std::io::stderr().lock().write_all(text.as_bytes());
            }
        }
        if self.kept.len() + text.len() <= KEEP {
            self.kept.push_str(&text);
        }
    }
}

/// Sends the report to the file at `path` (created if need be, and appended to:
/// two copies of softcuda in one process, the rlib and `libsoftcuda.so`, can share
/// it; `%p` in it stands for the process id, as in compute-sanitizer's
/// `--log-file`), or back to standard error (`None`).
pub fn set_log(path: Option<&str>) -> std::io::Result<()> {
    let log = path
        .map(|p| {
            std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(p.replace("%p", &std::process::id().to_string()))
        })
        .transpose()?;
    sink().get_or_insert_with(Sink::default).log = log;
    Ok(())
}

/// Reports one finding: `lines` (the first names its kind, as compute-sanitizer's
/// do), at `site`. Counted always, printed for the first [`CAP`] at that site.
pub fn finding(site: &str, lines: &[String]) {
    let mut g = sink();
    let s = g.get_or_insert_with(Sink::default);
    s.errors += 1;
    let head = lines.first().cloned().unwrap_or_default();
    let n = s.sites.entry((head, site.to_owned())).or_insert(0);
    *n += 1;
    if *n <= CAP {
        s.emit(lines);
    }
}

/// A line that is not a finding (a bad `SOFTCUDA_SANITIZE`, a tool not there yet).
pub fn warn(msg: &str) {
    sink()
        .get_or_insert_with(Sink::default)
        .emit(&[format!("Warning: {msg}")]);
}

/// A line of the report that is not a finding (a `LEAK SUMMARY`).
pub fn note(line: &str) {
    sink()
        .get_or_insert_with(Sink::default)
        .emit(&[line.to_owned()]);
}

/// Prints the repeats not shown and `ERROR SUMMARY: N errors`, and starts counting
/// afresh; returns N.
pub fn summary() -> u64 {
    summarize(&mut sink())
}

fn summarize(g: &mut Option<Sink>) -> u64 {
    let s = g.get_or_insert_with(Sink::default);
    let mut lines = Vec::new();
    for ((head, site), n) in std::mem::take(&mut s.sites) {
        if n > CAP {
            lines.push(format!(
                "{} more reports of \"{head}\" at {site} not shown",
                n - CAP
            ));
        }
    }
    let n = std::mem::take(&mut s.errors);
    lines.push(format!(
        "ERROR SUMMARY: {n} error{}",
        if n == 1 { "" } else { "s" }
    ));
    s.emit(&lines);
    n
}

/// What was printed since the last call (at most [`KEEP`] bytes), and forgets it.
pub fn take_report() -> String {
    std::mem::take(&mut sink().get_or_insert_with(Sink::default).kept)
}

unsafe extern "C" {
    fn atexit(f: extern "C" fn()) -> core::ffi::c_int;
}

/// At process exit: the summary, if the sanitizer was ever on.
extern "C" fn at_exit() {
    // Another thread may hold the lock as the process ends: then no summary
    // rather than a hang.
    let mut g = match SINK.try_lock() {
        Ok(g) => g,
        Err(std::sync::TryLockError::Poisoned(p)) => p.into_inner(),
        Err(std::sync::TryLockError::WouldBlock) => return,
    };
    summarize(&mut g);
}

/// Makes the process print the summary when it exits (once, however often called).
pub fn arm_exit_summary() {
    static ARMED: Once = Once::new();
    ARMED.call_once(|| {
        // SAFETY: `at_exit` is an `extern "C" fn()` that never unwinds (it returns
        // early rather than block, and writes ignore their errors), as `atexit`
        // requires.
        unsafe { atexit(at_exit) };
    });
}

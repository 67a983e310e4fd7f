//! The JIT's log, parsed: structured diagnostics ([`JitLog`], [`JitDiagnostic`],
//! [`Severity`]) read from ptxas- and nvlink-style text. Below the error type, which
//! carries a log in [`CudaError::JitFailed`](crate::CudaError::JitFailed); public as
//! `oxicuda_driver::jit::*` (and `oxicuda_driver::module::*`).

/// How bad a diagnostic is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Severity {
    /// `ptxas info`.
    Info,
    /// `ptxas warning`.
    Warning,
    /// `ptxas error`.
    Error,
    /// `ptxas fatal`.
    Fatal,
}

/// One line of the JIT's log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JitDiagnostic {
    /// How bad.
    pub severity: Severity,
    /// The input it names (`application ptx input`), if any.
    pub file: Option<String>,
    /// The line of the input, if any.
    pub line: Option<u32>,
    /// What it says.
    pub message: String,
}

/// The JIT's log, parsed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct JitLog {
    /// Every diagnostic, in order. Lines that continue the previous one are appended
    /// to its message.
    pub diagnostics: Vec<JitDiagnostic>,
}

impl JitLog {
    /// Parses ptxas-style text: `ptxas <file>, line <n>; <severity> : <message>`,
    /// `ptxas <severity> : <message>`, and indented continuation lines; the linker's
    /// `nvlink <severity> : <message>` lines alike.
    pub fn parse(text: &str) -> JitLog {
        let mut diagnostics: Vec<JitDiagnostic> = Vec::new();
        for raw in text.lines() {
            let line = raw.trim_end();
            if line.trim().is_empty() {
                continue;
            }
            let Some(rest) = line
                .strip_prefix("ptxas")
                .or_else(|| line.strip_prefix("nvlink"))
            else {
                match diagnostics.last_mut() {
                    Some(d) => {
                        d.message.push('\n');
                        d.message.push_str(line.trim());
                    }
                    None => diagnostics.push(JitDiagnostic {
                        severity: Severity::Info,
                        file: None,
                        line: None,
                        message: line.trim().to_owned(),
                    }),
                }
                continue;
            };
            let (location, rest) = match rest.split_once(';') {
                Some((loc, r)) if loc.contains(", line ") => (Some(loc.trim()), r),
                _ => (None, rest),
            };
            let (file, line_no) = match location.and_then(|l| l.rsplit_once(", line ")) {
                Some((f, n)) => (Some(f.trim().to_owned()), n.trim().parse().ok()),
                None => (None, None),
            };
            let (sev, message) = rest.split_once(':').unwrap_or(("info", rest));
            let severity = match sev.trim() {
                "error" => Severity::Error,
                "warning" => Severity::Warning,
                "fatal" => Severity::Fatal,
                _ => Severity::Info,
            };
            diagnostics.push(JitDiagnostic {
                severity,
                file,
                line: line_no,
                message: message.trim().to_owned(),
            });
        }
        JitLog { diagnostics }
    }

    /// The errors (and fatal lines).
    pub fn errors(&self) -> impl Iterator<Item = &JitDiagnostic> {
        self.diagnostics
            .iter()
            .filter(|d| d.severity >= Severity::Error)
    }
}

impl core::fmt::Display for JitLog {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        for d in &self.diagnostics {
            let sev = match d.severity {
                Severity::Info => "info",
                Severity::Warning => "warning",
                Severity::Error => "error",
                Severity::Fatal => "fatal",
            };
            match d.line {
                Some(n) => writeln!(f, "  {sev}: line {n}: {}", d.message)?,
                None => writeln!(f, "  {sev}: {}", d.message)?,
            }
        }
        Ok(())
    }
}

static_assertions::assert_impl_all!(JitLog: Send, Sync);
static_assertions::assert_impl_all!(JitDiagnostic: Send, Sync);
static_assertions::assert_impl_all!(Severity: Send, Sync, Copy);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ptxas_logs_parse_into_diagnostics() {
        let log = JitLog::parse(
            "ptxas application ptx input, line 6; error   : Unknown instruction 'frob'\n\
             ptxas fatal   : Ptx assembly aborted due to errors\n",
        );
        assert_eq!(log.diagnostics.len(), 2);
        let d = &log.diagnostics[0];
        assert_eq!(
            (d.severity, d.line, d.file.as_deref()),
            (Severity::Error, Some(6), Some("application ptx input"))
        );
        assert_eq!(d.message, "Unknown instruction 'frob'");
        assert_eq!(log.diagnostics[1].severity, Severity::Fatal);
        assert_eq!(log.errors().count(), 2);
        let info = JitLog::parse(
            "ptxas info    : Function properties for k\n    0 bytes stack frame\nptxas info    : Used 8 registers\n",
        );
        assert_eq!(info.diagnostics.len(), 2);
        assert!(info.diagnostics[0].message.ends_with("0 bytes stack frame"));
        assert!(
            log.to_string()
                .contains("error: line 6: Unknown instruction 'frob'")
        );
    }
}

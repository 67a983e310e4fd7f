//! The JIT compiler's side of loading a module: the typed options it is given
//! ([`JitOptions`]) and the call that hands them to the driver. Its log, parsed into
//! structured diagnostics ([`JitLog`], [`JitDiagnostic`], [`Severity`]), is defined in
//! a room below the error type that carries it and re-exported here. Also reachable
//! as `oxicuda_driver::module::*`.

pub use crate::jit_log::{JitDiagnostic, JitLog, Severity};

/// Typed JIT options.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct JitOptions {
    /// `CU_JIT_MAX_REGISTERS`.
    pub max_registers: Option<u32>,
    /// `CU_JIT_OPTIMIZATION_LEVEL`, 0–4 (another value is
    /// [`CudaError::InvalidArgument`](crate::CudaError::InvalidArgument) before any
    /// driver call).
    pub optimization_level: Option<u32>,
    /// `CU_JIT_TARGET`, a `CUjit_target` value: `10 * major + minor` (e.g. 90), from 30
    /// up, optionally plus `CU_COMPUTE_ACCELERATED_TARGET_BASE` (`sm_90a`) or
    /// `CU_COMPUTE_FAMILY_TARGET_BASE` (`sm_100f`); the context's device if `None`.
    /// Another value is [`CudaError::InvalidArgument`](crate::CudaError::InvalidArgument)
    /// before any driver call (the driver decides which targets it knows).
    pub target: Option<u32>,
    /// `CU_JIT_GENERATE_DEBUG_INFO`.
    pub debug_info: bool,
    /// `CU_JIT_GENERATE_LINE_INFO`.
    pub line_info: bool,
    /// `CU_JIT_LOG_VERBOSE`: fill the info log (registers used, ...).
    pub verbose: bool,
}

impl JitOptions {
    /// Refuses values no driver accepts, before any driver call: an optimization level
    /// above 4, a target that is not of the form of a `CUjit_target`.
    fn check(&self) -> Result<(), crate::CudaError> {
        if self.optimization_level.is_some_and(|o| o > 4) {
            return Err(crate::CudaError::InvalidArgument {
                parameter: "JitOptions::optimization_level",
                rule: "the JIT's optimization level is 0 to 4",
            });
        }
        let target_ok = |t: u32| {
            let (base, variant) = (t & 0xFFFF, t >> 16);
            // 10 * major + minor from sm_30; plain, `a` (1) or `f` (2) variants.
            (30..1000).contains(&base) && variant <= 2
        };
        if self.target.is_some_and(|t| !target_ok(t)) {
            return Err(crate::CudaError::InvalidArgument {
                parameter: "JitOptions::target",
                rule: "a CUjit_target is 10 * major + minor (30 up to 999), plain or plus \
                       CU_COMPUTE_ACCELERATED_TARGET_BASE or CU_COMPUTE_FAMILY_TARGET_BASE",
            });
        }
        Ok(())
    }
}

/// Bytes of each log buffer handed to the JIT.
const LOG_BYTES: usize = 16 * 1024;

/// The option arrays of one JIT call (a module load, a link, a library load): the
/// typed options plus the info and error log buffers. The arrays and buffers are
/// heap memory owned here, at fixed addresses while this value lives — which a
/// link needs, as the driver writes the log sizes back until `cuLinkDestroy` (and a
/// library, whose lazy loading may compile at first use, until `cuLibraryUnload`).
pub(crate) struct JitCall {
    info: Vec<core::ffi::c_char>,
    error: Vec<core::ffi::c_char>,
    keys: Vec<crate::sys::CUjit_option>,
    values: Vec<*mut core::ffi::c_void>,
}

impl JitCall {
    /// The arrays for `options`, with empty logs; options no driver accepts are
    /// [`CudaError::InvalidArgument`](crate::CudaError::InvalidArgument).
    pub(crate) fn new(options: &JitOptions) -> Result<JitCall, crate::CudaError> {
        use crate::sys::CUjit_option as O;
        options.check()?;
        let mut call = JitCall {
            info: vec![0; LOG_BYTES],
            error: vec![0; LOG_BYTES],
            keys: Vec::with_capacity(10),
            values: Vec::with_capacity(10),
        };
        let (info, error) = (
            call.info.as_mut_ptr() as usize,
            call.error.as_mut_ptr() as usize,
        );
        let mut push = |k: O, v: usize| {
            call.keys.push(k);
            call.values.push(v as *mut core::ffi::c_void);
        };
        push(O::CU_JIT_INFO_LOG_BUFFER, info);
        push(O::CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES, LOG_BYTES);
        push(O::CU_JIT_ERROR_LOG_BUFFER, error);
        push(O::CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES, LOG_BYTES);
        if let Some(r) = options.max_registers {
            push(O::CU_JIT_MAX_REGISTERS, r as usize);
        }
        if let Some(o) = options.optimization_level {
            push(O::CU_JIT_OPTIMIZATION_LEVEL, o as usize);
        }
        if let Some(t) = options.target {
            push(O::CU_JIT_TARGET, t as usize);
        }
        if options.debug_info {
            push(O::CU_JIT_GENERATE_DEBUG_INFO, 1);
        }
        if options.line_info {
            push(O::CU_JIT_GENERATE_LINE_INFO, 1);
        }
        if options.verbose {
            push(O::CU_JIT_LOG_VERBOSE, 1);
        }
        Ok(call)
    }

    /// The number of options.
    pub(crate) fn len(&self) -> core::ffi::c_uint {
        self.keys.len() as core::ffi::c_uint
    }

    /// The option keys, for the driver.
    pub(crate) fn keys(&mut self) -> *mut crate::sys::CUjit_option {
        self.keys.as_mut_ptr()
    }

    /// The option values, for the driver (which writes the log sizes back).
    pub(crate) fn values(&mut self) -> *mut *mut core::ffi::c_void {
        self.values.as_mut_ptr()
    }

    /// Empties both logs and restores their sizes (which the driver overwrites with
    /// the bytes it wrote) before another call on the same options: a link's
    /// `cuLinkAddData` and `cuLinkComplete`. An old log is then not read as new.
    pub(crate) fn clear(&mut self) {
        use crate::sys::CUjit_option as O;
        for buf in [&mut self.info, &mut self.error] {
            if let Some(first) = buf.first_mut() {
                *first = 0;
            }
        }
        for (k, v) in self.keys.iter().zip(self.values.iter_mut()) {
            if *k == O::CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES
                || *k == O::CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES
            {
                *v = LOG_BYTES as *mut core::ffi::c_void;
            }
        }
    }

    fn read(buf: &[core::ffi::c_char]) -> String {
        let bytes: Vec<u8> = buf
            .iter()
            .take_while(|c| **c != 0)
            .map(|c| *c as u8)
            .collect();
        String::from_utf8_lossy(&bytes).into_owned()
    }

    /// The info log, parsed.
    pub(crate) fn info_log(&self) -> JitLog {
        JitLog::parse(&Self::read(&self.info))
    }

    /// The error for a failed call with result `r`: a refusal with diagnostics is the
    /// JIT's ([`CudaError::JitFailed`](crate::CudaError::JitFailed)); one without (no
    /// binary for this GPU, a bad handle, ...) is the driver's plain code.
    pub(crate) fn failure(&self, r: crate::sys::CUresult) -> crate::CudaError {
        let log = JitLog::parse(&Self::read(&self.error));
        if log.diagnostics.is_empty() {
            crate::error::driver_error(r)
        } else {
            crate::activity::note_failure(r);
            crate::CudaError::JitFailed { log, source: r }
        }
    }
}

static_assertions::assert_impl_all!(JitOptions: Send, Sync);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn options_out_of_range_are_refused_before_the_driver() {
        let with = |optimization_level, target| JitOptions {
            optimization_level,
            target,
            ..Default::default()
        };
        let refused = |o: JitOptions, parameter: &str| matches!(JitCall::new(&o), Err(crate::CudaError::InvalidArgument { parameter: p, .. }) if p == parameter);
        for level in [5, 99, u32::MAX] {
            assert!(refused(
                with(Some(level), None),
                "JitOptions::optimization_level"
            ));
        }
        for target in [0, 10, 29, 1000, 0x3_0000 + 90, u32::MAX] {
            assert!(refused(with(None, Some(target)), "JitOptions::target"));
        }
        for (level, target) in [(0, 30), (4, 90), (2, 0x1_0000 + 90), (3, 0x2_0000 + 100)] {
            let call = JitCall::new(&with(Some(level), Some(target))).unwrap();
            assert_eq!(call.len(), 6, "4 log options, the level and the target");
        }
    }
}

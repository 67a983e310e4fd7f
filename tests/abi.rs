//! ABI conformance against the real headers.
//!
//! A C program generated from the crate's declarations (its ABI manifest), compiled by
//! gcc as C11 against the wheel's `cuda.h`, prints the size, alignment and offset of
//! everything the crate declares and the value of every constant; each is compared
//! with what Rust computed. Every line of the driver table is compared, parameter by
//! parameter, with its `PFN_<name>_v<version>` typedef in `cudaTypedefs.h`.

mod common;

use oxicuda_driver::sys::manifest::{constants, structs, structs13, types, types13};
use oxicuda_driver::table::ENTRIES;
use std::collections::HashMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Compiles `src` as C11 against `include` and returns what it prints, by line.
fn run_c(name: &str, include: &Path, src: &str) -> Vec<String> {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("abi");
    std::fs::create_dir_all(&dir).unwrap();
    let c = dir.join(format!("{name}.c"));
    let exe = dir.join(name);
    std::fs::write(&c, src).unwrap();
    let out = Command::new("gcc")
        .args(["-std=c11", "-Wall", "-Werror", "-I"])
        .arg(include)
        .arg(&c)
        .arg("-o")
        .arg(&exe)
        .output()
        .expect("gcc runs");
    assert!(
        out.status.success(),
        "gcc failed on {}:\n{}",
        c.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    let run = Command::new(&exe).output().expect("the probe runs");
    assert!(run.status.success());
    String::from_utf8(run.stdout)
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect()
}

const PRELUDE: &str = "#include <cuda.h>\n#include <stddef.h>\n#include <stdint.h>\n#include <stdio.h>\n\nint main(void) {\n";

fn constants_program(header: u32) -> (String, HashMap<String, i128>) {
    let mut src = String::from(PRELUDE);
    let mut want = HashMap::new();
    for c in constants().into_iter().filter(|c| c.header == header) {
        writeln!(
            src,
            "    printf(\"{0} %lld\\n\", (long long)(intptr_t)({0}));",
            c.c_name
        )
        .unwrap();
        want.insert(c.c_name.to_owned(), c.value);
    }
    src.push_str("    return 0;\n}\n");
    (src, want)
}

fn compare_constants(lines: Vec<String>, want: HashMap<String, i128>) -> usize {
    let mut bad = Vec::new();
    for line in &lines {
        let (name, value) = line.split_once(' ').unwrap();
        let c: i128 = value.parse().unwrap();
        if want[name] != c {
            bad.push(format!("{name}: Rust {} C {c}", want[name]));
        }
    }
    assert!(bad.is_empty(), "constants differ:\n{}", bad.join("\n"));
    assert_eq!(lines.len(), want.len());
    lines.len()
}

#[test]
fn every_constant_has_the_headers_value() {
    let Some(inc) = common::cuda12_include() else {
        return;
    };
    let (src, want) = constants_program(12);
    let n = compare_constants(run_c("constants12", &inc, &src), want);
    assert!(n > 850, "only {n} constants checked");
}

/// What 13.x adds — its new result codes, the enums of its functions, the values it
/// adds to 12.9's enums — against the 13.x header.
#[test]
fn every_13x_constant_has_the_13x_headers_value() {
    let Some(inc) = common::cuda13_include() else {
        return;
    };
    let (src, want) = constants_program(13);
    let n = compare_constants(run_c("constants13", &inc, &src), want);
    assert!(n >= 150, "only {n} 13.x constants checked");
}

/// Compiles a program printing the size, alignment and offsets of `structs` and `types`
/// against `include`, compares with Rust's, and returns the lines printed.
fn check_layouts(
    name: &str,
    include: &Path,
    structs: Vec<oxicuda_driver::sys::manifest_support::StructLayout>,
    types: Vec<(&'static str, usize, usize)>,
) -> Vec<String> {
    let mut src = String::from(PRELUDE);
    let mut want = HashMap::new();
    for s in structs {
        let t = s.c_name;
        writeln!(
            src,
            "    printf(\"S|{t}|%zu|%zu\\n\", sizeof({t}), _Alignof({t}));"
        )
        .unwrap();
        want.insert(format!("S|{t}"), (s.size, s.align));
        for f in &s.fields {
            let p = f.c_path;
            writeln!(
                src,
                "    printf(\"F|{t}.{p}|%zu|%zu\\n\", offsetof({t}, {p}), sizeof((({t} *)0)->{p}));"
            )
            .unwrap();
            want.insert(format!("F|{t}.{p}"), (f.offset, f.size));
        }
    }
    for (name, size, align) in types {
        writeln!(
            src,
            "    printf(\"T|{name}|%zu|%zu\\n\", sizeof({name}), _Alignof({name}));"
        )
        .unwrap();
        want.insert(format!("T|{name}"), (size, align));
    }
    src.push_str("    return 0;\n}\n");
    let lines = run_c(name, include, &src);
    let mut bad = Vec::new();
    for line in &lines {
        let mut it = line.rsplitn(3, '|');
        let (b, a, key) = (it.next().unwrap(), it.next().unwrap(), it.next().unwrap());
        let c = (a.parse::<usize>().unwrap(), b.parse::<usize>().unwrap());
        if want[key] != c {
            bad.push(format!("{key}: Rust {:?} C {c:?}", want[key]));
        }
    }
    assert!(
        bad.is_empty(),
        "layouts differ (offset/size or size/align):\n{}",
        bad.join("\n")
    );
    assert_eq!(lines.len(), want.len());
    lines
}

#[test]
fn every_struct_and_field_has_the_headers_layout() {
    let Some(inc) = common::cuda12_include() else {
        return;
    };
    let lines = check_layouts("layouts", &inc, structs(), types());
    let n_structs = lines.iter().filter(|l| l.starts_with("S|")).count();
    assert!(
        n_structs >= 80 && lines.len() > 800,
        "{n_structs} structs, {} lines",
        lines.len()
    );
    // The one the design calls out: 128 bytes, aligned to 64 (in C11).
    assert!(lines.iter().any(|l| l == "S|struct CUtensorMap_st|128|64"));
}

/// What the 13.x functions add — new structs, and `sys::cuda13`'s 13.x layouts of the
/// types whose 12.9 layout differs — against the 13.x header.
#[test]
fn every_13x_struct_and_field_has_the_13x_headers_layout() {
    let Some(inc) = common::cuda13_include() else {
        return;
    };
    let lines = check_layouts("layouts13", &inc, structs13(), types13());
    let n_structs = lines.iter().filter(|l| l.starts_with("S|")).count();
    assert!(
        n_structs >= 25,
        "{n_structs} structs, {} lines",
        lines.len()
    );
    // 13.x aligns the tensor map to 128 (12.9: 64); `sys::cuda13::CUtensorMap` does too.
    assert!(lines.iter().any(|l| l == "S|struct CUtensorMap_st|128|128"));
    assert!(
        lines
            .iter()
            .any(|l| l == "S|struct CUgraphNodeParams_st|256|8")
    );
}

/// C parameter list → the Rust types the list must use for it, spaces removed.
fn c_params_as_rust(params: &str) -> Vec<String> {
    let params = params.trim();
    if params.is_empty() || params == "void" {
        return Vec::new();
    }
    params.split(',').map(c_param_as_rust).collect()
}

fn c_param_as_rust(param: &str) -> String {
    let spaced = param
        .replace('*', " * ")
        .replace('[', " [ ")
        .replace(']', " ] ");
    let mut tokens: Vec<&str> = spaced.split_whitespace().collect();
    // The last identifier before any `[` is the parameter's name.
    let arrays = tokens.iter().filter(|t| **t == "[").count();
    tokens.retain(|t| *t != "[" && *t != "]");
    let name_at = tokens
        .iter()
        .rposition(|t| t.chars().all(|c| c.is_alphanumeric() || c == '_') && *t != "const");
    if let Some(i) = name_at {
        let idents = tokens
            .iter()
            .filter(|t| !matches!(**t, "*" | "const"))
            .count();
        if idents > 1 {
            tokens.remove(i);
        }
    }
    let mut base_words = Vec::new();
    let mut stars = Vec::new(); // constness of each pointee, innermost first
    let mut pointee_const = false;
    for t in tokens {
        match t {
            "const" => pointee_const = true,
            "*" => {
                stars.push(pointee_const);
                pointee_const = false;
            }
            w => base_words.push(w),
        }
    }
    let base = match base_words.join(" ").as_str() {
        "void" => "c_void".to_owned(),
        "char" => "c_char".to_owned(),
        "int" => "c_int".to_owned(),
        "unsigned int" | "unsigned" => "c_uint".to_owned(),
        "unsigned char" => "c_uchar".to_owned(),
        "unsigned short" => "c_ushort".to_owned(),
        "short" => "c_short".to_owned(),
        "long long" => "c_longlong".to_owned(),
        "unsigned long long" => "c_ulonglong".to_owned(),
        "float" => "f32".to_owned(),
        "double" => "f64".to_owned(),
        "size_t" => "usize".to_owned(),
        other => other.to_owned(),
    };
    let mut ty = base;
    for _ in 0..arrays {
        stars.push(pointee_const);
        pointee_const = false;
    }
    for is_const in stars {
        ty = format!("{}{ty}", if is_const { "*const" } else { "*mut" });
    }
    ty
}

fn pfn_typedefs(inc: &Path) -> HashMap<String, Vec<String>> {
    let mut map = HashMap::new();
    for file in ["cudaTypedefs.h", "cudaProfilerTypedefs.h"] {
        let text = std::fs::read_to_string(inc.join(file)).unwrap();
        // The ABIs declared only `#if defined(__CUDA_API_VERSION_INTERNAL)` (NVIDIA's
        // own build: `cuMemAlloc_v2000`, ...) are not the header's as users compile it.
        let mut internal = false;
        for line in text.lines() {
            if line.starts_with("#if defined(__CUDA_API_VERSION_INTERNAL)") {
                internal = true;
            } else if internal && line.starts_with("#endif") {
                internal = false;
            }
            if internal {
                continue;
            }
            // `typedef CUresult (CUDAAPI *PFN_x_v1)(...);`, spaced either way.
            let squeezed: String = line.split_whitespace().collect::<Vec<_>>().join(" ");
            let squeezed = squeezed
                .replace("CUresult(", "CUresult (")
                .replace("( ", "(");
            let Some(rest) = squeezed.strip_prefix("typedef CUresult (CUDAAPI *PFN_") else {
                continue;
            };
            let (name, params) = rest.split_once(")(").unwrap();
            let params = params.trim_end().strip_suffix(");").unwrap();
            map.insert(name.to_owned(), c_params_as_rust(params));
        }
        // A few typedefs are spelled without their version (`PFN_cuModuleGetFunctionCount`)
        // and versioned by `#define PFN_x PFN_x_v12040`, as the compiler sees them too.
        for line in text.lines() {
            let mut words = line.split_whitespace();
            if let (Some("#define"), Some(short), Some(long)) =
                (words.next(), words.next(), words.next())
            {
                let (short, long) = (
                    short.trim_start_matches("PFN_"),
                    long.trim_start_matches("PFN_"),
                );
                if !map.contains_key(long)
                    && let Some(params) = map.get(short).cloned()
                {
                    map.insert(long.to_owned(), params);
                }
            }
        }
    }
    map
}

#[test]
fn c_parameters_translate_as_the_list_spells_them() {
    assert_eq!(
        c_params_as_rust("CUdeviceptr_v2 *dptr, size_t bytesize"),
        ["*mutCUdeviceptr_v2", "usize"]
    );
    assert_eq!(
        c_params_as_rust("const char *symbol, void **pfn"),
        ["*constc_char", "*mut*mutc_void"]
    );
    assert_eq!(c_params_as_rust("unsigned int flags"), ["c_uint"]);
    assert_eq!(c_params_as_rust("void"), Vec::<String>::new());
    assert_eq!(
        c_params_as_rust("const CUgraphNode *from, size_t n"),
        ["*constCUgraphNode", "usize"]
    );
}

#[test]
fn every_table_line_matches_its_pfn_typedef() {
    let Some(inc) = common::cuda12_include() else {
        return;
    };
    let typedefs = pfn_typedefs(&inc);
    // The lines 13.x adds are held to the 13.x header; their types whose layout
    // differs from 12.9's are `sys::cuda13`'s, spelled `cuda13::X` in the list.
    let typedefs13 = common::cuda13_include().map(|inc| pfn_typedefs(&inc));
    let mut bad = Vec::new();
    let mut checked13 = 0;
    for e in ENTRIES {
        let key = format!("{}_v{}", e.base_name(), e.version);
        let in12 = typedefs.get(&key);
        let c = match (in12, &typedefs13) {
            (Some(c), _) => c,
            (None, Some(t13)) => match t13.get(&key) {
                Some(c) => {
                    checked13 += 1;
                    c
                }
                None => {
                    bad.push(format!("{}: no PFN_{key} in either cudaTypedefs.h", e.name));
                    continue;
                }
            },
            (None, None) => continue, // a 13.x line, and no 13.x header here
        };
        if in12.is_some() && e.params.contains("cuda13") {
            bad.push(format!("{}: a 12.9 line uses a 13.x layout", e.name));
        }
        let rust: Vec<String> = if e.params.trim().is_empty() {
            Vec::new()
        } else {
            e.params
                .split(',')
                .map(|p| {
                    let ty: String = p.split_once(':').unwrap().1.split_whitespace().collect();
                    ty.replace("cuda13::", "")
                })
                .collect()
        };
        if c.len() != e.arity() || rust.len() != e.arity() {
            bad.push(format!(
                "{}: arity {} but PFN_{key} has {}",
                e.name,
                e.arity(),
                c.len()
            ));
        } else if &rust != c {
            bad.push(format!("{}: {rust:?} but PFN_{key} is {c:?}", e.name));
        }
    }
    assert!(
        bad.is_empty(),
        "{} lines differ from cudaTypedefs.h:\n{}",
        bad.len(),
        bad.join("\n")
    );
    if typedefs13.is_some() {
        assert!(checked13 >= 56, "only {checked13} 13.x lines checked");
    }
}

/// Functions of cudaTypedefs.h the list leaves out on purpose, and why (the README's
/// Coverage section says the same).
fn excluded(base: &str) -> Option<&'static str> {
    if base.starts_with("cuGraphics") {
        Some("graphics interop (GL/EGL/VDPAU/D3D resources)")
    } else if base == "cuProfilerInitialize" {
        Some("deprecated; cudaProfiler.h is not in the wheel")
    } else {
        None
    }
}

/// The list has a line for every function of the header at every ABI version it lists
/// (`PFN_<name>_v<version>`, the per-thread variants aside), but the excluded ones.
fn assert_covers(inc: &Path) -> usize {
    let lines: std::collections::HashSet<String> = ENTRIES
        .iter()
        .map(|e| format!("{}_v{}", e.base_name(), e.version))
        .collect();
    let mut missing = Vec::new();
    let mut functions = std::collections::BTreeSet::new();
    for key in pfn_typedefs(inc).into_keys() {
        let Some((base, ver)) = key.rsplit_once("_v") else {
            continue;
        };
        if ver.parse::<u32>().is_err() || excluded(base).is_some() {
            continue; // `_ptsz`/`_ptds` variants share their line's ABI
        }
        functions.insert(base.to_owned());
        if !lines.contains(&key) {
            missing.push(key);
        }
    }
    missing.sort();
    assert!(missing.is_empty(), "not in the list: {missing:?}");
    functions.len()
}

#[test]
fn the_list_covers_every_function_of_12_9() {
    let Some(inc) = common::cuda12_include() else {
        return;
    };
    assert_eq!(assert_covers(&inc), 432);
}

#[test]
fn the_list_covers_every_function_of_13_5() {
    let Some(inc) = common::cuda13_include() else {
        return;
    };
    assert_eq!(assert_covers(&inc), 479);
}

/// softcuda declares its own C types (it depends on nothing of ours); they must agree
/// with the crate's, which the tests above hold to cuda.h.
#[test]
fn softcudas_own_c_types_agree_with_the_header() {
    use oxicuda_driver::sys;
    use softcuda::types as sc;
    use std::mem::{align_of, offset_of, size_of};
    macro_rules! same_layout {
        ($ours:ty, $theirs:ty, [$($f:ident),*]) => {
            assert_eq!(size_of::<$ours>(), size_of::<$theirs>(), stringify!($theirs));
            assert_eq!(align_of::<$ours>(), align_of::<$theirs>(), stringify!($theirs));
            $(assert_eq!(offset_of!($ours, $f), offset_of!($theirs, $f), concat!(stringify!($theirs), ".", stringify!($f)));)*
        };
    }
    same_layout!(
        sys::CUDA_MEMCPY2D,
        sc::CUDA_MEMCPY2D,
        [
            srcXInBytes,
            srcY,
            srcMemoryType,
            srcHost,
            srcDevice,
            srcArray,
            srcPitch,
            dstXInBytes,
            dstY,
            dstMemoryType,
            dstHost,
            dstDevice,
            dstArray,
            dstPitch,
            WidthInBytes,
            Height
        ]
    );
    same_layout!(
        sys::CUDA_MEMCPY3D,
        sc::CUDA_MEMCPY3D,
        [
            srcXInBytes,
            srcY,
            srcZ,
            srcLOD,
            srcMemoryType,
            srcHost,
            srcDevice,
            srcArray,
            reserved0,
            srcPitch,
            srcHeight,
            dstXInBytes,
            dstY,
            dstZ,
            dstLOD,
            dstMemoryType,
            dstHost,
            dstDevice,
            dstArray,
            reserved1,
            dstPitch,
            dstHeight,
            WidthInBytes,
            Height,
            Depth
        ]
    );
    same_layout!(sys::CUuuid, sc::CUuuid, [bytes]);
    same_layout!(sys::CUipcMemHandle, sc::CUipcMemHandle, [reserved]);
    same_layout!(sys::CUipcEventHandle, sc::CUipcEventHandle, [reserved]);
    same_layout!(
        sys::CUmemPoolPtrExportData,
        softcuda::api::pool_ipc::CUmemPoolPtrExportData,
        [reserved]
    );
    same_layout!(
        sys::CUdevResource,
        sc::CUdevResource,
        [type_, _internal_padding]
    );
    assert_eq!(
        offset_of!(sys::CUdevResource, anon_0),
        offset_of!(sc::CUdevResource, data),
        "CUdevResource's union"
    );
    same_layout!(
        sys::CUDA_ARRAY_DESCRIPTOR,
        sc::CUDA_ARRAY_DESCRIPTOR,
        [Width, Height, Format, NumChannels]
    );
    same_layout!(
        sys::CUDA_ARRAY3D_DESCRIPTOR,
        sc::CUDA_ARRAY3D_DESCRIPTOR,
        [Width, Height, Depth, Format, NumChannels, Flags]
    );
    same_layout!(
        sys::CUDA_ARRAY_MEMORY_REQUIREMENTS,
        sc::CUDA_ARRAY_MEMORY_REQUIREMENTS,
        [size, alignment, reserved]
    );
    use sys::CUresult as R;
    for (ours, theirs) in [
        (sc::code::INVALID_VALUE, R::CUDA_ERROR_INVALID_VALUE),
        (
            sc::code::INVALID_RESOURCE_TYPE,
            R::CUDA_ERROR_INVALID_RESOURCE_TYPE,
        ),
        (
            sc::code::INVALID_RESOURCE_CONFIGURATION,
            R::CUDA_ERROR_INVALID_RESOURCE_CONFIGURATION,
        ),
        (sc::code::STREAM_DETACHED, R::CUDA_ERROR_STREAM_DETACHED),
        (sc::code::OUT_OF_MEMORY, R::CUDA_ERROR_OUT_OF_MEMORY),
        (sc::code::NOT_INITIALIZED, R::CUDA_ERROR_NOT_INITIALIZED),
        (sc::code::DEINITIALIZED, R::CUDA_ERROR_DEINITIALIZED),
        (sc::code::NO_DEVICE, R::CUDA_ERROR_NO_DEVICE),
        (sc::code::INVALID_DEVICE, R::CUDA_ERROR_INVALID_DEVICE),
        (sc::code::INVALID_IMAGE, R::CUDA_ERROR_INVALID_IMAGE),
        (sc::code::INVALID_CONTEXT, R::CUDA_ERROR_INVALID_CONTEXT),
        (
            sc::code::CONTEXT_ALREADY_CURRENT,
            R::CUDA_ERROR_CONTEXT_ALREADY_CURRENT,
        ),
        (sc::code::NO_BINARY_FOR_GPU, R::CUDA_ERROR_NO_BINARY_FOR_GPU),
        (sc::code::INVALID_PTX, R::CUDA_ERROR_INVALID_PTX),
        (sc::code::INVALID_SOURCE, R::CUDA_ERROR_INVALID_SOURCE),
        (sc::code::FILE_NOT_FOUND, R::CUDA_ERROR_FILE_NOT_FOUND),
        (sc::code::INVALID_HANDLE, R::CUDA_ERROR_INVALID_HANDLE),
        (sc::code::ILLEGAL_STATE, R::CUDA_ERROR_ILLEGAL_STATE),
        (sc::code::NOT_FOUND, R::CUDA_ERROR_NOT_FOUND),
        (sc::code::NOT_READY, R::CUDA_ERROR_NOT_READY),
        (sc::code::ILLEGAL_ADDRESS, R::CUDA_ERROR_ILLEGAL_ADDRESS),
        (
            sc::code::LAUNCH_OUT_OF_RESOURCES,
            R::CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES,
        ),
        (
            sc::code::PEER_ACCESS_ALREADY_ENABLED,
            R::CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED,
        ),
        (
            sc::code::PEER_ACCESS_NOT_ENABLED,
            R::CUDA_ERROR_PEER_ACCESS_NOT_ENABLED,
        ),
        (
            sc::code::PRIMARY_CONTEXT_ACTIVE,
            R::CUDA_ERROR_PRIMARY_CONTEXT_ACTIVE,
        ),
        (
            sc::code::CONTEXT_IS_DESTROYED,
            R::CUDA_ERROR_CONTEXT_IS_DESTROYED,
        ),
        (
            sc::code::HOST_MEMORY_ALREADY_REGISTERED,
            R::CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED,
        ),
        (
            sc::code::HOST_MEMORY_NOT_REGISTERED,
            R::CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED,
        ),
        (
            sc::code::ILLEGAL_INSTRUCTION,
            R::CUDA_ERROR_ILLEGAL_INSTRUCTION,
        ),
        (
            sc::code::MISALIGNED_ADDRESS,
            R::CUDA_ERROR_MISALIGNED_ADDRESS,
        ),
        (sc::code::LAUNCH_FAILED, R::CUDA_ERROR_LAUNCH_FAILED),
        (sc::code::NOT_PERMITTED, R::CUDA_ERROR_NOT_PERMITTED),
        (sc::code::NOT_SUPPORTED, R::CUDA_ERROR_NOT_SUPPORTED),
        (sc::code::UNKNOWN, R::CUDA_ERROR_UNKNOWN),
    ] {
        assert_eq!(ours, theirs.0, "{theirs:?}");
    }
    assert_eq!(
        sc::CU_MEMORYTYPE_DEVICE,
        sys::CUmemorytype::CU_MEMORYTYPE_DEVICE.0
    );
    assert_eq!(
        sc::CU_MEMORYTYPE_HOST,
        sys::CUmemorytype::CU_MEMORYTYPE_HOST.0
    );
    assert_eq!(
        sc::CU_MEMORYTYPE_ARRAY,
        sys::CUmemorytype::CU_MEMORYTYPE_ARRAY.0
    );
    assert_eq!(
        sc::CU_MEMORYTYPE_UNIFIED,
        sys::CUmemorytype::CU_MEMORYTYPE_UNIFIED.0
    );
    assert_eq!(sc::CU_STREAM_LEGACY, sys::CU_STREAM_LEGACY.0 as usize);
    assert_eq!(
        sc::CU_STREAM_PER_THREAD,
        sys::CU_STREAM_PER_THREAD.0 as usize
    );
}

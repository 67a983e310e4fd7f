#!/usr/bin/env python3
"""Generate the raw ABI layer and the driver function list from the CUDA 12.9 and 13.5 headers.

Reads `cuda.h` and `cudaTypedefs.h` (PyPI `nvidia-cuda-runtime-cu12` 12.9 and
`nvidia-cuda-runtime` 13.5, fetched by `scripts/fixtures.sh`) with libclang
(`pip install libclang`). Every function and ABI version of 12.9 is bound with 12.9's
types; then every function and ABI version 13.5 adds (new functions, and the new ABIs
13.0–13.5 gave existing names: `cuCtxSynchronize @ 13000` beside `cuCtxSynchronize_v2000`)
is bound with the types of the 13.5 header: a type 12.9 declares with the same layout is
shared, a type whose layout differs in 13.5 (or that refers to one that does) is declared
again under its C name in `sys::cuda13`, and a type 12.9 lacks joins `sys`; the values
13.5 adds to 12.9's enums join them. Everything taken from 13.5 is tagged in the manifest
so that tests/abi.rs checks it against the 13.5 header. Nothing is edited by hand.
Writes:

  src/sys/generated.rs    every handle, typedef, enum, flag set and struct that the
                          driver functions' signatures use (transitively)
  src/table/list.rs       the declarative driver-function list: one line per
                          function and ABI version
  src/sys/manifest.rs     the ABI manifest (names, sizes, offsets, values) that
                          tests/abi.rs turns into a C program
  src/error/messages.rs   the message of every CUresult: the 535 driver's
                          cuGetErrorString where it has one, the header's doc otherwise

Run from the repository root:  python3 scripts/gen_sys.py
The output is committed; the crate never needs the headers to build.
"""
import ctypes
import os
import re
import subprocess
import sys
from pathlib import Path

import clang.cindex as ci

ROOT = Path(__file__).resolve().parent.parent
FX = Path(os.environ.get("OXICUDA_FIXTURES", ROOT / ".fixtures"))
INC12 = FX / "cuda12" / "include"
INC13 = FX / "cuda13" / "include"
REAL = FX / "libcuda/usr/lib/x86_64-linux-gnu/nvidia/current/libcuda.so.1"
GCC_INC = "/usr/lib/gcc/x86_64-linux-gnu/12/include"

# Functions left out, and why (the README repeats this list).
EXCLUDED_PREFIXES = ("cuGraphics",)  # graphics interop (GL/EGL/VDPAU/D3D resources)

# cudaProfiler.h is not in the wheel; its two live functions take no arguments.
EXTRA_FUNCTIONS = [("cuProfilerStart", 4000, []), ("cuProfilerStop", 4000, [])]

# Attributes given to one enum's type (none today). `sys` mirrors the C ABI and uses
# nothing above it: CUresult's `Display` and `Error` are written by hand in
# src/error/mod.rs, the layer that owns the driver's texts.
ENUM_ATTRS: dict[str, str] = {}

# Flag-set enums become `bitflags` types; the rest stay integer newtypes.
FLAG_ENUMS = {
    "CUctx_flags", "CUstream_flags", "CUevent_flags", "CUevent_record_flags",
    "CUevent_wait_flags", "CUmemAttach_flags", "CUstreamWaitValue_flags",
    "CUstreamWriteValue_flags", "CUgraphInstantiate_flags", "CUuserObject_flags",
    "CUuserObjectRetain_flags", "CUgraphDebugDot_flags", "CUipcMem_flags",
    "CUmemAllocationCompType", "CUmemHandleType", "CUarraySparseSubresourceType",
}
FLAG_ENUMS.discard("CUmemAllocationCompType")
FLAG_ENUMS.discard("CUmemHandleType")
FLAG_ENUMS.discard("CUarraySparseSubresourceType")

# `#define` flag groups of cuda.h, given a type name of ours (C has none).
DEFINE_FLAGS = {
    "CUmemhostalloc_flags": "CU_MEMHOSTALLOC_",
    "CUmemhostregister_flags": "CU_MEMHOSTREGISTER_",
    "CUarray3D_flags": "CUDA_ARRAY3D_",
    "CUtrsf_flags": "CU_TRSF_",
}
# Other integer `#define`s, with their C type.
DEFINE_INTS = {
    "CUDA_VERSION": "c_int", "CU_IPC_HANDLE_SIZE": "c_uint",
    "CU_ARRAY_SPARSE_PROPERTIES_SINGLE_MIPTAIL": "c_uint", "CU_TENSOR_MAP_NUM_QWORDS": "c_uint",
    "CUDA_EXTERNAL_MEMORY_DEDICATED": "c_uint",
    "CUDA_EXTERNAL_SEMAPHORE_SIGNAL_SKIP_NVSCIBUF_MEMSYNC": "c_uint",
    "CUDA_EXTERNAL_SEMAPHORE_WAIT_SKIP_NVSCIBUF_MEMSYNC": "c_uint",
    "CUDA_NVSCISYNC_ATTR_SIGNAL": "c_uint", "CUDA_NVSCISYNC_ATTR_WAIT": "c_uint",
    "CU_MEM_CREATE_USAGE_TILE_POOL": "c_uint", "CU_MEM_CREATE_USAGE_HW_DECOMPRESS": "c_uint",
    "CU_MEM_POOL_CREATE_USAGE_HW_DECOMPRESS": "c_uint",
    "CUDA_COOPERATIVE_LAUNCH_MULTI_DEVICE_NO_PRE_LAUNCH_SYNC": "c_uint",
    "CUDA_COOPERATIVE_LAUNCH_MULTI_DEVICE_NO_POST_LAUNCH_SYNC": "c_uint",
    "CU_TRSA_OVERRIDE_FORMAT": "c_uint", "CU_LAUNCH_KERNEL_REQUIRED_BLOCK_DIM": "c_uint",
    "CU_PARAM_TR_DEFAULT": "c_int", "CU_DEVICE_CPU": "CUdevice", "CU_DEVICE_INVALID": "CUdevice",
    "CU_GRAPH_COND_ASSIGN_DEFAULT": "c_uint", "CU_GRAPH_KERNEL_NODE_PORT_DEFAULT": "c_int",
    "CU_GRAPH_KERNEL_NODE_PORT_PROGRAMMATIC": "c_int",
    "CU_GRAPH_KERNEL_NODE_PORT_LAUNCH_ORDER": "c_int",
    "CU_COMPUTE_ACCELERATED_TARGET_BASE": "c_uint", "CU_COMPUTE_FAMILY_TARGET_BASE": "c_uint",
}
# Pointer-valued `#define`s: name -> (Rust type, how to build it from the integer).
DEFINE_PTRS = {
    "CU_STREAM_LEGACY": "CUstream", "CU_STREAM_PER_THREAD": "CUstream",
    "CU_LAUNCH_PARAM_END": "*mut c_void", "CU_LAUNCH_PARAM_BUFFER_POINTER": "*mut c_void",
    "CU_LAUNCH_PARAM_BUFFER_SIZE": "*mut c_void",
}

SYSTEM_TYPEDEFS = {
    "size_t": "usize", "uint8_t": "u8", "uint16_t": "u16", "uint32_t": "u32", "uint64_t": "u64",
    "int8_t": "i8", "int16_t": "i16", "int32_t": "i32", "int64_t": "i64", "uintptr_t": "usize",
    "intptr_t": "isize",
}
BUILTINS = {
    ci.TypeKind.VOID: "c_void", ci.TypeKind.CHAR_S: "c_char", ci.TypeKind.SCHAR: "c_schar",
    ci.TypeKind.UCHAR: "c_uchar", ci.TypeKind.SHORT: "c_short", ci.TypeKind.USHORT: "c_ushort",
    ci.TypeKind.INT: "c_int", ci.TypeKind.UINT: "c_uint", ci.TypeKind.LONG: "c_long",
    ci.TypeKind.ULONG: "c_ulong", ci.TypeKind.LONGLONG: "c_longlong",
    ci.TypeKind.ULONGLONG: "c_ulonglong", ci.TypeKind.FLOAT: "f32", ci.TypeKind.DOUBLE: "f64",
}


def parse(inc=INC12):
    idx = ci.Index.create()
    tu = idx.parse(
        "gen.c",
        args=["-std=c11", f"-I{inc}", f"-I{GCC_INC}"],
        unsaved_files=[("gen.c", "#include <cudaTypedefs.h>\n")],
        options=ci.TranslationUnit.PARSE_DETAILED_PROCESSING_RECORD,
    )
    errs = [d for d in tu.diagnostics if d.severity >= ci.Diagnostic.Error]
    if errs:
        sys.exit("\n".join(map(str, errs)))
    return tu


def in_cuda(cursor):
    f = cursor.location.file
    return f is not None and str(f.name).startswith((str(INC12), str(INC13)))


class Gen:
    def __init__(self, tu):
        self.tu = tu
        self.typedefs = {}  # name -> cursor
        self.records = {}  # tag -> cursor
        self.enums = {}  # tag -> cursor
        for c in tu.cursor.get_children():
            if c.kind == ci.CursorKind.TYPEDEF_DECL:
                self.typedefs[c.spelling] = c
            elif c.kind in (ci.CursorKind.STRUCT_DECL, ci.CursorKind.UNION_DECL) and c.spelling:
                if c.is_definition() or c.spelling not in self.records:
                    self.records[c.spelling] = c
            elif c.kind == ci.CursorKind.ENUM_DECL and c.spelling:
                self.enums[c.spelling] = c
        self.out_typedefs = {}  # name -> rust line
        self.out_handles = {}  # name -> tag
        self.out_enums = {}  # rust name -> (repr, [(cname, value)], doc)
        self.out_records = {}  # rust name -> (kind, fields, cursor, c_spelling)
        self.order = []  # emission order of records
        self.enum_tags = set()  # `enum X_enum` tags, aliased to their typedef
        # The 13.x pass (a second Gen over the 13.x header): names the 12.9 pass declared
        # with the same layout (not declared again), and names whose layout differs
        # (declared again, from the 13.x header, in `sys::cuda13`).
        self.shared = set()
        self.divergent = set()

    def q(self, name):
        """How the Rust code spells `name`: a 13.x layout that differs from 12.9 lives in
        `sys::cuda13`."""
        return f"cuda13::{name}" if name in self.divergent else name

    # ---- types ----------------------------------------------------------
    def rust_type(self, t, in_param=False):
        k = t.kind
        if k == ci.TypeKind.ELABORATED:
            return self.rust_type(t.get_named_type(), in_param)
        if k in BUILTINS:
            return BUILTINS[k]
        if k == ci.TypeKind.POINTER:
            p = t.get_pointee()
            if p.kind == ci.TypeKind.FUNCTIONPROTO:
                return self.fn_type(p)
            mut = "*const" if p.is_const_qualified() else "*mut"
            return f"{mut} {self.rust_type(p)}"
        if k == ci.TypeKind.CONSTANTARRAY:
            return f"[{self.rust_type(t.element_type)}; {t.element_count}]"
        if k == ci.TypeKind.INCOMPLETEARRAY:
            return f"*mut {self.rust_type(t.element_type)}"
        if k == ci.TypeKind.TYPEDEF:
            return self.q(self.typedef(t.get_declaration()))
        if k == ci.TypeKind.RECORD:
            return self.q(self.record(t.get_declaration()))
        if k == ci.TypeKind.ENUM:
            return self.q(self.enum(t.get_declaration()))
        raise SystemExit(f"unhandled type {t.spelling} ({k})")

    def fn_type(self, proto):
        args = ", ".join(f"arg{i}: {self.rust_type(a)}" for i, a in enumerate(proto.argument_types()))
        res = proto.get_result()
        ret = "" if res.kind == ci.TypeKind.VOID else f" -> {self.rust_type(res)}"
        return f'Option<unsafe extern "C" fn({args}){ret}>'

    def typedef(self, cur):
        name = cur.spelling
        if not in_cuda(cur):
            if name in SYSTEM_TYPEDEFS:
                return SYSTEM_TYPEDEFS[name]
            raise SystemExit(f"system typedef {name}")
        if name in self.shared:
            return name
        if name in self.out_typedefs or name in self.out_handles or name in self.out_enums:
            return name
        u = cur.underlying_typedef_type
        base = u.get_named_type() if u.kind == ci.TypeKind.ELABORATED else u
        if base.kind == ci.TypeKind.POINTER:
            pointee = base.get_pointee()
            pk = pointee.get_named_type() if pointee.kind == ci.TypeKind.ELABORATED else pointee
            if pk.kind == ci.TypeKind.RECORD and not pk.get_declaration().is_definition():
                self.out_handles[name] = pk.get_declaration().spelling
                return name
        if base.kind == ci.TypeKind.ENUM:
            decl = base.get_declaration()
            if not decl.spelling or decl.spelling.endswith(("_enum", "_st")) or True:
                # The C typedef names the enum; its tag (`..._enum`) is never used in signatures.
                self.enum(decl, rename=name)
                if decl.spelling and decl.spelling != name:
                    self.out_typedefs.setdefault(decl.spelling, f"pub type {decl.spelling} = {name};")
                    self.enum_tags.add(decl.spelling)
                return name
        if base.kind == ci.TypeKind.RECORD:
            decl = base.get_declaration()
            if decl.spelling == "" or decl.spelling == name:
                self.record(decl, rename=name)
                return name
        self.out_typedefs[name] = None  # reserve (recursion)
        self.out_typedefs[name] = f"pub type {name} = {self.rust_type(u)};"
        return name

    def enum(self, decl, rename=None):
        tag = decl.spelling
        name = rename or tag
        if name in self.out_enums or name in self.shared:
            return name
        repr_ = BUILTINS[decl.enum_type.kind]
        vals = [(c.spelling, c.enum_value) for c in decl.get_children()
                if c.kind == ci.CursorKind.ENUM_CONSTANT_DECL]
        self.out_enums[name] = (repr_, vals, decl)
        return name

    def record(self, decl, rename=None, anon_name=None):
        if anon_name is None and not decl.is_definition():
            defn = decl.get_definition()
            if defn is None:
                # incomplete type used by value/pointer without handle typedef
                name = rename or decl.spelling
                if name in self.shared:
                    return name
                self.out_handles.setdefault(name, None)
                return name
            decl = defn
        name = anon_name or (decl.spelling if decl.spelling and not decl.is_anonymous() else rename)
        if not name:
            raise SystemExit(f"nameless record at {decl.location}")
        if anon_name is None and name in self.shared:
            return name
        if name in self.out_records:
            return name
        if decl.spelling and rename and decl.spelling != rename:
            # typedef struct X_st {...} X;  -> Rust struct X_st, alias X
            self.out_typedefs.setdefault(rename, f"pub type {rename} = {decl.spelling};")
        self.out_records[name] = None
        kind = "union" if decl.kind == ci.CursorKind.UNION_DECL else "struct"
        fields = []
        anon_i = 0
        children = list(decl.get_children())
        used = {c.type.get_canonical().get_declaration().hash for c in children
                if c.kind == ci.CursorKind.FIELD_DECL}
        for ch in children:
            if ch.kind in (ci.CursorKind.STRUCT_DECL, ci.CursorKind.UNION_DECL) and ch.hash not in used:
                # An anonymous member (`union { a; b; };`): C reaches its fields directly.
                fname = f"anon_{anon_i}"
                anon_i += 1
                rty = self.record(ch, anon_name=f"{name}__{fname}")
                fields.append((fname, rty, "", ch))
                continue
            if ch.kind != ci.CursorKind.FIELD_DECL:
                continue
            if ch.is_bitfield():
                raise SystemExit(f"bitfield {name}.{ch.spelling}")
            t = ch.type
            tt = t.get_named_type() if t.kind == ci.TypeKind.ELABORATED else t
            fname = ch.spelling
            c_path = fname
            if tt.kind == ci.TypeKind.RECORD and tt.get_declaration().is_anonymous():
                sub = tt.get_declaration()
                if not fname:
                    fname = f"anon_{anon_i}"
                    anon_i += 1
                    c_path = ""
                rty = self.record(sub, anon_name=f"{name}__{fname}")
            elif tt.kind == ci.TypeKind.CONSTANTARRAY and tt.element_type.get_declaration().is_anonymous() \
                    and tt.element_type.kind in (ci.TypeKind.RECORD, ci.TypeKind.ELABORATED):
                et = tt.element_type
                et = et.get_named_type() if et.kind == ci.TypeKind.ELABORATED else et
                rty = f"[{self.record(et.get_declaration(), anon_name=f'{name}__{fname}')}; {tt.element_count}]"
            else:
                rty = self.rust_type(t)
            rname = rust_ident(fname)
            fields.append((rname, rty, c_path, ch))
        c_spelling = None
        if anon_name is None:
            c_spelling = f"{'union' if kind == 'union' else 'struct'} {decl.spelling}" \
                if decl.spelling and not decl.is_anonymous() else name
        self.out_records[name] = (kind, fields, decl, c_spelling, decl.type.get_align())
        self.order.append(name)
        return name


RUST_KEYWORDS = {"type", "ref", "fn", "mod", "match", "loop", "in", "impl", "move", "use", "where",
                 "box", "self", "super", "crate", "struct", "enum", "trait", "async", "await", "dyn"}


def rust_ident(name):
    return f"{name}_" if name in RUST_KEYWORDS else name


def collect_functions(g, have=None):
    """Every `PFN_<name>_v<version>` of g's cudaTypedefs.h; with `have` (the 12.9 lines),
    only the lines `have` lacks (the 13.x additions)."""
    funcs = {}  # base -> {version: [(pname, rtype)]}
    for name, cur in g.typedefs.items():
        m = re.fullmatch(r"PFN_(cu\w+?)_v(\d+)", name)
        if not m or not str(cur.location.file.name).endswith("cudaTypedefs.h"):
            continue
        base, ver = m.group(1), int(m.group(2))
        if base.startswith(EXCLUDED_PREFIXES) or (have is not None and ver in have.get(base, {})):
            continue
        proto = cur.underlying_typedef_type.get_pointee()
        params = [c for c in cur.get_children() if c.kind == ci.CursorKind.PARM_DECL]
        args = []
        for i, (p, t) in enumerate(zip(params, proto.argument_types())):
            args.append((rust_ident(p.spelling or f"arg{i}"), g.rust_type(t, in_param=True)))
        funcs.setdefault(base, {})[ver] = args
    if have is None:
        for base, ver, args in EXTRA_FUNCTIONS:
            funcs.setdefault(base, {})[ver] = args
    # Per-thread-default-stream variants: same ABI, registered from CUDA 7.0 on.
    ptds = {}
    for name, cur in g.typedefs.items():
        m = re.fullmatch(r"PFN_(cu\w+?)_v(\d+)_(ptds|ptsz)", name)
        if not m or m.group(1) not in funcs:
            continue
        base, ver = m.group(1), int(m.group(2))
        types = [g.rust_type(t) for t in cur.underlying_typedef_type.get_pointee().argument_types()]
        for line_ver, args in funcs[base].items():
            if [t for _, t in args] == types and line_ver != ver:
                ptds[(base, line_ver)] = ver
    g.ptds = ptds
    return funcs


def layout_sigs(tu):
    """name -> (layout signature, names it refers to) for every struct, union and typedef of
    a header: size, alignment, and each field's name, offset and type, anonymous members
    inline, named ones by name."""
    def ref(t):
        t = t.get_canonical()
        if t.kind == ci.TypeKind.POINTER:
            return ("*",) + ref(t.get_pointee())
        if t.kind in (ci.TypeKind.CONSTANTARRAY, ci.TypeKind.INCOMPLETEARRAY):
            return ("[]", getattr(t, "element_count", 0)) + ref(t.element_type)
        if t.kind == ci.TypeKind.RECORD:
            d = t.get_declaration()
            if d.is_anonymous() or not d.spelling:
                return (body(d),)
            deps.add(d.spelling)
            return ("rec", d.spelling)
        if t.kind == ci.TypeKind.FUNCTIONPROTO:
            return ("fn",) + tuple(ref(a) for a in t.argument_types()) + ref(t.get_result())
        return (t.kind.name, t.get_size())

    def body(d):
        fields = []
        for c in d.get_children():
            if c.kind == ci.CursorKind.FIELD_DECL:
                fields.append((c.spelling, c.get_field_offsetof(), ref(c.type)))
            elif c.kind in (ci.CursorKind.STRUCT_DECL, ci.CursorKind.UNION_DECL) and c.is_anonymous():
                fields.append(("", 0, (body(c),)))
        return (d.kind.name, d.type.get_size(), d.type.get_align(), tuple(fields))

    out = {}
    for c in tu.cursor.get_children():
        deps = set()
        if c.kind in (ci.CursorKind.STRUCT_DECL, ci.CursorKind.UNION_DECL) and c.spelling \
                and not c.is_anonymous() and c.is_definition():
            out[c.spelling] = (body(c), deps)
        elif c.kind == ci.CursorKind.TYPEDEF_DECL:
            out[c.spelling] = (ref(c.underlying_typedef_type), deps)
    return out


def divergent_names(tu12, tu13):
    """Names both headers declare whose layout differs, or that refer (by value or by
    pointer) to one that does."""
    a, b = layout_sigs(tu12), layout_sigs(tu13)
    both = set(a) & set(b)
    div = {n for n in both if a[n][0] != b[n][0]}
    grew = True
    while grew:
        grew = False
        for n in both - div:
            if b[n][1] & div:
                div.add(n)
                grew = True
    return div


def c_define_values(names):
    """Evaluate `#define`d constants with gcc, exactly as C sees them."""
    prog = ["#include <cuda.h>", "#include <stdio.h>", "#include <stdint.h>", "int main(void){"]
    for n in names:
        prog.append(f'printf("%s %lld\\n", "{n}", (long long)(intptr_t)({n}));')
    prog.append("return 0;}")
    src = Path("/tmp/oxicuda_gen_defines.c")
    src.write_text("\n".join(prog))
    subprocess.run(["gcc", "-std=gnu17", f"-I{INC12}", str(src), "-o", "/tmp/oxicuda_gen_defines"], check=True)
    out = subprocess.run(["/tmp/oxicuda_gen_defines"], check=True, capture_output=True, text=True).stdout
    return {a: int(b) for a, b in (l.split() for l in out.splitlines())}


def doc_of(cursor):
    raw = cursor.raw_comment or ""
    text = re.sub(r"^\s*/\*\*<?|\*/\s*$", "", raw)
    text = "\n".join(re.sub(r"^\s*\*\s?", "", l) for l in text.splitlines())
    text = re.sub(r"\\p |\\ref |::|\\e ", "", text)
    return " ".join(text.split())


def first_sentence(s):
    m = re.match(r"(.+?\.)(\s|$)", s)
    return m.group(1) if m else s


def lit(v, repr_):
    if repr_.startswith("c_u") and v < 0:
        v &= 0xFFFFFFFF
    return hex(v) if v > 9 else str(v)


def in_mod13(g13, name):
    """Whether a 13.x pass's item lives in `sys::cuda13` (a layout that differs from 12.9,
    or a member of one)."""
    return name in g13.divergent or name.split("__")[0] in g13.divergent


def emit_typedef(w, gg, name, line):
    cur = gg.typedefs.get(name)
    doc = first_sentence(doc_of(cur)) if cur is not None else ""
    w(f"#[doc = {rs_str(doc or f'C typedef `{name}`.')}] {line}")


def emit_record(w, gg, name):
    kind, fields, decl, c_spelling, align = gg.out_records[name]
    natural = max([f[3].type.get_align() for f in fields] + [1])
    has_union = record_has_union(gg, name)
    attrs = ["#[repr(C" + (f", align({align})" if align > natural else "") + ")]"]
    attrs.append("#[derive(Clone, Copy" + (", Debug" if not has_union else "") + ")]")
    doc = first_sentence(doc_of(decl)) or f"C {kind} `{c_spelling or name}`."
    w(f"#[doc = {rs_str(doc)}]")
    w(" ".join(attrs))
    w(f"pub {kind} {name} {{")
    for rname, rty, c_path, ch in fields:
        fdoc = first_sentence(doc_of(ch)) if c_path else "Anonymous member: C names its fields directly."
        d = f"#[doc = {rs_str(fdoc)}] " if fdoc else f"#[doc = \"`{ch.spelling or rname}`\"] "
        w(f"    {d}pub {rname}: {rty},")
    w("}")


def emit_layout_asserts(w, gg, names):
    for name in names:
        decl = gg.out_records[name][2]
        w(f"static_assertions::const_assert_eq!(core::mem::size_of::<{name}>(), {decl.type.get_size()});")
        w(f"static_assertions::const_assert_eq!(core::mem::align_of::<{name}>(), {decl.type.get_align()});")


def emit(g, g13, funcs, defines):
    o = []
    w = o.append
    w("// Generated by scripts/gen_sys.py from the CUDA 12.9 cuda.h, and from the 13.5 cuda.h for")
    w("// what the 13.x functions add. Do not edit; regenerate.")
    w("#![allow(non_camel_case_types, non_snake_case, non_upper_case_globals, clippy::all)]")
    w("use core::ffi::{c_char, c_int, c_longlong, c_uchar, c_uint, c_ulonglong, c_ushort, c_void};")
    w("#[allow(unused_imports)] use core::ffi::{c_long, c_ulong, c_schar, c_short};")
    w("use super::macros::{c_enum, c_flags, c_handle, zeroed_default};")
    w("")
    w("// ---- handles ----")
    handles = {**g.out_handles, **g13.out_handles}
    for name, tag in sorted(handles.items()):
        w(f"c_handle!({name}, \"{tag or name}\");")
    w("")
    w("// ---- typedefs ----")
    tds = [(n, l, g) for n, l in g.out_typedefs.items()]
    tds += [(n, l, g13) for n, l in g13.out_typedefs.items() if not in_mod13(g13, n)]
    for name, line, gg in sorted(tds, key=lambda x: x[0]):
        emit_typedef(w, gg, name, line)
    w("")
    w("// ---- enums ----")
    for name, (repr_, vals, decl) in sorted({**g.out_enums, **g13.out_enums}.items()):
        macro = "c_flags" if name in FLAG_ENUMS else "c_enum"
        doc = first_sentence(doc_of(decl)) or f"C enum `{name}`."
        w(f"{macro}! {{ #[doc = {rs_str(doc)}] {ENUM_ATTRS.get(name, '')}{name}: {repr_} {{")
        for cname, v in vals:
            w(f"    {cname} = {lit(v, repr_)},")
        w("} }")
    w("")
    w("// ---- flag sets spelled as `#define`s in cuda.h ----")
    for tname, prefix in DEFINE_FLAGS.items():
        w(f"c_flags! {{ #[doc = \"The `{prefix}*` flags of cuda.h.\"] {tname}: c_uint {{")
        for n, v in defines.items():
            if n.startswith(prefix):
                w(f"    {n} = {lit(v, 'c_uint')},")
        w("} }")
    w("")
    w("// ---- other `#define` constants ----")
    for n, ty in DEFINE_INTS.items():
        w(f"#[doc = \"`{n}` of cuda.h.\"] pub const {n}: {ty} = {defines[n]};")
    for n, ty in DEFINE_PTRS.items():
        if ty == "CUstream":
            w(f"#[doc = \"`{n}` of cuda.h.\"] pub const {n}: CUstream = CUstream({defines[n]} as *mut c_void);")
        else:
            w(f"#[doc = \"`{n}` of cuda.h.\"] pub const {n}: {ty} = {defines[n]} as {ty};")
    w("")
    w("// ---- structs and unions ----")
    top13 = [n for n in g13.order if not in_mod13(g13, n)]
    for name in g.order:
        emit_record(w, g, name)
    for name in top13:
        emit_record(w, g13, name)
    w("zeroed_default!(" + ", ".join(g.order + top13) + ");")
    w("")
    w("// ---- layouts (x86_64 and aarch64 Linux, Windows: the LP64/LLP64 ABIs agree here) ----")
    emit_layout_asserts(w, g, g.order)
    emit_layout_asserts(w, g13, top13)
    w("")
    w("/// The CUDA 13.x layouts of the types whose 12.9 layout differs (a member added,")
    w("/// a size or alignment changed), or that refer to one that does, under their C names.")
    w("/// The lines of the 13.x ABIs use these; every 12.x line keeps the 12.9 types above.")
    w("pub mod cuda13 {")
    w("    #[allow(unused_imports)] use super::*;")
    w("    #[allow(unused_imports)] use core::ffi::{c_char, c_int, c_longlong, c_uchar, c_uint, c_ulonglong, c_ushort, c_void};")
    w("    use super::super::macros::zeroed_default;")
    mod_recs = [n for n in g13.order if in_mod13(g13, n)]
    for name, line in sorted(g13.out_typedefs.items()):
        if in_mod13(g13, name):
            emit_typedef(w, g13, name, line)
    for name in mod_recs:
        emit_record(w, g13, name)
    w("    zeroed_default!(" + ", ".join(mod_recs) + ");")
    emit_layout_asserts(w, g13, mod_recs)
    w("}")
    (ROOT / "src/sys/generated.rs").write_text("\n".join(o) + "\n")


def record_has_union(g, name):
    """Whether a union is held by value anywhere inside (then Debug cannot be derived)."""
    def by_value(t):
        t = t.get_canonical()
        while t.kind == ci.TypeKind.CONSTANTARRAY:
            t = t.element_type.get_canonical()
        if t.kind != ci.TypeKind.RECORD:
            return False
        d = t.get_declaration()
        return d.kind == ci.CursorKind.UNION_DECL or any(
            by_value(c.type) for c in d.get_children()
            if c.kind in (ci.CursorKind.FIELD_DECL, ci.CursorKind.STRUCT_DECL, ci.CursorKind.UNION_DECL))
    return by_value(g.out_records[name][2].type)


def rs_str(s):
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


def leaf_paths(g, name, rust_prefix, c_prefix):
    """(rust path, C path) of every field, at every depth, of record `name`."""
    kind, fields, *_ = g.out_records[name]
    for rname, rty, c_path, ch in fields:
        rp = f"{rust_prefix}{rname}"
        cp = f"{c_prefix}{c_path}" if c_path else c_prefix.rstrip(".")
        if c_path:
            yield rp, cp
        if rty in g.out_records and g.out_records[rty][3] is None:  # anonymous nested record
            yield from leaf_paths(g, rty, rp + ".", (cp + ".") if cp else "")


def emit_manifest(g, g13, defines):
    o = []
    w = o.append
    w("// Generated by scripts/gen_sys.py. Do not edit; regenerate.")
    w("//! The ABI manifest: every constant and every struct layout the crate declares,")
    w("//! as Rust sees them, for `tests/abi.rs` to compare with C.")
    w("#![allow(deprecated)]")
    w("use super::*;")
    w("use super::manifest_support::{field, Constant, Field, StructLayout};")
    w("")
    w("/// Every constant: (C name, header it first appears in, value).")
    w("pub fn constants() -> Vec<Constant> {")
    w("    vec![")
    for name, (repr_, vals, decl) in sorted({**g.out_enums, **g13.out_enums}.items()):
        getter = ".bits()" if name in FLAG_ENUMS else ".0"
        for cname, v in vals:
            ctor = "cuda13" if cname in g.extra13 or name in g13.out_enums else "new"
            # A negative C value kept in an unsigned newtype (13.x added `-1` and `1 << 31`
            # to enums 12.9 made unsigned): the same 32 bits, compared as C's int.
            conv = " as i32" if v < 0 and repr_.startswith("c_u") else ""
            w(f"        Constant::{ctor}(\"{cname}\", {name}::{cname}{getter}{conv} as i128),")
    for tname, prefix in DEFINE_FLAGS.items():
        for n in defines:
            if n.startswith(prefix):
                w(f"        Constant::new(\"{n}\", {tname}::{n}.bits() as i128),")
    for n in DEFINE_INTS:
        w(f"        Constant::new(\"{n}\", {n} as i128),")
    for n, ty in DEFINE_PTRS.items():
        conv = f"{n}.0 as usize as i128" if ty == "CUstream" else f"{n} as usize as i128"
        w(f"        Constant::new(\"{n}\", {conv}),")
    w("    ]")
    w("}")
    w("")
    w("/// Every handle, typedef and enum the crate declares under its C name: (name, size, align).")
    w("pub fn types() -> Vec<(&'static str, usize, usize)> {")
    w("    vec![")
    for name in sorted(set(g.out_handles) | set(g.out_typedefs) | set(g.out_enums)):
        c_name = f"enum {name}" if name in g.enum_tags else name
        w(f"        (\"{c_name}\", size_of::<{name}>(), align_of::<{name}>()),")
    w("    ]")
    w("}")
    w("")
    w("/// Every named struct and union: C spelling, size, alignment, and every field at every depth.")
    w("pub fn structs() -> Vec<StructLayout> {")
    w("    vec![")
    for name in g.order:
        kind, fields, decl, c_spelling, align = g.out_records[name]
        if c_spelling is None:
            continue
        w(f"        StructLayout {{ c_name: \"{c_spelling}\", size: size_of::<{name}>(), align: align_of::<{name}>(), fields: vec![")
        for rp, cp in leaf_paths(g, name, "", ""):
            w(f"            field!({name}, \"{cp}\", {rp}),")
        w("        ] },")
    w("    ]")
    w("}")
    w("")
    w("/// What the 13.x functions add (checked against the 13.x header): handles, typedefs and")
    w("/// enums as (C name, size, align), `sys::cuda13`'s under their C names.")
    w("pub fn types13() -> Vec<(&'static str, usize, usize)> {")
    w("    vec![")
    for name in sorted(set(g13.out_handles) | set(g13.out_typedefs) | set(g13.out_enums)):
        c_name = f"enum {name}" if name in g13.enum_tags else name
        w(f"        (\"{c_name}\", size_of::<{g13.q(name)}>(), align_of::<{g13.q(name)}>()),")
    w("    ]")
    w("}")
    w("")
    w("/// The structs and unions the 13.x functions add, and `sys::cuda13`'s 13.x layouts.")
    w("pub fn structs13() -> Vec<StructLayout> {")
    w("    vec![")
    for name in g13.order:
        kind, fields, decl, c_spelling, align = g13.out_records[name]
        if c_spelling is None:
            continue
        rn = g13.q(name)
        w(f"        StructLayout {{ c_name: \"{c_spelling}\", size: size_of::<{rn}>(), align: align_of::<{rn}>(), fields: vec![")
        for rp, cp in leaf_paths(g13, name, "", ""):
            w(f"            field!({rn}, \"{cp}\", {rp}),")
        w("        ] },")
    w("    ]")
    w("}")
    (ROOT / "src/sys/manifest.rs").write_text("\n".join(o) + "\n")


def emit_table(g, funcs):
    o = []
    w = o.append
    w("// The driver-function list: one line per function and ABI version.")
    w("//")
    w("// `name @ version (params);` -- `version` is the CUDA version whose ABI the signature")
    w("// matches: cudaTypedefs.h spells it `PFN_<name>_v<version>`. The unsuffixed field is the")
    w("// newest ABI of the 12.9 and 13.5 headers; an older ABI still worth calling on older drivers is a")
    w("// line of its own, its field suffixed `_v<version>` (the driver symbol is the base name).")
    w("// Generated by scripts/gen_sys.py; tests/abi.rs checks every line against cudaTypedefs.h")
    w("// (12.9's lines against 12.9's, the lines 13.x adds against 13.5's, whose types that")
    w("// differ from 12.9's are `sys::cuda13`'s).")
    w("#![allow(non_snake_case)] // the C parameter names")
    w("#[allow(unused_imports)] use core::ffi::{c_char, c_int, c_uint, c_void, c_ulonglong, c_longlong, c_uchar, c_ushort};")
    w("use crate::sys::*;")
    w("")
    w("driver_table! {")
    for base in sorted(funcs, key=lambda b: b):
        vers = sorted(funcs[base])
        newest = vers[-1]
        for v in reversed(vers):
            field = base if v == newest else f"{base}_v{v}"
            args = ", ".join(f"{n}: {t}" for n, t in funcs[base][v])
            w(f"    {field} @ {v} ({args});")
    w("}")
    w("")
    w("/// Lines whose per-thread-default-stream variant (`_ptsz`/`_ptds`, same ABI) the driver")
    w("/// registers under a later version than the line's: (field, version to ask for).")
    w("pub(crate) const PER_THREAD_VERSIONS: &[(&str, u32)] = &[")
    fields = [(base if line_ver == max(funcs[base]) else f"{base}_v{line_ver}", ver)
              for (base, line_ver), ver in g.ptds.items()]
    for field, ver in sorted(fields):
        w(f'    ("{field}", {ver}),')
    w("];")
    w("")
    w("/// Exported symbol of each function whose cuda.h name carries a suffix, for drivers")
    w("/// without cuGetProcAddress (older than 11.3), read from cuda.h's `#define`s, the")
    w("/// `__CUDA_API_PTDS(...)`/`__CUDA_API_PTSZ(...)` ones included: the newest line's.")
    w("pub(crate) const DLSYM_SYMBOLS: &[(&str, &str)] = &[")
    head = (INC12 / "cuda.h").read_text().split("#if defined(__CUDA_API_PER_THREAD_DEFAULT_STREAM)")[0]
    for base, sym in sorted(re.findall(r"^#define (cu\w+)\s+(?:__CUDA_API_PT(?:DS|SZ)\()?(cu\w+_v\d+)\)?\s*$", head, re.M)):
        if sym.startswith(base + "_v") and base in funcs and len(funcs[base]) == 1:
            w(f'    ("{base}", "{sym}"),')
    w("];")
    (ROOT / "src/table/list.rs").write_text("\n".join(o) + "\n")
    # softcuda's cuGetProcAddress needs every ABI version of every function.
    a = ["// Generated by scripts/gen_sys.py from cudaTypedefs.h 12.9 and 13.5. Do not edit; regenerate.",
         "//! Every ABI version of every driver function (`PFN_<name>_v<version>`), sorted by",
         "//! name, so that `cuGetProcAddress` can tell which ABI a requested version means.", "",
         "/// (name, ABI versions ascending).",
         "pub(crate) const ABI_VERSIONS: &[(&str, &[u32])] = &["]
    for base in sorted(funcs):
        a.append(f'    ("{base}", &[{", ".join(str(v) for v in sorted(funcs[base]))}]),')
    a.append("];")
    (ROOT / "softcuda/src/abi_versions.rs").write_text("\n".join(a) + "\n")


def result_codes_13():
    """CUresult constants of the 13.x header that 12.9 lacks."""
    idx = ci.Index.create()
    tu = idx.parse("g13.c", args=["-std=c11", f"-I{INC13}", f"-I{GCC_INC}"],
                   unsaved_files=[("g13.c", "#include <cuda.h>\n")])
    for c in tu.cursor.get_children():
        if c.kind == ci.CursorKind.ENUM_DECL and c.spelling == "cudaError_enum":
            return [(k.spelling, k.enum_value, k) for k in c.get_children()
                    if k.kind == ci.CursorKind.ENUM_CONSTANT_DECL]
    raise SystemExit("no cudaError_enum in 13.x header")


def emit_messages(g):
    lib = ctypes.CDLL(str(REAL))
    get_str = lib.cuGetErrorString
    get_str.argtypes = [ctypes.c_int, ctypes.POINTER(ctypes.c_char_p)]
    repr_, vals12, decl = g.out_enums["CUresult"]
    docs12 = {k.spelling: k for k in decl.get_children() if k.kind == ci.CursorKind.ENUM_CONSTANT_DECL}
    codes = [(n, v, docs12[n], "12") for n, v in vals12]
    known = {v for _, v in vals12}
    extra = [(n, v, k, "13") for n, v, k in result_codes_13() if v not in known]
    # The 13.x-only codes join CUresult so that every code has a name.
    for n, v, k, _ in extra:
        vals12.append((n, v))
    g.extra13 = {n for n, *_ in extra}  # enum_values_13 adds the other enums' 13.x values
    o = ["// Generated by scripts/gen_sys.py. Do not edit; regenerate.",
         "// The message of every CUresult. `driver` lines are what the 535 driver's",
         "// cuGetErrorString returns (tests/real_driver.rs checks them); `ours` lines are",
         "// the first sentence of the header's documentation, for codes the 535 driver lacks.",
         "use crate::sys::CUresult;", "",
         "pub(super) const MESSAGES: &[(CUresult, &str)] = &["]
    for n, v, k, hdr in codes + extra:
        out = ctypes.c_char_p()
        r = get_str(v, ctypes.byref(out))
        if r == 0 and out.value:
            msg, src = out.value.decode(), "driver"
        else:
            msg, src = first_sentence(doc_of(k)) or n, f"ours, {hdr}.x header"
        o.append(f"    (CUresult::{n}, {rs_str(msg)}), // {src}")
    o.append("];")
    o.append("")
    o.append("/// Codes the header documents as leaving the process in an inconsistent state, or")
    o.append("/// the context unusable: every later call fails the same way.")
    o.append("pub(super) const STICKY: &[CUresult] = &[")
    for n, v, k, hdr in codes + extra:
        d = doc_of(k)
        if ("inconsistent state" in d or "must be terminated" in d
                or "cannot be used anymore" in d):
            o.append(f"    CUresult::{n},")
    o.append("];")
    (ROOT / "src/error/messages.rs").write_text("\n".join(o) + "\n")
    # softcuda answers cuGetErrorName/String from the same table, as C strings.
    sc = ["// Generated by scripts/gen_sys.py. Do not edit; regenerate.",
          "//! The name and message of every CUresult, as `cuGetErrorName`/`cuGetErrorString`",
          "//! return them (the 535 driver's words where it has them).",
          "use core::ffi::CStr;", "",
          "/// (code, name, message), ascending by code.",
          "pub(crate) const CODES: &[(u32, &CStr, &CStr)] = &["]
    rows = []
    for line in o:
        m = re.match(r'    \(CUresult::(\w+), (".*")\), //', line)
        if m:
            rows.append((dict(vals12)[m.group(1)], m.group(1), m.group(2)))
    for v, n, msg in sorted(rows):
        sc.append(f'    ({v}, c"{n}", c{msg}),')
    sc.append("];")
    (ROOT / "softcuda/src/result_codes.rs").write_text("\n".join(sc) + "\n")
    return extra


def emit_softcuda_stubs(g):
    """Exports every other function of cuda.h from libsoftcuda.so as a stub returning
    CUDA_ERROR_NOT_SUPPORTED, so that any C program compiled against cuda.h links."""
    api = ROOT / "softcuda/src/api"
    implemented = set()
    for f in api.rglob("*.rs"):
        text = f.read_text()
        implemented |= set(re.findall(r'pub unsafe extern "C" fn (\w+)', text))
        implemented |= set(re.findall(r"^\s+(cu\w+) \"cu\w+\" \(", text, re.M))
    symbols = set()
    for c in g.tu.cursor.get_children():
        if c.kind == ci.CursorKind.FUNCTION_DECL and in_cuda(c) and str(c.location.file.name).endswith("/cuda.h"):
            name = c.spelling
            if name.startswith("cu") and not name.startswith(EXCLUDED_PREFIXES) and name not in implemented:
                symbols.add(name)
    o = ["// Generated by scripts/gen_sys.py from cuda.h 12.9. Do not edit; regenerate.",
         "//! Every other function `cuda.h` declares, exported under its symbol name so that",
         "//! any C program compiled against the header links against libsoftcuda.so; each",
         "//! returns `CUDA_ERROR_NOT_SUPPORTED` and does nothing. `cuGetProcAddress` does not",
         "//! hand these out: to a loader, an unimplemented function is simply absent.",
         "//!",
         "//! The stubs declare no parameters: under the C calling convention the caller",
         "//! owns its arguments, so ignoring them is sound.",
         "",
         "use crate::types::{CUresult, code};",
         "",
         "macro_rules! unimplemented_functions {",
         "    ($($name:ident)*) => {$(",
         "        #[doc = concat!(\"`\", stringify!($name), \"`: not implemented (`CUDA_ERROR_NOT_SUPPORTED`).\")]",
         "        #[unsafe(no_mangle)]",
         "        pub extern \"C\" fn $name() -> CUresult {",
         "            code::NOT_SUPPORTED",
         "        }",
         "    )*};",
         "}",
         "",
         "unimplemented_functions! {"]
    for name in sorted(symbols):
        o.append(f"    {name}")
    o.append("}")
    (api / "unimplemented.rs").write_text("\n".join(o) + "\n")
    return len(symbols)


def bind_header_types(g):
    """Every handle and enum of the header is bound, not only those the table uses; and
    every other cuda.h typedef naming a record the crate declares (CUDA_MEMCPY2D for
    CUDA_MEMCPY2D_v2, ...), so the C spellings all exist."""
    for name, cur in list(g.typedefs.items()):
        if in_cuda(cur) and str(cur.location.file.name).endswith("/cuda.h"):
            u = cur.underlying_typedef_type
            base = u.get_named_type() if u.kind == ci.TypeKind.ELABORATED else u
            if base.kind == ci.TypeKind.ENUM or (
                    base.kind == ci.TypeKind.POINTER and name not in ("CUdeviceptr",)
                    and base.get_pointee().kind in (ci.TypeKind.ELABORATED, ci.TypeKind.RECORD)):
                g.typedef(cur)
    for name, cur in list(g.typedefs.items()):
        if in_cuda(cur) and name not in g.out_typedefs and name not in g.out_records:
            u = cur.underlying_typedef_type
            base = u.get_named_type() if u.kind == ci.TypeKind.ELABORATED else u
            if base.kind == ci.TypeKind.TYPEDEF and base.get_declaration().spelling in g.out_typedefs:
                g.typedef(cur)
            elif base.kind == ci.TypeKind.RECORD and base.get_declaration().spelling in g.out_records:
                g.typedef(cur)


def enum_values_13(g, g13):
    """The enumerators the 13.x header adds to enums 12.9 has (checked against 13.x)."""
    decls13 = {}
    for name, cur in g13.typedefs.items():
        u = cur.underlying_typedef_type.get_canonical()
        if u.kind == ci.TypeKind.ENUM:
            decls13[name] = u.get_declaration()
    decls13.update(g13.enums)
    for name, (repr_, vals, decl) in g.out_enums.items():
        d13 = decls13.get(name)
        if d13 is None:
            continue
        have = {n for n, _ in vals}
        for c in d13.get_children():
            if c.kind == ci.CursorKind.ENUM_CONSTANT_DECL and c.spelling not in have:
                vals.append((c.spelling, c.enum_value))
                g.extra13.add(c.spelling)


def main():
    tu = parse()
    g = Gen(tu)
    funcs = collect_functions(g)
    bind_header_types(g)
    # The 13.x pass: the functions and ABIs 12.9 lacks, with the types they use. A type
    # 12.9 declares with the same layout is 12.9's; one whose layout differs is declared
    # again from 13.5 in `sys::cuda13` (the 12.x lines keep 12.9's); a new one joins `sys`.
    tu13 = parse(INC13)
    g13 = Gen(tu13)
    declared = set(g.out_typedefs) | set(g.out_handles) | set(g.out_enums) | set(g.out_records)
    g13.divergent = divergent_names(tu, tu13) & declared
    g13.shared = declared - g13.divergent
    funcs13 = collect_functions(g13, have=funcs)
    bind_header_types(g13)
    n12 = len(funcs)
    for base, vers in funcs13.items():
        funcs.setdefault(base, {}).update(vers)
    g.ptds.update(g13.ptds)
    names = list(DEFINE_INTS) + list(DEFINE_PTRS)
    src = (INC12 / "cuda.h").read_text()
    for prefix in DEFINE_FLAGS.values():
        names += [n for n in re.findall(r"^#define (\w+)\s", src, re.M) if n.startswith(prefix)]
    defines = c_define_values(list(dict.fromkeys(names)))
    extra = emit_messages(g)
    enum_values_13(g, g13)
    emit(g, g13, funcs, defines)
    emit_manifest(g, g13, defines)
    emit_table(g, funcs)
    n_stubs = emit_softcuda_stubs(g)
    subprocess.run(["rustfmt", "--edition", "2024", str(ROOT / "src/sys/generated.rs"),
                    str(ROOT / "src/sys/manifest.rs"), str(ROOT / "src/table/list.rs"),
                    str(ROOT / "src/error/messages.rs"), str(ROOT / "softcuda/src/result_codes.rs"),
                    str(ROOT / "softcuda/src/abi_versions.rs")], check=True)
    n_lines = sum(len(v) for v in funcs.values())
    print(f"{n12} functions of 12.9 and {len(funcs) - n12} of 13.x only; "
          f"{sum(len(v) for v in funcs13.values())} lines of 13.x ABIs; "
          f"13.x types: {len(g13.out_records)} records ({sum(in_mod13(g13, n) for n in g13.out_records)} in sys::cuda13), "
          f"{len(g13.out_enums)} enums, {len(g13.out_handles)} handles")
    print(f"{len(funcs)} functions, {n_lines} table lines, {len(g.out_records)} records, "
          f"{len(g.out_enums)} enums, {len(g.out_handles)} handles, {n_stubs} softcuda stubs; "
          f"13.x-only codes: {[e[0] for e in extra]}")


if __name__ == "__main__":
    main()

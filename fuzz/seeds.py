#!/usr/bin/env python3
"""Writes the committed seed corpus of the fuzz targets (fuzz/corpus/<target>/) from
the repository's own inputs: kernels/*.ptx, the cubins in src/module/testdata, fatbins
wrapping them, and ptxas/nvlink log lines. Run from the repository root; the output
is deterministic, so a rerun changes nothing unless the inputs changed."""
import pathlib, re, struct

root = pathlib.Path(__file__).resolve().parent.parent
corpus = root / "fuzz" / "corpus"


def put(target, name, data):
    d = corpus / target
    d.mkdir(parents=True, exist_ok=True)
    (d / name).write_bytes(data if isinstance(data, bytes) else data.encode())


ptx_files = sorted((root / "kernels").glob("*.ptx"))
for p in ptx_files:
    text = p.read_text()
    m = re.search(r"\.entry\s+([A-Za-z0-9_$%]+)", text)
    name = m.group(1) if m else "k"
    # ptx_params: the entry's name on the first line, then the PTX.
    put("ptx_params", p.stem, f"{name}\n{text}")
    # softcuda_ptx: an options byte (sm_90, verbose), then the PTX.
    put("softcuda_ptx", p.stem, b"\x0b" + text.encode())
    if p.stem in ("empty", "vector_add"):  # PTX is only sniffed: two suffice
        put("image_kind", p.stem + ".ptx", text)


def linked_image(units):
    out = "//softcuda-linked-image 1\n"
    for name, text in units:
        out += f"//unit {len(name)} {len(text)}\n{name}{text}\n"
    return out


link = [(f"{n}.ptx", (root / "kernels" / f"{n}.ptx").read_text()) for n in ("link_a", "link_b")]
put("softcuda_ptx", "linked_image", b"\x03" + linked_image(link).encode())


def fatbin(kind, payload):
    entry = struct.pack("<HHIQ", kind, 0, 64, len(payload)) + bytes(48) + payload
    return struct.pack("<IHHQ", 0xBA55ED50, 1, 16, len(entry)) + entry


for c in sorted((root / "src" / "module" / "testdata").glob("*.cubin")):
    data = c.read_bytes()
    put("image_kind", c.name, data)
    put("image_kind", c.stem + ".fatbin", fatbin(2, data))
put("image_kind", "ptx_in.fatbin", fatbin(1, (root / "kernels" / "empty.ptx").read_bytes()))

logs = {
    "error": "ptxas application ptx input, line 6; error   : Unknown instruction 'frob'\n"
    "ptxas fatal   : Ptx assembly aborted due to errors\n",
    "info": "ptxas info    : 0 bytes gmem\nptxas info    : Compiling entry function 'k' for 'sm_90'\n"
    "ptxas info    : Function properties for k\n    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n"
    "ptxas info    : Used 8 registers, 380 bytes cmem[0]\n",
    "warning": "ptxas /tmp/k.ptx, line 12; warning : Unresolved extern function 'f'\n",
    "nvlink": "nvlink error   : Undefined reference to 'helper' in 'link_a.ptx'\n"
    "nvlink info    : 0 bytes gmem\n",
    "mixed": "\n  continued\nptxas ; : \nptxas x, line 99999999999999999999; error :\n",
}
for name, text in logs.items():
    put("jit_log", name, text)

# A libFuzzer dictionary of PTX tokens (directives, opcodes with their modifiers,
# registers, punctuation) for the two PTX targets: mutations then splice whole tokens.
tokens = set()
for p in ptx_files:
    for line in p.read_text().splitlines():
        line = line.split("//")[0]
        tokens.update(re.findall(r"\.[A-Za-z_][A-Za-z0-9_]*", line))
        tokens.update(re.findall(r"^\s*(?:@!?%p\d+\s+)?([a-z][a-z0-9_]*(?:\.[a-z0-9_]+)*)", line))
        tokens.update(re.findall(r"%[a-z]+", line))
tokens.update(["{", "}", "(", ")", "[", "]", ";", ",", "+", "<", ">", "//", "/*", "*/", '"'])
tokens.discard("")
(root / "fuzz" / "ptx.dict").write_text(
    "# PTX tokens from kernels/*.ptx (written by fuzz/seeds.py)\n"
    + "".join('"%s"\n' % t.replace("\\", "\\\\").replace('"', '\\"') for t in sorted(tokens))
)

# module_load: every image_kind seed (PTX, cubins, fatbins) — the same inputs, end to
# end through the safe layer and softcuda.
for f in sorted((corpus / "image_kind").iterdir()):
    put("module_load", f.name, f.read_bytes())
put("module_load", "vector_add_in.fatbin", fatbin(1, (root / "kernels" / "vector_add.ptx").read_bytes()))

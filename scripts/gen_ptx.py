#!/usr/bin/env python3
"""Regenerate kernels/*.ptx from kernels/*.cu with NVRTC (PyPI nvidia-cuda-nvrtc-cu12 12.9).

For developers, not for CI: the PTX is committed beside its source.
    python3 scripts/gen_ptx.py [--arch compute_80]
"""
import argparse
import ctypes
import os
import subprocess
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FX = Path(os.environ.get("OXICUDA_FIXTURES", ROOT / ".fixtures"))


def nvrtc():
    lib_dir = FX / "nvrtc"
    libs = list(lib_dir.glob("**/libnvrtc.so.12"))
    if not libs:
        wheel_dir = FX / "wheel-nvrtc"
        subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps",
                        "nvidia-cuda-nvrtc-cu12==12.9.*", "-d", str(wheel_dir)], check=True)
        (whl,) = wheel_dir.glob("*.whl")
        with zipfile.ZipFile(whl) as z:
            z.extractall(lib_dir)
        libs = list(lib_dir.glob("**/libnvrtc.so.12"))
    # libnvrtc loads its builtins library from its own folder.
    for dep in sorted(libs[0].parent.glob("libnvrtc-builtins.so*")):
        ctypes.CDLL(str(dep), mode=ctypes.RTLD_GLOBAL)
    return ctypes.CDLL(str(libs[0]))


def cccl_include():
    """libcu++'s headers (nv/target, cuda/std), which cooperative_groups includes:
    PyPI nvidia-cuda-cccl-cu12 12.9, fetched into .fixtures/cccl like NVRTC."""
    inc = FX / "cccl" / "nvidia" / "cuda_cccl" / "include"
    if not inc.is_dir():
        wheel_dir = FX / "wheel-cccl"
        subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps",
                        "nvidia-cuda-cccl-cu12==12.9.*", "-d", str(wheel_dir)], check=True)
        (whl,) = wheel_dir.glob("*.whl")
        with zipfile.ZipFile(whl) as z:
            z.extractall(FX / "cccl")
    return inc


def cooperative_groups_options():
    """The CUDA 12.9 headers (cooperative_groups) and libcu++; without the fp8/fp16/
    bf16 headers, which the runtime wheel's include folder lacks in part."""
    return [f"-I{FX / 'cuda12' / 'include'}".encode(), f"-I{cccl_include()}".encode(),
            b"-D_CCCL_DISABLE_NVFP8_SUPPORT", b"-DCCCL_DISABLE_FP16_SUPPORT",
            b"-DCCCL_DISABLE_BF16_SUPPORT"]


# Extra options by source. conditional.cu calls the device runtime's
# cudaGraphSetConditional, which NVRTC declares only with relocatable device code
# (it emits an extern .func call; a real driver needs the module linked with cudadevrt).
# link_a.cu and link_b.cu are the two units of a linked program (tests/link.rs): with
# -rdc their cross references stay extern, for cuLink* to resolve. cooperative.cu and
# cluster.cu include cooperative_groups (options computed when used).
EXTRA = {
    "conditional.cu": [b"-rdc=true"],
    "link_a.cu": [b"-rdc=true"],
    "link_b.cu": [b"-rdc=true"],
    "cooperative.cu": cooperative_groups_options,
    "cluster.cu": cooperative_groups_options,
}
# Architecture by source, where the default is too old: clusters need sm_90.
ARCH = {"cluster.cu": "compute_90"}


def compile_one(lib, src: Path, arch: str) -> str:
    prog = ctypes.c_void_p()
    code = src.read_bytes()
    r = lib.nvrtcCreateProgram(ctypes.byref(prog), code, src.name.encode(), 0, None, None)
    assert r == 0, f"nvrtcCreateProgram: {r}"
    extra = EXTRA.get(src.name, [])
    if callable(extra):
        extra = extra()
    arch = ARCH.get(src.name, arch)
    # kernels/include: oxicuda.cuh, the kernel side of the typed launch.
    include = f"-I{ROOT / 'kernels' / 'include'}".encode()
    opts = [f"--gpu-architecture={arch}".encode(), b"--std=c++17", include] + extra
    arr = (ctypes.c_char_p * len(opts))(*opts)
    r = lib.nvrtcCompileProgram(prog, len(opts), arr)
    size = ctypes.c_size_t()
    lib.nvrtcGetProgramLogSize(prog, ctypes.byref(size))
    log = ctypes.create_string_buffer(size.value)
    lib.nvrtcGetProgramLog(prog, log)
    if r != 0:
        sys.exit(f"{src}: nvrtc failed:\n{log.value.decode()}")
    lib.nvrtcGetPTXSize(prog, ctypes.byref(size))
    ptx = ctypes.create_string_buffer(size.value)
    lib.nvrtcGetPTX(prog, ptx)
    lib.nvrtcDestroyProgram(ctypes.byref(prog))
    return ptx.value.decode()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--arch", default="compute_80")
    args = ap.parse_args()
    lib = nvrtc()
    for src in sorted((ROOT / "kernels").glob("*.cu")):
        out = src.with_suffix(".ptx")
        out.write_text(compile_one(lib, src, args.arch))
        print(f"{src.relative_to(ROOT)} -> {out.relative_to(ROOT)}")


if __name__ == "__main__":
    main()

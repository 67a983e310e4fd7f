#!/usr/bin/env bash
# Fetch, once, the two test fixtures into a git-ignored cache folder:
#   - Debian bookworm non-free `libcuda1` (the real NVIDIA 535 driver, CUDA 12.2),
#     unpacked with `dpkg -x` (never installed), and `libnvidia-ml1` (NVML, same
#     release) the same way;
#   - PyPI's `nvidia-cuda-runtime-cu12` 12.9 wheel (include/cuda.h, cudaTypedefs.h)
#     and the 13.x `nvidia-cuda-runtime` wheel (a second header to compare with).
# The cache folder is $OXICUDA_FIXTURES, default `<repo>/.fixtures`. Prints the
# environment the tests read. Safe to re-run: finished steps are skipped.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
fx=${OXICUDA_FIXTURES:-$repo/.fixtures}
mkdir -p "$fx"
cd "$fx"

# --- libcuda1 from Debian non-free, through a private apt configuration --------
apt_setup() { # the private apt configuration, in $apt_opts
  apt_dir="$fx/apt"
  mkdir -p "$apt_dir/lists/partial" "$apt_dir/cache/archives/partial" "$apt_dir/sources.list.d"
  cat > "$apt_dir/sources.list.d/nonfree.sources" <<SRC
Types: deb
URIs: http://deb.debian.org/debian
Suites: bookworm bookworm-updates
Components: main non-free
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SRC
  : > "$apt_dir/sources.list"
  apt_opts=(-o "Dir::Etc::SourceList=$apt_dir/sources.list"
            -o "Dir::Etc::SourceParts=$apt_dir/sources.list.d"
            -o "Dir::State::Lists=$apt_dir/lists"
            -o "Dir::Cache=$apt_dir/cache"
            -o "Debug::NoLocking=1"
            -o "APT::Sandbox::User=$(id -un)")
  apt-get "${apt_opts[@]}" update -qq
}
if [ ! -e "$fx/libcuda/usr/lib/x86_64-linux-gnu/nvidia/current/libcuda.so.1" ]; then
  apt_setup
  rm -f libcuda1_*.deb
  apt-get "${apt_opts[@]}" download libcuda1
  rm -rf "$fx/libcuda"
  dpkg -x libcuda1_*.deb "$fx/libcuda"
fi

# --- libnvidia-ml1 (NVML, same 535 release) from Debian non-free, the same way ----
if [ ! -e "$fx/nvml/usr/lib/x86_64-linux-gnu/nvidia/current/libnvidia-ml.so.1" ]; then
  [ -n "${apt_opts+x}" ] || apt_setup
  rm -f libnvidia-ml1_*.deb
  apt-get "${apt_opts[@]}" download libnvidia-ml1
  rm -rf "$fx/nvml"
  dpkg -x libnvidia-ml1_*.deb "$fx/nvml"
fi

# --- cuda.h and cudaTypedefs.h from the CUDA runtime wheels ---------------------
fetch_wheel() { # <pip requirement> <folder>
  local req=$1 dest=$2
  [ -e "$fx/$dest/include/cuda.h" ] && return 0
  rm -rf "$fx/wheel-$dest" "$fx/$dest"
  python3 -m pip download -q --no-deps "$req" -d "$fx/wheel-$dest"
  mkdir -p "$fx/$dest"
  python3 - "$fx/wheel-$dest" "$fx/$dest" <<'PY'
import sys, zipfile, pathlib
src, dest = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2])
(whl,) = src.glob("*.whl")
with zipfile.ZipFile(whl) as z:
    for name in z.namelist():
        if "/include/" in name and name.endswith(".h"):
            out = dest / "include" / name.split("/include/", 1)[1]
            out.parent.mkdir(parents=True, exist_ok=True)
            out.write_bytes(z.read(name))
PY
}
fetch_wheel 'nvidia-cuda-runtime-cu12==12.9.*' cuda12
fetch_wheel 'nvidia-cuda-runtime==13.*' cuda13

cat <<ENV
OXICUDA_REAL_DRIVER=$fx/libcuda/usr/lib/x86_64-linux-gnu/nvidia/current/libcuda.so.1
OXICUDA_REAL_NVML=$fx/nvml/usr/lib/x86_64-linux-gnu/nvidia/current/libnvidia-ml.so.1
OXICUDA_CUDA_INCLUDE=$fx/cuda12/include
OXICUDA_CUDA13_INCLUDE=$fx/cuda13/include
ENV

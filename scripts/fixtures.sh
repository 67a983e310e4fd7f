#!/usr/bin/env bash
# Fetch, once, the two test fixtures into a git-ignored cache folder:
#   - Debian bookworm non-free `libcuda1` (the real NVIDIA 535 driver, CUDA 12.2),
#     unpacked with `dpkg -x` (never installed), and `libnvidia-ml1` (NVML, same
#     release) the same way;
#   - the `libcuda.so.1` and `libnvidia-ml.so.1` of every other driver branch Debian
#     ships (390, 418, 450, 470, 550, 555: tests/driver_matrix.rs), only the
#     libraries kept (with the `libnvidia-fatbinaryloader` 390 and 418 link);
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
# The Debian archive: $OXICUDA_APT_ARCHIVE, else the first Debian archive (not the
# security one) in this machine's own apt configuration.
apt_archive() {
  if [ -n "${OXICUDA_APT_ARCHIVE:-}" ]; then echo "$OXICUDA_APT_ARCHIVE"; return; fi
  python3 - <<'PY'
import glob, re, sys
uris = []
for f in sorted(glob.glob("/etc/apt/sources.list.d/*.sources")):
    for line in open(f, encoding="utf-8", errors="replace"):
        m = re.match(r"\s*URIs:\s*(.+)", line)
        if m:
            uris += m.group(1).split()
for f in ["/etc/apt/sources.list"] + sorted(glob.glob("/etc/apt/sources.list.d/*.list")):
    try:
        for line in open(f, encoding="utf-8", errors="replace"):
            m = re.match(r"\s*deb\s+(?:\[[^]]*\]\s+)?(\S+)", line)
            if m:
                uris.append(m.group(1))
    except OSError:
        pass
for u in uris:
    if re.search(r"/debian/?$", u):
        print(u.rstrip("/"))
        sys.exit(0)
sys.exit("fixtures.sh: no Debian archive in /etc/apt; set OXICUDA_APT_ARCHIVE")
PY
}

apt_setup() { # the private apt configuration, in $apt_opts
  apt_dir="$fx/apt"
  mkdir -p "$apt_dir/lists/partial" "$apt_dir/cache/archives/partial" "$apt_dir/sources.list.d"
  cat > "$apt_dir/sources.list.d/nonfree.sources" <<SRC
Types: deb
URIs: $(apt_archive)
Suites: bullseye bookworm bookworm-updates trixie sid experimental
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
  apt-get "${apt_opts[@]}" download libcuda1/bookworm
  rm -rf "$fx/libcuda"
  dpkg -x libcuda1_*.deb "$fx/libcuda"
fi

# --- libnvidia-ml1 (NVML, same 535 release) from Debian non-free, the same way ----
if [ ! -e "$fx/nvml/usr/lib/x86_64-linux-gnu/nvidia/current/libnvidia-ml.so.1" ]; then
  [ -n "${apt_opts+x}" ] || apt_setup
  rm -f libnvidia-ml1_*.deb
  apt-get "${apt_opts[@]}" download libnvidia-ml1/bookworm
  rm -rf "$fx/nvml"
  dpkg -x libnvidia-ml1_*.deb "$fx/nvml"
fi

# --- the other driver branches: libcuda.so.1 alone, in drivers/<branch>/ -------------
fetch_branch() { # <branch> <cuda package/suite> <nvml package/suite> [<fatbinaryloader package/suite>]
  local branch=$1 pkg=$2 nvml=$3 loader=${4:-}
  [ -e "$fx/drivers/$branch/libnvidia-ml.so.1" ] && return 0
  [ -n "${apt_opts+x}" ] || apt_setup
  local tmp="$fx/drivers/tmp-$branch"
  rm -rf "$tmp" "$fx/drivers/$branch"
  mkdir -p "$tmp/x" "$fx/drivers/$branch"
  (cd "$tmp" && apt-get "${apt_opts[@]}" download "$pkg" "$nvml" ${loader:+"$loader"})
  for deb in "$tmp"/*.deb; do dpkg -x "$deb" "$tmp/x"; done
  cp -L "$(find "$tmp/x" -name libcuda.so.1 | head -n1)" "$fx/drivers/$branch/"
  cp -L "$(find "$tmp/x" -name libnvidia-ml.so.1 | head -n1)" "$fx/drivers/$branch/"
  if [ -n "$loader" ]; then
    cp -L "$tmp"/x/usr/lib/x86_64-linux-gnu/libnvidia-fatbinaryloader.so.* "$fx/drivers/$branch/"
  fi
  rm -rf "$tmp"
}
fetch_branch 390 libnvidia-legacy-390xx-cuda1/bullseye libnvidia-legacy-390xx-ml1/bullseye \
  libnvidia-legacy-390xx-fatbinaryloader/bullseye
fetch_branch 418 libnvidia-tesla-418-cuda1/bullseye libnvidia-tesla-418-ml1/bullseye \
  libnvidia-tesla-418-fatbinaryloader/bullseye
fetch_branch 450 libnvidia-tesla-450-cuda1/bullseye libnvidia-tesla-450-ml1/bullseye
fetch_branch 470 libnvidia-tesla-470-cuda1/bookworm libnvidia-tesla-470-ml1/bookworm
fetch_branch 550 libcuda1/trixie libnvidia-ml1/trixie
fetch_branch 555 libcuda1/experimental libnvidia-ml1/experimental

# The package lists are only needed to download: drop them (about 100 MiB).
rm -rf "$fx/apt"

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

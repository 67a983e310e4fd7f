#!/usr/bin/env bash
# Cold release build of the library vs cudarc 0.19's driver module, side by side,
# alternating, N rounds (default 3). Prints each time, the medians, and whether the
# library's median is under the bar: a cold build under 30 s (BUILD_BAR_S). The ratio
# to cudarc is printed for information.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
rounds=${1:-3}
work=$(mktemp -d)
mkdir -p "$work/ours" "$work/cudarc/src"
cp -r "$repo/Cargo.toml" "$repo/Cargo.lock" "$repo/src" "$work/ours/"
# The build under test is the library alone, default features: drop benches,
# dev-dependencies, the workspace and the optional software driver.
python3 - "$work/ours/Cargo.toml" <<'PY'
import sys
p = sys.argv[1]; out = []; skip = False
for line in open(p).read().splitlines():
    if line.startswith("["):
        skip = line.strip() in ("[dev-dependencies]", "[[bench]]", "[workspace]")
    # The optional software driver is not part of the library's default build.
    if line.startswith("soft ="):
        line = "soft = []"
    if not skip and not line.startswith("softcuda ="):
        out.append(line)
open(p, "w").write("\n".join(out) + "\n")
PY
cat > "$work/cudarc/Cargo.toml" <<'TOML'
[package]
name = "cudarc_probe"
version = "0.1.0"
edition = "2021"
[dependencies]
cudarc = { version = "0.19", default-features = false, features = ["driver", "cuda-12020", "dynamic-loading"] }
TOML
: > "$work/cudarc/src/lib.rs"
(cd "$work/ours" && cargo fetch -q) && (cd "$work/cudarc" && cargo fetch -q)
t() { (cd "$1" && cargo clean -q && s=$(date +%s.%N) && cargo build --release -q --lib && e=$(date +%s.%N) && echo "$e - $s" | bc); }
ours=(); theirs=()
for i in $(seq "$rounds"); do
  ours+=("$(t "$work/ours")"); theirs+=("$(t "$work/cudarc")")
  echo "round $i: oxicuda-driver ${ours[-1]} s, cudarc ${theirs[-1]} s"
done
median() { printf '%s\n' "$@" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
mo=$(median "${ours[@]}"); mt=$(median "${theirs[@]}")
echo "median: oxicuda-driver $mo s, cudarc $mt s, ratio $(echo "scale=2; $mo / $mt" | bc)"
bar=${BUILD_BAR_S:-30}
if [ "$(echo "$mo < $bar" | bc)" = 1 ]; then
  echo "bar: cold build $mo s < $bar s: met"
else
  echo "bar: cold build $mo s >= $bar s: missed"
fi
rm -rf "$work"

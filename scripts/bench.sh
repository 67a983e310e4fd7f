#!/usr/bin/env bash
# Every benchmark of issue 12, side by side, then docs/bench/results.md (medians and
# ratios) and docs/bench/results.svg (chart), from what this run measured:
#   1. benches/vs_cudarc.rs twice: on softcuda, and on the zero-cost stub
#      (benches/stub/zero_driver.c, built here with gcc) — ours vs raw vs cudarc 0.19,
#      one driver per process: OXICUDA_DRIVER_PATH for ours, a folder holding
#      libcuda.so{,.1} -> the same file on LD_LIBRARY_PATH for cudarc;
#   2. benches/callgrind.rs under valgrind --tool=callgrind on the stub: instructions
#      per call;
#   3. benches/init.rs against the real 535 fixture (scripts/fixtures.sh);
#   4. benches/throughput.rs: softcuda thread-instructions per second;
#   5. scripts/build_time.sh: cold release build vs cudarc's (BENCH_BUILD_ROUNDS, 3;
#      0 skips it and keeps the figure docs/bench/results.md already has).
# BENCH_QUICK=1: shorter criterion runs (noisier). Needs gcc, valgrind, python3.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo"
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$repo/target}
T=$CARGO_TARGET_DIR
if [ -n "${BENCH_QUICK:-}" ]; then
  crit=(--warm-up-time 0.5 --measurement-time 2 --noplot)
else
  crit=(--warm-up-time 1 --measurement-time 4 --noplot)
fi
for tool in gcc valgrind callgrind_annotate python3; do
  command -v "$tool" >/dev/null || { echo "bench.sh: $tool is missing" >&2; exit 1; }
done
[ -e .fixtures/libcuda/usr/lib/x86_64-linux-gnu/nvidia/current/libcuda.so.1 ] ||
  bash scripts/fixtures.sh

echo "== build"
cargo build --release --locked -p softcuda --lib --quiet
cargo bench --locked --no-run --quiet 2>/dev/null
so="$T/release/libsoftcuda.so"
[ -f "$so" ] || { echo "bench.sh: $so was not built" >&2; exit 1; }
drv="$T/bench-drivers"
rm -rf "$drv" "$T/criterion"
mkdir -p "$drv/soft" "$drv/stub"
ln -s "$so" "$drv/soft/libcuda.so"
ln -s "$so" "$drv/soft/libcuda.so.1"
gcc -O2 -shared -fPIC -o "$drv/stub/libzero_driver.so" benches/stub/zero_driver.c \
  -DSOFTCUDA_PATH="\"$so\"" -Wl,--no-as-needed "$so" -Wl,-rpath,"$T/release" -ldl
ln -s libzero_driver.so "$drv/stub/libcuda.so"
ln -s libzero_driver.so "$drv/stub/libcuda.so.1"

for d in soft stub; do
  echo "== vs_cudarc on $d"
  lib="$drv/$d/libcuda.so.1"
  BENCH_DRIVER=$d OXICUDA_DRIVER_PATH="$lib" LD_LIBRARY_PATH="$drv/$d" \
    cargo bench --locked --quiet --bench vs_cudarc -- "${crit[@]}" 2>&1 | grep -E '^[a-z].*time:|^ +time:' || true
done

echo "== callgrind on the stub"
exe=$(cargo bench --locked --no-run --bench callgrind 2>&1 | sed -n 's/.*Executable.*(\(.*\)).*/\1/p' | tail -n1)
CG_N=10000 OXICUDA_DRIVER_PATH="$drv/stub/libcuda.so.1" LD_LIBRARY_PATH="$drv/stub" \
  valgrind --tool=callgrind --callgrind-out-file="$T/bench-callgrind.out" \
  --toggle-collect='cg_*' "$exe" 2>"$T/bench-callgrind.log"
callgrind_annotate --inclusive=yes --threshold=100 "$T/bench-callgrind.out" \
  >"$T/bench-callgrind.txt" 2>/dev/null

echo "== init (535 fixture) and softcuda throughput"
cargo bench --locked --quiet --bench init -- "${crit[@]}" 2>&1 | grep -E 'time:' || true
cargo bench --locked --quiet --bench throughput -- "${crit[@]}" 2>&1 | grep -E 'time:|thrpt:' || true

rounds=${BENCH_BUILD_ROUNDS:-3}
: >"$T/bench-build-time.txt"
if [ "$rounds" -gt 0 ]; then
  echo "== cold build, $rounds rounds"
  (unset CARGO_TARGET_DIR; bash scripts/build_time.sh "$rounds") | tee "$T/bench-build-time.txt"
fi

echo "== report"
python3 scripts/bench_report.py "$T" docs/bench
echo "wrote docs/bench/results.md and docs/bench/results.svg"

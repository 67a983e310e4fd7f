#!/usr/bin/env bash
# Fuzzing: each cargo-fuzz target in fuzz/ for N seconds (default 60), from the
# committed seed corpus (fuzz/corpus/<target>/), with AddressSanitizer, debug
# assertions and overflow checks. Fails on any crash, panic, sanitizer report,
# timeout or out-of-memory; the input that caused it is kept under
# fuzz/artifacts/<target>/ (reproduce: cargo fuzz run -O -a <target> <file>).
#
#   bash scripts/fuzz.sh [seconds] [target...]
#
# Needs cargo-fuzz (`cargo install cargo-fuzz --locked`). cargo-fuzz needs nightly
# flags; on a stable toolchain RUSTC_BOOTSTRAP=1 enables them for this build only.
# Prints per target the figure line that docs/reliability.md quotes:
#   reliability: fuzz target=<t> seconds=<s> executions=<n> crashes=<c>
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo"
seconds=${1:-60}
shift || true
targets=("$@")
[ ${#targets[@]} -eq 0 ] && targets=(ptx_params jit_log image_kind softcuda_ptx module_load)

command -v cargo-fuzz >/dev/null || { echo "fuzz: cargo-fuzz is not installed (cargo install cargo-fuzz --locked)" >&2; exit 2; }
export RUSTC_BOOTSTRAP=1
# Its own target directory: the sanitizer flags would otherwise rebuild (and evict)
# the main build's artifacts.
export CARGO_TARGET_DIR=${FUZZ_TARGET_DIR:-$repo/fuzz/target}
flags=(-O -a)

echo "== fuzz: clippy of the targets (own target dir: other flags than the fuzz build)"
(cd fuzz && RUSTFLAGS="--cfg fuzzing" CARGO_TARGET_DIR="$CARGO_TARGET_DIR/clippy" \
  cargo clippy --all-targets --quiet -- -D warnings)

echo "== fuzz: building the targets"
cargo fuzz build "${flags[@]}" 2>&1 | tail -3

crashed=()
for t in "${targets[@]}"; do
  # The seeds stay as committed: what a run adds goes to a working corpus.
  work=$CARGO_TARGET_DIR/corpus/$t
  mkdir -p "$work"
  log=$CARGO_TARGET_DIR/fuzz-$t.log
  # The targets that read PTX splice whole PTX tokens (fuzz/ptx.dict, from kernels/*.ptx).
  dict=()
  case $t in ptx_params | softcuda_ptx | module_load) dict=(-dict=fuzz/ptx.dict) ;; esac
  rc=0
  cargo fuzz run "${flags[@]}" "$t" "$work" "fuzz/corpus/$t" -- \
    -max_total_time="$seconds" -timeout=20 -rss_limit_mb=3072 -print_final_stats=1 \
    "${dict[@]}" >"$log" 2>&1 || rc=$?
  execs=$(sed -n 's/^stat::number_of_executed_units: *\([0-9]*\)/\1/p' "$log" | tail -1)
  crashes=0
  if [ "$rc" -ne 0 ]; then
    crashes=1
    crashed+=("$t")
    echo "---- fuzz target $t failed (rc=$rc); the end of its log ($log):"
    tail -60 "$log"
  fi
  echo "reliability: fuzz target=$t seconds=$seconds executions=${execs:-0} crashes=$crashes corpus=$(find "$work" -type f | wc -l)"
done
if [ ${#crashed[@]} -gt 0 ]; then
  echo "fuzz FAILED: ${crashed[*]} (inputs under fuzz/artifacts/)" >&2
  exit 1
fi

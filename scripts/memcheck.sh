#!/usr/bin/env bash
# Memcheck: integration suites of the crate and of softcuda under
# `valgrind --tool=memcheck`, each test binary with its tests run one at a time.
# Fails on any memcheck error — an invalid read or write, a use of uninitialised
# memory, a bad free — and on any definitely-lost block, except the deliberate,
# documented leaks of test code listed (and explained) in scripts/valgrind.supp.
#
#   bash scripts/memcheck.sh              # the suites below
#   MEMCHECK_SUITES="graph pool" MEMCHECK_SOFTCUDA_SUITES="" bash scripts/memcheck.sh
#
# Prints one line per binary and, last, the figure line that docs/reliability.md
# quotes:  reliability: memcheck binaries=N tests=M errors=E definitely_lost=B ...
# Logs: $CARGO_TARGET_DIR (or target/)/memcheck/<suite>.{vg,out}.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo"

# The suites: every integration suite that runs in-process on softcuda, chosen for
# what they exercise — contexts, memory, streams and host callbacks, soundness
# refusals, graphs, pools, managed memory, linking, libraries, tensor maps, extended
# launch, peer work, topology, the debugging tools, faults in the middle of a
# construction and recovery after one, and softcuda's own C-ABI suites (sticky
# errors, stream workers, peer access). Left out: suites that spawn other processes
# or compilers for most of their time (examples, abi, loader, environment,
# libsoftcuda, real_driver, nvml), compile_fail, the fault sweep, the device pool and
# the stress suite (many threads or thousands of cases: minutes under valgrind;
# they have their own leak checks through softcuda's live-object counts).
crate_suites=${MEMCHECK_SUITES-"context safe_layer memory soundness graph pool managed link library tensor_map launch_ex softcuda softcuda_kernels peer topology debug_tools fault_midway fault_recovery vmm external green ipc textures"}
softcuda_suites=${MEMCHECK_SOFTCUDA_SUITES-"driver soundness sticky_errors graph pool link library tensor_map launch_ex launch_limits c_program ptx_kernels peer_access vmm green_context ipc arrays array_copies textures surfaces"}

command -v valgrind >/dev/null || { echo "memcheck: valgrind is not installed" >&2; exit 2; }

target_dir=${CARGO_TARGET_DIR:-$repo/target}
logs=$target_dir/memcheck
mkdir -p "$logs"

# Builds the suites of package $1 and prints "<suite> <executable>" per binary.
build() {
  local pkg=$1; shift
  local args=()
  for s in "$@"; do args+=(--test "$s"); done
  [ ${#args[@]} -eq 0 ] && return 0
  cargo test --locked --quiet -p "$pkg" --no-run --message-format=json "${args[@]}" |
    python3 -c '
import json, sys
for line in sys.stdin:
    try:
        m = json.loads(line)
    except ValueError:
        continue
    if m.get("reason") == "compiler-artifact" and m.get("executable") and m["target"]["kind"] == ["test"]:
        print(m["target"]["name"], m["executable"])
'
}

binaries=0 tests=0 errors=0 lost=0 suppressed=0 failed=()
start=$(date +%s)
# Runs one binary under memcheck from directory $3 (its package's root, as cargo
# test does) and adds its figures to the totals.
run() {
  local label=$1 exe=$2 dir=$3
  local vg=$logs/$label.vg out=$logs/$label.out t0 rc=0
  t0=$(date +%s)
  (cd "$dir" && valgrind --tool=memcheck --error-exitcode=1 \
      --errors-for-leak-kinds=definite --leak-check=full \
      --suppressions="$repo/scripts/valgrind.supp" --num-callers=40 --keep-debuginfo=yes \
      --log-file="$vg" "$exe" --test-threads=1 "${@:4}" >"$out" 2>&1) || rc=$?
  local n e b s
  n=$(sed -n 's/^test result: [a-zA-Z]*\. \([0-9]*\) passed.*/\1/p' "$out" | tail -1)
  e=$(sed -n 's/.*ERROR SUMMARY: \([0-9,]*\) errors.*/\1/p' "$vg" | tail -1 | tr -d ,)
  b=$(sed -n 's/.*definitely lost: \([0-9,]*\) bytes.*/\1/p' "$vg" | tail -1 | tr -d ,)
  s=$(sed -n 's/.*(suppressed: \([0-9,]*\) from.*/\1/p' "$vg" | tail -1 | tr -d ,)
  n=${n:-0} e=${e:-0} b=${b:-0} s=${s:-0}
  binaries=$((binaries + 1)) tests=$((tests + n)) errors=$((errors + e))
  lost=$((lost + b)) suppressed=$((suppressed + s))
  echo "memcheck $label: tests=$n errors=$e definitely_lost=$b suppressed=$s rc=$rc seconds=$(($(date +%s) - t0))"
  if [ "$rc" -ne 0 ] || [ "$e" -ne 0 ] || [ "$b" -ne 0 ]; then
    failed+=("$label")
    echo "---- $vg (errors and leaks):"
    grep -E -A30 'Invalid|uninitialised|Mismatched|definitely lost in' "$vg" | head -120 || true
    echo "---- $out (last lines):"
    tail -20 "$out"
  fi
}

echo "== memcheck: building the suites"
# shellcheck disable=SC2086
crate_bins=$(build oxicuda-driver $crate_suites)
# shellcheck disable=SC2086
softcuda_bins=$(build softcuda $softcuda_suites)
while read -r name exe; do
  [ -n "$name" ] && run "$name" "$exe" "$repo"
done <<<"$crate_bins"
while read -r name exe; do
  # ptx_kernels' speed test (1M-element vector add, 100 000 launches) measures the
  # interpreter's speed, not its memory use: hours under valgrind.
  [ -n "$name" ] && run "softcuda-$name" "$exe" "$repo/softcuda" --skip empty_kernel_and_vector_add_speed
done <<<"$softcuda_bins"

echo "reliability: memcheck binaries=$binaries tests=$tests errors=$errors definitely_lost=$lost suppressed_deliberate=$suppressed seconds=$(($(date +%s) - start))"
if [ ${#failed[@]} -gt 0 ]; then
  echo "memcheck FAILED: ${failed[*]} (logs in $logs)" >&2
  exit 1
fi

#!/usr/bin/env bash
# The real-GPU check: the integration suite (`--features gpu-tests`), every example,
# the launch-overhead benchmark and compute-sanitizer, against the system driver, with
# a summary of each step and its figures.
#
#   bash scripts/gpu-check.sh --prepare [BUNDLE]   here: build the release binaries
#                                                  into BUNDLE (default target/gpu-check)
#   bash scripts/gpu-check.sh --run [BUNDLE]       on the GPU machine: run only what
#                                                  BUNDLE holds, plus the machine's tools
#   GPU_CHECK_DRIVER=soft bash scripts/gpu-check.sh  dry mode (CI): prepare, then run
#                                                  the bundle on softcuda's libsoftcuda.so
#
# The run step needs no Rust toolchain, no network and no Python: bash, coreutils, awk,
# gzip (the binaries travel compressed, to fit the device machine's 64 MiB carry).
# Each test runs in its own process (a GPU fault can end a process's use of CUDA).
# GPU_CHECK_SUMMARY names the summary file (default BUNDLE/summary.md). Time budget
# on an H200: about 3 minutes; every step has its own timeout and the run stops
# starting steps after GPU_CHECK_BUDGET seconds (default 420). Exit status 0 only if
# every step passed.
set -uo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
mode=all
case "${1:-}" in
--prepare) mode=prepare; shift ;;
--run) mode=run; shift ;;
esac
bundle="${1:-$root/target/gpu-check}"
driver="${GPU_CHECK_DRIVER:-system}"
case "$driver" in system | soft) ;; *) echo "GPU_CHECK_DRIVER is system or soft, not '$driver'" >&2; exit 2 ;; esac

# The test binaries of the GPU suite and the examples; the benchmark is `launch`.
SUITES=(context safe_layer memory soundness graph softcuda_kernels libsoftcuda launch_ex pool managed link library tensor_map vmm external green ipc textures)
EXAMPLES=(device_info vector_add jit_log streams_events graph_capture cluster_launch cooperative_reduce managed_memory multi_gpu topology growable_vector external_memory green_contexts ipc textures)

die() { echo "gpu-check: $*" >&2; exit 1; }

prepare() {
    cd "$root" || die "no repository at $root"
    local json
    json="$(mktemp)"
    echo "== prepare: release build of the GPU suite, the examples and the launch benchmark"
    local tests=()
    for t in "${SUITES[@]}"; do tests+=(--test "$t"); done
    # softcuda (linked into every binary, used only by the dry mode) optimised for
    # size, so that the bundle fits the device machine's 64 MiB carry.
    local small=(--config 'profile.release.package.softcuda.opt-level="s"')
    cargo "${small[@]}" test --release --locked --features gpu-tests --no-run --message-format=json \
        "${tests[@]}" >"$json" || die "the GPU suite did not build"
    cargo "${small[@]}" build --release --locked --examples --quiet || die "the examples did not build"
    cargo "${small[@]}" bench --locked --bench launch --no-run --message-format=json >>"$json" ||
        die "the launch benchmark did not build"
    rm -rf "$bundle"
    mkdir -p "$bundle/tests" "$bundle/examples" "$bundle/bench" "$bundle/lib" "$bundle/kernels" ||
        die "cannot make $bundle"
    # Executables named by cargo: "name" of the target, then its "executable".
    grep '"executable":"/' "$json" |
        sed -E 's/.*"target":\{[^}]*"name":"([^"]+)".*"executable":"([^"]+)".*/\1 \2/' |
        while read -r name exe; do
            case " ${SUITES[*]} " in *" $name "*) cp "$exe" "$bundle/tests/$name" ;; esac
            [ "$name" = launch ] && cp "$exe" "$bundle/bench/launch"
        done
    rm -f "$json"
    for e in "${EXAMPLES[@]}"; do
        cp "target/release/examples/$e" "$bundle/examples/$e" || die "no example $e"
    done
    # softcuda as a library: the second driver of the soundness tests (found beside the
    # test binaries), and a separate copy that the dry mode loads as "the" driver.
    local so
    so="$(ls -t target/release/deps/libsoftcuda.so target/release/libsoftcuda.so 2>/dev/null | head -n1)"
    [ -n "$so" ] || die "libsoftcuda.so was not built"
    cp "$so" "$bundle/tests/libsoftcuda.so" && cp "$so" "$bundle/lib/libsoftcuda.so" &&
        cp kernels/*.ptx "$bundle/kernels/" || die "cannot fill $bundle"
    # Symbols out (the bundle must stay within the device machine's 64 MiB carry):
    # executables lose their symbol tables (a panic's backtrace shows addresses), the
    # shared library keeps what dlopen needs.
    local f
    for f in "$bundle"/tests/* "$bundle"/examples/* "$bundle"/bench/* "$bundle"/lib/*; do
        case $f in
            *.so) strip --strip-unneeded "$f" 2>/dev/null || true ;;
            *) strip --strip-all "$f" 2>/dev/null || true ;;
        esac
    done
    for t in "${SUITES[@]}"; do [ -x "$bundle/tests/$t" ] || die "missing test binary: $t"; done
    [ -x "$bundle/bench/launch" ] || die "missing benchmark binary"
    git -C "$root" rev-parse --short HEAD >"$bundle/commit" 2>/dev/null || echo unknown >"$bundle/commit"
    # Compressed for the carry (about a third of the size); the run step unpacks them.
    gzip -9n "$bundle"/tests/* "$bundle"/examples/* "$bundle"/bench/* "$bundle"/lib/* ||
        die "cannot compress $bundle"
    local size
    size=$(du -sm "$bundle" | cut -f1)
    echo "bundle: $bundle, ${size} MiB"
    [ "$size" -le 64 ] || die "the bundle is over 64 MiB"
}

run() {
    bundle="$(cd "$bundle" && pwd)"
    # The binaries travel compressed (see prepare).
    if compgen -G "$bundle/*/*.gz" >/dev/null; then
        command -v gunzip >/dev/null || die "gunzip is needed to unpack $bundle"
        gunzip -f "$bundle"/*/*.gz || die "cannot unpack $bundle"
    fi
    local summary="${GPU_CHECK_SUMMARY:-$bundle/summary.md}"
    local budget="${GPU_CHECK_BUDGET:-420}"
    local log="$bundle/logs"
    rm -rf "$log" && mkdir -p "$log"
    local start=$SECONDS failed=0
    export OXICUDA_KERNELS="$bundle/kernels" CRITERION_HOME="$bundle/criterion"
    unset OXICUDA_DRIVER OXICUDA_DRIVER_PATH
    if [ "$driver" = soft ]; then
        export OXICUDA_DRIVER_PATH="$bundle/lib/libsoftcuda.so"
    else
        export OXICUDA_DRIVER=system
    fi
    rows=()
    row() { rows+=("| $1 | $2 | $3 |"); echo "-- $1: $2 $3"; [ "$2" = PASS ] || [ "$2" = SKIP ] || failed=1; }
    over_budget() { [ $((SECONDS - start)) -ge "$budget" ]; }

    echo "== machine"
    local gpu="none reported"
    if command -v nvidia-smi >/dev/null; then
        gpu="$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -n1)"
    fi
    [ "$driver" = soft ] && gpu="softcuda (dry mode: $OXICUDA_DRIVER_PATH)"
    echo "$gpu"

    echo "== the GPU suite, one process per test"
    local t name passed total
    for t in "${SUITES[@]}"; do
        passed=0 total=0
        local fails=()
        while IFS= read -r name; do
            over_budget && { fails+=("$name (not run: over budget)"); total=$((total + 1)); continue; }
            total=$((total + 1))
            if (cd "$bundle/tests" && timeout 120 "./$t" --exact "$name" --test-threads=1 --nocapture) \
                >>"$log/$t.log" 2>&1; then
                passed=$((passed + 1))
            else
                fails+=("$name")
            fi
        done < <("$bundle/tests/$t" --list --format terse 2>/dev/null | sed -n 's/: test$//p')
        if [ "$total" -eq 0 ]; then
            row "tests/$t" FAIL "no test listed"
        elif [ "${#fails[@]}" -eq 0 ]; then
            row "tests/$t" PASS "$passed/$total"
        else
            row "tests/$t" FAIL "$passed/$total; failed: ${fails[*]}"
        fi
    done
    # What the suite could not exercise on this machine (e.g. one GPU: no peer).
    local note
    while IFS= read -r note; do
        row "suite note" SKIP "${note#gpu-suite note: }"
    done < <(cat "$log"/*.log 2>/dev/null | grep -o 'gpu-suite note: .*' | sort -u)

    echo "== examples"
    local e rc
    for e in "${EXAMPLES[@]}"; do
        over_budget && { row "example $e" FAIL "not run: over budget"; continue; }
        timeout 120 "$bundle/examples/$e" >"$log/example-$e.log" 2>&1
        rc=$?
        if [ $rc -eq 0 ] && ! grep -q "Running on softcuda" "$log/example-$e.log"; then
            row "example $e" PASS ""
        else
            row "example $e" FAIL "exit $rc: $(tail -n1 "$log/example-$e.log")"
        fi
    done

    echo "== launch overhead (typed vs raw cuLaunchKernel, a kernel on empty views)"
    if over_budget; then
        row "bench launch" FAIL "not run: over budget"
    elif (cd "$bundle" && timeout 180 ./bench/launch --bench launch_3_slices \
        --warm-up-time 1 --measurement-time 4 --noplot) >"$log/bench.log" 2>&1; then
        median() {
            sed -E 's/.*"median":\{"confidence_interval":\{[^}]*\},"point_estimate":([0-9.eE+-]+).*/\1/' \
                "$CRITERION_HOME/launch_3_slices/$1/new/estimates.json"
        }
        local typed raw
        typed=$(median typed) raw=$(median raw)
        figures=$(awk -v t="$typed" -v r="$raw" 'BEGIN { printf "typed %.1f ns, raw %.1f ns, overhead %.1f ns, ratio %.3f", t, r, t - r, t / r }')
        local over
        over=$(awk -v t="$typed" -v r="$raw" 'BEGIN { print (t - r < 50) ? "PASS" : "FAIL" }')
        row "bench launch (medians; target: overhead under 50 ns)" "$over" "$figures"
    else
        row "bench launch" FAIL "exit: $(tail -n1 "$log/bench.log")"
    fi

    echo "== compute-sanitizer memcheck on vector_add"
    local cs
    cs="$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer 2>/dev/null || true)"
    if [ "$driver" = soft ]; then
        row "compute-sanitizer" SKIP "dry mode: softcuda is not a GPU"
    elif [ -z "$cs" ]; then
        row "compute-sanitizer" SKIP "not installed on this machine"
    elif over_budget; then
        row "compute-sanitizer" FAIL "not run: over budget"
    elif timeout 180 "$cs" --tool memcheck --error-exitcode 3 "$bundle/examples/vector_add" \
        >"$log/sanitizer.log" 2>&1; then
        row "compute-sanitizer" PASS "$(grep -o 'ERROR SUMMARY: [0-9]* errors' "$log/sanitizer.log" | tail -n1)"
    else
        row "compute-sanitizer" FAIL "$(grep -o 'ERROR SUMMARY: [0-9]* errors' "$log/sanitizer.log" | tail -n1)"
    fi

    {
        echo "# GPU check"
        echo
        echo "- commit: $(cat "$bundle/commit" 2>/dev/null || echo unknown)"
        echo "- driver: $driver; GPU: $gpu"
        echo "- date: $(date -u '+%Y-%m-%d %H:%M UTC'); wall time: $((SECONDS - start)) s"
        echo
        echo "| step | result | detail |"
        echo "|---|---|---|"
        printf '%s\n' "${rows[@]}"
        echo
        echo "Logs: $log. Produced by \`scripts/gpu-check.sh\`."
    } >"$summary"
    echo "== summary: $summary"
    cat "$summary"
    return $failed
}

case "$mode" in
prepare) prepare ;;
run) run ;;
all) prepare; run ;;
esac

#!/usr/bin/env bash
# Our own suites under softcuda's sanitizer (issue 25): every integration test binary
# of the crate runs with SOFTCUDA_SANITIZE=all, every one of softcuda with all but
# `delay` (see below). Fails when a test
# fails, or when a binary reports what it should not:
#   - an initcheck, racecheck, synccheck or streamcheck finding anywhere but
#     softcuda's own sanitizer suites (sanitize.rs and streamcheck.rs, which make every
#     kind on purpose): our kernels and host code read nothing unwritten, race on no
#     shared memory, diverge at no barrier, and order every stream's use of memory;
#   - a memcheck finding (an invalid access or free, an API error) outside the suites
#     listed in DELIBERATE below, whose tests fault on purpose (illegal addresses,
#     double frees, stale addresses) to test what follows a fault.
#
#   bash scripts/sanitize.sh
#
# Prints one line per binary and, last, the figure line docs/reliability.md quotes:
#   reliability: sanitize binaries=N tests=M findings=F deliberate=D unexpected=U
# Logs: $CARGO_TARGET_DIR (or target/)/sanitize/<package>.log.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo"
target_dir=${CARGO_TARGET_DIR:-$repo/target}
logs=$target_dir/sanitize
mkdir -p "$logs"

# package:suite of the suites whose tests fault on purpose (memcheck findings there
# are the faults they make): the crate's fault recovery, device pool and peer suites
# and its soundness suite (a kernel storing through a null or stale address), and
# softcuda's C-ABI suites of sticky errors, invalid and double frees, peer access
# refused, out-of-cluster shared reads, stale addresses, kernels and copies
# reaching reserved but unmapped virtual memory, `cuMemFree` of memory opened
# from another process (refused: it is closed, not freed), frees of imported
# pool pointers one too many or not at their start, and texture and surface
# accesses through dead handles, destroyed arrays and out-of-range `.trap` forms.
DELIBERATE="oxicuda-driver:fault_recovery oxicuda-driver:device_pool oxicuda-driver:peer
oxicuda-driver:soundness softcuda:driver softcuda:graph softcuda:peer_access softcuda:soundness
softcuda:sticky_errors softcuda:launch_ex softcuda:sanitize softcuda:vmm softcuda:ipc softcuda:pool_ipc
softcuda:textures softcuda:surfaces"

status=0
for pkg in oxicuda-driver softcuda; do
  log=$logs/$pkg.log
  # softcuda's own suites test its default streams' documented behaviour (their work
  # is done when the call returns), which the delay tool changes on purpose: they
  # run with every other tool of `all`.
  tools=all
  [ "$pkg" = softcuda ] && tools=memcheck,racecheck,synccheck,initcheck,streamcheck
  echo "== sanitize: $pkg (SOFTCUDA_SANITIZE=$tools)"
  if ! SOFTCUDA_SANITIZE=$tools cargo test --locked -p "$pkg" --tests --no-fail-fast \
      -- --skip the_compile_time_contract >"$log" 2>&1; then
    grep -E '^test .* FAILED|panicked' "$log" | head -20 || true
    echo "sanitize: a test of $pkg failed under SOFTCUDA_SANITIZE=$tools (log: $log)" >&2
    status=1
  fi
done

python3 - "$logs" "$DELIBERATE" <<'EOF' || status=1
import re, sys, pathlib
logs, deliberate = pathlib.Path(sys.argv[1]), set(sys.argv[2].split())
binaries = tests = findings = allowed = unexpected = 0
for pkg in ("oxicuda-driver", "softcuda"):
    suite, counts = None, {}
    per = []
    for line in (logs / f"{pkg}.log").read_text(errors="replace").splitlines():
        m = re.match(r"\s*Running (?:tests|unittests)/?(\S*?)(?:\.rs)? \(", line)
        if m:
            suite = m.group(1) or "lib"
            per.append(suite)
            counts.setdefault(suite, {"tests": 0, "mem": 0, "other": 0})
            continue
        m = re.match(r"test result: \w+\. (\d+) passed", line)
        if m and suite:
            counts[suite]["tests"] += int(m.group(1))
        if suite and line.startswith("========= ") and not line.startswith("=========  "):
            head = line[len("========= "):]
            if head.startswith(("ERROR SUMMARY", "LEAK SUMMARY", "Note:", "Warning:")) or re.match(r"\d+ more reports", head):
                continue
            kind = "mem" if head.startswith(("Invalid ", "Program hit", "Leaked ")) else "other"
            counts[suite][kind] += 1
    for suite in per:
        c = counts[suite]
        binaries += 1
        tests += c["tests"]
        n = c["mem"] + c["other"]
        findings += n
        key = f"{pkg}:{suite}"
        if key in ("softcuda:sanitize", "softcuda:streamcheck"):
            bad = 0  # the sanitizer's own suites: every kind, on purpose
        else:
            bad = c["other"] + (0 if key in deliberate else c["mem"])
        allowed += n - bad
        unexpected += bad
        flag = "" if bad == 0 else "  <- unexpected"
        print(f"sanitize {key}: tests={c['tests']} findings={n} (memcheck {c['mem']}){flag}")
print(f"reliability: sanitize binaries={binaries} tests={tests} findings={findings} "
      f"deliberate={allowed} unexpected={unexpected}")
sys.exit(1 if unexpected else 0)
EOF
exit $status

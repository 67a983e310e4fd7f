#!/usr/bin/env bash
# The four examples against the system driver, on a machine with an NVIDIA GPU (a lent
# device machine): a smoke test of the safe layer on real hardware, about a minute.
# OXICUDA_DRIVER=system makes the choice explicit, so no example can fall back to
# softcuda; any failure stops the script with the example's message.
# The shipped PTX is `.version 8.8`: the driver must be CUDA 12.8 or newer.
#     bash scripts/gpu_examples.sh
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --examples --quiet
for ex in device_info vector_add jit_log streams_events; do
    echo "== $ex"
    if ! OXICUDA_DRIVER=system "./target/release/examples/$ex"; then
        echo "FAILED: $ex (on the system driver)"
        exit 1
    fi
done
echo "all examples ran on the system driver"

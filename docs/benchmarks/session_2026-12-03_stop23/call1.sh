#!/usr/bin/env bash
# Call 1 of stop 23: the prefill plan's refit data on main (8200cc3).
W=$(mktemp -d /tmp/refit.XXXXXX)
tar -xJf .carry-refit/bins.tar.xz -C "$W"
nvidia-smi --query-gpu=name,clocks.max.sm,driver_version --format=csv,noheader
PREFILL_BIN=$W/bin OUT=$OUT bash scripts/prefill-refit
tail -5 "$OUT/refit.log"

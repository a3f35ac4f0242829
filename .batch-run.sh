#!/usr/bin/env bash
# One device call: hybrid-check (every GPU test + fp16 hybrid sweep), decode A/B, prefill-red A/B, decode plan sweep.
set -u
cd "$(dirname "$0")"
F=$OUT; mkdir -p "$F"/h "$F"/a "$F"/p "$F"/s
T0=$(date +%s)
OUT=$F/h timeout 200 bash scripts/hybrid-check >/dev/null 2>&1; echo "hybrid rc=$? t=$(( $(date +%s)-T0 ))" >>"$F/batch.log"
grep -E "PASS|FAIL" "$F/h/final.log" | head -20 >>"$F/batch.log"
OUT=$F/a W4A16_AB_TESTS=none W4A16_AB_ARGS="--no-extra-groups --no-cublas --ms 1,4,8,16 --dtypes f16,bf16 --scalars uint4b8,uint4" timeout 150 bash scripts/ab-bench >/dev/null 2>&1; echo "ab rc=$? t=$(( $(date +%s)-T0 ))" >>"$F/batch.log"
grep "rows;" "$F/a/ab.log" >>"$F/batch.log"
OUT=$F/p timeout 150 bash .carry-prefill-red/run.sh >/dev/null 2>&1; echo "prefill rc=$? t=$(( $(date +%s)-T0 ))" >>"$F/batch.log"
left=$(( 560 - ($(date +%s)-T0) )); [ $left -gt 30 ] && { OUT=$F/s timeout $left bash scripts/decode-plan-sweep >/dev/null 2>&1; echo "sweep rc=$? t=$(( $(date +%s)-T0 ))" >>"$F/batch.log"; }
cp "$F/h/final.log" "$F/a/ab.log" "$F/p/prefill_red.log" "$F/" 2>/dev/null
tar -czf "$F/batch.tar.gz" -C "$F" h a p s && rm -rf "$F"/h "$F"/a "$F"/p "$F"/s
cat "$F/batch.log"

#!/usr/bin/env bash
# Stop 58 call 1: stop 57's prepared calls in one device call (carry .carry = main 4014f64's GPU binaries from
# scripts/pack-gpu less the four benchmarks, .carry-lean = prefill_bench / prefill_gpu_test of branch prefill-trace,
# .carry-s57c5 = main's prefill_bench; all stripped, XZ_OPT="-9e -T2"):
#  1. stop 57 call 5: llama70b.gate_up M = 200 / 256 row split against the default split tail and cuBLAS fp16 (~30 s);
#  2. stop 57 call 2: the persistent test with / without TAIL_OWN, the split tail traced (llama8b.qkv M = 1024,
#     llama70b.gate_up M = 256; on / off / memset once / own; 10 rounds);
#  3. stop 57 call 1: main's GPU tests through scripts/gpu-check (never run since 6ddf414), in the time left.
set -u
S57=docs/benchmarks/session_2026-12-06_stop57
bash $S57/call5.sh; echo "call5 done ${SECONDS}s"
tar -cf $OUT/c5.tar -C $OUT gpu.txt ab_table.txt data.tar.gz && rm -f $OUT/gpu.txt $OUT/ab_table.txt $OUT/data.tar.gz  # 8 files come back
S57_CARRY=.carry-lean bash $S57/call2.sh; echo "call2 done ${SECONDS}s"
left=$((575 - SECONDS)); echo "tests get ${left}s"
timeout $left bash $S57/call1.sh; echo "call1 rc=$? ${SECONDS}s"

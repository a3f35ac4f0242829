#!/usr/bin/env bash
# Stop 71 call D (carry .carry-l71f: new/ = main 9e493bb + two candidate kernel-reduce entries on llama8b.down, M = 101..128
# bm128 occ2 split 8 (stop 31's tune winner that lost as a cluster entry) and M = 257..384 bm192 split 3 (stop 25's);
# old/ = main 9e493bb's prefill_dq_ab): the interleaved A/B of the default plans, 7 rounds, and the plans.
set -u
. scripts/lib/device-env.sh
S=/tmp/s71f; rm -rf $S; mkdir -p $S
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv,noheader | tee $OUT/gpu.txt
tar -xJf ${CARRY:-.carry-l71f}/b.tar.xz -C $S
for b in old new; do $S/$b/prefill_dq_ab plans llama8b.down:4096:14336 100,101,128,129,256,257,320,384,385 > $OUT/plans_$b.txt 2>&1; done
printf '%s\n' "llama8b.down:4096:14336 100,101,112,128,257,288,320,352,384,385" > $S/p.txt
bash scripts/prefill-ab/points_ab.sh $S/old/prefill_dq_ab $S/new/prefill_dq_ab $S/p.txt $S/ab ${ROUNDS:-7} > $OUT/ab.txt 2>&1
echo "ab (${SECONDS}s)"; tail -14 $OUT/ab.txt
tar -czf $OUT/ab.tar.gz -C $S ab

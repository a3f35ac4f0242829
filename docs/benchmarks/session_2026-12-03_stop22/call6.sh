#!/usr/bin/env bash
# stop 22 call 6: the prefill plan's data on main (edge tiles + split-2 batch): tune_tma per reduce mode
H=$OUT
. scripts/lib/device-env.sh
W=$(mktemp -d); tar -xJf .carry-prefill-red2/bins.tar.xz -C $W
T0=$(date +%s)
W4A16_PREFILL_SPLIT_REDUCE=kernel timeout 170 $W/new/prefill_bench $H/call6_tune_tma_kernel.csv tune_tma > $H/call6_tune.log 2>&1; echo "kernel rc=$? $(( $(date +%s) - T0 )) s" | tee -a $H/call6_tune.log
W4A16_PREFILL_SPLIT_REDUCE=cluster timeout 170 $W/new/prefill_bench $H/call6_tune_tma_cluster.csv tune_tma >> $H/call6_tune.log 2>&1; echo "cluster rc=$? $(( $(date +%s) - T0 )) s" | tee -a $H/call6_tune.log
wc -l $H/*.csv

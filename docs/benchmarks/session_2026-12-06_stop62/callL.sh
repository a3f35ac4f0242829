#!/usr/bin/env bash
# Stop 62 call L, for the next device session: callK.sh on main's final build of stop 62 (carry .carry-l62: prefill_bench
# and prefill_gpu_test, stripped; rebuild it from main if main's prefill code moved since). What to read in its output:
#  1. the plan print: llama70b.gate_up M = 64 must show wgmma_bm64_bn128_s5_ov_occ3_tma_ei split=2 reduce=cluster (the
#     entry with timed_clusters = 132; "resident clusters" gives this device's count);
#  2. the A/B: keep the entry where the default plan is the 39 row and ahead of 23 s2 (the H100 in stop 62:
#     0.966-0.976x); on an H200 revert it if 23 s2 wins there;
#  3. on an H200, stop 61 call H part 5's mid-M tune (il_tmid.txt).
CARRY=.carry-l62 exec bash "$(dirname "$0")/callK.sh"

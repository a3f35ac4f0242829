T0=$(date +%s)
bash docs/benchmarks/session_2026-12-04_stop36/call2.sh 2>&1 | tail -60
echo "== stop36 call2 done t=$(($(date +%s)-T0))"
bash docs/benchmarks/session_2026-12-04_stop35/call2.sh 2>&1 | tail -150

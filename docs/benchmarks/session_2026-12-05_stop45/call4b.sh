. scripts/lib/device-env.sh
W=/tmp/s45c4; O=/tmp/s45c4b_out; mkdir -p $O; trap 'tar -czf $OUT/call4b.tar.gz -C $O .' EXIT
[ -d $W/py ] || { mkdir -p $W/py && tar -xJf .carry-s45/py.tar.xz -C $W/py; }
PYTHONPATH=$W/py timeout 200 python3 -m pytest -q -p no:cacheprovider -rs python/tests/test_torch_prepared.py > $O/pytest_prepared.log 2>&1
grep -E "FAILED|Error|passed|failed" $O/pytest_prepared.log | tail -8
PYTHONPATH=$W/py timeout 120 python3 docs/benchmarks/session_2026-12-05_stop45/torch_prepared.py > $O/torch_prepared.txt 2>&1; tail -4 $O/torch_prepared.txt

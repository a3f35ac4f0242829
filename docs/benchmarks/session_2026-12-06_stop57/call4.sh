#!/usr/bin/env bash
# Stop 57 call 4 (prepared, not run): call 2 cut to the ~5 min of device time left after six failed starts: the
# persistent tests, then llama8b.qkv M = 1024 only, 8 rounds (carry .carry-lean: the same two binaries as .carry-trace).
S57_CARRY=.carry-lean S57_ROWS="llama8b.qkv:1024" S57_ROUNDS=8 bash docs/benchmarks/session_2026-12-06_stop57/call2.sh

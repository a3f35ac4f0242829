# Time-budgeted steps of the device scripts (scripts/prefill-ab/run.sh, scripts/prefill-pp/run.sh).
# Source after setting T0 (start, epoch s), BUDGET (s), LOG (the summary log) and W (a work folder).
#   left            seconds of the budget left
#   say TEXT        TEXT to stdout and the log
#   step NAME LIMIT CMD...   CMD under timeout, output to $W/NAME.log; LIMIT clamped to the budget
#                   left (5 s kept), skipped (rc 99) below 5 s; one summary line; returns CMD's rc
left() { echo $((BUDGET - ($(date +%s) - T0))); }
say() { echo "$*" | tee -a "$LOG"; }
step() {
  local name=$1 limit=$2
  shift 2
  local l
  l=$(left)
  ((limit > l - 5)) && limit=$((l - 5))
  if ((limit < 5)); then
    say "$name: SKIPPED (budget left ${l}s)"
    return 99
  fi
  local s=$(date +%s) rc
  timeout -k 3 "$limit" "$@" >"$W/$name.log" 2>&1
  rc=$?
  say "$name: rc=$rc ($(($(date +%s) - s)) s, limit ${limit} s)$( ((rc == 124 || rc == 137)) && echo ' TIMEOUT')"
  return $rc
}

#!/usr/bin/env bash
# A worker credential floods its attempt's log (tests/tools/rogue_worker.cc --mode log-flood):
# for 5 s, empty LogChunks at rising offsets and one-byte chunks each after a gap, as fast as the
# stream takes them. The coordinator drops the empty ones at once, lets the session's chunks
# reach the core at a bounded rate (coordinator/log_gate.h: the rest counted and dropped, one
# summary line), and the kept log holds at most kMaxGapLines gap lines and one more, not one
# per chunk. Then a normal worker still runs the job.
source "$(dirname "$0")/lib.sh"
ROGUE=$(dirname "$IDLEPOOL")/idlepool-rogue-worker
[ -x "$ROGUE" ] || { echo "SKIP: no rogue worker"; exit 77; }
cat >"$T/job.toml" <<'TOML'
name = "flooded"
count = 1
command = ["sh", "-c", "echo done > out.txt"]
outputs = ["out.txt"]
[retry]
max_attempts = 3
backoff_s = 0
TOML
start_coordinator
"$ROGUE" --coordinator "$ADDR" --token-file "$JOIN_TOKEN_FILE" --name rogue-log --dir "$T/rogue" \
  --mode log-flood --cpus 1 --seconds 5 >"$T/rogue.out" 2>&1 &
ROGUE_PID=$!
PIDS+=($ROGUE_PID)
wait_until 20 is_connected rogue-log
JOB=$("$IDLEPOOL" submit "$T/job.toml")
wait "$ROGUE_PID" || fail "the rogue worker failed: $(cat "$T/rogue.out")"
sed 's/^/  /' "$T/rogue.out"
ATTEMPT=$(sed -n 's/.*attempt \([0-9]*\) sent.*/\1/p' "$T/rogue.out")
sent=$(sed -n 's/.* sent \([0-9]*\) chunks.*/\1/p' "$T/rogue.out")
[ "${ATTEMPT:-0}" -gt 0 ] || fail "the rogue worker got no attempt"
[ "${sent:-0}" -gt 10000 ] || fail "only ${sent:-0} chunks sent: no flood"
wait_until 20 grep -q "worker rogue-log session .* log chunks over the rate were dropped" "$T/coordinator.log"
dropped=$(sed -n 's/.*: \([0-9]*\) log chunks over the rate were dropped.*/\1/p' "$T/coordinator.log" | tail -1)
LOG=$T/coord/logs/$JOB/$ATTEMPT.log
[ -f "$LOG" ] || fail "no kept log $LOG"
lines=$(grep -c '^\[idlepool:' "$LOG" || true)
size=$(stat -c %s "$LOG")
echo "  kept log: $size bytes, $lines idlepool lines; $dropped of $sent chunks dropped at the gate"
[ "$lines" -le 65 ] || fail "the kept log has $lines gap lines (at most 65)"
[ "$size" -le $((16 * 1024)) ] || fail "the kept log grew to $size bytes"
# The gate let through at most its burst (17 for one slot, at least the rate 16) and 16 a second.
[ "$dropped" -ge $((sent / 2 - 16 * 40 - 64)) ] || fail "only $dropped of $((sent / 2)) non-empty chunks dropped"
pass "a log flood keeps a bounded log and reaches the core at a bounded rate"

start_worker w1 --slots 1
"$IDLEPOOL" wait "$JOB" --quiet >/dev/null || fail "job $JOB did not succeed: $(job_field "$JOB" state)"
assert_outputs_once "$JOB" 1
pass "the job then ran on an honest worker"

#!/usr/bin/env bash
# Sleep imminent: the attempt is vacated with a short grace, its checkpoint is uploaded and
# stored before the preemption is reported, and the next attempt resumes from it. A child that
# double-forked out of the task's session dies with the vacate. SIGTERM to a worker vacates the
# same graceful way.
source "$(dirname "$0")/lib.sh"
owner_config "$T/owner.toml"
S=$T/sensors
sense "$S" idle_seconds 1000
step_at_least() { [ "$(cat "$1" 2>/dev/null || echo 0)" -ge "$2" ]; }
has_checkpoint() { [ "$(sql "SELECT COUNT(*) FROM checkpoints WHERE job_id=$1")" -ge 1 ]; }
EX=$(cd "$(dirname "$0")/../../examples/checkpoint-count" && pwd)
cp "$EX/count.sh" "$T/count.sh"
cat >"$T/job.toml" <<'TOML'
name = "count"
# Counts to 200, one step per 50 ms, keeping its step in $IDLEPOOL_CHECKPOINT_DIR; a child that
# escaped with setsid and a double fork records its pid.
command = ["sh", "-c", "setsid sh -c 'sleep 600 & echo $! > escapee.pid' </dev/null >/dev/null 2>&1; exec sh count.sh 200 0.05"]
count = 1
inputs = ["count.sh"]
outputs = ["count.txt"]
TOML
start_coordinator --lease-timeout-ms 600000
start_worker laptop --slots 1 --config "$T/owner.toml" --sensors-dir "$S"
wait_until 20 is_owner_state laptop run
JOB=$("$IDLEPOOL" submit "$T/job.toml")
wait_until 30 is_busy laptop
A1=$(running_attempt "$JOB")
D=$(attempt_task_dir laptop "$A1")
C=$(attempt_checkpoint_dir laptop "$A1")
wait_until 30 test -s "$D/escapee.pid"
ESC=$(host_pid laptop "$(cat "$D/escapee.pid")") || fail "escapee not found"  # its own PID numbers
kill -0 "$ESC" || fail "escapee $ESC not running"
wait_until 30 test -s "$C/step"
# Let it get somewhere, and have at least one periodic checkpoint stored.
wait_until 30 step_at_least "$C/step" 10
wait_until 30 has_checkpoint "$JOB"

sense "$S" sleep_imminent 1       # the lid is about to close / the machine suspends
wait_until 20 job_at_least "$JOB" preemptions 1
# The checkpoint came with the report (one transaction): it is the attempt's last step.
stored=$(sql "SELECT attempt FROM checkpoints WHERE job_id=$JOB AND path='step'")
[ "$stored" = "$A1" ] || fail "stored checkpoint is from attempt '$stored', want $A1"
if has_cgroups laptop; then
  wait_until 10 dead "$ESC"
  pass "sleep imminent: attempt $A1 vacated, checkpoint stored with the report, escapee $ESC killed"
else
  kill -9 "$ESC" 2>/dev/null || true
  pass "sleep imminent: attempt $A1 vacated, checkpoint stored with the report (no cgroups here: escapee check skipped)"
fi

sense "$S" sleep_imminent 0       # back from sleep
"$IDLEPOOL" wait "$JOB" --quiet >/dev/null || fail "job did not finish after resuming"
OUT=$T/out
"$IDLEPOOL" fetch "$JOB" --out "$OUT" >/dev/null
grep -q "^resumed from [1-9]" "$OUT/0/count.txt" 2>/dev/null || grep -rq "^resumed from [1-9]" "$OUT" \
  || fail "second attempt did not resume: $(cat "$OUT"/*/count.txt "$OUT"/count.txt 2>/dev/null)"
lost=$(job_field "$JOB" lost_seconds)
awk -v l="$lost" 'BEGIN { exit !(l < 1.0) }' || fail "lost $lost s with a checkpoint every step"
pass "resumed from the checkpoint ($(cat "$OUT"/count.txt "$OUT"/*/count.txt 2>/dev/null | head -1)); lost ${lost}s"

# SIGTERM to the worker (system shutdown): the task gets SIGTERM, saves, and is handed back.
JOB2=$("$IDLEPOOL" submit "$T/job.toml")
wait_until 30 is_busy laptop
A2=$(running_attempt "$JOB2")
wait_until 30 step_at_least "$(attempt_checkpoint_dir laptop "$A2")/step" 5
kill -TERM "$WPID_laptop"
wait "$WPID_laptop" || fail "worker exited non-zero after SIGTERM"
[ "$(sql "SELECT outcome FROM attempts WHERE id=$A2")" = preempted ] || fail "attempt $A2 not preempted"
[ "$(sql "SELECT attempt FROM checkpoints WHERE job_id=$JOB2 AND path='step'")" = "$A2" ] \
  || fail "no checkpoint stored from the vacated attempt"
start_worker desk --slots 1 --dedicated
"$IDLEPOOL" wait "$JOB2" --quiet >/dev/null || fail "job 2 did not finish on desk"
pass "SIGTERM to the worker: attempt vacated gracefully with its checkpoint; finished on desk"

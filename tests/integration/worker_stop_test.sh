#!/usr/bin/env bash
# A worker stopped by its owner (SIGTERM) vacates: its running attempt is handed back at once as
# a preemption (not a failure, not a lost worker), its processes are gone, and it gets no more
# work while leaving.
source "$(dirname "$0")/lib.sh"
cat >"$T/job.toml" <<'TOML'
name = "vacate"
command = ["sh", "-c", "echo $$ > pid-$IDLEPOOL_WORKER; if [ $IDLEPOOL_WORKER = owner ]; then sleep 600; fi; echo ok > out.txt"]
count = 1
outputs = ["out.txt"]
TOML
# A lease of 10 minutes: if the hand-back waited for the lease, this test would hang.
start_coordinator --lease-timeout-ms 600000
start_worker owner --slots 1
wait_until 20 is_connected owner
JOB=$("$IDLEPOOL" submit "$T/job.toml")
wait_until 30 is_busy owner
task_pid=$(host_pid owner "$(cat "$(task_file owner pid-owner)")") || fail "task not found"
kill -TERM "$WPID_owner"
wait "$WPID_owner" || fail "worker exited non-zero after SIGTERM"
kill -0 "$task_pid" 2>/dev/null && fail "task process $task_pid survived the vacate"
[ "$(worker_state owner)" = left ] || fail "owner's state is $(worker_state owner), want left"
[ "$(sql "SELECT outcome FROM attempts WHERE job_id=$JOB ORDER BY id LIMIT 1")" = preempted ] \
  || fail "first attempt: $(sql "SELECT outcome, message FROM attempts WHERE job_id=$JOB")"
start_worker helper --slots 1
"$IDLEPOOL" wait "$JOB" --quiet >/dev/null || fail "job did not finish on the helper"
[ "$(job_field "$JOB" preemptions)" = 1 ] || fail "preemptions $(job_field "$JOB" preemptions)"
[ "$(job_field "$JOB" failures)" = 0 ] || fail "the vacate counted as a failure"
[ "$(job_field "$JOB" attempts_lost)" = 0 ] || fail "the vacate counted as a lost attempt"
[ "$(job_field "$JOB" workers_lost)" = 0 ] || fail "the owner counted as a lost worker"
assert_outputs_once "$JOB" 1
pass "SIGTERM vacated the attempt at once: 1 preemption, 0 failures, 0 lost"

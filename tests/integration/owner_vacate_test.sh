#!/usr/bin/env bash
# On battery: the attempt is vacated at once and runs on another worker; a task preempted ten
# times still succeeds with max_attempts = 1 (preemptions never count as failures).
source "$(dirname "$0")/lib.sh"
owner_config "$T/owner.toml"
A=$T/sensors-a
B=$T/sensors-b
sense "$A" idle_seconds 1000
sense "$A" on_ac_power 1
sense "$B" idle_seconds 0         # B's owner is at the keyboard: B takes no work yet
cat >"$T/job.toml" <<'TOML'
name = "long"
command = ["sh", "-c", "echo $IDLEPOOL_WORKER > out.txt; while [ ! -e go ]; do sleep 0.05; done"]
count = 1
outputs = ["out.txt"]
[retry]
max_attempts = 1
TOML
start_coordinator --lease-timeout-ms 600000   # a hand-back that waited for a lease would hang
start_worker laptop --slots 1 --config "$T/owner.toml" --sensors-dir "$A"
start_worker desk --slots 1 --config "$T/owner.toml" --sensors-dir "$B"
wait_until 20 is_owner_state laptop run
wait_until 20 is_owner_state desk suspend
JOB=$("$IDLEPOOL" submit "$T/job.toml")
wait_until 30 is_running_on "$JOB" laptop
TASK_PID_FILE=$T/laptop-task.pid

sense "$B" idle_seconds 1000      # B becomes free
wait_until 20 is_owner_state desk run
sense "$A" on_ac_power 0          # the laptop's charger is pulled
wait_until 20 is_running_on "$JOB" desk
[ "$(job_field "$JOB" preemptions)" = 1 ] || fail "preemptions $(job_field "$JOB" preemptions)"
[ "$(job_field "$JOB" failures)" = 0 ] || fail "the vacate counted as a failure"
[ "$(sql "SELECT outcome FROM attempts WHERE job_id=$JOB ORDER BY id LIMIT 1")" = preempted ] \
  || fail "first attempt: $(sql "SELECT outcome, message FROM attempts WHERE job_id=$JOB")"
sql "SELECT message FROM attempts WHERE job_id=$JOB ORDER BY id LIMIT 1" | grep -q battery \
  || fail "vacate reason does not say battery"
open_gate go
"$IDLEPOOL" wait "$JOB" --quiet >/dev/null || fail "job did not finish on desk"
pass "on battery: vacated on laptop, finished on desk"

# Ten preemptions of one task, max_attempts = 1: it still succeeds.
close_gate go
kill -TERM "$WPID_desk"; wait "$WPID_desk" || fail "desk did not stop cleanly"
JOB2=$("$IDLEPOOL" submit "$T/job.toml")
sense "$A" on_ac_power 1
for i in $(seq 1 10); do
  wait_until 30 is_running_on "$JOB2" laptop
  sense "$A" on_ac_power 0
  wait_until 30 job_at_least "$JOB2" preemptions "$i"
  sense "$A" on_ac_power 1
done
wait_until 30 is_running_on "$JOB2" laptop
open_gate go
"$IDLEPOOL" wait "$JOB2" --quiet >/dev/null || fail "job preempted 10 times failed"
[ "$(job_field "$JOB2" preemptions)" = 10 ] || fail "preemptions $(job_field "$JOB2" preemptions)"
[ "$(job_field "$JOB2" failures)" = 0 ] || fail "failures $(job_field "$JOB2" failures)"
[ "$(job_field "$JOB2" state)" = succeeded ] || fail "state $(job_field "$JOB2" state)"
assert_outputs_once "$JOB2" 1
pass "task preempted 10 times with max_attempts = 1 succeeded"

#!/usr/bin/env bash
# An assignment too big to send (coordinator/assignment_cap.h), with the cap lowered by the test
# hook IDLEPOOL_TEST_ASSIGNMENT_BYTES_MAX: a job `after` an upstream with 200 outputs would list
# them all in each assignment. It is never sent (a message over the session's caps would cut the
# worker's session, and the attempt would be placed and cut again without end): its first attempt
# ends failed with the reason, the job is cancelled once, the worker's session stays up, and a
# job after a small upstream still runs.
source "$(dirname "$0")/lib.sh"
cat >"$T/many.toml" <<'TOML'
name = "many"
count = 1
command = ["sh", "-c", "for i in $(seq 1 200); do echo $i > an-output-with-a-long-name-$i.txt; done"]
outputs = ["an-output-with-a-long-name-*.txt"]
TOML
cat >"$T/few.toml" <<'TOML'
name = "few"
count = 1
command = ["sh", "-c", "echo one > one.txt"]
outputs = ["one.txt"]
TOML
cat >"$T/join.toml" <<'TOML'
name = "join"
count = 4
command = ["sh", "-c", "ls after/*/ | wc -l > n-{index}.txt"]
outputs = ["n-*.txt"]
TOML
export IDLEPOOL_TEST_ASSIGNMENT_BYTES_MAX=4096
start_coordinator
unset IDLEPOOL_TEST_ASSIGNMENT_BYTES_MAX
start_worker w1 --slots 2
wait_until 20 is_connected w1
MANY=$("$IDLEPOOL" submit "$T/many.toml")
"$IDLEPOOL" wait "$MANY" --quiet >/dev/null || fail "many did not succeed"
assert_outputs_once "$MANY" 200
JOIN=$("$IDLEPOOL" submit "$T/join.toml" --after "$MANY")
wait_until 30 job_done "$JOIN"
[ "$(job_field "$JOIN" state)" = cancelled ] || fail "join: $(job_field "$JOIN" state)"
# A later job runs on the same worker: the session was never cut, and nothing loops meanwhile.
FEW=$("$IDLEPOOL" submit "$T/few.toml")
"$IDLEPOOL" wait "$FEW" --quiet >/dev/null || fail "few did not succeed"
AFTER_FEW=$("$IDLEPOOL" submit "$T/join.toml" --after "$FEW")
"$IDLEPOOL" wait "$AFTER_FEW" --quiet >/dev/null || fail "the job after few did not succeed"
assert_outputs_once "$AFTER_FEW" 4
attempts=$(sql "SELECT count(*) FROM attempts WHERE job_id = $JOIN")
echo "  join: $attempts attempts; messages:"
sql "SELECT outcome, message FROM attempts WHERE job_id = $JOIN" | sed 's/^/    /'
# At most one per task (those placed before the cancel took effect), each refused, none lost.
[ "$attempts" -ge 1 ] && [ "$attempts" -le 4 ] || fail "join had $attempts attempts"
[ "$(sql "SELECT count(*) FROM attempts WHERE job_id = $JOIN AND outcome = 'lost'")" = 0 ] ||
  fail "attempts of join were lost"
sql "SELECT message FROM attempts WHERE job_id = $JOIN AND outcome = 'failed'" |
  grep -q "200 of them outputs of the jobs it runs after.*the most one assignment carries is 4096 bytes" ||
  fail "no attempt says why: $(sql "SELECT message FROM attempts WHERE job_id = $JOIN")"
grep -q "job $JOIN cancelled: the assignment of task" "$T/coordinator.log" || fail "no cancel reason logged"
[ "$(grep -c "worker w1 .* connected, session" "$T/coordinator.log")" = 1 ] ||
  fail "w1's session was cut: $(grep "worker w1" "$T/coordinator.log")"
pass "an assignment over the cap is refused once with its reason; the session stays up"

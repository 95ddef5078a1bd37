#!/usr/bin/env bash
# One broken machine never fails a job (issue 31): a job's program is missing on one of three
# workers (its PATH lacks it, as a broken install would). The first placement gives that worker
# one task; its command cannot start there, which is the machine's fault for the job, not the
# task's: the task goes elsewhere at once without using an attempt, the worker is held off the job
# (status and status --json say so, naming the program and the worker), and the 12-task job
# succeeds with every output once, the broken worker having run one attempt of it.
# Then a one-worker pool whose task fails once retries there, after its backoff.
# The workers run --no-sandbox: the program is found through the task's PATH, the owner
# policy's [sandbox] path, which is what differs between them here.
source "$(dirname "$0")/lib.sh"
mkdir -p "$T/bin"
cat >"$T/bin/fakeblend" <<'SH'
#!/bin/sh
# A render of one frame: takes a moment, so a worker that fails fast is free first.
sleep 0.2
echo "frame $1" > "frame-$1.txt"
SH
chmod +x "$T/bin/fakeblend"
cat >"$T/job.toml" <<'TOML'
name = "render"
command = ["fakeblend", "{index}"]
count = 12
outputs = ["frame-*.txt"]
TOML
start_coordinator
printf '[sandbox]\npath = "%s:/usr/local/bin:/usr/bin:/bin"\n' "$T/bin" >"$T/with-bin.toml"
for w in w1 w2; do start_worker $w --slots 1 --no-sandbox --config "$T/with-bin.toml"; done
start_worker w3 --slots 1 --no-sandbox  # the default [sandbox] path: no fakeblend
for w in w1 w2 w3; do wait_until 20 is_connected $w; done

JOB=$("$IDLEPOOL" submit "$T/job.toml")
"$IDLEPOOL" wait "$JOB" --quiet >/dev/null || fail "the job failed: $("$IDLEPOOL" status "$JOB" 2>&1)"
assert_outputs_once "$JOB" 12
on_w3=$(sql "SELECT count(*) FROM attempts WHERE job_id=$JOB AND worker='w3'")
[ "$on_w3" = 1 ] || fail "w3 ran $on_w3 attempts of the job, want exactly its first one"
row=$(sql "SELECT outcome || ' ' || message FROM attempts WHERE job_id=$JOB AND worker='w3'")
grep -q "^machine_fault cannot run 'fakeblend': .* (on worker w3)" <<<"$row" ||
  fail "w3's attempt: $row"
[ "$(job_field "$JOB" failures)" = 0 ] || fail "the missing program used an attempt: $(job_field "$JOB" failures) failures"
"$IDLEPOOL" status "$JOB" --json >"$T/status.json"
jq -e '.held_off | length == 1 and .[0].worker == "w3" and .[0].failures == 1 and
       (.[0].last_error | contains("fakeblend"))' "$T/status.json" >/dev/null ||
  fail "held_off: $(jq -c .held_off "$T/status.json")"
"$IDLEPOOL" status "$JOB" >"$T/status.txt"
grep -q "held off w3 (1 failed there" "$T/status.txt" || fail "status: $(cat "$T/status.txt")"
pass "12 tasks succeeded over w1 and w2; w3 (no fakeblend) ran one attempt, a machine fault, and is held off"

# A job that fails everywhere names the worker of each failed task (status, failures).
printf 'name = "bad"\ncommand = ["sh", "-c", "exit 3"]\ncount = 1\n[retry]\nmax_attempts = 1\n' >"$T/bad.toml"
BAD=$("$IDLEPOOL" submit "$T/bad.toml")
rc=0; "$IDLEPOOL" wait "$BAD" >"$T/wait.txt" 2>&1 || rc=$?
[ "$rc" != 0 ] || fail "the failing job succeeded"
grep -qE "task 0 failed on w[123]: exit code 3" "$T/wait.txt" || fail "wait: $(cat "$T/wait.txt")"
"$IDLEPOOL" failures "$BAD" >"$T/failures.txt"
grep -qE "task 0 failed on w[123]: exit code 3" "$T/failures.txt" || fail "failures: $(cat "$T/failures.txt")"
"$IDLEPOOL" failures "$BAD" --json | jq -e '.failed_tasks[0].worker | test("^w[123]$")' >/dev/null ||
  fail "failures --json has no worker"
pass "failure lines name the worker"

# A one-worker pool: the retry of a failed task runs there again, after its backoff, instead of
# waiting forever for another worker.
for w in w1 w2 w3; do kill "$(eval echo "\$WPID_$w")"; done
for w in w1 w2 w3; do wait_until 30 dead "$(eval echo "\$WPID_$w")"; done
start_worker solo --slots 1 --no-sandbox
wait_until 20 is_connected solo
cat >"$T/once.toml" <<TOML
name = "fails-once"
command = ["sh", "-c", "if [ -e '$T/failed-once' ]; then echo ok > ok.txt; else touch '$T/failed-once'; exit 1; fi"]
count = 1
outputs = ["ok.txt"]
[retry]
backoff_s = 1
TOML
ONCE=$("$IDLEPOOL" submit "$T/once.toml")
"$IDLEPOOL" wait "$ONCE" --quiet >/dev/null || fail "the retry did not succeed: $("$IDLEPOOL" status "$ONCE" 2>&1)"
ran=$(sql "SELECT group_concat(worker || ':' || outcome, ',') FROM (SELECT worker, outcome FROM attempts WHERE job_id=$ONCE ORDER BY id)")
[ "$ran" = solo:failed,solo:succeeded ] || fail "attempts: $ran"
pass "in a one-worker pool the failed task retried on that worker after its backoff"

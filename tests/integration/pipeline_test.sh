#!/usr/bin/env bash
# Issue 18, pipelines and retries with backoff, with real processes:
#  (a) a chain of two jobs: the second runs after the first and reads its outputs, staged under
#      after/<first's name>/; it waits ("waiting", with a reason) until the first succeeds;
#  (b) a first job that fails cancels the job after it, whose reason names it;
#  (c) a waiting job survives a coordinator SIGKILL and then runs;
#  (d) a failing task's attempts start at least its backoff apart, by the coordinator's own
#      recorded start and end times (never the test's clock).
source "$(dirname "$0")/lib.sh"
cat >"$T/join.toml" <<'TOML'
name = "join"
command = ["sh", "-c", "cat after/render/f0.txt after/render/f1.txt after/render/f2.txt > all.txt"]
count = 1
outputs = ["all.txt"]
after = ["render"]
TOML
start_coordinator
start_worker w1 --slots 4 --no-sandbox  # the render waits for a file of the test
wait_until 20 is_connected w1

# (a) and (c): the render waits for a file the test writes; the join waits for the render.
cat >"$T/gate.toml" <<TOML
name = "render"
command = ["sh", "-c", "while [ ! -e $T/go ]; do sleep 0.1; done; echo frame{index} > f{index}.txt"]
count = 3
outputs = ["f*.txt"]
TOML
RENDER=$("$IDLEPOOL" submit "$T/gate.toml")
JOIN=$("$IDLEPOOL" submit "$T/join.toml")
[ "$(job_field "$JOIN" state)" = waiting ] || fail "join not waiting: $(job_field "$JOIN" state)"
reason=$(job_field "$JOIN" reason)
[ "$reason" = "after job $RENDER (render): running" ] || fail "waiting reason: $reason"
[ "$("$IDLEPOOL" status "$JOIN" --json | jq -c .after)" = "[$RENDER]" ] || fail "after ids"
kill -9 "$COORD_PID"; wait "$COORD_PID" 2>/dev/null || true
start_coordinator
wait_until 20 is_connected w1
[ "$(job_field "$JOIN" state)" = waiting ] || fail "join not waiting after restart"
[ "$(job_field "$JOIN" attempts)" = 0 ] || fail "join ran before the render"
touch "$T/go"
"$IDLEPOOL" wait "$JOIN" --quiet >/dev/null || fail "join did not succeed: $(job_field "$JOIN" state)"
[ "$(job_field "$RENDER" state)" = succeeded ] || fail "render not succeeded"
assert_outputs_once "$RENDER" 3
assert_outputs_once "$JOIN" 1
"$IDLEPOOL" fetch "$JOIN" --out "$T/out" >/dev/null
[ "$(cat "$T/out/all.txt" | tr '\n' ' ')" = "frame0 frame1 frame2 " ] || fail "joined: $(cat "$T/out/all.txt")"
pass "a job after another waits (across a coordinator SIGKILL), then reads its outputs"

# Unknown jobs are refused at submit, naming them.
rc=0; out=$("$IDLEPOOL" submit "$T/join.toml" --after nosuchjob 2>&1) || rc=$?
[ $rc -ne 0 ] && echo "$out" | grep -q "no job named 'nosuchjob'" || fail "unknown after: rc $rc: $out"

# (b) and (d): a task that always fails, 3 attempts, backoff 1 s: the next job is cancelled.
cat >"$T/fail.toml" <<'TOML'
name = "flaky"
command = ["sh", "-c", "exit 3"]
count = 1
[retry]
max_attempts = 3
backoff_s = 1
TOML
FAIL=$("$IDLEPOOL" submit "$T/fail.toml")
NEXT=$("$IDLEPOOL" submit "$T/join.toml" --after "$FAIL")
"$IDLEPOOL" wait "$NEXT" --quiet >/dev/null 2>&1 || true
wait_until 60 job_done "$NEXT"
[ "$(job_field "$FAIL" state)" = failed ] || fail "flaky: $(job_field "$FAIL" state)"
[ "$(job_field "$NEXT" state)" = cancelled ] || fail "next: $(job_field "$NEXT" state)"
reason=$(job_field "$NEXT" reason)
[ "$reason" = "job $FAIL (flaky) failed" ] || fail "cancel reason: $reason"
[ "$(job_field "$NEXT" attempts)" = 0 ] || fail "the job after a failed one ran"
# Each retry started at least backoff_s (1 s, doubling) after the failure before it ended.
gaps=$(sql "SELECT b.started_ms - a.ended_ms FROM attempts a JOIN attempts b ON b.job_id = a.job_id
            AND b.id = (SELECT min(id) FROM attempts WHERE job_id = a.job_id AND id > a.id)
            WHERE a.job_id = $FAIL ORDER BY a.id")
[ "$(echo "$gaps" | wc -l)" = 2 ] || fail "want 2 gaps, got: $gaps"
first=$(echo "$gaps" | sed -n 1p); second=$(echo "$gaps" | sed -n 2p)
[ "$first" -ge 1000 ] && [ "$second" -ge 2000 ] || fail "retries too soon: gaps $first, $second ms"
# The reason is derived from the job it ran after: once that job is deleted it says so.
"$IDLEPOOL" delete "$FAIL" >/dev/null
reason=$(job_field "$NEXT" reason)
[ "$reason" = "job $FAIL, which it ran after, was deleted" ] || fail "reason after delete: $reason"
pass "a failed job cancels the next one; retries waited $first and $second ms; reason after delete: $reason"

#!/usr/bin/env bash
# Fair preemption with real processes: alice's long tasks hold both slots of the only worker; bob's
# 1-task job starves; after --fair-preemption-after (3 s) the coordinator vacates one of alice's
# attempts, counted as a preemption (never a failure), and bob's task runs in its slot. `users`
# shows how long bob starved meanwhile. The worker runs --no-sandbox: tasks wait for files in $T.
source "$(dirname "$0")/lib.sh"
start_coordinator --fair-preemption-after 3s
start_worker w1 --slots 2 --no-sandbox
wait_until 20 is_connected w1
for who in alice bob; do
  "$IDLEPOOL" token create --role submit --user "$who" --data-dir "$T/coord" >"$T/$who.token" 2>/dev/null
done
as() { local who=$1; shift; IDLEPOOL_TOKEN=$(cat "$T/$who.token") "$IDLEPOOL" "$@"; }
cat >"$T/long.toml" <<TOML
name = "long"
command = ["sh", "-c", "while [ ! -e $T/go ]; do sleep 0.05; done; echo {index} > out.txt"]
count = 4
outputs = ["out.txt"]
TOML
cat >"$T/small.toml" <<TOML
name = "small"
command = ["sh", "-c", "echo hi > out.txt"]
count = 1
outputs = ["out.txt"]
TOML
A=$(as alice submit "$T/long.toml")
wait_until 30 job_at_least "$A" running 2
B=$(as bob submit "$T/small.toml")
starving() { "$IDLEPOOL" users --json | jq -e '.users[] | select(.user=="bob") | .starving_s > 0' >/dev/null; }
wait_until 10 starving || fail "users does not show bob starving: $("$IDLEPOOL" users --json)"
bob_done() { [ "$(as bob status "$B" --json | jq -r .state)" = succeeded ]; }
wait_until 30 bob_done || fail "bob's job did not run: $(as bob status "$B")"
[ "$(job_field "$A" preemptions)" -ge 1 ] || fail "alice's vacated attempt is not a preemption: $(as alice status "$A" --json)"
[ "$(job_field "$A" failures)" = 0 ] || fail "a fair-share vacate counted as a failure"
[ "$(sql "SELECT count(*) FROM attempts WHERE job_id=$A AND outcome='preempted' AND message LIKE '%fair share%'")" -ge 1 ] \
  || fail "no attempt of alice's says it was vacated for fair share"
grep -q "fair-preemption-after\|vacated for fair share" "$T/w1.log" || true
pass "bob's task ran in a slot vacated for fair share; alice's attempt counts as a preemption"
touch "$T/go"
as alice wait "$A" --quiet >/dev/null || fail "alice's job failed after the preemption: $(as alice status "$A")"
pass "alice's job then finished"

#!/usr/bin/env bash
# Users' settings with real processes: the admin's `users set` (kept across a restart), a slot
# quota held at placement with the reason in the job's status, queued-task and stored-bytes quotas
# refused at submit naming the limit, `priority` on one's own job only, a lender's accept_users,
# and `usage` whose slot-seconds equal the attempts' own times.
# The worker runs --no-sandbox: the tasks wait for files in $T, which a sandbox hides.
source "$(dirname "$0")/lib.sh"
start_coordinator
for who in alice bob; do
  "$IDLEPOOL" token create --role submit --user "$who" --data-dir "$T/coord" >"$T/$who.token" 2>/dev/null
done
as() { local who=$1; shift; IDLEPOOL_TOKEN=$(cat "$T/$who.token") "$IDLEPOOL" "$@"; }
admin() { "$IDLEPOOL" users set "$@" --data-dir "$T/coord"; }

admin alice --max-slots 1 >"$T/set.out" || fail "users set failed: $(cat "$T/set.out")"
grep -q "user alice: share 1, max slots 1" "$T/set.out" || fail "users set said: $(cat "$T/set.out")"
admin bob --share 2 --max-queued-tasks 3 --max-stored 0.000001 >/dev/null || fail "users set bob failed"
if admin 'bad name' --share 1 2>"$T/bad.err"; then fail "a bad user name was accepted"; fi
grep -q "not a user name" "$T/bad.err" || fail "bad name said: $(cat "$T/bad.err")"
pass "users set changes shares and quotas and refuses a bad name"

# Kept across a restart.
kill "$COORD_PID"; wait "$COORD_PID" 2>/dev/null || true
start_coordinator
"$IDLEPOOL" users --json >"$T/users.json" || fail "users failed"
[ "$(jq -r '.users[] | select(.user=="bob") | .share' "$T/users.json")" = 2 ] || fail "bob's share after restart: $(cat "$T/users.json")"
[ "$(jq -r '.users[] | select(.user=="alice") | .max_slots' "$T/users.json")" = 1 ] || fail "alice's quota after restart"
pass "users' settings survive a coordinator restart"

start_worker w1 --slots 2 --no-sandbox
printf '[owner]\naccept_users = ["bob"]\n' >"$T/bobs.toml"
start_worker bobs --slots 2 --no-sandbox --config "$T/bobs.toml"
wait_until 20 is_connected w1
wait_until 20 is_connected bobs
[ "$("$IDLEPOOL" workers --json | jq -r '.workers[] | select(.worker=="bobs") | .accept_users[0]')" = bob ] \
  || fail "workers --json does not show bobs' accept_users"

cat >"$T/wait.toml" <<TOML
name = "wait"
command = ["sh", "-c", "while [ ! -e $T/go-{index} ]; do sleep 0.05; done; echo {index} > out.txt"]
count = 3
outputs = ["out.txt"]
TOML
A=$(as alice submit "$T/wait.toml")
wait_until 30 job_at_least "$A" running 1
held() { as alice status "$A" --json | jq -r .reason | grep -q "max_slots"; }
wait_until 10 held || fail "no quota reason in alice's status: $(as alice status "$A" --json | jq -r .reason)"
[ "$(job_field "$A" running)" = 1 ] || fail "alice runs $(job_field "$A" running) tasks with max_slots 1"
[ "$(sql "SELECT count(*) FROM attempts WHERE job_id=$A AND worker='bobs'")" = 0 ] || fail "bob's machine ran alice's task"
pass "a slot quota holds alice's other tasks (with the reason in her status), and bob's machine runs none"

# Priority: alice's own job only.
if as bob priority "$A" 5 2>"$T/prio.err"; then fail "bob changed alice's job's priority"; fi
grep -qi "alice" "$T/prio.err" || fail "the refusal does not name the job's user: $(cat "$T/prio.err")"
as alice priority "$A" 5 >"$T/prio.out" || fail "alice could not set her job's priority"
grep -q "priority 5 (was 0)" "$T/prio.out" || fail "priority said: $(cat "$T/prio.out")"
[ "$(job_field "$A" priority)" = 5 ] || fail "the status does not show priority 5"
pass "priority changes only one's own job, and the status shows it"

# Submit-time quotas.
cat >"$T/four.toml" <<TOML
name = "four"
command = ["true"]
count = 4
TOML
if as bob submit "$T/four.toml" 2>"$T/queued.err"; then fail "bob queued 4 tasks past max_queued_tasks 3"; fi
grep -q "max_queued_tasks = 3" "$T/queued.err" || fail "queued refusal said: $(cat "$T/queued.err")"
head -c 4096 /dev/urandom >"$T/in.bin"
cat >"$T/stored.toml" <<TOML
name = "stored"
command = ["true"]
count = 1
inputs = ["$T/in.bin"]
TOML
if as bob submit "$T/stored.toml" 2>"$T/stored.err"; then fail "bob stored past max_stored"; fi
grep -q "max_stored" "$T/stored.err" || fail "stored refusal said: $(cat "$T/stored.err")"
pass "queued-task and stored-byte quotas refuse a submit, naming the limit"

for i in 0 1 2; do touch "$T/go-$i"; done
as alice wait "$A" --quiet >/dev/null || fail "alice's job failed: $(as alice status "$A")"
cat >"$T/two.toml" <<TOML
name = "two"
command = ["sh", "-c", "sleep 0.3"]
count = 2
TOML
B=$(as bob submit "$T/two.toml")
as bob wait "$B" --quiet >/dev/null || fail "bob's job failed"

# Usage: the slot-seconds by user equal the attempts' own times (cpus 1 each).
as alice usage --since 1d --json >"$T/usage.json" || fail "usage failed"
for who in alice bob; do
  job=$([ "$who" = alice ] && echo "$A" || echo "$B")
  want=$(sql "SELECT SUM(ended_ms - started_ms) FROM attempts WHERE job_id=$job")
  got=$(jq -r --arg u "$who" '.rows[] | select(.key==$u) | .slot_s * 1000 | round' "$T/usage.json")
  [ "$got" = "$want" ] || fail "$who's usage: $got slot-ms, the attempts say $want ($(cat "$T/usage.json"))"
done
[ "$(jq -r '.rows[] | select(.key=="alice") | .tasks' "$T/usage.json")" = 3 ] || fail "alice's tasks in usage"
as bob usage --by worker --json >"$T/by_worker.json" || fail "usage --by worker failed"
[ "$(jq '[.rows[].attempts] | add' "$T/by_worker.json")" = "$(sql "SELECT count(*) FROM attempts")" ] \
  || fail "usage by worker does not count every attempt: $(cat "$T/by_worker.json")"
as bob usage >"$T/usage.txt" && grep -q "^alice" "$T/usage.txt" || fail "usage table: $(cat "$T/usage.txt")"
pass "usage by user and by worker sums the attempts' own times"

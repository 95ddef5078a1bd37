#!/usr/bin/env bash
# A job's timeline (GetJobTimeline, `idlepool timeline --json`) and what `workers --json` shows of
# a worker's owner: the owner comes back (suspend, activity "suspended"), then closes the lid
# (vacate: the attempt is preempted, activity "lid_closed"); the timeline has the preempted
# attempt with an arrow to the task's next attempt, "owner" events with their causes, and the
# attempts' log tails, all of it still there after a coordinator restart.
source "$(dirname "$0")/lib.sh"
owner_config "$T/owner.toml"
S=$T/sensors
sense "$S" idle_seconds 1000
sense "$S" on_ac_power 1
sense "$S" lid_closed 0
sense "$S" temperature_c 50
cat >"$T/job.toml" <<'TOML'
name = "timeline"
command = ["sh", "-c", "echo \"task {index} says hello\" >&2; echo x > out.txt; while [ ! -e go ]; do sleep 0.05; done"]
count = 3
outputs = ["out.txt"]
TOML

start_coordinator --lease-timeout-ms 600000
start_worker w1 --slots 1 --config "$T/owner.toml" --sensors-dir "$S"

wjson() { "$IDLEPOOL" workers --json | jq -r --arg w w1 ".workers[] | select(.worker==\$w) | $1"; }
is_w() { [ "$(wjson "$1")" = "$2" ]; }  # is_w JQ_PATH VALUE

wait_until 20 is_owner_state w1 run
JOB=$("$IDLEPOOL" submit "$T/job.toml")
wait_until 30 is_running_on "$JOB" w1
wait_until 20 is_w .activity running
wait_until 20 is_w ".sensors.temperature_c == 50" true
[ "$(wjson .owner_cause)" = none ] || fail "owner_cause while running: $(wjson .owner_cause)"
# A reading that changes nothing in the owner policy still reaches the coordinator, on its own.
sense "$S" temperature_c 61.5
wait_until 20 is_w ".sensors.temperature_c == 61.5" true
pass "workers --json: activity running, sensors.temperature_c follows the fake sensor"

sense "$S" idle_seconds 0                 # the owner is back: suspend
wait_until 20 is_w .activity suspended
[ "$(wjson .owner_cause)" = owner_input ] || fail "owner_cause $(wjson .owner_cause)"
[ "$(wjson ".sensors.idle_seconds == 0")" = true ] || fail "sensors: $(wjson .sensors)"
sense "$S" lid_closed 1                   # then closes the lid: vacate
wait_until 20 is_w .activity lid_closed
[ "$(wjson .owner_cause)" = lid ] || fail "owner_cause $(wjson .owner_cause)"
[ "$(wjson .sensors.lid_closed)" = true ] || fail "sensors.lid_closed $(wjson .sensors.lid_closed)"
wait_until 30 job_at_least "$JOB" preemptions 1
"$IDLEPOOL" workers | grep -q "lid_closed" || fail "workers text has no ACTIVITY lid_closed"
pass "workers: suspended (owner_input) then lid_closed (lid)"

# While vacated, a new cause is told too: the charger is pulled, then the lid opens.
sense "$S" on_ac_power 0
sense "$S" lid_closed 0
wait_until 20 is_w .activity on_battery
[ "$(wjson .owner_cause)" = battery ] || fail "owner_cause $(wjson .owner_cause)"
sense "$S" on_ac_power 1
pass "workers: vacated for the lid, then for the battery: on_battery"

sense "$S" lid_closed 0
sense "$S" idle_seconds 1000
wait_until 30 is_w .activity running
open_gate go
"$IDLEPOOL" wait "$JOB" --quiet >/dev/null || fail "job did not finish"
wait_until 20 is_w .activity idle

# Events are stored by another thread: wait until the last owner change (run, after the lid) is in.
resumed_in_timeline() {
  "$IDLEPOOL" timeline "$JOB" --json >"$T/tl1.json" &&
    [ "$(jq -r '[.events[] | select(.kind=="owner") | .state] | last' "$T/tl1.json")" = run ]
}
wait_until 20 resumed_in_timeline
tl() { jq -r -c "$@" "$T/tl1.json"; }
[ "$(tl .job.state)" = succeeded ] || fail "job in timeline: $(tl .job.state)"
[ "$(tl '.job.job')" = "$JOB" ] || fail "job id in timeline: $(tl .job.job)"
# The preempted attempt points to a later attempt of the same task, started after it ended.
P=$(tl '[.attempts[] | select(.outcome=="preempted")][0]')
[ "$P" != null ] || fail "no preempted attempt: $(tl '.attempts')"
N=$(jq -r .next_attempt <<<"$P")
[ "$N" != 0 ] || fail "the preempted attempt has no next attempt: $P"
NEXT=$(jq -c --arg n "$N" '.attempts[] | select(.attempt==$n)' "$T/tl1.json")
[ -n "$NEXT" ] || fail "next attempt $N is not in the timeline"
[ "$(jq -r .task <<<"$NEXT")" = "$(jq -r .task <<<"$P")" ] || fail "next attempt of another task"
[ "$(jq -r '.started_ms | tonumber' <<<"$NEXT")" -ge "$(jq -r '.ended_ms | tonumber' <<<"$P")" ] \
  || fail "next attempt started before the preempted one ended: $P / $NEXT"
[ "$(jq -r .outcome <<<"$NEXT")" = succeeded ] || fail "next attempt: $NEXT"
pass "timeline: preempted attempt $(jq -r .attempt <<<"$P") -> attempt $N of task $(jq -r .task <<<"$P")"

# Owner events with their causes, in time order; log tails of the attempts.
tl '.events[] | select(.kind=="owner") | "\(.state) \(.cause)"' >"$T/owner-events.txt"
grep -qx "suspend owner_input" "$T/owner-events.txt" || fail "no suspend/owner_input event: $(cat "$T/owner-events.txt")"
grep -qx "vacate lid" "$T/owner-events.txt" || fail "no vacate/lid event: $(cat "$T/owner-events.txt")"
[ "$(grep -n -x -m1 'suspend owner_input' "$T/owner-events.txt" | cut -d: -f1)" -lt \
  "$(grep -n -x -m1 'vacate lid' "$T/owner-events.txt" | cut -d: -f1)" ] || fail "events out of order"
[ "$(tl '[.events[].at_ms | tonumber] | . == sort')" = true ] || fail "events not by time"
[ "$(tl '[.attempts[] | select(.outcome=="succeeded")] | length')" = 3 ] || fail "3 succeeded"
for i in 0 1 2; do
  tl --arg i "$i" '.attempts[] | select(.task==($i|tonumber) and .outcome=="succeeded") | .log_tail' \
    | grep -q "task $i says hello" || fail "task $i: no log tail in the timeline"
done
pass "timeline: owner events (owner_input, lid) and log tails"

# Unknown job, wrong token.
if "$IDLEPOOL" timeline 999 --json >/dev/null 2>"$T/err"; then fail "unknown job gave a timeline"; fi
grep -q "no job 999" "$T/err" || fail "unknown job: $(cat "$T/err")"
if IDLEPOOL_TOKEN=${TOKEN%.*}.AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA "$IDLEPOOL" timeline "$JOB" --json >/dev/null 2>"$T/err"; then
  fail "a wrong token read the timeline"
fi
grep -q "wrong secret" "$T/err" || fail "wrong token: $(cat "$T/err")"
pass "timeline: NOT_FOUND for an unknown job, refused with a wrong token"

# A restart keeps it: events and log tails are stored.
kill -TERM "$COORD_PID"
wait "$COORD_PID" 2>/dev/null || true
start_coordinator --lease-timeout-ms 600000
"$IDLEPOOL" timeline "$JOB" --json >"$T/tl2.json" || fail "timeline after restart failed"
for f in .events '[.attempts[] | {attempt, outcome, next_attempt, log_tail, started_ms, ended_ms}]'; do
  [ "$(jq -c "$f" "$T/tl1.json")" = "$(jq -c "$f" "$T/tl2.json")" ] \
    || fail "$f differs after restart: $(jq -c "$f" "$T/tl2.json")"
done
pass "timeline survives a coordinator restart"

# Session events are stored too: connected (once per coordinator start), disconnected when its
# stream breaks (a killed worker says nothing; a stopping one says Leaving: "left").
wait_until 20 is_connected w1
kill -9 "$WPID_w1"
wait "$WPID_w1" 2>/dev/null || true
kinds() { sql "SELECT group_concat(kind, ' ') FROM (SELECT kind FROM worker_events WHERE worker='w1' AND kind != 'owner' ORDER BY id)"; }
has_ended() { [ "$(kinds)" = "connected connected disconnected" ]; }
wait_until 20 has_ended
pass "worker events: $(kinds)"

# A worker that stops cleanly (SIGTERM) says Leaving before it goes: "left", not "disconnected"
# (it half-closes its stream and waits for the coordinator to end the session).
start_worker w2 --slots 1
wait_until 20 is_connected w2
kill -TERM "$WPID_w2"
wait "$WPID_w2" || fail "w2 did not stop cleanly"
kinds2() { sql "SELECT group_concat(kind, ' ') FROM (SELECT kind FROM worker_events WHERE worker='w2' AND kind != 'owner' ORDER BY id)"; }
has_left() { [ "$(kinds2)" = "connected left" ]; }
wait_until 20 has_left
[ "$(worker_state w2)" = left ] || fail "w2 state $(worker_state w2)"
pass "worker events of a clean stop: $(kinds2)"

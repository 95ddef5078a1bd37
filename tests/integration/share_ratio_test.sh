#!/usr/bin/env bash
# Shares over a steady load, with real processes: alice has share 2 and bob share 1; both keep
# far more short tasks pending than the worker's 3 slots can run. Over the first 240 tasks done,
# the slot-seconds each used (from `idlepool usage`, the attempts' own times) stand about 2:1
# (within 10%): free slots go to the user whose decayed usage divided by share is lowest, so
# whoever falls behind their share gets the next slot. First come, first served would give alice
# (who submitted first) every slot until her job ran out.
# The worker runs --no-sandbox only to keep the tasks short and alike on a loaded machine.
source "$(dirname "$0")/lib.sh"
start_coordinator
start_worker w1 --slots 3 --no-sandbox
wait_until 20 is_connected w1
for who in alice bob; do
  "$IDLEPOOL" token create --role submit --user "$who" --data-dir "$T/coord" >"$T/$who.token" 2>/dev/null
done
as() { local who=$1; shift; IDLEPOOL_TOKEN=$(cat "$T/$who.token") "$IDLEPOOL" "$@"; }
"$IDLEPOOL" users set alice --share 2 --data-dir "$T/coord" >/dev/null || fail "users set alice failed"

cat >"$T/load.toml" <<TOML
name = "steady"
command = ["sleep", "0.3"]
count = 400
TOML
A=$(as alice submit "$T/load.toml")
B=$(as bob submit "$T/load.toml")
done_total() { echo $(( $(job_field "$A" succeeded) + $(job_field "$B" succeeded) )); }
enough_done() { [ "$(done_total)" -ge 240 ]; }
wait_until 120 enough_done
as alice cancel "$A" >/dev/null
as bob cancel "$B" >/dev/null
wait_until 30 job_done "$A"
wait_until 30 job_done "$B"

# Only attempts that ran to their end count: a cancelled one's slot time is real use too, and
# usage counts it as the attempts' own times say.
as alice usage --json >"$T/usage.json" || fail "usage failed"
slot() { jq -r --arg u "$1" '.rows[] | select(.key==$u) | .slot_s' "$T/usage.json"; }
a=$(slot alice) b=$(slot bob)
ratio=$(awk -v a="$a" -v b="$b" 'BEGIN { if (b <= 0) print "inf"; else printf "%.3f", a / b }')
awk -v r="$ratio" 'BEGIN { exit !(r != "inf" && r >= 1.8 && r <= 2.2) }' ||
  fail "slot-seconds alice $a : bob $b = $ratio, want 2 within 10% ($(cat "$T/usage.json"))"
pass "shares 2:1 over a steady load: slot-seconds alice $a, bob $b (ratio $ratio)"

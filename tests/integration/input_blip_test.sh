#!/usr/bin/env bash
# A link that drops for a few seconds while a worker fetches an input is not the task's fault:
# the fetch waits for the link, resumes from the chunks it already holds, and the task (allowed
# a single failure) runs once and succeeds, with peer-to-peer on and off.
source "$(dirname "$0")/lib.sh"
PROXY=$(dirname "$IDLEPOOL")/idlepool-faultproxy
[ -x "$PROXY" ] || { echo "SKIP: no $PROXY"; exit 77; }
MiB=$((1024 * 1024))
head -c $((24 * MiB)) /dev/urandom >"$T/asset.bin"
cat >"$T/job.toml" <<TOML
name = "blip"
command = ["sh", "-c", "test \$(stat -c %s asset.bin) = $((24 * MiB)) && echo ok > out.txt"]
count = 1
inputs = ["asset.bin"]
outputs = ["out.txt"]
[retry]
max_attempts = 1
TOML
# The lease outlasts the blip: the coordinator keeps the attempt; only the fetch is interrupted.
start_coordinator --lease-timeout-ms 20000
n=0
for mode in "" --no-peer; do
  n=$((n + 1))
  "$PROXY" --listen 127.0.0.1:0 --target "$ADDR" --rate 4M --stats "$T/p$n.json" >"$T/p$n.log" 2>&1 &
  ppid=$!
  PIDS+=($ppid)
  wait_until 10 grep -q "listening on" "$T/p$n.log"
  paddr=$(sed -n 's/.*listening on \([^ ]*\).*/\1/p' "$T/p$n.log" | head -1)
  start_worker "w$n" --slots 1 --coordinator "$paddr" $mode
  wait_until 20 is_connected "w$n"
  JOB=$("$IDLEPOOL" submit "$T/job.toml")
  fetching() { [ "$(jq -r .down_bytes "$T/p$n.json")" -gt $((8 * MiB)) ]; }
  wait_until 60 fetching
  kill -USR2 "$ppid"   # the link drops...
  sleep 6              # ...for 6 s (the fault being tested, not a wait for a result)
  kill -USR2 "$ppid"   # ...and comes back
  wait_until 120 job_done "$JOB"
  [ "$(job_field "$JOB" state)" = succeeded ] || fail "w$n: $("$IDLEPOOL" status "$JOB")"
  [ "$(job_field "$JOB" failures)" = 0 ] && [ "$(job_field "$JOB" attempts)" = 1 ] ||
    fail "w$n: the blip cost an attempt: $("$IDLEPOOL" status "$JOB")"
  down=$(jq -r .down_bytes "$T/p$n.json")
  [ "$down" -lt $((24 * MiB + 16 * MiB)) ] || fail "w$n: the fetch started over ($down bytes down)"
  kill "$(eval echo \$WPID_w$n)"
  pass "6 s link drop while fetching a 24 MiB input (${mode:-peers on}): resumed, task ran once, $down bytes down"
done

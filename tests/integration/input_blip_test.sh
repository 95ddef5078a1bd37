#!/usr/bin/env bash
# A link that drops for a few seconds while a worker fetches an input is not the task's fault:
# the fetch waits for the link, resumes from the chunks it already holds, and the task (allowed
# a single failure) runs once and succeeds, with peer-to-peer on and off.
source "$(dirname "$0")/lib.sh"
need_proxy
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
  start_proxy "p$n" --rate 4M
  ppid=$(eval echo "\$PPID_p$n")
  paddr=$(eval echo "\$PADDR_p$n")
  start_worker "w$n" --slots 1 --coordinator "$paddr" --no-probe $mode
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

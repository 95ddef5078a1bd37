#!/usr/bin/env bash
# Outputs are never lost to the network, and never make a task run again:
#  1. the link is cut mid-upload (the fault proxy closes every connection after 20 MB went up):
#     the worker reconnects within its lease, the upload resumes from the last verified chunk
#     (far fewer bytes go up than a restart from zero would send), the task ran once;
#  2. the link is partitioned mid-upload for longer than the lease: the coordinator declares the
#     worker lost and requeues the task, but the finished attempt's outputs wait in the worker's
#     durable outbox; when the worker comes back holding the attempt, the coordinator gives it
#     back (the task was still pending), the outputs are delivered and the original attempt
#     commits: the task never ran twice.
source "$(dirname "$0")/lib.sh"
need_proxy
MiB=$((1024 * 1024))

cat >"$T/job.toml" <<'TOML'
name = "big-output"
command = ["sh", "-c", "head -c 33554432 /dev/urandom > out.bin && sha256sum out.bin | cut -c1-64 > out.sha"]
count = 1
outputs = ["out.bin", "out.sha"]
TOML

# --- 1. a cut: resumed, not restarted --------------------------------------------------------
start_coordinator --lease-timeout-ms 5000
start_proxy cut --cut-after 20000000 --cut-dir up --cut-once
# --no-probe: the link probe's bytes would count towards the cut.
start_worker w1 --slots 1 --coordinator "$PADDR_cut" --no-probe
wait_until 20 is_connected w1
JOB=$("$IDLEPOOL" submit "$T/job.toml")
wait_until 120 job_done "$JOB"
[ "$(job_field "$JOB" state)" = succeeded ] || fail "job 1: $("$IDLEPOOL" status "$JOB")"
[ "$(stat_of cut cuts)" = 1 ] || fail "the proxy should have cut once: $(cat "$T/cut.json")"
[ "$(job_field "$JOB" attempts)" = 1 ] || fail "the task ran again after the cut: $("$IDLEPOOL" status "$JOB")"
up=$(stat_of cut up_bytes)
# Restarting the upload from zero would send 20 MB + 32 MiB; resuming sends about 32 MiB.
[ "$up" -lt $((20000000 + 32 * MiB - 4 * MiB)) ] || fail "upload was not resumed: $up bytes went up"
assert_fetched_output "$JOB" "$T/out1"
pass "cut after 20 MB: upload resumed ($up bytes up for a 32 MiB output), task ran once"
kill "$WPID_w1"; wait "$WPID_w1" 2>/dev/null || true

# --- 2. a partition longer than the lease: the finished work still commits ------------------
kill "$COORD_PID"; wait "$COORD_PID" 2>/dev/null || true
start_coordinator --lease-timeout-ms 1500
start_proxy slow --rate 4M
start_worker w2 --slots 1 --coordinator "$PADDR_slow" --no-probe
wait_until 20 is_connected w2
JOB2=$("$IDLEPOOL" submit "$T/job.toml")
first=""
have_first() { first=$(sql "SELECT min(id) FROM attempts WHERE job_id=$JOB2"); [ -n "$first" ]; }
wait_until 30 have_first
# Once the outputs are filed and a few MB are on their way, cut the link for good.
uploading() { [ -d "$T/w2/outbox/$first" ] && [ "$(stat_of slow up_bytes)" -gt $((4 * MiB)) ]; }
wait_until 60 uploading
kill -USR2 "$PPID_slow"
wait_until 30 is_lost w2
sql "SELECT outcome FROM attempts WHERE id=$first" | grep -qx lost || fail "attempt $first should be lost"
kill -USR2 "$PPID_slow"  # heal
wait_until 180 job_done "$JOB2"
[ "$(job_field "$JOB2" state)" = succeeded ] || fail "job 2: $("$IDLEPOOL" status "$JOB2")"
committed=$(sql "SELECT committed_attempt FROM tasks WHERE job_id=$JOB2 AND idx=0")
[ "$committed" = "$first" ] || fail "task committed by attempt $committed, not by the finished attempt $first"
[ "$(sql "SELECT outcome FROM attempts WHERE id=$first")" = succeeded ] || fail "attempt $first not recorded as succeeded"
# Nobody else could take the task meanwhile, so when w2 came back holding the attempt it got it
# back (revived): the task never ran a second time.
[ "$(sql "SELECT count(*) FROM attempts WHERE job_id=$JOB2")" = 1 ] ||
  fail "the task ran again: $(sql "SELECT id, outcome FROM attempts WHERE job_id=$JOB2")"
[ "$(job_field "$JOB2" attempts_lost)" = 0 ] || fail "the delivered attempt should no longer count as lost"
assert_fetched_output "$JOB2" "$T/out2"
[ ! -e "$T/w2/outbox/$first" ] || wait_until 10 test ! -e "$T/w2/outbox/$first"
pass "partition past the lease during upload: attempt $first revived and committed, no rerun"

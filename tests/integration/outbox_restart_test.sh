#!/usr/bin/env bash
# A worker killed (SIGKILL) while it uploads a finished task's outputs loses nothing: the outputs
# wait in its durable outbox; restarted on the same work dir, it says at once that it is
# delivering that attempt, the coordinator gives the attempt back to it (the task never runs a
# second time), the upload resumes and the original attempt commits the task's real bytes.
source "$(dirname "$0")/lib.sh"
need_proxy
cat >"$T/job.toml" <<'TOML'
name = "big-output"
command = ["sh", "-c", "head -c 33554432 /dev/urandom > out.bin && sha256sum out.bin | cut -c1-64 > out.sha"]
count = 1
outputs = ["out.bin", "out.sha"]
TOML
start_coordinator
# 4 MB/s: the 32 MiB upload takes about 8 s, time enough to kill the worker in the middle.
start_proxy proxy --rate 4M
PADDR=$PADDR_proxy
start_worker w --slots 1 --coordinator "$PADDR"
wait_until 20 is_connected w
JOB=$("$IDLEPOOL" submit "$T/job.toml")
uploading() { ls "$T"/w/outbox/*/report.pb >/dev/null 2>&1 && [ "$(jq -r .up_bytes "$T/proxy.json")" -gt 4000000 ]; }
wait_until 60 uploading
first=$(sql "SELECT id FROM attempts WHERE job_id=$JOB")
kill -9 "$WPID_w"; wait "$WPID_w" 2>/dev/null || true
[ -f "$T/w/outbox/$first/report.pb" ] || fail "the finished attempt is not in the outbox"
start_worker w --slots 1 --coordinator "$PADDR"
wait_until 120 job_done "$JOB"
[ "$(job_field "$JOB" state)" = succeeded ] || fail "job: $("$IDLEPOOL" status "$JOB")"
[ "$(sql "SELECT count(*) FROM attempts WHERE job_id=$JOB")" = 1 ] ||
  fail "the task ran again: $(sql "SELECT id, outcome FROM attempts WHERE job_id=$JOB")"
[ "$(sql "SELECT committed_attempt FROM tasks WHERE job_id=$JOB")" = "$first" ] || fail "wrong commit"
grep -q "outbox: 1 finished attempts from an earlier run" "$T/w.log" || fail "no redelivery logged"
assert_fetched_output "$JOB" "$T/out"
wait_until 10 test ! -e "$T/w/outbox/$first"
pass "worker SIGKILLed mid-upload: restarted, it delivered attempt $first from its outbox; no rerun"

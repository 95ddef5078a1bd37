#!/usr/bin/env bash
# Outputs are checked by size and hash: a zero-byte output fails the attempt unless the job says
# empty outputs are results, and an output that changes after the task ended (truncated while it
# uploads) fails the attempt instead of committing the wrong bytes.
source "$(dirname "$0")/lib.sh"
need_proxy
cat >"$T/empty.toml" <<'TOML'
name = "empty"
command = ["sh", "-c", ": > out.txt"]
count = 1
outputs = ["out.txt"]
[retry]
max_attempts = 1
TOML
{ echo 'allow_empty_outputs = true'; cat "$T/empty.toml"; } >"$T/empty-ok.toml"
# A 16 MiB output uploads through a 2 MB/s link; while it does, something outside the task (the
# task's own processes are all killed when it ends) truncates the file waiting in the outbox.
cat >"$T/trunc.toml" <<'TOML'
name = "truncated"
command = ["sh", "-c", "head -c 16777216 /dev/urandom > out.bin"]
count = 1
outputs = ["out.bin"]
[retry]
max_attempts = 1
TOML
start_coordinator
start_proxy proxy --rate 2M
PADDR=$PADDR_proxy
start_worker w --slots 1 --coordinator "$PADDR"
wait_until 20 is_connected w
failed_msg() { "$IDLEPOOL" status "$1" --json | jq -r '.failed_tasks[0].message'; }

JOB=$("$IDLEPOOL" submit "$T/empty.toml")
wait_until 60 job_done "$JOB"
[ "$(job_field "$JOB" state)" = failed ] || fail "empty output accepted: $("$IDLEPOOL" status "$JOB")"
failed_msg "$JOB" | grep -q "is empty (0 bytes)" || fail "message: $(failed_msg "$JOB")"
JOB=$("$IDLEPOOL" submit "$T/empty-ok.toml")
wait_until 60 job_done "$JOB"
[ "$(job_field "$JOB" state)" = succeeded ] || fail "allow_empty_outputs: $("$IDLEPOOL" status "$JOB")"
[ "$(sql "SELECT size FROM outputs WHERE job_id=$JOB")" = 0 ] || fail "empty output not committed"
pass "zero-byte output fails the attempt; allow_empty_outputs = true commits it"

JOB=$("$IDLEPOOL" submit "$T/trunc.toml")
filed() { ls "$T"/w/outbox/*/files/out.bin >/dev/null 2>&1; }
wait_until 60 filed
: >"$(ls "$T"/w/outbox/*/files/out.bin | head -1)"
wait_until 120 job_done "$JOB"
[ "$(job_field "$JOB" state)" = failed ] || fail "truncated output accepted: $("$IDLEPOOL" status "$JOB")"
failed_msg "$JOB" | grep -q "changed after the task ended" || fail "message: $(failed_msg "$JOB")"
[ "$(sql "SELECT count(*) FROM outputs WHERE job_id=$JOB")" = 0 ] || fail "a truncated output was committed"
pass "an output truncated during its upload fails the attempt: $(failed_msg "$JOB" | head -1)"

#!/usr/bin/env bash
# A worker whose disk fills up fails the attempt as the machine's fault, not the task's: the task
# goes to another worker (a max_attempts = 1 job still succeeds, with no failure counted), and the
# full worker takes no work until space frees, then takes it again. The full disk is a real
# size-limited tmpfs under the worker's work dir.
source "$(dirname "$0")/lib.sh"
[ "$(id -u)" = 0 ] || { echo "SKIP: mounting a size-limited tmpfs needs root"; exit 77; }
mkdir -p "$T/small"
mount -t tmpfs -o size=64m idlepool-test "$T/small" 2>/dev/null || { echo "SKIP: cannot mount a tmpfs"; exit 77; }
trap 'rc=$?; for p in "${PIDS[@]}"; do kill -9 "$p" 2>/dev/null || true; done; wait 2>/dev/null; umount -l "$T/small" 2>/dev/null || true; (exit $rc); cleanup' EXIT
ln -s "$T/small" "$T/full"  # start_worker uses $T/NAME as the work dir

cat >"$T/big.toml" <<'TOML'
name = "needs-100MiB"
command = ["sh", "-c", "dd if=/dev/zero of=big.bin bs=1M count=100 2>/dev/null && echo ok > out.txt"]
count = 1
outputs = ["out.txt"]
[retry]
max_attempts = 1
TOML
cat >"$T/small.toml" <<'TOML'
name = "tiny"
command = ["sh", "-c", "echo hi > out.txt"]
count = 1
outputs = ["out.txt"]
TOML
accepting() { "$IDLEPOOL" workers --json | jq -r --arg w "$1" '.workers[] | select(.worker==$w) | .accepting'; }
reason() { "$IDLEPOOL" workers --json | jq -r --arg w "$1" '.workers[] | select(.worker==$w) | .owner_reason'; }
disk_full_said() { [ "$(accepting "$1")" = false ] && reason "$1" | grep -q "disk full"; }
accepts() { [ "$(accepting "$1")" = true ]; }

start_coordinator
start_worker full --slots 1 --min-free-disk 8M
wait_until 20 is_connected full
JOB=$("$IDLEPOOL" submit "$T/big.toml")
wait_until 60 job_at_least "$JOB" machine_faults 1
[ "$(job_field "$JOB" failures)" = 0 ] || fail "a full disk counted as a task failure"
[ "$(job_field "$JOB" state)" = running ] || fail "job should wait for another worker: $("$IDLEPOOL" status "$JOB")"
outcome=$(sql "SELECT outcome FROM attempts WHERE job_id=$JOB ORDER BY id LIMIT 1")
[ "$outcome" = machine_fault ] || fail "first attempt ended $outcome, want machine_fault"

start_worker ok --slots 1
wait_until 60 job_done "$JOB"
[ "$(job_field "$JOB" state)" = succeeded ] || fail "job: $("$IDLEPOOL" status "$JOB")"
[ "$(sql "SELECT worker FROM attempts WHERE job_id=$JOB AND outcome='succeeded'")" = ok ] ||
  fail "the task should have run on the worker with space"
[ "$(job_field "$JOB" failures)" = 0 ] || fail "failures counted: $("$IDLEPOOL" status "$JOB")"
pass "disk full: machine fault, task moved to another worker, no failure counted"

# No work while the disk is full; work again once space frees.
kill "$WPID_ok"; wait "$WPID_ok" 2>/dev/null || true
wait_until 20 accepts full  # its disk has room again (the failed attempt's files are gone)
dd if=/dev/zero of="$T/small/filler" bs=1M count=60 2>/dev/null || true
wait_until 20 disk_full_said full
JOB2=$("$IDLEPOOL" submit "$T/small.toml")
[ "$(job_field "$JOB2" attempts)" = 0 ] && [ "$(job_field "$JOB2" pending)" = 1 ] ||
  fail "work was placed on a worker with a full disk: $("$IDLEPOOL" status "$JOB2")"
rm -f "$T/small/filler"
wait_until 20 accepts full
wait_until 60 job_done "$JOB2"
[ "$(job_field "$JOB2" state)" = succeeded ] || fail "job 2: $("$IDLEPOOL" status "$JOB2")"
[ "$(sql "SELECT worker FROM attempts WHERE job_id=$JOB2")" = full ] || fail "job 2 ran elsewhere"
pass "no work while the disk was full ($(reason full)); work again once space freed"

#!/usr/bin/env bash
# A full data dir never kills the coordinator (issue 21 point 8). Its data dir is a real 256 MiB
# tmpfs:
#  1. abandoned partial uploads (bench/attacks/disk_fill.sh: sparse, 16 MiB declared, 12 MiB
#     sent each) are admitted only while their declared sizes fit above the reserve: the rest
#     are refused with an error naming the data dir and the numbers, the disk keeps room, the
#     store keeps committing (a running job completes), a big upload is refused too; after the
#     idle limit the partials are gone and du of the data dir is back near its start;
#  2. something else fills the disk to the last byte: the store's commit fails (SQLITE_FULL),
#     the coordinator holds it instead of dying, refuses submissions, and commits once space is
#     freed;
#  3. killed on a full disk, the coordinator starts again, and once space is freed a normal job
#     completes with every output exactly once.
# Memory (VmRSS/VmHWM) and fds of the coordinator are measured at idle and after each attack.
source "$(dirname "$0")/lib.sh"
[ "$(id -u)" = 0 ] || { echo "SKIP: mounting a size-limited tmpfs needs root"; exit 77; }
ABANDON=$(dirname "$IDLEPOOL")/idlepool-abandon-uploads
[ -x "$ABANDON" ] || { echo "SKIP: no $ABANDON"; exit 77; }
source "$(dirname "$0")/../../bench/attacks/disk_fill.sh"
mkdir -p "$T/coord"
mount -t tmpfs -o size=256m idlepool-test "$T/coord" 2>/dev/null || { echo "SKIP: cannot mount a tmpfs"; exit 77; }
trap 'rc=$?; set +e; for p in "${PIDS[@]}"; do kill -9 "$p" 2>/dev/null || true; done; wait 2>/dev/null; umount -l "$T/coord" 2>/dev/null || true; (exit $rc); cleanup' EXIT
MiB=$((1024 * 1024))

kib_of() { awk -v k="$2:" '$1 == k {print $2}' "/proc/$1/status"; }
fds_of() { ls "/proc/$1/fd" | wc -l; }
used_kib() { du -sk "$T/coord" | cut -f1; }
no_partials() { [ -z "$(ls -A "$T/coord/blobs/partial")" ]; }
alive() { kill -0 "$COORD_PID" 2>/dev/null && ! dead "$COORD_PID"; }
# Empties the store's WAL, so that its next commit needs new blocks (a WAL reuses its file: on a
# full disk a commit could otherwise land in space it already holds).
wal_truncate() { sqlite3 "$T/coord/pool.db" "PRAGMA wal_checkpoint(TRUNCATE)" >/dev/null; }
fill_disk() { dd if=/dev/zero of="$T/coord/filler" bs=1M 2>/dev/null || true; }
log_has() { grep -q "$1" "$T/coordinator.log"; }
# Resident memory back within 16 MiB of its idle level (the sweeper's pass trims the heaps).
rss_near_idle() { [ "$(kib_of "$COORD_PID" VmRSS)" -le $((rss0 + 16384)) ]; }

# A task that waits for FILE, then writes its output (or fails, for EXIT != 0).
held_job() {  # held_job NAME FILE EXIT
  cat >"$T/$1.toml" <<TOML
name = "$1"
command = ["sh", "-c", "while [ ! -e $2 ]; do sleep 0.05; done; echo ok > out.txt; exit $3"]
count = 1
outputs = ["out.txt"]
[retry]
max_attempts = 1
TOML
  "$IDLEPOOL" submit "$T/$1.toml"
}
cat >"$T/normal.toml" <<TOML
name = "normal"
command = ["sh", "-c", "test \$(stat -c %s in.bin) = $((2 * MiB)) && echo ok > out-{index}.txt"]
count = 3
inputs = ["$T/in.bin"]
outputs = ["out-*.txt"]
TOML
head -c $((2 * MiB)) /dev/urandom >"$T/in.bin"
cat >"$T/big.toml" <<TOML
name = "big-input"
command = ["true"]
count = 1
inputs = ["$T/big.bin"]
TOML
head -c $((100 * MiB)) /dev/zero >"$T/big.bin"

start_coordinator --partial-idle-ms 8000
start_worker w1 --slots 2
wait_until 20 is_connected w1
used0=$(used_kib)
rss0=$(kib_of "$COORD_PID" VmRSS); fds0=$(fds_of "$COORD_PID")
echo "idle: data dir ${used0} KiB, coordinator VmRSS ${rss0} KiB, ${fds0} fds"

# --- 1. abandoned partial uploads -------------------------------------------------------------
JOB1=$(held_job hold1 go1 0)
wait_until 30 is_busy w1
DISK_FILL_COUNT=40 DISK_FILL_MIB=16 DISK_FILL_CHUNKS=12 attack_disk_fill >/dev/null
abandoned=$(jq -r .abandoned "$T/disk_fill.json"); refused=$(jq -r .refused "$T/disk_fill.json")
echo "fill: $abandoned abandoned, $refused refused; data dir $(used_kib) KiB; $(df -k "$T/coord" | tail -1)"
alive || fail "the coordinator died during the fill"
[ "$refused" -gt 0 ] || fail "no upload was refused: $(cat "$T/disk_fill.json")"
[ "$abandoned" -gt 0 ] || fail "no upload was admitted: $(cat "$T/disk_fill.json")"
jq -r .first_refusal "$T/disk_fill.json" | grep -q "$T/coord/blobs is nearly full.*kept for" ||
  fail "unclear refusal: $(jq -r .first_refusal "$T/disk_fill.json")"
avail=$(df -k --output=avail "$T/coord" | tail -1)
[ "$avail" -ge $((60 * 1024)) ] || fail "the fill left ${avail} KiB: it ate into the reserve"
rss1=$(kib_of "$COORD_PID" VmRSS); fds1=$(fds_of "$COORD_PID")
if "$IDLEPOOL" submit "$T/big.toml" >"$T/big.out" 2>&1; then fail "a 100 MiB upload was admitted"; fi
grep -q "nearly full" "$T/big.out" || fail "big upload: unclear error: $(cat "$T/big.out")"
open_gate go1
wait_until 60 job_done "$JOB1"
[ "$(job_field "$JOB1" state)" = succeeded ] || fail "job 1: $("$IDLEPOOL" status "$JOB1")"
assert_outputs_once "$JOB1" 1
pass "fill: $abandoned admitted, $refused refused ($(jq -r .first_refusal "$T/disk_fill.json" | sed 's/.* refused: //')); a running job completed"
wait_until 60 no_partials
used1=$(used_kib)
[ "$used1" -le $((used0 + 4096)) ] || fail "data dir ${used1} KiB after the partials went, ${used0} KiB at start"
log_has "removed .* abandoned partial uploads" || fail "the removal was not logged"
pass "abandoned partials removed after the idle limit: data dir ${used0} -> ${used1} KiB"
wait_until 30 rss_near_idle
rss1b=$(kib_of "$COORD_PID" VmRSS)

# --- 2. the disk filled to the last byte by something else ------------------------------------
JOB2=$(held_job hold2 go2 3)  # fails: its end is a record with no upload before it
wait_until 30 is_busy w1
wal_truncate
fill_disk
open_gate go2
wait_until 30 log_has "holding .* decisions"
alive || fail "the coordinator died when the store's commit failed"
log_has "store write failed, the disk of $T/coord is full" || fail "the held commit was not logged clearly"
if "$IDLEPOOL" submit "$T/normal.toml" >"$T/refused.out" 2>&1; then fail "a job was admitted on a full disk"; fi
grep -q "nearly full" "$T/refused.out" || fail "submit on a full disk: unclear error: $(cat "$T/refused.out")"
rm -f "$T/coord/filler"
wait_until 30 log_has "held decisions committed"
wait_until 60 job_done "$JOB2"
[ "$(job_field "$JOB2" state)" = failed ] || fail "job 2: $("$IDLEPOOL" status "$JOB2")"
[ "$(sql "SELECT count(*) FROM attempts WHERE job_id=$JOB2")" = 1 ] || fail "job 2 ran twice"
pass "a commit on a full disk was held, not fatal; submissions refused; committed once space came back"

# --- 3. a restart on a full disk ---------------------------------------------------------------
rss2=$(kib_of "$COORD_PID" VmRSS); hwm=$(kib_of "$COORD_PID" VmHWM); fds2=$(fds_of "$COORD_PID")
wal_truncate
fill_disk
kill -9 "$COORD_PID"; wait "$COORD_PID" 2>/dev/null || true
start_coordinator --partial-idle-ms 8000
wait_until 30 is_connected w1
alive || fail "the coordinator did not stay up after a start on a full disk"
if "$IDLEPOOL" submit "$T/normal.toml" >"$T/refused3.out" 2>&1; then fail "a job was admitted on a full disk"; fi
grep -q "nearly full" "$T/refused3.out" || fail "submit after the restart: unclear error: $(cat "$T/refused3.out")"
rm -f "$T/coord/filler"
JOB3=$("$IDLEPOOL" submit "$T/normal.toml")
wait_until 60 job_done "$JOB3"
[ "$(job_field "$JOB3" state)" = succeeded ] || fail "job 3: $("$IDLEPOOL" status "$JOB3")"
assert_outputs_once "$JOB3" 3
pass "restarted on a full disk; a normal job completed with its outputs once"
echo "coordinator VmRSS: idle ${rss0} KiB, after the fill ${rss1} KiB, once the partials went ${rss1b} KiB, after the full disk ${rss2} KiB (VmHWM ${hwm} KiB); fds ${fds0} -> ${fds1} -> ${fds2}"
[ "$fds2" -le $((fds0 + 8)) ] || fail "fds grew: ${fds0} -> ${fds2}"
[ "$rss2" -le $((rss0 + 16384)) ] || fail "VmRSS grew: ${rss0} -> ${rss2} KiB"

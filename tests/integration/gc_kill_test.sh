#!/usr/bin/env bash
# A collection interrupted at any point loses nothing a live job needs (issue 18 point 6): the
# coordinator runs with IDLEPOOL_FAULT_GC_KILL_AT=N (it SIGKILLs itself just before step N of its
# collections: the delete's row removal, core forget, log removal, the mark, each blob removal),
# for N = 1, 2, ... until a delete runs to its end. After each kill and restart: every blob a row
# names (outputs, checkpoints) and every input of a job still stored is there and hashes to its
# name, the job kept in the store (which shares an input with the deleted one) is whole, and the
# deleted job is either whole or gone. Then a normal job completes with every output exactly once.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/gc_lib.sh"
intact() { [ -f "$(blob_path "$1")" ] && [ "$(sha_of "$(blob_path "$1")")" = "$1" ]; }
declare -A INPUT  # job -> its own input's sha256, while it is stored
check_store() {
  local s j
  for s in $(sql "SELECT sha256 FROM outputs UNION SELECT sha256 FROM checkpoints"); do
    intact "$s" || fail "after a kill at step $N: blob $s named by a row is missing or corrupt"
  done
  intact "$SHARED" || fail "after a kill at step $N: the kept job's input is missing"
  for j in "${!INPUT[@]}"; do
    if [ "$(sql "SELECT count(*) FROM jobs WHERE id=$j")" = 1 ]; then
      intact "${INPUT[$j]}" || fail "after a kill at step $N: job $j's input is missing"
      [ "$(sql "SELECT count(*) FROM outputs WHERE job_id=$j")" = 2 ] || fail "job $j lost outputs"
    else
      [ "$(sql "SELECT count(*) FROM tasks WHERE job_id=$j")" = 0 ] || fail "job $j half deleted"
      unset "INPUT[$j]"
    fi
  done
}

head -c 300000 /dev/urandom >"$T/shared.bin"
SHARED=$(sha_of "$T/shared.bin")
job_spec keep "$T/shared.bin"
start_coordinator
start_worker w1 --slots 2
wait_until 20 is_connected w1
KEEP=$("$IDLEPOOL" submit "$T/keep.toml")
wait_until 60 job_done "$KEEP"
[ "$(job_field "$KEEP" state)" = succeeded ] || fail "job keep: $("$IDLEPOOL" status "$KEEP")"

finished=""
for N in $(seq 1 30); do
  head -c 100000 /dev/urandom >"$T/own-$N.bin"
  job_spec "del-$N" "$T/shared.bin" "$T/own-$N.bin"
  wait_until 20 is_connected w1
  J=$("$IDLEPOOL" submit "$T/del-$N.toml")
  INPUT[$J]=$(sha_of "$T/own-$N.bin")
  wait_until 60 job_done "$J"
  [ "$(job_field "$J" state)" = succeeded ] || fail "job $J: $("$IDLEPOOL" status "$J")"
  kill "$COORD_PID"; wait "$COORD_PID" 2>/dev/null || true
  export IDLEPOOL_FAULT_GC_KILL_AT=$N
  start_coordinator
  unset IDLEPOOL_FAULT_GC_KILL_AT
  rc=0; "$IDLEPOOL" delete "$J" >"$T/delete.out" 2>&1 || rc=$?
  if [ "$rc" = 0 ]; then
    ! dead "$COORD_PID" || fail "delete answered but the coordinator died"
    finished=$N
    check_store
    break
  fi
  wait_until 20 dead "$COORD_PID"
  wait "$COORD_PID" 2>/dev/null || true
  grep -q "SIGKILL before collection step $N " "$T/coordinator.log" || fail "step $N: not the fault hook: $(cat "$T/delete.out")"
  start_coordinator
  check_store
  echo "step $N: $(grep "SIGKILL before collection step $N " "$T/coordinator.log" | sed 's/.*(//; s/).*//'): store consistent, live blobs intact"
  if [ -n "${INPUT[$J]:-}" ]; then "$IDLEPOOL" delete "$J" >/dev/null; check_store; fi
done
[ -n "$finished" ] || fail "no delete ran to its end in 30 steps"
[ "$finished" -ge 5 ] || fail "a delete finished at step $finished: fewer steps than rows, core, logs, mark and a blob"
pass "killed before each of $((finished - 1)) steps of a delete: nothing a live job needs was lost"

wait_until 20 is_connected w1
LAST=$("$IDLEPOOL" submit "$T/keep.toml")
wait_until 60 job_done "$LAST"
[ "$(job_field "$LAST" state)" = succeeded ] || fail "last job: $("$IDLEPOOL" status "$LAST")"
assert_outputs_once "$LAST" 2
pass "a normal job then completed with every output exactly once"

#!/usr/bin/env bash
# Collecting the coordinator's blobs (issue 18 point 6), with real processes:
#  1. a running job is not deleted without --cancel (the error names the flag); with it, it is
#     cancelled, deleted, and gone from status and the job list;
#  2. `idlepool delete` of a finished job removes its rows and the blobs only it used (its own
#     input, its outputs), and keeps an input another job still uses;
#  3. `idlepool gc --dry-run` lists an unreferenced blob past the grace and removes nothing;
#     `idlepool gc` removes it and keeps an unreferenced blob within the grace (an upload whose
#     SubmitJob may still come);
#  4. --keep-finished deletes finished jobs by itself, and a normal job then completes with
#     every output exactly once.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/gc_lib.sh"
has_blob() { [ -f "$(blob_path "$1")" ]; }
listed() { "$IDLEPOOL" status --json | jq -e --argjson j "$1" '[.jobs[].job] | index($j) != null' >/dev/null; }
gone() { ! listed "$1" && ! "$IDLEPOOL" status "$1" >/dev/null 2>&1; }
out_shas() { sql "SELECT sha256 FROM outputs WHERE job_id=$1"; }

head -c 300000 /dev/urandom >"$T/shared.bin"
head -c 200000 /dev/urandom >"$T/own.bin"
job_spec a "$T/shared.bin" "$T/own.bin"
job_spec b "$T/shared.bin"
cat >"$T/held.toml" <<TOML
name = "held"
command = ["sh", "-c", "while [ ! -e go ]; do sleep 0.05; done; echo ok > out.txt"]
count = 1
outputs = ["out.txt"]
TOML

start_coordinator
start_worker w1 --slots 2
wait_until 20 is_connected w1

# --- 1. a running job -------------------------------------------------------------------------
HELD=$("$IDLEPOOL" submit "$T/held.toml")
wait_until 30 is_busy w1
rc=0; out=$("$IDLEPOOL" delete "$HELD" 2>&1) || rc=$?
[ "$rc" != 0 ] || fail "a running job was deleted without --cancel"
grep -q -- "--cancel" <<<"$out" || fail "the refusal does not name --cancel: $out"
[ "$(job_field "$HELD" state)" = running ] || fail "the refused delete changed the job"
"$IDLEPOOL" delete "$HELD" --cancel || fail "delete --cancel failed"
gone "$HELD" || fail "job $HELD still shown after delete --cancel"
[ "$(sql "SELECT count(*) FROM attempts WHERE job_id=$HELD")" = 0 ] || fail "its attempts stayed"
pass "a running job: refused without --cancel ($out); cancelled and deleted with it"

# --- 2. delete of a finished job ----------------------------------------------------------------
A=$("$IDLEPOOL" submit "$T/a.toml")
B=$("$IDLEPOOL" submit "$T/b.toml")
wait_until 60 job_done "$A"
wait_until 60 job_done "$B"
[ "$(job_field "$A" state)" = succeeded ] || fail "job a: $("$IDLEPOOL" status "$A")"
[ "$(job_field "$B" state)" = succeeded ] || fail "job b: $("$IDLEPOOL" status "$B")"
SHARED=$(sha_of "$T/shared.bin"); OWN=$(sha_of "$T/own.bin")
A_OUTS=$(out_shas "$A"); B_OUTS=$(out_shas "$B")
for s in $SHARED $OWN $A_OUTS $B_OUTS; do has_blob "$s" || fail "blob $s missing before the delete"; done
out=$("$IDLEPOOL" delete "$A")
echo "$out"
gone "$A" || fail "job $A still shown after its delete"
for t in jobs tasks attempts outputs checkpoints; do
  col=job_id; [ "$t" = jobs ] && col=id
  [ "$(sql "SELECT count(*) FROM $t WHERE $col=$A")" = 0 ] || fail "rows of job $A left in $t"
done
! has_blob "$OWN" || fail "the deleted job's own input is still there"
for s in $A_OUTS; do ! has_blob "$s" || fail "output blob $s of the deleted job is still there"; done
has_blob "$SHARED" || fail "the input job $B still uses was removed"
for s in $B_OUTS; do has_blob "$s" || fail "job $B's output $s was removed"; done
grep -q "3 blobs removed" <<<"$out" || fail "unexpected count: $out"
pass "delete: job $A's rows, own input and outputs gone; job $B's input and outputs kept"

# --- 3. gc --dry-run, then gc --------------------------------------------------------------------
# Two blobs nothing references, as an upload whose SubmitJob never came leaves them: one untouched
# for two hours (past the 1 h grace), one just written.
put_orphan() {  # put_orphan FILE AGE
  local s; s=$(sha_of "$1")
  mkdir -p "$(dirname "$(blob_path "$s")")"
  cp "$1" "$(blob_path "$s")"
  touch -d "$2" "$(blob_path "$s")"
  echo "$s"
}
head -c 5000 /dev/urandom >"$T/old.bin"; head -c 7000 /dev/urandom >"$T/new.bin"
OLD=$(put_orphan "$T/old.bin" "2 hours ago"); NEW=$(put_orphan "$T/new.bin" "now")
dry=$("$IDLEPOOL" gc --dry-run --data-dir "$T/coord" --json)
[ "$(jq -r .dry_run <<<"$dry")" = true ] || fail "not a dry run: $dry"
[ "$(jq -r '.blobs | map(.sha256) | join(",")' <<<"$dry")" = "$OLD" ] || fail "dry run lists: $dry"
[ "$(jq -r .bytes <<<"$dry")" = 5000 ] || fail "dry run bytes: $dry"
has_blob "$OLD" || fail "gc --dry-run removed a blob"
"$IDLEPOOL" gc --data-dir "$T/coord"
! has_blob "$OLD" || fail "gc left the unreferenced blob past the grace"
has_blob "$NEW" || fail "gc removed a blob within the grace"
for s in $SHARED $B_OUTS; do has_blob "$s" || fail "gc removed job $B's blob $s"; done
pass "gc --dry-run said what would go ($(jq -c '{blob_count, bytes}' <<<"$dry")) and removed nothing; gc removed it"

# --- 4. --keep-finished -------------------------------------------------------------------------
kill "$COORD_PID"; wait "$COORD_PID" 2>/dev/null || true
start_coordinator --keep-finished 1s --gc-every-ms 200
wait_until 30 gone "$B"
wait_until 30 eval '! has_blob "$SHARED"'
grep -q "gc: 1 finished jobs deleted" "$T/coordinator.log" || fail "the retention was not logged"
kill "$COORD_PID"; wait "$COORD_PID" 2>/dev/null || true
start_coordinator  # keeps what finishes now, for the check below
wait_until 20 is_connected w1
C=$("$IDLEPOOL" submit "$T/b.toml")
wait_until 60 job_done "$C"
[ "$(job_field "$C" state)" = succeeded ] || fail "job c: $("$IDLEPOOL" status "$C")"
assert_outputs_once "$C" 2
pass "--keep-finished 1s deleted job $B by itself; a new job completed with its outputs once"

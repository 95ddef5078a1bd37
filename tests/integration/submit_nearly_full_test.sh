#!/usr/bin/env bash
# A coordinator whose disk is nearly full refuses new jobs (issue 18 point 6) instead of accepting
# them and failing them halfway when their outputs cannot be stored: below twice the reserve
# (blob/space.h kSubmitReserveMultiple; the reserve is 64 MiB on this 256 MiB tmpfs) a submission
# is refused with an error naming the data dir, the free space and the threshold; once space is
# freed, the same job is accepted and completes with every output exactly once.
source "$(dirname "$0")/lib.sh"
[ "$(id -u)" = 0 ] || { echo "SKIP: mounting a size-limited tmpfs needs root"; exit 77; }
mkdir -p "$T/coord"
mount -t tmpfs -o size=256m idlepool-test "$T/coord" 2>/dev/null || { echo "SKIP: cannot mount a tmpfs"; exit 77; }
trap 'rc=$?; set +e; for p in "${PIDS[@]}"; do kill -9 "$p" 2>/dev/null || true; done; wait 2>/dev/null; umount -l "$T/coord" 2>/dev/null || true; (exit $rc); cleanup' EXIT
cat >"$T/job.toml" <<TOML
name = "small"
command = ["sh", "-c", "echo {index} > out-{index}.txt"]
count = 2
outputs = ["out-*.txt"]
TOML
start_coordinator
start_worker w1
wait_until 20 is_connected w1
# Leave about 100 MiB: above one reserve (uploads and commits still go), below two.
avail_kib=$(df -k --output=avail "$T/coord" | tail -1)
fallocate -l $(( (avail_kib - 100 * 1024) * 1024 )) "$T/coord/filler"
rc=0; out=$("$IDLEPOOL" submit "$T/job.toml" 2>&1) || rc=$?
[ "$rc" != 0 ] || fail "a job was accepted on a nearly full disk"
for want in "nearly full" "$T/coord/blobs" "MiB free" "kept free before a new job is accepted"; do
  grep -qF "$want" <<<"$out" || fail "the refusal does not say '$want': $out"
done
[ "$("$IDLEPOOL" status --json | jq '.jobs | length')" = 0 ] || fail "the refused job was stored"
pass "refused: $out"
rm -f "$T/coord/filler"
J=$("$IDLEPOOL" submit "$T/job.toml")
wait_until 60 job_done "$J"
[ "$(job_field "$J" state)" = succeeded ] || fail "job: $("$IDLEPOOL" status "$J")"
assert_outputs_once "$J" 2
pass "once space was freed the job was accepted and completed with its outputs once"

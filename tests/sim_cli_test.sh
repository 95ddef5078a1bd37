#!/usr/bin/env bash
# `idlepool sim` end to end: the same seed prints the same bytes, a different seed does not;
# real traces and models run; bad input exits 2 naming the file and line or the option; a
# planted bug makes --dst exit 1 with the seed to replay, and the replay fails the same way.
set -euo pipefail
: "${IDLEPOOL:?set IDLEPOOL to the idlepool binary}"
DATA=${IDLEPOOL_SHARED_DATA:-$(dirname "$0")/../../shared/data}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

run() { "$IDLEPOOL" sim --workers 50 --tasks 2000 --task-seconds lognormal:60:0.5 \
          --speeds loguniform:0.5:2 --model nd07cpu --json --no-timing "$@"; }
run --seed 5 >"$T/a.json"
run --seed 5 >"$T/b.json"
run --seed 6 >"$T/c.json"
cmp -s "$T/a.json" "$T/b.json" || fail "seed 5 printed different output twice"
cmp -s "$T/a.json" "$T/c.json" && fail "seeds 5 and 6 printed the same output"
grep -q '"finished": true' "$T/a.json" || fail "the simulated job did not finish: $(cat "$T/a.json")"
for k in makespan_s lower_bound_s efficiency lost_work_s preemptions reassignments decisions; do
  grep -q "\"$k\"" "$T/a.json" || fail "no $k in the JSON output"
done
# The efficiency is the bound over the makespan, and never above 1.
num() { sed -n "s/^  \"$1\": \([-0-9.e+]*\),\{0,1\}$/\1/p" "$T/a.json"; }
awk -v e="$(num efficiency)" -v b="$(num lower_bound_s)" -v m="$(num makespan_s)" \
    -v p="$(num preemptions)" 'BEGIN {
  if (!(e > 0 && e <= 1)) { print "efficiency " e " is not in (0, 1]"; exit 1 }
  d = e - b / m; if (d < 0) d = -d
  if (d > 1e-9) { print "efficiency " e " is not bound " b " / makespan " m; exit 1 }
  if (!(p > 0)) { print "nd07cpu churn over a long job preempted nothing"; exit 1 }
}' || fail "inconsistent figures in $(cat "$T/a.json")"
# Real traces, when the shared data is there.
if [ -d "$DATA/traces" ]; then
  "$IDLEPOOL" sim --workers 20 --tasks 500 --trace "$DATA/traces/spot/preemption/4-node/aws-08-03-2023/us-west-2c_v100_1.json" >"$T/spot.txt"
  grep -q 'job succeeded' "$T/spot.txt" || fail "spot trace run: $(cat "$T/spot.txt")"
  "$IDLEPOOL" sim --workers 20 --tasks 500 --trace "$DATA/traces/stunner/peersim_session_100.txt" >"$T/stunner.txt"
  grep -q 'job succeeded' "$T/stunner.txt" || fail "STUNner trace run: $(cat "$T/stunner.txt")"
  "$IDLEPOOL" sim --workers 20 --tasks 500 --trace "$DATA/traces/fta/lanl05_event_trace.tab" >"$T/fta.txt"
  grep -q 'job succeeded' "$T/fta.txt" || fail "FTA trace run: $(cat "$T/fta.txt")"
fi

# Bad input: exit 2 and a message naming the place.
expect_2() {
  local want=$1; shift
  set +e
  "$IDLEPOOL" sim "$@" >"$T/out" 2>"$T/err"
  local rc=$?
  set -e
  [ "$rc" = 2 ] || fail "sim $* exited $rc, not 2: $(cat "$T/err")"
  grep -q -- "$want" "$T/err" || fail "sim $*: no '$want' in: $(cat "$T/err")"
}
printf 'user1 1 1000 0 3600000\nuser1 1 x 0 3600000\n' >"$T/bad.txt"
expect_2 "bad.txt:2" --trace "$T/bad.txt"
echo '{"metadata": {"gap_seconds": 60}, "data": [1, 2, -1]}' >"$T/bad.json"
expect_2 "data\[2\]" --trace "$T/bad.json"
expect_2 "no such" --trace "$T/missing.json"
expect_2 "unknown availability model" --model nosuchmodel
expect_2 "unknown kind 'gauss'" --task-seconds gauss:3
expect_2 "speed" --speeds 0
expect_2 "unknown bug" --dst --plant nosuchbug
expect_2 "shorter than --lease" --heartbeat 10 --lease 5
expect_2 "--lease: nan" --lease nan
expect_2 "passes 2^64" --dst --seeds 100 --seed 18446744073709551600
expect_2 "at most 1e8 s" --task-seconds 1e308
expect_2 "in \[0.001, 1000\]" --speeds 1e-300
expect_2 "not in range" --workers 0
# Deep nesting is described, never echoed (echoing it recursed until the stack ran out).
{ printf '{"metadata": {"gap_seconds": 300}, "data": ['; head -c 100000 /dev/zero | tr '\0' '['
  head -c 100000 /dev/zero | tr '\0' ']'; printf ']}\n'; } >"$T/deep.json"
expect_2 "data\[0\]'"': not an integer: an array' --trace "$T/deep.json"

# The harness fails on a planted bug, names the seed, and the replay fails the same way.
set +e
"$IDLEPOOL" sim --dst --seeds 50 --plant no-fencing >"$T/dst.txt"
rc=$?
set -e
[ "$rc" = 1 ] || fail "a planted fencing bug was not caught (exit $rc)"
replay=$(sed -n 's/^replay with: idlepool //p' "$T/dst.txt")
[ -n "$replay" ] || fail "no replay line in: $(cat "$T/dst.txt")"
# Without fencing a zombie's stale success is committed: seen as a second commit, or as a
# commit while the requeued attempt still runs.
grep -qE 'committed 2 times|is succeeded but still has' "$T/dst.txt" ||
  fail "no exactly-once violation in: $(cat "$T/dst.txt")"
set +e
"$IDLEPOOL" $replay >"$T/replay.txt"
rc=$?
set -e
[ "$rc" = 1 ] || fail "the replay ($replay) did not fail"
diff <(grep -v '^dst:' "$T/dst.txt") "$T/replay.txt" >/dev/null || fail "the replay differs from the first run"
echo "ok: deterministic output, traces and models run, bad input exits 2 with its place, planted bug caught and replayed ($replay)"

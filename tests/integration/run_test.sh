#!/usr/bin/env bash
# `idlepool run`: the embedded pool; JSON summary; exit code 0 only when the job succeeded;
# max_attempts counts failures.
source "$(dirname "$0")/lib.sh"
printf 'name = "sq"\ncommand = ["sh", "-c", "echo $(( {item} * {item} )) > sq-{index}.txt"]\nitems = ["1", "2", "3", "4", "5"]\noutputs = ["sq-*.txt"]\n' >"$T/ok.toml"
"$IDLEPOOL" run "$T/ok.toml" --local-workers 2 --out "$T/out" --json >"$T/run.json" 2>"$T/run.log" \
  || fail "run failed: $(cat "$T/run.log")"
jq -e '.state == "succeeded" and .tasks == 5 and .attempts == 5 and .failures == 0 and
       .preemptions == 0 and .workers_lost == 0 and (.outputs | length) == 5 and .job_id == 1 and
       .makespan_s >= 0' "$T/run.json" >/dev/null || fail "summary: $(cat "$T/run.json")"
[ "$(cat "$T/out/sq-3.txt")" = 16 ] || fail "sq-3.txt = $(cat "$T/out/sq-3.txt")"
# A task that always fails: 2 attempts (max_attempts), the job fails, exit code 1.
printf 'name = "bad"\ncommand = ["sh", "-c", "echo boom >&2; exit 3"]\ncount = 1\n[retry]\nmax_attempts = 2\n' >"$T/bad.toml"
rc=0; "$IDLEPOOL" run "$T/bad.toml" --local-workers 1 --out "$T/out2" --json >"$T/bad.json" 2>"$T/bad.log" || rc=$?
[ $rc = 1 ] || fail "failing job exit code $rc"
jq -e '.state == "failed" and .attempts == 2 and .failures == 2' "$T/bad.json" >/dev/null \
  || fail "failed summary: $(cat "$T/bad.json")"
# A command that does not exist fails clearly.
printf 'name = "nx"\ncommand = ["no-such-program-xyz"]\ncount = 1\n[retry]\nmax_attempts = 1\n' >"$T/nx.toml"
rc=0; "$IDLEPOOL" run "$T/nx.toml" --local-workers 1 --out "$T/out3" >"$T/nx.out" 2>&1 || rc=$?
[ $rc = 1 ] || fail "missing program exit code $rc"
grep -q "no-such-program-xyz" "$T/nx.out" || fail "no mention of the missing program: $(cat "$T/nx.out")"
pass "run: JSON summary, outputs, failure accounting and exit codes"

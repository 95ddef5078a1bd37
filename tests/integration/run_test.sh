#!/usr/bin/env bash
# `idlepool run`: the embedded pool; JSON summary; exit code 0 only when the job succeeded;
# max_attempts counts failures; a failed task's stderr tail.
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
# An output is a regular file: a symbolic link fails the attempt, whether it points inside the
# task dir or to a file of the lending machine (tests/integration/output_links_test.sh: more).
printf 'name = "ln"\ncommand = ["sh", "-c", "echo a > a.txt; ln -s a.txt b.txt"]\ncount = 1\noutputs = ["*.txt"]\n[retry]\nmax_attempts = 1\n' >"$T/ln-in.toml"
rc=0; "$IDLEPOOL" run "$T/ln-in.toml" --local-workers 1 --out "$T/out4" >"$T/ln-in.out" 2>&1 || rc=$?
[ $rc = 1 ] || fail "a link inside the task dir was accepted (rc $rc)"
grep -q "output 'b.txt' is a symbolic link" "$T/ln-in.out" || fail "link message: $(cat "$T/ln-in.out")"
printf 'name = "ln"\ncommand = ["ln", "-s", "/etc/hostname", "h.txt"]\ncount = 1\noutputs = ["*.txt"]\n[retry]\nmax_attempts = 1\n' >"$T/ln-out.toml"
rc=0; "$IDLEPOOL" run "$T/ln-out.toml" --local-workers 1 --out "$T/out5" >"$T/ln.out" 2>&1 || rc=$?
[ $rc = 1 ] || fail "a link out of the task dir was accepted (rc $rc)"
grep -q "output 'h.txt' is a symbolic link" "$T/ln.out" || fail "link message: $(cat "$T/ln.out")"
[ ! -e "$T/out5/h.txt" ] || fail "the worker's /etc/hostname was shipped as an output"
# Text that is not clean UTF-8 never jams a worker: a failing task whose stderr tail is cut in
# the middle of a character, and an output file name that is not UTF-8, fail cleanly.
cat >"$T/utf.toml" <<'TOML'
name = "utf"
command = ["sh", "-c", "i=0; while [ $i -lt 1500 ]; do printf '\\303\\251' >&2; i=$((i+1)); done; printf z >&2; exit 5"]
count = 1
[retry]
max_attempts = 1
TOML
rc=0; "$IDLEPOOL" run "$T/utf.toml" --local-workers 1 --out "$T/out7" --json >"$T/utf.json" 2>"$T/utf.log" || rc=$?
[ $rc = 1 ] || fail "utf job rc $rc: $(cat "$T/utf.log")"
jq -e '.state == "failed" and .attempts == 1' "$T/utf.json" >/dev/null || fail "utf: $(cat "$T/utf.json")"
cat >"$T/latin1.toml" <<'TOML'
name = "latin1"
command = ["sh", "-c", "echo hi > \"$(printf 'caf\\351.png')\""]
count = 1
outputs = ["*.png"]
[retry]
max_attempts = 1
TOML
rc=0; "$IDLEPOOL" run "$T/latin1.toml" --local-workers 1 --out "$T/out8" >"$T/latin1.out" 2>&1 || rc=$?
[ $rc = 1 ] || fail "latin1 job rc $rc: $(cat "$T/latin1.out")"
grep -q "not valid UTF-8" "$T/latin1.out" || fail "latin1 message: $(cat "$T/latin1.out")"
# A spec error exits 2 (bad input), a failed job 1.
printf 'name = "x"\ncommand = ["true"]\ncount = 2000000\n' >"$T/big.toml"
rc=0; "$IDLEPOOL" run "$T/big.toml" --local-workers 1 --out "$T/out6" 2>/dev/null || rc=$?
[ $rc = 2 ] || fail "over-limit spec exit code $rc, want 2"
pass "run: JSON summary, outputs, failure accounting and exit codes"

# A failed task's last stderr lines are shown (bounded, the last ones), and run never points to a
# command that cannot work once its pool is gone (`idlepool logs`, `idlepool failures`).
printf 'name = "loud"\ncommand = ["sh", "-c", "for i in $(seq 1 15); do echo err-line-$i >&2; done; exit 4"]\ncount = 1\n[retry]\nmax_attempts = 1\n' >"$T/loud.toml"
rc=0; "$IDLEPOOL" run "$T/loud.toml" --local-workers 1 --out "$T/out9" >"$T/loud.out" 2>&1 || rc=$?
[ $rc = 1 ] || fail "loud job rc $rc: $(cat "$T/loud.out")"
grep -q "task 0 stderr (last lines):" "$T/loud.out" || fail "no stderr tail: $(cat "$T/loud.out")"
for i in 6 10 15; do grep -q "| err-line-$i$" "$T/loud.out" || fail "no err-line-$i: $(cat "$T/loud.out")"; done
! grep -q "err-line-5$" "$T/loud.out" || fail "more than the last 10 lines: $(cat "$T/loud.out")"
! grep -q "idlepool logs\|idlepool failures" "$T/loud.out" ||
  fail "run points to a command that cannot reach its pool: $(cat "$T/loud.out")"
pass "run: a failed task's last stderr lines, no command that cannot work after it exits"

#!/usr/bin/env bash
# Names a terminal would act on never become outputs: a spec's output pattern with a control
# character is refused at submit; a task that writes such a file has it refused by the
# coordinator (the attempt fails, naming the file escaped), and `fetch` never writes such a name.
# A `task_inputs` pattern matching more names than a submission can carry is refused naming the
# pattern, instead of exhausting the client's memory.
source "$(dirname "$0")/lib.sh"
ESC=$'\e'
start_coordinator
start_worker w1 --slots 1 --no-probe --no-calibrate
wait_until 30 is_connected w1

# 1. Refused in the spec: exit 2, one line, the field named.
printf 'command = ["true"]\ncount = 1\noutputs = ["a\\u001b]0;PWNED\\u0007.txt"]\n' >"$T/bad.toml"
rc=0; "$IDLEPOOL" submit "$T/bad.toml" >"$T/bad.out" 2>"$T/bad.err" || rc=$?
[ "$rc" = 2 ] || fail "an output name with ESC: exit $rc: $(cat -v "$T/bad.err")"
[ "$(wc -l <"$T/bad.err")" = 1 ] && grep -q "outputs.*control character" "$T/bad.err" ||
  fail "spec message: $(cat -v "$T/bad.err")"
! grep -q "$ESC" "$T/bad.err" || fail "the message carries the escape: $(cat -v "$T/bad.err")"
pass "an output pattern with a control character is refused at submit"

# 2. A task that writes such a file: the coordinator refuses it, the message escaped; nothing
# with a control character is ever written by fetch.
cat >"$T/evil.toml" <<'TOML'
name = "evil"
command = ["sh", "-c", "echo ok > good.txt; echo x > \"$(printf 'evil\\033]0;PWNED\\007.txt')\""]
count = 1
outputs = ["*.txt"]
[retry]
max_attempts = 1
TOML
JOB=$("$IDLEPOOL" submit "$T/evil.toml")
rc=0; "$IDLEPOOL" wait "$JOB" >"$T/wait.out" 2>&1 || rc=$?
[ "$(job_field "$JOB" state)" = failed ] || fail "job $JOB: $(job_field "$JOB" state), want failed"
"$IDLEPOOL" status "$JOB" --json | jq -r '.failed_tasks[0].message' >"$T/why.txt"
grep -q 'control character' "$T/why.txt" || fail "failure message: $(cat -v "$T/why.txt")"
grep -qF 'evil\x1b]0;PWNED\x07.txt' "$T/why.txt" || grep -qF 'evil\u001b' "$T/why.txt" ||
  grep -q 'evil.*PWNED' "$T/why.txt" || fail "the file is not named: $(cat -v "$T/why.txt")"
! grep -q "$ESC" "$T/why.txt" || fail "the message carries the escape: $(cat -v "$T/why.txt")"
rc=0; "$IDLEPOOL" fetch "$JOB" --out "$T/out" >"$T/fetch.out" 2>&1 || rc=$?
[ -z "$(find "$T/out" -name "*$ESC*" 2>/dev/null)" ] || fail "fetch wrote a name with ESC"
! grep -q "$ESC" "$T/fetch.out" || fail "fetch printed an escape: $(cat -v "$T/fetch.out")"
pass "a task's output named with an escape is refused; fetch writes no such name"

# 3. A glob bomb in task_inputs: every one of 20,000 tasks stages a file of a ~3,600-byte path.
deep=""
for i in $(seq 14); do deep+=$(printf "%0250d" "$i")/; done
mkdir -p "$T/bomb/$deep"
echo x >"$T/bomb/${deep}f.bin"
printf 'command = ["true"]\ncount = 20000\ntask_inputs = ["%sf.*"]\n' "$deep" >"$T/bomb/job.toml"
rc=0; "$IDLEPOOL" submit "$T/bomb/job.toml" >"$T/bomb.out" 2>"$T/bomb.err" || rc=$?
[ "$rc" = 1 ] || [ "$rc" = 2 ] || fail "glob bomb: exit $rc (want 1 or 2): $(head -c 600 "$T/bomb.err")"
[ "$(wc -l <"$T/bomb.err")" = 1 ] || fail "glob bomb: not one line: $(head -c 600 "$T/bomb.err")"
grep -q "task_inputs: task [0-9]*: pattern '.*' brings the job's per-task file names past 64 MiB" \
  "$T/bomb.err" || fail "glob bomb message: $(head -c 600 "$T/bomb.err")"
! grep -q bad_alloc "$T/bomb.err" || fail "bad_alloc: $(head -c 600 "$T/bomb.err")"
pass "a task_inputs pattern past the bound: one line naming the pattern"

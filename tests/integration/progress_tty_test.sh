#!/usr/bin/env bash
# `status` and `wait` on a terminal (a pseudo-terminal from util-linux script(1)) draw per-job
# progress bars and the workers by activity, redrawn in place with the cursor hidden and shown
# again; piped, they print the plain text scripts parse; --json stays JSON; TERM=dumb is plain;
# NO_COLOR and a non-UTF-8 locale give an uncoloured ASCII bar.
source "$(dirname "$0")/lib.sh"
command -v script >/dev/null || { echo "skip: no script(1) (util-linux)"; exit 77; }

# tty CMD...: runs CMD on a pseudo-terminal 100 columns wide; its output (CR removed) in $T/tty.out,
# its exit status in TTY_RC.
tty() {
  local cmd
  printf -v cmd '%q ' "$@"
  TTY_RC=0
  TERM=${TTY_TERM:-xterm} COLUMNS=100 script -qec "stty cols 100 2>/dev/null; $cmd" /dev/null \
    </dev/null >"$T/tty.raw" 2>&1 || TTY_RC=$?
  tr -d '\r' <"$T/tty.raw" >"$T/tty.out"
  sed 's/\x1b\[[0-9;?]*[A-Za-z]//g' "$T/tty.out" >"$T/tty.txt"  # the text without escapes
}
has() { grep -qF -- "$1" "$T/tty.out"; }   # in the raw output
text() { grep -qF -- "$1" "$T/tty.txt"; }  # in the text
show() { cat -v "$T/tty.out" | head -40; }
ESC=$'\e'

cat >"$T/job.toml" <<'TOML'
name = "bars"
command = ["sh", "-c", "sleep 0.3; [ {item} != bad ] && echo {item} > out-{index}.txt"]
items = ["a", "b", "bad", "c", "d"]
outputs = ["out-*.txt"]
[retry]
max_attempts = 1
TOML
start_coordinator
start_worker w1 --slots 1 --no-probe --no-calibrate
wait_until 30 is_connected w1

# 1. wait on a terminal: the bar, redrawn in place while the tasks finish one by one, the worker
# line, the cursor hidden then shown, and the job's details below; exit 1 (a task failed).
JOB=$("$IDLEPOOL" submit "$T/job.toml")
LC_ALL=C.UTF-8 tty "$IDLEPOOL" wait "$JOB"
[ "$TTY_RC" = 1 ] || fail "wait on a tty: rc $TTY_RC, want 1 (a task failed): $(show)"
has "${ESC}[?25l" || fail "wait did not hide the cursor: $(show)"
has "${ESC}[?25h" || fail "wait did not show the cursor again: $(show)"
has "█" || fail "no Unicode bar: $(show)"
has "✗" || fail "no failed segment in the bar: $(show)"
text "5/5 100%" || fail "no final count: $(show)"
text "job $JOB  bars  failed" || fail "no job header: $(show)"
grep -q "${ESC}\[[0-9]*A" "$T/tty.out" || fail "the bar was never redrawn in place: $(show)"
text "workers: 1 " || fail "no worker line: $(show)"
text "4 succeeded · 1 failed · 0 running" || fail "no counts line: $(show)"
text "attempts 5, failures 1" || fail "no details under the bar: $(show)"
text "task 2 failed" || fail "no failed task under the bar: $(show)"
pass "wait on a tty: bar redrawn in place, cursor restored, details below"

# 2. wait piped: exactly the plain text (progress lines on stderr, the job on stdout), no escapes.
"$IDLEPOOL" wait "$JOB" >"$T/wait.out" 2>"$T/wait.err" && fail "wait piped: rc 0 for a failed job"
grep -q "$ESC" "$T/wait.out" "$T/wait.err" && fail "escapes in piped wait: $(cat -v "$T/wait.out" "$T/wait.err")"
grep -q "█\|\[#" "$T/wait.out" "$T/wait.err" && fail "a bar in piped wait: $(cat "$T/wait.out")"
case "$(head -1 "$T/wait.out")" in "job $JOB  bars  failed  (user "*")") ;; *) fail "piped wait header: $(cat "$T/wait.out")" ;; esac
sed -n 2p "$T/wait.out" | grep -qx "  tasks 5: 4 succeeded, 0 running, 0 pending, 1 failed, 0 cancelled" \
  || fail "piped wait tasks line: $(cat "$T/wait.out")"
grep -qx "job $JOB: 4/5 succeeded, 0 running, 0 pending, 1 failed, 5 attempts, failed" "$T/wait.err" \
  || fail "piped wait progress line: $(cat "$T/wait.err")"
pass "wait piped: plain text"

# 3. status on a terminal: every job's bar, the workers by activity and one line per worker.
LC_ALL=C.UTF-8 tty "$IDLEPOOL" status
[ "$TTY_RC" = 0 ] || fail "status on a tty: rc $TTY_RC: $(show)"
text "job $JOB  bars  failed  in " || fail "status: no job header: $(show)"
has "█" || fail "status: no bar: $(show)"
text "workers: 1 idle" || fail "status: worker summary: $(show)"
grep -q "^  w1 .*idle .*0/1 slots busy" "$T/tty.txt" || fail "status: worker line: $(show)"
[ "$(LC_ALL=C.UTF-8 wc -L <"$T/tty.txt")" -le 100 ] \
  || fail "status: a line wider than the terminal: $(show)"
pass "status on a tty: bars and workers"

# 4. NO_COLOR and the C locale: an ASCII bar without colours (status JOB: its details too).
NO_COLOR=1 LC_ALL=C tty "$IDLEPOOL" status "$JOB"
[ "$TTY_RC" = 0 ] || fail "status JOB on a tty: rc $TTY_RC: $(show)"
grep -q "$ESC" "$T/tty.out" && fail "NO_COLOR: escapes printed: $(show)"
grep -q "^  \[#*x*\]  5/5 100%$" "$T/tty.out" || fail "NO_COLOR: no ASCII bar: $(show)"
grep -q "█" "$T/tty.out" && fail "C locale: Unicode bar: $(show)"
text "attempts 5, failures 1" || fail "status JOB: no details: $(show)"
pass "status JOB with NO_COLOR in the C locale: ASCII bar"

# 5. Piped status, --json on a terminal and TERM=dumb: no bars.
"$IDLEPOOL" status >"$T/status.out"
head -1 "$T/status.out" | grep -q "^JOB *NAME *USER *STATE *DONE *TASKS *FAILED *ATTEMPTS$" \
  || fail "piped status: the table: $(cat "$T/status.out")"
grep -q "$ESC\|█" "$T/status.out" && fail "piped status: a bar: $(cat -v "$T/status.out")"
tty "$IDLEPOOL" status "$JOB" --json
jq -e --argjson j "$JOB" '.job == $j and .succeeded == 4 and .failed == 1' "$T/tty.out" >/dev/null \
  || fail "status --json on a tty: $(show)"
TTY_TERM=dumb tty "$IDLEPOOL" status
grep -q "$ESC\|█" "$T/tty.out" && fail "TERM=dumb: a bar: $(show)"
head -1 "$T/tty.out" | grep -q "^JOB *NAME" || fail "TERM=dumb: not the table: $(show)"
pass "piped, --json and TERM=dumb: no bars"

# 6. Ctrl-C (SIGINT) during wait on a terminal: the cursor is shown again and the line ended
# before the default action ends the process.
cat >"$T/long.toml" <<'TOML'
name = "long"
command = ["sh", "-c", "sleep 60"]
count = 1
TOML
JOB2=$("$IDLEPOOL" submit "$T/long.toml")
# Job control on: a background command of a script would otherwise start with SIGINT ignored.
set -m
TERM=xterm script -qec "echo \$\$ >$T/wait.pid; exec $(printf '%q' "$IDLEPOOL") wait $JOB2" /dev/null \
  </dev/null >"$T/int.raw" 2>&1 &
SCRIPT_PID=$!
set +m
PIDS+=($SCRIPT_PID)
wait_until 30 grep -q "1 running" "$T/int.raw"
kill -INT "$(cat "$T/wait.pid")"
INT_RC=0; wait "$SCRIPT_PID" || INT_RC=$?
[ "$INT_RC" != 0 ] || fail "wait exited 0 after SIGINT: $(cat -v "$T/int.raw")"
tail -c 20 "$T/int.raw" | tr -d '\r' | grep -q "${ESC}\[?25h$" \
  || fail "SIGINT left the cursor hidden or the line open: $(tail -c 200 "$T/int.raw" | cat -v)"
"$IDLEPOOL" cancel "$JOB2" >/dev/null
pass "SIGINT during wait on a tty: cursor shown, line ended (rc $INT_RC)"

# 7. submit and fetch on a terminal: the transfer meter (bytes, rate), ending in a summary line;
# piped, stderr holds only what it always held.
head -c $((8 << 20)) /dev/urandom >"$T/blob.bin"
cat >"$T/up.toml" <<'TOML'
name = "up"
command = ["sh", "-c", "cp blob.bin copy.bin"]
count = 1
inputs = ["blob.bin"]
outputs = ["copy.bin"]
TOML
tty "$IDLEPOOL" submit "$T/up.toml"
[ "$TTY_RC" = 0 ] || fail "submit on a tty: rc $TTY_RC: $(show)"
grep -q "uploaded inputs: 8.0 MiB in [0-9.]* s ([0-9.]* [KMG]iB/s)" "$T/tty.txt" ||
  fail "submit on a tty: no transfer summary: $(show)"
UP=$(grep -o '^[0-9][0-9]*$' "$T/tty.txt" | head -1)
"$IDLEPOOL" wait "$UP" --quiet >/dev/null || fail "job $UP failed"
tty "$IDLEPOOL" fetch "$UP" --out "$T/fetched"
[ "$TTY_RC" = 0 ] || fail "fetch on a tty: rc $TTY_RC: $(show)"
grep -q "fetched outputs: 8.0 MiB in [0-9.]* s" "$T/tty.txt" || fail "fetch on a tty: no meter: $(show)"
cmp -s "$T/blob.bin" "$T/fetched/copy.bin" || fail "fetched bytes differ"
head -c $((8 << 20)) /dev/urandom >"$T/blob.bin"  # new bytes: the upload happens again
"$IDLEPOOL" submit "$T/up.toml" >"$T/sub.out" 2>"$T/sub.err" || fail "piped submit failed"
[ "$(cat "$T/sub.err")" = "submitted job $(cat "$T/sub.out") 'up': 1 task" ] ||
  fail "piped submit: stderr $(cat -v "$T/sub.err")"
"$IDLEPOOL" wait "$(cat "$T/sub.out")" --quiet >/dev/null || fail "second up job failed"
"$IDLEPOOL" fetch "$(cat "$T/sub.out")" --out "$T/fetched2" >"$T/fetch.out" 2>"$T/fetch.err" ||
  fail "piped fetch failed"
[ ! -s "$T/fetch.err" ] || fail "piped fetch: stderr $(cat -v "$T/fetch.err")"
grep -q "$ESC\|MiB/s" "$T/fetch.out" && fail "piped fetch: a meter in stdout: $(cat -v "$T/fetch.out")"
pass "submit and fetch: a transfer meter on a terminal, nothing extra into a pipe"

# 8. workers fits the terminal (100 columns here); --wide and a pipe print every column.
LC_ALL=C.UTF-8 tty "$IDLEPOOL" workers
[ "$TTY_RC" = 0 ] || fail "workers on a tty: rc $TTY_RC: $(show)"
[ "$(LC_ALL=C.UTF-8 wc -L <"$T/tty.txt")" -le 100 ] || fail "workers: wider than the terminal: $(show)"
grep -q "^WORKER .*OWNER$" "$T/tty.txt" || fail "workers on a tty: header: $(show)"
grep -q "^w1 " "$T/tty.txt" || fail "workers on a tty: no row: $(show)"
LC_ALL=C.UTF-8 tty "$IDLEPOOL" workers --wide
for h in HOST SANDBOX LINK CPU UP; do grep -q "^WORKER .* $h " "$T/tty.txt" || fail "--wide: no $h: $(show)"; done
"$IDLEPOOL" workers >"$T/workers.out"
for h in HOST SANDBOX LINK CPU UP; do head -1 "$T/workers.out" | grep -q " $h " || fail "piped: no $h: $(cat "$T/workers.out")"; done
pass "workers: fits a 100-column terminal; --wide and a pipe get every column"

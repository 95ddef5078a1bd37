#!/usr/bin/env bash
# Hostile worker sessions (issue 21, point 5), by workers holding real credentials
# (tests/tools/rogue_worker.cc): a flood of bogus reports on a session that never reads its
# answers is cut (the coordinator queues at most kMaxOutboxMessages for a session), a flood that
# reads them is held back by flow control; a Hello listing 5,000,000 unknown held attempts is
# refused at once, naming the field (it used to cost one Kill each: 3.4 GB). Measured on the
# coordinator: peak memory (VmHWM), and resident memory (VmRSS) and open fds back near their
# idle level afterwards; then a normal job completes, every output once.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/../../bench/attacks/report_flood.sh"
source "$(dirname "$0")/../../bench/attacks/hello_bomb.sh"
[ -x "$(dirname "$IDLEPOOL")/idlepool-rogue-worker" ] || { echo "SKIP: no rogue worker"; exit 77; }
kb() { awk -v k="$2:" '$1==k{print $2}' "/proc/$1/status"; }  # kb PID VmRSS|VmHWM
fds() { find "/proc/$1/fd" -mindepth 1 -maxdepth 1 | wc -l; }
cat >"$T/job.toml" <<'TOML'
name = "normal"
count = 12
command = ["sh", "-c", "echo {index} > out-{index}.txt"]
outputs = ["out-*.txt"]
TOML
run_normal_job() {
  local job
  job=$("$IDLEPOOL" submit "$T/job.toml")
  "$IDLEPOOL" wait "$job" --quiet >/dev/null || fail "job $job did not succeed"
  assert_outputs_once "$job" 12
}

start_coordinator
start_worker w1 --slots 2
wait_until 20 is_connected w1
run_normal_job  # warm: the idle level is that of a pool that has worked
IDLE_RSS=$(kb "$COORD_PID" VmRSS)
IDLE_FDS=$(fds "$COORD_PID")
echo "  idle: VmRSS $IDLE_RSS kB, $IDLE_FDS fds"

attack_report_flood
cat "$T/rogue-flood.out" "$T/rogue-flood-read.out" | sed 's/^/  /'
grep -q "cut by coordinator 1" "$T/rogue-flood.out" || fail "the session that never reads was not cut"
grep -q "rogue-flood does not read its session" "$T/coordinator.log" || fail "no warning names the cut worker"
sent=$(sed -n 's/.*sent \([0-9]*\) reports.*/\1/p' "$T/rogue-flood-read.out")
[ "${sent:-0}" -gt 1000 ] || fail "the reading flood sent only ${sent:-0} reports: no flood"
kill -0 "$COORD_PID" || fail "the coordinator died"
HWM=$(kb "$COORD_PID" VmHWM)
echo "  after the floods: VmHWM $HWM kB"
[ "$HWM" -lt $((IDLE_RSS + 200 * 1024)) ] || fail "the floods took the coordinator to $HWM kB"
pass "a flooding session that does not read is cut, one that reads is held back"

attack_hello_bomb
sed 's/^/  /' "$T/rogue-hello.out"
n=$(grep -c "ended 3 Hello.held_attempts lists 5000000 attempts (at most 8192)" "$T/rogue-hello.out" || true)
[ "$n" = 3 ] || fail "$n of 3 hello bombs were refused naming the field"
grep -q "kills 0" "$T/rogue-hello.out" || fail "a hello bomb got kills back"
HWM=$(kb "$COORD_PID" VmHWM)
echo "  after the hello bombs: VmHWM $HWM kB"
[ "$HWM" -lt $((IDLE_RSS + 400 * 1024)) ] || fail "the hello bombs took the coordinator to $HWM kB"
pass "a Hello listing 5,000,000 held attempts is refused at once, naming the field"

# Freed memory goes back to the kernel (a fixed mmap threshold and a periodic malloc_trim).
near_idle() { [ "$(kb "$COORD_PID" VmRSS)" -lt $((IDLE_RSS + 20 * 1024)) ] && [ "$(fds "$COORD_PID")" -le $((IDLE_FDS + 4)) ]; }
wait_until 40 near_idle
echo "  back: VmRSS $(kb "$COORD_PID" VmRSS) kB, $(fds "$COORD_PID") fds"
run_normal_job
is_connected w1 || fail "the honest worker is not connected any more"
pass "the coordinator is back near its idle memory and fds, and a normal job completes, outputs once"

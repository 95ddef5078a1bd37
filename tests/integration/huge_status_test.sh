#!/usr/bin/env bash
# Issue 21 point 4: a job's status is bounded whatever its failures. A job of many tasks that
# each fail with a long stderr (bench/attacks/huge_status.sh) is read by many clients at once:
# `status --json`, `wait --json` and GET /api/v1/jobs/N stay small (20 failed tasks and a cursor)
# and well-formed, the coordinator's peak memory barely moves, the cursor (`idlepool failures`,
# GET /api/v1/jobs/N/failures) lists every failed task exactly once, and a task's log tail is
# one call away (`idlepool logs`). Then a normal job still runs, every output exactly once.
# Before issue 21 the status carried every failure with its log tail (~4 KiB each here).
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/../../bench/attacks/huge_status.sh"
command -v curl >/dev/null || { echo "SKIP: no curl"; exit 77; }
N=${HUGE_STATUS_TASKS:-1200}
MAX_STATUS=$((64 * 1024))  # bytes: 20 failures of at most ~1 KiB each, and the counters

start_coordinator --http 127.0.0.1:0
wait_until 10 grep -q "dashboard at https://" "$T/coordinator.log"
HPORT=$(sed -n 's|.*dashboard at https://127.0.0.1:\([0-9]*\)/.*|\1|p' "$T/coordinator.log" | tail -1)
HTTP_URL=https://127.0.0.1:$HPORT CA_PEM=$T/coord/ca.pem
start_worker w1 --slots 4 --no-probe --no-calibrate
start_worker w2 --slots 4 --no-probe --no-calibrate
wait_until 20 is_connected w1
wait_until 20 is_connected w2
mem_kb() { awk -v f="$1:" '$1 == f {print $2}' "/proc/$COORD_PID/status"; }

# The job runs to its end, every task failing; then the readers, peak memory measured.
HUGE_STATUS_TASKS=$N HUGE_STATUS_READERS=0 attack_huge_status
JOB=$HUGE_STATUS_JOB
wait_until 240 job_done "$JOB"
[ "$(job_field "$JOB" failed)" = "$N" ] || fail "job $JOB: $(job_field "$JOB" failed) failed tasks, want $N"
echo 5 >"/proc/$COORD_PID/clear_refs" || fail "cannot reset the coordinator's peak memory"
before=$(mem_kb VmRSS)
pids=()
for i in $(seq 8); do
  "$IDLEPOOL" status "$JOB" --json >"$T/status.$i" &
  pids+=($!)
  "$IDLEPOOL" wait "$JOB" --json >"$T/wait.$i" &
  pids+=($!)
  curl -s --cacert "$CA_PEM" -H "Authorization: Bearer $TOKEN" "$HTTP_URL/api/v1/jobs/$JOB" \
    >"$T/http.$i" &
  pids+=($!)
done
for p in "${pids[@]}"; do wait "$p" || true; done
after=$(mem_kb VmHWM)
echo "coordinator: VmRSS before the readers $before KiB, peak during them $after KiB"
[ $((after - before)) -lt $((32 * 1024)) ] || fail "24 readers took the coordinator from $before to $after KiB"
for f in "$T"/status.* "$T"/wait.* "$T"/http.*; do
  size=$(stat -c %s "$f")
  [ "$size" -lt "$MAX_STATUS" ] || fail "$(basename "$f") is $size bytes (status must be bounded)"
  jq -e --argjson n "$N" '.failed == $n and (.failed_tasks | length) == 20 and
    .more_failed_tasks == true and .failed_tasks[0].index == 0 and
    (.failed_tasks[0].message | length) <= 1024' "$f" >/dev/null ||
    fail "$(basename "$f") is not the bounded status: $(head -c 300 "$f")"
done
pass "status, wait and the HTTP job answer under $MAX_STATUS bytes with $N failed tasks"

# The terminal's status says how many more and how to see them.
"$IDLEPOOL" status "$JOB" >"$T/status.txt"
grep -q "and $((N - 20)) more failed tasks: idlepool failures $JOB --after 19" "$T/status.txt" ||
  fail "status does not say how to see the other failures: $(tail -5 "$T/status.txt")"
[ "$(grep -c "failed on .*: exit code" "$T/status.txt")" = 20 ] || fail "status lists $(grep -c "failed on .*: exit code" "$T/status.txt") failures"

# The cursor pages through every failed task exactly once, in order (CLI and HTTP).
want=$(sql "SELECT idx FROM tasks WHERE job_id=$JOB AND state='failed' ORDER BY idx" | md5sum)
after_arg=()
pages=0
: >"$T/pages.txt"
while true; do
  "$IDLEPOOL" failures "$JOB" --limit 250 --json "${after_arg[@]}" >"$T/page.json"
  [ "$(stat -c %s "$T/page.json")" -lt $((1024 * 1024)) ] || fail "a page of 250 is over 1 MiB"
  jq -r '.failed_tasks[].index' "$T/page.json" >>"$T/pages.txt"
  pages=$((pages + 1))
  [ "$(jq -r .more "$T/page.json")" = true ] || break
  after_arg=(--after "$(jq -r .next_after "$T/page.json")")
done
[ "$(md5sum <"$T/pages.txt")" = "$want" ] || fail "the CLI's pages do not list every failed task once"
[ "$pages" = $(((N + 249) / 250)) ] || fail "$pages pages of 250 for $N failures"
"$IDLEPOOL" failures "$JOB" --all --json | jq -r '.failed_tasks[].index' | md5sum | grep -q "${want% *}" ||
  fail "failures --all does not list every failed task once"
: >"$T/http_pages.txt"
q="limit=333"
while true; do
  curl -sf --cacert "$CA_PEM" -H "Authorization: Bearer $TOKEN" \
    "$HTTP_URL/api/v1/jobs/$JOB/failures?$q" >"$T/hpage.json" || fail "GET failures?$q failed"
  jq -r '.failed_tasks[].index' "$T/hpage.json" >>"$T/http_pages.txt"
  [ "$(jq -r .more "$T/hpage.json")" = true ] || break
  q="limit=333&after=$(jq -r .next_after "$T/hpage.json")"
done
[ "$(md5sum <"$T/http_pages.txt")" = "$want" ] || fail "the HTTP pages do not list every failed task once"
pass "the cursor lists all $N failed tasks exactly once ($pages pages by the CLI, and by HTTP)"

# A task's log tail, one call away.
"$IDLEPOOL" logs "$JOB" 7 --json >"$T/log.json"
jq -e '.task == 7 and .state == "failed" and (.attempts | length) == 1 and
  (.attempts[0].log_tail | test("^x+\\n?$")) and (.attempts[0].log_tail | length) >= 1024' \
  "$T/log.json" >/dev/null || fail "logs: $(head -c 300 "$T/log.json")"
out=$("$IDLEPOOL" logs "$JOB" 7 2>/dev/null) || true  # exit 1: the task failed
grep -q "^xxxxxxxx" <<<"$out" || fail "logs does not print the task's output"
curl -sf --cacert "$CA_PEM" -H "Authorization: Bearer $TOKEN" \
  "$HTTP_URL/api/v1/jobs/$JOB/tasks/7/log" | jq -e '.attempts[0].log_tail | length >= 1024' >/dev/null ||
  fail "GET /api/v1/jobs/$JOB/tasks/7/log has no log tail"
! "$IDLEPOOL" logs "$JOB" "$N" 2>/dev/null || fail "logs of a task past the last one succeeded"
pass "a task's log tail: idlepool logs and GET .../tasks/I/log"

# The pool still works: a normal job, every output exactly once.
cat >"$T/ok.toml" <<'TOML'
name = "after-huge-status"
command = ["sh", "-c", "echo {item} > out-{item}.txt"]
items = ["a", "b", "c", "d"]
outputs = ["out-*.txt"]
TOML
OK=$("$IDLEPOOL" submit "$T/ok.toml")
"$IDLEPOOL" wait "$OK" --quiet >/dev/null || fail "job $OK: $("$IDLEPOOL" status "$OK")"
assert_outputs_once "$OK" 4
pass "a normal job completed after the attack, every output exactly once"

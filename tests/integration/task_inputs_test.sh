#!/usr/bin/env bash
# Per-task inputs (issue 18): 4 tasks with one file each over 2 workers. Each task's worker stages
# exactly its own file (its output holds the file's SHA-256 and the list of its task dir), the
# coordinator sends each file once (status --json transfer.coordinator_bytes = the sum of the
# files = task_input_bytes), and a pattern that matches nothing for a task is refused at submit
# naming that task and the pattern.
source "$(dirname "$0")/lib.sh"
mkdir -p "$T/job/segs"
for i in 0 1 2 3; do head -c $((65536 + i * 4096)) /dev/urandom >"$T/job/segs/seg$i.bin"; done
total=$(cat "$T"/job/segs/*.bin | wc -c)
cat >"$T/job/job.toml" <<'TOML'
name = "per-task"
command = ["sh", "-c", "sha256sum segs/$1.bin >$1.sum && find . -path ./$1.ls -prune -o -type f -print | sort >$1.ls", "sh", "{item}"]
items = ["seg0", "seg1", "seg2", "seg3"]
task_inputs = ["segs/{item}.bin"]
outputs = ["*.sum", "*.ls"]
TOML
start_coordinator
start_worker w1 --slots 1
start_worker w2 --slots 1
wait_until 20 is_connected w1; wait_until 20 is_connected w2

# No match for one task: refused before anything is stored, naming the task and the pattern.
cp "$T/job/job.toml" "$T/job/bad.toml"
sed -i 's/"seg3"\]/"seg3", "nope"]/' "$T/job/bad.toml"
rc=0; out=$("$IDLEPOOL" submit "$T/job/bad.toml" 2>&1) || rc=$?
[ "$rc" != 0 ] || fail "a pattern matching nothing was accepted"
grep -q "task 4 (item 'nope')" <<<"$out" || fail "the error does not name the task: $out"
grep -q "segs/{item}.bin" <<<"$out" || fail "the error does not name the pattern: $out"

JOB=$("$IDLEPOOL" submit "$T/job/job.toml")
"$IDLEPOOL" wait "$JOB" --quiet >/dev/null || fail "job $JOB did not succeed: $("$IDLEPOOL" status "$JOB")"
assert_outputs_once "$JOB" 8
"$IDLEPOOL" fetch "$JOB" --out "$T/out" >/dev/null
for i in 0 1 2 3; do
  want=$(cd "$T/job" && sha256sum "segs/seg$i.bin")
  [ "$(cat "$T/out/seg$i.sum")" = "$want" ] || fail "task $i staged another file: $(cat "$T/out/seg$i.sum")"
  staged=$(grep '^\./segs/' "$T/out/seg$i.ls" || true)
  [ "$staged" = "./segs/seg$i.bin" ] || fail "task $i's dir holds other tasks' files: $staged"
done
status=$("$IDLEPOOL" status "$JOB" --json)
sent=$(jq -r '.transfer.coordinator_bytes // 0' <<<"$status")
peers=$(jq -r '.transfer.peer_bytes // 0' <<<"$status")
own=$(jq -r '.task_input_bytes // 0' <<<"$status")
[ "$own" = "$total" ] || fail "task_input_bytes $own, the files hold $total"
[ "$sent" = "$total" ] || fail "coordinator sent $sent bytes (peers $peers), the files hold $total"
spread=$(sql "SELECT COUNT(DISTINCT a.worker) FROM tasks t JOIN attempts a ON a.id=t.committed_attempt WHERE t.job_id=$JOB")
pass "4 tasks on $spread workers, each staged only its own file; $sent bytes sent for $total bytes of files"

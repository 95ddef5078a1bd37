#!/usr/bin/env bash
# (a) Three workers render a real POV-Ray animation; every frame is committed exactly once.
source "$(dirname "$0")/lib.sh"
SCENE=/usr/share/doc/povray/examples/animations/fractalzoom
[ -f "$SCENE/fractalzoom.pov" ] || { echo "SKIP: povray-examples not installed"; exit 77; }
cat >"$T/job.toml" <<TOML
name = "fractalzoom-small"
command = ["povray", "fractalzoom.ini", "-D", "+WT1", "+W48", "+H36",
           "+SF{frame_start}", "+EF{frame_end}", "+O{task_dir}/frame.png"]
frames = "1-12"
chunk = 2
inputs = ["$SCENE/fractalzoom.ini", "$SCENE/fractalzoom.pov"]
outputs = ["frame*.png"]
TOML
start_coordinator
for w in w1 w2 w3; do start_worker $w --slots 1; done
wait_until 20 is_connected w1; wait_until 20 is_connected w2; wait_until 20 is_connected w3
JOB=$("$IDLEPOOL" submit "$T/job.toml")
"$IDLEPOOL" wait "$JOB" --quiet >/dev/null || fail "job $JOB did not succeed: $("$IDLEPOOL" status "$JOB")"
assert_outputs_once "$JOB" 12
"$IDLEPOOL" fetch "$JOB" --out "$T/frames" >/dev/null
expected=$(printf 'frame%02d.png\n' $(seq 1 12))
got=$(ls "$T/frames")
[ "$got" = "$expected" ] || fail "fetched frames differ: $got"
for f in "$T"/frames/*.png; do
  head -c 8 "$f" | od -An -tx1 | grep -q "89 50 4e 47" || fail "$f is not a PNG"
done
# The work was spread: more than one worker committed frames.
spread=$(sql "SELECT COUNT(DISTINCT a.worker) FROM tasks t JOIN attempts a ON a.id=t.committed_attempt WHERE t.job_id=$JOB")
[ "$spread" -ge 2 ] || fail "all tasks ran on one worker ($spread)"
pass "12 frames rendered by $spread workers, each committed once"

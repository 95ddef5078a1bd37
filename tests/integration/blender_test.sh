#!/usr/bin/env bash
# examples/blender through a real pool: a scene made by Blender's own Python in background mode
# (make_scene.py), 12 frames rendered 4 per task with a per-frame checkpoint (render.sh). The
# first task is vacated midway (its laptop is about to sleep) and resumes on another worker from
# its checkpoint: the frames it had are not rendered again (the task's own record says which
# attempt rendered each frame, and the resumed attempt's log says what it rendered). Then a job
# that runs `after` the render joins the frames into a video, checked with ffprobe (12 frames).
# Skips without blender or ffmpeg (scripts/bootstrap.sh installs both).
source "$(dirname "$0")/lib.sh"
skip() { echo "SKIP: $*"; trap - EXIT; rm -rf "$T"; exit 77; }
command -v blender >/dev/null || skip "blender is not installed"
command -v ffmpeg >/dev/null && command -v ffprobe >/dev/null || skip "ffmpeg is not installed"
EX=$(cd "$(dirname "$0")/../../examples/blender" && pwd)
# 12 frames of 160x90 at 4 samples: a second or two each, mostly Blender's start.
"$EX/make-scene.sh" "$T/job" 12 160 90 4 >"$T/make-scene.log" 2>&1 || fail "make-scene.sh: $(tail -5 "$T/make-scene.log")"

owner_config "$T/owner.toml"   # checkpoints uploaded every second
S=$T/sensors
sense "$S" idle_seconds 1000
start_coordinator
start_worker laptop --slots 1 --config "$T/owner.toml" --sensors-dir "$S"
wait_until 20 is_owner_state laptop run

JOB=$("$IDLEPOOL" submit "$T/job/render.toml")
VIDEO=$("$IDLEPOOL" submit "$T/job/video.toml")
[ "$("$IDLEPOOL" status "$VIDEO" --json | jq -c .after)" = "[$JOB]" ] || fail "the video does not run after job $JOB"
[ "$(job_field "$JOB" tasks)" = 3 ] || fail "job $JOB has $(job_field "$JOB" tasks) tasks, want 3"

# Task 0 runs on the laptop, the only worker; once its stored checkpoint holds 2 finished frames,
# the laptop is about to sleep: the attempt is vacated, its last checkpoint stored with the report.
wait_until 60 is_running_on "$JOB" laptop
A1=$(running_attempt "$JOB")
[ "$(sql "SELECT idx FROM attempts WHERE id=$A1")" = 0 ] || fail "attempt $A1 is not task 0's"
saved() { [ "$(sql "SELECT COUNT(*) FROM checkpoints WHERE job_id=$JOB AND idx=0 AND path LIKE 'frame_%.png'")" -ge "$1" ]; }
wait_until 180 saved 2
sense "$S" sleep_imminent 1
wait_until 30 job_at_least "$JOB" preemptions 1
[ "$(sql "SELECT outcome FROM attempts WHERE id=$A1")" = preempted ] || fail "attempt $A1: $(sql "SELECT outcome FROM attempts WHERE id=$A1")"
# The frames the next attempt is given (frame_0001.png ... as numbers).
kept=$(sql "SELECT path FROM checkpoints WHERE job_id=$JOB AND idx=0 AND path LIKE 'frame_%.png' ORDER BY path" |
  sed 's/^frame_0*\([0-9][0-9]*\)\.png$/\1/')
[ "$(wc -l <<<"$kept")" -ge 2 ] || fail "the checkpoint of task 0 holds $(wc -l <<<"$kept") frames"
[ "$(sql "SELECT attempt FROM checkpoints WHERE job_id=$JOB AND idx=0 AND path='frame_0001.png'")" = "$A1" ] ||
  fail "frame 1's checkpoint is not attempt $A1's"

# Another machine takes task 0 (the first pending task) and resumes it; the laptop wakes up.
start_worker desk --slots 1 --dedicated
resumed() { [ -n "$(sql "SELECT id FROM attempts WHERE job_id=$JOB AND idx=0 AND id<>$A1")" ]; }
wait_until 30 resumed
A2=$(sql "SELECT id FROM attempts WHERE job_id=$JOB AND idx=0 AND id<>$A1")
[ "$(sql "SELECT worker FROM attempts WHERE id=$A2")" = desk ] || fail "task 0 resumed on $(sql "SELECT worker FROM attempts WHERE id=$A2")"
sense "$S" sleep_imminent 0

"$IDLEPOOL" wait "$VIDEO" --quiet >/dev/null ||
  fail "video $VIDEO: $("$IDLEPOOL" status "$VIDEO"); render $JOB: $("$IDLEPOOL" status "$JOB")"
[ "$(job_field "$JOB" state)" = succeeded ] || fail "render $JOB: $(job_field "$JOB" state)"
assert_outputs_once "$JOB" 15   # 12 frames and a record per task
assert_outputs_once "$VIDEO" 1
[ "$(sql "SELECT committed_attempt FROM tasks WHERE job_id=$JOB AND idx=0")" = "$A2" ] ||
  fail "task 0 was committed by attempt $(sql "SELECT committed_attempt FROM tasks WHERE job_id=$JOB AND idx=0"), not $A2"

"$IDLEPOOL" fetch "$JOB" --out "$T/frames" >/dev/null
[ "$(ls "$T"/frames/frame_*.png | wc -l)" = 12 ] || fail "fetched $(ls "$T"/frames/frame_*.png | wc -l) frames"
for f in "$T"/frames/frame_*.png; do
  head -c 8 "$f" | od -An -tx1 | grep -q "89 50 4e 47" || fail "$f is not a PNG"
done
# Task 0's record: the frames in the checkpoint were rendered by the vacated attempt, the others
# by the resumed one; each frame once.
rec=$T/frames/rendered-0001.txt
[ "$(awk '{print $2}' "$rec" | tr '\n' ' ')" = "1 2 3 4 " ] || fail "task 0's record: $(cat "$rec")"
for f in 1 2 3 4; do
  by=$(awk -v f="$f" '$2 == f { print $4 }' "$rec")
  if grep -qx "$f" <<<"$kept"; then want=$A1; else want=$A2; fi
  [ "$by" = "$want" ] || fail "frame $f rendered by attempt $by, want $want: $(cat "$rec")"
done
# The resumed attempt's own output: it restored the kept frames and rendered only the others.
"$IDLEPOOL" logs "$JOB" 0 --attempt "$A2" >"$T/a2.out" 2>/dev/null || fail "no log of attempt $A2"
grep -q "^resuming: frames $(tr '\n' ' ' <<<"$kept" | sed 's/ $//') already done" "$T/a2.out" ||
  fail "attempt $A2 did not resume from frames $(tr '\n' ' ' <<<"$kept"): $(cat "$T/a2.out")"
for f in $kept; do
  if grep -qx "rendering frame $f" "$T/a2.out"; then fail "attempt $A2 rendered frame $f again"; fi
done
rendered=$(grep -c "^rendering frame" "$T/a2.out" || true)
[ "$rendered" = $((4 - $(wc -l <<<"$kept"))) ] || fail "attempt $A2 rendered $rendered frames: $(cat "$T/a2.out")"

# The video ran after the render and holds every frame.
last_end=$(sql "SELECT MAX(ended_ms) FROM attempts WHERE job_id=$JOB")
first_start=$(sql "SELECT MIN(started_ms) FROM attempts WHERE job_id=$VIDEO")
[ "$first_start" -ge "$last_end" ] || fail "the video started at $first_start, before the render ended at $last_end"
"$IDLEPOOL" fetch "$VIDEO" --out "$T/video" >/dev/null
got=$(ffprobe -v error -select_streams v:0 -count_frames -show_entries stream=nb_read_frames \
  -of csv=p=0 "$T/video/animation.mp4")
[ "$got" = 12 ] || fail "animation.mp4 has $got frames, want 12"
pass "12 frames on 2 workers; task 0 vacated after frames $(tr '\n' ' ' <<<"$kept")and resumed on desk without rendering them again; video of $got frames"

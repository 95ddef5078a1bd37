#!/usr/bin/env bash
# examples/transcode through a real pool (issue 18, point 7): a real H.264 video cut into 4
# segments, one task per segment with per-task inputs over 2 workers, then a job `after` it that
# joins the transcoded segments. Checked with ffprobe: the joined video has the source's frame
# count and duration. The coordinator sent each segment once (its bytes sent to the transcode's
# attempts equal the sum of the segments, not 2x), and each task staged only its own segment.
source "$(dirname "$0")/lib.sh"
command -v ffmpeg >/dev/null && command -v ffprobe >/dev/null || { echo "SKIP: no ffmpeg"; exit 77; }
EX=$(cd "$(dirname "$0")/../../examples/transcode" && pwd)
"$EX/make-video.sh" "$T/tc" 8 2 >/dev/null
segs=$(wc -l <"$T/tc/segs.txt")
[ "$segs" = 4 ] || fail "make-video.sh made $segs segments, want 4"
seg_bytes=$(cat "$T"/tc/segs/seg-*.mp4 | wc -c)

start_coordinator
for w in w1 w2; do start_worker $w --slots 1; done
wait_until 20 is_connected w1; wait_until 20 is_connected w2

JOB=$("$IDLEPOOL" submit "$T/tc/transcode.toml")
JOIN=$("$IDLEPOOL" submit "$T/tc/join.toml")
after=$("$IDLEPOOL" status "$JOIN" --json | jq -c .after)
[ "$after" = "[$JOB]" ] || fail "join runs after $after, want [$JOB]"

"$IDLEPOOL" wait "$JOIN" --quiet >/dev/null || fail "join $JOIN did not succeed: $("$IDLEPOOL" status "$JOIN")"
[ "$(job_field "$JOB" state)" = succeeded ] || fail "transcode $JOB: $(job_field "$JOB" state)"
assert_outputs_once "$JOB" 4
assert_outputs_once "$JOIN" 1
# The join started only after the transcode had finished: its first attempt began after the
# transcode's last one ended (the coordinator's own clock).
last_end=$(sql "SELECT MAX(ended_ms) FROM attempts WHERE job_id=$JOB")
first_start=$(sql "SELECT MIN(started_ms) FROM attempts WHERE job_id=$JOIN")
[ "$first_start" -ge "$last_end" ] || fail "join started at $first_start before the transcode ended at $last_end"

# Per-task inputs: each segment went from the coordinator once (no peer could have it before:
# every task wants a different segment), and no task staged another task's segment.
sent=$("$IDLEPOOL" status "$JOB" --json | jq '.transfer.coordinator_bytes + .transfer.peer_bytes')
[ "$sent" = "$seg_bytes" ] || fail "the transcode's attempts fetched $sent bytes; the segments are $seg_bytes"
staged=$("$IDLEPOOL" status "$JOB" --json | jq .transfer.input_bytes)
[ "$staged" = "$seg_bytes" ] || fail "the transcode's attempts staged $staged bytes; the segments are $seg_bytes"

"$IDLEPOOL" fetch "$JOIN" --out "$T/joined" >/dev/null
probe() {
  ffprobe -v error -select_streams v:0 -count_frames \
    -show_entries stream=nb_read_frames -of csv=p=0 "$1"
}
duration() { ffprobe -v error -show_entries format=duration -of csv=p=0 "$1"; }
src_frames=$(probe "$T/tc/source.mp4"); got_frames=$(probe "$T/joined/joined.mp4")
src_s=$(duration "$T/tc/source.mp4"); got_s=$(duration "$T/joined/joined.mp4")
[ "$got_frames" = "$src_frames" ] || fail "joined video has $got_frames frames, the source $src_frames"
# Equal to within one frame (1/24 s): container durations round to the stream's time base.
awk -v a="$src_s" -v b="$got_s" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(d < 1 / 24) }' ||
  fail "joined video lasts $got_s s, the source $src_s s"
# Transcoded, not copied: the joined video is not the source's bytes.
cmp -s "$T/tc/source.mp4" "$T/joined/joined.mp4" && fail "joined.mp4 is the source itself"
pass "4 segments transcoded on 2 workers, each sent once ($sent bytes), joined after: $got_frames frames, $got_s s (source $src_frames, $src_s s)"

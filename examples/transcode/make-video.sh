#!/usr/bin/env bash
# Makes the transcode example's input in OUTDIR: a real H.264 video from ffmpeg's own test
# sources (testsrc2 picture, a sine tone dropped: the example is about video), cut into
# segments at its keyframes, and the list of segments (one task each):
#
#   examples/transcode/make-video.sh OUTDIR [SECONDS] [SEGMENT_SECONDS]
#
#   OUTDIR/source.mp4      SECONDS (default 8) of 320x240 at 24 fps, a keyframe every second
#   OUTDIR/segs/seg-NN.mp4 the source cut every SEGMENT_SECONDS (default 2) without re-encoding
#   OUTDIR/segs.txt        seg-00, seg-01, ... (items_file of transcode.toml)
#   OUTDIR/*.toml          the two job specs, copied next to their inputs
set -euo pipefail
OUTDIR=${1:?usage: make-video.sh OUTDIR [SECONDS] [SEGMENT_SECONDS]}
SECONDS_LONG=${2:-8}
SEGMENT=${3:-2}
HERE=$(cd "$(dirname "$0")" && pwd)
command -v ffmpeg >/dev/null || { echo "make-video.sh: ffmpeg is not installed" >&2; exit 1; }
mkdir -p "$OUTDIR/segs"
rm -f "$OUTDIR"/segs/seg-*.mp4
# A keyframe every 24 frames (1 s) and no scene-cut keyframes: the segment muxer cuts at
# keyframes only, so every segment starts with one and they join back frame for frame.
ffmpeg -nostdin -loglevel error -y -f lavfi -i "testsrc2=size=320x240:rate=24:duration=$SECONDS_LONG" \
  -c:v libx264 -preset veryfast -pix_fmt yuv420p -g 24 -keyint_min 24 -sc_threshold 0 \
  "$OUTDIR/source.mp4"
ffmpeg -nostdin -loglevel error -y -i "$OUTDIR/source.mp4" -c copy -f segment \
  -segment_time "$SEGMENT" -reset_timestamps 1 "$OUTDIR/segs/seg-%02d.mp4"
(cd "$OUTDIR/segs" && ls seg-*.mp4 | sed 's/\.mp4$//') >"$OUTDIR/segs.txt"
cp "$HERE/transcode.toml" "$HERE/join.toml" "$OUTDIR/"
echo "$OUTDIR: source.mp4 ($SECONDS_LONG s), $(wc -l <"$OUTDIR/segs.txt") segments of ${SEGMENT} s"

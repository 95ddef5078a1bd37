#!/bin/sh
# Renders the frames of one task of a Blender animation one frame at a time, and keeps every
# finished frame in $IDLEPOOL_CHECKPOINT_DIR, so that a task vacated halfway (its machine's owner
# came back, the laptop went to sleep) resumes on another machine from the frames it had instead
# of rendering them again.
#
#   sh render.sh SCENE.blend FRAMES
#
# FRAMES is a comma list (the job's {frames} placeholder: "1,2,3,4"). Each frame is one
# `blender -b` call that writes frame_NNNN.png (four digits at least, as Blender's #### does) into
# the task dir. Next to it each task writes rendered-NNNN.txt (NNNN: its first frame), one line
# per frame: which attempt on which worker rendered it, and how long it took.
#
# The checkpoint protocol (see examples/checkpoint-count/count.sh and docs/guide/lending.md):
#   - on start, the frames found in $IDLEPOOL_CHECKPOINT_DIR are copied back, not rendered again;
#   - a finished frame's record (frame_NNNN.who), then the frame, are copied into the checkpoint
#     under a temporary name and renamed, so the worker never uploads half a file and a frame in
#     the checkpoint always has its record;
#   - on SIGTERM it stops at once (every finished frame is already in the checkpoint) and exits
#     non-zero.
# Without IDLEPOOL_CHECKPOINT_DIR (run by hand) it just renders the frames.
set -u
[ $# -eq 2 ] || { echo "usage: sh render.sh SCENE.blend FRAMES (a comma list)" >&2; exit 2; }
SCENE=$1
FRAMES=$2
CK=${IDLEPOOL_CHECKPOINT_DIR:-}
# Blender resolves relative paths against its own dir, not the task's: everything here is
# absolute, from the task dir (where the worker starts the task).
TASK=${IDLEPOOL_TASK_DIR:-.}
cd "$TASK" || exit 1
TASK=$(pwd -P)
case $SCENE in /*) ;; *) SCENE=$TASK/$SCENE ;; esac
[ -f "$SCENE" ] || { echo "render.sh: no scene file $SCENE" >&2; exit 2; }
REC=${CK:-$TASK}   # where the per-frame records live: with the frames they describe
[ -n "$CK" ] && mkdir -p "$CK"

name() { printf 'frame_%04d' "$1"; }
# put SRC DIR: copies SRC into DIR under a temporary name, then renames it into place.
put() { cp "$1" "$2/.${1##*/}.tmp" && mv "$2/.${1##*/}.tmp" "$2/${1##*/}"; }

pid=
trap '[ -n "$pid" ] && kill "$pid" 2>/dev/null; echo "stopped (SIGTERM): finished frames are in the checkpoint" >&2; exit 143' TERM
trap '[ -n "$pid" ] && kill "$pid" 2>/dev/null; exit 130' INT

LIST=$(printf '%s' "$FRAMES" | tr ',' ' ')
first=
done_frames=
for f in $LIST; do
  case $f in '' | *[!0-9-]*) echo "render.sh: bad frame '$f' in '$FRAMES'" >&2; exit 2 ;; esac
  [ -n "$first" ] || first=$f
  n=$(name "$f")
  # Resume: the frames a previous attempt finished are copied back.
  if [ -n "$CK" ] && [ -f "$CK/$n.png" ] && [ -f "$CK/$n.who" ]; then
    put "$CK/$n.png" "$TASK" || exit 1
    done_frames="$done_frames $f"
  fi
done
[ -n "$first" ] || { echo "render.sh: no frames in '$FRAMES'" >&2; exit 2; }
[ -z "$done_frames" ] || echo "resuming: frames$done_frames already done" >&2

for f in $LIST; do
  n=$(name "$f")
  [ -f "$TASK/$n.png" ] && [ -f "$REC/$n.who" ] && continue
  echo "rendering frame $f" >&2
  start=$(date +%s.%N)
  # In the background, so that SIGTERM runs the trap at once instead of after the frame.
  blender -b --factory-startup "$SCENE" -noaudio -t "${IDLEPOOL_CPUS:-1}" \
    -o "$TASK/frame_####" -F PNG -x 1 -f "$f" >>"$TASK/blender.log" 2>&1 &
  pid=$!
  wait "$pid"
  rc=$?
  pid=
  if [ "$rc" -ne 0 ] || [ ! -s "$TASK/$n.png" ]; then
    echo "blender failed on frame $f (exit $rc):" >&2
    tail -n 20 "$TASK/blender.log" >&2
    exit 1
  fi
  secs=$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
  printf 'frame %s attempt %s worker %s %ss\n' "$f" "${IDLEPOOL_ATTEMPT_ID:-0}" \
    "${IDLEPOOL_WORKER:-local}" "$secs" >"$TASK/$n.who"
  if [ -n "$CK" ]; then
    put "$TASK/$n.who" "$CK" && put "$TASK/$n.png" "$CK" || exit 1
  fi
done

# The task's record, one line per frame in its order.
out=$TASK/rendered-$(printf '%04d' "$first").txt
: >"$out.tmp"
for f in $LIST; do cat "$REC/$(name "$f").who" >>"$out.tmp" || exit 1; done
mv "$out.tmp" "$out"

#!/bin/sh
# Renders frames FIRST..LAST of a POV-Ray animation one frame at a time, and keeps every finished
# frame in $IDLEPOOL_CHECKPOINT_DIR, so that a task vacated halfway (the owner came back, the
# laptop went on battery) resumes on another machine without rendering those frames again.
#
#   sh render.sh FIRST LAST povray SCENE.ini [OPTIONS...] +O<dir>/<name>.png
#
# The povray command is run once per frame with "+SF<f> +EF<f>" appended, so each frame gets the
# same clock and the same file name (<name><f, zero-padded>.png) as one call for the whole range.
#
# The checkpoint protocol (see examples/checkpoint-count/count.sh):
#   - on start, frames found in $IDLEPOOL_CHECKPOINT_DIR are copied back and not rendered again;
#   - a finished frame is copied into the checkpoint under a temporary name, then renamed, so the
#     worker never uploads half a file;
#   - on SIGTERM it stops at once (every finished frame is already in the checkpoint) and exits
#     non-zero.
# Without IDLEPOOL_CHECKPOINT_DIR (run by hand) it just renders the frames.
set -u
[ $# -ge 3 ] || { echo "usage: sh render.sh FIRST LAST povray SCENE.ini [OPTIONS...] +O<file>.png" >&2; exit 2; }
FIRST=$1
LAST=$2
shift 2
CK=${IDLEPOOL_CHECKPOINT_DIR:-}

# Where povray writes: +O<dir>/<name>.png gives <dir>/<name><frame>.png.
OUTPUT=frame.png
for a in "$@"; do
  case $a in +O*|-O*) OUTPUT=${a#??} ;; esac
done
case $OUTPUT in */*) DIR=${OUTPUT%/*} ;; *) DIR=. ;; esac
BASE=${OUTPUT##*/}
BASE=${BASE%.png}

# frame_file DIR F: prints the file in DIR holding frame F (any zero padding), or nothing.
frame_file() {
  for p in "$1/$BASE"[0-9]*.png; do
    [ -f "$p" ] || continue
    n=${p##*/}
    n=${n#"$BASE"}
    n=${n%.png}
    case $n in *[!0-9]*) continue ;; esac
    while :; do case $n in 0?*) n=${n#0} ;; *) break ;; esac; done
    [ "$n" = "$2" ] && { printf '%s\n' "$p"; return 0; }
  done
  return 0
}

pid=
trap '[ -n "$pid" ] && kill "$pid" 2>/dev/null; echo "stopped (SIGTERM): finished frames are in the checkpoint" >&2; exit 143' TERM
trap '[ -n "$pid" ] && kill "$pid" 2>/dev/null; exit 130' INT

# Resume: copy back the frames a previous attempt finished.
if [ -n "$CK" ]; then
  mkdir -p "$CK" "$DIR"
  done_frames=0
  f=$FIRST
  while [ "$f" -le "$LAST" ]; do
    p=$(frame_file "$CK" "$f")
    if [ -n "$p" ]; then
      cp "$p" "$DIR/.${p##*/}.tmp" && mv "$DIR/.${p##*/}.tmp" "$DIR/${p##*/}" || exit 1
      done_frames=$((done_frames + 1))
    fi
    f=$((f + 1))
  done
  [ "$done_frames" -gt 0 ] && echo "resuming: $done_frames frames already done" >&2
fi

f=$FIRST
while [ "$f" -le "$LAST" ]; do
  if [ -z "$CK" ] || [ -z "$(frame_file "$CK" "$f")" ]; then
    # In the background, so that SIGTERM runs the trap at once instead of after the frame.
    # POV-Ray gives up ("Timed out waiting for worker thread startup", then a crash) when it is
    # frozen in its first instants, which the owner coming back can do: a frame that crashes
    # is tried once more before the task fails.
    tries=0
    while :; do
      "$@" "+SF$f" "+EF$f" &
      pid=$!
      wait "$pid"
      rc=$?
      pid=
      [ "$rc" -eq 0 ] && break
      tries=$((tries + 1))
      [ "$rc" -gt 128 ] && [ "$tries" -lt 2 ] || { echo "povray failed on frame $f (exit $rc)" >&2; exit "$rc"; }
      echo "povray crashed on frame $f (exit $rc); trying it again" >&2
    done
    p=$(frame_file "$DIR" "$f")
    [ -n "$p" ] || { echo "povray wrote no file for frame $f" >&2; exit 1; }
    if [ -n "$CK" ]; then
      name=${p##*/}
      cp "$p" "$CK/.$name.tmp" && mv "$CK/.$name.tmp" "$CK/$name" || exit 1
    fi
  fi
  f=$((f + 1))
done

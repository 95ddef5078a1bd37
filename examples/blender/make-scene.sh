#!/bin/sh
# Makes a directory from which the example's two jobs can be submitted: scene.blend (built by
# make_scene.py in Blender's background mode), render.sh, render.toml and video.toml. A spec's
# relative paths are read from its own directory, so the scene goes next to it.
#
#   examples/blender/make-scene.sh OUTDIR [FRAMES [WIDTH HEIGHT [SAMPLES]]]
#
# FRAMES (default 48) also becomes render.toml's `frames = "1-FRAMES"`.
set -eu
[ $# -ge 1 ] || { echo "usage: make-scene.sh OUTDIR [FRAMES [WIDTH HEIGHT [SAMPLES]]]" >&2; exit 2; }
command -v blender >/dev/null || { echo "make-scene.sh: no blender (apt-get install blender)" >&2; exit 1; }
HERE=$(cd "$(dirname "$0")" && pwd)
OUT=$1
FRAMES=${2:-48}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
shift
[ $# -ge 1 ] && shift  # FRAMES, passed below whether given or not
blender -b --factory-startup -noaudio --python "$HERE/make_scene.py" -- "$OUT/scene.blend" \
  "$FRAMES" "$@" >"$OUT/make_scene.log" 2>&1 ||
  { tail -n 20 "$OUT/make_scene.log" >&2; echo "make-scene.sh: blender failed" >&2; exit 1; }
grep '^make_scene:' "$OUT/make_scene.log"
cp "$HERE/render.sh" "$HERE/video.toml" "$OUT/"
sed "s/^frames  = \"1-48\"/frames  = \"1-$FRAMES\"/" "$HERE/render.toml" >"$OUT/render.toml"
grep -q "^frames  = \"1-$FRAMES\"" "$OUT/render.toml" || { echo "make-scene.sh: render.toml has no frames line" >&2; exit 1; }

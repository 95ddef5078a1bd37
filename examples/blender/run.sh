#!/usr/bin/env bash
# The Blender example end to end: the scene made by Blender's own Python (make_scene.py), its
# frames rendered across the pool four per task with a per-frame checkpoint (render.toml,
# render.sh), then joined into a video by a job that runs after the render (video.toml), checked
# with ffprobe (one video frame per rendered frame). See README.md.
#
#   examples/blender/run.sh          # a coordinator and WORKERS workers on this machine; midway,
#                                    # worker-1's owner sends it to sleep: its task resumes elsewhere
#   examples/blender/run.sh --pool   # the pool you are logged in to (idlepool login, or
#                                    # IDLEPOOL_COORDINATOR and IDLEPOOL_TOKEN); its workers need
#                                    # blender and ffmpeg
#
# Environment: WORKERS (default 3), FRAMES (default 48), SIZE (default 320x180), SAMPLES (default
# 16), BUILD (default ./build; with --pool, `idlepool` from PATH when BUILD has none).
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
OUT=$ROOT/out/blender
WORKERS=${WORKERS:-3}
FRAMES=${FRAMES:-48}
SIZE=${SIZE:-320x180}
POOL=local
[ "${1:-}" = --pool ] && POOL=existing
die() { echo "blender: $*" >&2; exit 1; }
say() { printf '\n\033[1m== %s\033[0m\n' "$*"; }
BIN=${BUILD:-$ROOT/build}/idlepool
if [ ! -x "$BIN" ]; then
  if [ "$POOL" = existing ] && command -v idlepool >/dev/null; then
    BIN=$(command -v idlepool)
  else
    scripts/bootstrap.sh
    scripts/build.sh
  fi
fi
command -v blender >/dev/null || die "no blender here (apt-get install blender; scripts/bootstrap.sh does)"
command -v ffprobe >/dev/null || die "no ffprobe here (apt-get install ffmpeg)"
rm -rf "$OUT"
mkdir -p "$OUT/logs"
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; }
trap cleanup EXIT
sense() { printf '%s\n' "$3" >"$1/.$2.tmp" && mv "$1/.$2.tmp" "$1/$2"; }

say "making the scene with Blender's Python ($FRAMES frames, $SIZE, ${SAMPLES:-16} samples)"
examples/blender/make-scene.sh "$OUT/job" "$FRAMES" "${SIZE%x*}" "${SIZE#*x}" "${SAMPLES:-16}"

if [ "$POOL" = local ]; then
  say "starting a coordinator and $WORKERS workers"
  "$BIN" coordinator --listen 127.0.0.1:0 --serve-listen off --data-dir "$OUT/coordinator" \
    >"$OUT/logs/coordinator.log" 2>&1 &
  pids+=($!)
  for _ in $(seq 100); do grep -q "listening on" "$OUT/logs/coordinator.log" && break; sleep 0.1; done
  ADDR=$(sed -n 's/.*listening on \([0-9.]*:[0-9]*\).*/\1/p' "$OUT/logs/coordinator.log" | head -1)
  [ -n "$ADDR" ] || die "the coordinator did not start: $(tail -5 "$OUT/logs/coordinator.log")"
  export IDLEPOOL_COORDINATOR=$ADDR XDG_CONFIG_HOME=$OUT/config
  unset IDLEPOOL_TOKEN IDLEPOOL_JOIN_TOKEN
  (umask 077
    "$BIN" token create --role worker --data-dir "$OUT/coordinator" >"$OUT/join.token"
    "$BIN" token create --role submit --name blender --data-dir "$OUT/coordinator" >"$OUT/access.token")
  "$BIN" login "$ADDR" --token-file "$OUT/access.token"
  sandbox=()
  # Where this machine cannot sandbox tasks (a chroot, user namespaces off) the probe says "none":
  # the workers then run --no-sandbox (tasks as this user; see docs/guide/sandbox.md).
  tier=$("$BIN" worker --print-resources --gpus none --json 2>/dev/null | jq -r '.sandbox // "none"') || tier=none
  [ "$tier" != none ] || sandbox=(--no-sandbox)
  # worker-1 reads its owner's state from files (a shortened policy: checkpoints every second);
  # the others are lent full time.
  mkdir -p "$OUT/sensors"
  sense "$OUT/sensors" idle_seconds 1000
  cp examples/owner-policies/quick.toml "$OUT/owner.toml"
  for w in $(seq "$WORKERS"); do
    owner=(--dedicated)
    [ "$w" = 1 ] && owner=(--config "$OUT/owner.toml" --sensors-dir "$OUT/sensors")
    "$BIN" worker --name "worker-$w" --slots 1 "${owner[@]}" --join "$ADDR" "${sandbox[@]}" \
      --token-file "$OUT/join.token" --work-dir "$OUT/worker-$w" >"$OUT/logs/worker-$w.log" 2>&1 &
    pids+=($!)
  done
  ready='[.workers[] | select(.state=="connected" and .owner_state=="run")] | length'
  for _ in $(seq 300); do [ "$("$BIN" workers --json | jq "$ready")" = "$WORKERS" ] && break; sleep 0.1; done
fi
"$BIN" workers

say "submitting the render ($FRAMES frames, 4 per task) and the video (after it)"
JOB=$("$BIN" submit "$OUT/job/render.toml")
VIDEO=$("$BIN" submit "$OUT/job/video.toml")
"$BIN" status "$VIDEO"

if [ "$POOL" = local ]; then
  # Once worker-1 has a frame in its task's checkpoint, its laptop is about to sleep: the task is
  # vacated (its finished frames kept) and resumes on another worker; worker-1 wakes up after.
  at_one() {
    "$BIN" status "$JOB" --json | jq -e '.state == "running"' >/dev/null || return 1
    compgen -G "$OUT/worker-1/slots/*/checkpoint/frame_*.png" >/dev/null ||
      compgen -G "$OUT/worker-1/attempts/*.checkpoint/frame_*.png" >/dev/null
  }
  for _ in $(seq 1200); do at_one && break; sleep 0.1; done
  if at_one; then
    say "worker-1's laptop is about to sleep (sleep_imminent=1): its task is vacated"
    sense "$OUT/sensors" sleep_imminent 1
    for _ in $(seq 100); do [ "$("$BIN" status "$JOB" --json | jq .preemptions)" -ge 1 ] && break; sleep 0.1; done
    "$BIN" workers
    sleep 3
    sense "$OUT/sensors" sleep_imminent 0
  fi
fi

"$BIN" wait "$VIDEO" || { "$BIN" status "$JOB"; "$BIN" status "$VIDEO"; die "the video did not succeed"; }
"$BIN" fetch "$JOB" --out "$OUT/frames"
"$BIN" fetch "$VIDEO" --out "$OUT/result"

say "who rendered what (rendered-*.txt: frame, attempt, worker, seconds)"
cat "$OUT"/frames/rendered-*.txt
S=$("$BIN" status "$JOB" --json)
echo "render: $(jq -r '"\(.tasks) tasks, \(.attempts) attempts, \(.preemptions) preempted, \(.lost_seconds) s of work lost"' <<<"$S")"

say "checking the video"
got=$(ffprobe -v error -select_streams v:0 -count_frames -show_entries stream=nb_read_frames \
  -of csv=p=0 "$OUT/result/animation.mp4")
echo "animation.mp4: $got frames, $(ffprobe -v error -show_entries format=duration -of csv=p=0 "$OUT/result/animation.mp4") s"
[ "$got" = "$FRAMES" ] || die "the video has $got frames, want $FRAMES"
echo "ok: $OUT/result/animation.mp4"

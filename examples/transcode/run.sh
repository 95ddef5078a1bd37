#!/usr/bin/env bash
# The transcode example end to end on this machine: a coordinator and WORKERS workers (default
# 2), a real video cut into segments (make-video.sh), one task per segment with per-task inputs
# (transcode.toml), the segments joined by a job that runs after it (join.toml), and the result
# checked with ffprobe against the source (frame count and duration). See README.md.
#
#   examples/transcode/run.sh
#
# Environment: WORKERS, SECONDS_LONG (default 8), SEGMENT (default 2), BUILD (default ./build).
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
BIN=${BUILD:-$ROOT/build}/idlepool
OUT=$ROOT/out/transcode
WORKERS=${WORKERS:-2}
die() { echo "transcode: $*" >&2; exit 1; }
say() { printf '\n\033[1m== %s\033[0m\n' "$*"; }
if [ ! -x "$BIN" ]; then
  scripts/bootstrap.sh
  scripts/build.sh
fi
rm -rf "$OUT"
mkdir -p "$OUT/logs"
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; }
trap cleanup EXIT

say "making the video (ffmpeg's testsrc2) and cutting it into segments"
examples/transcode/make-video.sh "$OUT/job" "${SECONDS_LONG:-8}" "${SEGMENT:-2}"

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
  "$BIN" token create --role submit --name transcode --data-dir "$OUT/coordinator" >"$OUT/access.token")
"$BIN" login "$ADDR" --token-file "$OUT/access.token"
sandbox=()
# Where this machine cannot sandbox tasks (a chroot, user namespaces off) the probe says "none":
# the workers then run --no-sandbox (tasks as this user; see docs/guide/sandbox.md).
tier=$("$BIN" worker --print-resources --gpus none --json 2>/dev/null | jq -r '.sandbox // "none"') || tier=none
[ "$tier" != none ] || sandbox=(--no-sandbox)
for w in $(seq "$WORKERS"); do
  "$BIN" worker --name "worker-$w" --slots 1 --dedicated --join "$ADDR" "${sandbox[@]}" \
    --token-file "$OUT/join.token" --work-dir "$OUT/worker-$w" >"$OUT/logs/worker-$w.log" 2>&1 &
  pids+=($!)
done
ready='[.workers[] | select(.state=="connected" and .owner_state=="run")] | length'
for _ in $(seq 300); do [ "$("$BIN" workers --json | jq "$ready")" = "$WORKERS" ] && break; sleep 0.1; done
"$BIN" workers

say "submitting the transcode (one task per segment) and the join (after it)"
JOB=$("$BIN" submit "$OUT/job/transcode.toml")
JOIN=$("$BIN" submit "$OUT/job/join.toml")
"$BIN" status "$JOIN"
"$BIN" wait "$JOIN" || { "$BIN" status "$JOB"; "$BIN" status "$JOIN"; die "the join did not succeed"; }
"$BIN" fetch "$JOIN" --out "$OUT/result"

say "checking the joined video against the source"
probe() {
  ffprobe -v error -select_streams v:0 -count_frames -show_entries stream=nb_read_frames \
    -of csv=p=0 "$1"
}
duration() { ffprobe -v error -show_entries format=duration -of csv=p=0 "$1"; }
sf=$(probe "$OUT/job/source.mp4"); jf=$(probe "$OUT/result/joined.mp4")
sd=$(duration "$OUT/job/source.mp4"); jd=$(duration "$OUT/result/joined.mp4")
echo "source: $sf frames, $sd s, $(stat -c %s "$OUT/job/source.mp4") bytes"
echo "joined: $jf frames, $jd s, $(stat -c %s "$OUT/result/joined.mp4") bytes"
S=$("$BIN" status "$JOB" --json)
echo "transcode: $(jq -r '"\(.tasks) tasks, \(.transfer.coordinator_bytes) bytes from the coordinator, \(.transfer.peer_bytes) from peers"' <<<"$S");" \
  "the segments are $(cat "$OUT"/job/segs/seg-*.mp4 | wc -c) bytes"
[ "$sf" = "$jf" ] || die "frame counts differ"
awk -v a="$sd" -v b="$jd" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(d < 1 / 24) }' ||
  die "durations differ"
echo "ok: $OUT/result/joined.mp4"

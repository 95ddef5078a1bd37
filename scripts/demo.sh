#!/usr/bin/env bash
# The main job on real input: renders the 60-frame POV-Ray `fractalzoom` animation across a pool
# of one coordinator and 3 workers on this machine, SIGKILLs one worker mid-job, shows the job
# finishing anyway with every frame exactly once, and assembles the frames into a video.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
scripts/bootstrap.sh
scripts/build.sh
BIN=$ROOT/build/idlepool
OUT=$ROOT/out/demo
rm -rf "$OUT"
mkdir -p "$OUT/logs"
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; }
trap cleanup EXIT

say() { printf '\n\033[1m== %s\033[0m\n' "$*"; }

say "starting a coordinator (data dir $OUT/coordinator)"
"$BIN" coordinator --listen 127.0.0.1:0 --data-dir "$OUT/coordinator" >"$OUT/logs/coordinator.log" 2>&1 &
pids+=($!); disown $!
for _ in $(seq 200); do grep -q "listening on" "$OUT/logs/coordinator.log" 2>/dev/null && break; sleep 0.05; done
ADDR=$(sed -n 's/.*listening on \([^ ]*\).*/\1/p' "$OUT/logs/coordinator.log" | head -1)
[ -n "$ADDR" ] || { cat "$OUT/logs/coordinator.log"; exit 1; }
export IDLEPOOL_COORDINATOR=$ADDR
export IDLEPOOL_TOKEN=$(cat "$OUT/coordinator/pool.token")
grep -A1 -E "listening on|join a machine" "$OUT/logs/coordinator.log" | grep -v -- "^--"

say "starting 3 workers (one slot each)"
declare -A wpid
for w in 1 2 3; do
  "$BIN" worker --name "worker-$w" --slots 1 --work-dir "$OUT/worker-$w" >"$OUT/logs/worker-$w.log" 2>&1 &
  wpid[$w]=$!
  pids+=($!); disown $!
done
for _ in $(seq 200); do
  n=$("$BIN" workers --json | jq '[.workers[] | select(.state=="connected")] | length')
  [ "$n" = 3 ] && break; sleep 0.05
done
"$BIN" workers

say "submitting examples/povray-fractalzoom/job.toml (60 frames, 4 per task)"
JOB=$("$BIN" submit examples/povray-fractalzoom/job.toml)
T0=$(date +%s)

say "waiting until worker-2 is rendering, then killing it with SIGKILL"
for _ in $(seq 1200); do
  busy=$("$BIN" workers --json | jq -r '.workers[] | select(.worker=="worker-2") | .attempts_running')
  done_tasks=$("$BIN" status "$JOB" --json | jq .succeeded)
  [ "${busy:-0}" -gt 0 ] && [ "$done_tasks" -ge 2 ] && break
  sleep 0.1
done
kill -9 "${wpid[2]}"
echo "killed worker-2 (pid ${wpid[2]}) with $done_tasks of 15 tasks done; its frames go to the others"

say "waiting for the job"
"$BIN" wait "$JOB" || { echo "job did not succeed"; "$BIN" status "$JOB"; exit 1; }
"$BIN" workers

say "fetching the frames"
"$BIN" fetch "$JOB" --out "$OUT/frames"
count=$(ls "$OUT/frames"/frame*.png | wc -l)
[ "$count" = 60 ] || { echo "expected 60 frames, got $count"; exit 1; }
# Exactly once, from the coordinator's own records: 60 committed outputs, 60 distinct frames.
once=$(sqlite3 -readonly "$OUT/coordinator/pool.db" \
  "SELECT COUNT(*) || ' committed, ' || COUNT(DISTINCT path) || ' distinct' FROM outputs WHERE job_id=$JOB")
echo "store: $once"
[ "$once" = "60 committed, 60 distinct" ] || { echo "frames not committed exactly once"; exit 1; }

say "assembling the animation with ffmpeg"
ffmpeg -loglevel error -y -framerate 24 -i "$OUT/frames/frame%02d.png" -c:v libx264 -pix_fmt yuv420p \
  "$OUT/fractalzoom.mp4"

say "summary"
"$BIN" status "$JOB" --json | jq '{job, name, state, tasks, succeeded, attempts, failures, preemptions, attempts_lost, workers_lost}'
echo "wall time: $(( $(date +%s) - T0 )) s"
echo "frames:    $OUT/frames/ ($count PNG files, each rendered and committed exactly once)"
echo "animation: $OUT/fractalzoom.mp4"
echo "logs:      $OUT/logs/"

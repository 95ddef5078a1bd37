#!/usr/bin/env bash
# The main job on real input: renders the 60-frame POV-Ray `fractalzoom` animation across a pool
# of one coordinator and 3 workers on this machine, while the owners of those machines get their
# machines back in the three ways that matter:
#   - worker-1's owner comes back for a few seconds: its task is frozen, then resumes;
#   - worker-2 dies (SIGKILL): its task is rerun elsewhere;
#   - worker-3's laptop goes on battery: its task is vacated, keeps its finished frames in the
#     checkpoint and resumes on another worker from there.
# The job finishes anyway with every frame exactly once, and the frames become a video.
# The owners' sensors are fake (one-value files in --sensors-dir, changed the way an owner's
# script should: write a temporary file, then rename it over the old one).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
scripts/bootstrap.sh test
scripts/build.sh
BIN=$ROOT/build/idlepool
OUT=$ROOT/out/demo
rm -rf "$OUT"
mkdir -p "$OUT/logs"
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; }
trap cleanup EXIT

say() { printf '\n\033[1m== %s\033[0m\n' "$*"; }
die() { echo "demo: $*" >&2; exit 1; }

# sense W KEY VALUE: sets one of worker-W's fake sensors (write, then rename).
sense() {
  local d=$OUT/sensors-$1
  printf '%s\n' "$3" >"$d/.$2.tmp"
  mv "$d/.$2.tmp" "$d/$2"
}
owner_state() { "$BIN" workers --json | jq -r --arg w "worker-$1" '.workers[] | select(.worker==$w) | .owner_state'; }
running() { "$BIN" workers --json | jq -r --arg w "worker-$1" '[.workers[] | select(.worker==$w) | .attempts_running] | first // 0'; }
field() { "$BIN" status "$JOB" --json | jq -r ".$1"; }
sql() { sqlite3 -readonly "$OUT/coordinator/pool.db" "$1"; }
# until_true SECONDS WHAT COMMAND...: polls every 100 ms; dies after SECONDS.
until_true() {
  local limit=$1 what=$2; shift 2
  local end=$(( $(date +%s) + limit ))
  until "$@"; do
    [ "$(date +%s)" -lt "$end" ] || { "$BIN" workers; "$BIN" status "$JOB" 2>/dev/null; die "timed out after ${limit}s waiting for $what"; }
    sleep 0.1
  done
}
# running_on W: sets RA to the attempt worker-W runs for the job; false when none.
running_on() { RA=$(sql "SELECT id FROM attempts WHERE job_id=$JOB AND worker='worker-$1' AND outcome='running'"); [ -n "$RA" ]; }
# ck_frames W ATTEMPT: the frames the attempt has finished, as kept in its checkpoint dir: the
# attempt's own unsandboxed, its slot's when sandboxed (each demo worker has one slot).
ck_frames() {
  find "$OUT/worker-$1/attempts/$2.checkpoint/" "$OUT/worker-$1/slots/0/checkpoint/" -maxdepth 1 \
    -name 'frame*.png' 2>/dev/null | wc -l
}
owner_is() { [ "$(owner_state "$1")" = "$2" ]; }
field_at_least() { [ "$(field "$1")" -ge "$2" ]; }

say "starting a coordinator (data dir $OUT/coordinator)"
"$BIN" coordinator --listen 127.0.0.1:0 --http 127.0.0.1:0 --data-dir "$OUT/coordinator" \
  >"$OUT/logs/coordinator.log" 2>&1 &
pids+=($!); disown $!
for _ in $(seq 200); do grep -q "listening on" "$OUT/logs/coordinator.log" 2>/dev/null && break; sleep 0.05; done
ADDR=$(sed -n 's/.*listening on \([0-9.]*:[0-9]*\).*/\1/p' "$OUT/logs/coordinator.log" | head -1)
[ -n "$ADDR" ] || { cat "$OUT/logs/coordinator.log"; exit 1; }
export IDLEPOOL_COORDINATOR=$ADDR
grep -A1 -E "listening on|join a machine|dashboard \(log in" "$OUT/logs/coordinator.log" | grep -v -- "^--"
# The pool's credentials as its admin hands them out, through the coordinator's admin socket
# (DATA_DIR/admin.sock), into files only this user can read: a join token for the workers and an
# access token the demo logs in with (kept in $OUT/config, not in your own login). No secret
# goes on a command line or into the environment.
export XDG_CONFIG_HOME=$OUT/config
unset IDLEPOOL_TOKEN IDLEPOOL_JOIN_TOKEN
(umask 077
  "$BIN" token create --role worker --data-dir "$OUT/coordinator" >"$OUT/join.token"
  "$BIN" token create --role submit --name demo --data-dir "$OUT/coordinator" >"$OUT/submit.token")
"$BIN" login "$ADDR" --token-file "$OUT/submit.token"

say "starting 3 workers (one slot each), their owners away and on AC power"
# Every task runs in a sandbox (docs/guide/sandbox.md). Where this machine cannot make one (a
# chroot, user namespaces switched off), a lent machine's worker would refuse to start; the demo
# says so and runs its own tasks unsandboxed instead.
sandbox_flag=()
tier=$("$BIN" worker --print-resources --gpus none --json 2>"$OUT/logs/sandbox-probe.log" | jq -r '.sandbox // "none"')
if [ "$tier" = none ]; then
  say "this machine cannot sandbox tasks ($(head -c 300 "$OUT/logs/sandbox-probe.log")): the demo's workers run --no-sandbox"
  sandbox_flag=(--no-sandbox)
else
  say "tasks run sandboxed (tier $tier)"
fi
# The owner policy, shortened so that the demo moves quickly (see the file's comments).
cp examples/owner-policies/quick.toml "$OUT/owner.toml"
declare -A wpid
for w in 1 2 3; do
  mkdir -p "$OUT/sensors-$w"
  sense $w idle_seconds 1000
  sense $w on_ac_power 1
  "$BIN" worker --name "worker-$w" --slots 1 --join "$ADDR" --token-file "$OUT/join.token" \
    --work-dir "$OUT/worker-$w" --sensors-dir "$OUT/sensors-$w" --config "$OUT/owner.toml" "${sandbox_flag[@]}" \
    >"$OUT/logs/worker-$w.log" 2>&1 &
  wpid[$w]=$!
  pids+=($!); disown $!
done
for _ in $(seq 200); do
  n=$("$BIN" workers --json | jq '[.workers[] | select(.state=="connected" and .owner_state=="run")] | length')
  [ "$n" = 3 ] && break; sleep 0.05
done
"$BIN" workers
[ "$n" = 3 ] || { tail -n 5 "$OUT"/logs/worker-*.log; die "$n of 3 workers ready to run work"; }

say "submitting examples/povray-fractalzoom/job.toml (60 frames, 4 per task, checkpointed per frame)"
JOB=$("$BIN" submit examples/povray-fractalzoom/job.toml)
T0=$(date +%s)
# The assembly of the animation is a pool job too: it waits until the render has succeeded, then
# joins the rendered frames into a video on a worker (examples/povray-fractalzoom/video.toml).
VIDEO=$("$BIN" submit examples/povray-fractalzoom/video.toml)
echo "job $VIDEO (the video) runs after job $JOB: $("$BIN" status "$VIDEO" --json | jq -r '.state + ", " + .reason')"

say "worker-1's owner comes back (idle_seconds=0): its task is frozen"
busy_after() { [ "$(running "$1")" -gt 0 ] && [ "$(field succeeded)" -ge "$2" ]; }
# Early in a task (at most 2 of its 4 frames done), so that it is still running when frozen.
early() { [ "$(field succeeded)" -ge 1 ] && running_on 1 && [ "$(ck_frames 1 "$RA")" -le 2 ]; }
until_true 120 "worker-1 early in a task" early
sense 1 idle_seconds 0
until_true 10 "worker-1 to suspend" owner_is 1 suspend
until_true 10 "a suspension" field_at_least suspensions 1
"$BIN" workers
sleep 3
say "worker-1's owner leaves again (idle_seconds=1000): its task resumes"
sense 1 idle_seconds 1000
until_true 10 "worker-1 to run" owner_is 1 run
"$BIN" workers

say "waiting until worker-2 is rendering, then killing it with SIGKILL"
until_true 120 "worker-2 rendering" busy_after 2 3
done_tasks=$(field succeeded)
kill -9 "${wpid[2]}"
# As if the machine died: its render dies with it (a SIGKILLed worker leaves its task running,
# in its own process group, rendering for nobody; its next start would kill it).
wd2=$(realpath "$OUT/worker-2")
orphans=$(grep -lzx "IDLEPOOL_WORK_DIR=$wd2" /proc/[0-9]*/environ 2>/dev/null | cut -d/ -f3 || true)
for p in $orphans; do kill -9 "$p" 2>/dev/null || true; done
echo "killed worker-2 (pid ${wpid[2]}) and its task's $(wc -w <<<"$orphans") processes with" \
  "$done_tasks of 15 tasks done; its frames go to the others"

say "waiting until worker-3 has checkpointed a frame or two of its task, then unplugging it"
# Midway: at least one frame kept in the checkpoint, at least two still to render.
midway() { running_on 3 && [ "$(ck_frames 3 "$RA")" -ge 1 ] && [ "$(ck_frames 3 "$RA")" -le 2 ]; }
until_true 120 "worker-3 midway through a task" midway
A3=$RA
IDX=$(sql "SELECT idx FROM attempts WHERE id=$A3")
sense 3 on_ac_power 0
echo "worker-3 on battery while attempt $A3 (task $IDX) had $(ck_frames 3 "$A3") of 4 frames done"
until_true 20 "worker-3 to vacate" owner_is 3 vacate
until_true 20 "a preemption" field_at_least preemptions 1
"$BIN" workers
kept=$(sql "SELECT group_concat(path, ' ') FROM checkpoints WHERE job_id=$JOB AND idx=$IDX AND attempt=$A3")
[ -n "$kept" ] || die "no checkpoint stored for attempt $A3"
echo "checkpoint of task $IDX stored with the preemption: $kept"

say "task $IDX is requeued and resumes on another worker from its checkpoint"
resumed_elsewhere() {
  read -r A W < <(sql "SELECT id, worker FROM attempts WHERE job_id=$JOB AND idx=$IDX AND id>$A3 AND outcome='running'" | tr '|' ' ') || return 1
  [ -n "${A:-}" ] && [ "$W" != worker-3 ] && grep -q "^resuming:" "$OUT/$W/attempts/$A.stderr.log" 2>/dev/null
}
until_true 60 "task $IDX to resume elsewhere" resumed_elsewhere
echo "attempt $A on $W: $(grep -m1 "^resuming:" "$OUT/$W/attempts/$A.stderr.log")"

say "worker-3 is back on AC power: it rejoins"
sense 3 on_ac_power 1
until_true 10 "worker-3 to run" owner_is 3 run
"$BIN" workers

say "waiting for the job"
"$BIN" wait "$JOB" || { echo "job did not succeed"; "$BIN" status "$JOB"; exit 1; }
"$BIN" workers

say "fetching the frames"
"$BIN" fetch "$JOB" --out "$OUT/frames"
count=$(ls "$OUT/frames"/frame*.png | wc -l)
[ "$count" = 60 ] || { echo "expected 60 frames, got $count"; exit 1; }
# Exactly once, from the coordinator's own records: 60 committed outputs, 60 distinct frames.
once=$(sql "SELECT COUNT(*) || ' committed, ' || COUNT(DISTINCT path) || ' distinct' FROM outputs WHERE job_id=$JOB")
echo "store: $once"
[ "$once" = "60 committed, 60 distinct" ] || { echo "frames not committed exactly once"; exit 1; }

say "the video job ran after the render: fetching the animation it assembled"
"$BIN" wait "$VIDEO" || { "$BIN" status "$VIDEO"; die "the video job did not succeed"; }
"$BIN" fetch "$VIDEO" --out "$OUT/video"
mv "$OUT/video/fractalzoom.mp4" "$OUT/fractalzoom.mp4"
vframes=$(ffprobe -v error -select_streams v:0 -count_frames -show_entries stream=nb_read_frames \
  -of csv=p=0 "$OUT/fractalzoom.mp4")
echo "fractalzoom.mp4: $vframes frames (job $VIDEO, after job $JOB)"
[ "$vframes" = 60 ] || die "the video has $vframes frames, want 60"

say "summary"
S=$("$BIN" status "$JOB" --json)
jq '{job, name, state, tasks, succeeded, attempts, failures, suspensions, preemptions, lost_seconds, attempts_lost, workers_lost}' <<<"$S"
suspensions=$(jq .suspensions <<<"$S")
preemptions=$(jq .preemptions <<<"$S")
echo "wall time:   $(( $(date +%s) - T0 )) s"
echo "suspensions: $suspensions (worker-1's owner came back; its task was frozen, then resumed)"
echo "preemptions: $preemptions (worker-3 went on battery; its task resumed elsewhere from its checkpoint)"
echo "lost work:   $(jq .lost_seconds <<<"$S") s (rendering since the last checkpoint of the vacated and lost attempts)"
echo "lost:        workers $(jq .workers_lost <<<"$S"), attempts $(jq .attempts_lost <<<"$S") (worker-2, SIGKILL)"
echo "frames:      $OUT/frames/ ($count PNG files, each rendered and committed exactly once)"
echo "animation:   $OUT/fractalzoom.mp4"
"$BIN" report "$JOB" --out "$OUT/report.html" || die "idlepool report failed"
echo "report:      $OUT/report.html (the job's timeline: a lane per worker, the suspension, the"
echo "             preemption and the lost worker's requeued task; open it in a browser)"
echo "logs:        $OUT/logs/"
[ "$(jq -r .state <<<"$S")" = succeeded ] || die "job state $(jq -r .state <<<"$S")"
[ "$suspensions" -ge 1 ] || die "expected at least one suspension"
[ "$preemptions" -ge 1 ] || die "expected at least one preemption"

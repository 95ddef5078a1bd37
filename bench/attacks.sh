#!/usr/bin/env bash
# The hostile-load attacks of issue 21, in a row, against one pool of real processes on
# 127.0.0.1 (a coordinator with its HTTPS dashboard, two workers): for each attack, the peak
# resident memory (VmHWM, reset before the attack) and the most open fds of the coordinator and
# of the workers, the coordinator's memory once the attack is over, and whether the pool still
# works after it (a 6-task job completes, every output exactly once).
#
#   bench/attacks.sh [--only NAME[,NAME...]] [--list]
# Needs build/ (scripts/build.sh --all). Each attack is bench/attacks/NAME.sh, defining attack_NAME,
# which runs against the pool and returns when the attack is over; it may use IDLEPOOL, T, ADDR,
# HPORT (the dashboard's port), CA (its CA file), COORD_PID, TOKEN, JOIN_TOKEN_FILE, DATA_DIR,
# WORKER_PIDS and the helpers of tests/integration/lib.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
ONLY=""
while [ $# -gt 0 ]; do
  case $1 in
    --only) ONLY=",$2,"; shift 2 ;;
    --list) for f in bench/attacks/*.sh; do basename "$f" .sh; done; exit 0 ;;
    *) echo "usage: $0 [--only NAME,...] [--list]" >&2; exit 2 ;;
  esac
done
export IDLEPOOL=${IDLEPOOL:-$ROOT/build/idlepool}
[ -x "$IDLEPOOL" ] || { echo "no $IDLEPOOL: run scripts/build.sh first" >&2; exit 2; }
source tests/integration/lib.sh

start_pool() {
  start_coordinator --http 127.0.0.1:0 "$@"
  wait_until 10 grep -q "dashboard at https://" "$T/coordinator.log"
  HPORT=$(sed -n 's|.*dashboard at https://127.0.0.1:\([0-9]*\)/.*|\1|p' "$T/coordinator.log" | tail -1)
  CA=$T/coord/ca.pem
  DATA_DIR=$T/coord
}
ensure_workers() {
  local n pid
  WORKER_PIDS=()
  for n in w1 w2; do
    pid=$(eval echo "\${WPID_$n:-}")
    if [ -z "$pid" ] || dead "$pid"; then start_worker "$n" --slots 2; pid=$(eval echo "\$WPID_$n"); fi
    WORKER_PIDS+=("$pid")
  done
  for n in w1 w2; do wait_until 30 is_connected "$n"; done
}

kib() { awk -v f="$2:" '$1 == f {print $2}' "/proc/$1/status" 2>/dev/null || echo 0; }
fds() { ls "/proc/$1/fd" 2>/dev/null | wc -l; }
mib() { awk -v k="$1" 'BEGIN { printf "%.0f", k / 1024 }'; }
# sample_fds OUT PID...: the most open fds of each PID, one line "PID MAX", until killed.
sample_fds() {
  local out=$1; shift
  declare -A max
  trap 'for p in "${!max[@]}"; do echo "$p ${max[$p]}"; done >"$out"; exit 0' TERM
  while :; do
    for p in "$@"; do
      n=$(fds "$p"); [ "$n" -gt "${max[$p]:-0}" ] && max[$p]=$n
    done
    sleep 0.1
  done
}

cat >"$T/normal.toml" <<'TOML'
name = "normal"
count = 6
command = ["sh", "-c", "echo {index} > out-{index}.txt"]
outputs = ["out-*.txt"]
TOML
pool_works() {
  ( set -e
    JOB=$("$IDLEPOOL" submit "$T/normal.toml")
    timeout 120 "$IDLEPOOL" wait "$JOB" --quiet >/dev/null
    assert_outputs_once "$JOB" 6 ) >"$T/pool_works.log" 2>&1
}

start_pool
ensure_workers
pool_works || { echo "the pool does not work before any attack" >&2; exit 1; }
IDLE_KIB=$(kib "$COORD_PID" VmRSS)
W_IDLE_KIB=$(kib "${WORKER_PIDS[0]}" VmRSS)
echo "idle: coordinator $(mib "$IDLE_KIB") MiB, $(fds "$COORD_PID") fds; worker $(mib "$W_IDLE_KIB") MiB, $(fds "${WORKER_PIDS[0]}") fds"
printf '%-16s %9s %9s %9s %9s %10s  %s\n' attack "coord MiB" "coord fds" "wkr MiB" "wkr fds" \
  "coord after" "pool after"
for f in bench/attacks/*.sh; do
  name=$(basename "$f" .sh)
  [ -z "$ONLY" ] || [[ $ONLY == *",$name,"* ]] || continue
  source "$f"
  ensure_workers
  for p in "$COORD_PID" "${WORKER_PIDS[@]}"; do echo 5 >"/proc/$p/clear_refs"; done
  sample_fds "$T/fds.$name" "$COORD_PID" "${WORKER_PIDS[@]}" &
  sampler=$!
  rc=0
  ( "attack_$name" ) >"$T/attack.$name.log" 2>&1 || rc=$?
  kill -TERM "$sampler"; wait "$sampler" 2>/dev/null || true
  cpeak=$(kib "$COORD_PID" VmHWM); cfds=$(awk -v p="$COORD_PID" '$1 == p {print $2}' "$T/fds.$name")
  wpeak=0; wfds=0
  for p in "${WORKER_PIDS[@]}"; do
    k=$(kib "$p" VmHWM); [ "$k" -gt "$wpeak" ] && wpeak=$k
    n=$(awk -v p="$p" '$1 == p {print $2}' "$T/fds.$name"); [ "${n:-0}" -gt "$wfds" ] && wfds=$n
  done
  note=""
  [ "$rc" = 0 ] || note=" (the attack script ended with $rc: see $T/attack.$name.log)"
  if dead "$COORD_PID"; then
    after="died"; start_pool
  else
    # Settled: back within 25% (or 16 MiB) of idle, or as it is after 30 s.
    near() { [ "$(kib "$COORD_PID" VmRSS)" -le $((IDLE_KIB + (IDLE_KIB / 4 > 16384 ? IDLE_KIB / 4 : 16384))) ]; }
    end=$(( $(date +%s) + 30 ))
    until near || [ "$(date +%s)" -ge "$end" ]; do sleep 0.2; done
    after="$(mib "$(kib "$COORD_PID" VmRSS)") MiB"
  fi
  lost=""
  for p in "${WORKER_PIDS[@]}"; do dead "$p" && lost+=" a worker died;"; done
  ensure_workers
  if pool_works; then works="yes"; else works="NO ($(tail -1 "$T/pool_works.log"))"; fi
  printf '%-16s %9s %9s %9s %9s %10s  %s%s%s\n' "$name" "$(mib "$cpeak")" "${cfds:-?}" \
    "$(mib "$wpeak")" "${wfds:-?}" "$after" "$works" "$lost" "$note"
done
exec 2>/dev/null  # the pool's processes are killed on exit; bash would report each

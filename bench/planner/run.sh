#!/usr/bin/env bash
# bench/planner/run.sh: checks idlepool's makespan predictions (issue 6 point 5) against real
# runs over emulated networks. For each scenario of a matrix (workers, link rate, one-way delay,
# tasks, seconds per task, shared asset, outputs, a few slow workers) it builds a fresh netlab
# (tests/net/netlab.sh: coordinator on LAB-h0, worker wI on LAB-hI, every link capped by tc tbf),
# starts the pool (bench/netpool.sh), writes a job, then
#   PLAN  `idlepool plan JOB.toml --json`: the prediction .pool.makespan_s (the plan may run a
#         short calibration job on the pool; if it did, the workers are restarted on empty work
#         dirs so that the measured run starts with cold caches, as the prediction assumes);
#   RUN   `idlepool submit`, `idlepool wait`, then `idlepool status JOB --json`: the actual
#         makespan (finished_ms - submitted_ms, coordinator clock) and, when the status carries
#         one, the coordinator's own .prediction.makespan_s;
# and prints one line per scenario with the error (predicted - actual) / actual, then the median
# and worst |error| against the targets (15% and 35%). Compute is emulated with `sleep` (see
# README.md here). Everything is removed on exit and on Ctrl-C.
#
#   bench/planner/run.sh [--quick] [--only NAME,...] [--out DIR] [--keep] [--idlepool PATH]
#                        [--timeout-factor F] [--list] [--self-test]
#
# --quick: 3 scenarios (~3 min); default: the full matrix (~10 min). --only: these scenarios.
# --out DIR: results.jsonl (one JSON object per scenario) and table.txt (default: a new dir under
# ${TMPDIR:-/var/tmp}). --keep: keep the temp dir with every log. --list: print the matrix.
# --self-test: no root, no processes: checks the matrix, the generated jobs and the arithmetic.
# Needs root, iproute2 with veth/bridge/tbf, jq; exits 77 (skipped) when the lab cannot be built.
# Exit status: 0 when every scenario ran (whatever the errors), 1 when one failed, 2 bad usage.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
src_hint="@PROJECT_SOURCE_DIR@"   # filled in by CMake in the build tree's copy
case "$src_hint" in @*) src_hint="" ;; esac

# The matrix. One scenario a line:
#   NAME WORKERS RATE DELAY_MS TASKS TASK_S ASSET_MIB OUT_MIB SLOW
# RATE caps every host's link (tbf, both ways), the coordinator's included. DELAY_MS: one-way
# delay on every worker's connection to the coordinator (a fault proxy on h0; 0 = direct).
# TASK_S: what each task sleeps on a worker of speed 1. ASSET_MIB: one shared input (0 = none);
# OUT_MIB: each task's output (0 = none). SLOW: "-" or K:RATE:DELAY_MS:SPEED, the last K workers
# on their own link RATE and delay, running tasks at SPEED (a task sleeps TASK_S / SPEED).
SCENARIOS="
compute-2w          2 100mbit  0  8 4   0 0 -
compute-8w          8 100mbit  0 32 2   0 0 -
tail-4w             4 100mbit  0  6 4   0 0 -
tail-8w             8 100mbit  0 10 3   0 1 -
outputs-coord-10m   8  10mbit  0 32 0.5 0 1 -
outputs-8m-100m     4 100mbit  0 16 1   0 8 -
asset-64m-100m      8 100mbit  0 16 1  64 0 -
asset-8m-10m        4  10mbit  0  8 1   8 0 -
delay-20ms          4 100mbit 20 64 0.5 0 0 -
mixed-slowlink      8 100mbit  0 24 1   8 1 2:10mbit:20:1
mixed-slowcpu       4 100mbit  0 16 2   0 0 1:100mbit:0:0.5
mixed-delay-10m     4  10mbit  0 16 1   0 1 2:10mbit:20:1
"
QUICK="compute-8w asset-8m-10m mixed-slowlink"
TARGET_MEDIAN=15
TARGET_WORST=35

quick=0 keep=0 out="" only="" idlepool=${IDLEPOOL:-} timeout_factor=4 list=0 self_test=0
usage() { sed -n '/^#   bench\/planner\/run.sh/,/^# Exit status/p' "$0" | sed 's/^# \{0,1\}//'; }
while [ $# -gt 0 ]; do
  case "$1" in
    --quick) quick=1; shift ;;
    --keep) keep=1; shift ;;
    --out) out=$2; shift 2 ;;
    --only) only=${2//,/ }; shift 2 ;;
    --idlepool) idlepool=$2; shift 2 ;;
    --timeout-factor) timeout_factor=$2; shift 2 ;;
    --list) list=1; shift ;;
    --self-test) self_test=1; shift ;;
    -h|--help) usage; exit 0 ;;
    *) echo "planner: unknown option '$1'" >&2; usage >&2; exit 2 ;;
  esac
done

# --- the matrix: parsing, checks, bounds, jobs (pure; used by --self-test) ---

scenario_line() { awk -v n="$1" '$1 == n' <<<"$SCENARIOS"; }
all_names() { awk 'NF { print $1 }' <<<"$SCENARIOS"; }

# rate_bytes RATE: bytes/s of 10mbit, 100mbit, 1gbit (decimal bits).
rate_bytes() {
  local r=${1,,} n mult
  case "$r" in
    *gbit) n=${r%gbit}; mult=1000000000 ;;
    *mbit) n=${r%mbit}; mult=1000000 ;;
    *kbit) n=${r%kbit}; mult=1000 ;;
    *) return 1 ;;
  esac
  [[ "$n" =~ ^[0-9]+$ ]] && [ "$n" -gt 0 ] || return 1
  echo $(( n * mult / 8 ))
}

# check_scenario LINE: empty output when the line is well-formed, else why not.
check_scenario() {
  local name n rate delay tasks ts asset outm slow k srate sdelay speed extra
  read -r name n rate delay tasks ts asset outm slow extra <<<"$1"
  [ -z "$extra" ] && [ -n "$slow" ] || { echo "$name: want 9 fields"; return; }
  [[ "$name" =~ ^[a-z0-9-]{1,24}$ ]] || { echo "$name: bad name"; return; }
  [[ "$n" =~ ^[2-8]$ ]] || { echo "$name: workers must be 2-8, not $n"; return; }
  rate_bytes "$rate" >/dev/null || { echo "$name: bad rate $rate"; return; }
  [[ "$delay" =~ ^[0-9]+$ ]] && [ "$delay" -le 500 ] || { echo "$name: bad delay $delay"; return; }
  [[ "$tasks" =~ ^[0-9]+$ ]] && [ "$tasks" -ge 1 ] && [ "$tasks" -le 1000 ] || { echo "$name: bad tasks $tasks"; return; }
  [[ "$ts" =~ ^[0-9]+(\.[0-9]+)?$ ]] || { echo "$name: bad task seconds $ts"; return; }
  [[ "$asset" =~ ^[0-9]+$ && "$outm" =~ ^[0-9]+$ ]] || { echo "$name: bad asset/output MiB"; return; }
  if [ "$slow" != - ]; then
    IFS=: read -r k srate sdelay speed <<<"$slow"
    [[ "$k" =~ ^[0-9]+$ ]] && [ "$k" -ge 1 ] && [ "$k" -lt "$n" ] || { echo "$name: slow K must be 1..workers-1"; return; }
    rate_bytes "$srate" >/dev/null || { echo "$name: bad slow rate $srate"; return; }
    [[ "$sdelay" =~ ^[0-9]+$ ]] || { echo "$name: bad slow delay $sdelay"; return; }
    [[ "$speed" =~ ^[0-9]+(\.[0-9]+)?$ ]] && awk -v s="$speed" 'BEGIN { exit !(s > 0) }' ||
      { echo "$name: bad slow speed $speed"; return; }
  fi
}

# worker_params LINE I: "RATE DELAY_MS SPEED" of worker I (1-based) in the scenario.
worker_params() {
  local name n rate delay tasks ts asset outm slow k srate sdelay speed
  read -r name n rate delay tasks ts asset outm slow <<<"$1"
  if [ "$slow" != - ]; then
    IFS=: read -r k srate sdelay speed <<<"$slow"
    if [ "$2" -gt $(( n - k )) ]; then echo "$srate $sdelay $speed"; return; fi
  fi
  echo "$rate $delay 1"
}

# bound LINE: a lower bound on the makespan in seconds, no overheads at all: the largest of
# compute (equal tasks handed greedily to whichever worker is free first, each at its speed),
# one copy of the asset through the coordinator's link, and every output into it.
bound() {
  local name n rate delay tasks ts asset outm slow i speeds=""
  read -r name n rate delay tasks ts asset outm slow <<<"$1"
  for (( i = 1; i <= n; i++ )); do speeds+="$(worker_params "$1" "$i" | cut -d' ' -f3) "; done
  awk -v speeds="$speeds" -v tasks="$tasks" -v ts="$ts" -v a="$asset" -v o="$outm" \
      -v b="$(rate_bytes "$rate")" 'BEGIN {
    n = split(speeds, sp, " ")
    for (i = 1; i <= n; i++) free[i] = 0
    for (t = 0; t < tasks; t++) {
      best = 1
      for (i = 2; i <= n; i++) if (free[i] + ts / sp[i] < free[best] + ts / sp[best]) best = i
      free[best] += ts / sp[best]
    }
    c = 0
    for (i = 1; i <= n; i++) if (free[i] > c) c = free[i]
    x = a * 1048576 / b; if (x > c) c = x
    y = tasks * o * 1048576 / b; if (y > c) c = y
    printf "%.1f", c
  }'
}

# write_job LINE DIR ASSET_FILE: DIR/job.toml and DIR/task.sh (and DIR/asset.bin, a hard link to
# ASSET_FILE, when the scenario has an asset). Each task checks the staged asset's size, sleeps
# TASK_S / $PLANBENCH_SPEED (the worker's environment reaches its tasks) and writes OUT_MIB of
# random bytes to out-INDEX.bin.
write_job() {
  local name n rate delay tasks ts asset outm slow dir=$2 inputs="\"task.sh\""
  read -r name n rate delay tasks ts asset outm slow <<<"$1"
  mkdir -p "$dir"
  {
    echo '#!/bin/sh'
    echo "# bench/planner scenario $name: emulated compute (sleep), shared asset, output."
    echo 'set -e'
    [ "$asset" = 0 ] || echo "test \"\$(stat -L -c %s asset.bin)\" = $(( asset * 1048576 ))"
    echo "s=\$(awk -v s=$ts -v f=\"\${PLANBENCH_SPEED:-1}\" 'BEGIN { printf \"%.3f\", s / f }')"
    echo 'sleep "$s"'
    [ "$outm" = 0 ] || echo "head -c $(( outm * 1048576 )) /dev/urandom >\"out-\$1.bin\""
  } >"$dir/task.sh"
  if [ "$asset" != 0 ]; then
    ln -f "$3" "$dir/asset.bin" 2>/dev/null || cp "$3" "$dir/asset.bin"
    inputs+=", \"asset.bin\""
  fi
  {
    echo "name = \"plan-$name\""
    echo 'command = ["sh", "task.sh", "{index}"]'
    echo "count = $tasks"
    echo "inputs = [$inputs]"
    [ "$outm" = 0 ] || echo 'outputs = ["out-*.bin"]'
    echo '[retry]'
    echo 'max_attempts = 2'
  } >"$dir/job.toml"
}

# err_pct PRED ACTUAL: (PRED - ACTUAL) / ACTUAL in percent, one decimal; empty without PRED.
err_pct() {
  [ -n "$1" ] && [ "$1" != null ] || return 0
  awk -v p="$1" -v a="$2" 'BEGIN { if (a > 0) printf "%.1f", (p - a) / a * 100 }'
}
# summary_line ERRORS...: "median |err| M% (target <= 15%: met), worst |err| W% (...)"
summary_line() {
  local med worst
  [ $# -gt 0 ] || { echo "no predictions"; return; }
  med=$(printf '%s\n' "$@" | tr -d - | sort -g | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else printf "%.1f", (v[NR / 2] + v[NR / 2 + 1]) / 2 }')
  worst=$(printf '%s\n' "$@" | tr -d - | sort -g | tail -1)
  awk -v m="$med" -v w="$worst" -v tm="$TARGET_MEDIAN" -v tw="$TARGET_WORST" -v k=$# 'BEGIN {
    printf "%d predictions: median |error| %.1f%% (target <= %d%%: %s), worst |error| %.1f%% (target <= %d%%: %s)\n",
      k, m, tm, m <= tm ? "met" : "NOT met", w, tw, w <= tw ? "met" : "NOT met" }'
}

selected_names() {
  if [ -n "$only" ]; then echo "$only"; elif [ "$quick" = 1 ]; then echo "$QUICK"; else all_names; fi
}

if [ "$list" = 1 ]; then
  printf '%-18s %2s %8s %5s %5s %6s %5s %4s %-16s %7s\n' name N rate delay tasks task_s asset out slow "bound_s"
  for s in $(selected_names); do
    line=$(scenario_line "$s")
    [ -n "$line" ] || { echo "planner: no scenario '$s'" >&2; exit 2; }
    read -r a b c d e f g h i <<<"$line"
    printf '%-18s %2s %8s %5s %5s %6s %5s %4s %-16s %7s\n' "$a" "$b" "$c" "$d" "$e" "$f" "$g" "$h" "$i" "$(bound "$line")"
  done
  exit 0
fi

if [ "$self_test" = 1 ]; then
  st_fail() { echo "FAIL: $*" >&2; exit 1; }
  st=$(mktemp -d "${TMPDIR:-/tmp}/planner-selftest.XXXXXX")
  trap 'rm -rf "$st"' EXIT
  names=$(all_names)
  [ "$(sort <<<"$names" | uniq -d)" = "" ] || st_fail "duplicate scenario names"
  for s in $names; do
    why=$(check_scenario "$(scenario_line "$s")")
    [ -z "$why" ] || st_fail "$why"
  done
  for s in $QUICK; do [ -n "$(scenario_line "$s")" ] || st_fail "quick scenario $s is not in the matrix"; done
  [ "$(wc -w <<<"$QUICK")" = 3 ] || st_fail "--quick should run 3 scenarios"
  # The matrix covers what issue 6 asks for (field, value): workers 2/4/8, links 10/100 Mbit,
  # delay 0/20 ms, asset 0/8/64 MiB, outputs 0/1/8 MiB, a tail (tasks = workers + 2), a mixed pool.
  cover() { awk -v f="$1" -v v="$2" 'NF && $f == v { found = 1 } END { exit !found }' <<<"$SCENARIOS" || st_fail "no scenario with field $1 = $2"; }
  for v in 2 4 8; do cover 2 "$v"; done
  for v in 10mbit 100mbit; do cover 3 "$v"; done
  for v in 0 20; do cover 4 "$v"; done
  for v in 0 8 64; do cover 7 "$v"; done
  for v in 0 1 8; do cover 8 "$v"; done
  awk 'NF && $5 == $2 + 2 { f = 1 } END { exit !f }' <<<"$SCENARIOS" || st_fail "no tail scenario"
  awk 'NF && $9 != "-" { f = 1 } END { exit !f }' <<<"$SCENARIOS" || st_fail "no mixed pool"
  # Bad lines are refused.
  [ -n "$(check_scenario "x 9 100mbit 0 8 1 0 0 -")" ] || st_fail "9 workers accepted"
  [ -n "$(check_scenario "x 4 fast 0 8 1 0 0 -")" ] || st_fail "rate 'fast' accepted"
  [ -n "$(check_scenario "x 4 100mbit 0 8 1 0 0 4:10mbit:0:1")" ] || st_fail "all workers slow accepted"
  [ -n "$(check_scenario "x 4 100mbit 0 8 1 0 0 1:10mbit:0:0")" ] || st_fail "speed 0 accepted"
  # Worker parameters and bounds: 4 workers, the last one at half speed, 6 tasks of 2 s: the
  # greedy order gives 2 s tasks to w1-w3 twice (4 s) before the slow one's 4 s task -> 4.0.
  line="t 4 100mbit 0 6 2 0 0 1:10mbit:20:0.5"
  [ "$(worker_params "$line" 3)" = "100mbit 0 1" ] || st_fail "worker 3 params: $(worker_params "$line" 3)"
  [ "$(worker_params "$line" 4)" = "10mbit 20 0.5" ] || st_fail "worker 4 params: $(worker_params "$line" 4)"
  [ "$(bound "$line")" = "4.0" ] || st_fail "bound $(bound "$line"), want 4.0"
  # 64 MiB through 100 Mbit (12.5 MB/s) = 5.4 s; 32 x 1 MiB outputs through 10 Mbit = 26.8 s.
  [ "$(bound "a 8 100mbit 0 16 1 64 0 -")" = "5.4" ] || st_fail "asset bound $(bound "a 8 100mbit 0 16 1 64 0 -")"
  [ "$(bound "o 8 10mbit 0 32 0.5 0 1 -")" = "26.8" ] || st_fail "output bound $(bound "o 8 10mbit 0 32 0.5 0 1 -")"
  # Generated jobs: what each task does, per scenario.
  head -c 1048576 /dev/zero >"$st/asset1"
  write_job "j 4 100mbit 0 5 0.5 1 2 -" "$st/j" "$st/asset1"
  grep -qx 'count = 5' "$st/j/job.toml" || st_fail "job count"
  grep -qx 'inputs = \["task.sh", "asset.bin"\]' "$st/j/job.toml" || st_fail "job inputs"
  grep -qx 'outputs = \["out-\*.bin"\]' "$st/j/job.toml" || st_fail "job outputs"
  [ "$(stat -c %s "$st/j/asset.bin")" = 1048576 ] || st_fail "asset not staged next to the job"
  # The task itself, run here in its own dir: checks the asset, sleeps, writes 2 MiB.
  (cd "$st/j" && PLANBENCH_SPEED=100 sh task.sh 7) || st_fail "task.sh failed"
  [ "$(stat -c %s "$st/j/out-7.bin")" = 2097152 ] || st_fail "task output size"
  (cd "$st/j" && head -c 5 /dev/zero >asset.bin && ! sh task.sh 8 2>/dev/null) || st_fail "task.sh ignored a wrong asset"
  write_job "k 4 100mbit 0 3 1 0 0 -" "$st/k" ""
  grep -qx 'inputs = \["task.sh"\]' "$st/k/job.toml" || st_fail "job without asset: inputs"
  ! grep -q '^outputs' "$st/k/job.toml" || st_fail "job without outputs lists outputs"
  # Errors and the summary.
  [ "$(err_pct 11 10)" = "10.0" ] && [ "$(err_pct 8 10)" = "-20.0" ] && [ -z "$(err_pct "" 10)" ] ||
    st_fail "err_pct"
  s=$(summary_line 10.0 -20.0 5.0 -40.0)
  [[ "$s" == "4 predictions: median |error| 15.0% (target <= 15%: met), worst |error| 40.0% (target <= 35%: NOT met)" ]] ||
    st_fail "summary: $s"
  echo "ok: $(wc -w <<<"$names") scenarios valid, coverage, bounds, jobs and arithmetic"
  exit 0
fi

# --- the real thing ---

for s in $(selected_names); do
  line=$(scenario_line "$s")
  [ -n "$line" ] || { echo "planner: no scenario '$s' (see --list)" >&2; exit 2; }
  why=$(check_scenario "$line"); [ -z "$why" ] || { echo "planner: $why" >&2; exit 2; }
done

netlab=""
for d in "$here/../.." "$src_hint"; do
  [ -n "$d" ] && [ -f "$d/tests/net/netlab.sh" ] && { netlab=$d/tests/net/netlab.sh; break; }
done
[ -n "$netlab" ] || { echo "planner: cannot find tests/net/netlab.sh"; exit 77; }
# shellcheck source=../../tests/net/netlab.sh
source "$netlab"
for d in "$here/.." "$src_hint/bench"; do
  [ -f "$d/netpool.sh" ] && { source "$d/netpool.sh"; break; }
done
declare -F netpool_coordinator >/dev/null || { echo "planner: cannot find bench/netpool.sh"; exit 77; }

# The build tree's copy lives in build/bench/planner/: its idlepool is two levels up.
idlepool=$(netpool_find_idlepool "$here/.." "$src_hint" "$idlepool") ||
  { echo "planner: no idlepool binary (build it, or pass --idlepool)" >&2; exit 2; }
NETPOOL_IDLEPOOL=$idlepool
faultproxy=$(dirname "$idlepool")/idlepool-faultproxy
command -v jq >/dev/null || { echo "planner: needs jq"; exit 77; }
why=$(netlab_available) || { echo "planner: skipped: ${why:-no network lab}"; exit 77; }

if [ -z "$out" ]; then
  out=${TMPDIR:-/var/tmp}/idlepool-planner-$(date +%Y%m%d-%H%M%S)
fi
mkdir -p "$out"
out=$(cd "$out" && pwd)
: >"$out/results.jsonl"

T=$(mktemp -d "${TMPDIR:-/var/tmp}/idlepool-planner.XXXXXX")
LAB=""
RUN_PID=""
cleanup() {
  local rc=$?
  trap - EXIT INT TERM HUP
  [ -n "$RUN_PID" ] && kill -TERM "$RUN_PID" 2>/dev/null
  [ -n "$LAB" ] && netlab_down "$LAB"
  wait 2>/dev/null || true
  if [ "$keep" = 1 ]; then echo "planner: logs kept in $T" >&2; else rm -rf "$T"; fi
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
trap 'exit 129' HUP

log() { echo "[$(date +%H:%M:%S)] $*" >&2; }
now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }'; }
in_h0() { netlab_exec "$LAB-h0" "$@"; }
job_count() { in_h0 "$idlepool" status --json 2>/dev/null | jq '.jobs | length' 2>/dev/null || echo 0; }

# asset_file MIB: random bytes (incompressible), made once per size.
asset_file() {
  local f=$T/assets/$1.bin
  mkdir -p "$T/assets"
  [ -f "$f" ] || head -c $(( $1 * 1048576 )) /dev/urandom >"$f"
  echo "$f"
}

declare -a WPIDS
# start_workers LINE DIR SUFFIX: every worker of the scenario, on its link, delay and speed.
start_workers() {
  local line=$1 d=$2 sfx=$3 n i wr wd ws addr
  n=$(awk '{ print $2 }' <<<"$line")
  for (( i = 1; i <= n; i++ )); do
    read -r wr wd ws <<<"$(worker_params "$line" "$i")"
    addr=$NETPOOL_ADDR
    [ "$wd" = 0 ] || addr=${PROXY_ADDR[$wd]}
    PLANBENCH_SPEED=$ws netpool_worker "$LAB" "$i" "$addr" "$d" "$d/w$i$sfx"
    WPIDS[i]=$NETPOOL_PID
  done
}

# wait_measured N SINCE_MS: until N connected workers have a link probe newer than SINCE_MS (the
# probe each worker runs on join), so that the pool is measured idle, as a user measures it before
# planning, rather than while the next job's transfers share the links.
wait_measured() {
  local want=$1 since=$2 t_end got
  t_end=$(( $(date +%s) + 90 ))
  while true; do
    got=$(in_h0 "$idlepool" workers --json 2>/dev/null |
      jq --argjson age "$(( $(date +%s%3N) - since ))" '[.workers[] | select(.state == "connected" and .link != null and .link.measured_ms_ago <= $age)] | length' 2>/dev/null || echo 0)
    [ "$got" -lt "$want" ] || return 0
    [ "$(date +%s)" -lt "$t_end" ] || { log "  only $got of $want workers measured their link"; return 0; }
    sleep 0.2
  done
}

# run_scenario LINE: prints one JSON object (the result) on stdout; logs on stderr.
run_scenario() {
  local line=$1 name n rate delay tasks ts asset outm slow d i wr wd ws t0 t1 dl
  read -r name n rate delay tasks ts asset outm slow <<<"$line"
  d=$T/$name
  mkdir -p "$d"
  t0=$(now)
  netlab_down "$LAB"
  netlab_up "$LAB" "$n" "$rate" || { echo "planner: netlab_up failed" >&2; return 1; }
  for (( i = 1; i <= n; i++ )); do
    read -r wr wd ws <<<"$(worker_params "$line" "$i")"
    [ "$wr" = "$rate" ] || netlab_set_rate "$LAB-h$i" "$wr" || return 1
  done
  netpool_coordinator "$LAB" "$d" || return 1
  # One fault proxy on h0 per distinct delay, in front of the coordinator (the workers' link to
  # the coordinator only: peer-to-peer traffic between workers does not pass through it). Its
  # buffer is raised so that one connection is not window-limited below the link's rate.
  declare -gA PROXY_ADDR=()
  local delays k=0
  delays=$(for (( i = 1; i <= n; i++ )); do worker_params "$line" "$i" | cut -d' ' -f2; done | sort -un)
  for wd in $delays; do
    [ "$wd" = 0 ] && continue
    [ -x "$faultproxy" ] || { echo "planner: no $faultproxy (build target idlepool-faultproxy)" >&2; return 1; }
    k=$((k + 1))
    local paddr=${NETPOOL_ADDR%:*}:$((7900 + k)) t_end
    in_h0 "$faultproxy" --listen "$paddr" --target "$NETPOOL_ADDR" --delay-ms "$wd" --buffer 4Mi \
      --stats "$d/proxy-$wd.json" >"$d/proxy-$wd.log" 2>&1 &
    t_end=$(( $(date +%s) + 20 ))
    until grep -q "listening on" "$d/proxy-$wd.log" 2>/dev/null; do
      [ "$(date +%s)" -lt "$t_end" ] || { echo "planner: fault proxy did not start" >&2; return 1; }
      sleep 0.1
    done
    PROXY_ADDR[$wd]=$paddr
  done
  local started_ms
  started_ms=$(date +%s%3N)
  start_workers "$line" "$d" ""
  netpool_wait_connected "$LAB" "$n" 60 || { echo "planner: only some of $n workers connected (logs in $d)" >&2; return 1; }
  wait_measured "$n" "$started_ms"
  local asset_path=""
  [ "$asset" = 0 ] || asset_path=$(asset_file "$asset")
  write_job "$line" "$d/job" "$asset_path"
  local setup_s plan_s run_s cold=false
  setup_s=$(since "$t0")

  # PLAN
  local pred_plan="" plan_note="" jobs0 jobs1 prc=0 plan_json="null"
  t1=$(now)
  jobs0=$(job_count)
  timeout 600 ip netns exec "$LAB-h0" "$idlepool" plan "$d/job/job.toml" --json \
    >"$d/plan.json" 2>"$d/plan.err" || prc=$?
  plan_s=$(since "$t1")
  if [ "$prc" = 0 ] && jq -e '.pool.makespan_s | numbers' "$d/plan.json" >/dev/null 2>&1; then
    pred_plan=$(jq '.pool.makespan_s' "$d/plan.json")
    plan_json=$(jq -c '{pool: .pool, single: .single, speedup: .speedup, verdict: .verdict}' "$d/plan.json")
    plan_note="ok"
  elif grep -qiE -- "--pattern is required|were not expected|not expected|extras" "$d/plan.err"; then
    plan_note="predictor missing"
  else
    plan_note="plan failed (rc $prc): $(head -c 200 "$d/plan.err" | tr '\n' ' ')"
  fi
  jobs1=$(job_count)
  if [ "$jobs1" -gt "$jobs0" ]; then
    # The plan ran calibration work: the asset is in the workers' caches now. Restart them on
    # empty work dirs (same names, so what the coordinator measured about them still applies).
    cold=true
    log "  plan ran $((jobs1 - jobs0)) job(s): restarting the workers with empty caches"
    for (( i = 1; i <= n; i++ )); do kill -TERM "${WPIDS[i]}" 2>/dev/null || true; done
    local t_end=$(( $(date +%s) + 30 ))
    for (( i = 1; i <= n; i++ )); do
      while kill -0 "${WPIDS[i]}" 2>/dev/null; do
        [ "$(date +%s)" -lt "$t_end" ] || { kill -KILL "${WPIDS[i]}" 2>/dev/null; log "  w$i did not stop on SIGTERM: killed"; }
        sleep 0.1
      done
    done
    t_end=$(( $(date +%s) + 30 ))
    while [ "$(netpool_connected "$LAB")" -gt 0 ]; do
      [ "$(date +%s)" -lt "$t_end" ] || { echo "planner: stopped workers still listed as connected" >&2; return 1; }
      sleep 0.2
    done
    # The same names on fresh work dirs: each takes its identity (key, certificate) along, since
    # the pool refuses a second join under a name it certified.
    for (( i = 1; i <= n; i++ )); do
      mkdir -p "$d/w$i.cold" && cp -a "$d/w$i/identity" "$d/w$i.cold/" ||
        { echo "planner: cannot copy w$i's identity" >&2; return 1; }
    done
    started_ms=$(date +%s%3N)
    start_workers "$line" "$d" ".cold"
    netpool_wait_connected "$LAB" "$n" 60 || { echo "planner: workers did not reconnect (logs in $d)" >&2; return 1; }
    wait_measured "$n" "$started_ms"
  fi

  # RUN
  local job st actual pred_status wrc=0
  dl=$(awk -v b="$(bound "$line")" -v f="$timeout_factor" 'BEGIN { printf "%d", f * b + 120 }')
  t1=$(now)
  job=$(in_h0 "$idlepool" submit "$d/job/job.toml" 2>"$d/submit.log") || { echo "planner: submit failed (see $d/submit.log)" >&2; return 1; }
  timeout "$dl" ip netns exec "$LAB-h0" "$idlepool" wait "$job" --quiet >/dev/null 2>"$d/wait.log" || wrc=$?
  run_s=$(since "$t1")
  [ "$wrc" != 124 ] || { echo "planner: job $job not done after ${dl}s (logs in $d)" >&2; return 1; }
  st=$(in_h0 "$idlepool" status "$job" --json)
  printf '%s\n' "$st" >"$d/status.json"
  if [ "$(jq -r .state <<<"$st")" != succeeded ]; then
    echo "planner: job $job ended $(jq -r .state <<<"$st"): $(jq -c .failed_tasks <<<"$st") (logs in $d)" >&2
    return 1
  fi
  actual=$(jq '(.finished_ms - .submitted_ms) / 1000' <<<"$st")
  pred_status=$(jq '.prediction.makespan_s // empty' <<<"$st")
  jq -cn --arg name "$name" --argjson workers "$n" --arg rate "$rate" --argjson delay_ms "$delay" \
    --argjson tasks "$tasks" --argjson task_s "$ts" --argjson asset_mib "$asset" \
    --argjson output_mib "$outm" --arg slow "$slow" --argjson bound_s "$(bound "$line")" \
    --argjson actual_s "$actual" --arg pred_plan "$pred_plan" --arg pred_status "$pred_status" \
    --arg err_plan "$(err_pct "$pred_plan" "$actual")" --arg err_status "$(err_pct "$pred_status" "$actual")" \
    --arg plan_note "$plan_note" --argjson plan "$plan_json" --argjson cold_restart "$cold" \
    --argjson setup_s "$setup_s" --argjson plan_s "$plan_s" --argjson run_s "$run_s" \
    --argjson total_s "$(since "$t0")" --argjson job "$st" '
    def num: if . == "" then null else tonumber end;
    {scenario: $name, workers: $workers, rate: $rate, delay_ms: $delay_ms, tasks: $tasks,
     task_s: $task_s, asset_mib: $asset_mib, output_mib: $output_mib, slow: $slow,
     bound_s: $bound_s, actual_s: $actual_s,
     predicted_plan_s: ($pred_plan | num), error_plan_pct: ($err_plan | num),
     predicted_status_s: ($pred_status | num), error_status_pct: ($err_status | num),
     plan_note: $plan_note, plan: $plan, cold_restart: $cold_restart,
     timings_s: {setup: $setup_s, plan: $plan_s, run: $run_s, total: $total_s},
     status_prediction: $job.prediction,
     transfer: $job.transfer, attempts: $job.attempts, workers_lost: $job.workers_lost}'
  netlab_down "$LAB"
  rm -rf "$d/coord/blobs" "$d"/w*/ "$d/job/asset.bin"
}

names=$(selected_names)
echo "planner: $(wc -w <<<"$names") scenarios; $(nproc) cores; idlepool: $idlepool; results in $out"
failed=0 idx=0
for s in $names; do
  idx=$((idx + 1))
  line=$(scenario_line "$s")
  LAB=$(printf "pb%02d%04d" $(($$ % 100)) "$idx")
  log "$s: $(awk '{ printf "%s workers, %s, delay %s ms, %s tasks x %s s, asset %s MiB, output %s MiB, slow %s", $2, $3, $4, $5, $6, $7, $8, $9 }' <<<"$line") (lab $LAB, bound $(bound "$line") s)"
  # In the background and waited for, so that a signal to this script is handled at once.
  run_scenario "$line" >"$T/run.out" 2>"$T/run.err" &
  RUN_PID=$!
  if wait "$RUN_PID"; then
    cat "$T/run.out" >>"$out/results.jsonl"
    log "  $(jq -r '"actual \(.actual_s) s, predicted \(.predicted_plan_s // "-") (\(.plan_note)); setup \(.timings_s.setup) s, plan \(.timings_s.plan) s, run \(.timings_s.run) s, total \(.timings_s.total) s"' "$T/run.out")"
  else
    failed=1
    log "  FAILED: $(tail -3 "$T/run.err" | tr '\n' ' ')"
    jq -cn --arg name "$s" --arg why "$(tail -3 "$T/run.err")" '{scenario: $name, failed: $why}' >>"$out/results.jsonl"
    netlab_down "$LAB"
  fi
  RUN_PID=""
  LAB=""
done

{
  echo
  printf '| %-18s | %2s | %7s | %5s | %-15s | %9s | %5s | %4s | %7s | %7s | %7s | %7s | %7s | %6s | %6s |\n' \
    scenario N link delay slow "tasks x s" asset out "bound s" "plan s" "stat s" "actual" "err %" "plan t" "total t"
  printf '|%s|\n' "$(printf -- '-%.0s' $(seq 1 166))"
  jq -r 'if .failed then [.scenario, "FAILED"] | @tsv else
    [.scenario, .workers, .rate, .delay_ms, .slow, "\(.tasks) x \(.task_s)", .asset_mib, .output_mib,
     .bound_s, (.predicted_plan_s // "-"), (.predicted_status_s // "-"), .actual_s,
     ((.error_status_pct // .error_plan_pct) // "-"), .timings_s.plan, .timings_s.total] | @tsv end' \
    "$out/results.jsonl" |
  while IFS=$'\t' read -r a b c d e f g h i j k l m o p; do
    if [ "$b" = FAILED ]; then printf '| %-18s | FAILED\n' "$a"; continue; fi
    printf '| %-18s | %2s | %7s | %5s | %-15s | %9s | %5s | %4s | %7.1f | %7s | %7s | %7.1f | %7s | %6s | %6s |\n' \
      "$a" "$b" "$c" "$d" "$e" "$f" "$g" "$h" "$i" "$j" "$k" "$l" "$m" "$o" "$p"
  done
  echo "(bound: no-overhead lower bound; plan s: idlepool plan's .pool.makespan_s; stat s: the"
  echo " status's .prediction.makespan_s; actual: finished_ms - submitted_ms; err = (predicted - actual)"
  echo " / actual with the status's prediction (made at submission), else plan's; plan t / total t: seconds the plan step"
  echo " / the whole scenario took here, lab set-up included)"
  mapfile -t errs < <(jq -r 'select(.failed | not) | (.error_status_pct // .error_plan_pct) // empty' "$out/results.jsonl")
  if [ "${#errs[@]}" -gt 0 ]; then
    echo "summary: $(summary_line "${errs[@]}")"
  else
    echo "summary: no predictions ($(jq -r 'select(.failed | not) | .plan_note' "$out/results.jsonl" | sort | uniq -c | awk '{ $1 = $1 " x"; print }' | paste -sd';' -)); actual makespans only"
  fi
} | tee "$out/table.txt"
echo "results: $out/results.jsonl"
exit "$failed"

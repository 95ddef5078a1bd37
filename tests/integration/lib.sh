# Shared helpers for the integration tests: real idlepool processes on 127.0.0.1, temp dirs,
# real signals. Sourced by each test; IDLEPOOL is the binary under test.
set -euo pipefail
: "${IDLEPOOL:?set IDLEPOOL to the idlepool binary}"
T=$(mktemp -d "${TMPDIR:-/tmp}/idlepool-it.XXXXXX")
# A login saved by `idlepool login` lives here, never in the user's own config.
export XDG_CONFIG_HOME=$T/config
PIDS=()
cleanup() {
  local rc=$?
  for p in "${PIDS[@]}"; do kill -9 "$p" 2>/dev/null || true; done
  # A worker killed with SIGKILL leaves its tasks running (by design: see docs/limits.md); the
  # test's tasks run in dirs under $T, so every process working there goes too, pass or fail.
  local proc cwd
  for proc in /proc/[0-9]*; do
    [ "${proc#/proc/}" = "$$" ] && continue
    cwd=$(readlink "$proc/cwd" 2>/dev/null) || continue
    case "$cwd" in "$T" | "$T"/*) kill -9 "${proc#/proc/}" 2>/dev/null || true ;; esac
  done
  wait 2>/dev/null || true
  if [ $rc -ne 0 ]; then
    echo "--- test failed (rc $rc); logs in $T:" >&2
    for f in "$T"/*.log; do echo "=== $f" >&2; tail -30 "$f" >&2; done
  else
    rm -rf "$T"
  fi
}
trap cleanup EXIT

fail() { echo "FAIL: $*" >&2; exit 1; }
pass() { echo "ok: $*"; }

# wait_until SECONDS COMMAND...: polls COMMAND every 50 ms until it succeeds; fails after the
# deadline (a bound on a hang, not an assertion about speed).
wait_until() {
  local limit=$1; shift
  local end=$(( $(date +%s) + limit ))
  until "$@" >/dev/null 2>&1; do
    [ "$(date +%s)" -lt "$end" ] || fail "timed out after ${limit}s waiting for: $*"
    sleep 0.05
  done
}

starts_above() { [ "$(grep -c "coordinator listening on" "$T/coordinator.log" 2>/dev/null)" -gt "$1" ]; }

# start_coordinator [extra args]: the first start picks a free port; a restart reuses it. Sets
# ADDR, TOKEN (an access token of role submit, made through the admin socket), JOIN_TOKEN_FILE
# (a join token for any number of workers), COORD_PID; exports IDLEPOOL_COORDINATOR and
# IDLEPOOL_TOKEN.
start_coordinator() {
  local listen=127.0.0.1:${PORT:-0} starts
  starts=$(grep -c "listening on" "$T/coordinator.log" 2>/dev/null || true)
  # No gateway unless the test asks for one (--serve-listen): parallel tests would race for 7880.
  local serve=(--serve-listen off)
  case " $* " in *" --serve-listen "*) serve=() ;; esac
  "$IDLEPOOL" coordinator --listen "$listen" --data-dir "$T/coord" "${serve[@]}" "$@" >>"$T/coordinator.log" 2>&1 &
  COORD_PID=$!
  PIDS+=($COORD_PID)
  wait_until 20 starts_above "${starts:-0}"
  PORT=$(sed -n 's/.*coordinator listening on 127.0.0.1:\([0-9]*\).*/\1/p' "$T/coordinator.log" | tail -1)
  ADDR=127.0.0.1:$PORT
  # Kept in the data dir: a test that wipes it (a new pool, a new CA) gets new tokens.
  JOIN_TOKEN_FILE=$T/coord/test-join.token
  if [ ! -s "$T/coord/test-submit.token" ]; then
    "$IDLEPOOL" token create --role submit --data-dir "$T/coord" >"$T/coord/test-submit.token" 2>/dev/null
    "$IDLEPOOL" token create --role worker --ttl 24h --data-dir "$T/coord" >"$JOIN_TOKEN_FILE" 2>/dev/null
  fi
  TOKEN=$(cat "$T/coord/test-submit.token")
  export IDLEPOOL_COORDINATOR=$ADDR IDLEPOOL_TOKEN=$TOKEN
}

# The coordinator's gateway, "https://127.0.0.1:PORT" (after start_coordinator --serve-listen).
gateway_url() { sed -n 's|.*gateway at \(https://[0-9.:]*\)/.*|\1|p' "$T/coordinator.log" | tail -1; }

# start_worker NAME [extra args]: joins (the first time; WORK_DIR $T/NAME keeps its identity) and
# runs worker NAME; sets WPID_<NAME>.
# Unless the test passes --sensors-dir, the worker reads an empty one, and is --dedicated: every
# owner sensor unknown, so other load on a busy CI machine (read as the owner's) never suspends
# the test's work (without --dedicated, an owner who cannot be sensed gets no work at all).
# Whether this machine can sandbox tasks (a chroot, some containers and kernels with user
# namespaces off cannot): the tier the worker's probe finds, "none" when it fails. Where it is
# "none", start_worker adds --no-sandbox and the sandbox's own tests skip.
SANDBOX_TIER=$("$IDLEPOOL" worker --print-resources --gpus none --json 2>/dev/null | jq -r '.sandbox // "none"')
[ -n "$SANDBOX_TIER" ] || SANDBOX_TIER=none
# Workers a test starts itself (not through start_worker) get it from the environment.
if [ "$SANDBOX_TIER" = none ]; then export IDLEPOOL_NO_SANDBOX=1; fi
sandbox_or_skip() {
  [ "$SANDBOX_TIER" != none ] && return 0
  echo "SKIP: this machine cannot sandbox tasks: $("$IDLEPOOL" worker --print-resources --gpus none 2>&1 >/dev/null | head -c 400)"
  trap - EXIT  # nothing started yet; cleanup's report would turn 77 into a failure
  rm -rf "$T"
  exit 77
}
start_worker() {
  local name=$1; shift
  if [ "$SANDBOX_TIER" = none ] && [[ " $* " != *" --no-sandbox "* ]]; then set -- "$@" --no-sandbox; fi
  local sensors=()
  if [[ " $* " != *" --sensors-dir "* ]]; then
    mkdir -p "$T/no-sensors"
    sensors=(--sensors-dir "$T/no-sensors")
    [[ " $* " == *" --dedicated "* ]] || sensors+=(--dedicated)
  fi
  # A serving test's replica is the fake engine next to idlepool: outside the system dirs, so
  # tasks see that dir only when the worker shows it (sandbox/mounts.h VisiblePaths).
  if [ -n "${ENGINE:-}" ] && [ "$SANDBOX_TIER" != none ]; then set -- "$@" --sandbox-show "$(dirname "$ENGINE")"; fi
  local join=(--join "$ADDR")
  [[ " $* " == *" --coordinator "* ]] && join=()  # a test's own address (a proxy) wins
  "$IDLEPOOL" worker --name "$name" --work-dir "$T/$name" "${join[@]}" \
    --token-file "$JOIN_TOKEN_FILE" "${sensors[@]}" "$@" >>"$T/$name.log" 2>&1 &
  local pid=$!
  PIDS+=($pid)
  printf -v "WPID_${name//-/_}" '%s' "$pid"
}

worker_state() { "$IDLEPOOL" workers --json | jq -r --arg w "$1" '.workers[] | select(.worker==$w) | .state'; }
worker_running() { "$IDLEPOOL" workers --json | jq -r --arg w "$1" '.workers[] | select(.worker==$w) | .attempts_running'; }
is_connected() { [ "$(worker_state "$1")" = connected ]; }
is_lost() { [ "$(worker_state "$1")" = lost ]; }
is_busy() { [ "$(worker_running "$1")" -gt 0 ]; }
job_field() { "$IDLEPOOL" status "$1" --json | jq -r ".$2"; }
job_at_least() { [ "$(job_field "$1" "$2")" -ge "$3" ]; }  # job_at_least JOB FIELD N
job_done() { local s; s=$(job_field "$1" state); [ "$s" != running ] && [ "$s" != waiting ]; }

dead() { ! kill -0 "$1" 2>/dev/null || grep -q '^State:.*Z' "/proc/$1/status" 2>/dev/null; }

# sql QUERY: reads the coordinator's store (the real SQLite file).
sql() { sqlite3 -readonly "$T/coord/pool.db" "$1"; }

# assert_outputs_once JOB N: every task committed exactly once and N output rows, no path twice.
assert_outputs_once() {
  local job=$1 want=$2
  local rows dup
  rows=$(sql "SELECT COUNT(*) FROM outputs WHERE job_id=$job")
  [ "$rows" = "$want" ] || fail "job $job has $rows output rows, want $want"
  dup=$(sql "SELECT COUNT(*) FROM (SELECT path FROM outputs WHERE job_id=$job GROUP BY path HAVING COUNT(*)>1)")
  [ "$dup" = 0 ] || fail "job $job has $dup output paths committed more than once"
}

# sense DIR KEY VALUE: sets one fake sensor the way an owner's script should (write, rename).
sense() {
  mkdir -p "$1"
  printf '%s\n' "$3" >"$1/.$2.tmp"
  mv "$1/.$2.tmp" "$1/$2"
}
unsense() { rm -f "$1/$2"; }
owner_state() { "$IDLEPOOL" workers --json | jq -r --arg w "$1" '.workers[] | select(.worker==$w) | .owner_state'; }
is_owner_state() { [ "$(owner_state "$1")" = "$2" ]; }   # is_owner_state WORKER run|suspend|vacate
# A policy that starts soon after the owner leaves and reacts at once; checkpoints every second.
owner_config() { cp "$(dirname "${BASH_SOURCE[0]}")/../../examples/owner-policies/quick.toml" "$1"; }
# The running attempt of task 0 of JOB (empty when none) and where it runs.
running_attempt() { sql "SELECT id FROM attempts WHERE job_id=$1 AND outcome='running'"; }
running_on() { sql "SELECT worker FROM attempts WHERE job_id=$1 AND outcome='running'"; }
is_running_on() { [ "$(running_on "$1")" = "$2" ]; }

# has_cgroups WORKER: the worker runs its tasks in cgroups (it says so when it starts). Without
# them (no cgroup v2 in a container or chroot), a setsid escapee is out of reach by design.
has_cgroups() { grep -q "tasks run in their own cgroups" "$T/$1.log"; }

# need_proxy: the fault proxy (tests/tools/faultproxy.cc) next to the binary, else skip (77).
need_proxy() {
  PROXY=$(dirname "$IDLEPOOL")/idlepool-faultproxy
  [ -x "$PROXY" ] || { echo "SKIP: no $PROXY"; exit 77; }
}
# start_proxy NAME ARGS...: a fault proxy in front of the coordinator ($ADDR), stats in
# $T/NAME.json; sets PADDR_NAME (its address) and PPID_NAME (its pid, for SIGUSR1/SIGUSR2).
start_proxy() {
  local name=$1; shift
  "$PROXY" --listen 127.0.0.1:0 --target "$ADDR" --stats "$T/$name.json" "$@" >"$T/$name.log" 2>&1 &
  PIDS+=($!)
  printf -v "PPID_$name" '%s' "$!"
  wait_until 10 grep -q "listening on" "$T/$name.log"
  printf -v "PADDR_$name" '%s' "$(sed -n 's/.*listening on \([^ ]*\).*/\1/p' "$T/$name.log" | head -1)"
}
stat_of() { jq -r ".$2" "$T/$1.json"; }  # stat_of PROXY FIELD
# assert_fetched_output JOB DIR: fetches JOB's outputs into DIR and checks that out.bin hashes to
# what the task itself wrote in out.sha (the committed bytes are the task's bytes).
assert_fetched_output() {
  "$IDLEPOOL" fetch "$1" --out "$2" >/dev/null
  local got
  got=$(sha256sum "$(find "$2" -name out.bin)" | cut -c1-64)
  [ "$got" = "$(cat "$(find "$2" -name out.sha)")" ] || fail "job $1: fetched out.bin does not match the task's hash"
}

# Sandboxed tasks (docs/guide/sandbox.md) run in their worker's slot dirs,
# WORK_DIR/slots/N/task and /checkpoint (WORK_DIR/attempts/ID.task with --no-sandbox), and see
# their own PID numbers. These find them from outside.
# attempt_task_dir W A: the task dir of attempt A, running on worker W.
_attempt_task_dir() {
  local e
  for e in /proc/[0-9]*/environ; do
    { tr '\0' '\n' <"$e"; } 2>/dev/null | grep -qx "IDLEPOOL_ATTEMPT_ID=$2" || continue
    { tr '\0' '\n' <"$e"; } 2>/dev/null | grep -qx "IDLEPOOL_WORK_DIR=$(readlink -f "$T/$1")" || continue
    { tr '\0' '\n' <"$e"; } 2>/dev/null | sed -n 's/^IDLEPOOL_TASK_DIR=//p'
    return 0
  done
  return 1
}
attempt_task_dir() { wait_until 30 _attempt_task_dir "$1" "$2"; _attempt_task_dir "$1" "$2"; }
# attempt_checkpoint_dir W A: its checkpoint dir.
attempt_checkpoint_dir() {
  local d; d=$(attempt_task_dir "$1" "$2") || return 1
  case $d in */task) echo "${d%/task}/checkpoint" ;; *) echo "${d%.task}.checkpoint" ;; esac
}
# task_file W NAME: file NAME in the task dir of a task running on W, once it is not empty.
_task_file() {
  local f
  for f in "$T/$1"/slots/*/task/"$2" "$T/$1"/attempts/*.task/"$2"; do
    if [ -s "$f" ]; then echo "$f"; return 0; fi
  done
  return 1
}
task_file() { wait_until 30 _task_file "$1" "$2"; _task_file "$1" "$2"; }
# host_pid W PID: the PID, as this machine numbers it, of the process of a task of worker W that
# calls itself PID ($$ inside its sandbox's PID namespace; the same number without one).
host_pid() {
  local s p
  for s in /proc/[0-9]*/status; do
    p=${s#/proc/}; p=${p%/status}
    [ "$(awk '/^NSpid:/ {print $NF}' "$s" 2>/dev/null)" = "$2" ] || continue
    { tr '\0' '\n' <"/proc/$p/environ"; } 2>/dev/null | grep -qx "IDLEPOOL_WORK_DIR=$(readlink -f "$T/$1")" || continue
    echo "$p"; return 0
  done
  return 1
}

# open_gate NAME / close_gate NAME: a task that waits for file NAME in its task dir
# (`while [ ! -e NAME ]`) goes on once the gate is open. A sandbox hides the test's $T from its
# tasks, so the gate is the file put in the task dir of every task of this test's workers, now
# and while the gate stays open (a task that starts later finds it too).
_gate_once() {
  local f d root
  root=$(readlink -f "$T")
  for f in $(grep -lz "^IDLEPOOL_TASK_DIR=$root/" /proc/[0-9]*/environ 2>/dev/null); do
    # A process may end between the grep and here: its environ is gone, and that is fine.
    d=$({ tr '\0' '\n' <"$f"; } 2>/dev/null | sed -n 's/^IDLEPOOL_TASK_DIR=//p') || continue
    if [ -n "$d" ]; then touch "$d/$1" 2>/dev/null || true; fi
  done
}
open_gate() {
  ( set +e; while :; do _gate_once "$1"; sleep 0.05; done ) &
  printf -v "GATE_${1//[^a-zA-Z0-9]/_}" '%s' "$!"
  PIDS+=($!)
}
close_gate() {
  local v="GATE_${1//[^a-zA-Z0-9]/_}"
  if [ -n "${!v:-}" ]; then
    kill "${!v}" 2>/dev/null || true
    wait "${!v}" 2>/dev/null || true
  fi
  printf -v "$v" '%s' ""
}

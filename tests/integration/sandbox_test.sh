#!/usr/bin/env bash
# The task sandbox (issue 19) with real workers, one per tier the machine can run: as root, a
# worker in tier uid (each slot its own uid) and one in tier userns (run as `nobody`); as an
# ordinary user, tier userns only. Each task writes what it found to its stdout, read back with
# `idlepool logs`:
#   (a) the worker's environment (/proc/PID/environ), its identity (key and certificate), blob
#       cache, outbox and other attempts' dirs give nothing;
#   (b) the owner's home directories (/root, /home) are empty;
#   (c) writing outside the task and checkpoint dirs fails and changes nothing on the machine;
#   (d) kill $PPID, kill -9 -1 reach no process outside the sandbox: the worker and an owner's
#       process of the same uid live on;
#   (e) a fork bomb ends at --task-pids-max: the attempt fails saying so, the worker carries on;
#   (f) network "none" (the default): the coordinator's port cannot be reached; "host": it can;
#   (h) a GPU task sees only its own GPU's device nodes (stand-in files, --device-root);
#   (i) a worker whose sandbox probe fails refuses to start and names why;
# and timeouts reach every process of a sandboxed task.
# After all of it, a normal job completes on each worker with its outputs exactly once.
FAKE=$(dirname "${IDLEPOOL:?set IDLEPOOL to the idlepool binary}")/tests/fake_nvml/libidlepool-fake-nvml.so
source "$(dirname "$0")/lib.sh"
sandbox_or_skip
start_coordinator
PORT_C=${ADDR##*:}

# Stand-in GPU device nodes for (h): two fake NVIDIA GPUs, minors 0 and 1.
mkdir -p "$T/devroot/dev"
for n in nvidia0 nvidia1 nvidiactl nvidia-uvm; do echo "stand-in $n" >"$T/devroot/dev/$n"; done
printf 'name=Fake A100 uuid=GPU-0001 memory_mb=40960 temp=40 util=0 pids=\nname=Fake A100 uuid=GPU-0002 memory_mb=40960 temp=40 util=0 pids=\n' >"$T/nvml.state"

# start_tier W: worker W (w: this user's tier, with the fake GPUs; u: `nobody`, tier userns).
start_tier() {
  if [ "$1" = w ]; then
    IDLEPOOL_NVML_LIBRARY=$FAKE IDLEPOOL_FAKE_NVML_STATE=$T/nvml.state \
      start_worker w --slots 2 --task-pids-max 64 --device-root "$T/devroot"
  else
    chmod 755 "$T"; mkdir -p "$T/u" "$T/no-sensors"; chown nobody: "$T/u"
    cp "$JOIN_TOKEN_FILE" "$T/u.token"; chown nobody: "$T/u.token"
    setpriv --reuid=65534 --regid=65534 --clear-groups env HOME=/nonexistent \
      "$IDLEPOOL" worker --name u --work-dir "$T/u" --join "$ADDR" --token-file "$T/u.token" \
      --sensors-dir "$T/no-sensors" --dedicated --slots 2 --task-pids-max 64 >>"$T/u.log" 2>&1 &
    WPID_u=$!; PIDS+=($WPID_u)
  fi
  wait_until 20 is_connected "$1"
}
stop_tier() { local v=WPID_$1; kill -TERM "${!v}"; wait "${!v}" 2>/dev/null || true; }
workers=(w)
if [ "$(id -u)" = 0 ]; then
  chmod 755 "$T"
  u_tier=$(cd / && setpriv --reuid=65534 --regid=65534 --clear-groups env HOME=/nonexistent \
    "$IDLEPOOL" worker --print-resources --gpus none --json 2>/dev/null | jq -r '.sandbox // "none"')
  if [ "$u_tier" = userns ]; then workers+=(u); else echo "skip tier userns: nobody cannot sandbox here"; fi
fi

# run_on WORKER SCRIPT: runs SCRIPT as one task pinned to WORKER; prints the job id.
run_on() {
  cat >"$T/job-$1.toml" <<TOML
name = "probe-$1"
command = ["sh", "-c", $(jq -Rn --arg s "$2" '$s')]
count = 1
TOML
  "$IDLEPOOL" submit "$T/job-$1.toml"
}
log_of() { "$IDLEPOOL" logs "$1" 0; }

for w in "${workers[@]}"; do
  start_tier "$w"
  if [ "$w" = w ]; then
    [ "$(id -u)" != 0 ] || grep -q "tasks run sandboxed (tier uid" "$T/w.log" || fail "w: not tier uid"
  else
    grep -q "tasks run sandboxed (tier userns" "$T/u.log" || fail "u: not tier userns"
  fi
  wpid_var=WPID_$w; wpid=${!wpid_var}
  wd=$T/$w
  echo "SECRET-OF-THE-OWNER" >"$T/owner-secret"
  sleep 1000 & owner_proc=$!; PIDS+=($owner_proc)   # an owner's process (as root or not)
  script="exec 1>&2
    echo a-environ:\$(cat /proc/$wpid/environ 2>&1 | tr -d '\\\\0' | head -c 200)
    echo a-identity:\$(cat $wd/identity/* 2>&1 | head -c 200)
    echo a-cache:\$(ls -A $wd/cache 2>&1 | head -c 200)
    echo a-outbox:\$(ls -A $wd/outbox 2>&1 | head -c 200)
    echo a-attempts:\$(ls -A $wd/attempts 2>&1 | head -c 200)
    echo a-slots:\$(ls -A $wd/slots | tr '\\n' ' ')
    echo a-owner-secret:\$(cat $T/owner-secret 2>&1)
    echo b-root:\$(ls -A /root 2>&1 | wc -l)
    echo b-home:\$(ls -A /home 2>&1 | wc -l)
    touch /etc/sandbox-x 2>/dev/null && echo c-etc-written
    touch $T/sandbox-x 2>/dev/null
    touch $wd/sandbox-x 2>/dev/null  # (under /tmp here: lands in the private /tmp)
    touch \$IDLEPOOL_TASK_DIR/../sandbox-x 2>/dev/null && echo c-slot-written
    touch \$IDLEPOOL_TASK_DIR/ok && echo c-task-ok
    kill \$PPID; kill -9 -1; kill -9 $wpid 2>/dev/null && echo d-killed-worker
    kill -9 $owner_proc 2>/dev/null && echo d-killed-owner-proc
    if bash -c 'exec 3<>/dev/tcp/127.0.0.1/$PORT_C' 2>/dev/null; then echo f-coordinator-reached; else echo f-no-network; fi
    echo end-of-probe"
  JOB=$(run_on "$w" "$script")
  "$IDLEPOOL" wait "$JOB" --quiet >/dev/null || fail "$w: probe job failed: $(log_of "$JOB")"
  out=$(log_of "$JOB")
  echo "$out" | grep -q "end-of-probe" || fail "$w: probe did not finish: $out"
  echo "$out" | grep -q "SECRET-OF-THE-OWNER\|BEGIN\|IDLEPOOL_" && fail "$w: a secret reached the task: $out"
  for want in "a-cache:ls: cannot access" "a-outbox:ls: cannot access" "a-attempts:ls: cannot access" \
              "a-slots:[0-9]$" "b-root:0" "b-home:0" "c-task-ok" "f-no-network"; do
    echo "$out" | grep -q -- "$want" || fail "$w: want '$want' in: $out"
  done
  for bad in c-etc-written c-slot-written d-killed-worker d-killed-owner-proc f-coordinator-reached; do
    echo "$out" | grep -q -- "$bad" && fail "$w: $bad: $out"
  done
  [ ! -e /etc/sandbox-x ] && [ ! -e "$T/sandbox-x" ] && [ ! -e "$wd/sandbox-x" ] || fail "$w: a write outside landed"
  kill -0 "$wpid" || fail "$w: the worker died"
  kill -0 "$owner_proc" || fail "$w: the owner's process died"
  kill "$owner_proc"
  pass "$w: (a) (b) (c) (d) (f): nothing of the owner's or the worker's reached or touched"

  # (e) a fork bomb (bash retries failed forks: only the limit's kill ends it)
  JOB=$(run_on "$w" "exec bash -c 'while :; do sleep 100 & done' 2>/dev/null")
  rc=0; "$IDLEPOOL" wait "$JOB" --quiet >/dev/null 2>&1 || rc=$?
  [ "$rc" != 0 ] || fail "$w: the fork bomb succeeded"
  "$IDLEPOOL" failures "$JOB" | grep -q "limit on processes and threads" ||
    fail "$w: fork bomb: $("$IDLEPOOL" failures "$JOB")"
  kill -0 "$wpid" || fail "$w: the worker died under the fork bomb"
  pass "$w: (e) a fork bomb failed its attempt at the pids limit; the worker lives"
  stop_tier "$w"
done
start_tier w

# (f) asked for, the host's network reaches the coordinator's port (a refusing worker never gets
# such a job: host_network_policy_test).
cat >"$T/host.toml" <<TOML
name = "host-network"
command = ["bash", "-c", "exec 1>&2; if exec 3<>/dev/tcp/127.0.0.1/$PORT_C; then echo f-host-reached; fi"]
count = 1
[sandbox]
network = "host"
TOML
JOB=$("$IDLEPOOL" submit "$T/host.toml")
"$IDLEPOOL" wait "$JOB" --quiet >/dev/null || fail "host-network job failed: $(log_of "$JOB")"
log_of "$JOB" | grep -q f-host-reached || fail "(f) host network: $(log_of "$JOB")"
pass "(f) with network = \"host\" the task reached the coordinator's port"

# Timeouts reach the whole sandboxed tree: SIGTERM to every process, then SIGKILL.
cat >"$T/slow.toml" <<'TOML'
name = "slow"
command = ["sh", "-c", "trap '' TERM; (setsid sleep 600 &); sleep 600"]
count = 1
[retry]
max_attempts = 1
timeout_s = 1
TOML
JOB=$("$IDLEPOOL" submit "$T/slow.toml")
rc=0; "$IDLEPOOL" wait "$JOB" --quiet >/dev/null 2>&1 || rc=$?
[ "$rc" != 0 ] || fail "a task past its timeout succeeded"
[ "$(sql "SELECT outcome FROM attempts WHERE job_id=$JOB")" = timed_out ] ||
  fail "timeout: $(sql "SELECT outcome, message FROM attempts WHERE job_id=$JOB")"
pgrep -f "sleep 600" >/dev/null && fail "a process of the timed-out task survived"
pass "a sandboxed task past its timeout_s timed out, and nothing of it survived"

# (h) GPU device nodes: each gpus = 1 task sees its own /dev/nvidiaN and the shared nodes only.
cat >"$T/gpu.toml" <<TOML
name = "gpu-nodes"
command = ["sh", "-c", "exec 1>&2; echo nodes:\$(ls /dev | grep nvidia | tr '\\\\n' ' ') gpus:\$IDLEPOOL_GPUS; cat /dev/nvidia\$IDLEPOOL_GPUS"]
count = 2
[resources]
gpus = 1
TOML
JOB=$("$IDLEPOOL" submit "$T/gpu.toml")
"$IDLEPOOL" wait "$JOB" --quiet >/dev/null || fail "gpu job failed: $("$IDLEPOOL" failures "$JOB")"
for i in 0 1; do
  out=$("$IDLEPOOL" logs "$JOB" $i)
  g=$(echo "$out" | sed -n 's/.*gpus:\([0-9]\).*/\1/p' | head -1)
  other=$((1 - g))
  nodes=$(echo "$out" | sed -n 's/.*nodes:\(.*\) gpus:.*/\1/p' | tr " " "\n" | LC_ALL=C sort | tr "\n" " ")
  [ "$nodes" = "nvidia-uvm nvidia$g nvidiactl " ] || fail "task $i sees '$nodes': $out"
  echo "$out" | grep -q "stand-in nvidia$g" || fail "task $i could not open its node: $out"
  echo "$out" | grep -q "nvidia$other" && fail "task $i sees the other GPU's node: $out"
done
pass "(h) each GPU task sees only its own device node (and nvidiactl, nvidia-uvm)"

# (i) a worker whose probe fails refuses to start, naming what is missing: here user namespaces
# are off (user.max_user_namespaces = 0 in a user namespace of its own).
rc=0
unshare --user --map-root-user sh -c "echo 0 >/proc/sys/user/max_user_namespaces && exec \"$IDLEPOOL\" worker --name refused --work-dir \"$T/refused\" --join \"$ADDR\" --token-file \"$JOIN_TOKEN_FILE\" --sensors-dir \"$T/no-sensors\"" >"$T/refused.log" 2>&1 || rc=$?
[ "$rc" = 2 ] || fail "(i) the worker without a sandbox exited $rc, want 2: $(cat "$T/refused.log")"
grep -q "does not work on this machine" "$T/refused.log" && grep -q "max_user_namespaces" "$T/refused.log" &&
  grep -q -- "--no-sandbox" "$T/refused.log" || fail "(i) message: $(cat "$T/refused.log")"
pass "(i) no sandbox: the worker refused to start and said why"

# The pool still works.
cat >"$T/ok.toml" <<'TOML'
name = "after"
command = ["sh", "-c", "echo {index} > out-{index}.txt"]
count = 6
outputs = ["out-*.txt"]
TOML
JOB=$("$IDLEPOOL" submit "$T/ok.toml")
"$IDLEPOOL" wait "$JOB" --quiet >/dev/null || fail "normal job failed"
assert_outputs_once "$JOB" 6
pass "a normal job completed, outputs once"

#!/usr/bin/env bash
# Network per job (issue 19 point 2): a job with `[sandbox] network = "host"` never runs on a
# worker whose owner policy says `[sandbox] allow_host_network = false`. While only that worker
# is there, the job waits and `status` (text and --json) says why; that survives a coordinator
# restart (the store keeps the job's need). A job without it runs there meanwhile. Once a worker
# that allows it (the default policy) joins, every task runs there, each output once. `workers`
# shows each worker's sandbox tier (SANDBOX column, `sandbox` in --json), as does
# `worker --print-resources`.
source "$(dirname "$0")/lib.sh"
cat >"$T/refuse.toml" <<'TOML'
[sandbox]
allow_host_network = false
TOML
cat >"$T/host.toml" <<'TOML'
name = "hostnet"
command = ["sh", "-c", "echo $IDLEPOOL_WORKER > out-{index}.txt"]
count = 4
outputs = ["out-*.txt"]
[sandbox]
network = "host"
TOML
cat >"$T/plain.toml" <<'TOML'
name = "plain"
command = ["sh", "-c", "echo $IDLEPOOL_WORKER > out-{index}.txt"]
count = 3
outputs = ["out-*.txt"]
TOML

# --print-resources names the tier this worker would report.
# The tier the sandbox probe finds: uid as root, userns otherwise; none only with --no-sandbox.
TIER=$SANDBOX_TIER
"$IDLEPOOL" worker --print-resources --gpus none --no-sandbox | grep -q '^sandbox *none$' ||
  fail "--print-resources --no-sandbox does not say none"
"$IDLEPOOL" worker --print-resources --gpus none >"$T/resources.txt"
grep -q "^sandbox *$TIER$" "$T/resources.txt" || fail "--print-resources: $(cat "$T/resources.txt")"
[ "$("$IDLEPOOL" worker --print-resources --gpus none --json | jq -r .sandbox)" = "$TIER" ] ||
  fail "--print-resources --json has no sandbox"
pass "worker --print-resources shows the sandbox tier"

start_coordinator
start_worker refuser --slots 2 --config "$T/refuse.toml"
wait_until 20 is_connected refuser
worker_json() { "$IDLEPOOL" workers --json | jq -r --arg w "$1" ".workers[] | select(.worker==\$w) | .$2"; }
[ "$(worker_json refuser allow_host_network)" = false ] || fail "refuser allows the host network"
[ "$(worker_json refuser sandbox)" = "$TIER" ] || fail "refuser sandbox: $(worker_json refuser sandbox)"

HOST=$("$IDLEPOOL" submit "$T/host.toml")
PLAIN=$("$IDLEPOOL" submit "$T/plain.toml")
# The plain job runs on the refusing worker (it takes work); the host one does not.
wait_until 60 job_done "$PLAIN"
[ "$(job_field "$PLAIN" state)" = succeeded ] || fail "plain job: $("$IDLEPOOL" status "$PLAIN")"
assert_outputs_once "$PLAIN" 3
refused() { [ "$(job_field "$HOST" host_network_refused)" = 1 ]; }
wait_until 20 refused
want="needs host network; no worker allows it (1 refuses it in their policy)"
[ "$(job_field "$HOST" waiting)" = "$want" ] || fail "waiting: $(job_field "$HOST" waiting)"
[ "$(job_field "$HOST" host_network)" = true ] || fail "status --json host_network"
[ "$(job_field "$HOST" fits_no_worker)" = false ] || fail "fits_no_worker for a job that fits"
"$IDLEPOOL" status "$HOST" >"$T/status.txt" || true
grep -qF "waiting: $want" "$T/status.txt" || fail "status: $(cat "$T/status.txt")"
grep -q "network: host" "$T/status.txt" || fail "status shows no network: $(cat "$T/status.txt")"
[ "$(sql "SELECT count(*) FROM attempts WHERE job_id=$HOST")" = 0 ] ||
  fail "the host-network job ran on the refusing worker"
pass "only a refusing worker: the host-network job waits, status says why; a plain job ran there"

# A restart restores the job's need from the store: still not placed, still the same reason.
kill -9 "$COORD_PID"
wait "$COORD_PID" 2>/dev/null || true
start_coordinator
wait_until 30 is_connected refuser
wait_until 20 refused
[ "$(sql "SELECT host_network FROM job_sandbox WHERE job_id=$HOST")" = 1 ] || fail "job_sandbox row"
[ "$(sql "SELECT count(*) FROM job_sandbox WHERE job_id=$PLAIN")" = 0 ] || fail "plain job has a row"

start_worker allower --slots 2
wait_until 20 is_connected allower
[ "$(worker_json allower allow_host_network)" = true ] || fail "default policy refuses"
wait_until 60 job_done "$HOST"
[ "$(job_field "$HOST" state)" = succeeded ] || fail "host job: $("$IDLEPOOL" status "$HOST")"
assert_outputs_once "$HOST" 4
where=$(sql "SELECT DISTINCT worker FROM attempts WHERE job_id=$HOST")
[ "$where" = allower ] || fail "host-network attempts ran on: $where"
[ "$(job_field "$HOST" host_network_refused)" = 0 ] || fail "still refused after it ran"
[ "$(job_field "$HOST" waiting)" = null ] || fail "still waiting: $(job_field "$HOST" waiting)"
"$IDLEPOOL" fetch "$HOST" --out "$T/out" >/dev/null
for i in 0 1 2 3; do
  [ "$(cat "$T/out/out-$i.txt")" = allower ] || fail "task $i ran on $(cat "$T/out/out-$i.txt")"
done
pass "every attempt of the host-network job ran on the allowing worker, each output once"

# Both workers show their tier: SANDBOX column and `sandbox` in --json.
"$IDLEPOOL" workers >"$T/workers.txt"
head -1 "$T/workers.txt" | grep -q " SANDBOX " || fail "no SANDBOX column: $(head -1 "$T/workers.txt")"
for w in refuser allower; do
  [ "$(worker_json "$w" sandbox)" = "$TIER" ] || fail "$w sandbox: $(worker_json "$w" sandbox)"
  col=$(awk -v w="$w" 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == "SANDBOX") c = i }
                       $1 == w { print $c }' "$T/workers.txt")
  [ "$col" = "$TIER" ] || fail "$w SANDBOX column: '$col' in $(cat "$T/workers.txt")"
done
fds=$(ls "/proc/$COORD_PID/fd" | wc -l)
hwm=$(awk '/^VmHWM/ { print $2 " " $3 }' "/proc/$COORD_PID/status")
pass "workers shows the sandbox tier of each (coordinator: $fds fds, VmHWM $hwm)"

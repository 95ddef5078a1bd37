#!/usr/bin/env bash
# Peer-to-peer input transfer: three workers (one slot each) start three tasks of one job at
# once, all needing the same 24 MiB input. With peers on, they exchange its chunks: some bytes
# come from peers and the coordinator sends fewer than the three copies centralized fan-out
# would. With --no-peer every byte comes from the coordinator.
source "$(dirname "$0")/lib.sh"
SIZE=$((24 * 1024 * 1024))

# job_for NAME: a job of 3 tasks whose input is a fresh random file (never in any cache).
job_for() {
  mkdir -p "$T/$1"
  head -c "$SIZE" /dev/urandom >"$T/$1/big.bin"
  cat >"$T/$1/job.toml" <<TOML
name = "$1"
command = ["sh", "-c", "wc -c < big.bin > n-{index}.txt"]
count = 3
inputs = ["big.bin"]
outputs = ["n-*.txt"]
TOML
}
connected_count() { "$IDLEPOOL" workers --json | jq '[.workers[] | select(.state=="connected")] | length'; }
connected_at_least() { [ "$(connected_count)" -ge "$1" ]; }
transfer() { "$IDLEPOOL" status "$1" --json | jq -r ".transfer.$2"; }

start_coordinator
job_for swarm
for w in p1 p2 p3; do start_worker "$w" --slots 1; done
wait_until 30 connected_at_least 3
for w in p1 p2 p3; do grep -q "serving cached blobs to peers on 0.0.0.0:" "$T/$w.log" || fail "$w serves no peers"; done
"$IDLEPOOL" workers --json | jq -e '[.workers[] | select(.peer_address | test("^127\\.0\\.0\\.1:[0-9]+$"))] | length == 3' >/dev/null \
  || fail "peer addresses not resolved: $("$IDLEPOOL" workers --json)"
JOB=$("$IDLEPOOL" submit "$T/swarm/job.toml")
wait_until 120 job_done "$JOB"
[ "$(job_field "$JOB" state)" = succeeded ] || fail "swarm job: $("$IDLEPOOL" status "$JOB" --json)"
peer=$(transfer "$JOB" peer_bytes); coord=$(transfer "$JOB" coordinator_bytes)
echo "peers on: coordinator sent $coord bytes, peers $peer bytes (input $SIZE bytes, 3 workers)"
[ "$peer" -gt 0 ] || fail "no bytes came from peers"
[ "$coord" -lt $((3 * SIZE)) ] || fail "the coordinator sent $coord bytes, 3 copies or more"
[ $((coord + peer)) -eq $((3 * SIZE)) ] || fail "fetched $((coord + peer)) bytes, want $((3 * SIZE))"
"$IDLEPOOL" fetch "$JOB" --out "$T/out1" >/dev/null
for i in 0 1 2; do [ "$(tr -d ' ' <"$T/out1/n-$i.txt")" = "$SIZE" ] || fail "task $i saw a wrong input"; done

# Centralized: the same with --no-peer on fresh workers and a fresh input.
for w in p1 p2 p3; do pid_var="WPID_$w"; kill -TERM "${!pid_var}"; done
for w in p1 p2 p3; do pid_var="WPID_$w"; wait_until 30 dead "${!pid_var}"; done
job_for central
for w in c1 c2 c3; do start_worker "$w" --slots 1 --no-peer; done
wait_until 30 connected_at_least 3
JOB=$("$IDLEPOOL" submit "$T/central/job.toml")
wait_until 120 job_done "$JOB"
[ "$(job_field "$JOB" state)" = succeeded ] || fail "central job: $("$IDLEPOOL" status "$JOB" --json)"
peer=$(transfer "$JOB" peer_bytes); coord=$(transfer "$JOB" coordinator_bytes)
echo "peers off: coordinator sent $coord bytes, peers $peer bytes"
[ "$peer" -eq 0 ] || fail "--no-peer fetched $peer bytes from peers"
[ "$coord" -eq $((3 * SIZE)) ] || fail "--no-peer: the coordinator sent $coord bytes"
pass "peer-to-peer: the swarm shares chunks; --no-peer fetches everything from the coordinator"

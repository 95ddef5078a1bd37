#!/usr/bin/env bash
# The worker's blob cache: an input is fetched once and then staged from the cache (hits counted
# per job), the cache stays under --cache-size by evicting the least recently used blob, it
# survives a worker restart, and the coordinator places work on the worker that already holds a
# job's inputs.
source "$(dirname "$0")/lib.sh"
MiB=$((1024 * 1024))
head -c $((2 * MiB)) /dev/urandom >"$T/a.bin"
head -c $((2 * MiB)) /dev/urandom >"$T/b.bin"
job() {  # job NAME INPUT TASKS: a job whose tasks check their staged input
  cat >"$T/$1.toml" <<TOML
name = "$1"
command = ["sh", "-c", "test \$(stat -c %s $2) = $((2 * MiB)) && echo ok > out.txt"]
count = $3
inputs = ["$2"]
outputs = ["out.txt"]
TOML
  "$IDLEPOOL" submit "$T/$1.toml"
}
run() {  # run NAME INPUT TASKS: submits and waits; sets J
  J=$(job "$@")
  wait_until 60 job_done "$J"
  [ "$(job_field "$J" state)" = succeeded ] || fail "job $1: $("$IDLEPOOL" status "$J")"
}
tr_() { job_field "$1" "transfer.$2"; }
wfield() { "$IDLEPOOL" workers --json | jq -r --arg w "$1" ".workers[] | select(.worker==\$w) | .$2"; }
cache_files_bytes() { find "$T/$1/cache" -type f -size +1M -printf '%s\n' | awk '{s+=$1} END {print s+0}'; }

start_coordinator
start_worker bob --slots 1 --cache-size 3MiB --no-peer
wait_until 20 is_connected bob

run one a.bin 2   # two tasks, one after the other on bob's one slot
[ "$(tr_ "$J" cache_misses)" = 1 ] && [ "$(tr_ "$J" cache_hits)" = 1 ] ||
  fail "job one: want 1 miss then 1 hit: $("$IDLEPOOL" status "$J" --json | jq -c .transfer)"
[ "$(tr_ "$J" coordinator_bytes)" = $((2 * MiB)) ] || fail "a.bin fetched more than once"
[ "$(tr_ "$J" input_bytes)" = $((4 * MiB)) ] && [ "$(tr_ "$J" cached_bytes)" = $((2 * MiB)) ] ||
  fail "job one bytes: $("$IDLEPOOL" status "$J" --json | jq -c .transfer)"
pass "fetched once, then a cache hit"

run two b.bin 1   # 2 + 2 MiB > 3 MiB: a.bin (least recently used) goes
[ "$(wfield bob cache_blobs)" = 1 ] && [ "$(wfield bob cache_bytes)" = $((2 * MiB)) ] ||
  fail "cache not under its cap: $("$IDLEPOOL" workers --json | jq -c '.workers[]')"
[ "$(cache_files_bytes bob)" -le $((3 * MiB)) ] || fail "cache dir holds $(cache_files_bytes bob) bytes"
pass "LRU eviction keeps the cache under --cache-size"

kill "$WPID_bob"; wait "$WPID_bob" 2>/dev/null || true
start_worker bob --slots 1 --cache-size 3MiB --no-peer
wait_until 20 is_connected bob
[ "$(wfield bob cache_blobs)" = 1 ] || fail "the coordinator does not know bob's cache after its restart"
run three b.bin 1
[ "$(tr_ "$J" cache_hits)" = 1 ] && [ "$(tr_ "$J" coordinator_bytes)" = 0 ] ||
  fail "cache lost in the restart: $("$IDLEPOOL" status "$J" --json | jq -c .transfer)"
run four a.bin 1
[ "$(tr_ "$J" cache_misses)" = 1 ] || fail "a.bin should have been evicted"
pass "the cache survives a worker restart"

# Locality against the policy's own order: bob has a learned speed, ann none, and each holds a
# different input. Each input's job goes to the worker that holds it.
kill "$WPID_bob"; wait "$WPID_bob" 2>/dev/null || true
start_worker ann --slots 1 --no-peer
wait_until 20 is_connected ann
run five b.bin 1   # only ann is up: ann fetches b.bin
start_worker bob --slots 1 --cache-size 3MiB --no-peer
wait_until 20 is_connected bob
run six b.bin 1
[ "$(sql "SELECT worker FROM attempts WHERE job_id=$J")" = ann ] || fail "job six (b.bin, held by ann) ran on bob"
[ "$(tr_ "$J" cache_hits)" = 1 ] || fail "job six was not a cache hit"
run seven a.bin 1
[ "$(sql "SELECT worker FROM attempts WHERE job_id=$J")" = bob ] || fail "job seven (a.bin, held by bob) ran on ann"
[ "$(tr_ "$J" cache_hits)" = 1 ] || fail "job seven was not a cache hit"
pass "placement prefers the worker that holds the inputs"

# attack_stall: a worker with a real credential (tests/tools/rogue_worker.cc, "rogue-stall",
# joined with the pool's join token) offers 4 slots, heartbeats as told and ignores every
# assignment: it never runs, reports or checkpoints anything. Meanwhile a job of 40 tasks of
# 0.5 s ("stall-victim") runs on the pool. The coordinator must move the rogue's attempts once
# they are quiet for max(10 s, 10 x the job's median attempt) (core/stall.h: they end lost,
# "stalled: ...", never a failure) and give the rogue no more work; the job completes with every
# output once. Writes the job id to $T/stall.job and the rogue's line ("stall: assigned N killed
# M ...") to $T/rogue-stall.out. Bounded: returns after at most ~60 s.
attack_stall() {
  local rogue job
  rogue=$(dirname "$IDLEPOOL")/idlepool-rogue-worker
  "$rogue" --coordinator "$ADDR" --token-file "$JOIN_TOKEN_FILE" --name rogue-stall \
    --dir "$T/rogue-stall" --mode stall --cpus 4 --seconds 58 >"$T/rogue-stall.out" 2>&1 &
  local pid=$!
  until "$IDLEPOOL" workers --json | jq -e '.workers[] | select(.worker=="rogue-stall" and .state=="connected")' >/dev/null 2>&1; do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.05
  done
  cat >"$T/stall-victim.toml" <<'TOML'
name = "stall-victim"
count = 40
command = ["sh", "-c", "sleep 0.5; echo {index} > out-{index}.txt"]
outputs = ["out-*.txt"]
TOML
  job=$("$IDLEPOOL" submit "$T/stall-victim.toml" 2>/dev/null) || true
  echo "$job" >"$T/stall.job"
  [ -z "$job" ] || timeout 55 "$IDLEPOOL" wait "$job" --quiet >/dev/null 2>&1 || true
  kill "$pid" 2>/dev/null || true  # SIGTERM: it prints its line and exits
  wait "$pid" 2>/dev/null || true
}

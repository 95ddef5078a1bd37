# attack_report_flood: two workers with real credentials (tests/tools/rogue_worker.cc, joined with
# the pool's join token) flood their sessions with bogus AttemptReports (unknown attempts, a 4 KiB
# log tail each, a heartbeat every 64 so their leases hold) for up to 15 s: "rogue-flood" never
# reads the answers (the coordinator must cut it once kMaxOutboxMessages answers wait, instead of
# buffering them), "rogue-flood-read" reads them (its session may have at most
# kMaxSessionEventsInCore events in the core's queue: flow control holds it back). Each prints
# one line to $T/<name>.out ("cut by coordinator 1": the coordinator ended the session).
# Bounded: returns after at most ~20 s.
attack_report_flood() {
  local rogue
  rogue=$(dirname "$IDLEPOOL")/idlepool-rogue-worker
  "$rogue" --coordinator "$ADDR" --token-file "$JOIN_TOKEN_FILE" --name rogue-flood-read \
    --dir "$T/rogue-flood-read" --mode report-flood --read --seconds 15 >"$T/rogue-flood-read.out" 2>&1 &
  local reading=$!
  "$rogue" --coordinator "$ADDR" --token-file "$JOIN_TOKEN_FILE" --name rogue-flood \
    --dir "$T/rogue-flood" --mode report-flood --seconds 15 >"$T/rogue-flood.out" 2>&1 || true
  wait "$reading" || true
}

#!/usr/bin/env bash
# The pool measures its workers (issue 6): each worker's link to the coordinator (round trip and
# throughput both ways), its CPU calibration, and its availability; all of it is shown by
# `idlepool workers --json` and kept in the store across a coordinator restart.
#  1. one worker connects directly, one through the fault proxy (25 ms each way, 4 Mbit/s shared
#     by both directions' buckets): the proxied round trip is at least 50 ms, its rates at most
#     the cap (plus 15% for the bucket's burst) and above zero, the direct worker's rates above
#     the proxied one's; both have a CPU score;
#  2. a worker that leaves and comes back has one ended down period (and one ended up period);
#  3. after the workers stop and the coordinator restarts, both are still listed (disconnected)
#     with the same link measurements and their availability counts.
source "$(dirname "$0")/lib.sh"
need_proxy

# A bad interval is refused before anything starts.
rc=0
"$IDLEPOOL" worker --work-dir "$T/bad" --probe-interval 10parsecs >"$T/bad.log" 2>&1 || rc=$?
[ "$rc" = 2 ] && grep -q -- "--probe-interval" "$T/bad.log" || fail "--probe-interval 10parsecs: exit $rc, want 2: $(cat "$T/bad.log")"

start_coordinator
start_proxy slow --delay-ms 25 --rate 4Mbit
start_worker direct --slots 1
start_worker slow --slots 1 --coordinator "$PADDR_slow"

wj() { "$IDLEPOOL" workers --json | jq -r --arg w "$1" ".workers[] | select(.worker==\$w) | $2"; }
has_link() { [ "$(wj "$1" '.link != null')" = true ]; }
wait_until 90 has_link direct
wait_until 90 has_link slow
"$IDLEPOOL" workers --json >"$T/first.json"
"$IDLEPOOL" workers >"$T/table.txt"
cat "$T/table.txt"
f() { jq -r --arg w "$1" ".workers[] | select(.worker==\$w) | $2" "$T/first.json"; }
# ge A B / le A B / gt A B: numeric comparisons of JSON numbers (awk: no python on CI).
ge() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a + 0 >= b + 0) }'; }
gt() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a + 0 > b + 0) }'; }
cap=$((4000000 / 8 * 115 / 100))  # 4 Mbit/s in bytes/s, plus 15%
for k in down_bytes_per_s up_bytes_per_s; do
  v=$(f slow ".link.$k")
  gt "$v" 0 || fail "proxied worker: $k is $v"
  ge "$cap" "$v" || fail "proxied worker: $k $v is above the proxy's cap ($cap)"
  gt "$(f direct ".link.$k")" "$v" || fail "direct worker's $k $(f direct ".link.$k") is not above the proxied $v"
done
ge "$(f slow .link.rtt_ms)" 50 || fail "proxied worker: round trip $(f slow .link.rtt_ms) ms < 50 ms"
gt "$(f slow .link.rtt_ms)" "$(f direct .link.rtt_ms)" || fail "direct round trip not below the proxied one"
for w in direct slow; do
  gt "$(f $w .cpu_score)" 0 || fail "$w: cpu_score $(f $w .cpu_score)"
  gt "$(f $w .cores)" 0 || fail "$w: cores $(f $w .cores)"
  gt "$(f $w .link.probe_bytes)" 0 || fail "$w: probe_bytes $(f $w .link.probe_bytes)"
done
grep -q "↓" "$T/table.txt" || fail "the table shows no link"
pass "links: slow $(f slow .link.rtt_ms) ms, $(f slow .link.down_bytes_per_s)/$(f slow .link.up_bytes_per_s) B/s; direct $(f direct .link.rtt_ms) ms, $(f direct .link.down_bytes_per_s)/$(f direct .link.up_bytes_per_s) B/s"

# --- 2. a down period --------------------------------------------------------------------------
[ "$(wj direct .availability.down_periods)" = 0 ] || fail "a down period before any went down"
kill "$WPID_direct"; wait "$WPID_direct" 2>/dev/null || true
not_connected() { [ "$(worker_state "$1")" != connected ]; }
wait_until 30 not_connected direct
is_down() { [ "$(wj "$1" .availability.up)" = false ]; }
wait_until 10 is_down direct
start_worker direct --slots 1
wait_until 30 is_connected direct
ended_down() { [ "$(wj "$1" .availability.down_periods)" -ge 1 ]; }
wait_until 10 ended_down direct
[ "$(wj direct .availability.up_periods)" -ge 1 ] || fail "the first up period did not end"
frac=$(wj direct .availability.up_fraction)
gt "$frac" 0 && gt 1 "$frac" || fail "direct: up_fraction $frac after a down period"
[ "$(wj slow .availability.down_periods)" = 0 ] || fail "slow never went down"
pass "direct left and came back: $(wj direct .availability.down_periods) down period(s), up fraction $frac"

# --- 3. the store keeps it across a coordinator restart -----------------------------------------
wait_until 60 has_link direct
"$IDLEPOOL" workers --json >"$T/before.json"
kill "$WPID_direct" "$WPID_slow"
wait "$WPID_direct" 2>/dev/null || true
wait "$WPID_slow" 2>/dev/null || true
kill "$COORD_PID"; wait "$COORD_PID" 2>/dev/null || true
[ "$(sql "SELECT count(*) FROM workers WHERE rtt_us > 0")" = 2 ] || fail "store: $(sql 'SELECT * FROM workers')"
start_coordinator
"$IDLEPOOL" workers --json >"$T/after.json"
for w in direct slow; do
  b() { jq -c --arg w "$w" ".workers[] | select(.worker==\$w) | $1" "$T/before.json"; }
  a() { jq -c --arg w "$w" ".workers[] | select(.worker==\$w) | $1" "$T/after.json"; }
  [ "$(a .state)" = '"disconnected"' ] || fail "$w after restart: state $(a .state)"
  [ "$(a '.link | del(.measured_ms_ago)')" = "$(b '.link | del(.measured_ms_ago)')" ] ||
    fail "$w: link $(a .link) after restart, $(b .link) before"
  [ "$(a .cpu_score)" = "$(b .cpu_score)" ] || fail "$w: cpu_score $(a .cpu_score) != $(b .cpu_score)"
  [ "$(a .availability.down_periods)" = "$(b .availability.down_periods)" ] ||
    fail "$w: down periods $(a .availability.down_periods) != $(b .availability.down_periods)"
done
pass "after a coordinator restart both workers are listed with their measurements"

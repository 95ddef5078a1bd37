#!/usr/bin/env bash
# A pool opened to the LAN: a coordinator whose gRPC port, dashboard and gateway listen on every
# address (0.0.0.0) never prints a wildcard as an address to use. Its banner's commands, the
# dashboard and gateway URLs and `idlepool services` name the host it advertises (--advertise),
# which its certificate covers: a client reaching that name gets the dashboard over verified TLS.
source "$(dirname "$0")/lib.sh"
"$IDLEPOOL" coordinator --listen 0.0.0.0:0 --http 0.0.0.0:0 --serve-listen 0.0.0.0:0 \
  --advertise pool.test --data-dir "$T/coord" >"$T/coordinator.log" 2>&1 &
PIDS+=($!)
wait_until 30 grep -q "serving gateway" "$T/coordinator.log"
wait_until 30 grep -q "gateway at https://" "$T/coordinator.log"
PORT=$(sed -n 's/.*coordinator listening on 0.0.0.0:\([0-9]*\).*/\1/p' "$T/coordinator.log" | head -1)
[ -n "$PORT" ] || fail "no listening line: $(cat "$T/coordinator.log")"

! grep -qE "https://(0\.0\.0\.0|\[::\])|(--join|login) (0\.0\.0\.0|\[::\])" "$T/coordinator.log" ||
  fail "a wildcard printed as an address to use: $(grep -E "0\.0\.0\.0|\[::\]" "$T/coordinator.log")"
grep -q -- "--join pool.test:$PORT " "$T/coordinator.log" || fail "join command: $(cat "$T/coordinator.log")"
grep -q "idlepool login pool.test:$PORT$" "$T/coordinator.log" || fail "login command: $(cat "$T/coordinator.log")"
grep -q "reachable as: pool.test, 127.0.0.1, ::1" "$T/coordinator.log" ||
  fail "the names it advertises: $(cat "$T/coordinator.log")"
WEB=$(sed -n 's|^  https://\(pool.test:[0-9]*\)/$|\1|p' "$T/coordinator.log" | head -1)
[ -n "$WEB" ] || fail "no dashboard URL naming pool.test: $(cat "$T/coordinator.log")"
GW=$(sed -n 's|.*gateway at https://\(pool.test:[0-9]*\)/.*|\1|p' "$T/coordinator.log" | head -1)
[ -n "$GW" ] || fail "no gateway URL naming pool.test: $(grep gateway "$T/coordinator.log")"
pass "banner: no wildcard URL; commands and URLs name pool.test"

# The dashboard URL works as printed once the name resolves (here: to loopback), over TLS
# verified against the pool CA: the certificate covers the advertised name.
code=$(curl -s -o /dev/null -w '%{http_code}' --cacert "$T/coord/ca.pem" \
  --resolve "$WEB:127.0.0.1" "https://$WEB/") || fail "curl https://$WEB/ failed (TLS?)"
# Without a session the dashboard answers with its login form (401): TLS got that far.
[ "$code" = 401 ] || [ "$code" = 200 ] || fail "https://$WEB/ answered $code"
code=$(curl -s -o /dev/null -w '%{http_code}' --cacert "$T/coord/ca.pem" \
  --resolve "$GW:127.0.0.1" "https://$GW/v1/models") || fail "curl https://$GW/v1/models failed (TLS?)"
[ "$code" = 401 ] || fail "https://$GW/v1/models without a key answered $code, want 401"
pass "the printed URLs verify against the pool CA under the advertised name"

# `idlepool services` names the gateway by the advertised host too.
export IDLEPOOL_COORDINATOR=127.0.0.1:$PORT
IDLEPOOL_TOKEN=$("$IDLEPOOL" token create --role submit --data-dir "$T/coord" 2>/dev/null)
export IDLEPOOL_TOKEN
"$IDLEPOOL" services >"$T/services.txt" || fail "services failed"
grep -q "^gateway: https://$GW$" "$T/services.txt" || fail "services: $(cat "$T/services.txt")"
"$IDLEPOOL" services --json | jq -e --arg g "https://$GW" '.gateway == $g' >/dev/null ||
  fail "services --json: $("$IDLEPOOL" services --json)"
pass "idlepool services names the gateway by the advertised host"

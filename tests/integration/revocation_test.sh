#!/usr/bin/env bash
# The workers' own ports refuse what the pool revoked, with real processes on 127.0.0.1 and
# tests/tools/cert_probe.cc presenting certificates (the role check is peer_role_test's):
#   1. a worker's certificate reads another worker's peer port; once the worker is revoked
#      (`idlepool workers revoke`), the same certificate is refused there (the coordinator tells
#      every worker), and still after that worker's session restarts;
#   2. the gateway certificate Jobs.WatchGateway issues for an access token ends no later than
#      the token, opens a worker's tunnel port while the token lives, and is refused there once
#      the token is revoked (it used to live its 30 days).
source "$(dirname "$0")/lib.sh"
PROBE=$(dirname "$IDLEPOOL")/idlepool-cert-probe
[ -x "$PROBE" ] || { echo "SKIP: no $PROBE"; exit 77; }
command -v openssl >/dev/null || { echo "SKIP: no openssl"; exit 77; }

start_coordinator --serve-listen 127.0.0.1:0
CA=$T/coord/ca.pem
start_worker w1 --slots 1
start_worker w2 --slots 1
wait_until 20 is_connected w1
wait_until 20 is_connected w2
peer_of() { "$IDLEPOOL" workers --json | jq -r --arg w "$1" '.workers[] | select(.worker==$w) | .peer_address'; }
P2=$(peer_of w2)
[ -n "$P2" ] && [ "$P2" != null ] || fail "w2 lists no peer address"
P2=127.0.0.1:${P2##*:}
# peer_says CERT KEY: what w2's peer port answers a caller with that certificate.
peer_says() { "$PROBE" peer --peer "$P2" --cert "$1" --key "$2" --ca "$CA"; }
peer_is() { peer_says "$1" "$2" | grep -q "^peer: $3"; }
W1=$T/w1/identity

# 1. A revoked worker's certificate.
out=$(peer_says "$W1/cert.pem" "$W1/key.pem")
echo "w1 before revocation: $out"
case "$out" in "peer: OK"* | "peer: NOT_FOUND"*) ;; *) fail "w1 cannot read w2's peer port: $out" ;; esac
cp "$W1/cert.pem" "$W1/key.pem" "$T/"  # what a thief of w1's identity holds
"$IDLEPOOL" workers revoke w1 --data-dir "$T/coord" >/dev/null || fail "revoke failed"
wait_until 20 peer_is "$T/cert.pem" "$T/key.pem" PERMISSION_DENIED
echo "w1 after revocation: $(peer_says "$T/cert.pem" "$T/key.pem")"
kill "$WPID_w2"
wait "$WPID_w2" 2>/dev/null || true
start_worker w2 --slots 1
wait_until 20 is_connected w2
P2=$(peer_of w2)
P2=127.0.0.1:${P2##*:}
wait_until 20 peer_is "$T/cert.pem" "$T/key.pem" PERMISSION_DENIED
pass "(1) a revoked worker's certificate is refused by another worker's peer port, also after that worker restarts"

# 2. A gateway certificate bound to its token.
"$IDLEPOOL" token create --role submit --ttl 2h --data-dir "$T/coord" >"$T/gw.token"
GW_ID=$(sed -n 's/^ipt1_[0-9a-f]*_\([0-9a-f]*\)\..*/\1/p' "$T/gw.token")
[ -n "$GW_ID" ] || fail "no id in the token"
mkdir -p "$T/gw"
"$PROBE" gateway-cert --coordinator "$ADDR" --token-file "$T/gw.token" --ca "$CA" --name edge \
  --out "$T/gw" | grep -q "^gateway-cert:" || fail "no gateway certificate for the token"
end=$(date -d "$(openssl x509 -in "$T/gw/gateway.pem" -noout -enddate | cut -d= -f2)" +%s)
[ "$end" -le $(($(date +%s) + 7200 + 60)) ] || fail "the gateway certificate ends $end, after its token (2 h)"
openssl x509 -in "$T/gw/gateway.pem" -noout -ext subjectAltName | grep -q "urn:idlepool:token:$GW_ID" ||
  fail "the gateway certificate does not name its token: $(openssl x509 -in "$T/gw/gateway.pem" -noout -text | head -40)"
TUN=$(sed -n 's/.*tunnel: accepting on [^ ]*:\([0-9]*\).*/\1/p' "$T/w2.log" | tail -1)
[ -n "$TUN" ] || fail "no tunnel port in w2's log"
tunnel_says() { "$PROBE" tunnel --tunnel "127.0.0.1:$TUN" --worker w2 --attempt 999999 --cert "$T/gw/gateway.pem" --key "$T/gw/gateway.key" --ca "$CA"; }
tunnel_refused() { tunnel_says | grep -q "^tunnel: closed"; }
out=$(tunnel_says)
echo "the token's gateway certificate at w2's tunnel: $out"
case "$out" in "tunnel: HTTP/1.1 404"*) ;; *) fail "w2's tunnel port refused a live gateway certificate: $out" ;; esac
"$IDLEPOOL" token revoke "$GW_ID" --data-dir "$T/coord" >/dev/null || fail "token revoke failed"
wait_until 20 tunnel_refused
echo "after the token's revocation: $(tunnel_says)"
pass "(2) a gateway certificate ends with its token and is refused by the tunnel once the token is revoked"

#!/usr/bin/env bash
# A worker's peer port reads the caller's role from its certificate, never from the subject's
# text (issue 31, point 4), with real processes on 127.0.0.1 and tests/tools/cert_probe.cc
# presenting certificates. Certificates of the pool CA whose subject has "OU=worker" in its text
# but not as its one OU are refused: OU "workers" and OU "gateway" with CN "OU=worker" (crafted
# with openssl and the CA key), and a real gateway certificate named "OU=worker" issued by
# Jobs.WatchGateway to an access token's holder. The old port searched the subject's text for
# "OU=worker" and served all three. A worker's own certificate and a crafted one of OU "worker"
# are served (the control).
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
P2=$("$IDLEPOOL" workers --json | jq -r '.workers[] | select(.worker=="w2") | .peer_address')
[ -n "$P2" ] && [ "$P2" != null ] || fail "w2 lists no peer address"
P2=127.0.0.1:${P2##*:}
peer_says() { "$PROBE" peer --peer "$P2" --cert "$1" --key "$2" --ca "$CA"; }
served() { case "$1" in "peer: OK"* | "peer: NOT_FOUND"*) return 0 ;; esac; return 1; }

out=$(peer_says "$T/w1/identity/cert.pem" "$T/w1/identity/key.pem")
echo "w1's own certificate: $out"
served "$out" || fail "w1 cannot read w2's peer port: $out"

craft() {  # craft NAME SUBJECT: a client certificate of the pool CA, as $T/NAME.pem/.key
  openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "$2" \
    -keyout "$T/$1.key" -out "$T/$1.csr" >/dev/null 2>&1
  printf 'basicConstraints=critical,CA:FALSE\nkeyUsage=critical,digitalSignature\nextendedKeyUsage=clientAuth,serverAuth\n' >"$T/$1.ext"
  openssl x509 -req -in "$T/$1.csr" -CA "$CA" -CAkey "$T/coord/ca.key" \
    -set_serial "0x$(openssl rand -hex 8)" -days 1 -extfile "$T/$1.ext" -out "$T/$1.pem" \
    >/dev/null 2>&1 || fail "openssl could not sign $1"
}
craft honest "/OU=worker/CN=w9"
craft plural "/OU=workers/CN=w9"
craft gwname "/OU=gateway/CN=OU=worker"
out=$(peer_says "$T/honest.pem" "$T/honest.key")
served "$out" || fail "a crafted certificate of OU worker was refused: $out"
for c in plural gwname; do
  out=$(peer_says "$T/$c.pem" "$T/$c.key")
  echo "$c ($(openssl x509 -in "$T/$c.pem" -noout -subject)): $out"
  case "$out" in "peer: PERMISSION_DENIED"*) ;; *) fail "the peer port let $c in: $out" ;; esac
done
mkdir -p "$T/gw"
"$PROBE" gateway-cert --coordinator "$ADDR" --token-file "$T/coord/test-submit.token" --ca "$CA" \
  --name "OU=worker" --out "$T/gw" | grep -q "^gateway-cert: $T/gw" || fail "no gateway certificate"
out=$(peer_says "$T/gw/gateway.pem" "$T/gw/gateway.key")
echo "a real gateway certificate named OU=worker ($(openssl x509 -in "$T/gw/gateway.pem" -noout -subject)): $out"
case "$out" in "peer: PERMISSION_DENIED"*) ;; *) fail "the peer port let a gateway in: $out" ;; esac
pass "OU \"workers\" and gateway certificates named \"OU=worker\" (crafted and real) are refused by the peer port; OU \"worker\" is served"

#!/usr/bin/env bash
# A worker renews its own certificate (issue 16): with --worker-cert-ttl 30s it is due at two
# thirds of the certificate's life; the session ends, Join.RenewCertificate (over the worker's
# own mTLS) gives it a new key's certificate, it reconnects under the same name, and once the
# first certificate has expired it still takes and finishes work. The token is not used again.
source "$(dirname "$0")/lib.sh"
cat >"$T/job.toml" <<'TOML'
name = "after-renewal"
count = 4
command = ["sh", "-c", "echo {index} > out-{index}.txt"]
outputs = ["out-*.txt"]
TOML
start_coordinator --worker-cert-ttl 30s
start_worker w1 --slots 2
wait_until 20 is_connected w1
ID=$T/w1/identity
cp "$ID/cert.pem" "$T/first.pem"
cp "$ID/key.pem" "$T/first.key"
serial() { openssl x509 -noout -serial -in "$1"; }
not_after() { date -d "$(openssl x509 -noout -enddate -in "$1" | cut -d= -f2)" +%s; }
# The join token is gone: were the renewal to go through the token, it would fail.
rm "$JOIN_TOKEN_FILE"

renewed() { grep -q "renewed this worker's certificate" "$T/w1.log"; }
wait_until 60 renewed
[ "$(serial "$ID/cert.pem")" != "$(serial "$T/first.pem")" ] || fail "the certificate is the same"
cmp -s "$ID/key.pem" "$T/first.key" && fail "the renewed certificate kept the old key"
[ "$(not_after "$ID/cert.pem")" -gt "$(not_after "$T/first.pem")" ] ||
  fail "the new certificate does not outlive the first"
openssl verify -CAfile "$ID/ca.pem" "$ID/cert.pem" >/dev/null || fail "the new one is not the pool's"
[ "$(stat -c %a "$ID/key.pem")" = 600 ] || fail "key.pem is $(stat -c %a "$ID/key.pem")"
wait_until 20 is_connected w1
pass "renewed at two thirds of its life: new key, new serial, later expiry; reconnected as w1"

expired() { ! openssl x509 -checkend 0 -noout -in "$T/first.pem" >/dev/null; }
wait_until 60 expired
# A coordinator restart makes every worker handshake again: w1 must present the renewed one.
kill "$COORD_PID"
wait_until 20 dead "$COORD_PID"
start_coordinator --worker-cert-ttl 30s
wait_until 30 is_connected w1
JOB=$("$IDLEPOOL" submit "$T/job.toml")
"$IDLEPOOL" wait "$JOB" --quiet >/dev/null || fail "the job after the first certificate expired failed"
assert_outputs_once "$JOB" 4
[ "$("$IDLEPOOL" workers --json | jq '[.workers[] | select(.worker=="w1")] | length')" = 1 ] ||
  fail "w1 shows more than once"
pass "after the first certificate expired and a coordinator restart, w1 (renewed) ran a 4-task job, outputs once"

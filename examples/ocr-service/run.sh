#!/usr/bin/env bash
# The OCR service end to end on this machine: a coordinator serving the gateway
# (--serve-listen), WORKERS workers (default 2), the service of service.toml (2 replicas of
# ocr_server.py, the model shipped as an input), then client.sh sending the 20 pages of
# examples/ocr through the gateway over HTTPS (the pool's CA, an access token) and checking the
# text. The service is cancelled at the end. See README.md.
#
#   examples/ocr-service/run.sh
#
# Run end to end on 2026-12-02: 20 pages, 100.00 % (README.md, "What was checked").
# Environment: WORKERS, SERVE_LISTEN (default 127.0.0.1:7880), BUILD (default ./build),
# PAGES (send only the first N pages).
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
BIN=${BUILD:-$ROOT/build}/idlepool
OUT=$ROOT/out/ocr-service
WORKERS=${WORKERS:-2}
SERVE=${SERVE_LISTEN:-127.0.0.1:7880}
die() { echo "ocr-service: $*" >&2; exit 1; }
say() { printf '\n\033[1m== %s\033[0m\n' "$*"; }
if [ ! -x "$BIN" ]; then
  scripts/bootstrap.sh
  scripts/build.sh
fi
rm -rf "$OUT"
mkdir -p "$OUT/logs"
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; }
trap cleanup EXIT
# wait_for SECONDS WHAT COMMAND...: polls COMMAND every 0.2 s; dies after SECONDS.
wait_for() {
  local limit=$1 what=$2 end; shift 2
  end=$(($(date +%s) + limit))
  until "$@" >/dev/null 2>&1; do
    [ "$(date +%s)" -lt "$end" ] || die "timed out after ${limit}s waiting for $what"
    sleep 0.2
  done
}

say "starting a coordinator (gateway on $SERVE) and $WORKERS workers"
"$BIN" coordinator --listen 127.0.0.1:0 --serve-listen "$SERVE" --data-dir "$OUT/coordinator" \
  >"$OUT/logs/coordinator.log" 2>&1 &
pids+=($!)
started() { grep -q "listening on" "$OUT/logs/coordinator.log"; }
alive() { kill -0 "${pids[0]}" 2>/dev/null; }
for _ in $(seq 100); do started && break; alive || break; sleep 0.1; done
if ! started; then
  cat "$OUT/logs/coordinator.log" >&2
  grep -q -- "--serve-listen" "$OUT/logs/coordinator.log" &&
    die "this coordinator has no --serve-listen yet: the gateway is not in this build"
  die "the coordinator did not start"
fi
ADDR=$(sed -n 's/.*listening on \([0-9.]*:[0-9]*\).*/\1/p' "$OUT/logs/coordinator.log" | head -1)
CA=$OUT/coordinator/ca.pem
export IDLEPOOL_COORDINATOR=$ADDR XDG_CONFIG_HOME=$OUT/config
unset IDLEPOOL_TOKEN IDLEPOOL_JOIN_TOKEN
# Tokens in files only this user reads: the workers' join token, and an access token that both
# `idlepool` (login) and the OCR client (as its bearer key) use.
(umask 077
  "$BIN" token create --role worker --data-dir "$OUT/coordinator" >"$OUT/join.token"
  "$BIN" token create --role submit --name ocr-service --data-dir "$OUT/coordinator" \
    >"$OUT/access.token")
"$BIN" login "$ADDR" --token-file "$OUT/access.token"
for w in $(seq "$WORKERS"); do
  "$BIN" worker --name "worker-$w" --slots 2 --dedicated --join "$ADDR" \
    --token-file "$OUT/join.token" --work-dir "$OUT/worker-$w" >"$OUT/logs/worker-$w.log" 2>&1 &
  pids+=($!)
done
ready='[.workers[] | select(.state=="connected" and .owner_state=="run")] | length'
all_ready() { [ "$("$BIN" workers --json | jq "$ready")" = "$WORKERS" ]; }
wait_for 30 "$WORKERS workers" all_ready

say "submitting the service (examples/ocr-service/service.toml)"
JOB=$("$BIN" submit examples/ocr-service/service.toml)
AUTH=$OUT/auth.header
(umask 077; printf 'Authorization: Bearer %s\n' "$(cat "$OUT/access.token")" >"$AUTH")
# Ready when the gateway reaches a replica's /health (each loads the model first: 503 until then).
healthy() {
  curl -fsS --max-time 5 --cacert "$CA" -H "@$AUTH" "https://$SERVE/services/ocr/health"
}
wait_for 120 "a ready replica behind https://$SERVE/services/ocr" healthy
"$BIN" services 2>/dev/null || "$BIN" status "$JOB"

say "sending the pages through the gateway (client.sh)"
OUT=$OUT/client examples/ocr-service/client.sh "https://$SERVE/services/ocr" "$OUT/access.token" \
  "$CA"
"$BIN" cancel "$JOB" >/dev/null
echo "logs: $OUT/logs/; the texts: $OUT/client/text/"

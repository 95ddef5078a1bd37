# Issue 21, point 2: four TLS connections each sending 10 MB of header lines to the dashboard,
# then 300 connections that never send a byte (the server keeps at most 128), without any
# credential; while they are open, an authorized API call must still be answered.
attack_http_headers() {
  {
    printf 'GET /api/v1/workers HTTP/1.1\r\nHost: 127.0.0.1:%s\r\n' "$HPORT"
    awk 'BEGIN { for (i = 0; i < 160000; i++) printf "X-Pad-%d: %049d\r\n", i, 0 }'
    printf '\r\n'
  } >"$T/flood.txt"
  local i pids=() idle=() fd
  for i in 1 2 3 4; do
    timeout 60 openssl s_client -quiet -verify_quiet -CAfile "$CA" -connect "127.0.0.1:$HPORT" \
      <"$T/flood.txt" >/dev/null 2>&1 &
    pids+=($!)
  done
  for i in "${pids[@]}"; do wait "$i" || true; done
  for i in $(seq 1 300); do exec {fd}<>"/dev/tcp/127.0.0.1/$HPORT"; idle+=("$fd"); done
  local code
  code=$(curl -s -o /dev/null -w '%{http_code}' --max-time 30 --cacert "$CA" \
    -H "Authorization: Bearer $TOKEN" "https://127.0.0.1:$HPORT/api/v1/workers") || true
  for fd in "${idle[@]}"; do exec {fd}>&-; done
  echo "API answered $code with 300 idle connections open"
  [ "$code" = 200 ]
}

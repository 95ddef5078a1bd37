#!/usr/bin/env bash
# Sends the pages of examples/ocr (GPL-3 rendered to PNG) to the OCR service and checks the text
# it answers against the source, word by word (examples/ocr/check.sh):
#
#   examples/ocr-service/client.sh URL [TOKEN_FILE|-] [CA_FILE|-]
#
# URL is where the service's routes are: through the pool's gateway
# https://127.0.0.1:7880/services/ocr (the gateway passes /services/ocr/ocr to a replica's /ocr),
# or a replica itself, http://127.0.0.1:PORT. TOKEN_FILE holds an access token of the pool (its
# first line), sent as "Authorization: Bearer"; it is read from the file, never put on a
# command line. CA_FILE is the pool's CA certificate (PEM) for an https URL. "-" (or nothing)
# for either: none.
# Environment: OUT (default out/ocr-service/client) where pages/, truth/ and text/ go; PAGES=N
# sends only the first N pages (default all 20); PARALLEL requests at once (default 4);
# MIN_PERCENT for check.sh (default 95). Exits 1 when a request fails or the text is off.
# Needs curl, jq, groff and ghostscript (scripts/bootstrap.sh installs them).
set -euo pipefail
die() { echo "ocr-client: $*" >&2; exit 1; }
[ $# -ge 1 ] && [ $# -le 3 ] || die "usage: $0 URL [TOKEN_FILE|-] [CA_FILE|-]"
URL=${1%/} TOKEN_FILE=${2:--} CA=${3:--}
HERE=$(cd "$(dirname "$0")" && pwd)
OUT=${OUT:-out/ocr-service/client}
PARALLEL=${PARALLEL:-4}
[[ $PARALLEL =~ ^[1-9][0-9]*$ ]] || die "PARALLEL must be a positive number, got '$PARALLEL'"
for tool in curl jq; do command -v "$tool" >/dev/null || die "'$tool' not found"; done
[ "$CA" = - ] || [ -r "$CA" ] || die "cannot read the CA file '$CA'"
mkdir -p "$OUT"
AUTH=-
if [ "$TOKEN_FILE" != - ]; then
  [ -r "$TOKEN_FILE" ] || die "cannot read the token file '$TOKEN_FILE'"
  # The header in a file only this user reads: curl -H @FILE keeps the token out of `ps`.
  AUTH=$OUT/.auth
  (umask 077; printf 'Authorization: Bearer %s\n' "$(head -n 1 "$TOKEN_FILE")" >"$AUTH")
fi

# The pages and their source text, as the batch example makes them (deterministic).
PAGES=${PAGES:-0} "$HERE/../ocr/make-pages.sh" "$OUT/job"
rm -rf "$OUT/text" "$OUT/answers"
mkdir -p "$OUT/text" "$OUT/answers"

# ocr_page NAME: POSTs pages/NAME.png to URL/ocr; its text into text/NAME.txt. Prints a line.
ocr_page() {
  local page=$1 code curl=(curl -sS --max-time 120)
  [ "$CA" = - ] || curl+=(--cacert "$CA")
  [ "$AUTH" = - ] || curl+=(-H "@$AUTH")
  code=$("${curl[@]}" -o "$OUT/answers/$page.json" -w '%{http_code}' \
    -H 'Content-Type: image/png' --data-binary "@$OUT/job/pages/$page.png" "$URL/ocr") || code=000
  if [ "$code" != 200 ]; then
    echo "$page: HTTP $code $(head -c 300 "$OUT/answers/$page.json" 2>/dev/null)"
    return 1
  fi
  jq -r .text "$OUT/answers/$page.json" >"$OUT/text/$page.txt"
  jq -r --arg p "$page" \
    '"\($p): \(.text | split("\n") | map(select(. != "")) | length) lines, confidence \(.confidence), \(.seconds) s"' \
    "$OUT/answers/$page.json"
}
export -f ocr_page
export OUT URL CA AUTH

echo "ocr-client: $(wc -l <"$OUT/job/pages.txt") pages to $URL/ocr, $PARALLEL at a time"
failed=0
xargs -P "$PARALLEL" -I{} bash -c 'ocr_page "$1"' _ {} <"$OUT/job/pages.txt" || failed=1
[ "$AUTH" = - ] || rm -f "$AUTH"
[ "$failed" = 0 ] || die "some pages were not answered (see above)"
"$HERE/../ocr/check.sh" "$OUT/job/truth" "$OUT/text" "${MIN_PERCENT:-95}"

#!/usr/bin/env bash
# Batch inference on real input: Tesseract OCR over 20 pages of the GNU GPL v3 (rendered from
# /usr/share/common-licenses/GPL-3), one page per task, on a coordinator and 3 local workers.
# The model (eng.traineddata, 4.1 MB) and the page images are the job's inputs, shipped to the
# workers as content-addressed blobs. The job runs twice on the same workers: the first run
# fetches the model and the pages once per worker, the second finds them all in the workers'
# caches. Each run's text is checked against the source (word accuracy, examples/ocr/check.sh),
# and the summary shows pages, accuracy, time, bytes moved and cache hits.
# See examples/ocr/README.md.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
scripts/bootstrap.sh
scripts/build.sh
BIN=$ROOT/build/idlepool
OUT=$ROOT/out/ocr
WORKERS=3
rm -rf "$OUT"
mkdir -p "$OUT/logs"
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; }
trap cleanup EXIT

say() { printf '\n\033[1m== %s\033[0m\n' "$*"; }
die() { echo "ocr-example: $*" >&2; exit 1; }
sql() { sqlite3 -readonly "$OUT/coordinator/pool.db" "$1"; }

say "rendering the pages (examples/ocr/make-pages.sh)"
examples/ocr/make-pages.sh "$OUT/job"
cp examples/ocr/job.toml "$OUT/job/job.toml"
PAGES=$(wc -l <"$OUT/job/pages.txt")
PNG_BYTES=$(du -cb "$OUT"/job/pages/*.png | tail -1 | cut -f1)
MODEL=$(compgen -G "/usr/share/tesseract-ocr/*/tessdata/eng.traineddata" | head -1 || true)
[ -n "$MODEL" ] ||
  die "no eng.traineddata under /usr/share/tesseract-ocr/*/tessdata/ (install tesseract-ocr-eng)"
MODEL_SHA=$(sha256sum "$MODEL" | cut -d' ' -f1)
MODEL_BYTES=$(stat -c %s "$MODEL")
echo "model: $MODEL ($MODEL_BYTES bytes, sha256 ${MODEL_SHA:0:16}...)"

say "starting a coordinator and $WORKERS workers (one slot each, dedicated)"
"$BIN" coordinator --listen 127.0.0.1:0 --data-dir "$OUT/coordinator" \
  >"$OUT/logs/coordinator.log" 2>&1 &
pids+=($!); disown $!
for _ in $(seq 200); do
  grep -q "listening on" "$OUT/logs/coordinator.log" 2>/dev/null && break; sleep 0.05
done
ADDR=$(sed -n 's/.*listening on \([0-9.]*:[0-9]*\).*/\1/p' "$OUT/logs/coordinator.log" | head -1)
[ -n "$ADDR" ] || { cat "$OUT/logs/coordinator.log"; die "the coordinator did not start"; }
export IDLEPOOL_COORDINATOR=$ADDR
# Credentials from the coordinator's admin socket, in files only this user can read: a join
# token for the workers, an access token this script logs in with (kept in $OUT/config, not in
# your own login). No secret goes on a command line or into the environment.
export XDG_CONFIG_HOME=$OUT/config
unset IDLEPOOL_TOKEN IDLEPOOL_JOIN_TOKEN
(umask 077
  "$BIN" token create --role worker --data-dir "$OUT/coordinator" >"$OUT/join.token"
  "$BIN" token create --role submit --name ocr-example --data-dir "$OUT/coordinator" \
    >"$OUT/submit.token")
"$BIN" login "$ADDR" --token-file "$OUT/submit.token"
for w in $(seq "$WORKERS"); do
  "$BIN" worker --name "worker-$w" --slots 1 --dedicated --join "$ADDR" \
    --token-file "$OUT/join.token" --work-dir "$OUT/worker-$w" >"$OUT/logs/worker-$w.log" 2>&1 &
  pids+=($!); disown $!
done
ready='[.workers[] | select(.state=="connected" and .owner_state=="run")] | length'
n=0
for _ in $(seq 200); do
  n=$("$BIN" workers --json | jq "$ready")
  [ "$n" = "$WORKERS" ] && break; sleep 0.05
done
"$BIN" workers
if [ "$n" != "$WORKERS" ]; then
  tail -n 5 "$OUT"/logs/worker-*.log
  die "$n of $WORKERS workers ready to run work"
fi

# model_inode W: the inode of the model in worker-W's blob cache, "-" when it has none. A blob
# is published by renaming a verified temporary file over its hash name: a second fetch of the
# model would show a new inode.
model_inode() {
  stat -c %i "$OUT/worker-$1/cache/${MODEL_SHA:0:2}/$MODEL_SHA" 2>/dev/null || echo -
}

# cache_stats W: "BLOBS BYTES" in worker-W's blob cache (what it has fetched so far).
cache_stats() {
  find "$OUT/worker-$1/cache" -path "*/cache/??/*" -type f ! -name "*.manifest" -printf '%s\n' 2>/dev/null |
    awk '{ n++; b += $1 } END { print n + 0, b + 0 }'
}

# run_job N: submits the job, waits, fetches its text into $OUT/run-N and checks it; sets JOB
# and SECS (submit to finish, in seconds).
run_job() {
  say "run $1: submitting $PAGES pages (one task each)"
  local t0 t1 got
  t0=$(date +%s.%N)
  JOB=$("$BIN" submit "$OUT/job/job.toml")
  "$BIN" wait "$JOB" || { "$BIN" status "$JOB"; die "run $1 (job $JOB) did not succeed"; }
  t1=$(date +%s.%N)
  SECS=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }')
  "$BIN" fetch "$JOB" --out "$OUT/run-$1"
  got=$(find "$OUT/run-$1" -maxdepth 1 -name 'page-*.txt' | wc -l)
  [ "$got" = "$PAGES" ] || die "run $1: $got of $PAGES page texts fetched"
  say "run $1: checking the text against the source"
  examples/ocr/check.sh "$OUT/job/truth" "$OUT/run-$1" | tee "$OUT/check-$1.txt" ||
    die "run $1: the OCR text does not match the source well enough (see above)"
  "$BIN" status "$JOB" --json >"$OUT/status-$1.json"
}

# caches_total: "BLOBS BYTES" over all the workers' caches.
caches_total() {
  for w in $(seq "$WORKERS"); do cache_stats "$w"; done |
    awk '{ n += $1; b += $2 } END { print n, b }'
}

# summary N SECS FETCHED_BLOBS FETCHED_BYTES: the figures of run N. Bytes moved and cache hits
# come from the "transfer" object of `idlepool status JOB --json`; a build without per-job
# transfer counters has no such object, and then those figures read 0 and say so. What the
# run added to the workers' blob caches is measured on disk, whatever the build reports.
summary() {
  local s=$OUT/status-$1.json
  printf 'run %s (job %s): %s, %s of %s tasks in %s attempts, %s s, %s\n' "$1" \
    "$(jq -r .job "$s")" "$(jq -r .state "$s")" "$(jq -r .succeeded "$s")" \
    "$(jq -r .tasks "$s")" "$(jq -r .attempts "$s")" "$2" \
    "$(awk '/^total:/ { printf "accuracy %s (%s of %s words)", $NF, $6, $4 }' "$OUT/check-$1.txt")"
  jq -r '
    (.transfer // {}) as $t
    | "  bytes moved: inputs \($t.input_bytes // 0)"
      + " (from the coordinator \($t.coordinator_bytes // 0), from peers \($t.peer_bytes // 0),"
      + " from the cache \($t.cached_bytes // 0)), outputs \($t.output_bytes // 0)",
      "  cache:       \($t.cache_hits // 0) hits, \($t.cache_misses // 0) misses",
      if has("transfer") then empty
      else "  (the two lines above read 0: this build has no \"transfer\" in status --json)" end
  ' "$s"
  echo "  fetched into the workers' caches: $3 blobs, $4 bytes (measured on disk)"
}

read -r n0 b0 < <(caches_total)
run_job 1
T1=$SECS
read -r n1 b1 < <(caches_total)
declare -A inode1
for w in $(seq "$WORKERS"); do inode1[$w]=$(model_inode "$w"); done
run_job 2
T2=$SECS
read -r n2 b2 < <(caches_total)

say "summary"
echo "input:  $PAGES pages of GPL-3 ($PNG_BYTES bytes of PNG) and the model ($MODEL_BYTES bytes)," \
  "$WORKERS workers"
summary 1 "$T1" $((n1 - n0)) $((b1 - b0))
summary 2 "$T2" $((n2 - n1)) $((b2 - b1))

# Every worker that ran a task in run 2 had the model in its cache from run 1, and used it.
echo "the model in each worker's cache, after run 1 and after run 2 (inode):"
fail=0
for w in $(seq "$WORKERS"); do
  i1=${inode1[$w]}
  i2=$(model_inode "$w")
  ran=$(sql "SELECT COUNT(*) FROM attempts WHERE job_id=$JOB AND worker='worker-$w'")
  note="the same blob: not fetched again"
  if [ "$i2" = - ]; then
    note="none"; [ "$ran" = 0 ] || fail=1
  elif [ "$i1" = - ]; then
    note="FETCHED in run 2 (it ran no task in run 1)"; fail=1
  elif [ "$i1" != "$i2" ]; then
    note="FETCHED AGAIN"; fail=1
  fi
  echo "  worker-$w: $i1 -> $i2, $ran tasks in run 2: $note"
done
[ "$fail" = 0 ] || die "run 2 fetched the model again on a worker that had it from run 1"
if [ "$(jq 'has("transfer")' "$OUT/status-2.json")" = true ]; then
  misses=$(jq '.transfer.cache_misses // 0' "$OUT/status-2.json")
  hits=$(jq '.transfer.cache_hits // 0' "$OUT/status-2.json")
  [ "$misses" = 0 ] || die "run 2: $misses cache misses, but run 1 left every input cached"
  [ "$hits" -gt 0 ] || die "run 2: no cache hits reported"
fi
echo "texts:  $OUT/run-1/ and $OUT/run-2/ (page-NN.txt); logs: $OUT/logs/"

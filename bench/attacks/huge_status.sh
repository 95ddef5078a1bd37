# attack_huge_status: a job whose every task fails with a long stderr (4 KiB written, each task
# at once, max_attempts 1), then many readers of its status at once: `status --json`, `wait
# --json`, the failures pages and, when HTTP_URL is set (with CA_PEM), GET /api/v1/jobs/N.
# Before issue 21 a job's status carried every failed task with its log tail: 20,000 failures
# made a 164 MB status no client could receive, and an 82 MB JSON answer of the HTTP API whose
# readers took the coordinator to 7.3 GB. Now a status lists 20 failures and a cursor.
#
# Variables: HUGE_STATUS_TASKS (default 2000 tasks), HUGE_STATUS_READERS (default 8 at once).
# Needs a running pool (the runner's or a test's). Leaves HUGE_STATUS_JOB (the job id) and
# HUGE_STATUS_BYTES (the largest status answer read, bytes). Returns when the job ended (or
# after 50 s of it running) and every reader is done.
attack_huge_status() {
  local tasks=${HUGE_STATUS_TASKS:-2000} readers=${HUGE_STATUS_READERS:-8}
  local dir="$T/huge_status" i pids=()
  mkdir -p "$dir"
  cat >"$dir/job.toml" <<TOML
name = "huge-status"
command = ["sh", "-c", "head -c 4096 /dev/zero | tr '\\\\0' x >&2; echo >&2; exit 1"]
count = $tasks
outputs = ["never.txt"]
[retry]
max_attempts = 1
TOML
  HUGE_STATUS_JOB=$("$IDLEPOOL" submit "$dir/job.toml" 2>/dev/null)
  local end=$(( $(date +%s) + 50 ))
  while [ "$("$IDLEPOOL" status "$HUGE_STATUS_JOB" --json 2>/dev/null | jq -r .state)" = running ] &&
    [ "$(date +%s)" -lt "$end" ]; do
    sleep 0.5
  done
  for i in $(seq "$readers"); do
    "$IDLEPOOL" status "$HUGE_STATUS_JOB" --json >"$dir/status.$i" 2>/dev/null &
    pids+=($!)
    "$IDLEPOOL" failures "$HUGE_STATUS_JOB" --all --json >"$dir/failures.$i" 2>/dev/null &
    pids+=($!)
    if [ -n "${HTTP_URL:-}" ]; then
      curl -s --cacert "${CA_PEM:-$T/coord/ca.pem}" -H "Authorization: Bearer $TOKEN" \
        "$HTTP_URL/api/v1/jobs/$HUGE_STATUS_JOB" >"$dir/http.$i" &
      pids+=($!)
    fi
  done
  timeout 30 "$IDLEPOOL" wait "$HUGE_STATUS_JOB" --json >"$dir/wait" 2>/dev/null || true
  for i in "${pids[@]}"; do wait "$i" || true; done
  HUGE_STATUS_BYTES=0
  for i in "$dir"/status.* "$dir"/http.* "$dir/wait"; do
    [ -f "$i" ] && [ "$(stat -c %s "$i")" -gt "$HUGE_STATUS_BYTES" ] && HUGE_STATUS_BYTES=$(stat -c %s "$i")
  done
  return 0
}

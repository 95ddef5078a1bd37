# attack_name_churn: many worker names join the pool and leave at once (each with its own key and
# certificate from the join token), and many one-task jobs that no worker can fit are submitted
# and stay pending. Before issue 21 the coordinator kept every name it ever saw and looked at all
# of them (and at every waiting job) several times a second: a few tens of thousands of names or
# pending jobs turned an idle coordinator into a whole core and made `status` time out. Now
# departed workers are forgotten after --forget-workers-after-ms (their history stays in the
# store) and periodic passes cost what changed.
#
# Uses build/bench/churn (next to $IDLEPOOL's directory, or CHURN). Variables:
# NAME_CHURN_NAMES (default 2000), NAME_CHURN_JOBS (default 500), NAME_CHURN_PREFIX (default
# churn-). Returns when every name has said hello and left and every job is submitted (at most
# 55 s each, then it stops where it is).
attack_name_churn() {
  local churn=${CHURN:-$(dirname "$IDLEPOOL")/bench/churn}
  mkdir -p "$T/name_churn"
  timeout 55 "$churn" workers --coordinator "$ADDR" --join-token-file "$JOIN_TOKEN_FILE" \
    --dir "$T/name_churn" --names "${NAME_CHURN_NAMES:-2000}" \
    --prefix "${NAME_CHURN_PREFIX:-churn-}" || true
  timeout 55 "$churn" jobs --coordinator "$ADDR" --ca "$DATA_DIR/ca.pem" \
    --jobs "${NAME_CHURN_JOBS:-500}" || true
}

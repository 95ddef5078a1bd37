#!/usr/bin/env bash
# The dashboard in a real browser (issue 7): a coordinator serving it on 127.0.0.1, a worker with
# fake sensors running a job of 2 tasks that wait for release files, and dashboard_test.js driving
# headless Chromium through playwright-core. Needs /usr/bin/chromium (Debian `chromium`) and node;
# playwright-core (pinned in tests/browser/package-lock.json) is installed into the build tree with
# `npm ci` on first use. Skips (77) only when chromium or node is missing or the npm registry
# cannot be reached (offline, or a TLS proxy this machine does not trust); any other failed npm
# install fails the test. The screenshot is left in $ARTIFACT_DIR (default: build/test-artifacts).
source "$(dirname "$0")/../integration/lib.sh"
HERE=$(cd "$(dirname "$0")" && pwd)
CHROMIUM=${CHROMIUM:-/usr/bin/chromium}
[ -x "$CHROMIUM" ] || { echo "SKIP: no $CHROMIUM (Debian package chromium)"; exit 77; }
command -v node >/dev/null && command -v npm >/dev/null || { echo "SKIP: no node/npm"; exit 77; }

# playwright-core, once per build tree (npm ci: exactly the locked version).
NODE_DIR=${BROWSER_NODE_DIR:-$(dirname "$IDLEPOOL")/browser-node}
if [ ! -f "$NODE_DIR/node_modules/playwright-core/package.json" ] ||
   ! cmp -s "$HERE/package-lock.json" "$NODE_DIR/package-lock.json"; then
  mkdir -p "$NODE_DIR"
  cp "$HERE/package.json" "$HERE/package-lock.json" "$NODE_DIR/"
  if ! (cd "$NODE_DIR" && npm ci --no-audit --no-fund --loglevel=error) >"$T/npm.log" 2>&1; then
    cat "$T/npm.log" >&2
    # No way to the registry from here (offline, or a TLS-intercepting proxy whose CA this
    # machine does not trust): nothing to test the browser with. Any other npm failure fails.
    if grep -qE 'SELF_SIGNED_CERT|UNABLE_TO_GET_ISSUER|UNABLE_TO_VERIFY|CERT_[A-Z_]+|ENOTFOUND|EAI_AGAIN|ECONNREFUSED|ECONNRESET|ETIMEDOUT|ENETUNREACH' "$T/npm.log"; then
      echo "SKIP: cannot reach the npm registry for playwright-core (see the npm error above)"
      exit 77
    fi
    fail "npm ci of playwright-core failed"
  fi
fi
ARTIFACT_DIR=${ARTIFACT_DIR:-$(dirname "$IDLEPOOL")/test-artifacts}
mkdir -p "$ARTIFACT_DIR"

S=$T/sensors
sense "$S" idle_seconds 100000
sense "$S" lid_closed 0
sense "$S" temperature_c 47
owner_config "$T/owner.toml"
mkdir -p "$T/release"
cat >"$T/job.toml" <<TOML
name = "dashboard-browser"
command = ["sh", "-c", "echo task {index} | tee out.txt; while [ ! -e $T/release/{index} ]; do sleep 0.05; done"]
count = 2
outputs = ["out.txt"]
TOML
start_coordinator --http 127.0.0.1:0
wait_until 20 grep -q "dashboard at https://" "$T/coordinator.log"
URL=$(sed -n 's/.*dashboard at \(https:\/\/[^ ]*\).*/\1/p' "$T/coordinator.log" | tail -1)
# A worker that left the pool (SIGTERM): the pool page hides it behind a "show ... left" box.
start_worker gone --slots 1
wait_until 20 is_connected gone
kill -TERM "$WPID_gone"
wait "$WPID_gone" || fail "worker gone exited non-zero after SIGTERM"
[ "$(worker_state gone)" = left ] || fail "gone's state is $(worker_state gone), want left"
# --no-sandbox: the page test releases each task through a file in $T, which a sandbox hides.
start_worker laptop --slots 2 --config "$T/owner.toml" --sensors-dir "$S" --no-sandbox
wait_until 20 is_owner_state laptop run
JOB=$("$IDLEPOOL" submit "$T/job.toml")
wait_until 30 job_at_least "$JOB" running 2

URL=$URL TOKEN=$TOKEN JOB=$JOB RELEASE_DIR=$T/release SENSORS=$S WORKER=laptop GONE=gone \
  SHOT=$ARTIFACT_DIR/dashboard.png CHROMIUM=$CHROMIUM NODE_PATH=$NODE_DIR/node_modules \
  node "$HERE/dashboard_test.js" || fail "browser test failed (screenshot: $ARTIFACT_DIR)"
[ -s "$ARTIFACT_DIR/dashboard.png" ] || fail "no screenshot"
"$IDLEPOOL" wait "$JOB" --quiet >/dev/null || fail "job did not succeed"
pass "dashboard in headless Chromium: login, session cookie, CSRF, workers, live timeline, preemption, services page, logout; screenshot $ARTIFACT_DIR/dashboard.png"

# Sourced by the serve_client tests (after lib.sh, with HERE and BIN set): installs the npm
# `openai` package pinned in package-lock.json into the build tree once (npm ci), and sets
# NODE_DIR. Skips (77) when the registry cannot be reached; any other npm failure fails.
# openai, once per build tree (npm ci: exactly the locked version).
NODE_DIR=${SERVE_CLIENT_NODE_DIR:-$BIN/serve-client-node}
if [ ! -f "$NODE_DIR/node_modules/openai/package.json" ] ||
   ! cmp -s "$HERE/package-lock.json" "$NODE_DIR/package-lock.json"; then
  mkdir -p "$NODE_DIR"
  cp "$HERE/package.json" "$HERE/package-lock.json" "$NODE_DIR/"
  if ! (cd "$NODE_DIR" && npm ci --no-audit --no-fund --loglevel=error) >"$T/npm.log" 2>&1; then
    cat "$T/npm.log" >&2
    # No way to the registry from here (offline, or a TLS-intercepting proxy whose CA this
    # machine does not trust): no client to test with. Any other npm failure fails.
    if grep -qE 'SELF_SIGNED_CERT|UNABLE_TO_GET_ISSUER|UNABLE_TO_VERIFY|CERT_[A-Z_]+|ENOTFOUND|EAI_AGAIN|ECONNREFUSED|ECONNRESET|ETIMEDOUT|ENETUNREACH' "$T/npm.log"; then
      echo "SKIP: cannot reach the npm registry for openai (see the npm error above)"
      exit 77
    fi
    fail "npm ci of openai failed"
  fi
fi


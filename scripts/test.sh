#!/usr/bin/env bash
# Installs what is needed (scripts/bootstrap.sh test), builds everything (scripts/build.sh --all),
# and runs every test (unit, store, integration) through ctest, then the fuzzers for a bounded
# time each (tests/fuzz/run.sh; its own clang build, build-fuzz/; IDLEPOOL_SKIP_FUZZ=1 skips
# them). Arguments go to ctest.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/bootstrap.sh test
scripts/build.sh --all
(cd build && ctest --output-on-failure -j"$(nproc)" "$@")
if [ "${IDLEPOOL_SKIP_FUZZ:-0}" != 1 ]; then
  tests/fuzz/run.sh
fi

#!/usr/bin/env bash
# Installs what is needed, builds, and runs every test (unit, store, integration) through ctest.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/bootstrap.sh
scripts/build.sh
cd build
ctest --output-on-failure -j"$(nproc)" "$@"

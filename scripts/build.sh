#!/usr/bin/env bash
# Configures and builds idlepool into build/ (RelWithDebInfo; BUILD_TYPE=Release to change).
#   scripts/build.sh                  # the binary alone: build/idlepool
#   scripts/build.sh --all            # everything: tests, tools, benches (scripts/test.sh)
#   scripts/build.sh TARGET...        # these ninja targets (e.g. bench_throughput core_test)
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_TYPE=${BUILD_TYPE:-RelWithDebInfo}
targets=(idlepool)
case "${1:-}" in
  --all) targets=(all) ;;
  -h | --help) sed -n '2,5p' "$0"; exit 0 ;;
  "") ;;
  *) targets=("$@") ;;
esac
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE="$BUILD_TYPE" >/dev/null
cmake --build build -j"$(nproc)" --target "${targets[@]}"

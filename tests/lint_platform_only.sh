#!/usr/bin/env bash
# Real clocks, sleeps and randomness are reached only through src/platform/ (STYLE.md #14), so
# tests and the simulator can replace them. Fails listing each offending line.
cd "$(dirname "$0")/../src"
pattern='steady_clock|system_clock|high_resolution_clock|sleep_for|sleep_until|usleep|[^_a-z]rand\(|srand|random_device|getrandom|gettimeofday|clock_gettime|[^_a-z.]time\(nullptr'
hits=$(grep -rnE "$pattern" --include='*.cc' --include='*.h' . | grep -v '^./platform/' \
       | grep -vE '^\./[^:]+:[0-9]+:\s*//' || true)
if [ -n "$hits" ]; then
  echo "clock/sleep/random use outside src/platform/:"; echo "$hits"; exit 1
fi
echo "ok: clocks, sleeps and randomness only in src/platform/"

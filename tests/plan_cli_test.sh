#!/usr/bin/env bash
# `idlepool plan --pattern`: the numbers it prints are the alpha-beta formulas of
# src/plan/coupled.h (recomputed here independently, in awk), its verdicts follow them, and bad
# input exits 2 naming the option.
set -euo pipefail
: "${IDLEPOOL:?set IDLEPOOL to the idlepool binary}"
fail() { echo "FAIL: $*" >&2; exit 1; }
near() { awk -v a="$1" -v b="$2" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(d <= 1e-9 + 1e-6 * (b < 0 ? -b : b)) }'; }

# Data-parallel: 4 machines, 1 s step, 100 MB of gradients, 1 GbE (125e6 B/s), 0.2 ms RTT.
j=$("$IDLEPOOL" plan --pattern allreduce --machines 4 --compute-ms 1000 --bytes 100000000 \
      --link 1gbit --rtt-ms 0.2 --json)
want=$(awk 'BEGIN { p = 4; a = 0.0001; b = 125e6; B = 100000000;
                    printf "%.12g", 1 / p + 2 * (p - 1) * a + 2 * (p - 1) / p * B / b }')
near "$(jq .pool_s <<<"$j")" "$want" || fail "allreduce pool_s $(jq .pool_s <<<"$j"), want $want"
[ "$(jq -r .verdict <<<"$j")" = "single machine" ] || fail "allreduce verdict: $j"
# It breaks even where 1 = 0.25 + 6 a + 1.5 B / beta.
want=$(awk 'BEGIN { printf "%.12g", 1.5 * 100000000 / (1 - 0.25 - 6 * 0.0001) }')
near "$(jq .break_even_bytes_per_s <<<"$j")" "$want" || fail "break-even $(jq .break_even_bytes_per_s <<<"$j"), want $want"
# At ten times the bandwidth it pays off.
j=$("$IDLEPOOL" plan --pattern allreduce --machines 4 --compute-ms 1000 --bytes 100000000 \
      --link 10gbit --rtt-ms 0.2 --json)
[ "$(jq -r .verdict <<<"$j")" = pool ] || fail "10 GbE allreduce: $j"
echo "ok: allreduce time and break-even bandwidth follow the ring all-reduce formula"

# Pipeline decoding, ring of 4, 37 ms per token, 16 KiB per hop, 100 Mbit/s, 18.5 ms RTT.
j=$("$IDLEPOOL" plan --pattern pipeline --machines 4 --ring --compute-ms 37 --bytes 16K \
      --link 100mbit --rtt-ms 18.5 --json)
want=$(awk 'BEGIN { printf "%.12g", 0.037 + 4 * (0.00925 + 16384 / 12.5e6) }')
near "$(jq .pool_s <<<"$j")" "$want" || fail "pipeline pool_s $(jq .pool_s <<<"$j"), want $want"
[ "$(jq .can_ever_pay_off <<<"$j")" = false ] || fail "a pipeline never beats one machine: $j"
j=$("$IDLEPOOL" plan --pattern pipeline --machines 4 --compute-ms 37 --bytes 16K --json)
want=$(awk 'BEGIN { printf "%.12g", 0.037 + 3 * (0.00025 + 16384 / 125e6) }')
near "$(jq .pool_s <<<"$j")" "$want" || fail "chain pool_s $(jq .pool_s <<<"$j"), want $want"
echo "ok: pipeline decoding adds hops (chain stages-1, ring stages) and never pays off"

# Tensor parallel: 2 machines, 20 ms per token, 32 layers, 16 KiB activations, 10 GbE, 50 us.
j=$("$IDLEPOOL" plan --pattern tensor --machines 2 --compute-ms 20 --layers 32 --bytes 16K \
      --link 10gbit --rtt-ms 0.05 --json)
want=$(awk 'BEGIN { p = 2; a = 0.000025; b = 1.25e9; A = 16384;
                    printf "%.12g", 0.02 / p + 32 * 2 * (2 * (p - 1) * a + 2 * (p - 1) / p * A / b) }')
near "$(jq .pool_s <<<"$j")" "$want" || fail "tensor pool_s $(jq .pool_s <<<"$j"), want $want"
[ "$(jq -r .verdict <<<"$j")" = pool ] || fail "tensor on 10 GbE: $j"
j=$("$IDLEPOOL" plan --pattern tensor --machines 2 --compute-ms 20 --layers 32 --bytes 16K \
      --link 100mbit --rtt-ms 5 --json)
[ "$(jq -r .verdict <<<"$j")" = "single machine" ] || fail "tensor over Wi-Fi-like links: $j"
echo "ok: tensor parallel pays off on a fast link, not on a slow one"

# Text output says the same.
out=$("$IDLEPOOL" plan --pattern pipeline --machines 4 --compute-ms 37 --bytes 16K)
grep -q "^verdict: *single machine" <<<"$out" && grep -q "no link makes this pay off" <<<"$out" ||
  fail "text output: $out"

# Bad input: exit 2, the option named.
bad() {
  local want=$1; shift
  local rc=0 err
  err=$("$IDLEPOOL" plan "$@" 2>&1 >/dev/null) || rc=$?
  [ "$rc" = 2 ] || fail "exit $rc for $*"
  grep -q -- "$want" <<<"$err" || fail "message for $* does not name $want: $err"
}
bad --link --pattern allreduce --compute-ms 10 --link 10furlongs
bad --compute-ms --pattern allreduce --compute-ms 0
bad --pattern --pattern mesh --compute-ms 10
bad --bytes --pattern tensor --compute-ms 10 --bytes lots
bad --machines --pattern tensor --compute-ms 10 --machines 0
bad rtt --pattern tensor --compute-ms 10 --rtt-ms -1
echo "ok: bad input exits 2 naming the option"

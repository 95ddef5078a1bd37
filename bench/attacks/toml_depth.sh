# Issue 21, point 10: job specs that used to crash the TOML library itself (100,000 nested
# arrays, deep inline tables), submitted through the CLI: refused with the file and line.
attack_toml_depth() {
  { printf 'name = "deep"\ncommand = ["true"]\nx = '; head -c 100000 /dev/zero | tr '\0' '['; } >"$T/deep1.toml"
  { printf 'name = "deep"\ncommand = ["true"]\nx = '; for _ in $(seq 20000); do printf '{a='; done; } >"$T/deep2.toml"
  local f rc=0 out
  for f in "$T/deep1.toml" "$T/deep2.toml"; do
    out=$("$IDLEPOOL" submit "$f" 2>&1) && { echo "accepted: $f"; rc=1; }
    # A crash (signal) is 128+; a refusal is a small exit code with the file named.
    grep -qF "$(basename "$f")" <<<"$out" || { echo "no file named: $out"; rc=1; }
  done
  return $rc
}

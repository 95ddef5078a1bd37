# Issue 21, point 9: a worker credential used to join under a name that shows exactly like an
# existing worker's ("w1" plus a zero-width space, U+200B) or reverses text (U+202E). Both must
# be refused; the pool's own w1 keeps working.
attack_invisible_names() {
  local name rc=0
  for name in $'w1\u200b' $'w\u202e1'; do
    if timeout 30 "$IDLEPOOL" worker --name "$name" --work-dir "$T/liar.$RANDOM" \
         --join "$ADDR" --token-file "$JOIN_TOKEN_FILE" --sensors-dir "$T/no-sensors"; then
      echo "a worker named $(printf %q "$name") ran"; rc=1
    fi
  done
  return $rc
}

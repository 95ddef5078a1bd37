# attack_hello_bomb: a worker with a real credential (tests/tools/rogue_worker.cc, joined with the
# pool's join token) says Hello listing 5,000,000 held attempts the coordinator never assigned
# (about 40 MB on the wire). Each would have cost a Kill message (3.4 GB of coordinator memory);
# the coordinator must refuse the Hello at once (INVALID_ARGUMENT naming Hello.held_attempts,
# at most kMaxListedAttempts). Done three times in a row; each try prints one line to
# $T/rogue-hello.out. Bounded: returns after at most ~60 s (each try gives up after 20 s).
attack_hello_bomb() {
  local rogue i
  rogue=$(dirname "$IDLEPOOL")/idlepool-rogue-worker
  : >"$T/rogue-hello.out"
  for i in 1 2 3; do
    "$rogue" --coordinator "$ADDR" --token-file "$JOIN_TOKEN_FILE" --name rogue-hello \
      --dir "$T/rogue-hello" --mode hello-bomb --held 5000000 --seconds 20 >>"$T/rogue-hello.out" 2>&1 || true
  done
}

# Issue 21, point 3: a 16 KB spec whose command renders 1.1 GiB of argv per task ("{frames}" of
# a 100,000-frame chunk, 2,000 times), submitted with a submit token. It must be refused at
# submit, before any worker renders it.
attack_placeholder_bomb() {
  {
    printf 'name = "bomb"\nframes = "1-100000"\nchunk = 100000\ncommand = ["echo"'
    for _ in $(seq 2000); do printf ', "{frames}"'; done
    printf ']\n'
  } >"$T/bomb.toml"
  if "$IDLEPOOL" submit "$T/bomb.toml"; then echo "the bomb was accepted"; return 1; fi
  return 0
}

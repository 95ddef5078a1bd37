#!/usr/bin/env bash
# The sandbox unit tests again in tier userns: as an unprivileged user (nobody) when this runs
# as root (a root test run covers tier uid in sandbox_test itself). Unprivileged already: the
# unit tests ran in tier userns.
set -euo pipefail
bin=$1
if [ "$(id -u)" != 0 ]; then echo "not root: sandbox_test already ran in tier userns"; exit 0; fi
command -v setpriv >/dev/null || { echo "setpriv (util-linux) is missing"; exit 1; }
cd /tmp
if ! setpriv --reuid=65534 --regid=65534 --clear-groups test -x "$bin"; then
  echo "SKIP: nobody cannot run $bin (the build is under a private dir)"; exit 77
fi
exec setpriv --reuid=65534 --regid=65534 --clear-groups env HOME=/nonexistent "$bin"

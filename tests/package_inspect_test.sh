#!/usr/bin/env bash
# scripts/package.sh makes a package a lab can install (from the binary under test, stripped):
# Depends names runtime libraries only (never a -dev package), the binary is stripped, the
# system units and the maintainer scripts (user idlepool, /var/lib/idlepool) are in it, and
# IDLEPOOL_VERSION sets the version. The full install check is scripts/package-check.sh (root,
# a debootstrapped bookworm root).
set -euo pipefail
: "${IDLEPOOL:?set IDLEPOOL to the idlepool binary}"
ROOT=$(cd "$(dirname "$0")/.." && pwd)
for tool in dpkg-deb dpkg-shlibdeps strip readelf; do
  command -v "$tool" >/dev/null || { echo "SKIP: $tool is not installed (scripts/bootstrap.sh build installs dpkg-dev and binutils)"; exit 77; }
done
T=$(mktemp -d "${TMPDIR:-/tmp}/idlepool-pkg.XXXXXX")
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
IDLEPOOL_VERSION=9.8.7+test1 "$ROOT/scripts/package.sh" --binary "$IDLEPOOL" --out "$T/out" >"$T/package.log" 2>&1 \
  || { cat "$T/package.log"; fail "package.sh failed"; }
deb=$(ls "$T"/out/idlepool_9.8.7+test1_*.deb 2>/dev/null) || fail "no idlepool_9.8.7+test1_ARCH.deb: $(ls "$T/out")"

[ "$(dpkg-deb -f "$deb" Package)" = idlepool ] || fail "Package is not idlepool"
[ "$(dpkg-deb -f "$deb" Version)" = 9.8.7+test1 ] || fail "Version is not IDLEPOOL_VERSION"
depends=$(dpkg-deb -f "$deb" Depends)
grep -q 'libc6' <<<"$depends" || fail "Depends lacks libc6 (not computed from the binary?): $depends"
grep -Eq 'libgrpc' <<<"$depends" || fail "Depends lacks gRPC: $depends"
if tr ',|' '\n\n' <<<"$depends" | awk '{print $1}' | grep -q -- '-dev$'; then fail "a -dev package in Depends: $depends"; fi
echo "ok: Depends: $depends"

contents=$(dpkg-deb -c "$deb" | awk '{print $6}')
for f in ./usr/bin/idlepool ./lib/systemd/system/idlepool-worker.service \
         ./lib/systemd/system/idlepool-coordinator.service; do
  grep -qx -- "$f" <<<"$contents" || fail "$f is not in the package"
done
[ "$(dpkg-deb -c "$deb" | awk '$6 == "./usr/bin/idlepool" {print $2}')" = root/root ] || fail "usr/bin/idlepool is not root's"
dpkg-deb -x "$deb" "$T/x"
dpkg-deb -e "$deb" "$T/x/DEBIAN"
if readelf -S "$T/x/usr/bin/idlepool" | grep -Eq '\.debug_info|\.symtab'; then fail "usr/bin/idlepool is not stripped"; fi
"$T/x/usr/bin/idlepool" --version >/dev/null || fail "the packaged binary does not run"
size=$(stat -c %s "$T/x/usr/bin/idlepool")
echo "ok: usr/bin/idlepool stripped ($((size / 1024 / 1024)) MiB), units present"

for s in postinst prerm postrm; do
  [ -x "$T/x/DEBIAN/$s" ] || fail "no executable $s"
  sh -n "$T/x/DEBIAN/$s" || fail "$s is not valid sh"
done
grep -q 'useradd --system' "$T/x/DEBIAN/postinst" || fail "postinst makes no system user"
grep -q '/var/lib/idlepool' "$T/x/DEBIAN/postinst" || fail "postinst makes no /var/lib/idlepool"
grep -q 'try-restart' "$T/x/DEBIAN/postinst" || fail "postinst restarts no unit on upgrade"
# Removing keeps the data: only a purge deletes /var/lib/idlepool.
awk '/^ *purge\)/{p=1} /;;/{p=0} /rm -rf .*\/var\/lib\/idlepool/ && !p {bad=1} END{exit bad}' "$T/x/DEBIAN/postrm" \
  || fail "postrm deletes /var/lib/idlepool outside purge"
echo "ok: maintainer scripts (user idlepool, data kept unless purged, units restarted on upgrade)"

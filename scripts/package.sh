#!/usr/bin/env bash
# Builds the Debian 12 (bookworm) package of idlepool from this tree: out/package/idlepool_VERSION_ARCH.deb
# (and idlepool-dbgsym_..., with --dbgsym). One package for every role: the binary is the same
# for a coordinator, a worker and a client, so a split would only split two unit files
# (docs/guide/install.md).
#
#   scripts/package.sh                       # builds the binary alone in build-pkg/ (RelWithDebInfo;
#                                            # PACKAGE_BUILD_TYPE=Release to change)
#   scripts/package.sh --binary build/idlepool   # package an existing binary (stripped copy)
#   scripts/package.sh --dbgsym              # also idlepool-dbgsym (the debug symbols)
#   IDLEPOOL_VERSION=0.2.0 scripts/package.sh  # another version (default: CMake's + git)
#
# The binary is stripped; Depends is computed from it by dpkg-shlibdeps (runtime libraries only).
# Needs dpkg-dev (dpkg-shlibdeps) and binutils (strip, objcopy); no debhelper, no root.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
BINARY="" OUT=$ROOT/out/package DBGSYM=0
while [ $# -gt 0 ]; do
  case $1 in
    --binary) BINARY=$(realpath "$2"); shift 2 ;;
    --out) OUT=$(realpath -m "$2"); shift 2 ;;
    --dbgsym) DBGSYM=1; shift ;;
    -h | --help) sed -n '2,15p' "$0"; exit 0 ;;
    *) echo "package.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done
die() { echo "package.sh: $*" >&2; exit 1; }
for tool in dpkg-deb dpkg-shlibdeps strip objcopy readelf; do
  command -v "$tool" >/dev/null || die "$tool is missing: scripts/bootstrap.sh build installs it"
done

project_version=$(sed -n 's/^project(idlepool VERSION \([0-9.]*\).*/\1/p' CMakeLists.txt)
if [ -z "${IDLEPOOL_VERSION:-}" ] && git rev-parse HEAD >/dev/null 2>&1; then
  IDLEPOOL_VERSION=$project_version+git$(git rev-list --count HEAD).$(git rev-parse --short=8 HEAD)
fi
VERSION=${IDLEPOOL_VERSION:-$project_version}
[[ $VERSION =~ ^[0-9][A-Za-z0-9.+~-]*$ ]] || die "IDLEPOOL_VERSION '$VERSION' is not a Debian version (digits first, then [A-Za-z0-9.+~-])"
ARCH=$(dpkg --print-architecture)

if [ -z "$BINARY" ]; then
  # The binary alone, in its own build dir. RelWithDebInfo by default: -O2 as the test suite's
  # build/, and debug info for --dbgsym (stripped from the package's binary below).
  cmake -S . -B build-pkg -G Ninja -DCMAKE_BUILD_TYPE="${PACKAGE_BUILD_TYPE:-RelWithDebInfo}" >/dev/null
  cmake --build build-pkg --target idlepool
  BINARY=$ROOT/build-pkg/idlepool
fi
[ -x "$BINARY" ] || die "no binary at $BINARY"

WORK=$(mktemp -d "${TMPDIR:-/tmp}/idlepool-package.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
PKG=$WORK/idlepool
install -d "$PKG/DEBIAN" "$PKG/usr/bin" "$PKG/lib/systemd/system" "$PKG/usr/share/doc/idlepool"
strip --strip-unneeded -o "$PKG/usr/bin/idlepool" "$BINARY"
chmod 0755 "$PKG/usr/bin/idlepool"
install -m 0644 packaging/deb/idlepool-worker.service packaging/deb/idlepool-coordinator.service \
  "$PKG/lib/systemd/system/"
install -m 0755 packaging/deb/postinst packaging/deb/prerm packaging/deb/postrm "$PKG/DEBIAN/"
cp README.md "$PKG/usr/share/doc/idlepool/"
cp -r docs "$PKG/usr/share/doc/idlepool/docs"
find "$PKG/usr/share/doc" -type d -exec chmod 0755 {} + -o -type f -exec chmod 0644 {} +

# Depends: the packages of the shared libraries the binary links (dpkg-shlibdeps wants a
# debian/control to read; a minimal one in a scratch dir).
mkdir -p "$WORK/src/debian"
printf 'Source: idlepool\n\nPackage: idlepool\nArchitecture: any\n' >"$WORK/src/debian/control"
depends=$(cd "$WORK/src" && dpkg-shlibdeps -O -e"$PKG/usr/bin/idlepool" 2>"$WORK/shlibdeps.log" \
  | sed -n 's/^shlibs:Depends=//p') || { cat "$WORK/shlibdeps.log" >&2; die "dpkg-shlibdeps failed"; }
[ -n "$depends" ] || die "dpkg-shlibdeps found no dependencies"
if grep -Eq '(^|[ ,])[^ ,]*-dev( |,|$)' <<<"$depends"; then die "a -dev package in Depends: $depends"; fi

size_kb=$(du -sk --exclude=DEBIAN "$PKG" | cut -f1)
cat >"$PKG/DEBIAN/control" <<EOF
Package: idlepool
Version: $VERSION
Architecture: $ARCH
Maintainer: idlepool developers <idlepool@localhost>
Installed-Size: $size_kb
Depends: $depends, passwd
Recommends: systemd
Section: net
Priority: optional
Homepage: https://localhost/idlepool
Description: pool the idle machines of an office, lab or home
 idlepool runs embarrassingly parallel jobs (renders, transcodes, OCR,
 parameter sweeps) on the machines of a lab while their owners are away:
 one binary for the coordinator, the worker and the command-line client.
 .
 Lend a machine: idlepool worker --join HOST:PORT --token-file FILE --install-service
 (systemd units idlepool-worker and idlepool-coordinator, user idlepool,
 data in /var/lib/idlepool, configuration in /etc/idlepool).
EOF
mkdir -p "$OUT"
deb=$OUT/idlepool_${VERSION}_$ARCH.deb
dpkg-deb --root-owner-group -Zxz --build "$PKG" "$deb" >/dev/null
echo "package.sh: $deb ($(du -h "$deb" | cut -f1), installed $((size_kb / 1024)) MB)"
echo "package.sh: Depends: $depends, passwd"

if [ "$DBGSYM" = 1 ]; then
  # The debug symbols, found by build id (gdb looks in /usr/lib/debug/.build-id/).
  id=$(readelf -n "$BINARY" | sed -n 's/.*Build ID: \([0-9a-f]*\).*/\1/p')
  [ -n "$id" ] || die "the binary has no build id: cannot make a -dbgsym package"
  DBG=$WORK/dbgsym
  install -d "$DBG/DEBIAN" "$DBG/usr/lib/debug/.build-id/${id:0:2}"
  objcopy --only-keep-debug --compress-debug-sections "$BINARY" \
    "$DBG/usr/lib/debug/.build-id/${id:0:2}/${id:2}.debug"
  chmod 0644 "$DBG/usr/lib/debug/.build-id/${id:0:2}/${id:2}.debug"
  cat >"$DBG/DEBIAN/control" <<EOF
Package: idlepool-dbgsym
Version: $VERSION
Architecture: $ARCH
Maintainer: idlepool developers <idlepool@localhost>
Installed-Size: $(du -sk --exclude=DEBIAN "$DBG" | cut -f1)
Depends: idlepool (= $VERSION)
Section: debug
Priority: optional
Description: debug symbols for idlepool
EOF
  dbg=$OUT/idlepool-dbgsym_${VERSION}_$ARCH.deb
  # Its sections are compressed already (zlib): xz would spend minutes for nothing.
  dpkg-deb --root-owner-group -Znone --build "$DBG" "$dbg" >/dev/null
  echo "package.sh: $dbg ($(du -h "$dbg" | cut -f1))"
fi

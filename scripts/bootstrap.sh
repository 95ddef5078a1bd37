#!/usr/bin/env bash
# Installs the Debian (bookworm) packages idlepool needs for a purpose:
#   scripts/bootstrap.sh run     what the binary needs at run time (the package's Depends)
#   scripts/bootstrap.sh build   plus compilers, CMake and the headers (scripts/build.sh,
#                                scripts/package.sh)
#   scripts/bootstrap.sh [test]  plus the test, demo and example tools (the default: used by
#                                scripts/test.sh and scripts/demo.sh)
# A lent machine needs none of this: it installs the package (docs/guide/install.md).
# Idempotent: packages already installed are skipped; says what it installs.
# Runs apt-get as root, or through sudo when not root.
set -euo pipefail

PURPOSE=${1:-test}
case $PURPOSE in
  run | build | test) ;;
  *) echo "bootstrap: unknown purpose '$PURPOSE': run, build or test" >&2; exit 2 ;;
esac

RUN_PACKAGES=(
  # the shared libraries build/idlepool links (what dpkg-shlibdeps puts in the package's Depends)
  libgrpc++1.51 libgrpc29 libprotobuf32 libabsl20220623 libsqlite3-0 libspdlog1.10 libfmt9
  libssl3 libsystemd0 libtomlplusplus3 libcpp-httplib0.11 libstdc++6 libgcc-s1 libc6
)

BUILD_PACKAGES=(
  # build
  g++ cmake ninja-build pkg-config git
  # libraries
  libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler
  libsqlite3-dev libtomlplusplus-dev libcli11-dev libspdlog-dev libfmt-dev
  nlohmann-json3-dev libssl-dev libsystemd-dev libcpp-httplib-dev
  libboost-dev  # Boost.Beast/Asio (header-only): asynchronous HTTP, e.g. the fake inference engine
  # scripts/package.sh: dpkg-shlibdeps (dpkg-dev), strip and objcopy (binutils)
  dpkg-dev binutils
)

TEST_PACKAGES=(
  dbus-daemon  # a private system bus for the logind tests
  # scripts/package-check.sh: a pristine bookworm root
  debootstrap
  # tests and benchmarks
  libgtest-dev libgmock-dev libbenchmark-dev parallel procps jq sqlite3 curl
  # trust tests: a stand-in TLS server (openssl s_server), a loopback capture (tcpdump)
  openssl tcpdump
  # hostile-load tests (issue 21): connection floods (python3), a descriptor limit (prlimit)
  python3 util-linux
  keyutils  # keyctl: a task cannot read the keyring of the session its worker was started in
  clang-format  # format_check_test: the lines a commit changes are clang-formatted
  # the fuzzers (tests/fuzz/run.sh): clang, and its runtimes for libFuzzer and the sanitizers
  clang libclang-rt-dev
  prometheus  # promtool checks the coordinator's /metrics
  # xmllint: the job timeline SVG is checked to be well-formed XML
  libxml2-utils
  # the dashboard's browser test: headless Chromium driven by playwright-core (npm)
  chromium
  # the demo's real input and tools
  povray povray-examples ffmpeg
  # the Blender example (examples/blender, integration.blender_test): Cycles on the CPU, headless
  blender
  # the OCR example (examples/ocr): pages rendered with groff + ghostscript, read by tesseract
  groff-base ghostscript tesseract-ocr tesseract-ocr-eng
  # GPUs: OpenCL headers and ICD loader (discovery, the OpenCL example), PoCL's CPU device to
  # test them without a GPU, clinfo to compare. NVML comes with the NVIDIA driver, when there is one.
  opencl-c-headers ocl-icd-opencl-dev ocl-icd-libopencl1 pocl-opencl-icd clinfo
)

# node and npm run the browser test; a machine that already has them (e.g. from NodeSource, whose
# nodejs bundles npm and conflicts with Debian's npm package) keeps its own.
if [ "$PURPOSE" = test ] && { ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; }; then
  TEST_PACKAGES+=(nodejs npm)
fi

PACKAGES=("${RUN_PACKAGES[@]}")
[ "$PURPOSE" = run ] || PACKAGES+=("${BUILD_PACKAGES[@]}")
[ "$PURPOSE" != test ] || PACKAGES+=("${TEST_PACKAGES[@]}")

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "bootstrap ($PURPOSE): all ${#PACKAGES[@]} packages already installed"
  exit 0
fi

SUDO=()
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1; then SUDO=(sudo); else
    echo "bootstrap: need root or sudo to install: ${missing[*]}" >&2; exit 1
  fi
fi

echo "bootstrap ($PURPOSE): installing ${#missing[@]} Debian packages: ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
"${SUDO[@]}" apt-get update -qq
"${SUDO[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
echo "bootstrap: done"

#!/usr/bin/env bash
# Installs what volley needs from Debian's packages (only what is missing)
# and builds it into build/. Run from anywhere, as root or with sudo.
set -euo pipefail
cd "$(dirname "$0")/.."

PACKAGES=(build-essential cmake pkg-config libzmq3-dev libczmq-dev libprotobuf-c-dev
          protobuf-c-compiler liblz4-dev procps iproute2 clang libclang-rt-14-dev
          docker-compose # tests/compose_test.sh checks compose/docker/ with it (no engine needed)
          python3-zmq python3-protobuf python3-lz4 protobuf-compiler # tests/contract_test.sh
          python3-numpy python3-pytest # the Python package, bindings/python (`import volley`)
          python3-torch # bindings/python/examples: PyTorch learners on volley's core
          python3-matplotlib) # volley plot: learning curves to PNG/SVG

missing=()
for p in "${PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
    echo "setup: installing ${missing[*]}"
    SUDO=""
    [ "$(id -u)" -eq 0 ] || SUDO=sudo
    $SUDO apt-get update -q
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
fi

# CI (CI=true) builds with warnings as errors; a user's build never fails on a warning.
WERROR=OFF
[ "${CI:-}" = true ] && WERROR=ON
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo -DVL_WERROR=$WERROR > /dev/null
cmake --build build -j"$(nproc)"
echo "setup: built build/volley"

# `import volley` from anywhere with Debian's /usr/bin/python3: a volley.pth in its first site
# directory names this checkout's bindings/python (the package then loads build/libvolley.so).
SITE=$(/usr/bin/python3 -c 'import site; print(site.getsitepackages()[0])')
PTH="$SITE/volley.pth"
BINDINGS="$(pwd -P)/bindings/python"
if [ "$(cat "$PTH" 2>/dev/null)" = "$BINDINGS" ]; then
    echo "setup: $PTH already points at $BINDINGS"
else
    SUDO=""
    [ "$(id -u)" -eq 0 ] || SUDO=sudo
    $SUDO mkdir -p "$SITE"
    echo "$BINDINGS" | $SUDO tee "$PTH" > /dev/null
    echo "setup: wrote $PTH -> $BINDINGS (import volley)"
fi

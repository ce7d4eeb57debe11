#!/usr/bin/env bash
# Installs what volley needs from Debian's packages (only what is missing)
# and builds it into build/. Run from anywhere, as root or with sudo.
set -euo pipefail
cd "$(dirname "$0")/.."

PACKAGES=(build-essential cmake pkg-config libzmq3-dev libczmq-dev libprotobuf-c-dev
          protobuf-c-compiler liblz4-dev procps iproute2 clang libclang-rt-14-dev
          docker-compose # tests/compose_test.sh checks compose/docker/ with it (no engine needed)
          python3-zmq python3-protobuf python3-lz4 protobuf-compiler) # tests/contract_test.sh

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

cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo > /dev/null
cmake --build build -j"$(nproc)"
echo "setup: built build/volley"

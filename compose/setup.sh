#!/usr/bin/env bash
# Installs what volley needs from Debian's packages (only what is missing)
# and builds it into build/. Run from anywhere, as root or with sudo.
set -euo pipefail
cd "$(dirname "$0")/.."

PACKAGES=(build-essential cmake pkg-config libzmq3-dev libczmq-dev libprotobuf-c-dev
          protobuf-c-compiler liblz4-dev procps iproute2 clang libclang-rt-14-dev
          curl ca-certificates # tests/ocean_test.sh fetches PufferLib's sdist from PyPI
          docker-compose # tests/compose_test.sh checks compose/docker/ with it (no engine needed)
          python3-zmq python3-protobuf python3-lz4 protobuf-compiler # tests/contract_test.sh
          python3-numpy python3-pytest # the Python package, bindings/python (`import volley`)
          python3-venv python3-pip python3-setuptools python3-wheel # .venv: the package installed
          python3-torch # bindings/python/examples: PyTorch learners on volley's core
          python3-matplotlib # volley plot: learning curves to PNG/SVG
          libdnnl-dev) # oneDNN: the model engine's kernels (chosen over OpenBLAS by measurement)

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

# The Python package goes into a virtual environment inside this checkout, .venv (it sees
# Debian's numpy, torch and matplotlib), installed editable: .venv/bin/python imports this
# checkout's bindings/python, which loads build/libvolley.so. Nothing outside the checkout
# changes, so another clone's setup never redirects this one's `import volley`. Gymnasium, mypy,
# TensorBoard and kubernetes-validate come from PyPI for the tests (the package itself needs
# none of them). The
# editable install is a path in .venv's site directory (editable_mode=compat), which comes
# before any volley.pth of another checkout in the system's.
PY=.venv/bin/python
BINDINGS="$(pwd -P)/bindings/python"
[ -x "$PY" ] || /usr/bin/python3 -m venv --system-site-packages .venv
if "$PY" -c '
import importlib.util as u, sys
spec = u.find_spec("volley")
assert spec and spec.origin.startswith(sys.argv[1] + "/")
assert u.find_spec("gymnasium") and u.find_spec("tensorboard")
assert u.find_spec("kubernetes_validate") and u.find_spec("mypy")' "$BINDINGS" 2>/dev/null; then
    echo "setup: .venv has volley (editable, $BINDINGS), gymnasium, tensorboard, kubernetes-validate and mypy"
else
    "$PY" -m pip install -q --no-build-isolation --config-settings editable_mode=compat \
        -e "bindings/python[test]"
    echo "setup: installed bindings/python (editable), gymnasium, tensorboard, kubernetes-validate and mypy into .venv"
fi

# An earlier setup wrote volley.pth into the system python's site directory; remove it when it
# names this checkout (another checkout's is not ours to touch).
SITE=$(/usr/bin/python3 -c 'import site; print(site.getsitepackages()[0])')
if [ "$(cat "$SITE/volley.pth" 2>/dev/null)" = "$BINDINGS" ]; then
    SUDO=""
    [ "$(id -u)" -eq 0 ] || SUDO=sudo
    $SUDO rm -f "$SITE/volley.pth"
    echo "setup: removed $SITE/volley.pth (it named this checkout; use .venv/bin/python)"
fi

# CI (CI=true) builds with warnings as errors; a user's build never fails on a warning.
WERROR=OFF
[ "${CI:-}" = true ] && WERROR=ON
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo -DVL_WERROR=$WERROR > /dev/null
cmake --build build -j"$(nproc)"
echo "setup: built build/volley"

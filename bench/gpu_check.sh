#!/usr/bin/env bash
# gpu_check: volley's PyTorch engine on a machine with an NVIDIA GPU, PyTorch 2.x, Python 3.12,
# a C compiler and CMake, but no package registry and no network. Two phases:
#
#   bash bench/gpu_check.sh --prepare
#       where Debian 12's registry and PyPI answer: downloads into .gpu/ (ignored) the .debs that
#       build and run libvolley and build-gpu/volley there (bench/gpu_check_debs.py lists them)
#       and numpy and pytest wheels for CPython 3.12, prints the size carried, and fails over 55 MiB.
#   bash bench/gpu_check.sh [--device cuda|cpu] [--quick] [--solve-seconds S] [--steps LIST]
#                           [--stream-seconds S]
#       there (or here, to rehearse with --device cpu): unpacks the .debs into a prefix under
#       /tmp (never into /), builds libvolley and volley against that prefix alone into
#       build-gpu/, and runs the checks, each printing PASS or FAIL and its figures:
#         build   the dependencies came from the prefix (CMake's cache, the headers compiled,
#                 ldd of what was built)
#         agree   the torch engine against the C engine after one update on the device, for
#                 mlp, cnn, lstm, a box and a multi-discrete space (max relative errors), and
#                 the Python package's own agreement tests
#         bench   bench/torch_engine_bench.py on the device: the engine's whole step beside a
#                 plain PyTorch loop (cnn 4x84x84 u8 samples/s and the ratio among them), and
#                 the bytes and time host->device per batch (u8, u2 72x80, float32)
#         stream  bench/stream_bench.py on the device: the torch learner at its defaults fed
#                 Game-Boy-shaped screens (1x72x80, u2 and u8, the cnn) through the broker by
#                 feeders as fast as it trains, beside the plain loop on the same batch
#                 (samples/s and their ratio, target >= 0.7); then Python actors
#                 (`python3 -m volley actor --env volley.envs.screens:make_env`) over the
#                 machine's cores with the same learner: env steps/s arrived, samples/s
#                 trained, the share dropped, GPU utilisation, the update's time beside the
#                 plain loop's
#         lstm    bench/torch_lstm_bench.py --forward-seq on the device: linear(256) lstm(256)
#                 forward and backward, the step loop beside the sequence kernel
#         solve   catch-pixels solved by C actors through build-gpu/volley broker, with the
#                 torch learner on the device at its defaults, beside the C learner, same
#                 actors, same machine
#       (--steps names which of agree, bench, stream, lstm, solve run; all by default),
#       then a summary; the exit code is 1 when a step failed. The whole runs in under
#       10 minutes on 16 cores and one GPU (--solve-seconds bounds each solve, 150 s).
#
# Environment: PYTHON (python3), GPU_CHECK_PREFIX (/tmp/volley-gpu-prefix), GPU_CHECK_BUILD
# (build-gpu, under the checkout).
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
GPU=$ROOT/.gpu
PY=${PYTHON:-python3}
P=${GPU_CHECK_PREFIX:-/tmp/volley-gpu-prefix}
B=$ROOT/${GPU_CHECK_BUILD:-build-gpu}
MODE=check DEVICE=cuda QUICK=0 SOLVE_S=150 STEPS=agree,bench,stream,lstm,solve
STREAM_S=40
LIMIT_MIB=55

usage() { sed -n '2,/^set -u/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit "${1:-2}"; }
while [ $# -gt 0 ]; do
    case $1 in
    --prepare) MODE=prepare ;;
    --device) DEVICE=${2:?--device cuda|cpu}; shift ;;
    --quick) QUICK=1 ;;
    --solve-seconds) SOLVE_S=${2:?--solve-seconds S}; shift ;;
    --steps) STEPS=${2:?--steps agree,bench,stream,lstm,solve}; shift ;;
    --stream-seconds) STREAM_S=${2:?--stream-seconds S}; shift ;;
    -h | --help) usage 0 ;;
    *) echo "gpu_check: unknown argument $1" >&2; usage ;;
    esac
    shift
done

# ---- --prepare: here, with the registries ----

prepare() {
    local list main base
    mkdir -p "$GPU/debs/main" "$GPU/debs/base" "$GPU/wheels" || return 1
    list=$("$PY" "$ROOT/bench/gpu_check_debs.py") || { echo "FAIL prepare: apt-cache"; return 1; }
    main=$(awk '$1 == "main" {print $2}' <<<"$list")
    base=$(awk '$1 == "base" {print $2}' <<<"$list")
    rm -f "$GPU"/debs/main/*.deb "$GPU"/debs/base/*.deb
    (cd "$GPU/debs/main" && apt-get download -q $main) || { echo "FAIL prepare: apt-get download"; return 1; }
    (cd "$GPU/debs/base" && apt-get download -q $base) || { echo "FAIL prepare: apt-get download"; return 1; }
    rm -f "$GPU"/wheels/*.whl
    "$PY" -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 \
        --implementation cp --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
        --platform manylinux_2_27_x86_64 --platform manylinux_2_28_x86_64 -d "$GPU/wheels" \
        "numpy>=1.26,<3" || { echo "FAIL prepare: pip download numpy"; return 1; }
    "$PY" -m pip download -q --only-binary=:all: --python-version 3.12 -d "$GPU/wheels" pytest ||
        { echo "FAIL prepare: pip download pytest"; return 1; }
    echo "debs: $(ls "$GPU"/debs/main | wc -l) main, $(ls "$GPU"/debs/base | wc -l) base;" \
         "wheels: $(ls "$GPU"/wheels)"
    # The newest glibc symbol version the carried libraries ask for: the machine needs it.
    local t; t=$(mktemp -d)
    for d in "$GPU"/debs/main/*.deb; do dpkg -x "$d" "$t"; done
    echo "glibc needed: $(find "$t" -name '*.so*' -type f -exec objdump -T {} + 2>/dev/null |
        grep -o 'GLIBC_2\.[0-9]*' | sort -uV | tail -1)"
    rm -rf "$t"
    local bytes; bytes=$(du -sb "$GPU" | cut -f1)
    echo "carried: $((bytes / 1048576)) MiB in .gpu ($bytes bytes; limit $LIMIT_MIB MiB)"
    [ "$bytes" -le $((LIMIT_MIB * 1048576)) ] || { echo "FAIL prepare: over $LIMIT_MIB MiB"; return 1; }
    echo "PASS prepare"
}

if [ "$MODE" = prepare ]; then
    prepare
    exit
fi

# ---- the check: there, or here with --device cpu ----

FAILED=() PASSED=() FIGURES=()
pass() { echo "PASS $1"; PASSED+=("$1"); }
fail() { echo "FAIL $1: $2"; FAILED+=("$1"); }
figure() { echo "  $1"; FIGURES+=("$1"); }
T0=$(date +%s)

summary() {
    echo
    echo "==== gpu_check summary ($DEVICE, $(($(date +%s) - T0)) s) ===="
    for f in "${FIGURES[@]}"; do echo "  $f"; done
    echo "passed: ${PASSED[*]:-none}"
    echo "failed: ${FAILED[*]:-none}"
    [ ${#FAILED[@]} -eq 0 ]
}

machine() {
    echo "== machine"
    grep -h PRETTY_NAME /etc/os-release 2>/dev/null
    echo "glibc $(getconf GNU_LIBC_VERSION 2>/dev/null); $(nproc) cores; $($PY --version 2>&1)"
    command -v nvidia-smi >/dev/null && nvidia-smi -L
    cmake --version | head -1
}

# Unpacks each .deb (dpkg -x, or ar and tar where dpkg is absent) into dir.
unpack() {
    local dir=$1 d; shift
    mkdir -p "$dir"
    for d in "$@"; do
        if command -v dpkg >/dev/null; then
            dpkg -x "$d" "$dir" || return 1
        else
            (cd "$dir" && ar p "$d" "$(ar t "$d" | grep '^data\.tar')" | tar -x -a -f - 2>/dev/null ||
                ar p "$d" "$(ar t "$d" | grep '^data\.tar')" | tar -x -J -f -) || return 1
        fi
    done
}

# The prefix: the main .debs unpacked, their .pc files pointed at it, and of the base libraries
# only the sonames this machine lacks linked into $P/missing.
make_prefix() {
    echo "== prefix $P"
    ls "$GPU"/debs/main/*.deb >/dev/null 2>&1 || { fail prefix "no .gpu/debs (run --prepare first)"; return 1; }
    rm -rf "$P"
    unpack "$P" "$GPU"/debs/main/*.deb && unpack "$P/base" "$GPU"/debs/base/*.deb ||
        { fail prefix "unpacking"; return 1; }
    local f
    for f in $(find "$P/usr" -name '*.pc'); do
        sed -i -E "s#(^|[=[:space:]])/usr(/|$|[[:space:]])#\1$P/usr\2#g" "$f"
    done
    mkdir -p "$P/missing"
    export LD_LIBRARY_PATH=$P/usr/lib/x86_64-linux-gnu:$P/lib/x86_64-linux-gnu:$P/missing${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
    local round so src
    for round in 1 2 3; do
        for so in $(find "$P/usr/lib" "$P/usr/bin" "$P/missing" -type f \( -name '*.so*' -o -perm -u+x \) \
                        -exec ldd {} + 2>/dev/null | awk '/not found/ {print $1}' | sort -u); do
            src=$(find "$P/base" -name "$so" | head -1)
            if [ -n "$src" ]; then
                ln -sf "$src" "$P/missing/$so"
                echo "  this machine lacks $so: the carried one is used"
            else
                echo "  this machine lacks $so and none was carried"
            fi
        done
    done
    export PKG_CONFIG_LIBDIR=$P/usr/lib/x86_64-linux-gnu/pkgconfig:$P/usr/lib/pkgconfig:$P/usr/share/pkgconfig
    unset PKG_CONFIG_PATH PKG_CONFIG_SYSROOT_DIR
    local pc=$P/usr/bin/pkgconf
    "$pc" --cflags --libs libzmq libczmq libprotobuf-c liblz4 >/dev/null ||
        { fail prefix "the prefix's pkg-config cannot resolve volley's modules"; return 1; }
    "$P/usr/bin/protoc-c" --version >/dev/null 2>&1 || { fail prefix "protoc-c does not run"; return 1; }
    pass prefix
}

build() {
    echo "== build $B"
    rm -rf "$B"
    cmake -S "$ROOT" -B "$B" -DCMAKE_PREFIX_PATH="$P/usr" -DPKG_CONFIG_EXECUTABLE="$P/usr/bin/pkgconf" \
        -DCMAKE_EXE_LINKER_FLAGS="-Wl,-rpath-link,$P/usr/lib/x86_64-linux-gnu" \
        -DCMAKE_SHARED_LINKER_FLAGS="-Wl,-rpath-link,$P/usr/lib/x86_64-linux-gnu" >"$GPU/build.log" 2>&1 &&
        cmake --build "$B" -j"$(nproc)" --target volley volley_shared >>"$GPU/build.log" 2>&1 ||
        { tail -30 "$GPU/build.log"; fail build "cmake (log: $GPU/build.log)"; return 1; }
    # Every dependency CMake found is the prefix's.
    local bad
    bad=$(grep -E '^(VL_DNNL_INCLUDE|VL_DNNL_LIB|PROTOC_C|PKG_CONFIG_EXECUTABLE|pkgcfg_lib_[A-Z0-9]+_[a-z0-9_]+):' \
        "$B/CMakeCache.txt" | grep -v "=$P/")
    [ -z "$bad" ] || { echo "$bad"; fail build "found outside the prefix"; return 1; }
    # The headers compiled were the prefix's (the dependency files CMake keeps).
    local deps; deps=$(find "$B" -name 'compiler_depend.make' -o -name '*.o.d' | head -2000)
    bad=$(cat $deps 2>/dev/null | grep -oE '(^|[ :])/usr/include/(zmq|czmq|lz4|protobuf-c|oneapi|dnnl)[^ :]*' | sort -u | head)
    [ -z "$bad" ] || { echo "$bad"; fail build "system headers compiled"; return 1; }
    cat $deps 2>/dev/null | grep -q "$P/usr/include/zmq.h" || { fail build "zmq.h not seen in the prefix"; return 1; }
    # What was built runs: every library resolves, the ones the prefix holds from it.
    local l
    l=$(ldd "$B/libvolley.so" "$B/volley")
    if grep -q 'not found' <<<"$l"; then grep 'not found' <<<"$l"; fail build "ldd: missing libraries"; return 1; fi
    figure "build: $(grep -c "$P" <<<"$l") libraries from the prefix; $(grep -oE 'lib(zmq|czmq|dnnl|lz4|protobuf-c)\.so[^ ]* => [^ ]*' <<<"$l" | sort -u | sed "s#$P#\$P#" | tr '\n' ' ')"
    "$B/volley" --version >/dev/null 2>&1 || "$B/volley" --help >/dev/null 2>&1 || { fail build "volley does not run"; return 1; }
    pass build
}

python_env() {
    echo "== python"
    export VOLLEY_LIB=$B/libvolley.so PYTHONPATH=$ROOT/bindings/python${PYTHONPATH:+:$PYTHONPATH}
    if ! "$PY" -c "import numpy" 2>/dev/null; then
        "$PY" -m pip install -q --no-index --no-deps --target /tmp/volley-gpu-site "$GPU"/wheels/numpy-*.whl ||
            { fail python "numpy missing, and its wheel would not install"; return 1; }
        export PYTHONPATH=$PYTHONPATH:/tmp/volley-gpu-site
    fi
    if ! "$PY" -c "import pytest" 2>/dev/null; then
        "$PY" -m pip install -q --no-index --find-links "$GPU/wheels" --target /tmp/volley-gpu-site-pytest pytest ||
            { fail python "pytest missing, and its wheels would not install"; return 1; }
        export PYTHONPATH=$PYTHONPATH:/tmp/volley-gpu-site-pytest
    fi
    "$PY" -c "
import numpy, torch, volley, volley._lib as L
print('numpy', numpy.__version__, 'torch', torch.__version__, 'cuda', torch.cuda.is_available(),
      torch.cuda.get_device_name(0) if torch.cuda.is_available() else '')
print('libvolley', L.lib._name)" || { fail python "import volley / torch"; return 1; }
    if [ "$DEVICE" = cuda ]; then
        "$PY" -c "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)" ||
            { fail python "torch sees no GPU"; return 1; }
    fi
    pass python
}

agree() {
    echo "== agree (torch engine against the C engine, $DEVICE)"
    local out rc tests
    out=$("$PY" "$ROOT/bench/torch_engine_bench.py" --agree --device "$DEVICE" 2>&1); rc=$?
    echo "$out"
    while read -r line; do FIGURES+=("$line"); done < <(grep '^agree ' <<<"$out")
    [ $rc -eq 0 ] || { fail agree "torch_engine_bench.py --agree exit $rc"; return 1; }
    tests=$(ls "$ROOT"/bindings/python/tests/test_torch_engine*.py 2>/dev/null)
    if [ -n "$tests" ]; then
        VOLLEY_TORCH_DEVICE=$DEVICE VOLLEY_BIN=$B/volley "$PY" -m pytest -q -x $tests 2>&1 | tail -5
        [ "${PIPESTATUS[0]}" -eq 0 ] || { fail agree "pytest $(basename -a $tests | tr '\n' ' ')"; return 1; }
    else
        echo "  (no bindings/python/tests/test_torch_engine*.py to run)"
    fi
    pass agree
}

bench() {
    echo "== bench (bench/torch_engine_bench.py, $DEVICE)"
    local out rc q=""; [ "$QUICK" = 1 ] && q=--quick
    out=$("$PY" "$ROOT/bench/torch_engine_bench.py" --device "$DEVICE" $q 2>&1); rc=$?
    echo "$out"
    while read -r line; do FIGURES+=("$line"); done < <(grep -E '^(step|h2d|overhead)' <<<"$out")
    [ $rc -eq 0 ] || { fail bench "torch_engine_bench.py exit $rc"; return 1; }
    pass bench
}

stream() {
    echo "== stream (bench/stream_bench.py, $DEVICE; $STREAM_S s a run)"
    local out rc warm=$(( STREAM_S / 4 )) sources=$(( $(nproc) - 2 )) rest=""
    [ $sources -lt 1 ] && sources=1
    [ "$QUICK" = 1 ] && rest="--quick"
    out=$(VOLLEY_BIN=$B/volley "$PY" "$ROOT/bench/stream_bench.py" --device "$DEVICE" \
        --sources 7 --envs 32 --seconds "$STREAM_S" --warmup $warm --encodings u2,u8 $rest 2>&1); rc=$?
    echo "$out"
    while read -r line; do FIGURES+=("$line"); done < <(grep -E '^stream (u2|u8|worst)' <<<"$out")
    [ $rc -eq 0 ] || { fail stream "stream_bench.py (feeders) exit $rc"; return 1; }
    out=$(VOLLEY_BIN=$B/volley "$PY" "$ROOT/bench/stream_bench.py" --device "$DEVICE" \
        --source actors --sources $sources --seconds "$STREAM_S" --warmup $warm --encodings u2 \
        $rest 2>&1); rc=$?
    echo "$out"
    while read -r line; do FIGURES+=("actors: $line"); done < <(grep -E '^stream u2' <<<"$out")
    [ $rc -eq 0 ] || { fail stream "stream_bench.py (actors) exit $rc"; return 1; }
    pass stream
}

lstm() {
    echo "== lstm (bench/torch_lstm_bench.py --forward-seq, $DEVICE)"
    local out rc
    out=$("$PY" "$ROOT/bench/torch_lstm_bench.py" --forward-seq --device "$DEVICE" 2>&1); rc=$?
    echo "$out"
    while read -r line; do FIGURES+=("lstm: $line"); done < <(grep -E '^forward_seq' <<<"$out")
    [ $rc -eq 0 ] || { fail lstm "torch_lstm_bench.py exit $rc"; return 1; }
    pass lstm
}

# A free base port for the broker (it takes it and the 4 after it).
free_port() {
    "$PY" -c "
import socket, random
for _ in range(200):
    p = random.randrange(20000, 40000, 5)
    try:
        ss = [socket.socket() for _ in range(5)]
        [s.bind(('127.0.0.1', p + i)) for i, s in enumerate(ss)]
        print(p); break
    except OSError: pass
    finally: [s.close() for s in ss]"
}

# solve_one NAME LEARNER...: broker, the learner, the actors; waits until the learner's
# metrics show catch-pixels solved (a mean return >= 9 over 100 episodes) or SOLVE_S pass.
# Prints the seconds and steps, or nothing.
solve_one() {
    local name=$1; shift
    local dir; dir=$(mktemp -d /tmp/volley-solve-$name.XXXX)
    local port; port=$(free_port)
    local actors=$(( $(nproc) / 2 )); [ $actors -lt 1 ] && actors=1
    local envs=8 batch=$(( actors * 8 ))
    local pids=()
    "$B/volley" broker --port "$port" --quiet >"$dir/broker.log" 2>&1 & pids+=($!)
    sleep 0.5
    "$@" --broker "127.0.0.1:$port" --env catch-pixels --batch $batch \
        --capacity $(( 8 * batch )) --metrics "$dir" --checkpoint "$dir/ckpt" --seed 1 \
        >"$dir/learner.log" 2>&1 & pids+=($!)
    local i
    for i in $(seq $actors); do
        "$B/volley" actor --broker "127.0.0.1:$port" --env catch-pixels --envs $envs --id "$i" \
            --seed 1 --quiet >"$dir/actor-$i.log" 2>&1 & pids+=($!)
    done
    local t0; t0=$(date +%s.%N)
    local got=""
    while :; do
        sleep 1
        got=$(tail -n 5 "$dir/metrics.jsonl" 2>/dev/null | "$PY" -c "
import json, sys
for line in sys.stdin:
    try: r = json.loads(line)
    except ValueError: continue
    if r.get('window', 0) >= 100 and (r.get('return_mean') or -1e9) >= 9:
        print(r['env_steps']); break")
        [ -n "$got" ] && break
        local now; now=$(date +%s.%N)
        "$PY" -c "import sys; sys.exit(0 if $now - $t0 < $SOLVE_S else 1)" || break
        kill -0 "${pids[1]}" 2>/dev/null || { echo "  $name: the learner exited:" >&2; tail -5 "$dir/learner.log" >&2; got=""; break; }
    done
    local secs; secs=$("$PY" -c "print(f'{$(date +%s.%N) - $t0:.1f}')")
    for i in $(seq $(( ${#pids[@]} - 1 )) -1 0); do kill "${pids[$i]}" 2>/dev/null; done
    wait 2>/dev/null
    echo "  $name: $actors actors x $envs envs, logs $dir" >&2
    [ -n "$got" ] && echo "$secs $got"
}

solve() {
    echo "== solve catch-pixels ($DEVICE learner beside the C learner; at most $SOLVE_S s each)"
    local threads=$(( $(nproc) - $(nproc) / 2 )); [ $threads -lt 1 ] && threads=1
    local c t ok=1
    c=$(solve_one c "$B/volley" learner --threads $threads)
    t=$(solve_one torch "$PY" -m volley learner --torch --device "$DEVICE" --threads $threads)
    if [ -n "$c" ]; then figure "solve: C learner $(cut -d' ' -f1 <<<"$c") s, $(cut -d' ' -f2 <<<"$c") steps"
    else figure "solve: C learner not solved in $SOLVE_S s"; ok=0; fi
    if [ -n "$t" ]; then figure "solve: torch learner ($DEVICE) $(cut -d' ' -f1 <<<"$t") s, $(cut -d' ' -f2 <<<"$t") steps"
    else figure "solve: torch learner ($DEVICE) not solved in $SOLVE_S s"; ok=0; fi
    [ $ok = 1 ] && pass solve || fail solve "catch-pixels not solved by both learners"
}

machine
wanted() { [[ ",$STEPS," == *",$1,"* ]]; }
make_prefix && build && python_env && {
    wanted agree && agree
    wanted bench && bench
    wanted stream && stream
    wanted lstm && lstm
    wanted solve && solve
}
summary

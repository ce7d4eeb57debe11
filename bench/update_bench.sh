#!/bin/sh
# update_bench.sh BUILD_DIR: one learner update (forward, backward, Adam) in
# samples/s, volley against PyTorch on CPU on the same MLP and minibatch,
# measured in one run. Target: volley >= 3x the better PyTorch figure.
#
# volley: BUILD_DIR/vl_update_bench (bench/vl_update_bench.c).
# PyTorch: bench/torch_update_bench.py, once on 1 thread and once on every
# core; each run gets its thread count in OMP_NUM_THREADS and
# OPENBLAS_NUM_THREADS too, as Debian's torch calls the system BLAS and
# OpenBLAS starts its own threads. Set PYTHON to choose the interpreter
# (default: the first of python3, /usr/bin/python3 that imports torch).
set -eu

if [ $# -ne 1 ]; then
    echo "usage: $0 BUILD_DIR" >&2
    exit 2
fi
bench="$1/vl_update_bench"
here=$(dirname "$0")
target=3

if [ ! -x "$bench" ]; then
    echo "update_bench: $bench not found; build the vl_update_bench target first" >&2
    exit 1
fi

python=
for p in ${PYTHON:-python3 /usr/bin/python3}; do
    if "$p" -c 'import torch' 2>/dev/null; then
        python=$p
        break
    fi
done
if [ -z "$python" ]; then
    echo "update_bench: PyTorch is missing. On Debian: apt-get install python3-torch" >&2
    echo "  (it installs for /usr/bin/python3; set PYTHON if yours is elsewhere)" >&2
    exit 1
fi

cores=$(nproc)
# Reads samples/s=<x> out of a bench's line.
samples() { sed -n 's/.*samples\/s=\([0-9.]*\).*/\1/p' | head -n 1; }

# Runs the torch bench for case $1 on $2 threads; prints its line.
torch_line() {
    OMP_NUM_THREADS=$2 OPENBLAS_NUM_THREADS=$2 MKL_NUM_THREADS=$2 \
        "$python" "$here/torch_update_bench.py" --case "$1" --threads "$2"
}

first=$(torch_line cartpole 1 | head -n 1)
blas=$(echo "$first" | sed -n 's/.* blas=\([^ ]*\).*/\1/p')
echo "volley: $bench"
echo "torch:  $("$python" -c 'import torch; print(torch.__version__)') via $python, BLAS $blas"
echo "cores:  $cores; load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
case "$blas" in
*openblas* | *mkl* | *blis*) ;;
*) echo "warning: torch runs on the reference BLAS, which flatters volley;" \
    "apt-get install libopenblas0-pthread for a fair figure" ;;
esac
echo
printf '%-14s %5s %14s %14s %14s %8s  %s\n' case M "volley/s" "torch 1t/s" \
    "torch ${cores}t/s" ratio "target >= ${target}x"

failed=0
for c in $("$bench" --list | cut -d' ' -f1); do
    m=$("$bench" --list | awk -v c="$c" '$1 == c { print $5 }')
    v=$("$bench" --case "$c" | samples)
    t1=$(torch_line "$c" 1 | samples)
    tn=$(torch_line "$c" "$cores" | samples)
    if [ -z "$v" ] || [ -z "$t1" ] || [ -z "$tn" ]; then
        echo "update_bench: $c: a bench failed" >&2
        failed=1
        continue
    fi
    awk -v c="$c" -v m="$m" -v v="$v" -v t1="$t1" -v tn="$tn" -v target="$target" 'BEGIN {
        best = t1 > tn ? t1 : tn
        ratio = v / best
        verdict = (ratio >= target) ? "met" : "missed"
        printf "%-14s %5d %14.0f %14.0f %14.0f %7.2fx  %s\n", c, m, v, t1, tn, ratio, verdict
    }'
done
echo
echo "samples/s = minibatch samples x updates/s, best of 5 runs of >= 0.2 s (wall clock);"
echo "ratio = volley / the better torch figure; load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
exit $failed

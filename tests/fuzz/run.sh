#!/usr/bin/env bash
# Builds volley's libFuzzer harnesses (one per wire decoder) with clang and
# runs each for N seconds on a copy of the committed corpus plus freshly
# encoded seeds. Prints the seed; a failure prints the crash input and how to
# replay it, and the script exits 1.
#
# usage: run.sh --build-dir DIR [--seconds N] [--only KIND] [--seed S]
#   DIR      a CMake build tree of volley (DIR/messages/volley.pb-c.c must exist)
#   N        seconds per fuzzer (default 8)
#   KIND     segment | weights | hello | stats | status | stream (default: all six)
#   S        libFuzzer's seed, 1..2147483646: ctest's smoke run passes a fixed
#            one so that it explores the same inputs every time; without it a
#            long run draws a random seed (and prints it)
# env: FUZZ_SEED=S replays a run's seed (as --seed); CLANG=path picks the compiler.
set -u

KINDS="segment weights hello stats status stream"

usage() {
  echo "usage: $0 --build-dir DIR [--seconds N] [--only KIND] [--seed S]" >&2
  exit 2
}

build_dir="" seconds=8 only="" seed=${FUZZ_SEED:-}
while [ $# -gt 0 ]; do
  case "$1" in
    --build-dir) build_dir=${2:-}; shift 2 || usage ;;
    --seconds) seconds=${2:-}; shift 2 || usage ;;
    --only) only=${2:-}; shift 2 || usage ;;
    --seed) seed=${2:-}; shift 2 || usage ;;
    -h|--help) usage ;;
    *) echo "run.sh: unknown argument '$1'" >&2; usage ;;
  esac
done
[ -n "$build_dir" ] || usage
case "$seconds" in ''|*[!0-9]*) echo "run.sh: --seconds wants a whole number" >&2; exit 2 ;; esac
[ "$seconds" -ge 1 ] || { echo "run.sh: --seconds wants at least 1" >&2; exit 2; }
case "$seed" in
  '') ;;
  *[!0-9]*) echo "run.sh: --seed wants a whole number 1..2147483646, not '$seed'" >&2; exit 2 ;;
  *) [ "${#seed}" -le 10 ] && [ "$seed" -ge 1 ] && [ "$seed" -le 2147483646 ] ||
       { echo "run.sh: --seed wants a whole number 1..2147483646, not '$seed'" >&2; exit 2; } ;;
esac
if [ -n "$only" ]; then
  case " $KINDS " in *" $only "*) KINDS=$only ;; *) echo "run.sh: --only wants one of: $KINDS" >&2; exit 2 ;; esac
fi

repo=$(cd "$(dirname "$0")/../.." && pwd)
build_dir=$(cd "$build_dir" 2>/dev/null && pwd) || { echo "run.sh: no build directory '$build_dir'" >&2; exit 1; }
gen=$build_dir/messages/volley.pb-c.c
if [ ! -f "$gen" ]; then
  echo "run.sh: $gen is missing: build the project first" >&2
  echo "        (cmake -S $repo -B $build_dir && cmake --build $build_dir --target vl_proto)" >&2
  exit 1
fi

out=$build_dir/fuzz
mkdir -p "$out"
cc=${CLANG:-clang}

# libFuzzer ships in compiler-rt, a separate package from clang on Debian
# and Ubuntu: check for it with a trivial harness, and name the package.
if ! command -v "$cc" >/dev/null 2>&1; then
  echo "run.sh: '$cc' not found: the fuzz harnesses need clang with libFuzzer" >&2
  echo "        (Debian/Ubuntu: apt-get install clang libclang-rt-dev)" >&2
  exit 1
fi
if ! "$cc" --version 2>/dev/null | grep -q clang; then
  echo "run.sh: '$cc' is not clang: libFuzzer needs clang (apt-get install clang libclang-rt-dev)" >&2
  exit 1
fi
major=$("$cc" -dumpversion 2>/dev/null | cut -d. -f1)
printf 'int LLVMFuzzerTestOneInput(const unsigned char *d, unsigned long n)\n{ (void)d; (void)n; return 0; }\n' \
  > "$out/probe.c"
if ! "$cc" -fsanitize=fuzzer,address,undefined "$out/probe.c" -o "$out/probe" > "$out/probe.log" 2>&1; then
  echo "run.sh: $cc cannot link with -fsanitize=fuzzer,address,undefined:" >&2
  sed 's/^/        /' "$out/probe.log" | head -5 >&2
  echo "        install libFuzzer's runtime: apt-get install libclang-rt-${major:-NN}-dev" >&2
  exit 1
fi

# The library is compiled once with coverage (fuzzer-no-link), then linked
# into each harness; the same flags as one clang line per harness.
cflags="-std=c11 -D_GNU_SOURCE -g -O1 -fno-sanitize-recover=all -I$repo -I$build_dir/messages"
libs="-lprotobuf-c -llz4 -lm -lpthread"
srcs="$repo/messages/vl_wire.c $repo/messages/vl_obs.c $repo/messages/vl_action.c $repo/messages/vl_segment.c $repo/messages/vl_figures.c
      $repo/messages/vl_weights.c $repo/messages/vl_control.c $repo/messages/vl_status.c
      $repo/messages/vl_stream.c $repo/messages/vl_spec.c $repo/common/vl_log.c $repo/common/vl_policy_id.c $repo/common/vl_crc32c.c $repo/common/vl_fs.c
      $repo/broker/vl_inspect.c $gen"
mkdir -p "$out/obj"
objs=
build_start=$(date +%s)
for src in $srcs; do
  obj=$out/obj/$(basename "$src" .c).o
  objs="$objs $obj"
  # shellcheck disable=SC2086
  "$cc" $cflags -fsanitize=fuzzer-no-link,address,undefined -c "$src" -o "$obj" \
    > "$obj.log" 2>&1 || { echo "run.sh: cannot compile $src:" >&2; cat "$obj.log" >&2; exit 1; }
done
for kind in $KINDS; do
  # shellcheck disable=SC2086
  "$cc" $cflags -Wall -Wextra -fsanitize=fuzzer,address,undefined "$repo/tests/fuzz/fuzz_$kind.c" \
    $objs $libs -o "$out/fuzz_$kind" > "$out/fuzz_$kind.build.log" 2>&1 ||
    { echo "run.sh: cannot build fuzz_$kind:" >&2; cat "$out/fuzz_$kind.build.log" >&2; exit 1; }
done
# shellcheck disable=SC2086
"$cc" $cflags -fsanitize=address,undefined "$repo/tests/fuzz/make_corpus.c" $objs $libs \
  -o "$out/make_corpus" > "$out/make_corpus.build.log" 2>&1 ||
  { echo "run.sh: cannot build make_corpus:" >&2; cat "$out/make_corpus.build.log" >&2; exit 1; }
echo "fuzz: built in $(( $(date +%s) - build_start )) s into $out"

# Working corpus: the committed seeds, plus seeds the current encoders make
# (so a change of the wire is fuzzed from valid messages at once). libFuzzer
# adds what it finds here, never to the repository.
work=$out/corpus-work
rm -rf "$work"
mkdir -p "$work"
"$out/make_corpus" "$work/fresh" > "$out/make_corpus.log" 2>&1 ||
  { echo "run.sh: make_corpus failed (a seed the encoders made does not decode); log $out/make_corpus.log:" >&2
    grep -v '^  ' "$out/make_corpus.log" | head -12 >&2; exit 1; }

how=fixed
if [ -z "$seed" ]; then
  seed=$(( $(od -An -N4 -tu4 /dev/urandom | tr -d ' ') % 2147483646 + 1 ))
  how=random
fi
echo "fuzz: seed $seed ($how), $seconds s per fuzzer (replay with --seed $seed)"

failed=0
for kind in $KINDS; do
  mkdir -p "$work/$kind" "$out/crashes/$kind"
  if [ -d "$repo/tests/fuzz/corpus/$kind" ]; then
    cp "$repo/tests/fuzz/corpus/$kind/"* "$work/$kind/" 2>/dev/null
  fi
  cp "$work/fresh/$kind/"* "$work/$kind/"
  log=$out/fuzz_$kind.log
  start=$(date +%s.%N)
  "$out/fuzz_$kind" -max_total_time="$seconds" -seed="$seed" -print_final_stats=1 -timeout=10 \
    -rss_limit_mb=2048 -artifact_prefix="$out/crashes/$kind/" "$work/$kind" > "$log" 2>&1
  rc=$?
  secs=$(echo "$start $(date +%s.%N)" | awk '{ printf "%.1f", $2 - $1 }')
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  # libFuzzer also writes slow-unit-* for an input that took 10 s or more,
  # and exits 0: on a loaded machine a stall does that to any input, so it
  # is named, not counted (-timeout=10 fails a truly slow input).
  written=$(sed -n 's/.*Test unit written to \(.*\)$/\1/p' "$log")
  crash=$(printf '%s\n' "$written" | grep -v '/slow-unit-' | tail -1)
  slow=$(printf '%s\n' "$written" | grep '/slow-unit-' | tail -1)
  crashes=0
  [ -n "$crash" ] && crashes=1
  echo "fuzz $kind: ${runs:-0} runs in $secs s, $crashes crashes"
  [ -n "$slow" ] && echo "fuzz $kind: note: one input took 10 s or more (a stall?); time it: $out/fuzz_$kind $slow"
  if [ "$rc" -ne 0 ] || [ "$crashes" -ne 0 ]; then
    failed=1
    echo "fuzz $kind: FAILED (exit $rc) with seed $seed; log $log" >&2
    # The broken invariant or sanitizer report, and the frames in volley's code.
    grep -E "invariant failed|runtime error|ERROR: |SUMMARY|^ *#[0-9]+ .* in .* $repo/" "$log" |
      head -12 | sed 's/^/    /' >&2
    if [ -n "$crash" ]; then
      echo "fuzz $kind: crash input $crash" >&2
      echo "fuzz $kind: replay with $out/fuzz_$kind $crash" >&2
    fi
  fi
done
exit $failed

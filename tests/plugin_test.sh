#!/usr/bin/env bash
# An environment plugin built outside the tree, as docs/envs.md says: install
# volley into a temporary prefix, compile envs/plugins/corridor.c against
# nothing but `pkg-config --cflags volley`, and let the installed volley
# (which holds libvolley's objects) train it until solved.
. "$(dirname "$0")/lib.sh"

SRC=$(cd "$(dirname "$0")/.." && pwd)
BUILD=$(dirname "$VOLLEY")
PREFIX=$TMP/prefix
want=$(sed -n 's/^CMAKE_PROJECT_VERSION:STATIC=//p' "$BUILD/CMakeCache.txt")
[ -n "$want" ] || fail "no CMAKE_PROJECT_VERSION in $BUILD/CMakeCache.txt"

cmake --install "$BUILD" --prefix "$PREFIX" > "$TMP/install.log" 2>&1 || fail "cmake --install: $(tail -3 "$TMP/install.log")"
for f in bin/volley lib/libvolley.so lib/libvolley.so.0 "lib/libvolley.so.$want" lib/libvolley.a \
         include/volley/env.h include/volley/volley.h lib/pkgconfig/volley.pc; do
    [ -e "$PREFIX/$f" ] || fail "cmake --install left no $f: $(find "$PREFIX" | sort | tr '\n' ' ')"
done
pass "cmake --install: volley, libvolley.so.$want (+ links), libvolley.a, the headers, volley.pc"

# Every public header of the tree is installed and compiles on its own from the prefix.
n=0
for h in "$SRC"/include/volley/*.h "$SRC"/include/volley/*.h.in; do
    [ -e "$h" ] || continue
    name=$(basename "$h" .in)
    [ -e "$PREFIX/include/volley/$name" ] || fail "cmake --install left out include/volley/$name"
    printf '#include <volley/%s>\n' "$name" > "$TMP/hdr.c"
    cc -std=c11 -Wall -Werror -fsyntax-only -I"$PREFIX/include" "$TMP/hdr.c" 2> "$TMP/hdr.log" ||
        fail "installed volley/$name does not compile alone: $(head -3 "$TMP/hdr.log")"
    n=$((n + 1))
done
pass "all $n public headers are installed and each compiles alone"

export PKG_CONFIG_PATH=$PREFIX/lib/pkgconfig
got=$(pkg-config --modversion volley) || fail "pkg-config does not find volley.pc"
[ "$got" = "$want" ] || fail "pkg-config --modversion volley says '$got', the project is $want"
pass "pkg-config --modversion volley: $got"

# The installed executable holds the library's objects; the Python it starts (plot, eval of a
# Python env) is handed the installed libvolley.so.0, found from the program's own location.
# A stand-in python3 prints what it was handed.
"$PREFIX/bin/volley" --help > "$TMP/help.log" 2>&1 || fail "installed volley --help: $(head -3 "$TMP/help.log")"
printf '#!/bin/sh\necho "VOLLEY_LIB=$VOLLEY_LIB"\n' > "$TMP/fakepython"
chmod +x "$TMP/fakepython"
got=$(cd "$TMP" && env -u VOLLEY_LIB VOLLEY_PYTHON="$TMP/fakepython" "$PREFIX/bin/volley" plot x 2>&1)
lib=$(readlink -f "$PREFIX/lib/libvolley.so.0")
[ "$got" = "VOLLEY_LIB=$lib" ] || fail "installed volley hands Python '$got', not VOLLEY_LIB=$lib"
got=$("$PREFIX/bin/volley" --version)
[ "$got" = "volley $want" ] || fail "installed volley --version says '$got', wanted 'volley $want'"
pass "installed volley ($got) hands Python the installed $lib"

# docs/envs.md's build line, from a directory outside the source tree.
mkdir -p "$TMP/src"
cp "$SRC/envs/plugins/corridor.c" "$TMP/src/"
cd "$TMP/src" || fail "cd $TMP/src"
cc -shared -fPIC -o libcorridor.so corridor.c $(pkg-config --cflags volley) 2> "$TMP/cc.log" ||
    fail "the plugin does not build: $(head -5 "$TMP/cc.log")"
nm -D --defined-only libcorridor.so | grep -q ' volley_env$' || fail "libcorridor.so exports no volley_env"
pass "corridor.c builds out of tree with \$(pkg-config --cflags volley) alone"

# Trains plugin ./$1 with the installed volley until solved within $2 env steps (exact: --max-steps),
# its solved line in SOLVED; fails when the steps run out, or as hung when the wall clock's guard
# ($HANG s, far above the seconds a run takes) ends the run first.
HANG=300
train() {
    local so=$1 budget=$2 rc last spent
    SOLVED=
    "$PREFIX/bin/volley" up --env ./$so --port 0 --max-steps $budget --max-seconds $HANG \
        > "$TMP/up.log" 2> "$TMP/up.err"
    rc=$?
    last=$(tail -n 1 "$TMP/up.log")
    [ $rc -eq 0 ] && echo "$last" | grep -qE '^solved: ' && { SOLVED=$last; return 0; }
    spent=$(echo "$last" | sed -n 's/^not solved: budget spent after \([0-9]*\) steps.*/\1/p')
    [ -n "$spent" ] && [ "$spent" -lt "$budget" ] &&
        fail "volley up --env ./$so hung: $spent of its $budget steps when its $HANG s guard ended it: '$last'"
    fail "volley up --env ./$so not solved within $budget steps: exit $rc, last line '$last': $(tail -3 "$TMP/up.err")"
}
# corridor solves in about 30K steps, target (box actions) in about 450K.
train libcorridor.so 1000000
pass "the installed volley trains the plugin to solved: $SOLVED"

# The box-action example, built and trained the same way.
cp "$SRC/envs/plugins/target.c" "$TMP/src/"
cc -shared -fPIC -o libtarget.so target.c $(pkg-config --cflags volley) 2> "$TMP/cc.log" ||
    fail "target.c does not build: $(head -5 "$TMP/cc.log")"
train libtarget.so 4000000
pass "target.c (box actions) builds out of tree and trains to solved: $SOLVED"
echo "7 passed, 0 failed"

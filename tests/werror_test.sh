#!/usr/bin/env bash
# A user's build never fails on a compiler's warning: a default configuration compiles without
# -Werror, -DVL_WERROR=ON (what CI and developers set; compose/setup.sh with CI=true) with it, and
# .ci/run builds Release with gcc and clang that way. Configures only; builds nothing.
. "$(dirname "$0")/lib.sh"
SRC=$(cd "$(dirname "$0")/.." && pwd)

# werror_in DIR: prints how many compile commands of the configured DIR carry -Werror.
werror_in() { grep -o '"command": "[^"]*"' "$1/compile_commands.json" | grep -c -- ' -Werror ' ; }

cmake -S "$SRC" -B "$TMP/default" -DCMAKE_BUILD_TYPE=Release > "$TMP/default.log" 2>&1 || fail "configure: $(tail -3 "$TMP/default.log")"
n=$(werror_in "$TMP/default")
[ "$n" -eq 0 ] || fail "a default Release configuration compiles $n files with -Werror"
pass "default configuration: no -Werror"

cmake -S "$SRC" -B "$TMP/ci" -DCMAKE_BUILD_TYPE=Release -DVL_WERROR=ON > "$TMP/ci.log" 2>&1 || fail "configure: $(tail -3 "$TMP/ci.log")"
n=$(werror_in "$TMP/ci")
[ "$n" -gt 50 ] || fail "-DVL_WERROR=ON compiles only $n files with -Werror"
pass "-DVL_WERROR=ON: $n compile commands with -Werror"

grep -q 'WERROR=ON' "$SRC/compose/setup.sh" && grep -q 'CI:-' "$SRC/compose/setup.sh" ||
    fail "compose/setup.sh does not turn VL_WERROR on under CI"
grep -q '^export CI=true' "$SRC/.ci/run" || fail ".ci/run does not set CI=true"
grep -q '^bash compose/setup.sh && ctest --test-dir build -j2 --output-on-failure$' "$SRC/.ci/run" ||
    fail ".ci/run no longer runs the README's test command"
grep -q 'for cc in gcc clang' "$SRC/.ci/run" && grep -q 'CMAKE_BUILD_TYPE=Release -DVL_WERROR=ON' "$SRC/.ci/run" ||
    fail ".ci/run does not build Release with gcc and clang, warnings as errors"
pass "CI: setup.sh with -DVL_WERROR=ON, then Release builds with gcc and clang, warnings as errors"
echo "3 passed, 0 failed"

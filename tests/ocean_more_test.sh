#!/usr/bin/env bash
# More of PufferLib's Ocean envs through include/volley/ocean.h, each needing
# one of its options, built with docs/envs.md's line and checked as
# tests/ocean_test.sh checks pong (tests/ocean_check.c: stepped through
# volley and directly, bit for bit, across episode ends and time limits):
#   squared   its c_close asks raylib's IsWindowReady (the header's stand-in)
#   pacman    char terminals
#   blastar   empties its Log in the c_reset it calls from c_step (VL_OCEAN_LOG_RESET):
#             every episode's end still has its figures
#   grid      c_close frees the env (VL_OCEAN_CLOSE_FREES, VL_OCEAN_CLOSE), mazes
#             made from each env's index, episode ends only in its Log
#   tower_climb  c_close frees the env; c_step asks raylib's GetTime (the stand-in)
# and squared rewritten two ways: with the older names reset/step (VL_OCEAN_RESET,
# VL_OCEAN_STEP, VL_OCEAN_CLOSE) and with float terminals. Then the five run a
# few seconds in volley up, which must exit 0.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/ocean_lib.sh"

ocean_fetch
ocean_install
# Builds $TMP/$1.c (headers in $2) with docs/envs.md's line, and its ocean_check.
build() { # NAME HEADER_DIR
    (cd "$TMP" &&
        cc -O2 -shared -fPIC -fvisibility=hidden -ffunction-sections -Wl,--gc-sections -o lib$1.so $1.c -I"$2" -I"$RAYLIB/include" $(pkg-config --cflags volley) -lm) \
        > "$TMP/cc_$1.log" 2>&1 || fail "lib$1.so does not build: $(grep -m3 error "$TMP/cc_$1.log")"
    cc -O2 -ffunction-sections -Wl,--gc-sections -o "$TMP/check_$1" "$SRC/tests/ocean_check.c" \
        -DVL_OCEAN_PLUGIN="\"$1.c\"" -I"$TMP" -I"$2" -I"$RAYLIB/include" \
        $(pkg-config --cflags volley) -ldl -lm 2> "$TMP/cc.log" || fail "ocean_check for $1: $(head -3 "$TMP/cc.log")"
}
check() { # ENV ENV_ARG STEPS
    "$TMP/check_$1" "$TMP/lib$1.so" "$2" "$3" > "$TMP/check.out" 2>&1 || fail "$(tail -3 "$TMP/check.out")"
    pass "$(cat "$TMP/check.out")"
}
for e in squared pacman blastar grid tower_climb; do
    cp "$SRC/envs/ocean/$e.c" "$TMP/" || fail "no envs/ocean/$e.c"
    build $e "$OCEAN/$e"
done

check squared "" 3000
check squared "max_steps=7" 3000
check pacman "" 3000
check pacman "max_steps=40" 3000
check grid "" 3000
check grid "num_maps=20 max_steps=30" 3000
check tower_climb "num_maps=3" 2000
check tower_climb "num_maps=3 max_steps=20" 2000
check blastar "max_steps=200" 3000
check blastar "" 20000
# blastar's Log is empty after each game's last step; its figures come from the Log before it.
read -r ends rows < <(sed -nE 's/.* ([0-9]+) terminals, [0-9]+ truncations, ([0-9]+) figure rows/\1 \2/p' "$TMP/check.out")
[ "${ends:-0}" -gt 0 ] || fail "blastar ended no game in 20000 steps: $(cat "$TMP/check.out")"
[ "$rows" = "$ends" ] || fail "blastar: $rows of $ends game ends have figures"
pass "blastar: all $ends game ends have figures, though c_reset empties its Log"

# squared with the older names of rocket_lander, robocode and tcg: reset, step, and a close of its own.
mkdir -p "$TMP/old" "$TMP/f32"
sed -E 's/\bc_reset\b/reset/g; s/\bc_step\b/step/g; s/\bc_close\b/free_squared/g' "$OCEAN/squared/squared.h" \
    > "$TMP/old/squared_old.h"
grep -q "c_step\|c_reset\|c_close" "$TMP/old/squared_old.h" && fail "squared_old.h still has c_ names"
sed -e 's/squared\.h/squared_old.h/; s/"squared"/"squared_old"/' \
    -e 's/#include <volley\/ocean.h>/#define VL_OCEAN_RESET reset\n#define VL_OCEAN_STEP step\n#define VL_OCEAN_CLOSE free_squared\n&/' \
    "$SRC/envs/ocean/squared.c" > "$TMP/squared_old.c"
build squared_old "$TMP/old"
check squared_old "" 3000
check squared_old "max_steps=7" 3000
# squared with float terminals, as nmmo3 has them.
sed 's/unsigned char\* terminals;/float* terminals;/' "$OCEAN/squared/squared.h" > "$TMP/f32/squared_f32.h"
grep -q "float\* terminals;" "$TMP/f32/squared_f32.h" || fail "squared_f32.h's terminals are not floats"
sed -e 's/squared\.h/squared_f32.h/; s/"squared"/"squared_f32"/' "$SRC/envs/ocean/squared.c" > "$TMP/squared_f32.c"
build squared_f32 "$TMP/f32"
check squared_f32 "" 3000
check squared_f32 "max_steps=7" 3000

for e in squared pacman blastar grid tower_climb; do
    arg=()
    [ $e = tower_climb ] && arg=(--env-arg "num_maps=2") # its puzzles take a while to make
    ocean_up $e "${arg[@]}"
done
echo "20 passed, 0 failed"

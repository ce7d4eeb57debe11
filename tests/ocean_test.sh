#!/usr/bin/env bash
# PufferLib's Ocean envs through include/volley/ocean.h: pong, breakout,
# snake and connect4 built as plugins with docs/envs.md's line, each stepped
# through its volley_env table beside the same header stepped directly
# (tests/ocean_check.c) for thousands of steps across episode ends and time
# limits: every observation, reward, terminal and figure equal. Then each
# runs a few seconds in volley up, whose checks take what it writes.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/ocean_lib.sh"

ocean_fetch
ocean_install
check() { # ENV ENV_ARG STEPS
    "$TMP/check_$1" "$TMP/lib$1.so" "$2" "$3" > "$TMP/check.out" 2>&1 || fail "$(cat "$TMP/check.out")"
    pass "$(cat "$TMP/check.out")"
}
for e in pong breakout snake connect4; do
    ocean_build $e
    cc -O2 -ffunction-sections -Wl,--gc-sections -o "$TMP/check_$e" "$SRC/tests/ocean_check.c" \
        -DVL_OCEAN_PLUGIN="\"$e.c\"" -I"$SRC/envs/ocean" -I"$OCEAN/$e" -I"$RAYLIB/include" \
        $(pkg-config --cflags volley) -ldl -lm 2> "$TMP/cc.log" || fail "ocean_check for $e: $(head -3 "$TMP/cc.log")"
done
check pong "max_score=2" 3000
check pong "max_score=21 max_steps=60" 3000
check breakout "" 3000
check breakout "frameskip=1 max_steps=500" 3000
check snake "" 3000
check snake "width=24 height=24 num_food=4 max_steps=40" 3000
check connect4 "" 2000
check connect4 "max_steps=5" 2000

# A key the env does not read fails the create, naming the keys it reads.
"$TMP/check_pong" "$TMP/libpong.so" "frame_skip=4" 10 > "$TMP/check.out" 2>&1 && fail "an unknown key was taken"
grep -q "key 'frame_skip' is unknown; it reads: max_steps width height" "$TMP/check.out" ||
    fail "an unknown key's error: $(cat "$TMP/check.out")"
pass "an unknown --env-arg key is refused, naming the keys the env reads"

for e in pong breakout snake connect4; do
    # An env with a recipe beside its adapter (envs/ocean/NAME.ini) runs with it, as docs/envs.md says.
    conf=()
    [ -f "$SRC/envs/ocean/$e.ini" ] && conf=(--config "$SRC/envs/ocean/$e.ini")
    ocean_up $e "${conf[@]}"
done
# The recipes' keys reach the run's config and the learner.
grep -q "^ent-coef = 0.002" "$TMP/runs/breakout/config.ini" ||
    fail "envs/ocean/breakout.ini's ent-coef is not in the run's config.ini"
grep -q "^command = volley learner .*--ent-coef 0.002" "$TMP/runs/breakout/config.ini" ||
    fail "envs/ocean/breakout.ini's ent-coef does not reach the learner"
pass "envs/ocean/breakout.ini's ent-coef reaches the run's config and its learner"
grep -q "^command = volley learner .*--model linear(128) lstm(128) .*--epochs 1 --minibatch 1024" \
    "$TMP/runs/pong/config.ini" ||
    fail "envs/ocean/pong.ini's model, epochs and minibatch do not reach the learner: $(grep 'volley learner' "$TMP/runs/pong/config.ini")"
pass "envs/ocean/pong.ini's model, epochs and minibatch reach the learner"
echo "15 passed, 0 failed"

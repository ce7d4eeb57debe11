#!/usr/bin/env bash
# volley learns PufferLib's pong through include/volley/ocean.h: the plugin
# built from the 3.0.0 sdist with docs/envs.md's line, `volley up` on 2
# actors at the learner's defaults with --seed 1, until the learner's mean
# score (env/score in metrics.jsonl, over its last 100 episodes; the return
# also counts 0.1 a bounce) is 18 or more, within a budget of 2M env steps
# (bench/pong_seeds.sh's 8 seeds each reach it within 140K to 180K). The
# wall clock bounds the run only against a hang (600 s, where it takes
# seconds), and says so.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/ocean_lib.sh"

ocean_fetch
ocean_install
ocean_build pong
cd "$TMP" || fail "cd $TMP"
SEED=1
STEPS=2000000 # env steps the run may spend to reach the score
HANG=600      # seconds after which a run that has neither scored nor spent its steps is hung
"$VOLLEY" up --env ./libpong.so --port 0 --seed $SEED --until steps --max-steps $STEPS \
    --max-seconds $HANG > up.log 2> up.err &
pid=$!
PIDS+=($pid)
best=none
# Reads the last row of the run's metrics into score and steps (best keeps the last score);
# returns 0 when the score is 18 or more, after saying so.
scored() {
    local row up
    row=$(tail -n 1 runs/*/metrics.jsonl 2>/dev/null)
    score=$(echo "$row" | sed -n 's/.*"env\/score":\([-0-9.e]*\).*/\1/p')
    steps=$(echo "$row" | sed -n 's/.*"env_steps":\([0-9]*\).*/\1/p')
    [ -n "$score" ] && best=$score
    [ -n "$score" ] && awk -v s="$score" 'BEGIN { exit !(s >= 18) }' || return 1
    up=$(echo "$row" | sed -n 's/.*"uptime_s":\([0-9.]*\).*/\1/p')
    pass "pong (seed $SEED): mean score $score over the last 100 episodes after $steps of its $STEPS steps (${up%.*} s)"
    echo "1 passed, 0 failed"
}
for t in $(seq $((HANG + 5))); do
    sleep 1
    scored && exit 0
    kill -0 "$pid" 2>/dev/null || break
done
kill -0 "$pid" 2>/dev/null &&
    fail "pong (seed $SEED) hung: neither a score of 18 nor its $STEPS steps spent after $t s (at ${steps:-no} steps, score $best): $(tail -2 up.log)"
wait "$pid" 2>/dev/null
scored && exit 0 # the run's last row
[ "${steps:-0}" -ge $STEPS ] ||
    fail "pong (seed $SEED)'s run stopped after ${steps:-no} of its $STEPS steps (hung past its $HANG s guard, or failed): $(tail -2 up.log) $(tail -2 up.err)"
fail "pong (seed $SEED)'s mean score reached no 18 in its $STEPS steps (last: $best): $(tail -2 up.log)"

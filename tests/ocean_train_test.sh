#!/usr/bin/env bash
# volley learns PufferLib's pong through include/volley/ocean.h: the plugin
# built from the 3.0.0 sdist with docs/envs.md's line, `volley up` on 2
# actors, until the learner's mean score (env/score in metrics.jsonl, over
# its last 100 episodes; the return also counts 0.1 a bounce) is 18 or more
# within a budget of 20M env steps a run (one that scores takes 2M to 8M), at
# most two runs. The wall clock bounds a run only against a hang (600 s, where
# one takes about a minute on a busy 2-core box), and says so.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/ocean_lib.sh"

ocean_fetch
ocean_install
ocean_build pong
cd "$TMP" || fail "cd $TMP"
STEPS=20000000 # env steps a run may spend to reach the score
HANG=600       # seconds after which a run that has neither scored nor spent its steps is hung
# Returns 0 once run $1 (--seed $1) shows a mean score of 18 within $STEPS env steps, 1 when
# the run spent them without; fails the test when the run neither scores nor ends in $HANG s.
attempt() {
    rm -rf runs
    "$VOLLEY" up --env ./libpong.so --port 0 --seed "$1" --until steps --max-steps $STEPS \
        --max-seconds $HANG > up.log 2> up.err &
    local pid=$! row score steps up t
    PIDS+=($pid)
    for t in $(seq $((HANG + 5))); do
        sleep 1
        row=$(tail -n 1 runs/*/metrics.jsonl 2>/dev/null)
        score=$(echo "$row" | sed -n 's/.*"env\/score":\([-0-9.e]*\).*/\1/p')
        steps=$(echo "$row" | sed -n 's/.*"env_steps":\([0-9]*\).*/\1/p')
        [ -n "$score" ] && best=$score
        if [ -n "$score" ] && awk -v s="$score" 'BEGIN { exit !(s >= 18) }'; then
            up=$(echo "$row" | sed -n 's/.*"uptime_s":\([0-9.]*\).*/\1/p')
            pass "pong (seed $1): mean score $score over the last 100 episodes after $steps of its $STEPS steps (${up%.*} s)"
            kill "$pid" 2>/dev/null
            return 0
        fi
        kill -0 "$pid" 2>/dev/null || break
    done
    kill -0 "$pid" 2>/dev/null &&
        fail "pong (seed $1) hung: neither a score of 18 nor its $STEPS steps spent after $t s (at ${steps:-no} steps, score ${best}): $(tail -2 up.log)"
    wait "$pid" 2>/dev/null
    [ "${steps:-0}" -ge $STEPS ] ||
        fail "pong (seed $1)'s run stopped after ${steps:-no} of its $STEPS steps (hung past its $HANG s guard, or failed): $(tail -2 up.log) $(tail -2 up.err)"
    return 1
}
# A run can settle on returning the ball for its 0.1 a bounce while losing every point (score
# -21, return about +6): 2 runs of 7 measured did. A second seed gets its own chance.
best=none
attempt 1 || { echo "     seed 1: mean score $best after its $STEPS steps; trying seed 2"; attempt 2; } ||
    fail "pong's mean score reached no 18 in $STEPS steps with seeds 1 and 2 (last: $best): $(tail -2 up.log)"
echo "1 passed, 0 failed"

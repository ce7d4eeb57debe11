#!/usr/bin/env bash
# volley learns PufferLib's pong through include/volley/ocean.h: the plugin
# built from the 3.0.0 sdist with docs/envs.md's line, `volley up` on 2
# actors, until the learner's mean score (env/score in metrics.jsonl, over
# its last 100 episodes; the return also counts 0.1 a bounce) is 18 or more.
# Budget: 120 s a run, at most two runs (explicit --max-seconds and --max-steps).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/ocean_lib.sh"

ocean_fetch
ocean_install
ocean_build pong
cd "$TMP" || fail "cd $TMP"
# Returns 0 once run $1 (--seed $1) shows a mean score of 18 within 120 s.
attempt() {
    rm -rf runs
    "$VOLLEY" up --env ./libpong.so --port 0 --seed "$1" --max-seconds 120 --max-steps 10000000000 \
        > up.log 2> up.err &
    local pid=$! row score steps up
    PIDS+=($pid)
    for _ in $(seq 125); do
        sleep 1
        row=$(tail -n 1 runs/*/metrics.jsonl 2>/dev/null)
        score=$(echo "$row" | sed -n 's/.*"env\/score":\([-0-9.e]*\).*/\1/p')
        [ -n "$score" ] && best=$score
        if [ -n "$score" ] && awk -v s="$score" 'BEGIN { exit !(s >= 18) }'; then
            steps=$(echo "$row" | sed -n 's/.*"env_steps":\([0-9]*\).*/\1/p')
            up=$(echo "$row" | sed -n 's/.*"uptime_s":\([0-9.]*\).*/\1/p')
            pass "pong (seed $1): mean score $score over the last 100 episodes after $steps steps, ${up%.*} s"
            kill "$pid" 2>/dev/null
            return 0
        fi
        kill -0 "$pid" 2>/dev/null || break
    done
    kill "$pid" 2>/dev/null
    wait "$pid" 2>/dev/null
    return 1
}
# A run can settle on returning the ball for its 0.1 a bounce while losing every point (score
# -21, return about +6): 2 runs of 7 measured did. A second seed gets its own chance.
best=none
attempt 1 || { echo "     seed 1: mean score $best after 120 s; trying seed 2"; attempt 2; } ||
    fail "pong's mean score reached no 18 with seeds 1 and 2 (last: $best): $(tail -2 up.log)"
echo "1 passed, 0 failed"

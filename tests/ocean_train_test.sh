#!/usr/bin/env bash
# volley learns PufferLib's pong through include/volley/ocean.h: the plugin
# built from the 3.0.0 sdist with the README's line, `volley up` on 2
# actors, until the learner's mean score (env/score in metrics.jsonl, over
# its last 100 episodes; the return also counts 0.1 a bounce) is 18 or more.
# Budget: 240 s (explicit --max-seconds and --max-steps).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/ocean_lib.sh"

ocean_fetch
ocean_install
ocean_build pong
cd "$TMP" || fail "cd $TMP"
"$VOLLEY" up --env ./libpong.so --port 0 --max-seconds 240 --max-steps 10000000000 > up.log 2> up.err &
PIDS+=($!)
best=none
for _ in $(seq 250); do
    sleep 1
    row=$(tail -n 1 runs/*/metrics.jsonl 2>/dev/null)
    score=$(echo "$row" | sed -n 's/.*"env\/score":\([-0-9.e]*\).*/\1/p')
    [ -n "$score" ] && best=$score
    if [ -n "$score" ] && awk -v s="$score" 'BEGIN { exit !(s >= 18) }'; then
        steps=$(echo "$row" | sed -n 's/.*"env_steps":\([0-9]*\).*/\1/p')
        up=$(echo "$row" | sed -n 's/.*"uptime_s":\([0-9.]*\).*/\1/p')
        pass "pong: mean score $score over the last 100 episodes after $steps steps, ${up%.*} s"
        echo "1 passed, 0 failed"
        exit 0
    fi
    kill -0 "${PIDS[0]}" 2>/dev/null || break
done
fail "pong's mean score reached no 18 (last: $best): $(tail -2 up.log)"

#!/usr/bin/env bash
# Two learners, each training its own policy, share one broker and an actor
# fleet: each actor's segments reach only its policy's learner (a learner
# refuses, and logs, any segment of another policy) and both learn.
. "$(dirname "$0")/lib.sh"
PORT=$(free_port)

"$VOLLEY" broker --port "$PORT" --bind 127.0.0.1 > "$TMP/broker.log" 2>&1 &
PIDS+=($!)
for p in alpha beta; do
    "$VOLLEY" learner --env cartpole --broker 127.0.0.1:$PORT --policy $p --batch 8 --capacity 32 --verbose \
        > "$TMP/learner-$p.log" 2>&1 &
    PIDS+=($!)
done
wait_for "$TMP/broker.log" 10 "learner for policy 'alpha' joined" || fail "learner alpha never joined"
wait_for "$TMP/broker.log" 10 "learner for policy 'beta' joined" || fail "learner beta never joined"
for p in alpha beta alpha; do
    "$VOLLEY" actor --broker 127.0.0.1:$PORT --policy $p --envs 4 --quiet > "$TMP/actor-$p.log" 2>&1 &
    PIDS+=($!)
done
for p in alpha beta; do
    wait_for "$TMP/learner-$p.log" 30 "version=[0-9]*[1-9][0-9] " || fail "learner $p did not train"
done
for p in alpha beta; do
    grep -q "refusing segments" "$TMP/learner-$p.log" && fail "learner $p got segments it does not serve"
done
pass "two policies trained from one fleet without crossing streams"
echo "1 passed, 0 failed"

#!/usr/bin/env bash
# Weights reach an actor that joins late from the broker's last-value cache:
# the learner is frozen (SIGSTOP) before the actor starts, so the broker is
# the only place the weights can come from. Then, with the learner running
# again, the actor's segments reach it (its version counter moves).
. "$(dirname "$0")/lib.sh"
PORT=$(free_port)

"$VOLLEY" broker --port "$PORT" --bind 127.0.0.1 > "$TMP/broker.log" 2>&1 &
PIDS+=($!)
"$VOLLEY" learner --env cartpole --broker 127.0.0.1:$PORT --batch 4 --capacity 16 --verbose > "$TMP/learner.log" 2>&1 &
LEARNER=$!
PIDS+=($LEARNER)
wait_for "$TMP/broker.log" 10 "learner for policy 'default' joined" || fail "learner never joined the broker"
sleep 1.5  # the learner publishes weights at start and every second
kill -STOP $LEARNER

"$VOLLEY" actor --broker 127.0.0.1:$PORT --envs 2 --horizon 64 > "$TMP/actor.log" 2>&1 &
PIDS+=($!)
wait_for "$TMP/actor.log" 10 "acting for policy 'default' .* from weights version 0" ||
    fail "a late actor got no weights while the learner was stopped"
pass "late actor gets the newest weights from the broker's cache"

kill -CONT $LEARNER
wait_for "$TMP/learner.log" 20 "version=([1-9][0-9]*) " || fail "learner never trained on the actor's segments"
pass "segments flow actor -> broker -> learner and new versions are published"
echo "2 passed, 0 failed"

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

# A learner restarted afresh (its versions start again at 0) begins a new epoch at the broker:
# the old run's high versions do not hold the new one's back, and top tells the runs apart.
lrow() { "$VOLLEY" top --broker 127.0.0.1:$PORT --kv --once | sed -n "s/.* kind=learner .* $1=\([^ ]*\).*/\1/p" | head -1; }
for _ in $(seq 100); do [ "$(lrow weights_version)" -ge 20 ] 2>/dev/null && break; sleep 0.1; done
e1=$(lrow epoch) v1=$(lrow weights_version)
[ "$v1" -ge 20 ] 2>/dev/null || fail "the learner row shows no version: $v1"
kill -TERM $LEARNER
wait $LEARNER
"$VOLLEY" learner --env cartpole --broker 127.0.0.1:$PORT --batch 4 --capacity 16 --verbose > "$TMP/learner-2.log" 2>&1 &
PIDS+=($!)
wait_for "$TMP/learner-2.log" 20 "version=([1-9][0-9]*) " || fail "the restarted learner did not train"
for _ in $(seq 50); do [ "$(lrow epoch)" -gt "$e1" ] 2>/dev/null && break; sleep 0.1; done
e2=$(lrow epoch) v2=$(lrow weights_version)
[ "$e2" -gt "$e1" ] || fail "a restarted learner kept epoch $e1 (now $e2)"
"$VOLLEY" top --broker 127.0.0.1:$PORT --once | grep -qE "^  default .* $e2 +[0-9]+$" || fail "top shows no epoch"
pass "a restarted learner is a new epoch: epoch $e1 version $v1 -> epoch $e2 version $v2"
echo "3 passed, 0 failed"

#!/usr/bin/env bash
# Heartbeats: an actor or a learner killed with SIGKILL (no goodbye) is
# noticed by the broker within seconds: the actor is reported not alive, the
# learner is forgotten and its queue freed (its segments then count as
# dropped: no learner), and the counters still add up. An actor that waits
# for weights (sending no segment) stays alive through its beats.
. "$(dirname "$0")/lib.sh"
PORT=$(free_port)
status() { "$VOLLEY" ctl --broker 127.0.0.1:$PORT status; }
field() { sed -n "s/.*kind=$1 .*$2=\([^ ]*\).*/\1/p"; } # $1 kind, $2 key, lines on stdin

"$VOLLEY" broker --port "$PORT" --bind 127.0.0.1 > "$TMP/broker.log" 2>&1 &
PIDS+=($!)
"$VOLLEY" learner --env cartpole --broker 127.0.0.1:$PORT --verbose > "$TMP/learner.log" 2>&1 &
LEARNER=$!
PIDS+=($LEARNER)
for i in 1 2; do
    "$VOLLEY" actor --broker 127.0.0.1:$PORT --id $i --envs 4 --quiet > "$TMP/actor-$i.log" 2>&1 &
    PIDS+=($!)
done
VICTIM=$!
# An actor of a policy nobody trains: it never gets weights, so it sends no segment.
"$VOLLEY" actor --broker 127.0.0.1:$PORT --id 3 --policy idle --quiet > "$TMP/actor-3.log" 2>&1 &
PIDS+=($!)
wait_for "$TMP/learner.log" 20 "version=[1-9][0-9]" || fail "training did not start"
status | grep -q "kind=actor id=2 .*alive=1" || fail "actor 2 not alive in: $(status)"
status | grep -q "kind=actor id=3 policy=idle .*alive=1" || fail "the waiting actor 3 not alive"
pass "three actors alive, one of them by its beats alone"

kill -KILL $VICTIM
t0=$(date +%s)
wait_for "$TMP/broker.log" 10 "actor 2 \(policy 'default'\) went silent" || fail "killed actor not noticed"
secs=$(( $(date +%s) - t0 ))
status | grep -q "kind=actor id=2 .*alive=0" || fail "actor 2 still alive in: $(status)"
status | grep -q "kind=actor id=1 .*alive=1" || fail "actor 1 not alive"
status | grep -q "kind=actor id=3 policy=idle .*alive=1" || fail "the waiting actor 3 not alive"
pass "a SIGKILLed actor noticed in ${secs} s; the others alive"

kill -KILL $LEARNER
t0=$(date +%s)
wait_for "$TMP/broker.log" 10 "learner for policy 'default' (went silent|disconnected)" ||
    fail "killed learner not noticed"
secs=$(( $(date +%s) - t0 ))
s=$(status)
[ "$(echo "$s" | field broker learners)" = 0 ] || fail "learner still listed: $s"
[ "$(echo "$s" | field broker queued)" = 0 ] || fail "queue not freed: $s"
[ "$(echo "$s" | field broker adds_up)" = 1 ] || fail "counters do not add up: $s"
unserved() { status | sed -n 's/.*kind=drop drop_kind=segments reason="no learner serves its policy" count=\([0-9]*\).*/\1/p'; }
n0=$(unserved)
for _ in $(seq 50); do
    n=$(unserved)
    [ "${n:-0}" -gt "${n0:-0}" ] && break
    sleep 0.2
done
[ "${n:-0}" -gt "${n0:-0}" ] || fail "segments for the dead learner not counted as dropped (${n0:-0} -> ${n:-0})"
pass "a SIGKILLed learner noticed in ${secs} s, its queue freed, counters add up"
echo "3 passed, 0 failed"

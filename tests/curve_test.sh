#!/usr/bin/env bash
# CURVE: with `volley keygen` certificates, a secured broker lets in the
# learner and an allowed actor (training goes on, the monitor's status works
# with its own key), and delivers nothing from an actor whose key is not
# allowed (it says why in its log) nor from one without CURVE at all.
. "$(dirname "$0")/lib.sh"
PORT=$(free_port)
K=$TMP/keys
"$VOLLEY" keygen "$K" > "$TMP/keygen.log" || fail "keygen failed: $(cat "$TMP/keygen.log")"
"$VOLLEY" keygen "$TMP/other" --clients actor > /dev/null || fail "second keygen failed"
"$VOLLEY" keygen "$K" > /dev/null 2>&1 && fail "keygen overwrote existing certificates"
pass "keygen writes the certificates and never overwrites them"

secure() { echo --cert "$K/$1.cert" --broker-key "$K/broker.cert"; }
status() { "$VOLLEY" ctl --broker 127.0.0.1:$PORT $(secure monitor) status; }
"$VOLLEY" broker --port "$PORT" --bind 127.0.0.1 --cert "$K/broker.cert" --allow "$K/allowed" \
    > "$TMP/broker.log" 2>&1 &
PIDS+=($!)
wait_for "$TMP/broker.log" 10 "listening" || fail "the secured broker did not start"
"$VOLLEY" learner --env cartpole --broker 127.0.0.1:$PORT $(secure learner) --verbose > "$TMP/learner.log" 2>&1 &
PIDS+=($!)
"$VOLLEY" actor --broker 127.0.0.1:$PORT --id 1 $(secure actor) --quiet > "$TMP/actor-1.log" 2>&1 &
PIDS+=($!)
# Actor 2: a key the broker never allowed (another keygen's), the right broker key.
"$VOLLEY" actor --broker 127.0.0.1:$PORT --id 2 --cert "$TMP/other/actor.cert" \
    --broker-key "$K/broker.cert" > "$TMP/actor-2.log" 2>&1 &
PIDS+=($!)
# Actor 3: no CURVE at all.
"$VOLLEY" actor --broker 127.0.0.1:$PORT --id 3 > "$TMP/actor-3.log" 2>&1 &
PIDS+=($!)
wait_for "$TMP/learner.log" 30 "version=[1-9][0-9]" || fail "no training through the secured broker"
pass "learner and allowed actor train through CURVE"

wait_for "$TMP/actor-2.log" 10 "the broker refused our key" || fail "the refused actor did not say why"
s=$(status) || fail "the monitor's status request failed: $s"
echo "$s" | grep -q "kind=actor id=1 " || fail "the allowed actor is not in the status: $s"
echo "$s" | grep -qE "kind=actor id=(2|3) " && fail "a refused actor got through: $s"
"$VOLLEY" ctl --broker 127.0.0.1:$PORT status > "$TMP/plain-ctl.log" 2>&1 &&
    fail "a status request without CURVE was answered"
pass "the unallowed and the plain actor deliver nothing; the refused one says why; plain ctl gets no answer"

# Allow actor 2's key now: the broker re-reads the directory (it notices by the directory's
# modification time, in seconds) and the running actor connects again by itself.
sleep 1
cp "$TMP/other/allowed/actor.cert" "$K/allowed/other-actor.cert"
for _ in $(seq 100); do
    status | grep -qE "kind=actor id=2 .*segments=[1-9]" && break
    sleep 0.2
done
status | grep -qE "kind=actor id=2 .*segments=[1-9]" || fail "actor 2 did not get in once its key was allowed"
wait_for "$TMP/actor-2.log" 5 "the broker accepts our key now" || fail "actor 2 did not say it got in"
status | grep -qE "kind=actor id=3 " && fail "the plain actor got in"
pass "a key allowed later lets the running actor in, without a restart"
echo "4 passed, 0 failed"

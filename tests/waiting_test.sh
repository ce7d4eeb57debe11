#!/usr/bin/env bash
# Every role started before its broker (learner, actor, a live `volley top`) says what it waits for, soon and again every few
# seconds: "no broker at tcp://HOST:PORT yet". Once the broker is up, an actor whose policy no
# learner serves says so, in words different from the broker being unreachable.
. "$(dirname "$0")/lib.sh"

PORT=$(free_port)
B=127.0.0.1:$PORT
NO_BROKER="no broker at tcp://$B yet"
"$VOLLEY" learner --broker $B > "$TMP/learner.log" 2>&1 &
PIDS+=($!)
"$VOLLEY" learner --broker $B --env cartpole --policy other > "$TMP/learner-env.log" 2>&1 &
PIDS+=($!)
"$VOLLEY" actor --broker $B --policy lonely > "$TMP/actor.log" 2>&1 &
PIDS+=($!)
"$VOLLEY" top --broker $B --kv > "$TMP/top.log" 2>&1 &
PIDS+=($!)
for role in learner learner-env actor top; do
    wait_for "$TMP/$role.log" 10 "$NO_BROKER" || fail "$role said nothing about the missing broker"
    pass "$role, no broker: $(grep -F "$NO_BROKER" "$TMP/$role.log" | head -1 | cut -d' ' -f3-)"
done
for role in learner learner-env actor top; do
    for _ in $(seq 150); do
        [ "$(grep -cF "$NO_BROKER" "$TMP/$role.log")" -ge 2 ] && break
        sleep 0.1
    done
    [ "$(grep -cF "$NO_BROKER" "$TMP/$role.log")" -ge 2 ] || fail "$role said it only once"
    pass "$role keeps saying it ($(grep -cF "$NO_BROKER" "$TMP/$role.log") times so far)"
done

# The Python package's learner, given up on before any broker came, says there was none.
SRC=$(cd "$(dirname "$0")/.." && pwd)
PYTHONPATH="$SRC/bindings/python" VOLLEY_LIB="$(dirname "$VOLLEY")/libvolley.so" VOLLEY_BIN="$VOLLEY" \
    /usr/bin/python3 -c "
import volley
try:
    volley.Learner('$B', timeout=2)
except volley.VolleyError as e:
    print(e)
" > "$TMP/py.log" 2>&1
grep -qF "no broker at tcp://$B (never reached)" "$TMP/py.log" || fail "volley.Learner with no broker: $(cat "$TMP/py.log")"
pass "volley.Learner, no broker: $(tail -1 "$TMP/py.log")"

"$VOLLEY" broker --port "$PORT" > "$TMP/broker.log" 2>&1 &
PIDS+=($!)
wait_for "$TMP/actor.log" 15 "broker up, no learner serves policy 'lonely'" ||
    fail "the actor did not say that no learner serves its policy"
pass "actor, broker up: $(grep -F "no learner serves" "$TMP/actor.log" | head -1 | cut -d' ' -f3-)"
grep -F "no learner serves" "$TMP/actor.log" | grep -qF "no broker" && fail "the two messages are not distinct"
wait_for "$TMP/learner-env.log" 15 "training policy 'other'" || fail "the learner with --env did not start once the broker was up"
pass "the learner with --env starts training once the broker is up"
echo "11 passed, 0 failed"

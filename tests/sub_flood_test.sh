#!/usr/bin/env bash
# Three connections, one after the other, from an address the broker does not trust
# (127.0.0.2) each send 50,000 subscriptions of 63 bytes (the longest topic the port reads) with
# random prefixes (3 MB, the most prefix-tree nodes per byte) to the weights-out port at once, while a learner and a real actor
# train from loopback. The broker's RSS (VmRSS from /proc) grows by at most 32 MB during the
# flood and is within 32 MB of its start after the connections close; the actor keeps
# receiving new weights meanwhile. First, a late joiner of two cached topics gets both.
. "$(dirname "$0")/lib.sh"
INJECT=${2:?usage: $0 volley vl_inject}
PORT=$(free_port)
FROM="127.0.0.2:0;127.0.0.1:$PORT"
BOUND_KB=$((32 * 1024))
F="sub-flood=50000:63:random"
FLOODS="$F $F $F" # three connections one after the other, each flooding at once

training_broker --max-lag 20
actor_version() { # the weights version the actor acts with, from its heartbeat
    "$VOLLEY" top --broker 127.0.0.1:$PORT --kv --once 2>/dev/null |
        sed -n 's/.* kind=actor .* weights_version=\([0-9]*\).*/\1/p' | head -1
}
wait_for "$TMP/learner.log" 30 "version=([3-9][0-9]|[0-9]{3,})" || fail "training did not start"
# A late joiner names its policy and the stats topic at once, both cached: it is sent both
# cached values, and neither resend is refused as churn.
for _ in $(seq 100); do # the broker has the learner's stats as well as its weights
    "$VOLLEY" top --broker 127.0.0.1:$PORT --kv --once 2>/dev/null | grep -q " kind=learner " && break
    sleep 0.1
done
"$INJECT" 127.0.0.1:$PORT "late-join=0.5" > "$TMP/late.out" || fail "vl_inject failed"
"$VOLLEY" ctl --broker 127.0.0.1:$PORT status > "$TMP/status" 2>&1 || fail "status failed"
LATE_FAILED= # reported now, failed at the end: the flood is checked either way
if grep -q "resends over their rate" "$TMP/status"; then
    echo "FAIL: a late joiner's second topic was refused its cached value: $(grep "resends over" "$TMP/status")"
    LATE_FAILED=1
else
    pass "a late joiner of the policy and the stats topic got both cached values: $(cat "$TMP/late.out")"
fi

rss0=$(rss_kb)
peak=$rss0
sample() { local r; r=$(rss_kb); [ "$r" -gt "$peak" ] && peak=$r; }

# The flooder holds its socket open until it is stopped below.
"$INJECT" "$FROM" $FLOODS "hold=600" > "$TMP/flood.out" 2>&1 &
FLOOD=$!
PIDS+=($FLOOD)
for _ in $(seq 600); do # every flood connected, the first one refused by the broker
    sample
    [ "$(grep -c "^flooding" "$TMP/flood.out")" -ge 3 ] &&
        grep -q "refusing subscriptions from 127.0.0.2" "$TMP/broker.log" && break
    sleep 0.1
done
grep -q "refusing subscriptions from 127.0.0.2" "$TMP/broker.log" || fail "the flood never reached the broker"
[ "$(grep -c "^flooding" "$TMP/flood.out")" -ge 3 ] || fail "the flooder did not connect 3 times: $(cat "$TMP/flood.out")"
v0=
for _ in $(seq 100); do # the broker answers `volley top` during the flood
    sample
    v0=$(actor_version)
    [ -n "$v0" ] && break
    sleep 0.2
done
[ -n "$v0" ] || fail "the broker showed no actor to volley top during the flood"
v=$v0
for _ in $(seq 300); do # the actor acts with 5 newer versions while the flooder is connected
    sample
    v=$(actor_version)
    [ "${v:-0}" -ge $((v0 + 5)) ] && break
    sleep 0.2
done
kill -0 $FLOOD 2>/dev/null || fail "the flooder ended early: $(cat "$TMP/flood.out")"
[ "${v:-0}" -ge $((v0 + 5)) ] || fail "the actor received no new weights during the flood (version $v0 -> $v)"
for _ in $(seq 20); do sample; sleep 0.1; done
echo "     broker VmRSS $rss0 kB at start, $peak kB at most during the flood"
[ $((peak - rss0)) -le $BOUND_KB ] || fail "the flood grew the broker's RSS by $((peak - rss0)) kB (bound $BOUND_KB kB)"
pass "3 connections one after the other, each 50,000 random-prefix subscriptions of 63 B at once: RSS +$((peak - rss0)) kB, the actor got weights $v0 -> $v"

kill -TERM $FLOOD
wait $FLOOD 2>/dev/null
for _ in $(seq 100); do # the broker takes the unsubscriptions of the closed connection
    rss2=$(rss_kb)
    [ $((rss2 - rss0)) -le $BOUND_KB ] && break
    sleep 0.1
done
echo "     broker VmRSS $rss2 kB after the flooder closed its connection"
[ $((rss2 - rss0)) -le $BOUND_KB ] || fail "RSS stayed at +$((rss2 - rss0)) kB after the flooder left (bound $BOUND_KB kB)"
pass "after the connection closed: RSS within $BOUND_KB kB of its start"

for p in "${PIDS[@]}"; do [ "$p" = "$FLOOD" ] || kill -0 "$p" 2>/dev/null || fail "a process died"; done
kill -TERM $BROKER
wait $BROKER
expect_dropped subscriptions "bound: subscriptions per connection (cut)" 3
grep -q "they add up" "$TMP/broker.log" || fail "the books do not add up"
pass "each flooding connection was cut and counted, the books add up"
[ -z "$LATE_FAILED" ] || fail "a late joiner's resend was refused (above)"
echo "4 passed, 0 failed"

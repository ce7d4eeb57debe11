#!/usr/bin/env bash
# Many connections, each from its own loopback address, while a learner and an actor train:
# 500 to the weights-out port each sending 60 subscriptions of 500 random bytes (libzmq ends
# each at its first: over the port's message bound), then 500 idle ones to the segments port.
# The connections are libzmq's own (tests/conn_flood.py, python3-zmq). The broker's RSS
# (VmRSS from /proc) grows by at most 32 MB at its peak and is within 8 MB of its start 10 s
# after they close; `volley ctl status` answers throughout (the slowest answer is reported; a
# wait of STATUS_WAIT s, far above it, only stops a broker that does not answer); training
# goes on. Then 300 connections from one address: those over --max-conns-per-addr are cut,
# counted and the address logged once.
. "$(dirname "$0")/lib.sh"
FLOOD="/usr/bin/python3 $(dirname "$0")/conn_flood.py"
PORT=$(free_port)
PEAK_KB=$((32 * 1024))
AFTER_KB=$((8 * 1024))
STATUS_WAIT=30 # status_ms's wait for an answer: 99999 when none came in it

training_broker
wait_for "$TMP/learner.log" 30 "version=([3-9][0-9]|[0-9]{3,})" || fail "training did not start"

check_flood() { # what, then watch_flood's figures
    local what=$1 rss0=$2 peak=$3 after=$4 slowest=$5
    echo "     $what: VmRSS $rss0 kB at start, $peak kB at peak (+$((peak - rss0))), $after kB 10 s after the close (+$((after - rss0))); slowest status ${slowest} ms; flooder: $(tr '\n' ' ' < "$TMP/flood.out")"
    [ $((peak - rss0)) -le $PEAK_KB ] || fail "$what grew the broker by $((peak - rss0)) kB (bound $PEAK_KB)"
    [ $((after - rss0)) -le $AFTER_KB ] || fail "$what: the broker kept $((after - rss0)) kB after the close (bound $AFTER_KB)"
    [ "$slowest" != 99999 ] || fail "$what: volley ctl status got no answer within $STATUS_WAIT s"
    pass "$what: RSS +$((peak - rss0)) kB at peak, +$((after - rss0)) kB after, slowest status answer $slowest ms"
}

v0=$(learner_version)
check_flood "500 XSUB x 60 subscriptions of 500 B" \
    $(watch_flood $FLOOD 127.0.0.1:$((PORT + 3)) XSUB 500 --subs 60 --size 500 --hold 4)
grep -q "ended by the broker 500 of 500" "$TMP/flood.out" ||
    fail "a subscription over the port's message bound did not end its connection: $(cat "$TMP/flood.out")"
pass "every connection sending a 500-byte subscription was ended by libzmq"
check_flood "500 idle PUSH" $(watch_flood $FLOOD 127.0.0.1:$PORT PUSH 500 --hold 4)
v1=$(learner_version)
[ "${v1:-0}" -ge $((v0 + 5)) ] || fail "training stalled during the floods (version $v0 -> $v1)"
pass "training went on: version $v0 -> $v1"

$FLOOD 127.0.0.1:$PORT PUSH 300 --from 127.0.0.3 --hold 2 > "$TMP/one.out" 2>&1 || fail "flooder failed: $(cat "$TMP/one.out")"
grep -q "ended by the broker 44 of 300" "$TMP/one.out" || fail "not 44 of 300 cut: $(cat "$TMP/one.out")"
for p in "${PIDS[@]}"; do kill -0 "$p" 2>/dev/null || fail "a process died"; done
kill -TERM $BROKER
wait $BROKER
expect_dropped connections "bound: connections per address (--max-conns-per-addr)" 44
[ "$(grep -c "refusing connections from 127.0.0.3" "$TMP/broker.log")" = 1 ] || fail "127.0.0.3 not logged once"
grep -q "they add up" "$TMP/broker.log" || fail "the books do not add up"
pass "300 connections from one address: 44 over --max-conns-per-addr cut, counted, logged once"
echo "5 passed, 0 failed"

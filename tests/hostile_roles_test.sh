#!/usr/bin/env bash
# Attacks on an open broker from an address it does not trust (127.0.0.2:
# only 127.0.0.1 and ::1 are trusted without --trust), while a learner and an
# actor train from loopback: forged weights, forged hellos, control verbs,
# subscription floods and churn, topics over the weights-out port's message
# bound, junk on the weights-out port, segments that
# declare far more than their policy's spec. Each is refused and counted
# under a reason naming the role or the bound; the broker's memory stays
# within its bound (VmRSS from /proc); training goes on.
. "$(dirname "$0")/lib.sh"
INJECT=${2:?usage: $0 volley vl_inject}
CONN_FLOOD="/usr/bin/python3 $(dirname "$0")/conn_flood.py"
STATUS_WAIT=30 # status_ms's wait for an answer, far above the milliseconds it takes
PORT=$(free_port)
FROM="127.0.0.2:0;127.0.0.1:$PORT" # an outsider: another address on this host
RSS_BOUND_KB=$((48 * 1024))         # what any attack below may add to the broker's RSS

training_broker --max-lag 20
trains_on() { # training goes on: 5 more versions after the attack
    local v0=$1
    for _ in $(seq 150); do
        [ "$(learner_version)" -ge $((v0 + 5)) ] && return 0
        sleep 0.2
    done
    fail "training stalled after $2 (version $(learner_version), was $v0)"
}
wait_for "$TMP/learner.log" 30 "version=([3-9][0-9]|[0-9]{3,})" || fail "training did not start"
rss0=$(rss_kb)

v=$(learner_version)
"$INJECT" "$FROM" "pub-forged=4611686018427387904" > "$TMP/forge.out" || fail "vl_inject failed"
grep -q "forged weights version" "$TMP/forge.out" || fail "no weights to forge: $(cat "$TMP/forge.out")"
trains_on "$v" "forged weights"
"$VOLLEY" ctl --broker 127.0.0.1:$PORT status > "$TMP/s1" || fail "status failed"
grep -q "too stale" "$TMP/s1" && fail "segments dropped as too stale after a forged version"
grep -q "4611686018427387904" "$TMP/s1" && fail "the forged version reached an actor or the books"
# From this machine (trusted, the learner's own address) a version below the learner's last
# is refused too: versions only go forward within a learner's epoch.
"$INJECT" 127.0.0.1:$PORT "pub-forged=1" > /dev/null || fail "vl_inject failed"
pass "forged weights (version 2^62) from an outsider: refused, reached no actor, no segment too stale, training on"

v=$(learner_version)
"$INJECT" "$FROM" "hello-forged=20" || fail "vl_inject failed"
trains_on "$v" "forged hellos"
grep -q "replaced by a new connection" "$TMP/broker.log" && fail "a forged hello replaced the learner"
pass "20 forged hellos from an outsider: none replaced the learner, training on"

"$VOLLEY" ctl --broker "$FROM" pause default > "$TMP/pause.out" 2>&1 && fail "an outsider paused the learner"
"$VOLLEY" ctl --broker "$FROM" shutdown > "$TMP/shutdown.out" 2>&1 && fail "an outsider shut the broker down"
sleep 0.5
kill -0 $BROKER 2>/dev/null || fail "the broker stopped"
"$VOLLEY" ctl --broker "$FROM" status > "$TMP/s2" 2>&1 || fail "status refused to an outsider on an open broker"
pass "pause and shutdown from an outsider refused; status answered"

v=$(learner_version)
"$INJECT" "$FROM" "seg-huge=10" "seg-huge=10:fresh" > "$TMP/huge.out" || fail "vl_inject failed"
sed 's/^/     /' "$TMP/huge.out"
trains_on "$v" "huge segments"
rss2=$(rss_kb)
[ $((rss2 - rss0)) -lt $RSS_BOUND_KB ] || fail "huge segments: RSS $rss0 -> $rss2 kB"
echo "     after 10 huge segments: broker VmRSS $rss0 -> $rss2 kB"
pass "10 segments declaring 15 MB (236 MB unpacked) of a 17 KB policy, 10 of a policy with no spec (16 MiB ceiling): RSS within its bound, training on"

"$INJECT" "$FROM" "sub-flood=80000:63:random" "sub-flood=20000:16" "hold=3" > "$TMP/flood.out" &
FLOOD=$!
sleep 5.5
rss1=$(rss_kb)
wait $FLOOD
[ $((rss1 - rss0)) -lt $RSS_BOUND_KB ] || fail "subscription flood: RSS $rss0 -> $rss1 kB"
echo "     subscription flood: broker VmRSS $rss0 -> $rss1 kB (bound +$RSS_BOUND_KB kB)"
pass "100,000 made-up subscriptions: RSS within its bound"

"$INJECT" "$FROM" "sub-churn=20000" "xpub-junk=1000" "hold=1" || fail "vl_inject failed"

# A topic longer than any the broker takes: over the weights-out port's message bound, it ends
# its connection inside libzmq, before libzmq files it or the broker reads it (so it is in no
# count); one of 64 bytes is within that bound: the broker counts it and ends its connection.
v=$(learner_version)
$CONN_FLOOD 127.0.0.1:$((PORT + 3)) XSUB 20 --subs 60 --size 200 --from 127.0.0.2 --hold 1 \
    > "$TMP/long.out" 2>&1 || fail "flooder failed: $(cat "$TMP/long.out")"
grep -q "ended by the broker 20 of 20" "$TMP/long.out" || fail "200-byte topics: $(cat "$TMP/long.out")"
$CONN_FLOOD 127.0.0.1:$((PORT + 3)) XSUB 8 --subs 1 --size 64 --from 127.0.0.2 --hold 1 \
    > "$TMP/long.out" 2>&1 || fail "flooder failed: $(cat "$TMP/long.out")"
grep -q "ended by the broker 8 of 8" "$TMP/long.out" || fail "64-byte topics: $(cat "$TMP/long.out")"
ms=$(status_ms)
[ "$ms" != 99999 ] || fail "volley ctl status got no answer within $STATUS_WAIT s"
trains_on "$v" "over-long topics"
pass "20 connections sending 200-byte topics ended by libzmq, 8 sending one of 64 bytes counted and ended; status answers (in $ms ms), training on"


for p in "${PIDS[@]}"; do kill -0 "$p" 2>/dev/null || fail "a process died"; done
kill -TERM $BROKER
wait $BROKER
expect_dropped publications "role: the peer may not do this" 1
expect_dropped publications "version not newer than the learner's last" 1
expect_dropped hellos "role: the peer may not do this" 20
expect_dropped commands "role: the peer may not do this" 2
expect_dropped subscriptions "bound: subscription topics full" 64
expect_dropped subscriptions "bound: topic is no policy id (or over 63 bytes)" 8
grep -qF "dropped 8 subscriptions: bound: topic is no policy id" "$TMP/broker.log" ||
    fail "a topic over the port's message bound reached the broker's count"
expect_dropped subscriptions "bound: subscriptions per connection (cut)" 2
expect_dropped subscriptions "bound: cached-value resends over their rate" 50
expect_dropped subscriptions "junk: not a subscription" 1
expect_dropped segments "bound: declared size over its policy's ceiling" 20
grep -qE "refusing [a-z]+ from 127.0.0.2" "$TMP/broker.log" || fail "the refused peer was not named in the log"
grep -q "they add up" "$TMP/broker.log" || fail "the books do not add up"
pass "every refusal counted under its role or bound, the peer named once, the books add up"
echo "7 passed, 0 failed"

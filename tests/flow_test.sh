#!/usr/bin/env bash
# Credit-based flow control: a learner that stops (SIGSTOP, 4 s; FLOW_STOP_S=30
# for the issue's 30 s figure) grants no credit,
# so the broker queues its segments in a queue bounded in bytes, dropping the
# oldest; the broker's memory stays bounded, training resumes on SIGCONT, and
# the broker's counters add up: received = routed + dropped + queued.
. "$(dirname "$0")/lib.sh"
PORT=$(free_port)
QUEUE=$((2 << 20)) # 2 MiB

"$VOLLEY" broker --port "$PORT" --bind 127.0.0.1 --queue-bytes $QUEUE > "$TMP/broker.log" 2>&1 &
BROKER=$!
PIDS+=($BROKER)
"$VOLLEY" learner --env cartpole --broker 127.0.0.1:$PORT --verbose > "$TMP/learner.log" 2>&1 &
LEARNER=$!
PIDS+=($LEARNER)
wait_for "$TMP/broker.log" 10 "learner for policy 'default' joined" || fail "learner never joined"
for i in 1 2 3; do
    "$VOLLEY" actor --broker 127.0.0.1:$PORT --envs 16 --max-ahead 0 --quiet \
        > "$TMP/actor-$i.log" 2>&1 &
    PIDS+=($!)
done
version() { grep -oE "version=[0-9]+" "$TMP/learner.log" | tail -1 | cut -d= -f2; }
rss_kb() { awk '/^VmRSS:/ {print $2}' /proc/$BROKER/status; }
wait_for "$TMP/learner.log" 20 "version=[1-9][0-9]" || fail "training did not start"
sleep 1
rss0=$(rss_kb)
pass "training: version $(version), broker RSS ${rss0} kB"

# While the learner is stopped the broker may hold: the queue itself (at most
# QUEUE, per-message overhead included); libzmq's receive buffers still
# referenced by queued messages and its PULL pipes from three actors pushing
# flat out (up to their HWM, bounded but not by us: allow another QUEUE); the
# malloc arena not yet returned to the system after drops (another QUEUE).
# Hence 3 x QUEUE above the running RSS, plus 20 MB for the TCP send buffer
# towards the stopped learner, libzmq batches and allocator slack.
limit=$((rss0 + 3 * QUEUE / 1024 + 20 * 1024))
STOP_S=${FLOW_STOP_S:-4}
kill -STOP $LEARNER
peak=$rss0
# 4 s: under the broker's 5 s expiry, so the queue, not the expiry, bounds it; longer, the
# broker forgets the silent learner at 5 s, frees its queue and drops its segments as unserved.
for _ in $(seq $((STOP_S * 10))); do
    r=$(rss_kb)
    [ "$r" -gt "$peak" ] && peak=$r
    sleep 0.1
done
kill -CONT $LEARNER
echo "broker RSS: ${rss0} kB before the stop, peak ${peak} kB while stopped ${STOP_S} s, limit ${limit} kB"
[ "$peak" -le "$limit" ] || fail "broker RSS ${peak} kB over ${limit} kB with the learner stopped"
pass "broker memory bounded while the learner was stopped"

before=$(version)
for _ in $(seq 100); do
    [ "$(version)" -ge $((before + 10)) ] && break
    sleep 0.2
done
[ "$(version)" -ge $((before + 10)) ] || fail "training did not resume (version $(version), was $before)"
pass "training resumed: version $before -> $(version)"

kill -TERM $BROKER
wait $BROKER
grep "segments received=" "$TMP/broker.log"
grep "  dropped" "$TMP/broker.log"
n=$(sed -n "s/.*dropped \([0-9]*\) segments: learner queue over its byte bound\$/\1/p" "$TMP/broker.log")
[ -n "$n" ] && [ "$n" -gt 0 ] || fail "no segment dropped for the queue's byte bound"
read -r recv routed dropped queued < <(sed -n \
    's/.*segments received=\([0-9]*\) routed=\([0-9]*\) dropped=\([0-9]*\) queued=\([0-9]*\).*/\1 \2 \3 \4/p' \
    "$TMP/broker.log")
[ -n "${recv:-}" ] || fail "no counters in the broker's exit log"
[ "$recv" -eq $((routed + dropped + queued)) ] ||
    fail "received $recv != routed $routed + dropped $dropped + queued $queued"
sum=$(sed -n "s/.*dropped \([0-9]*\) segments: .*/\1/p" "$TMP/broker.log" | awk '{s += $1} END {print s + 0}')
[ "${sum:-0}" -eq "$dropped" ] || fail "drops by reason add to ${sum:-0}, not $dropped"
pass "counters add up: received $recv = routed $routed + dropped $dropped + queued $queued"
echo "4 passed, 0 failed"

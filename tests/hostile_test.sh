#!/usr/bin/env bash
# Malformed messages of every kind, sent to a running broker while a learner
# trains, are each counted under their reason and dropped; training goes on
# and no process dies.
. "$(dirname "$0")/lib.sh"
INJECT=${2:?usage: $0 volley vl_inject}
PORT=$(free_port)

STARTED=$(date +%s%N)
"$VOLLEY" broker --port "$PORT" --bind 127.0.0.1 --max-lag 20 > "$TMP/broker.log" 2>&1 &
BROKER=$!
PIDS+=($BROKER)
"$VOLLEY" learner --env cartpole --broker 127.0.0.1:$PORT --batch 4 --capacity 16 --verbose > "$TMP/learner.log" 2>&1 &
PIDS+=($!)
"$VOLLEY" actor --broker 127.0.0.1:$PORT --envs 4 --quiet > "$TMP/actor.log" 2>&1 &
PIDS+=($!)
version() { grep -oE "version=[0-9]+" "$TMP/learner.log" | tail -1 | cut -d= -f2; }
# past version 20, so that a segment of version 0 is too stale for --max-lag 20
wait_for "$TMP/learner.log" 30 "version=([3-9][0-9]|[0-9]{3,})" || fail "training did not start"
before=$(version)

FAULTS="seg-garbage seg-truncated seg-multipart seg-version seg-horizon seg-shape seg-policy
        seg-bound seg-bomb seg-corrupt seg-nan-reward seg-inf-obs seg-action seg-unknown-policy
        seg-stale seg-spec cmd-verb cmd-long-verb cmd-frames beat-garbage beat-missing beat-nan
        beat-spec
        pause-unknown pause-policy
        hello-garbage hello-version hello-policy
        pub-garbage pub-nan-weights pub-mismatch pub-stats-nan pub-one-frame pub-rank5
        pub-dims-overflow"
# For its first 3 s a broker holds segments of a policy nobody serves yet (a restarted broker
# hears from actors before their learner): the unknown-policy fault must come after that.
while [ $(( ($(date +%s%N) - STARTED) / 1000000 )) -lt 3500 ]; do sleep 0.1; done
"$INJECT" 127.0.0.1:$PORT $FAULTS || fail "vl_inject failed"
pass "sent $(echo $FAULTS | wc -w) malformed messages"

for _ in $(seq 100); do
    [ "$(version)" -ge $((before + 5)) ] && break
    sleep 0.2
done
[ "$(version)" -ge $((before + 5)) ] || fail "training stalled after the bad input (version $(version), was $before)"
for p in "${PIDS[@]}"; do kill -0 "$p" 2>/dev/null || fail "a process died"; done
pass "training continued: version $before -> $(version), every process alive"

kill -TERM $BROKER
wait $BROKER
expect_count() {  # $1 kind, $2 reason, $3 minimum count
    local n
    n=$(sed -n "s/.*dropped \([0-9]*\) $1: $2\$/\1/p" "$TMP/broker.log")
    [ -n "$n" ] && [ "$n" -ge "$3" ] || fail "broker did not count $1 dropped for '$2' (got '${n:-none}')"
}
expect_count segments "malformed protobuf" 3       # garbage, truncated, multipart
expect_count segments "wrong schema version" 1
expect_count segments "declared size over limit" 1 # horizon
expect_count segments "sizes inconsistent" 1
expect_count segments "bad policy id" 1
expect_count segments "bad lz4 payload" 2          # bound, corrupt
expect_count segments "bound: declared size over its policy's ceiling" 1 # bomb: refused before decompressing
expect_count segments "non-finite float" 2         # reward, observation
expect_count segments "action out of range" 1
expect_count segments "no learner serves its policy" 1
expect_count segments "too stale" 1
expect_count segments "horizon 32, policy 'default' has 64" 1   # a valid segment, not the policy's spec
expect_count specs "horizon: policy 'default' has 64, this actor 32" 1 # a beat declaring another spec
expect_count commands "unknown verb" 1
expect_count commands "malformed protobuf" 4        # long verb, three frames, beat garbage, beat missing
expect_count commands "non-finite float" 1         # beat
expect_count commands "no learner serves its policy" 1
expect_count commands "bad policy id" 1
expect_count hellos "malformed protobuf" 1
expect_count hellos "wrong schema version" 1
expect_count hellos "bad policy id" 1
expect_count publications "malformed protobuf" 2   # garbage body, one frame
expect_count publications "non-finite float" 2     # weights, stats
expect_count publications "not what this receiver serves" 1
expect_count publications "sizes inconsistent" 1         # a tensor of rank 5
expect_count publications "declared size over limit" 1   # a rank-4 tensor of 2^64 floats
grep -q "dropping segments: malformed protobuf" "$TMP/broker.log" || fail "first drop not logged with its reason"
pass "every bad message counted under its reason and kind"
echo "3 passed, 0 failed"

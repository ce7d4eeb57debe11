#!/usr/bin/env bash
# The wire contract is complete: tests/contract_client.py, an actor written only
# from messages/PROTOCOL.md and volley.proto in plain Python (pyzmq, protobuf,
# lz4; no libvolley), makes a real `volley broker` and `volley learner --env
# cartpole` solve CartPole-v1 (mean return >= 475 over 100 episodes, as the
# learner's own Stats report it). It speaks schema 3 (action spaces, float
# actions) except for its first round of segments, sent in schema 2 (int32
# actions, num_actions) as older senders write them. Every segment it pushes is accepted (none
# refused by the broker or the learner, which ingested exactly the steps it sent, no
# sequence gaps), it applies weights of increasing versions, and runs with the
# wrong horizon or another action space are refused by the broker with a reason
# naming the field.
# (Refusals by the learner are booked by the broker as drops: no kind=drop line
# means neither refused anything. Segments the learner accepted and later found
# too stale under load, --max-lag, are not refusals and are only reported.)
. "$(dirname "$0")/lib.sh"
SRC=$(cd "$(dirname "$0")/.." && pwd)
PY=/usr/bin/python3
CLIENT="$SRC/tests/contract_client.py"
HORIZON=64 HIDDEN=16 ENVS=16 TARGET=475 # the learner is started with the same horizon and hidden

command -v protoc > /dev/null || fail "protoc not found (Debian: protobuf-compiler; compose/setup.sh installs it)"
$PY -c 'import zmq, google.protobuf, lz4.block' 2> "$TMP/import.err" ||
    fail "$PY lacks a module (python3-zmq python3-protobuf python3-lz4): $(tail -1 "$TMP/import.err")"

port=$(free_port)
B=127.0.0.1:$port
"$VOLLEY" broker --port "$port" --bind 127.0.0.1 > "$TMP/broker.log" 2>&1 &
PIDS+=($!)
wait_for "$TMP/broker.log" 10 "listening on ports" || fail "broker did not start"
"$VOLLEY" learner --broker "$B" --env cartpole --horizon $HORIZON --hidden $HIDDEN --seed 1 \
    > "$TMP/learner.log" 2>&1 &
PIDS+=($!)
wait_for "$TMP/learner.log" 10 "training policy" || fail "learner did not start"

t0=$(date +%s)
timeout 420 $PY "$CLIENT" --broker "$B" --id 4242 --seed 1 --envs $ENVS --horizon $HORIZON \
    --hidden $HIDDEN --target $TARGET --max-seconds 400 --schema2-rounds 1 > "$TMP/client.log" 2>&1
rc=$?
secs=$(($(date +%s) - t0))
tail -4 "$TMP/client.log"
[ $rc -eq 0 ] || fail "the Python client exited $rc after ${secs} s: $(tail -2 "$TMP/client.log")"
grep -q '^acting for policy' "$TMP/client.log" || fail "the client never got weights"
grep -q '^REFUSED' "$TMP/client.log" && fail "the broker refused the client: $(grep -m1 '^REFUSED' "$TMP/client.log")"
reached=$(grep -m1 '^reached: ' "$TMP/client.log") || fail "no reached line"
pass "the Python client trained CartPole to the bar in ${secs} s: $reached"

"$VOLLEY" top --broker "$B" --once --kv > "$TMP/top.log" 2>&1 || fail "volley top got no answer: $(cat "$TMP/top.log")"
kv() { sed -n "/kind=$1 /s/.* $2=\([^ ]*\).*/\1/p" "$TMP/top.log" | head -1; }
[ "$(kv broker dropped)" = 0 ] && [ "$(kv broker received)" = "$(kv broker routed)" ] ||
    fail "the broker did not route every segment: $(grep kind=broker "$TMP/top.log")"
# The broker's own drops fail the test; the learner's (lag, capacity) are its pace, only shown.
grep 'kind=drop ' "$TMP/top.log" | grep -vqE 'drop_kind=learner reason="?(lag|capacity)' &&
    fail "the broker dropped something: $(grep 'kind=drop ' "$TMP/top.log")"
steps=$(sed -n 's/.*we stepped \([0-9]*\) .*/\1/p' "$TMP/client.log")
[ -n "$steps" ] && [ "$(kv learner env_steps)" = "$steps" ] ||
    fail "the learner ingested $(kv learner env_steps) env steps, the client stepped ${steps:-?}"
grep 'kind=actor ' "$TMP/top.log" | grep -q ' id=4242 .* seq_gaps=0 restarts=0 ' ||
    fail "the broker saw gaps or restarts in the client's sequence: $(grep 'kind=actor ' "$TMP/top.log")"
ret=$(kv learner mean_return)
awk -v r="$ret" -v t=$TARGET -v w="$(kv learner window)" 'BEGIN { exit !(r >= t && w == 100) }' ||
    fail "the learner's last stats say mean return $ret over $(kv learner window) episodes, wanted >= $TARGET over 100"
pass "every segment accepted: the learner ingested all $steps steps, none refused, no gaps; its mean return $ret (learner segments_dropped=$(kv learner segments_dropped): stale or evicted, not refused)"

applied=$(grep -m1 '^weights applied: ' "$TMP/client.log")
n=$(echo "$applied" | sed -n 's/^weights applied: \([0-9]*\) versions.*/\1/p')
echo "$applied" | grep -q 'each newer than the last: yes$' && [ "${n:-0}" -ge 10 ] ||
    fail "weights not applied in increasing versions: ${applied:-no summary line}"
pass "the client applied $n weights versions, each newer than the last"
old=$(sed -n 's/^segments sent: [0-9]*, \([0-9]*\) of them in schema 2$/\1/p' "$TMP/client.log")
[ "${old:-0}" = $ENVS ] || fail "the client sent ${old:-no} schema-2 segments, wanted $ENVS: $(grep '^segments sent' "$TMP/client.log")"
pass "schema-2 segments are still taken: $(grep -m1 '^segments sent' "$TMP/client.log")"
trunc=$(sed -n 's/^episodes ended: .*, \([0-9]*\) truncated .*/\1/p' "$TMP/client.log")
[ "${trunc:-0}" -gt 0 ] || fail "no episode was truncated: $(grep '^episodes ended' "$TMP/client.log")"
pass "truncation exercised: $(grep -m1 '^episodes ended' "$TMP/client.log")"

# A client with another horizon: the broker refuses its spec, naming the field.
timeout 60 $PY "$CLIENT" --broker "$B" --id 4243 --envs 2 --horizon 32 --hidden $HIDDEN \
    --max-seconds 30 > "$TMP/wrong.log" 2>&1
rc=$?
grep -m1 '^REFUSED spec' "$TMP/wrong.log"
[ $rc -eq 2 ] || fail "a client with horizon 32 exited $rc, wanted 2 (refused): $(tail -3 "$TMP/wrong.log")"
grep -q "^REFUSED spec: horizon: policy 'default' has $HORIZON, this actor 32" "$TMP/wrong.log" ||
    fail "no refusal naming the horizon: $(tail -3 "$TMP/wrong.log")"
"$VOLLEY" top --broker "$B" --once --kv > "$TMP/top2.log" 2>&1
grep -q 'kind=drop drop_kind=specs reason="horizon: ' "$TMP/top2.log" ||
    fail "the broker did not count the refused spec: $(grep 'kind=drop' "$TMP/top2.log")"
pass "a client with the wrong horizon is refused: $(grep -m1 '^REFUSED spec' "$TMP/wrong.log")"

# A client declaring another action space: refused, the reason naming both spaces.
timeout 60 $PY "$CLIENT" --broker "$B" --id 4244 --envs 2 --horizon $HORIZON --hidden $HIDDEN \
    --choices 3 --max-seconds 30 > "$TMP/space.log" 2>&1
rc=$?
[ $rc -eq 2 ] || fail "a client declaring discrete(3) exited $rc, wanted 2 (refused): $(tail -3 "$TMP/space.log")"
grep -q "^REFUSED spec: actions: policy 'default' has discrete(2), this actor discrete(3)$" "$TMP/space.log" ||
    fail "no refusal naming both action spaces: $(tail -3 "$TMP/space.log")"
pass "a client with another action space is refused: $(grep -m1 '^REFUSED spec' "$TMP/space.log")"

# A learner normalising observations publishes their statistics with its weights;
# the client normalises as PROTOCOL.md §5 says (a client ignoring them does not
# reach the bar: its actions come from another policy than the learner's).
"$VOLLEY" learner --broker "$B" --policy normed --env cartpole --horizon $HORIZON --hidden $HIDDEN \
    --seed 1 --norm-obs 1 --norm-reward 0 > "$TMP/learner_norm.log" 2>&1 &
PIDS+=($!)
wait_for "$TMP/learner_norm.log" 10 "training policy" || fail "the normalising learner did not start"
timeout 420 $PY "$CLIENT" --broker "$B" --policy normed --id 4245 --seed 2 --envs $ENVS \
    --horizon $HORIZON --hidden $HIDDEN --target $TARGET --max-seconds 400 > "$TMP/norm.log" 2>&1
rc=$?
[ $rc -eq 0 ] || fail "the client on normalised observations exited $rc: $(tail -3 "$TMP/norm.log")"
normed=$(sed -n 's/^weights normalising observations: \([0-9]*\) of .*/\1/p' "$TMP/norm.log")
[ "${normed:-0}" -gt 0 ] || fail "no weights carried statistics: $(grep '^weights normalising' "$TMP/norm.log")"
pass "the client reached the bar on a normalising learner's weights: $(grep -m1 '^reached: ' "$TMP/norm.log" | cut -d';' -f1), $(grep -m1 '^weights normalising' "$TMP/norm.log")"
echo "8 passed, 0 failed"

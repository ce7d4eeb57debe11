#!/usr/bin/env bash
# The learner owns the model: a C actor given no --model acts with the network its policy's
# learner trains, whether it starts after the learner (1) or before it (2): it is not refused,
# its log names the learner's network, and training moves (the learner's version and env steps,
# read with `volley top --once --kv`, grow). An actor that names another --model is still
# refused (3).
# Usage: model_owner_test.sh path/to/volley
. "$(dirname "$0")/lib.sh"
PORT=$(free_port)
B=127.0.0.1:$PORT
LSTM="linear(64) lstm(64)"
"$VOLLEY" broker --port "$PORT" --bind 127.0.0.1 > "$TMP/broker.log" 2>&1 &
PIDS+=($!)

# Prints "VERSION ENV_STEPS" of policy $1's learner as `volley top --kv` shows it.
progress() {
    "$VOLLEY" top --broker $B --once --kv 2>/dev/null |
        grep -E "kind=learner policy=$1 " | sed -nE 's/.* version=([0-9]+) .* env_steps=([0-9]+) .*/\1 \2/p'
}
# Waits up to 30 s for policy $1's learner to move past version 2 and then grow again.
expect_training() {
    local v0='' s0='' v s
    for _ in $(seq 60); do
        read -r v s <<< "$(progress "$1")"
        if [ -n "${v:-}" ] && [ "$v" -ge 2 ]; then
            if [ -z "$v0" ]; then v0=$v; s0=$s
            elif [ "$v" -gt "$v0" ] && [ "$s" -gt "$s0" ]; then
                echo "     version $v0 -> $v, env steps $s0 -> $s"; return 0
            fi
        fi
        sleep 0.5
    done
    fail "policy '$1' does not train (version ${v:-none}, env steps ${s:-none})"
}
# Checks that actor log $1 acts with the learner's network and was never refused.
expect_follows() {
    wait_for "$1" 20 "policy '$2' acts with its learner's network: linear\(64\) lstm\(64\)" ||
        fail "the actor of '$2' does not say it acts with the learner's network"
    grep -q "refused" "$1" && fail "the actor of '$2' was refused: $(grep refused "$1")"
    return 0
}

# 1. the learner first, then an actor with no --model
"$VOLLEY" learner --env cartpole --model "$LSTM" --broker $B > "$TMP/learner-after.log" 2>&1 &
L1=$!
PIDS+=($L1)
wait_for "$TMP/broker.log" 10 "learner for policy 'default' joined" || fail "the learner never joined"
"$VOLLEY" actor --broker $B --envs 4 --id 1 > "$TMP/actor-after.log" 2>&1 &
PIDS+=($!)
expect_follows "$TMP/actor-after.log" default
expect_training default
kill -0 $L1 2>/dev/null || fail "the learner stopped: $(tail -1 "$TMP/learner-after.log")"
pass "an actor started after its learner acts with the learner's $LSTM and trains"

# 2. an actor with no --model first, then its learner
"$VOLLEY" actor --policy early --broker $B --envs 4 --id 2 > "$TMP/actor-before.log" 2>&1 &
PIDS+=($!)
wait_for "$TMP/broker.log" 10 "actor 2 \(policy 'early'\) joined" || fail "the early actor never joined"
sleep 1 # its spec, with the network open, is the policy's
"$VOLLEY" learner --env cartpole --model "$LSTM" --policy early --broker $B > "$TMP/learner-before.log" 2>&1 &
L2=$!
PIDS+=($L2)
expect_follows "$TMP/actor-before.log" early
expect_training early
kill -0 $L2 2>/dev/null || fail "the learner that came second stopped: $(tail -1 "$TMP/learner-before.log")"
pass "an actor started before its learner acts with the learner's $LSTM and trains"

# 3. an actor that names another network is refused, as before
"$VOLLEY" actor --broker $B --envs 2 --id 3 --model "linear(64) tanh linear(64) tanh" \
    > "$TMP/actor-other.log" 2>&1
rc=$?
[ $rc -eq 2 ] || fail "an actor naming another model exited $rc, not 2"
grep -q "the broker refused this actor: state size: policy 'default' has 128, this actor 0" \
    "$TMP/actor-other.log" || fail "the refusal does not name the network: $(tail -2 "$TMP/actor-other.log")"
pass "an actor naming another --model is refused: $(sed -n 's/.*refused this actor: //p' "$TMP/actor-other.log")"
echo "3 passed, 0 failed"

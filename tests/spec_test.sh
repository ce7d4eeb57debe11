#!/usr/bin/env bash
# Specs and refusals, and a learner that needs no environment code:
#  1. an actor whose horizon differs from its policy's is refused by the broker: the actor
#     logs the field with both values and exits 2; `volley top` shows the policy's spec and
#     the refusal, counted under the same reason;
#  2. a learner started without --env takes the spec from the broker (waiting, with a log
#     line, until an actor declares it) and trains actors of a plugin env it never loads;
#  3. one actor that waits for new weights after every round (--wait-ms forever) and a
#     learner at its default --batch (16, more than the actor's 4 envs send a round) still
#     train: the learner trains on what waits instead of waiting for a batch that never comes.
# Usage: spec_test.sh path/to/volley path/to/libvl_corridor.so
. "$(dirname "$0")/lib.sh"
PLUGIN=${2:?usage: $0 path/to/volley path/to/libvl_corridor.so}
PORT=$(free_port)
B=127.0.0.1:$PORT
"$VOLLEY" broker --port "$PORT" --bind 127.0.0.1 > "$TMP/broker.log" 2>&1 &
PIDS+=($!)
version() { grep -oE "version=[0-9]+" "$1" | tail -1 | cut -d= -f2; }

# 1. a mismatched actor
"$VOLLEY" learner --env cartpole --broker $B --verbose > "$TMP/learner.log" 2>&1 &
PIDS+=($!)
"$VOLLEY" actor --broker $B --envs 4 --id 1 > "$TMP/actor.log" 2>&1 &
PIDS+=($!)
wait_for "$TMP/learner.log" 20 "version=[1-9]" || fail "training did not start"
"$VOLLEY" actor --broker $B --envs 2 --id 2 --horizon 32 > "$TMP/bad-actor.log" 2>&1
rc=$?
[ $rc -eq 2 ] || fail "the mismatched actor exited $rc, not 2"
grep -q "the broker refused this actor: horizon: policy 'default' has 64, this actor 32" \
    "$TMP/bad-actor.log" || fail "the mismatched actor's log lacks the reason"
pass "a mismatched actor exits 2 with: $(sed -n 's/.*refused this actor: //p' "$TMP/bad-actor.log")"
"$VOLLEY" top --broker $B --once > "$TMP/top.txt" 2>&1 || fail "top failed: $(cat "$TMP/top.txt")"
grep -qE "^  default +obs f32\[4\] actions 2 horizon 64 hidden 64 env cartpole$" "$TMP/top.txt" ||
    fail "top shows no spec line: $(cat "$TMP/top.txt")"
grep -qE "^  specs +1  horizon: policy 'default' has 64, this actor 32$" "$TMP/top.txt" ||
    fail "top shows no refusal: $(cat "$TMP/top.txt")"
"$VOLLEY" top --broker $B --once --kv > "$TMP/top.kv" 2>&1
grep -q 'kind=spec policy=default obs=f32\[4\] actions=2 horizon=64 hidden=64 env=cartpole' \
    "$TMP/top.kv" || fail "top --kv shows no spec: $(grep spec "$TMP/top.kv")"
pass "top shows the policy's spec and the refusal under its reason"

# 2. a learner without the env's code, actors of a plugin env
"$VOLLEY" learner --policy corridor --broker $B --verbose > "$TMP/learner-corridor.log" 2>&1 &
PIDS+=($!)
wait_for "$TMP/learner-corridor.log" 10 "waiting for an actor of policy 'corridor' to declare" ||
    fail "the learner without --env did not say what it waits for"
"$VOLLEY" actor --policy corridor --env "$PLUGIN" --broker $B --envs 8 --id 3 > "$TMP/actor-corridor.log" 2>&1 &
PIDS+=($!)
wait_for "$TMP/learner-corridor.log" 20 "policy 'corridor' from the broker: obs f32\[[0-9]+\] actions 2 horizon 64 hidden 64 env corridor" ||
    fail "the learner did not take the plugin's spec from the broker"
wait_for "$TMP/learner-corridor.log" 60 "version=([2-9][0-9]|[0-9]{3,}) .* return=0\.(9[5-9])" ||
    fail "the learner without --env did not train the plugin's actors to solved"
pass "a learner without --env trained a plugin env's actors: $(grep -oE "version=[0-9]+ .* return=[0-9.]+" "$TMP/learner-corridor.log" | tail -1)"

# 3. one actor that never acts ahead of its weights, a learner at its default batch
"$VOLLEY" learner --env cartpole --policy lone --broker $B --verbose > "$TMP/learner-lone.log" 2>&1 &
PIDS+=($!)
"$VOLLEY" actor --policy lone --broker $B --envs 4 --id 4 --wait-ms 3600000 > "$TMP/actor-lone.log" 2>&1 &
PIDS+=($!)
wait_for "$TMP/learner-lone.log" 30 "version=([3-9][0-9]|[0-9]{3,}) " ||
    fail "a learner at --batch 16 with one 4-env actor stalled at version $(version "$TMP/learner-lone.log")"
pass "one 4-env actor and a learner at --batch 16 train (version $(version "$TMP/learner-lone.log"))"
echo "4 passed, 0 failed"

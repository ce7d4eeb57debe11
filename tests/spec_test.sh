#!/usr/bin/env bash
# Specs and refusals, and a learner that needs no environment code:
#  1. an actor whose horizon differs from its policy's is refused by the broker: the actor
#     logs the field with both values and exits 2; `volley top` shows the policy's spec and
#     the refusal, counted under the same reason;
#  2. a learner started without --env takes the spec from the broker (waiting, with a log
#     line, until an actor declares it) and trains actors of a plugin env it never loads; an
#     actor of a policy whose name is a prefix of that one's never acts on its weights;
#  3. one actor that waits for new weights after every round (--wait-ms forever) and a
#     learner at its default --batch (16, more than the actor's 4 envs send a round) still
#     train: the learner trains on what waits instead of waiting for a batch that never comes;
#  4. a segment the broker let through (--inspect header) and the learner refused is counted
#     in the broker's books as dropped under the learner's reason, not as routed.
# Usage: spec_test.sh path/to/volley path/to/libvl_corridor.so path/to/vl_inject
. "$(dirname "$0")/lib.sh"
PLUGIN=${2:?usage: $0 path/to/volley path/to/libvl_corridor.so path/to/vl_inject}
INJECT=${3:?usage: $0 path/to/volley path/to/libvl_corridor.so path/to/vl_inject}
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
grep -qE "^  default +obs f32\[4\] actions discrete\(2\) horizon 64 model linear\(64\) tanh linear\(64\) tanh env cartpole$" "$TMP/top.txt" ||
    fail "top shows no spec line: $(cat "$TMP/top.txt")"
grep -qE "^  specs +1  horizon: policy 'default' has 64, this actor 32$" "$TMP/top.txt" ||
    fail "top shows no refusal: $(cat "$TMP/top.txt")"
"$VOLLEY" top --broker $B --once --kv > "$TMP/top.kv" 2>&1
grep -q 'kind=spec policy=default obs=f32\[4\] actions=discrete(2) horizon=64 hidden=64 env=cartpole' \
    "$TMP/top.kv" || fail "top --kv shows no spec: $(grep spec "$TMP/top.kv")"
pass "top shows the policy's spec and the refusal under its reason"

# 2. a learner without the env's code, actors of a plugin env
"$VOLLEY" learner --policy corridor --broker $B --verbose > "$TMP/learner-corridor.log" 2>&1 &
PIDS+=($!)
wait_for "$TMP/learner-corridor.log" 10 "waiting for an actor of policy 'corridor' to declare" ||
    fail "the learner without --env did not say what it waits for"
"$VOLLEY" actor --policy corridor --env "$PLUGIN" --broker $B --envs 8 --id 3 > "$TMP/actor-corridor.log" 2>&1 &
PIDS+=($!)
wait_for "$TMP/learner-corridor.log" 20 "policy 'corridor' from the broker: obs f32\[[0-9]+\] actions discrete\(2\) horizon 64 model linear\(64\) tanh linear\(64\) tanh env corridor" ||
    fail "the learner did not take the plugin's spec from the broker"
wait_for "$TMP/learner-corridor.log" 60 "version=([2-9][0-9]|[0-9]{3,}) .* return=0\.(9[5-9])" ||
    fail "the learner without --env did not train the plugin's actors to solved"
pass "a learner without --env trained a plugin env's actors: $(grep -oE "version=[0-9]+ .* return=[0-9.]+" "$TMP/learner-corridor.log" | tail -1)"

# An actor of policy 'corrid' subscribes to a prefix of 'corridor''s topic: ZeroMQ delivers it
# corridor's weights, and it must not act on them.
"$VOLLEY" actor --policy corrid --env "$PLUGIN" --broker $B --envs 2 --id 5 --verbose > "$TMP/actor-prefix.log" 2>&1 &
PREFIX=$!
PIDS+=($PREFIX)
sleep 3
grep -q "acting for policy" "$TMP/actor-prefix.log" &&
    fail "an actor of policy 'corrid' acted on another policy's weights"
kill -0 $PREFIX 2>/dev/null || fail "the 'corrid' actor died"
kill -TERM $PREFIX
pass "an actor of policy 'corrid' does not act on 'corridor''s weights (topics match exactly)"

# 3. one actor that never acts ahead of its weights, a learner at its default batch
"$VOLLEY" learner --env cartpole --policy lone --broker $B --verbose > "$TMP/learner-lone.log" 2>&1 &
PIDS+=($!)
"$VOLLEY" actor --policy lone --broker $B --envs 4 --id 4 --wait-ms 3600000 > "$TMP/actor-lone.log" 2>&1 &
PIDS+=($!)
wait_for "$TMP/learner-lone.log" 30 "version=([3-9][0-9]|[0-9]{3,}) " ||
    fail "a learner at --batch 16 with one 4-env actor stalled at version $(version "$TMP/learner-lone.log")"
pass "one 4-env actor and a learner at --batch 16 train (version $(version "$TMP/learner-lone.log"))"
# 4. the learner's refusals in the broker's books
P2=$(free_port)
"$VOLLEY" broker --port "$P2" --bind 127.0.0.1 --inspect header > "$TMP/broker2.log" 2>&1 &
PIDS+=($!)
"$VOLLEY" learner --env cartpole --broker 127.0.0.1:$P2 --verbose > "$TMP/learner2.log" 2>&1 &
PIDS+=($!)
wait_for "$TMP/broker2.log" 10 "learner for policy 'default' joined" || fail "learner 2 never joined"
sleep 0.5 # its first credit
"$INJECT" 127.0.0.1:$P2 seg-nan-reward > /dev/null || fail "vl_inject failed"
ok=
for _ in $(seq 50); do
    "$VOLLEY" top --broker 127.0.0.1:$P2 --once > "$TMP/top2.txt" 2>&1
    grep -qE "^  segments +1  refused by its learner: non-finite float$" "$TMP/top2.txt" && { ok=1; break; }
    sleep 0.2
done
[ -n "$ok" ] || fail "the learner's refusal is not in the broker's books: $(cat "$TMP/top2.txt")"
grep -q "segments received 1 = routed 0 + dropped 1 + queued 0   (adds up)" "$TMP/top2.txt" ||
    fail "the books do not add up: $(grep received "$TMP/top2.txt")"
grep -q "refusing segments of actor 0: non-finite float" "$TMP/learner2.log" ||
    fail "the learner did not log the refusal with its actor"
pass "a segment the learner refused counts as dropped (received 1 = routed 0 + dropped 1)"
# 5. a spec at the broker whose model is no model spec: a learner without --env refuses it
"$INJECT" 127.0.0.1:$P2 beat-model > /dev/null || fail "vl_inject beat-model failed"
"$VOLLEY" learner --policy badmodel --broker 127.0.0.1:$P2 > "$TMP/learner-badmodel.log" 2>&1
rc=$?
[ $rc -eq 2 ] || fail "a learner of an unbuildable broker spec exited $rc, not 2: $(tail -2 "$TMP/learner-badmodel.log")"
grep -q "the broker's spec cannot be served: model: linear(3x) at column 1: '3x' is not a number" \
    "$TMP/learner-badmodel.log" || fail "the refusal does not name the model: $(cat "$TMP/learner-badmodel.log")"
pass "a broker spec naming no buildable model is refused by its learner in one line"
echo "7 passed, 0 failed"

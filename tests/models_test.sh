#!/usr/bin/env bash
# Model specs through the programs:
#  1. a bad --model is refused by `volley up` before anything starts, naming the token;
#  2. `volley up --env catch-pixels` trains the cnn preset end to end (the learner publishes
#     conv weights, the actors act on them), and the run keeps the model: `volley eval` plays
#     it and `volley export` writes the conv tensors in PyTorch's shapes and the model text;
#  3. an actor whose --model names another network than its policy's is refused by the broker
#     and exits 2, naming both models (one given no --model follows its learner's instead); a learner without --env takes the model from the broker's spec.
# Usage: models_test.sh path/to/volley
. "$(dirname "$0")/lib.sh"
cd "$TMP" || fail "no temp dir"

# 1. refused before anything starts
"$VOLLEY" up --env cartpole --model "linear(64) dense(3)" > up-bad.log 2>&1
rc=$?
[ $rc -eq 2 ] || fail "a bad --model exited $rc, not 2"
grep -q "volley up: --model: unknown layer 'dense' at column 12" up-bad.log ||
    fail "the refusal does not name the token: $(cat up-bad.log)"
"$VOLLEY" up --env cartpole --model "conv(8,3,1) linear(8)" > up-conv.log 2>&1
[ $? -eq 2 ] && grep -q "needs an image field" up-conv.log ||
    fail "a conv on a vector observation was not refused: $(cat up-conv.log)"
[ ! -d runs ] || fail "a refused --model left a run directory"
convs=$(printf 'conv(2,1,1) %.0s' $(seq 31)) # 66 tensors: more than a weights message's 64
"$VOLLEY" up --env catch-pixels --model "$convs" > up-convs.log 2>&1
rc=$?
[ $rc -eq 2 ] && grep -q "volley up: --model: the network has 66 tensors; a weights message carries at most 64" \
    up-convs.log || fail "a network of 66 tensors was not refused before the run (exit $rc): $(tail -2 up-convs.log)"
[ ! -d runs ] || fail "a refused --model left a run directory"
long=$(printf 'linear(8) %.0s' $(seq 120)) # 1200 bytes: over a spec's 1023
"$VOLLEY" replay none.rec --model "$long" > replay-long.log 2>&1
rc=$?
[ $rc -eq 2 ] && grep -q "^volley replay: --model: 1200 bytes; expected a model spec of at most 1023$" \
    replay-long.log || fail "replay took an overlong --model (exit $rc): $(cat replay-long.log)"
pass "bad specs refused in one line: $(head -1 up-bad.log)"

# 2. the cnn preset on pixels, end to end
# with a recording: its replay trains the cnn on one thread unless told, so the checksum is
# the same on any number of cores
"$VOLLEY" up --env catch-pixels --until steps --max-steps 30000 --name px --record px.vlrec \
    > up.log 2>&1 || fail "volley up --env catch-pixels failed: $(tail -5 up.log)"
"$VOLLEY" replay runs/px/px.vlrec --env catch-pixels --quiet > replay-px.log 2>&1 ||
    fail "replay of the cnn run: $(tail -3 replay-px.log)"
"$VOLLEY" replay runs/px/px.vlrec --env catch-pixels --quiet --threads 1 > replay-px1.log 2>&1 ||
    fail "replay of the cnn run at --threads 1: $(tail -3 replay-px1.log)"
[ "$(tail -1 replay-px.log)" = "$(tail -1 replay-px1.log)" ] ||
    fail "the cnn replay's checksum follows the cores: $(tail -1 replay-px.log) by default, $(tail -1 replay-px1.log) at --threads 1"
grep -q "^done: 30" up.log || fail "no done line: $(tail -3 up.log)"
grep -q "^model = conv(16,3,2) relu conv(32,3,1) relu linear(256) relu$" runs/px/config.ini ||
    fail "the learner's run config does not name the cnn: $(grep model runs/px/config.ini)"
v=$(grep -oE "version=[0-9]+" up.log | tail -1 | cut -d= -f2)
[ "${v:-0}" -ge 3 ] || fail "the cnn learner published only ${v:-0} versions"
"$VOLLEY" eval runs/px --episodes 3 > eval.log 2>&1 || fail "eval of the cnn run: $(cat eval.log)"
grep -q "^return " eval.log || fail "eval printed no return: $(cat eval.log)"
"$VOLLEY" export runs/px --to px.safetensors > export.log 2>&1 ||
    fail "export of the cnn run: $(cat export.log)"
grep -q '"model": "conv(16,3,2) relu conv(32,3,1) relu linear(256) relu"' px.json ||
    fail "policy.json does not say the model: $(head -c 400 px.json)"
grep -q '"conv.0.0.weight": \[16, 1, 3, 3\]' px.json ||
    fail "policy.json does not give the conv weight's shape: $(head -c 600 px.json)"
pass "catch-pixels trained the cnn to version $v; eval and export rebuilt it from the run"

# 3. a mismatched actor; a learner that takes the model from the broker
PORT=$(free_port)
B=127.0.0.1:$PORT
"$VOLLEY" broker --port "$PORT" --bind 127.0.0.1 > broker.log 2>&1 &
PIDS+=($!)
"$VOLLEY" learner --env catch-pixels --broker $B --verbose --model "conv(8,4,2) relu linear(32) relu" \
    > learner.log 2>&1 &
PIDS+=($!)
"$VOLLEY" actor --env catch-pixels --broker $B --envs 2 --id 1 \
    --model "conv(8,4,2) relu linear(32) relu" > actor.log 2>&1 &
PIDS+=($!)
wait_for learner.log 30 "version=[1-9]" || fail "the learner of a custom model did not train"
"$VOLLEY" actor --env catch-pixels --broker $B --envs 2 --id 2 --model cnn > bad-actor.log 2>&1
rc=$?
[ $rc -eq 2 ] || fail "an actor of another model exited $rc, not 2"
grep -q "model: policy 'default' has 'conv(8,4,2) relu linear(32) relu', this actor 'conv(16,3,2) relu" \
    bad-actor.log || fail "the refusal does not name both models: $(tail -2 bad-actor.log)"
pass "an actor of another model is refused: $(sed -n 's/.*refused this actor: //p' bad-actor.log | head -1)"
"$VOLLEY" learner --policy other --broker $B --verbose > learner-other.log 2>&1 &
PIDS+=($!)
"$VOLLEY" actor --policy other --env catch-pixels --broker $B --envs 2 --id 3 \
    --model "linear(32) relu" > actor-other.log 2>&1 &
PIDS+=($!)
wait_for learner-other.log 30 "policy 'other' from the broker: .* model linear\(32\) relu env catch-pixels" ||
    fail "the learner without --env did not take the model from the broker: $(tail -3 learner-other.log)"
wait_for learner-other.log 30 "version=[1-9]" || fail "the learner without --env did not train"
pass "a learner without --env trains the model the actors declared"

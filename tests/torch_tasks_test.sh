#!/usr/bin/env bash
# `volley up --learner torch` from a fresh start: the PyTorch learner (on the CPU here, one
# thread) trains the task and C actors play its weights, the run directory being any run's:
# `volley eval` plays the run's checkpoint greedily with C actors and must score the task's bar.
#   cartpole  solved (mean >= 475 over 100 episodes), greedy eval >= 475
#   pendulum  solved (mean >= -250), then greedy eval >= -200
#   memory    linear(64) lstm(64): solved (mean >= 0.95), greedy eval >= 0.95, every role on
#             CURVE (--keys from `volley keygen`): the torch learner is the C learner's loop
#   pixels    catch-pixels with the cnn preset: solved (>= 9), greedy eval >= 9
# Each run is --deterministic (one actor in lockstep with the learner, torch on one CPU
# thread), so it is the same run every time on a machine: for cartpole a second run must end
# at the same step count with the same weights checksum.
# Usage: torch_tasks_test.sh path/to/volley TASK
. "$(dirname "$0")/lib.sh"
TASK=${2:?usage: $0 path/to/volley cartpole|pendulum|memory|pixels}
cd "$TMP" || fail "no temp dir"

case $TASK in
cartpole) flags=(--env cartpole) bar=475 episodes=100 ;;
pendulum) flags=(--env pendulum) bar=-200 episodes=100 ;;
memory) flags=(--env memory --model "linear(64) lstm(64)" --keys keys) bar=0.95 episodes=200
    "$VOLLEY" keygen keys > keygen.log 2>&1 || fail "keygen: $(cat keygen.log)" ;;
pixels) flags=(--env catch-pixels) bar=9 episodes=100 ;;
*) fail "unknown task '$TASK'" ;;
esac

"$VOLLEY" up --learner torch "${flags[@]}" --deterministic --max-steps 2000000 --name run \
    > up.log 2>&1 || fail "volley up --learner torch ${flags[*]} did not solve it: $(tail -3 up.log)"
grep -q "^solved: " up.log || fail "no solved line: $(tail -3 up.log)"
grep -q "PyTorch learner" up.log || fail "up did not start the PyTorch learner: $(head -1 up.log)"
grep -q "^learner = torch" runs/run/config.ini || fail "config.ini does not name the torch learner"
grep -q "volley learner --torch\|-m volley learner --torch" runs/run/config.ini ||
    fail "config.ini's [learner] command is not the torch learner's"
[ -s runs/run/metrics.jsonl ] || fail "no metrics rows in the run directory"
pass "$TASK: $(tail -1 up.log)"
if [ "$TASK" = memory ]; then
    grep -q "CURVE on" runs/run/logs/learner.log || fail "the torch learner did not run on CURVE"
    pass "the torch learner trained over CURVE"
fi
# The checkpoint holds the torch engine's optimiser state: resuming with the C engine is refused.
if "$VOLLEY" up --name run --resume --learner c > swap.log 2>&1; then fail "a resume with another engine ran"; fi
grep -q "trained with learner = torch, not c" swap.log || fail "engine swap on resume: $(cat swap.log)"
"$VOLLEY" eval runs/run --episodes "$episodes" --greedy > eval.log 2>&1 || fail "eval: $(cat eval.log)"
score=$(sed -n 's/^return \([-0-9.]*\) .*/\1/p' eval.log)
awk -v s="$score" -v bar="$bar" 'BEGIN { exit !(s != "" && s >= bar) }' ||
    fail "greedy eval of the torch-trained $TASK scored $score, under $bar"
pass "greedy eval by C actors of the torch-trained weights: $(tail -1 eval.log)"
[ "$TASK" = cartpole ] || exit 0
"$VOLLEY" up --learner torch "${flags[@]}" --deterministic --max-steps 2000000 --name again \
    > again.log 2>&1 || fail "the second run did not solve it: $(tail -3 again.log)"
first=$(grep -E "^(weights|solved):" up.log | sed 's/ in [0-9.]* s.*//')
second=$(grep -E "^(weights|solved):" again.log | sed 's/ in [0-9.]* s.*//')
[ -n "$first" ] && [ "$first" = "$second" ] ||
    fail "two --deterministic torch runs differ: '$first' against '$second'"
pass "a second --deterministic run is the same run: $(echo $first)"

#!/usr/bin/env bash
# reach learned with multi-discrete actions (dx, dy, each -1, 0 or +1): `volley up --env reach`
# from a fresh start, trained for a budget of 100,000 env steps, ends with a mean return >= 0.8
# over the learner's last 100 episodes (reach's solved return; the optimum is 0.84, a random
# policy's -1.8), and `volley eval --greedy` (the argmax of each dimension) of the run scores
# >= 0.8 over 100 episodes. The budget rather than the first solved step: a policy that has
# just reached 0.8 while sampling may not yet hold it greedily, and one trained 40,000 to
# 80,000 steps does. --deterministic: the same run every time on a machine.
# Usage: reach_test.sh path/to/volley
. "$(dirname "$0")/lib.sh"
cd "$TMP" || fail "no temp dir"
STEPS=100000
"$VOLLEY" up --env reach --deterministic --until steps --max-steps $STEPS --name r > up.log 2>&1 ||
    fail "volley up --env reach --until steps failed: $(tail -3 up.log)"
grep -q "^done: " up.log || fail "no done line: $(tail -3 up.log)"
mean=$(tail -n 1 runs/r/metrics.jsonl | sed -n 's/.*"return_mean":\([-0-9.e]*\).*/\1/p')
[ -n "$mean" ] || fail "no return_mean in the last row of metrics.jsonl"
awk -v s="$mean" 'BEGIN { exit !(s >= 0.8) }' ||
    fail "mean return $mean over the last 100 episodes after $STEPS steps, under 0.8"
pass "mean return $mean over the last 100 episodes: $(tail -1 up.log)"
"$VOLLEY" eval runs/r --episodes 100 --greedy > eval.log 2>&1 || fail "eval: $(cat eval.log)"
score=$(sed -n 's/^return \([-0-9.]*\) .*/\1/p' eval.log)
[ -n "$score" ] || fail "no return line in eval: $(cat eval.log)"
awk -v s="$score" 'BEGIN { exit !(s >= 0.8) }' || fail "greedy eval scored $score, under 0.8"
pass "greedy eval of the run: $(tail -1 eval.log)"

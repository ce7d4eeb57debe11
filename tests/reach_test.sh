#!/usr/bin/env bash
# reach learned with multi-discrete actions (dx, dy, each -1, 0 or +1): `volley up --env reach`
# from a fresh start stops solved (a mean return >= 0.8 over the last 100 episodes, the optimum
# being 0.84 and a random policy's -1.8) within 1,000,000 env steps, and `volley eval --greedy`
# (the argmax of each dimension) of the run scores >= 0.8 over 100 episodes. --deterministic: the
# same run every time on a machine (about 46,000 steps here).
# Usage: reach_test.sh path/to/volley
. "$(dirname "$0")/lib.sh"
cd "$TMP" || fail "no temp dir"
"$VOLLEY" up --env reach --deterministic --max-steps 1000000 --name r > up.log 2>&1 ||
    fail "volley up --env reach did not solve it: $(tail -3 up.log)"
grep -q "^solved: " up.log || fail "no solved line: $(tail -3 up.log)"
pass "$(tail -1 up.log)"
"$VOLLEY" eval runs/r --episodes 100 --greedy > eval.log 2>&1 || fail "eval: $(cat eval.log)"
score=$(sed -n 's/^return \([-0-9.]*\) .*/\1/p' eval.log)
awk -v s="$score" 'BEGIN { exit !(s >= 0.8) }' || fail "greedy eval scored $score, under 0.8"
pass "greedy eval of the run: $(tail -1 eval.log)"

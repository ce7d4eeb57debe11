#!/usr/bin/env bash
# catch-pixels learned from pixels alone: `volley up --env catch-pixels` with the default model
# (the cnn preset, its small-frame torso) from a fresh start reaches the solved mean return
# (>= 9 of 10 balls over 100 episodes) within 2,000,000 env steps, and `volley eval --greedy` of
# the run then scores >= 9 over 100 episodes. The run is --deterministic (one actor in lockstep,
# one engine thread), so it is the same run every time on a machine: about 260,000 steps here.
# Asynchronous runs solve it too, most in 150,000 to 600,000 steps, but not every one (one in
# about thirteen settled near 8 here), which would make a flaky test.
# Usage: pixels_test.sh path/to/volley
. "$(dirname "$0")/lib.sh"
cd "$TMP" || fail "no temp dir"
"$VOLLEY" up --env catch-pixels --deterministic --max-steps 2000000 --name px > up.log 2>&1 ||
    fail "volley up --env catch-pixels did not solve it: $(tail -3 up.log)"
grep -q "^solved: " up.log || fail "no solved line: $(tail -3 up.log)"
pass "$(tail -1 up.log)"
"$VOLLEY" eval runs/px --episodes 100 --greedy > eval.log 2>&1 || fail "eval: $(cat eval.log)"
score=$(sed -n 's/^return \([-0-9.]*\) .*/\1/p' eval.log)
awk -v s="$score" 'BEGIN { exit !(s >= 9) }' || fail "greedy eval scored $score, under 9"
pass "greedy eval of the run: $(tail -1 eval.log)"

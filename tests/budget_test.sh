#!/usr/bin/env bash
# A step budget is exact: `volley up --max-steps N` stops at the first report at or past N,
# at most one segment (--horizon steps) beyond it, whether the run ends 'done' (--until steps)
# or 'not solved' (a spent budget); and --help says so.
. "$(dirname "$0")/lib.sh"
cd "$TMP" || fail "cd $TMP"

"$VOLLEY" up --help > help.txt
grep -q "at most one segment (--horizon steps)" help.txt || fail "volley up --help does not say how exact the budget is"
pass "volley up --help: $(grep -A1 'The step budget is exact' help.txt | tr -s ' \n' ' ')"

# steps_in LINE: the step count of a last line ('done: N steps ...', '... budget spent after N steps').
steps_in() { echo "$1" | grep -oE '[0-9]+ steps' | head -1 | cut -d' ' -f1; }

for budget in 3000 20000; do
    "$VOLLEY" up --until steps --max-steps $budget --horizon 32 --actors 3 --envs 8 --port 0 > up.log 2> up.err
    rc=$?
    [ $rc -eq 0 ] || fail "volley up --until steps --max-steps $budget exited $rc: $(tail -3 up.err)"
    last=$(tail -n 1 up.log)
    steps=$(steps_in "$last")
    [ -n "$steps" ] || fail "no step count in the last line '$last'"
    [ "$steps" -ge $budget ] && [ "$steps" -lt $((budget + 32)) ] ||
        fail "--max-steps $budget --horizon 32 stopped at $steps steps, not in [$budget, $((budget + 32)))"
    pass "--until steps --max-steps $budget (horizon 32, 3 actors x 8 envs): $last"
done

# In lockstep the learner waits for full batches; the round the budget cuts short must still
# be trained on, or the run never reaches its budget (it hung at 19968 of 20000).
timeout 120 "$VOLLEY" up --deterministic --until steps --max-steps 20000 --port 0 > up.log 2> up.err
rc=$?
[ $rc -eq 0 ] || fail "volley up --deterministic --until steps --max-steps 20000 exited $rc (124: hung)"
last=$(tail -n 1 up.log)
steps=$(steps_in "$last")
[ "${steps:-0}" -ge 20000 ] && [ "$steps" -lt 20064 ] ||
    fail "--deterministic --max-steps 20000 stopped at ${steps:-?} steps, not in [20000, 20064)"
pass "--deterministic --until steps --max-steps 20000: $last"

"$VOLLEY" up --max-steps 5000 --port 0 > up.log 2> up.err
rc=$?
[ $rc -eq 1 ] || fail "an unsolved cartpole run with --max-steps 5000 exited $rc, not 1: $(tail -3 up.err)"
last=$(grep 'budget spent' up.log | tail -1)
steps=$(steps_in "$last")
[ -n "$steps" ] && [ "$steps" -ge 5000 ] && [ "$steps" -lt $((5000 + 64)) ] ||
    fail "--max-steps 5000 (horizon 64) ended at '${steps:-?}' steps: $last"
pass "--max-steps 5000, unsolved: $last"
echo "4 passed, 0 failed"

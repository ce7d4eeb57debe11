#!/usr/bin/env bash
# A step budget is exact: `volley up --max-steps N` stops at the first report at or past N,
# at most one segment (--horizon steps) beyond it, whether the run ends 'done' (--until steps)
# or 'not solved' (a spent budget); and --help says so. --until seconds has no step budget
# unless one is given; an env without a solved return ends a spent budget 'done' (exit 0).
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

# --until seconds: no default step budget (the learner takes every segment), neither in this
# run nor in a rerun of its config.ini.
COUNTER=$(dirname "$VOLLEY")/libvl_counter_env.so
"$VOLLEY" up --env "$COUNTER" --until seconds --max-seconds 1 --runs runs --name sec > sec.log 2>&1
rc=$?
last=$(tail -n 1 sec.log)
[ $rc -eq 0 ] && [[ $last == done:* ]] || fail "--until seconds --max-seconds 1 exited $rc: $last"
! grep -qE '^max-steps|--max-steps [1-9]' runs/sec/config.ini ||
    fail "--until seconds kept a step budget nobody gave: $(grep -E '^max-steps|learner' runs/sec/config.ini)"
grep -qx 'until = seconds' runs/sec/config.ini || fail "config.ini: $(grep until runs/sec/config.ini)"
pass "--until seconds has no default step budget: $last"

# An explicit step budget still applies; with no solved return to miss, a spent one is 'done'.
"$VOLLEY" up --env "$COUNTER" --until seconds --max-seconds 60 --max-steps 2000 --port 0 > ns.log 2>&1
rc=$?
last=$(tail -n 1 ns.log)
[ $rc -eq 0 ] || fail "a run of an env without a solved return exited $rc on its spent budget: $last"
! grep -q 'not solved' ns.log || fail "an env without a solved return was 'not solved': $(grep 'not solved' ns.log)"
spent=$(grep '^budget spent' ns.log)
steps=$(steps_in "$last")
[[ $last == done:* ]] && [ -n "$spent" ] && [ "${steps:-0}" -ge 2000 ] && [ "$steps" -lt 2064 ] ||
    fail "--max-steps 2000 of --until seconds: '$spent' / '$last'"
pass "an env without a solved return: $spent; $last"
echo "6 passed, 0 failed"

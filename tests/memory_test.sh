#!/usr/bin/env bash
# The memory env needs a recurrent core: a cue (one of 2) at step 0, 10 blank steps, then an
# answer paid +1 if it names the cue, -1 if not. The default MLP sees only the blank step it
# answers on, so it stays at chance: trained --deterministic for a budget of 150,000 steps
# (about 1 s here), its greedy `volley eval` over 200 episodes scores |mean| <= 0.3 (0.07 here;
# a fair coin's mean over 200 episodes has std 0.07, so 0.3 is four of them). `--model
# "linear(64) lstm(64)"` solves it (mean >= 0.95 over the last 100 episodes) --deterministic
# within a budget of 1,000,000 steps (it stops at about 26,000, under 1 s here), and its greedy
# eval over 200 episodes scores >= 0.95 (1.00 here). The run's `volley export` describes its
# core: "core": {"kind": "lstm", "hidden": 64, ...}.
# Usage: memory_test.sh path/to/volley
. "$(dirname "$0")/lib.sh"
cd "$TMP" || fail "no temp dir"

# Prints the mean return of a greedy eval of run $1 over 200 episodes (its log in $1.eval.log).
greedy_mean() {
    "$VOLLEY" eval "runs/$1" --episodes 200 --greedy > "$1.eval.log" 2>&1 ||
        fail "eval of $1: $(cat "$1.eval.log")"
    sed -n 's/^return \([-0-9.]*\) .*/\1/p' "$1.eval.log"
}

"$VOLLEY" up --env memory --deterministic --until steps --max-steps 150000 --name mlp \
    > mlp.log 2>&1 || fail "volley up --env memory (mlp): $(tail -3 mlp.log)"
grep -q "^done: " mlp.log || fail "the mlp run did not spend its budget: $(tail -3 mlp.log)"
mlp=$(greedy_mean mlp)
grep -q "model linear(64) tanh linear(64) tanh" mlp.eval.log || fail "the mlp run's model: $(head -1 mlp.eval.log)"
awk -v s="$mlp" 'BEGIN { exit !(s != "" && s <= 0.3 && s >= -0.3) }' ||
    fail "the default MLP scored $mlp on memory: not chance"
pass "the default MLP stays at chance on memory: greedy eval $(tail -1 mlp.eval.log)"

"$VOLLEY" up --env memory --model "linear(64) lstm(64)" --deterministic --max-steps 1000000 \
    --name lstm > lstm.log 2>&1 || fail "linear(64) lstm(64) did not solve memory: $(tail -3 lstm.log)"
grep -q "^solved: " lstm.log || fail "no solved line: $(tail -3 lstm.log)"
pass "linear(64) lstm(64): $(tail -1 lstm.log)"
lstm=$(greedy_mean lstm)
awk -v s="$lstm" 'BEGIN { exit !(s != "" && s >= 0.95) }' ||
    fail "the lstm's greedy eval scored $lstm, under 0.95"
pass "greedy eval of the lstm run: $(tail -1 lstm.eval.log)"

"$VOLLEY" export runs/lstm --to lstm.export > export.log 2>&1 || fail "export: $(cat export.log)"
grep -q '"core": {"kind": "lstm", "hidden": 64' lstm.export.json ||
    fail "the export's core is not the lstm: $(grep -o '"core": [^}]*}\?' lstm.export.json)"
"$VOLLEY" export runs/mlp --to mlp.export > export.log 2>&1 || fail "export: $(cat export.log)"
grep -q '"core": null' mlp.export.json || fail "the mlp export has a core: $(grep -o '"core": [^}]*' mlp.export.json)"
pass "export: \"core\" is the lstm (hidden 64) for the lstm run, null for the mlp"

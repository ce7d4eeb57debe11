#!/usr/bin/env bash
# An env's own episode figures reach the learner's metrics: a plugin naming
# "five" (5 every episode) and "odd" (1 every second episode, none on the
# others) trained by volley up; metrics.jsonl shows env/five 5 and env/odd 1,
# each averaged over its own values, and a run without figures shows none.
. "$(dirname "$0")/lib.sh"
PLUGIN=${2:?usage: $0 VOLLEY PLUGIN.so}

cd "$TMP" || fail "cd $TMP"
"$VOLLEY" up --env "$PLUGIN" --port 0 --max-seconds 4 --max-steps 100000000 > up.log 2> up.err
m=$(ls runs/*/metrics.jsonl 2>/dev/null | head -1)
[ -n "$m" ] || fail "volley up left no metrics.jsonl: $(tail -3 up.err)"
last=$(tail -n 1 "$m")
echo "$last" | grep -q '"env/five":5[,}]' || fail "metrics.jsonl's last row has no env/five 5: $last"
echo "$last" | grep -q '"env/odd":1[,}]' || fail "metrics.jsonl's last row has no env/odd 1: $last"
pass "metrics.jsonl: $(echo "$last" | grep -o '"env/[a-z]*":[0-9.]*' | tr '\n' ' ')"

rm -rf runs
"$VOLLEY" up --env catch --port 0 --max-seconds 2 --max-steps 100000000 > up.log 2> up.err
last=$(tail -n 1 runs/*/metrics.jsonl)
echo "$last" | grep -q '"env/' && fail "a run without figures wrote some: $last"
pass "a run of an env without figures writes no env/ keys"
echo "2 passed, 0 failed"

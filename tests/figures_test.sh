#!/usr/bin/env bash
# An env's own episode figures reach the learner's metrics: a plugin naming
# "five" (5 every episode) and "odd" (1 every second episode, none on the
# others) trained by volley up; volley top and metrics.jsonl show five 5 and
# odd 1, each averaged over its own values; a run without figures shows none.
. "$(dirname "$0")/lib.sh"
PLUGIN=${2:?usage: $0 VOLLEY PLUGIN.so}

cd "$TMP" || fail "cd $TMP"
P=$(free_port)
"$VOLLEY" up --env "$PLUGIN" --port $P --max-seconds 6 --max-steps 100000000 > up.log 2> up.err &
UP=$!
PIDS+=($UP)
wait_for up.log 10 "steps=" || fail "volley up stepped nothing: $(tail -3 up.err)"
sleep 1
"$VOLLEY" top --broker 127.0.0.1:$P --once > top.txt 2>&1 || fail "volley top --once: $(tail -2 top.txt)"
grep -q "env figures: five 5  odd 1" top.txt || fail "volley top shows no figures: $(grep -A2 training top.txt)"
pass "volley top: $(grep -m1 'env figures:' top.txt)"
wait $UP
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
echo "3 passed, 0 failed"

#!/usr/bin/env bash
# An env's own episode figures reach the learner's metrics: a plugin naming
# "five" (5 every episode) and "odd" (1 every second episode, none on the
# others) trained by volley up; volley top and metrics.jsonl show five 5 and
# odd 1, each averaged over its own values; a run without figures shows none.
. "$(dirname "$0")/lib.sh"
PLUGIN=${2:?usage: $0 VOLLEY PLUGIN.so}

cd "$TMP" || fail "cd $TMP"
P=$(free_port)
"$VOLLEY" up --env "$PLUGIN" --port $P --until seconds --max-seconds 6 > up.log 2> up.err &
UP=$!
PIDS+=($UP)
wait_for up.log 10 "steps=" || fail "volley up stepped nothing: $(tail -3 up.err)"
# Asked again while the run goes on, until the first episodes' figures are in.
while kill -0 $UP 2> /dev/null; do
    "$VOLLEY" top --broker 127.0.0.1:$P --once > top.txt 2>&1 ||
        { kill -0 $UP 2> /dev/null || break; fail "volley top --once: $(tail -2 top.txt)"; }
    grep -q "env figures: five 5  odd 1" top.txt && break
    sleep 0.5
done
grep -q "env figures: five 5  odd 1" top.txt || fail "volley top showed no figures while up ran: $(grep -A2 training top.txt)"
pass "volley top: $(grep -m1 'env figures:' top.txt)"
wait $UP || fail "volley up --env $PLUGIN exited $?: $(tail -3 up.err)"
m=$(ls runs/*/metrics.jsonl 2>/dev/null | head -1)
[ -n "$m" ] || fail "volley up left no metrics.jsonl: $(tail -3 up.err)"
last=$(tail -n 1 "$m")
echo "$last" | grep -q '"env/five":5[,}]' || fail "metrics.jsonl's last row has no env/five 5: $last"
echo "$last" | grep -q '"env/odd":1[,}]' || fail "metrics.jsonl's last row has no env/odd 1: $last"
pass "metrics.jsonl: $(echo "$last" | grep -o '"env/[a-z]*":[0-9.]*' | tr '\n' ' ')"

rm -rf runs
"$VOLLEY" up --env catch --port 0 --until seconds --max-seconds 2 > up.log 2> up.err ||
    fail "volley up --env catch exited $?: $(tail -3 up.err)"
m=$(ls runs/*/metrics.jsonl 2>/dev/null | head -1)
[ -n "$m" ] || fail "volley up --env catch left no metrics.jsonl: $(tail -3 up.err)"
# The learner's report rows (each has env_steps): at least one, and none with an env/ key.
rows=$(grep -c '"env_steps":' "$m")
[ "$rows" -gt 0 ] || fail "volley up --env catch's metrics.jsonl has no report row: $(tail -n 2 "$m")"
grep -q '"env/' "$m" && fail "a run without figures wrote some: $(grep -m1 '"env/' "$m")"
pass "a run of an env without figures writes no env/ keys in any of its $rows rows"
echo "3 passed, 0 failed"

#!/usr/bin/env bash
# `volley up` solves CartPole and the pixel game Catch within a step budget:
# broker, learner and two actor processes over real loopback sockets, started
# and stopped by one command. Its last line is the solved line, and it leaves
# no process behind.
. "$(dirname "$0")/lib.sh"

"$VOLLEY" up --port 0 --actors 2 --max-steps 2000000 --max-seconds 240 > "$TMP/up.log" 2> "$TMP/up.err"
rc=$?
cat "$TMP/up.log" | tail -5
[ $rc -eq 0 ] || fail "volley up exited $rc: $(tail -3 "$TMP/up.err")"
last=$(tail -n 1 "$TMP/up.log")
echo "$last" | grep -qE '^solved: [0-9]+ steps in [0-9]+\.[0-9] s \([0-9]+ steps/s\)$' ||
    fail "last line is not the solved line: '$last'"
grep -qE '^[0-2][0-9]:[0-5][0-9]:[0-6][0-9] steps=[0-9]+ sps=[0-9]+ episodes=[0-9]+ return=' "$TMP/up.log" || fail "no progress lines (HH:MM:SS steps=...)"
pass "volley up solves CartPole: $last"
grep -qE "run directory runs/[0-9]{8}-[0-9]{6}-cartpole$" "$TMP/up.log" ||
    fail "the generated run name is not TIME-cartpole: $(grep -m1 'run directory' "$TMP/up.log")"
pass "a run without --name is runs/TIME-ENV: $(grep -m1 -oE 'runs/[^ ]+$' "$TMP/up.log")"

port=$(sed -n 's/.*broker on 127.0.0.1:\([0-9]*\).*/\1/p' "$TMP/up.log")
sleep 0.5
if pgrep -f "volley .*(--port $port|127.0.0.1:$port)( |$)" > /dev/null; then
    fail "processes of the run are still alive: $(pgrep -af "127.0.0.1:$port")"
fi
pass "every child process stopped"

"$VOLLEY" up --env catch --port 0 --max-steps 2000000 --max-seconds 240 > "$TMP/catch.log" 2>&1
rc=$?
last=$(tail -n 1 "$TMP/catch.log")
[ $rc -eq 0 ] || fail "volley up --env catch exited $rc: $last"
echo "$last" | grep -qE '^solved: ' || fail "catch: last line is not the solved line: '$last'"
pass "volley up --env catch solves the pixel game: $last"
grep -qE "run directory runs/[0-9]{8}-[0-9]{6}-catch$" "$TMP/catch.log" ||
    fail "the generated run name is not TIME-catch: $(grep -m1 'run directory' "$TMP/catch.log")"

"$VOLLEY" up --retain 64 --port 0 --max-steps 3000000 --max-seconds 240 > "$TMP/ring.log" 2>&1
rc=$?
last=$(tail -n 1 "$TMP/ring.log")
[ $rc -eq 0 ] && echo "$last" | grep -qE '^solved: ' || fail "up --retain 64 (prioritized ring) did not solve: $last"
grep -qE 'lag=[0-9]+/[0-9]+/[1-9]' "$TMP/ring.log" || fail "ring replay shows no policy lag: $(tail -3 "$TMP/ring.log")"
pass "off-policy ring replay (V-trace, priorities) solves CartPole: $last"

# Ctrl-C: the terminal sends SIGINT to the whole process group.
# (--lr 0: the run cannot solve first and end by itself)
setsid "$VOLLEY" up --port 0 --lr 0 > "$TMP/int.log" 2>&1 &
UP=$!
PIDS+=($UP)
wait_for "$TMP/int.log" 30 "^[0-9:]{8} steps=" || fail "no progress line before Ctrl-C"
port=$(sed -n 's/.*broker on 127.0.0.1:\([0-9]*\).*/\1/p' "$TMP/int.log")
kill -INT -- -"$UP"
wait "$UP"
rc=$?
[ $rc -eq 130 ] || fail "volley up exited $rc after Ctrl-C, wanted 130"
sleep 0.5
pgrep -f "127.0.0.1:$port( |$)" > /dev/null && fail "children alive after Ctrl-C: $(pgrep -af "127.0.0.1:$port")"
pass "Ctrl-C stops the run and every child, exit 130"

"$VOLLEY" up --port 0 --max-steps 3000 > "$TMP/budget.log" 2>&1
rc=$?
[ $rc -eq 1 ] || fail "volley up exited $rc when its budget ran out, wanted 1"
tail -n 1 "$TMP/budget.log" | grep -q "^not solved: budget spent after" || fail "no budget line: $(tail -n 1 "$TMP/budget.log")"
pass "a spent budget ends the run with exit 1"

# A busy --port is refused before any child starts: nothing of ours joins the broker there.
P=$(free_port)
"$VOLLEY" broker --port "$P" --quiet > "$TMP/squat.log" 2>&1 &
SQUAT=$!
PIDS+=($SQUAT)
for _ in $(seq 50); do ss -ltn | grep -q ":$((P + 4)) " && break; sleep 0.1; done
"$VOLLEY" up --port "$P" --runs "$TMP/runs" --name busy > "$TMP/busy.log" 2>&1
rc=$?
[ ! -e "$TMP/runs/busy" ] || fail "the refused run left its directory: $(find "$TMP/runs/busy")"
[ $rc -eq 2 ] || fail "volley up on a busy --port exited $rc, wanted 2: $(cat "$TMP/busy.log")"
grep -q -- "--port $P: ports $P-$((P + 4)) are not all free" "$TMP/busy.log" || fail "no clear refusal: $(cat "$TMP/busy.log")"
pgrep -f -- "--broker 127.0.0.1:$P( |$)" > /dev/null && fail "a child of the refused run started: $(pgrep -af -- "127.0.0.1:$P")"
kill -0 "$SQUAT" || fail "the broker already on $P was disturbed"
pass "a busy --port: exit 2 before any child starts, no run directory left, the other broker untouched"

# Two runs at once on one machine (free ports by default): both solve, undisturbed.
"$VOLLEY" up --max-steps 2e6 --max-seconds 240 > "$TMP/a.log" 2>&1 &
A=$!
"$VOLLEY" up --max-steps 2e6 --max-seconds 240 > "$TMP/b.log" 2>&1 &
B=$!
PIDS+=($A $B)
wait $A; ra=$?
wait $B; rb=$?
pa=$(sed -n 's/.*broker on 127.0.0.1:\([0-9]*\).*/\1/p' "$TMP/a.log")
pb=$(sed -n 's/.*broker on 127.0.0.1:\([0-9]*\).*/\1/p' "$TMP/b.log")
[ $ra -eq 0 ] && [ $rb -eq 0 ] || fail "two runs at once: exits $ra and $rb: $(tail -n 2 "$TMP/a.log" "$TMP/b.log")"
[ -n "$pa" ] && [ "$pa" != "$pb" ] || fail "two runs at once shared port '$pa'"
pass "two volley up at once both solve on their own ports ($pa, $pb)"

# --until steps ends at the budget with exit 0; learner flags pass through; counts take 1e5.
"$VOLLEY" up --until steps --max-steps 1e5 --gamma 0.98 --ent-coef 0.005 --lr-anneal linear --runs "$TMP/runs" --name steps > "$TMP/steps.log" 2>&1
rc=$?
last=$(tail -n 1 "$TMP/steps.log")
[ $rc -eq 0 ] || fail "up --until steps exited $rc: $last"
echo "$last" | grep -qE '^done: [0-9]+ steps in [0-9.]+ s \([0-9]+ steps/s\)$' || fail "no done line: '$last'"
steps=$(echo "$last" | sed -E 's/^done: ([0-9]+) .*/\1/')
[ "$steps" -ge 100000 ] || fail "done before the budget: $steps steps"
"$VOLLEY" up --gamma 2 > "$TMP/bad.log" 2>&1
[ $? -eq 2 ] && grep -q -- "--gamma wants a number in \[0, 1\]" "$TMP/bad.log" || fail "up --gamma 2 not refused: $(cat "$TMP/bad.log")"
lr0=$(head -n 1 "$TMP/runs/steps/metrics.jsonl" | sed -E 's/.*"lr":([^,}]*).*/\1/')
lr1=$(tail -n 1 "$TMP/runs/steps/metrics.jsonl" | sed -E 's/.*"lr":([^,}]*).*/\1/')
awk -v a="$lr0" -v b="$lr1" 'BEGIN { exit !(a > 0.0009 && b < 0.0002) }' || fail "--lr-anneal linear: lr went from $lr0 to $lr1"
pass "--until steps ends at the budget (exit 0); --gamma/--ent-coef pass through, checked; --lr-anneal linear took lr from $lr0 to $lr1"

# Every run keeps a directory: its resolved configuration, checkpoints and logs.
R="$TMP/runs"
"$VOLLEY" up --runs "$R" --name r1 --lr 0.002 > "$TMP/r1.log" 2>&1 || fail "up --name r1: $(tail -3 "$TMP/r1.log")"
for f in config.ini checkpoints/default.ckpt logs/broker.log logs/learner.log logs/actor-1.log logs/actor-2.log; do
    [ -s "$R/r1/$f" ] || fail "run directory lacks $f: $(find "$R/r1")"
done
grep -qx "lr = 0.002" "$R/r1/config.ini" || fail "config.ini lacks the learner flag given: $(cat "$R/r1/config.ini")"
rows=$(wc -l < "$R/r1/metrics.jsonl")
ret=$(tail -n 1 "$R/r1/metrics.jsonl" | sed -nE 's/^\{"wall_time":[0-9.]+,.*"return_mean":([0-9.]+),.*/\1/p')
[ "$rows" -ge 2 ] && awk -v r="$ret" 'BEGIN { exit !(r >= 475) }' || fail "metrics.jsonl: $rows rows, last $(tail -n 1 "$R/r1/metrics.jsonl")"
ls "$R/r1"/events.out.tfevents.* > /dev/null 2>&1 || fail "no TensorBoard event file in the run"
grep -q "^command = volley learner .*--lr 0.002" "$R/r1/config.ini" || fail "config.ini lacks the learner's command"
pass "a run leaves runs/NAME with config.ini, checkpoints/, metrics ($rows rows, TensorBoard events) and every process's log"

sum=$(md5sum "$R/r1/checkpoints/default.ckpt" "$R/r1/config.ini")
"$VOLLEY" up --runs "$R" --name r1 > "$TMP/again.log" 2>&1
rc=$?
[ $rc -eq 2 ] && grep -q "r1 exists; choose another --name, or --resume" "$TMP/again.log" || fail "a second run named r1: exit $rc, $(cat "$TMP/again.log")"
[ "$(md5sum "$R/r1/checkpoints/default.ckpt" "$R/r1/config.ini")" = "$sum" ] || fail "the refused run touched r1's files"
pass "a run name that exists is refused (exit 2); its files untouched"

"$VOLLEY" up --runs "$R" --name r2 --config "$R/r1/config.ini" > "$TMP/r2.log" 2>&1 || fail "up --config r1's config.ini: $(tail -3 "$TMP/r2.log")"
diff <(sed -n '/^\[up\]/,/^\[/p' "$R/r1/config.ini") <(sed -n '/^\[up\]/,/^\[/p' "$R/r2/config.ini") > "$TMP/cfg.diff" ||
    fail "a rerun from config.ini resolved another configuration: $(cat "$TMP/cfg.diff")"
"$VOLLEY" up --runs "$R" --name r3 --config "$R/r1/config.ini" --lr 0.003 --until steps --max-steps 1e4 > "$TMP/r3.log" 2>&1 ||
    fail "flags over --config: $(tail -3 "$TMP/r3.log")"
grep -qx "lr = 0.003" "$R/r3/config.ini" || fail "a flag did not override the config file"
pass "up --config RUN/config.ini runs the same configuration again; flags override it"

printf '[up]\nactors = 2\nlr = 7\n' > "$TMP/bad.ini"
"$VOLLEY" up --runs "$R" --config "$TMP/bad.ini" > "$TMP/badcfg.log" 2>&1
[ $? -eq 2 ] && grep -q "bad.ini:3: --lr wants a number in \[0, 1\], not '7'" "$TMP/badcfg.log" || fail "bad value: $(cat "$TMP/badcfg.log")"
printf '[up]\nlearning-rate = 0.1\n' > "$TMP/bad.ini"
"$VOLLEY" up --runs "$R" --config "$TMP/bad.ini" > "$TMP/badcfg.log" 2>&1
[ $? -eq 2 ] && grep -q "bad.ini:2: unknown key 'learning-rate'" "$TMP/badcfg.log" || fail "unknown key: $(cat "$TMP/badcfg.log")"
pass "a config file's unknown key or bad value is refused with file, line and reason"

"$VOLLEY" up --runs "$R" --name r1 --resume --until steps --max-steps 4e5 > "$TMP/resume.log" 2>&1 || fail "up --resume --name r1: $(tail -3 "$TMP/resume.log")"
[ -s "$R/r1/config-2.ini" ] && [ -s "$R/r1/logs/learner-2.log" ] || fail "the resumed run did not add its own config and logs: $(ls "$R/r1" "$R/r1/logs")"
grep -q "resumed from" "$R/r1/logs/learner-2.log" || fail "the learner did not resume: $(cat "$R/r1/logs/learner-2.log")"
pass "up --resume --name r1 goes on in r1, adding config-2.ini and learner-2.log beside the first"

# --deterministic: one actor in lockstep with the learner solves at the same step count with the
# same weights, twice.
for k in 1 2; do
    "$VOLLEY" up --deterministic --runs "$R" --max-seconds 240 > "$TMP/det$k.log" 2>&1 || fail "up --deterministic: $(tail -3 "$TMP/det$k.log")"
done
d1=$(tail -n 2 "$TMP/det1.log" | sed -E 's/ in [0-9.]+ s \([0-9]+ steps\/s\)//')
d2=$(tail -n 2 "$TMP/det2.log" | sed -E 's/ in [0-9.]+ s \([0-9]+ steps\/s\)//')
echo "$d1" | grep -qE '^weights: version [0-9]+ checksum [0-9a-f]{16}' || fail "no weights checksum line: $(tail -n 2 "$TMP/det1.log")"
[ "$d1" = "$d2" ] || fail "two deterministic runs differ: '$d1' vs '$d2'"
pass "up --deterministic twice: $(echo $d1)"
echo "15 passed, 0 failed"

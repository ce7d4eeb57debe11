#!/usr/bin/env bash
# `volley up --env package.module:function` runs Python actors (`PYTHON -m volley actor --env
# MOD:FN`, PYTHON the checkout's .venv unless VOLLEY_PYTHON says) on volley.envs.screens, a
# Game-Boy-shaped vector env of 16 envs: each actor steps the env's own 16 whatever --envs
# says, the learner (given no --env) takes the u2[1x72x80] spec they declare and trains, and
# up ends at --max-seconds with exit 0. A module that does not import, or --actors 0 with no
# actor coming, is one line naming why (the actor's log and its last line) and exit 1, before
# its --max-seconds (a timeout of half that only stops a hang; the time is reported).
# `volley eval RUN` plays the run's Python env with its checkpoint, and `volley export RUN`
# writes it.
. "$(dirname "$0")/lib.sh"
ROOT=$(cd "$(dirname "$0")/.." && pwd)
ENV=volley.envs.screens:make_env
MODEL='conv(8,8,4) relu linear(32) relu' # small: the default cnn is slow on a CPU
PY=${VOLLEY_PYTHON:-$ROOT/.venv/bin/python}
[ -x "$PY" ] || fail "no Python for the actors: $PY (bash compose/setup.sh makes .venv)"
cd "$TMP" || fail "no $TMP"

"$VOLLEY" up --env "$ENV" --actors 2 --max-seconds 20 --model "$MODEL" --name py \
    > "$TMP/up.log" 2> "$TMP/up.err"
rc=$?
last=$(tail -n 1 "$TMP/up.log")
[ $rc -eq 0 ] && [[ $last == done:* ]] || fail "up --env $ENV: exit $rc, '$last': $(tail -3 "$TMP/up.err")"
run=$TMP/runs/py
for i in 1 2; do
    grep -q "acting for policy 'default' with 16 $ENV envs" "$run/logs/actor-$i.log" ||
        fail "actor $i did not step the vector env's 16: $(tail -3 "$run/logs/actor-$i.log")"
    grep -qE "^command = .*python[0-9.]* -m volley actor --broker [0-9.:]+ --env $ENV .*--id $i " \
        "$run/config.ini" || fail "actor $i is not Python's: $(grep -A1 "actor-$i" "$run/config.ini")"
done
learner=$(grep -A1 '^\[learner\]' "$run/config.ini" | tail -1)
[[ $learner == "command = volley learner "* && $learner != *--env* ]] ||
    fail "the learner of a Python env must take its spec from the broker: $learner"
grep -q "policy 'default' from the broker: obs u2\[1x72x80\] actions discrete(7)" "$run/logs/learner.log" ||
    fail "the learner did not take the actors' spec: $(head -3 "$run/logs/learner.log")"
grep -qx "env = $ENV" "$run/config.ini" || fail "config.ini does not record the env: $(grep '^env' "$run/config.ini")"
version=$(tail -n 1 "$run/metrics.jsonl" | sed -n 's/.*"version":\([0-9]*\).*/\1/p')
steps=$(tail -n 1 "$run/metrics.jsonl" | sed -n 's/.*"env_steps":\([0-9]*\).*/\1/p')
[ "${version:-0}" -gt 0 ] && [ "${steps:-0}" -gt 0 ] ||
    fail "metrics.jsonl: version ${version:-none}, env_steps ${steps:-none}"
pass "up --env $ENV: 2 Python actors of 16 envs, the learner on their u2[1x72x80] spec: $steps steps, version $version; $last"

start=$SECONDS
timeout 60 "$VOLLEY" up --env nosuch.mod:make_env --actors 2 --max-seconds 120 --name bad \
    > "$TMP/bad.log" 2> "$TMP/bad.err"
rc=$?
took=$((SECONDS - start))
said=$(grep "^volley up: " "$TMP/bad.err")
[ $rc -eq 1 ] && [ "$(echo "$said" | wc -l)" -eq 1 ] ||
    fail "a module that does not import: exit $rc after $took s: $(cat "$TMP/bad.err")"
[[ $said == *"runs/bad/logs/actor-"[12]".log ends: "*"No module named 'nosuch'"* ]] ||
    fail "the line does not name the actor's log and its last line: $said"
! grep -q "^done:\|^budget spent" "$TMP/bad.log" || fail "an unfed run ended as done: $(tail -2 "$TMP/bad.log")"
pass "a module that does not import: exit 1 in $took s, one line: $said"

timeout 60 "$VOLLEY" up --env "$ENV" --actors 0 --bind 127.0.0.1 --batch 16 --max-seconds 2 \
    --name none > "$TMP/none.log" 2> "$TMP/none.err"
rc=$?
said=$(grep "^volley up: " "$TMP/none.err")
[ $rc -eq 1 ] && [ "$(echo "$said" | wc -l)" -eq 1 ] && [[ $said == *"no actor sent a segment"* ]] ||
    fail "--actors 0 and no actor: exit $rc: $(cat "$TMP/none.err") $(tail -1 "$TMP/none.log")"
pass "--actors 0 with no actor coming: exit 1, one line: $said"

"$VOLLEY" eval runs/py --episodes 2 > "$TMP/eval.log" 2> "$TMP/eval.err"
rc=$?
[ $rc -eq 0 ] && head -n 1 "$TMP/eval.log" | grep -q "^eval: $ENV, policy default version [1-9].*, 2 episodes" &&
    tail -n 1 "$TMP/eval.log" | grep -qE "^return [0-9.]+ ± [0-9.]+ .* length 512\.0 " ||
    fail "volley eval of the run: exit $rc: $(cat "$TMP/eval.log" "$TMP/eval.err")"
"$VOLLEY" export runs/py --to "$TMP/py.safetensors" > "$TMP/export.log" 2>&1 ||
    fail "volley export of the run: $(cat "$TMP/export.log")"
grep -q "\"name\": \"$ENV\"" "$TMP/py.json" || fail "the export does not name the env: $(head -c 300 "$TMP/py.json")"
pass "volley eval runs/py plays $ENV with its checkpoint: $(tail -n 1 "$TMP/eval.log" | cut -c1-60); export names it"
echo "4 passed, 0 failed"

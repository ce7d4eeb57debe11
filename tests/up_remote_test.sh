#!/usr/bin/env bash
# `volley up --actors 0 --bind ADDR` runs the broker on ADDR and the learner,
# and trains on actors started elsewhere (`volley actor --broker ADDR:PORT`):
# it keeps its run directory, progress lines and solved line, refuses to wait
# for remote actors without --bind and --batch, and with --keys DIR every role
# speaks CURVE with the keys `volley keygen DIR` wrote.
. "$(dirname "$0")/lib.sh"

"$VOLLEY" up --actors 0 --runs "$TMP/runs" > "$TMP/refused.log" 2>&1
[ $? -eq 2 ] && grep -q -- "--actors 0 trains on remote actors: give --bind ADDR" "$TMP/refused.log" ||
    fail "--actors 0 without --bind/--batch not refused: $(cat "$TMP/refused.log")"
pass "--actors 0 without --bind and --batch is refused (exit 2)"

# Starts $2 actors against port $1 (CURVE flags after), ids 101.., logs actor-N.log.
start_actors() {
    local port=$1 n=$2
    shift 2
    for i in $(seq "$n"); do
        "$VOLLEY" actor --broker "127.0.0.1:$port" --id $((100 + i)) --envs 8 "$@" > "$TMP/actor-$i.log" 2>&1 &
        PIDS+=($!)
    done
}

P=$(free_port)
"$VOLLEY" up --actors 0 --bind 127.0.0.1 --port "$P" --batch 16 --runs "$TMP/runs" --name remote \
    --max-steps 2e6 --max-seconds 240 > "$TMP/up.log" 2> "$TMP/up.err" &
UP=$!
PIDS+=($UP)
wait_for "$TMP/up.log" 15 "broker on 127.0.0.1:$P, 1 learner, 0 actors" || fail "up --actors 0 did not start: $(cat "$TMP/up.err")"
start_actors "$P" 2
wait "$UP"
rc=$?
last=$(tail -n 1 "$TMP/up.log")
[ $rc -eq 0 ] && echo "$last" | grep -qE '^solved: [0-9]+ steps' || fail "up --actors 0 with two remote actors: exit $rc, '$last'"
grep -q "^actors = 0" "$TMP/runs/remote/config.ini" || fail "config.ini lacks actors = 0"
grep -q "^bind" "$TMP/runs/remote/config.ini" && fail "config.ini keeps bind: a rerun elsewhere could not bind it"
[ -s "$TMP/runs/remote/checkpoints/default.ckpt" ] || fail "no checkpoint in the run directory"
pass "up --actors 0 --bind 127.0.0.1 solves CartPole on two actors started apart: $last"

# A requeued job starts again on the same --port at once: the stopped broker's connections in
# TIME_WAIT must not have the port refused as busy (the broker's own bind reuses it).
P=$(free_port)
"$VOLLEY" up --actors 0 --bind 127.0.0.1 --port "$P" --batch 16 --runs "$TMP/runs" --name again \
    --lr 0 --max-seconds 60 > "$TMP/again1.log" 2>&1 &
UP=$!
PIDS+=($UP)
start_actors "$P" 2
wait_for "$TMP/again1.log" 20 "^[0-9:]{8} steps=[1-9]" || fail "no progress on remote actors: $(cat "$TMP/again1.log")"
kill -TERM "$UP"
wait "$UP"
ss -tan | grep -qE "127.0.0.1:($P|$((P + 1))|$((P + 2))|$((P + 3))|$((P + 4)))[[:space:]].*" ||
    echo "     (no connection left in TIME_WAIT: the check below proves less)"
"$VOLLEY" up --actors 0 --bind 127.0.0.1 --port "$P" --batch 16 --runs "$TMP/runs" --name again \
    --resume --until seconds --max-seconds 3 > "$TMP/again2.log" 2>&1
rc=$?
[ $rc -eq 0 ] || fail "a restart on --port $P right after the last run: exit $rc: $(cat "$TMP/again2.log")"
grep -q "resumed from" "$TMP/runs/again/logs/learner-2.log" || fail "the restart did not resume"
for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done
pass "a run restarted at once on the same --port (TIME_WAIT left by the last) starts and resumes"

K="$TMP/keys"
"$VOLLEY" keygen "$K" > "$TMP/keygen.log" 2>&1 || fail "keygen: $(cat "$TMP/keygen.log")"
P=$(free_port)
"$VOLLEY" up --actors 0 --bind 127.0.0.1 --port "$P" --batch 16 --keys "$K" --runs "$TMP/runs" \
    --name curve --max-steps 2e6 --max-seconds 240 > "$TMP/curve.log" 2> "$TMP/curve.err" &
UP=$!
PIDS+=($UP)
wait_for "$TMP/curve.log" 15 "broker on 127.0.0.1:$P" || fail "up --keys did not start: $(cat "$TMP/curve.err")"
"$VOLLEY" actor --broker "127.0.0.1:$P" --id 7 --envs 8 > "$TMP/open-actor.log" 2>&1 &
OPEN=$!
PIDS+=($OPEN)
start_actors "$P" 2 --cert "$K/actor.cert" --broker-key "$K/broker.cert"
wait "$UP"
rc=$?
last=$(tail -n 1 "$TMP/curve.log")
[ $rc -eq 0 ] && echo "$last" | grep -qE '^solved: ' || fail "up --keys: exit $rc, '$last'"
grep -q -- "--cert $K/learner.cert --broker-key $K/broker.cert" "$TMP/runs/curve/config.ini" ||
    fail "the learner did not get its own certificate: $(grep command "$TMP/runs/curve/config.ini")"
grep -q -- "--cert $K/broker.cert --allow $K/allowed" "$TMP/runs/curve/logs/broker.log" "$TMP/runs/curve/config.ini" ||
    fail "the broker did not get the keys: $(grep -A1 '^\[broker\]' "$TMP/runs/curve/config.ini")"
kill "$OPEN" 2>/dev/null
pass "up --actors 0 --keys DIR: broker, learner, up's watcher and the remote actors on CURVE solve: $last"
echo "4 passed, 0 failed"

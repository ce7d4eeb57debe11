#!/usr/bin/env bash
# Prints the figures of hostile clients' attacks against a broker: any `volley`
# binary (today's or an older one), with vl_inject from this tree. Not a test:
# nothing is asserted (the tests hostile_roles_test, curve_roles_test,
# recorder_loss_test, restart_test and lvc_test assert the bounds); it is how
# the report's before/after figures were taken.
#   usage: tests/attack_figures.sh VOLLEY VL_INJECT [KEYGEN_VOLLEY]
# KEYGEN_VOLLEY (default VOLLEY) writes the certificates: an older volley
# keygen has no --actors/--admins, so give a current one to measure an old broker.
. "$(dirname "$0")/lib.sh"
INJECT=${2:?usage: $0 volley vl_inject [keygen_volley]}
KEYGEN=${3:-$VOLLEY}
version() { grep -oE "version=[0-9]+" "$1" | tail -1 | cut -d= -f2; }
rss_kb() { awk '/^VmRSS/ {print $2}' /proc/$1/status; }
stop() { kill -TERM "$1" 2>/dev/null; wait "$1" 2>/dev/null; }

echo "== open broker, attacks from 127.0.0.2 (another address of this host)"
PORT=$(free_port)
FROM="127.0.0.2:0;127.0.0.1:$PORT"
"$VOLLEY" broker --port "$PORT" --bind 127.0.0.1 --max-lag 20 --log-every 0 > "$TMP/broker.log" 2>&1 &
BROKER=$!; PIDS+=($BROKER)
"$VOLLEY" learner --env cartpole --broker 127.0.0.1:$PORT --verbose > "$TMP/learner.log" 2>&1 & PIDS+=($!)
"$VOLLEY" actor --broker 127.0.0.1:$PORT --envs 4 --quiet > "$TMP/actor.log" 2>&1 & PIDS+=($!)
wait_for "$TMP/learner.log" 30 "version=([3-9][0-9]|[0-9]{3,})" || fail "training did not start"
st() { "$VOLLEY" ctl --broker 127.0.0.1:$PORT status 2>&1; }
echo "broker VmRSS at start: $(rss_kb $BROKER) kB"
"$INJECT" "$FROM" "pub-forged=4611686018427387904"; sleep 3
echo "forged weights: segments dropped too stale 3 s later: $(st | sed -n 's/.*reason="too stale" count=\([0-9]*\).*/\1/p' | head -1)"
v=$(version "$TMP/learner.log"); "$INJECT" "$FROM" "hello-forged=20"
echo "20 forged hellos in 4 s: learner versions meanwhile $(( $(version "$TMP/learner.log") - v )); learner replaced $(grep -c 'replaced by a new connection' "$TMP/broker.log") times"
"$VOLLEY" ctl --broker "$FROM" pause default; echo "outsider pause: exit $?"
"$VOLLEY" ctl --broker "$FROM" resume default; echo "outsider resume: exit $?"
"$INJECT" "$FROM" "seg-huge=10"; sleep 1; echo "after 10 huge segments of 'default': VmRSS $(rss_kb $BROKER) kB"
"$INJECT" "$FROM" "seg-huge=10:fresh"; sleep 1; echo "after 10 of a policy with no spec: VmRSS $(rss_kb $BROKER) kB"
"$INJECT" "$FROM" "sub-flood=80000:200" "sub-flood=20000:16" "hold=3" & F=$!
sleep 5.5; echo "subscription flood (80,000 x 200 B + 20,000 x 16 B topics): VmRSS $(rss_kb $BROKER) kB"; wait $F
sleep 1; echo "after the flooder disconnected: VmRSS $(rss_kb $BROKER) kB"
FL="sub-flood=50000:200:random"
"$INJECT" "$FROM" $FL $FL $FL "hold=3" > /dev/null & F=$!
peak=0; while kill -0 $F 2>/dev/null; do r=$(rss_kb $BROKER); [ "$r" -gt $peak ] && peak=$r; sleep 0.1; done
echo "random-prefix flood (3 connections, each 50,000 x 200 B at once): VmRSS at most $peak kB"
sleep 2; echo "after the flooder disconnected: VmRSS $(rss_kb $BROKER) kB"
"$INJECT" "$FROM" "listen=3" > "$TMP/l0"; echo "passive listener alone: $(cat "$TMP/l0")"
"$INJECT" "$FROM" "listen=3" > "$TMP/l1" & L=$!
"$INJECT" "$FROM" "sub-churn=20000" "xpub-junk=1000" "hold=1"; wait $L
echo "passive listener during churn: $(cat "$TMP/l1")"
"$VOLLEY" ctl --broker "$FROM" shutdown; echo "outsider shutdown: exit $?"; sleep 1
kill -0 $BROKER 2>/dev/null && echo "broker alive" || echo "broker STOPPED"
stop $BROKER
grep -E "dropped [0-9]+ |add up" "$TMP/broker.log" | sed 's/^[^:]*: //; s/^[^ ]* [^ ]* info: //'
for p in "${PIDS[@]}"; do kill -TERM "$p" 2>/dev/null; done; wait 2>/dev/null; PIDS=()

echo "== CURVE broker, attacks with an actor's key"
PORT=$(free_port); K=$TMP/keys
"$KEYGEN" keygen "$K" --actors 2 --learners 1 --admins 1 > /dev/null || fail "keygen"
secure() { echo --cert "$K/$1.cert" --broker-key "$K/broker.cert"; }
ctl() { local who=$1; shift; "$VOLLEY" ctl --broker 127.0.0.1:$PORT $(secure "$who") "$@"; }
"$VOLLEY" broker --port "$PORT" --bind 127.0.0.1 --max-lag 20 --cert "$K/broker.cert" --allow "$K/allowed" --log-every 0 > "$TMP/cbroker.log" 2>&1 &
BROKER=$!; PIDS+=($BROKER)
wait_for "$TMP/cbroker.log" 10 "listening" || fail "the broker did not start"
"$VOLLEY" learner --env cartpole --broker 127.0.0.1:$PORT $(secure learner-1) --verbose > "$TMP/clearner.log" 2>&1 & PIDS+=($!)
"$VOLLEY" actor --broker 127.0.0.1:$PORT --id 1 $(secure actor-1) --quiet > "$TMP/cactor.log" 2>&1 & PIDS+=($!)
wait_for "$TMP/clearner.log" 30 "version=([3-9][0-9]|[0-9]{3,})" || fail "no training"
ctl actor-2 pause default; echo "actor-key pause: exit $?"; ctl actor-2 resume default > /dev/null 2>&1
VL_INJECT_CERT=$K/actor-2.cert VL_INJECT_BROKER_KEY=$K/broker.cert "$INJECT" 127.0.0.1:$PORT "hello-forged=6" "pub-forged=4611686018427387904"
echo "6 hellos with an actor key: learner replaced $(grep -c 'replaced by a new connection' "$TMP/cbroker.log") times"
ctl actor-2 shutdown; echo "actor-key shutdown: exit $?"; sleep 1
kill -0 $BROKER 2>/dev/null && echo "broker alive" || echo "broker STOPPED"
ctl admin-1 shutdown > /dev/null 2>&1; stop $BROKER
grep -E "dropped [0-9]+ " "$TMP/cbroker.log" | sed 's/^[^ ]* [^ ]* info: //'
for p in "${PIDS[@]}"; do kill -TERM "$p" 2>/dev/null; done; wait 2>/dev/null; PIDS=()

echo "== recording onto a full disk (a 4 MiB file-size limit)"
PORT=$(free_port); REC=$TMP/run.vlrec
(trap '' XFSZ; ulimit -f 4096; exec "$VOLLEY" broker --port "$PORT" --bind 127.0.0.1 --record "$REC" --log-every 0) > "$TMP/rbroker.log" 2>&1 &
BROKER=$!; PIDS+=($BROKER)
wait_for "$TMP/rbroker.log" 10 "listening" || fail "the broker did not start"
"$VOLLEY" learner --env cartpole --broker 127.0.0.1:$PORT --quiet > /dev/null 2>&1 & PIDS+=($!)
"$VOLLEY" actor --broker 127.0.0.1:$PORT --envs 4 --quiet > /dev/null 2>&1 & PIDS+=($!)
sleep 8
"$VOLLEY" top --broker 127.0.0.1:$PORT --once | grep -iE "record|lost" || echo "top: nothing about the recording"
stop $BROKER
grep -E "recorded [0-9]+ messages|not recorded" "$TMP/rbroker.log" | sed 's/^[^ ]* [^ ]* [a-z]*: //'
echo "the file holds: $("$KEYGEN" replay "$REC" --quiet 2>&1 | grep -oE "[0-9]+ (whole )?records?" | head -1)"

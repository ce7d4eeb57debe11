#!/usr/bin/env bash
# Roles under CURVE: `volley keygen --actors --learners --admins --observers`
# writes certificates carrying their role; with an actor's key, shutdown,
# pause, hellos (taking the learner's policy) and weights publications are
# refused and counted under the role reason while training goes on (and
# segments pushed with an observer's key); an
# observer's and an actor's key get status; an admin's key pauses, resumes
# and shuts the broker down. A learner key limited to other policies cannot
# serve this one.
. "$(dirname "$0")/lib.sh"
INJECT=${2:?usage: $0 volley vl_inject}
PORT=$(free_port)
K=$TMP/keys
"$VOLLEY" keygen "$K" --actors 2 --learners 1 --admins 1 --observers 1 > "$TMP/keygen.log" ||
    fail "keygen failed: $(cat "$TMP/keygen.log")"
"$VOLLEY" keygen "$TMP/k2" --learners 1 --policies other,third > /dev/null || fail "keygen --policies failed"
cp "$TMP/k2/allowed/learner-1.cert" "$K/allowed/other-learner.cert"
for r in actor-1 actor-2 learner-1 admin-1 observer-1; do
    grep -q "role = \"${r%-*}\"" "$K/allowed/$r.cert" || fail "$r's certificate carries no role"
done
pass "keygen writes a certificate per role, each carrying its role"

secure() { echo --cert "$1" --broker-key "$K/broker.cert"; }
ctl() { local who=$1; shift; "$VOLLEY" ctl --broker 127.0.0.1:$PORT $(secure "$K/$who.cert") "$@"; }
"$VOLLEY" broker --port "$PORT" --bind 127.0.0.1 --max-lag 20 --cert "$K/broker.cert" --allow "$K/allowed" \
    > "$TMP/broker.log" 2>&1 &
BROKER=$!
PIDS+=($BROKER)
wait_for "$TMP/broker.log" 10 "listening" || fail "the secured broker did not start"
"$VOLLEY" learner --env cartpole --broker 127.0.0.1:$PORT $(secure "$K/learner-1.cert") --verbose > "$TMP/learner.log" 2>&1 &
PIDS+=($!)
"$VOLLEY" actor --broker 127.0.0.1:$PORT --id 1 $(secure "$K/actor-1.cert") --quiet > "$TMP/actor.log" 2>&1 &
PIDS+=($!)
version() { grep -oE "version=[0-9]+" "$TMP/learner.log" | tail -1 | cut -d= -f2; }
wait_for "$TMP/learner.log" 30 "version=([3-9][0-9]|[0-9]{3,})" || fail "no training through the secured broker"

ctl actor-2 shutdown > "$TMP/a-shutdown.out" 2>&1 && fail "an actor key shut the broker down"
ctl actor-2 pause default > "$TMP/a-pause.out" 2>&1 && fail "an actor key paused the learner"
grep -q "role" "$TMP/a-shutdown.out" || fail "the refusal does not name the role: $(cat "$TMP/a-shutdown.out")"
kill -0 $BROKER || fail "the broker stopped"
ctl observer-1 status > "$TMP/obs.out" || fail "an observer key got no status"
ctl actor-2 status > /dev/null || fail "an actor key got no status"
pass "an actor key cannot shut down or pause (refused, naming the role); observer and actor keys get status"

v=$(version)
export VL_INJECT_CERT=$K/actor-2.cert VL_INJECT_BROKER_KEY=$K/broker.cert
"$INJECT" 127.0.0.1:$PORT "hello-forged=6" "pub-forged=4611686018427387904" > "$TMP/inject.out" ||
    fail "vl_inject failed"
grep -q "forged weights version" "$TMP/inject.out" || fail "no weights to forge: $(cat "$TMP/inject.out")"
VL_INJECT_CERT=$TMP/k2/learner-1.cert "$INJECT" 127.0.0.1:$PORT "hello-forged=2" || fail "vl_inject failed"
VL_INJECT_CERT=$K/observer-1.cert "$INJECT" 127.0.0.1:$PORT seg-stale seg-stale || fail "vl_inject failed"
unset VL_INJECT_CERT VL_INJECT_BROKER_KEY
for _ in $(seq 150); do [ "$(version)" -ge $((v + 5)) ] && break; sleep 0.2; done
[ "$(version)" -ge $((v + 5)) ] || fail "training stalled (version $(version), was $v)"
grep -q "replaced by a new connection" "$TMP/broker.log" && fail "a forged hello replaced the learner"
ctl admin-1 status > "$TMP/status.txt" || fail "the admin got no status"
grep -q "too stale" "$TMP/status.txt" && fail "segments dropped as too stale after a forged version"
grep -q "4611686018427387904" "$TMP/status.txt" && fail "the forged version reached an actor"
grep -q "kind=actor id=1 " "$TMP/status.txt" || fail "no actor in the status: $(cat "$TMP/status.txt")"
pass "hellos and a weights publication (version 2^62) with an actor key, hellos with a key for other policies: none believed, training on"

ctl admin-1 pause default > /dev/null || fail "the admin could not pause"
ctl admin-1 resume default > /dev/null || fail "the admin could not resume"
ctl admin-1 shutdown > /dev/null || fail "the admin could not shut the broker down"
for _ in $(seq 50); do kill -0 $BROKER 2>/dev/null || break; sleep 0.1; done
kill -0 $BROKER 2>/dev/null && fail "the broker did not stop for the admin"
wait $BROKER
expect_dropped commands "role: the peer may not do this" 2
expect_dropped hellos "role: the peer may not do this" 8
expect_dropped publications "role: the peer may not do this" 1
expect_dropped segments "role: the peer may not do this" 2
grep -q "they add up" "$TMP/broker.log" || fail "the books do not add up"
grep -q "refusing commands from " "$TMP/broker.log" || fail "the refused key was not named in the log"
pass "the admin pauses, resumes and shuts down; every refusal counted under the role reason"
echo "4 passed, 0 failed"

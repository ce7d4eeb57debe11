#!/usr/bin/env bash
# `volley top` and `volley ctl` against a real run on the broker's control
# port: the views list the learner and both actors with live rates; pause holds
# a policy's segments in the broker (delivered stops, received and queued
# grow) and resume lets them go; shutdown stops the broker; a broker that is
# gone is reported (exit 1) and a live view picks up a restarted one; bad usage
# exits 2.
. "$(dirname "$0")/lib.sh"
PORT=$(free_port)
B=127.0.0.1:$PORT

expect_usage() {  # $1: message pattern, rest: the command line
    local pattern=$1; shift
    "$VOLLEY" "$@" > "$TMP/out.txt" 2>&1
    local rc=$?
    [ $rc -eq 2 ] || fail "'volley $*' exited $rc, wanted 2"
    grep -qE -e "$pattern" "$TMP/out.txt" || fail "'volley $*' said: $(cat "$TMP/out.txt")"
}
expect_usage "--broker HOST\[:PORT\] is required" ctl status
expect_usage "which request" ctl --broker $B
expect_usage "unknown request 'frob'" ctl --broker $B frob
expect_usage "pause wants a POLICY" ctl --broker $B pause
expect_usage "unexpected argument 'x'" ctl --broker $B shutdown x
expect_usage "--broker port wants" ctl --broker 127.0.0.1:nope status
expect_usage "--broker HOST\[:PORT\] is required" top --once
expect_usage "--interval wants a number" top --broker $B --interval 0
expect_usage "unknown flag --bogus; see --help" top --broker $B --bogus
"$VOLLEY" ctl --help | grep -q "usage: volley ctl" || fail "volley ctl --help"
"$VOLLEY" top --help | grep -q "usage: volley top" || fail "volley top --help"
pass "bad usage exits 2 with a reason"

start_broker() {
    "$VOLLEY" broker --port "$PORT" --bind 127.0.0.1 >> "$TMP/broker.log" 2>&1 &
    BROKER=$!
    PIDS+=($BROKER)
}
start_broker
wait_for "$TMP/broker.log" 5 "listening on .*\(control\)" ||
    fail "the broker does not listen on a control port"
"$VOLLEY" learner --env cartpole --broker $B > "$TMP/learner.log" 2>&1 &
PIDS+=($!)
wait_for "$TMP/broker.log" 10 "learner for policy 'default' joined" || fail "learner never joined"
for i in 1 2; do
    "$VOLLEY" actor --broker $B --id $i --envs 4 --wait-ms 200 --quiet > "$TMP/actor-$i.log" 2>&1 &
    PIDS+=($!)
done

# kv KIND [FILTER] KEY: KEY's value in the first "kind=KIND" line (matching
# FILTER) of the last status taken by `status`.
status() { "$VOLLEY" ctl --broker $B status > "$TMP/status.txt" 2> "$TMP/status.err"; }
kv() {
    local kind=$1 filter=$2 key=$3
    grep -E "^ts=[^ ]+ kind=$kind " "$TMP/status.txt" | grep -E -e "$filter" |
        sed -n "s/.* $key=\([^ ]*\).*/\1/p" | head -1
}
positive() { awk -v v="${1:-0}" 'BEGIN { exit !(v > 0) }'; }
running() {
    status || return 1
    positive "$(kv learner . delivered_per_s)" && positive "$(kv actor ' id=1 ' seg_per_s)" &&
        positive "$(kv actor ' id=2 ' seg_per_s)"
}
for _ in $(seq 40); do running && break; sleep 0.25; done
running || fail "no learner and two actors with live rates: $(cat "$TMP/status.txt" "$TMP/status.err")"

"$VOLLEY" top --broker $B --once > "$TMP/frame.txt" || fail "top --once exited $?"
echo "--- volley top --once"; cat "$TMP/frame.txt"; echo "---"
grep -q $'\033' "$TMP/frame.txt" && fail "top --once wrote escape codes"
grep -q "(adds up)" "$TMP/frame.txt" || fail "the broker's counters do not add up"
grep -qE "^  default +[0-9]+ +[0-9]+ .* no " "$TMP/frame.txt" || fail "no learner row"
for i in 1 2; do
    grep -qE "^ +$i default +[0-9.]*[1-9]" "$TMP/frame.txt" || fail "no actor $i row with a rate"
done
grep -qE "^hops  actor send -> broker [0-9.]+ ms" "$TMP/frame.txt" || fail "no hop timings"
"$VOLLEY" top --broker $B --kv --once > "$TMP/kv.txt" || fail "top --kv --once exited $?"
[ "$(grep -c ' kind=broker ' "$TMP/kv.txt")" -eq 1 ] || fail "not one broker line"
[ "$(grep -c ' kind=learner policy=default ' "$TMP/kv.txt")" -eq 1 ] || fail "not one learner line"
[ "$(grep -c ' kind=actor ' "$TMP/kv.txt")" -eq 2 ] || fail "not two actor lines"
grep -vqE '^ts=[0-9TZ:.-]+( [a-z_]+=("[^"]*"|[^ "]+))+$' "$TMP/kv.txt" && fail "a kv line is not key=value"
pass "top shows the learner and both actors with live rates, as a table and as key=value"

"$VOLLEY" ctl --broker $B pause default | grep -q "^ok" || fail "pause refused"
sleep 0.3
status || fail "no status after pause"
[ "$(kv learner . paused)" = 1 ] || fail "the learner is not shown paused"
d1=$(kv learner . delivered) r1=$(kv broker . received) q1=$(kv broker . queued)
sleep 1.5
status || fail "no status while paused"
d2=$(kv learner . delivered) r2=$(kv broker . received) q2=$(kv broker . queued)
[ "$d2" -eq "$d1" ] || fail "delivered grew while paused: $d1 -> $d2"
[ "$r2" -gt "$r1" ] && [ "$q2" -gt "$q1" ] || fail "received $r1 -> $r2, queued $q1 -> $q2 while paused"
"$VOLLEY" top --broker $B --once | grep -qE "^  default .* PAUSED " || fail "top does not show PAUSED"
pass "paused: delivered stayed $d1 while received went $r1 -> $r2 and queued $q1 -> $q2"

"$VOLLEY" ctl --broker $B resume default | grep -q "^ok" || fail "resume refused"
for _ in $(seq 40); do
    status && [ "$(kv learner . delivered)" -gt "$d2" ] && break
    sleep 0.25
done
[ "$(kv learner . paused)" = 0 ] || fail "still paused after resume"
[ "$(kv learner . delivered)" -gt "$d2" ] || fail "delivered did not grow after resume"
pass "resumed: delivered $d2 -> $(kv learner . delivered)"

"$VOLLEY" ctl --broker $B pause nosuch > "$TMP/out.txt" 2>&1
rc=$?
[ $rc -eq 1 ] && grep -q "refused pause" "$TMP/out.txt" ||
    fail "pausing an unknown policy: exit $rc, said $(cat "$TMP/out.txt")"
pass "a refused request exits 1 and says why"

"$VOLLEY" ctl --broker $B shutdown | grep -q "^ok" || fail "shutdown refused"
for _ in $(seq 50); do kill -0 $BROKER 2>/dev/null || break; sleep 0.1; done
kill -0 $BROKER 2>/dev/null && fail "the broker did not exit after shutdown"
pass "shutdown stops the broker"

# No broker now: ctl and top --once say so and exit 1, while a live view keeps
# asking and picks up the broker when it is back on the same port.
"$VOLLEY" top --broker $B --kv --interval 0.5 > "$TMP/live.txt" 2>&1 &
TOP=$!
PIDS+=($TOP)
"$VOLLEY" top --broker $B --once > "$TMP/once.txt" 2>&1 &
ONCE=$!
"$VOLLEY" ctl --broker $B status > "$TMP/out.txt" 2>&1
rc=$?
[ $rc -eq 1 ] && grep -q "not answering" "$TMP/out.txt" ||
    fail "ctl with no broker: exit $rc, said $(cat "$TMP/out.txt")"
wait $ONCE
rc=$?
[ $rc -eq 1 ] && grep -q "broker $B not answering" "$TMP/once.txt" ||
    fail "top --once with no broker: exit $rc, said $(cat "$TMP/once.txt")"
pass "with no broker, ctl and top --once exit 1: $(cat "$TMP/out.txt")"

wait_for "$TMP/live.txt" 5 "kind=error broker=$B error=\"not answering" ||
    fail "the live view did not report the broker gone"
start_broker
for _ in $(seq 80); do
    sed -n '/kind=error/,$p' "$TMP/live.txt" | grep -q " kind=broker " && break
    sleep 0.1
done
sed -n '/kind=error/,$p' "$TMP/live.txt" | grep -q " kind=broker " ||
    fail "the live view did not pick up the restarted broker"
kill -TERM $TOP
for _ in $(seq 30); do kill -0 $TOP 2>/dev/null || break; sleep 0.1; done
kill -0 $TOP 2>/dev/null && fail "top did not stop on SIGTERM"
wait $TOP || fail "top exited $? on SIGTERM"
pass "the live view survived a broker restart and stops on SIGTERM"
echo "7 passed, 0 failed"

#!/usr/bin/env bash
# A broker killed with SIGKILL (no goodbye, no state saved) and started again
# on the same port: training goes on by itself. The learner and both actors
# reconnect (libzmq retries the connection; the learner says hello again every
# second, with its credit), the new broker sees both actors' segments, the
# learner's version grows past where it stalled, and the actors apply weights
# published after the restart; segments the old broker held when it died
# (the learner paused) are counted lost by the new one, and shown in top.
# Prints, as information (not asserted), the
# restart's cost: seconds from the new broker's start to its first segment
# and to the learner's first new version (the latter to the learner's log
# resolution, a quarter of a second).
. "$(dirname "$0")/lib.sh"
PORT=$(free_port) B=127.0.0.1:$PORT

N=0
start_broker() {
    N=$((N + 1))
    "$VOLLEY" broker --port "$PORT" --bind 127.0.0.1 > "$TMP/broker-$N.log" 2>&1 &
    BROKER=$!
    PIDS+=($BROKER)
}
status() { "$VOLLEY" ctl --broker $B status > "$TMP/status.txt" 2> "$TMP/status.err"; }
av() { sed -n "s/.* kind=actor id=$1 .* $2=\([^ ]*\).*/\1/p" "$TMP/status.txt" | head -1; }
bv() { sed -n "s/.* kind=broker .* $1=\([^ ]*\).*/\1/p" "$TMP/status.txt" | head -1; }
version() { sed -n 's/.* version=\([0-9]*\) .*/\1/p' "$TMP/learner.log" | tail -1; }
now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.2f", b - a }'; }
segments_from_both() { status && [ "$(av 1 segments)" -gt 0 ] 2>/dev/null && [ "$(av 2 segments)" -gt 0 ] 2>/dev/null; }

# lib.sh's free_port can race another program for the port (its range overlaps
# the kernel's ephemeral ports): another port, then, for the first broker.
for _ in 1 2 3; do
    start_broker
    wait_for "$TMP/broker-$N.log" 5 "listening on|cannot listen" || fail "the broker does not listen"
    grep -q "listening on" "$TMP/broker-$N.log" && break
    wait $BROKER
    PORT=$(free_port) B=127.0.0.1:$PORT
done
grep -q "listening on" "$TMP/broker-$N.log" || fail "the broker does not listen"
"$VOLLEY" learner --env cartpole --broker $B --verbose > "$TMP/learner.log" 2>&1 &
PIDS+=($!)
for i in 1 2; do
    "$VOLLEY" actor --broker $B --id $i --envs 8 --quiet > "$TMP/actor-$i.log" 2>&1 &
    PIDS+=($!)
done
wait_for "$TMP/learner.log" 20 "version=[1-9][0-9]" || fail "training did not start"
for _ in $(seq 50); do segments_from_both && break; sleep 0.1; done
segments_from_both || fail "not both actors in the broker's status: $(cat "$TMP/status.txt" "$TMP/status.err")"
pass "training: version $(version), segments from actors 1 and 2: $(av 1 segments), $(av 2 segments)"

# Paused first, so that the broker dies holding segments it never delivered: the new broker
# must count them lost (what the actors sent before it, less what the learner had received).
"$VOLLEY" ctl --broker $B pause default > /dev/null || fail "pause failed"
for _ in $(seq 50); do status && [ "$(bv queued)" -gt 100 ] 2>/dev/null && break; sleep 0.1; done
status && held=$(bv queued)
[ "${held:-0}" -gt 100 ] || fail "the paused broker holds no segments: $(cat "$TMP/status.txt")"
{ kill -KILL $BROKER && wait $BROKER; } 2>/dev/null # (quiet: no "Killed" from bash)
# Without a broker the learner trains out what it holds and stalls.
stalled=
for _ in $(seq 10); do
    sleep 0.5
    v=$(version)
    sleep 0.6 # more than the learner's log interval
    [ "$(version)" = "$v" ] && { stalled=$v; break; }
done
[ -n "$stalled" ] || fail "the learner's version kept growing with no broker: $(version)"
pass "broker SIGKILLed: the learner stalled at version $stalled"

t0=$(now)
start_broker
t_seg='' t_ver=''
for _ in $(seq 150); do
    [ -z "$t_seg" ] && status && [ "$(bv received)" -gt 0 ] 2>/dev/null && t_seg=$(since "$t0")
    [ -z "$t_ver" ] && [ "$(version)" -gt "$stalled" ] && t_ver=$(since "$t0")
    [ -n "$t_seg" ] && [ -n "$t_ver" ] && break
    sleep 0.1
done
[ -n "$t_seg" ] || fail "no segment reached the new broker in 15 s: $(cat "$TMP/status.txt" "$TMP/status.err")"
[ -n "$t_ver" ] || fail "the learner's version did not grow past $stalled in 15 s after the restart"
kill -0 $BROKER 2>/dev/null || fail "the new broker exited"
grep -q "learner for policy 'default' joined" "$TMP/broker-$N.log" || fail "the learner did not join the new broker"

# Both actors in the new broker's status, their segments growing, running on
# weights published after the restart.
fresh() {
    status && [ "$(av 1 weights_version)" -gt "$stalled" ] 2>/dev/null &&
        [ "$(av 2 weights_version)" -gt "$stalled" ] 2>/dev/null
}
for _ in $(seq 100); do fresh && break; sleep 0.1; done
fresh || fail "the actors did not report weights newer than $stalled: $(cat "$TMP/status.txt" "$TMP/status.err")"
s1=$(av 1 segments) s2=$(av 2 segments) w1=$(av 1 weights_version) w2=$(av 2 weights_version)
sleep 1
status || fail "no status"
[ "$(av 1 segments)" -gt "$s1" ] && [ "$(av 2 segments)" -gt "$s2" ] ||
    fail "the actors' segments not growing at the new broker: $s1 -> $(av 1 segments), $s2 -> $(av 2 segments)"
[ "$(av 1 alive)" = 1 ] && [ "$(av 2 alive)" = 1 ] || fail "an actor not alive at the new broker"
[ "$(bv learners)" = 1 ] || fail "the new broker lists $(bv learners) learners"
[ "$(bv adds_up)" = 1 ] || fail "counters do not add up: $(cat "$TMP/status.txt")"
pass "restarted on port $PORT: version $stalled -> $(version); actors 1, 2 at the new broker with segments $s1 -> $(av 1 segments), $s2 -> $(av 2 segments), on weights $w1, $w2"
for _ in $(seq 100); do status && [ "$(bv lost_before)" -ge "$held" ] 2>/dev/null && break; sleep 0.1; done
[ "$(bv lost_before)" -ge "$held" ] 2>/dev/null ||
    fail "the new broker counts $(bv lost_before) lost before it; the old one died holding $held"
"$VOLLEY" top --broker $B --once | grep -qE "LOST before this broker: [1-9]" || fail "top does not show the loss"
pass "the old broker died holding $held segments: the new one counts $(bv lost_before) lost before it (actors' sent_before: $(av 1 sent_before), $(av 2 sent_before)), and top shows it"
# Segments the actors held through the outage that reached the new broker
# before the learner's hello are dropped as "no learner" (counted, above).
early=$(sed -n 's/.* kind=drop .*reason="no learner serves its policy" count=\([0-9]*\).*/\1/p' "$TMP/status.txt")
echo "info restart cost: first segment at the new broker ${t_seg} s after its start; learner's version past $stalled ${t_ver} s after it; ${early:-0} segments dropped before the learner joined"
echo "4 passed, 0 failed"

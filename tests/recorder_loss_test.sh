#!/usr/bin/env bash
# Books that show every loss, 1: the recording's disk fills up (the broker
# runs under a 4 MiB file-size limit, as a full disk would stop it). The broker
# goes on routing; its status counts as recorded exactly the records the file
# holds whole (what a replay reads), the rest as lost, says the recording is
# degraded and why, and `volley top` shows it.
. "$(dirname "$0")/lib.sh"
PORT=$(free_port)
B=127.0.0.1:$PORT
REC=$TMP/run.vlrec
# SIGXFSZ ignored: a write past the limit fails with EFBIG, as one on a full disk with ENOSPC.
(trap '' XFSZ; ulimit -f 4096; exec "$VOLLEY" broker --port "$PORT" --bind 127.0.0.1 --record "$REC" \
    --record-flush everysec) > "$TMP/broker.log" 2>&1 &
BROKER=$!
PIDS+=($BROKER)
wait_for "$TMP/broker.log" 10 "listening" || fail "the broker did not start"
"$VOLLEY" learner --env cartpole --broker $B --verbose > "$TMP/learner.log" 2>&1 &
PIDS+=($!)
"$VOLLEY" actor --broker $B --envs 4 --quiet > "$TMP/actor.log" 2>&1 &
PIDS+=($!)
kv() { "$VOLLEY" top --broker $B --kv --once | sed -n "s/.* kind=broker .* $1=\([^ ]*\).*/\1/p" | head -1; }
for _ in $(seq 150); do [ "$(kv record_degraded)" = 1 ] && break; sleep 0.2; done
[ "$(kv record_degraded)" = 1 ] || fail "the recording never said it was degraded (disk full)"
v=$(grep -oE "version=[0-9]+" "$TMP/learner.log" | tail -1 | cut -d= -f2)
sleep 2
[ "$(grep -oE "version=[0-9]+" "$TMP/learner.log" | tail -1 | cut -d= -f2)" -gt "$v" ] || fail "training stopped with the disk full"
"$VOLLEY" top --broker $B --once > "$TMP/frame.txt" || fail "top failed"
grep -qE "recording DEGRADED: [0-9]+ recorded, [1-9][0-9]* LOST" "$TMP/frame.txt" ||
    fail "top does not show the lost records: $(cat "$TMP/frame.txt")"
pass "disk full: training goes on; status and top say the recording is degraded and count what it lost"

kill -TERM $BROKER
wait $BROKER
recorded=$(sed -n 's/.*recorded \([0-9]*\) messages.*/\1/p' "$TMP/broker.log" | tail -1)
lost=$(sed -n 's/.*recording incomplete: \([0-9]*\) messages not recorded.*/\1/p' "$TMP/broker.log" | tail -1)
received=$(sed -n 's/.*segments received=\([0-9]*\) .*/\1/p' "$TMP/broker.log" | tail -1)
"$VOLLEY" replay "$REC" --quiet > "$TMP/replay.out" 2>&1
infile=$(grep -oE "[0-9]+ (whole )?records?" "$TMP/replay.out" | head -1 | grep -oE "^[0-9]+")
echo "     received $received, recorded $recorded, lost $lost; the file holds ${infile:-?} whole records"
[ -n "$recorded" ] && [ -n "$lost" ] && [ "$((recorded + lost))" -eq "$received" ] ||
    fail "recorded + lost != received ($recorded + $lost vs $received)"
[ -n "$infile" ] && [ "$recorded" -eq "$infile" ] || fail "counted $recorded recorded, the file holds ${infile:-?}"
pass "recorded ($recorded) + lost ($lost) = received ($received); recorded = what a replay of the file reads ($infile)"
echo "2 passed, 0 failed"

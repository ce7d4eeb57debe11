#!/usr/bin/env bash
# A dropped segment is lost data, and shown as such. A learner that trains slower than its
# actors send (--batch 16 against 2 actors of 64 envs) and keeps only --max-lag 1 drops most
# of what arrives for lag; then its log has a progress line and a warning naming lag and the
# fix, metrics.jsonl counts the drops by cause (they add up to segments_dropped, and no more
# were dropped and trained than arrived), `volley top --once` and `volley ctl status` show the
# learner's drops (the broker's own counters still add up), and so does the broker's exit
# summary.
. "$(dirname "$0")/lib.sh"
PORT=$(free_port)
B=127.0.0.1:$PORT
cd "$TMP" || fail "cd $TMP"
mkdir -p metrics

"$VOLLEY" broker --port "$PORT" --bind 127.0.0.1 --log-every 1 > broker.log 2>&1 &
BROKER=$!
PIDS+=($BROKER)
wait_for broker.log 10 "listening on .*\(control\)" || fail "the broker does not listen"
"$VOLLEY" learner --broker $B --batch 16 --max-lag 1 --metrics metrics > learner.log 2>&1 &
PIDS+=($!)
for i in 1 2; do
    "$VOLLEY" actor --broker $B --id $i --envs 64 --quiet > actor-$i.log 2>&1 &
    PIDS+=($!)
done

# The progress line and its warning come every 10 s: wait for the first, generously.
wait_for learner.log 60 "warn: [0-9]+% of the segments that arrived in the last [0-9]+ s were dropped" ||
    fail "the learner logged no warning of its drops: $(tail -5 learner.log)"
warning=$(grep -E "warn: [0-9]+% of the segments that arrived" learner.log | head -1)
echo "$warning" | grep -qE "dropped as more than --max-lag 1 versions old: .*raise --batch" ||
    fail "the warning does not name lag and its fix: $warning"
progress=$(grep -E "info: progress: v[0-9]+ " learner.log | head -1)
echo "$progress" | grep -qE "dropped [1-9][0-9]* of [0-9]+ arrived \([0-9<]+%; lag [1-9][0-9]*" ||
    fail "no progress line with drops by cause: $progress"
pass "the learner says it drops for lag: ${progress#*info: }"
pass "and warns: ${warning#*warn: }"

# jnum KEY: KEY's number in $row, one row of metrics.jsonl (read once: the learner goes on
# writing rows).
jnum() { echo "$row" | sed -n "s/.*\"$1\":\([0-9]*\).*/\1/p"; }
for _ in $(seq 100); do
    row=$(tail -n 1 metrics/metrics.jsonl)
    [ "$(jnum dropped_lag)" -gt 0 ] 2>/dev/null && [ -n "$(jnum segments_arrived)" ] && break
    sleep 0.1
done
lag=$(jnum dropped_lag) cap=$(jnum dropped_capacity) bud=$(jnum dropped_budget)
inv=$(jnum dropped_invalid) dropped=$(jnum segments_dropped) arrived=$(jnum segments_arrived)
trained=$(jnum segments_trained)
[ -n "$lag" ] && [ -n "$cap" ] && [ -n "$bud" ] && [ -n "$inv" ] && [ -n "$arrived" ] ||
    fail "metrics.jsonl's last row lacks a drop count: $row"
[ "$lag" -gt 0 ] || fail "metrics.jsonl counts no drop for lag: $row"
[ $((lag + cap + bud + inv)) -eq "$dropped" ] ||
    fail "the causes $lag + $cap + $bud + $inv do not add up to segments_dropped $dropped"
[ "$arrived" -ge $((trained + dropped)) ] ||
    fail "segments_arrived $arrived < trained $trained + dropped $dropped"
pass "metrics.jsonl: dropped $dropped = lag $lag + capacity $cap + budget $bud + invalid $inv; arrived $arrived >= trained $trained + dropped"

"$VOLLEY" top --broker $B --once > top.txt || fail "volley top --once exited $?"
echo "--- volley top --once"; cat top.txt; echo "---"
grep -q "drops: none" top.txt && fail "volley top says 'drops: none' while the learner drops"
grep -qE "^  default +[0-9]+ .* [1-9][0-9]* \([0-9]+%\) +[0-9]+ +[0-9]+$" top.txt ||
    fail "the learners table has no dropped column with a share"
grep -qE "^  learner +[1-9][0-9]*  lag \(older than --max-lag\)$" top.txt ||
    fail "the drops block does not list the learner's drops for lag"
grep -qE "^  default +dropped [1-9][0-9]* of [0-9]+ arrived \([0-9]+%\): lag [1-9]" top.txt ||
    fail "no line of the learner's drops by cause"
grep -q "(adds up)" top.txt || fail "the broker's own counters no longer add up"
pass "volley top shows the learner's drops: $(grep -E '^  learner ' top.txt | tr -s ' ')"

"$VOLLEY" ctl --broker $B status > status.txt || fail "volley ctl status exited $?"
grep -qE " kind=drop drop_kind=learner reason=\"lag \(older than --max-lag\)\" count=[1-9]" status.txt ||
    fail "ctl status has no learner drop row: $(grep kind=drop status.txt)"
grep -qE " kind=broker .* adds_up=1 .* learner_dropped=[1-9]" status.txt ||
    fail "ctl status' broker line has no learner_dropped (or does not add up)"
grep -qE " kind=learner .* dropped_lag=[1-9][0-9]* .* segments_arrived=[1-9]" status.txt ||
    fail "ctl status' learner line has no drops by cause"
pass "volley ctl status: $(grep -oE 'learner_dropped=[0-9]+' status.txt)"

"$VOLLEY" ctl --broker $B shutdown | grep -q "^ok" || fail "shutdown refused"
for _ in $(seq 100); do kill -0 $BROKER 2>/dev/null || break; sleep 0.1; done
kill -0 $BROKER 2>/dev/null && fail "the broker did not exit"
grep -q "(they add up)" broker.log || fail "the broker's exit summary does not add up"
grep -qE "learner dropped [1-9][0-9]* of the [0-9]+ segments routed" broker.log ||
    fail "the broker's exit summary has no learner drops: $(tail -5 broker.log)"
grep -qE "  learner dropped [1-9][0-9]* segments: lag \(older than --max-lag\)" broker.log ||
    fail "the broker's exit summary does not say why the learner dropped"
grep -qE "status .* learner_dropped=[1-9]" broker.log ||
    fail "the broker's status lines have no learner_dropped"
pass "the broker's books: $(grep -oE 'learner dropped [0-9]+ of the [0-9]+ segments routed' broker.log)"
echo "5 passed, 0 failed"

#!/usr/bin/env bash
# The learner keeps up: started by hand at its defaults and fed by 2 actors x 64 envs (128
# segments a round), it takes what the actors sent since its last update into the next
# (--batch left to it holds a round of 256 envs) while the actors wait for the weights trained
# on their round (--max-ahead 1), so at most 5 % of what arrives is dropped. Before, an update
# took 16 segments and 87 % were dropped as older than --max-lag. The same run with --batch 16
# is shown beside it, dropping most: the figure this test guards is the defaults'.
. "$(dirname "$0")/lib.sh"

# run NAME [learner flags...]: training until the learner has trained 2,000 segments (HANG s,
# far above the seconds that take, only stop a run that hangs); prints "trained dropped" from
# the last row.
HANG=300
run() {
    local name=$1 port; shift
    port=$(free_port)
    mkdir -p "$TMP/$name"
    "$VOLLEY" broker --port "$port" --bind 127.0.0.1 --quiet > "$TMP/$name-broker.log" 2>&1 &
    local b=$!
    PIDS+=($b)
    "$VOLLEY" learner --broker 127.0.0.1:$port --metrics "$TMP/$name" "$@" \
        > "$TMP/$name-learner.log" 2>&1 &
    local l=$!
    PIDS+=($l)
    local a=()
    for i in 1 2; do
        "$VOLLEY" actor --broker 127.0.0.1:$port --envs 64 --id $i --quiet \
            > "$TMP/$name-actor-$i.log" 2>&1 &
        a+=($!)
        PIDS+=($!)
    done
    wait_for "$TMP/$name/metrics.jsonl" $HANG '"segments_trained":([2-9][0-9]{3}|[0-9]{5,})' ||
        fail "$name: hung: fewer than 2000 segments trained after $HANG s: $(tail -c 300 "$TMP/$name/metrics.jsonl")" >&2
    kill "${a[@]}"
    sleep 0.5
    kill $l
    wait $l 2>/dev/null
    kill $b
    tail -1 "$TMP/$name/metrics.jsonl" | sed -E 's/.*"segments_trained":([0-9]+),"segments_dropped":([0-9]+).*/\1 \2/'
}

run defaults > "$TMP/defaults.out" # in this shell: its fail ends the test (on stderr)
read -r trained dropped < "$TMP/defaults.out"
share=$(( 100 * dropped / (trained + dropped) ))
echo "defaults: trained $trained segments, dropped $dropped ($share %)"
[ "$trained" -ge 2000 ] || fail "defaults: only $trained segments trained"
[ $(( 100 * dropped )) -le $(( 5 * (trained + dropped) )) ] ||
    fail "defaults: dropped $dropped of $((trained + dropped)) segments ($share %), over 5 %"
pass "defaults: $share % dropped (at most 5 %)"

run batch16 --batch 16 > "$TMP/batch16.out"
read -r t16 d16 < "$TMP/batch16.out"
echo "--batch 16: trained $t16 segments, dropped $d16 ($(( 100 * d16 / (t16 + d16) )) %)"
[ "$d16" -gt "$t16" ] || fail "--batch 16 dropped $d16 of $((t16 + d16)): expected most"
pass "--batch 16 (an update too small for the round) drops most: what the defaults avoid"

#!/usr/bin/env bash
# Record and replay. The committed recording tests/data/cartpole.vlrec,
# replayed into volley's deterministic learner, gives the committed weights
# checksum tests/data/cartpole.golden: a change to the learner that changes
# learning fails here. When the change is intended, regenerate the golden
# value (and say why in the commit):
#     bash tests/replay_test.sh build/volley --regenerate
# Also: replaying twice gives the same checksum; a fresh `volley up --record`
# replays twice to the same checksum; a truncated recording replays its
# valid prefix and says so; a flipped bit is reported with its offset and no
# checksum is printed; an existing file is never overwritten; replay into a
# running broker delivers every record; --pace recorded takes at least the
# recorded time; an interrupted replay prints no checksum.
. "$(dirname "$0")/lib.sh"
DATA=$(cd "$(dirname "$0")/data" && pwd)
REC=$DATA/cartpole.vlrec
GOLDEN=$DATA/cartpole.golden
replay() { "$VOLLEY" replay "$@" --quiet; }

if [ "${2:-}" = "--regenerate" ]; then
    replay "$REC" | tail -1 > "$GOLDEN"
    echo "wrote $(cat "$GOLDEN") to $GOLDEN"
    exit 0
fi

a=$(replay "$REC" | tail -1)
b=$(replay "$REC" | tail -1)
[[ "$a" =~ ^[0-9a-f]{16}$ ]] || fail "last line is not a 16-digit hex checksum: '$a'"
[ "$a" = "$b" ] || fail "two replays of one recording differ: $a $b"
[ "$a" = "$(cat "$GOLDEN")" ] ||
    fail "weights checksum $a, golden $(cat "$GOLDEN"): learning changed. If intended: bash tests/replay_test.sh build/volley --regenerate"
pass "the committed recording replays to the golden checksum $a, twice"

# A different seed must change the weights: the checksum covers them.
c=$(replay "$REC" --seed 2 | tail -1)
[ "$c" != "$a" ] || fail "--seed 2 gave the same checksum"
pass "another seed, another checksum ($c)"

# A fresh recording of a live run.
(cd "$TMP" && "$VOLLEY" up --port 0 --max-steps 20000 --record ./fresh.vlrec > up.log 2>&1)
[ -s "$TMP/fresh.vlrec" ] || fail "volley up --record wrote nothing"
replay "$TMP/fresh.vlrec" > "$TMP/fresh1.out"
f1=$(tail -1 "$TMP/fresh1.out")
f2=$(replay "$TMP/fresh.vlrec" | tail -1)
[ "$f1" = "$f2" ] && [[ "$f1" =~ ^[0-9a-f]{16}$ ]] || fail "a fresh recording replays to $f1 then $f2"
# It trained (the checksum of untouched weights would repeat too) and refused nothing.
grep -qE "^records=[0-9]+ accepted=[1-9][0-9]* refused=0 updates=[1-9]" "$TMP/fresh1.out" ||
    fail "the fresh recording did not train cleanly: $(head -1 "$TMP/fresh1.out")"
pass "a fresh volley up --record replays twice to $f1"
(cd "$TMP" && "$VOLLEY" up --port 0 --max-steps 20000 --record ./fresh.vlrec > up2.log 2>&1) &&
    fail "volley up --record over an existing file succeeded"
grep -q "exists" "$TMP/up2.log" || fail "no reason given for refusing an existing file: $(tail -3 "$TMP/up2.log")"
pass "an existing recording is never overwritten"

# Truncated: the valid prefix, said.
size=$(stat -c %s "$REC")
for cut in $((size - 1)) $((size / 2 + 7)) 200; do
    head -c $cut "$REC" > "$TMP/cut.vlrec"
    out=$("$VOLLEY" replay "$TMP/cut.vlrec" 2>&1) || fail "a recording cut at byte $cut was refused: $out"
    echo "$out" | grep -q "torn" || fail "cut at byte $cut: not reported as torn: $(echo "$out" | tail -3)"
    [[ "$(echo "$out" | tail -1)" =~ ^[0-9a-f]{16}$ ]] || fail "cut at byte $cut: no checksum"
done
head -c 20 "$REC" > "$TMP/cut.vlrec"
"$VOLLEY" replay "$TMP/cut.vlrec" > "$TMP/cut.log" 2>&1 && fail "a recording cut inside its header replayed"
pass "recordings cut at 3 places replay their valid prefix and say so; one cut in the header is refused"

# A flipped bit: detected, with its offset; no checksum.
for at in 30 $((size / 3)) $((size - 2)); do
    cp "$REC" "$TMP/flip.vlrec"
    byte=$(od -An -tu1 -j $at -N1 "$REC" | tr -d ' ')
    printf "$(printf '\\%03o' $((byte ^ 4)))" | dd of="$TMP/flip.vlrec" bs=1 seek=$at conv=notrunc 2>/dev/null
    cmp -s "$REC" "$TMP/flip.vlrec" && fail "the bit flip at $at did not happen"
    if "$VOLLEY" replay "$TMP/flip.vlrec" > "$TMP/flip.log" 2>&1; then
        fail "a flipped bit at byte $at went unnoticed: $(tail -2 "$TMP/flip.log")"
    fi
    grep -qiE "checksum|corrupt" "$TMP/flip.log" || fail "flip at $at: no reason: $(tail -2 "$TMP/flip.log")"
    grep -qE "^[0-9a-f]{16}$" "$TMP/flip.log" && fail "flip at $at: a checksum was printed"
done
pass "bit flips at 3 places detected and reported"

# Into a running broker: every record arrives (received counts them all).
PORT=$(free_port)
"$VOLLEY" broker --port "$PORT" --bind 127.0.0.1 --log-every 0 > "$TMP/broker.log" 2>&1 &
PIDS+=($!)
wait_for "$TMP/broker.log" 10 "listening" || fail "broker did not start"
records=$(replay "$REC" | sed -n 's/^records=\([0-9]*\) .*/\1/p')
"$VOLLEY" replay "$REC" --broker 127.0.0.1:$PORT > "$TMP/into.log" 2>&1 || fail "replay into the broker failed"
for _ in $(seq 50); do
    got=$("$VOLLEY" ctl --broker 127.0.0.1:$PORT status | sed -n 's/.*kind=broker .*received=\([0-9]*\) .*/\1/p')
    [ "${got:-0}" -ge "$records" ] && break
    sleep 0.1
done
[ "${got:-0}" -eq "$records" ] || fail "the broker received ${got:-0} of $records records"
pass "replayed into a running broker: $records records received"

# At the recorded pace a replay into a broker (which takes records far faster than they were
# recorded) lasts at least the recording's span, however fast the machine; as fast as possible
# it waits for no gap, which takes whatever the machine gives it: reported, not held to a bound.
span_ms=$(replay "$REC" | sed -n 's/.*span_ms=\([0-9]*\).*/\1/p')
[ -n "$span_ms" ] || fail "replay does not print the recorded span"
took() { local s; s=$(date +%s%N); "$VOLLEY" replay "$REC" --broker 127.0.0.1:$PORT --quiet "$@"; echo $(( ($(date +%s%N) - s) / 1000000 )); }
fast_ms=$(took --pace fast)
paced_ms=$(took --pace recorded)
[ "$paced_ms" -ge "$span_ms" ] || fail "--pace recorded took $paced_ms ms for a $span_ms ms recording"
pass "into a broker: --pace recorded took $paced_ms ms for $span_ms ms of recording, fast $fast_ms ms"
# Interrupted: no checksum, exit 130 (a partial replay must not pass for a whole one).
"$VOLLEY" replay "$REC" --pace recorded > "$TMP/int.out" 2>&1 &
rp=$!
sleep 0.1
kill -INT $rp
wait $rp
rc=$?
[ $rc -eq 130 ] || fail "an interrupted replay exited $rc, wanted 130"
grep -qE "^[0-9a-f]{16}$" "$TMP/int.out" && fail "an interrupted replay printed a checksum"
pass "an interrupted replay prints no checksum and exits 130"
echo "9 passed, 0 failed"

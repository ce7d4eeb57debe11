#!/usr/bin/env bash
# Replay stays bit-identical with a recurrent policy. A short `volley up --env memory --model
# "linear(16) lstm(16)" --deterministic --until steps --max-steps 30000 --record` (about 1 s;
# some 470 segments, each carrying the actor's 32-float state) replayed twice into volley's
# deterministic learner with the same --model gives the same weights checksum, having trained
# on every segment; --seed 2 gives another checksum, and so does --burn-in 4 (the learner
# rebuilds each segment's state over its first 4 steps and leaves them out of the loss).
# Replayed without --model (the default MLP, no state) every segment is refused and the
# replay says why: "state size 32, learner serves 0".
# Usage: lstm_replay_test.sh path/to/volley
. "$(dirname "$0")/lib.sh"
cd "$TMP" || fail "no temp dir"
MODEL="linear(16) lstm(16)"
replay() { "$VOLLEY" replay ./lstm.vlrec --env memory --quiet "$@"; }

"$VOLLEY" up --env memory --model "$MODEL" --deterministic --until steps --max-steps 30000 \
    --record ./lstm.vlrec > up.log 2>&1 || fail "volley up --record: $(tail -3 up.log)"
[ -s lstm.vlrec ] || fail "volley up --record wrote nothing"

replay --model "$MODEL" > one.out 2>&1 || fail "replay: $(cat one.out)"
replay --model "$MODEL" > two.out 2>&1 || fail "replay: $(cat two.out)"
a=$(tail -1 one.out)
b=$(tail -1 two.out)
[[ "$a" =~ ^[0-9a-f]{16}$ ]] || fail "last line is not a 16-digit hex checksum: '$a'"
[ "$a" = "$b" ] || fail "two replays of one lstm recording differ: $a $b"
grep -qE "^records=[0-9]+ accepted=[1-9][0-9]* refused=0 updates=[1-9]" one.out ||
    fail "the replay did not train on every segment: $(head -1 one.out)"
pass "the lstm recording replays twice to $a ($(head -1 one.out | cut -d' ' -f1-4))"

c=$(replay --model "$MODEL" --seed 2 | tail -1)
[[ "$c" =~ ^[0-9a-f]{16}$ ]] && [ "$c" != "$a" ] || fail "--seed 2 gave '$c' (seed 1: $a)"
d=$(replay --model "$MODEL" --burn-in 4 | tail -1)
[[ "$d" =~ ^[0-9a-f]{16}$ ]] && [ "$d" != "$a" ] && [ "$d" != "$c" ] ||
    fail "--burn-in 4 gave '$d' (none: $a)"
pass "another seed, another checksum ($c); --burn-in 4 another ($d)"

replay > mlp.out 2>&1
grep -qE "^records=[0-9]+ accepted=0 refused=[1-9]" mlp.out ||
    fail "the recurrent segments were taken by a memoryless learner: $(head -1 mlp.out)"
grep -q "the first refused: state size 32, learner serves 0" mlp.out ||
    fail "the refusal does not name the state size: $(cat mlp.out)"
pass "replayed without --model: every segment refused, $(grep 'first refused' mlp.out | sed 's/^ *//')"

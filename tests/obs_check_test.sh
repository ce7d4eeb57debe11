#!/usr/bin/env bash
# --obs-check for C envs (volley up, volley actor): an env writing an f32
# value outside its declared range (the counter plugin's "range" fault: 1.5
# in [0, 1]) stops the actor with one line naming the env, the element, the
# value and the range (error, the default); warn trains on and says so once
# per actor; off trains on silently; a bad mode is refused with one line.
. "$(dirname "$0")/lib.sh"
PLUGIN=${2:?usage: $0 path/to/volley path/to/libvl_counter_env.so}
cd "$TMP"
up() { "$VOLLEY" up --runs runs --name "$1" --env "$PLUGIN" --env-arg range --until steps \
    --max-steps 20000 --actors 2 ${2:+--obs-check "$2"} > "$1.log" 2>&1; }

up default ""
rc=$?
[ $rc -ne 0 ] || fail "an env writing outside its declared range ran to the end (exit 0)"
grep -hqE "env 'counter': env [0-9]+ step wrote obs\[0\] = 1\.5, field 0 \(f32\) element 0 must be in \[0, 1\] \(its declared range; --obs-check warn or off" runs/default/logs/actor-*.log ||
  fail "the refusal does not name the element, value and range: $(cat runs/default/logs/actor-*.log)"
pass "by default a value outside its declared range stops the run (exit $rc), naming element, value and range"

up warn warn || fail "--obs-check warn: exit $?: $(tail -3 warn.log)"
tail -1 warn.log | grep -q "^done:" || fail "--obs-check warn did not finish: $(tail -3 warn.log)"
for log in runs/warn/logs/actor-*.log; do
  n=$(grep -c "outside field 0's declared range \[0, 1\]; --obs-check warn: sent as it is" "$log")
  [ "$n" -eq 1 ] || fail "--obs-check warn: $n warnings in $log, expected 1: $(cat "$log")"
done
grep -q "^obs-check = warn$" runs/warn/config.ini || fail "config.ini does not keep --obs-check: $(cat runs/warn/config.ini)"
pass "--obs-check warn trains to the end, one warning per actor, kept in config.ini"

up off off || fail "--obs-check off: exit $?: $(tail -3 off.log)"
! grep -hq "declared range" runs/off/logs/actor-*.log || fail "--obs-check off still warned"
pass "--obs-check off trains to the end without a word"

"$VOLLEY" actor --broker 127.0.0.1:1 --obs-check loud > bad.log 2>&1
rc=$?
[ $rc -eq 2 ] && [ "$(wc -l < bad.log)" -eq 1 ] && grep -q "^volley actor: --obs-check wants error, warn or off, not 'loud'$" bad.log ||
  fail "a bad --obs-check: exit $rc, $(cat bad.log)"
# A word that is another flag's value is that flag's: here --env-arg's.
"$VOLLEY" actor --broker 127.0.0.1:1 --env-arg --obs-check --obs-check loud > badval.log 2>&1
rc=$?
[ $rc -eq 2 ] && [ "$(wc -l < badval.log)" -eq 1 ] && grep -q "^volley actor: --obs-check wants error, warn or off, not 'loud'$" badval.log ||
  fail "--env-arg --obs-check was read as --obs-check: exit $rc, $(cat badval.log)"
"$VOLLEY" up --obs-check loud > badup.log 2>&1
[ $? -eq 2 ] && grep -q "volley up: --obs-check wants error, warn or off, not 'loud'" badup.log ||
  fail "up with a bad --obs-check: $(cat badup.log)"
"$VOLLEY" actor --help | grep -q -- "--obs-check MODE" || fail "volley actor --help does not name --obs-check"
pass "a bad --obs-check is refused with one line (exit 2); --help names it"
echo "4 passed, 0 failed"

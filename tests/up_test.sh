#!/usr/bin/env bash
# `volley up` solves CartPole within a step budget: broker, learner and two
# actor processes over real loopback sockets, started and stopped by one
# command. Its last line is the solved line, and it leaves no process behind.
. "$(dirname "$0")/lib.sh"

"$VOLLEY" up --port 0 --actors 2 --max-steps 2000000 --max-seconds 240 > "$TMP/up.log" 2> "$TMP/up.err"
rc=$?
cat "$TMP/up.log" | tail -5
[ $rc -eq 0 ] || fail "volley up exited $rc: $(tail -3 "$TMP/up.err")"
last=$(tail -n 1 "$TMP/up.log")
echo "$last" | grep -qE '^solved: [0-9]+ steps in [0-9]+\.[0-9] s \([0-9]+ steps/s\)$' ||
    fail "last line is not the solved line: '$last'"
grep -qE '^steps=[0-9]+ sps=[0-9]+ episodes=[0-9]+ return=' "$TMP/up.log" || fail "no progress lines"
pass "volley up solves CartPole: $last"

port=$(sed -n 's/.*broker on 127.0.0.1:\([0-9]*\).*/\1/p' "$TMP/up.log")
sleep 0.5
if pgrep -f "volley .*(--port $port|127.0.0.1:$port)( |$)" > /dev/null; then
    fail "processes of the run are still alive: $(pgrep -af "127.0.0.1:$port")"
fi
pass "every child process stopped"
echo "2 passed, 0 failed"

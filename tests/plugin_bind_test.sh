#!/usr/bin/env bash
# A plugin's names are its own: tests/plugins/vl_clash_env.c, built with docs/envs.md's line,
# defines plain `step()` and `reset()` and a `vl_now_ns` named like one of libvolley's own
# functions; loaded by volley, each of its calls must reach its own definition, and it trains
# to solved. A plugin that crashes is reported by signal and path, and `volley up` says how the
# actor ended in words, not as a raw wait status.
. "$(dirname "$0")/lib.sh"

SRC=$(cd "$(dirname "$0")/.." && pwd)
BUILD=$(dirname "$VOLLEY")
cd "$TMP" || fail "cd $TMP"
# docs/envs.md's line; -I stands in for `pkg-config --cflags volley` of an installed volley.
cc -shared -fPIC -o libclash.so "$SRC/tests/plugins/vl_clash_env.c" -I"$SRC/include" -I"$BUILD/include" \
    2> cc.log || fail "the plugin does not build: $(head -5 cc.log)"
nm -D --defined-only libclash.so | grep -qw vl_now_ns || fail "libclash.so exports no vl_now_ns"
nm --defined-only "$BUILD/libvolley.a" 2> /dev/null | grep -qw vl_now_ns ||
    fail "libvolley has no vl_now_ns of its own: the clash tests nothing"
pass "libclash.so exports step, reset and vl_now_ns, a name libvolley uses inside"

"$VOLLEY" up --env ./libclash.so --port 0 --max-seconds 60 > up.log 2> up.err
rc=$?
tail -2 up.log
[ $rc -eq 0 ] || fail "volley up --env ./libclash.so exited $rc: $(tail -3 up.err)"
tail -n 1 up.log | grep -qE '^solved: ' || fail "last line is not the solved line: '$(tail -n 1 up.log)'"
pass "the plugin's own step/reset/vl_now_ns are called and it trains: $(tail -n 1 up.log)"

"$VOLLEY" actor --env ./libclash.so --env-arg crash --broker 127.0.0.1:$(free_port) > crash.log 2> crash.err
rc=$?
[ $rc -eq 139 ] || fail "an actor whose plugin segfaults exited $rc, not 128+11: $(tail -3 crash.err)"
grep -qF "killed by signal 11 (SIGSEGV) in env plugin ./libclash.so" crash.err ||
    fail "the actor did not name the signal and the plugin: $(tail -3 crash.err)"
pass "a crashing plugin: $(grep -F 'in env plugin' crash.err)"

# A fatal signal sent from outside (not a fault, which would recur) still ends the actor by it.
"$VOLLEY" actor --env ./libclash.so --broker 127.0.0.1:$(free_port) > sent.log 2> sent.err &
pid=$!
PIDS+=($pid)
wait_for sent.err 20 "no broker at" || fail "the actor of libclash.so never said what it waits for"
kill -BUS $pid
for _ in $(seq 100); do kill -0 $pid 2> /dev/null || break; sleep 0.1; done
kill -0 $pid 2> /dev/null && { kill -KILL $pid; fail "an actor sent SIGBUS goes on (the signal was swallowed)"; }
wait $pid
rc=$?
[ $rc -eq 135 ] || fail "an actor sent SIGBUS exited $rc, not 128+7 (the signal was swallowed)"
pass "an actor sent SIGBUS ends by it (exit $rc)"

"$VOLLEY" up --env ./libclash.so --env-arg crash --port 0 --max-seconds 60 > up2.log 2> up2.err
rc=$?
[ $rc -eq 1 ] || fail "volley up with a crashing plugin exited $rc, not 1"
grep -qF "the actor process stopped (killed by signal 11 (SIGSEGV))" up2.err ||
    fail "volley up did not say how the actor ended in words: $(tail -3 up2.err)"
grep -q "status [0-9]" up2.err && fail "volley up printed a raw wait status: $(grep 'status [0-9]' up2.err)"
pass "volley up: $(grep -F 'actor process stopped' up2.err)"
dir=$(sed -n 's/.*run directory \(.*\)$/\1/p' up2.log)
grep -qF "its env is the plugin ./libclash.so: logs/actor-" up2.err || fail "volley up did not point at the plugin and the actor's log: $(cat up2.err)"
cat "$dir"/logs/actor-*.log | grep -qF "killed by signal 11 (SIGSEGV) in env plugin ./libclash.so" ||
    fail "no actor log in '$dir' names the plugin that crashed"
pass "the run's actor log: $(cat "$dir"/logs/actor-*.log | grep -F 'in env plugin' | head -1)"
echo "6 passed, 0 failed"

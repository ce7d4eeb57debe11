#!/usr/bin/env bash
# What a failing run says: `volley up` names the log of a child that died (actor, broker or
# learner) with its last line and the lines above it, where the cause is; a child that dies as
# the run stops it (an env plugin that aborts in its destroy) makes the run fail, not exit 0.
# `volley broker` on a port in use says so in one line and exits 2, as `volley up` does; and
# `volley replay --help` lists each flag once. tests/plugins/vl_abort_env.c is built here with
# docs/envs.md's line; the Ocean case (PufferLib's pong) runs where its sdist is cached.
. "$(dirname "$0")/lib.sh"

SRC=$(cd "$(dirname "$0")/.." && pwd)
BUILD=$(dirname "$VOLLEY")
cd "$TMP" || fail "cd $TMP"
# docs/envs.md's line; -I stands in for `pkg-config --cflags volley` of an installed volley.
cc -shared -fPIC -o libabort.so "$SRC/tests/plugins/vl_abort_env.c" -I"$SRC/include" -I"$BUILD/include" \
    2> cc.log || fail "the plugin does not build: $(head -5 cc.log)"
n=0

# up NAME ARGS...: runs `volley up` as run NAME under $TMP/runs, its output in NAME.out and
# NAME.err (a hang guard of 120 s, far above the seconds these runs take); sets rc.
up() {
    local name=$1
    shift
    timeout 120 "$VOLLEY" up --runs "$TMP/runs" --name "$name" --port 0 "$@" > "$name.out" 2> "$name.err"
    rc=$?
}

# 1. A misspelt --env-arg: the actor stops at once; up quotes the plugin's own words from its log.
up badarg --env ./libabort.so --env-arg nosuch=1 --until seconds --max-seconds 30
said=$(grep "^volley up: " badarg.err)
[ $rc -eq 1 ] && [ "$(echo "$said" | wc -l)" -eq 1 ] ||
    fail "a refused --env-arg: exit $rc, not 1 with one line: $(cat badarg.err)"
[[ $said == *"before any segment reached the learner; $TMP/runs/badarg/logs/actor-"[12]".log ends: "* ]] ||
    fail "the line does not name the actor's log: $said"
grep -qF "abort: --env-arg 'nosuch=1' is unknown; it reads: close, after=SECONDS" badarg.err ||
    fail "the plugin's reason, in the actor's log, is not shown: $(cat badarg.err)"
pass "a refused --env-arg: exit 1, the log named and the plugin's reason shown: $(grep -F "is unknown" badarg.err)"
n=$((n + 1))

# 2. An env plugin that aborts in its destroy, as the run stops its actors: not done, exit 1.
up close --env ./libabort.so --env-arg close --until seconds --max-seconds 3
last=$(tail -n 1 close.out)
[ $rc -eq 1 ] || fail "actors killed by SIGABRT as they stopped: exit $rc, not 1: $last $(cat close.err)"
[[ $last == "not done: the actor failed at exit (killed by signal 6 (SIGABRT)); see $TMP/runs/close/logs/actor-"[12]".log" ]] ||
    fail "the last line is not the failure: '$last'"
line="^volley up: the actor process failed as it stopped \(killed by signal 6 \(SIGABRT\)\); "
grep -qE "$line$TMP/runs/close/logs/actor-[12]\.log ends: .+" close.err ||
    fail "no line names the actor's log and its last line: $(cat close.err)"
grep -qF "abort: destroy aborts, as asked" close.err || fail "the plugin's last words are not shown: $(cat close.err)"
pass "a plugin that aborts in its destroy: exit 1, '$last'"
n=$((n + 1))

# 3. An actor killed by SIGABRT mid-run (after some segments, most likely): its log and last line.
up after --env ./libabort.so --env-arg after=2 --until seconds --max-seconds 60
said=$(grep "^volley up: the actor process stopped" after.err)
[ $rc -eq 1 ] || fail "an actor killed by SIGABRT mid-run: exit $rc, not 1: $(cat after.err)"
[[ $said == *"(killed by signal 6 (SIGABRT))"*"; $TMP/runs/after/logs/actor-"[12]".log ends: "*"in env plugin ./libabort.so" ]] ||
    fail "the line does not name the actor's log and its last line: $(cat after.err)"
pass "an actor killed mid-run: $said"
n=$((n + 1))

# kill_child NAME ROLE SIG: starts run NAME (CartPole; its --max-seconds the hang guard), waits
# for its first progress line, then sends SIG to its ROLE child (broker or learner, found among
# the children of that `volley up`); sets rc to the run's exit code.
kill_child() {
    local name=$1 role=$2 sig=$3 pid
    "$VOLLEY" up --runs "$TMP/runs" --name "$name" --port 0 --until seconds --max-seconds 60 \
        > "$name.out" 2> "$name.err" &
    UP=$!
    PIDS+=($UP)
    wait_for "$name.out" 60 "^[0-9:]{8} steps=" || fail "run $name: no progress: $(cat "$name.err")"
    pid=$(ps -o pid=,args= --ppid "$UP" | awk -v r="$role" '$3 == r {print $1}')
    [ -n "$pid" ] || fail "run $name: no $role child: $(ps -o pid=,args= --ppid "$UP")"
    kill "-$sig" "$pid"
    wait "$UP"
    rc=$?
}

# 4. The broker killed mid-run: its log named.
kill_child broker broker KILL
said=$(grep "^volley up: the broker process stopped" broker.err)
[ $rc -eq 1 ] && [[ $said == *"(killed by signal 9 (SIGKILL)); stopping the run; $TMP/runs/broker/logs/broker.log ends: "?* ]] ||
    fail "the broker killed mid-run: exit $rc: $(cat broker.err)"
pass "the broker killed mid-run: exit 1, $said"
n=$((n + 1))

# 5. The learner killed mid-run: its log named, and what it said last.
kill_child learner learner KILL
line="volley up: the learner process stopped (killed by signal 9 (SIGKILL)); stopping the run; "
[ $rc -eq 1 ] && grep -qF "${line}its log is $TMP/runs/learner/logs/learner.log" learner.err &&
    [ "$(grep -c "^volley up: the learner said: " learner.err)" = 1 ] ||
    fail "the learner killed mid-run (what it said, once): exit $rc: $(cat learner.err)"
pass "the learner killed mid-run: exit 1, $(grep "learner process stopped" learner.err)"
n=$((n + 1))

# 6. `volley broker` on a port another broker holds: one line naming it, exit 2.
P=$(free_port)
"$VOLLEY" broker --port "$P" --bind 127.0.0.1 --quiet > squat.log 2>&1 &
PIDS+=($!)
for _ in $(seq 50); do ss -ltn | grep -q ":$((P + 4)) " && break; sleep 0.1; done
timeout 30 "$VOLLEY" broker --port "$P" > busy.out 2> busy.err
rc=$?
[ $rc -eq 2 ] && [ "$(cat busy.out busy.err | wc -l)" -eq 1 ] ||
    fail "volley broker on a port in use: exit $rc, not 2 with one line: $(cat busy.out busy.err)"
grep -qF -- "--port $P: port $P (segments) is in use on this box; choose another --port" busy.err ||
    fail "the line does not name the port and what to do: $(cat busy.err)"
timeout 30 "$VOLLEY" broker --port $((P - 2)) --bind 127.0.0.1 > busy2.out 2> busy2.err
rc=$?
[ $rc -eq 2 ] && grep -qF -- "port $P (weights in) is in use" busy2.err ||
    fail "volley broker --port $((P - 2)), overlapping: exit $rc: $(cat busy2.out busy2.err)"
# An interface by name (no address to try first): the bind's own refusal, one line too.
timeout 30 "$VOLLEY" broker --port "$P" --bind lo > busy3.out 2> busy3.err
rc=$?
[ $rc -eq 2 ] && [ "$(cat busy3.out busy3.err | wc -l)" -eq 1 ] &&
    grep -qF "cannot listen on tcp://lo:$P: Address already in use" busy3.err ||
    fail "volley broker --bind lo on a port in use: exit $rc, not 2 with one line: $(cat busy3.out busy3.err)"
pass "volley broker on a port in use: exit 2, $(cat busy.err)"
n=$((n + 1))

# 7. Each flag of `volley replay --help` once.
"$VOLLEY" replay --help > replay.txt 2>&1 || fail "volley replay --help exited $?"
twice=$(grep -E '^  (-[a-z], )?--[a-z]' replay.txt | sed -E 's/^  //; s/  .*//' | grep -oE -- '--[a-z][a-z0-9-]*' | sort | uniq -d)
[ -z "$twice" ] || fail "volley replay --help lists these twice: $twice"
pass "volley replay --help lists each flag once"
n=$((n + 1))

# 7b. The C actor's --model that does not parse: one line, exit 2 (a usage error), before it starts.
"$VOLLEY" actor --broker 127.0.0.1:1 --env cartpole --model 'bogus(3)' > model.out 2>&1
rc=$?
[ $rc -eq 2 ] && [ "$(wc -l < model.out)" -eq 1 ] && grep -q "^volley actor: --model 'bogus(3)': unknown layer" model.out ||
    fail "volley actor --model 'bogus(3)': exit $rc, $(cat model.out)"
pass "volley actor with a bad --model: exit 2, $(cat model.out)"
n=$((n + 1))

# 8. PufferLib's pong with a misspelt key (where the sdist is cached): the Ocean header's reason.
cache=${XDG_CACHE_HOME:-$HOME/.cache}/volley/pufferlib-3.0.0.tar.gz
if [ -f "$cache" ] && tar -xzf "$cache" pufferlib-3.0.0/pufferlib/ocean/pong pufferlib-3.0.0/raylib-5.5_linux_amd64/include 2> tar.log; then
    P3=$TMP/pufferlib-3.0.0
    # docs/envs.md's line for an Ocean env, -I for pkg-config again
    cc -O2 -shared -fPIC -fvisibility=hidden -ffunction-sections -Wl,--gc-sections -o libpong.so \
        "$SRC/envs/ocean/pong.c" -I"$P3/pufferlib/ocean/pong" -I"$P3/raylib-5.5_linux_amd64/include" \
        -I"$SRC/include" -I"$BUILD/include" -lm 2> cc_pong.log ||
        fail "libpong.so does not build: $(grep -m3 error cc_pong.log)"
    up pong --env ./libpong.so --env-arg nosuch=1 --until seconds --max-seconds 30
    [ $rc -eq 1 ] && grep -q "^volley up: .*$TMP/runs/pong/logs/actor-[12]\.log ends: " pong.err &&
        grep -qF "pong: --env-arg key 'nosuch' is unknown; it reads: max_steps" pong.err ||
        fail "pong with --env-arg nosuch=1: exit $rc: $(cat pong.err)"
    pass "pong with a misspelt --env-arg: $(grep -F "is unknown" pong.err | cut -c1-80)..."
    n=$((n + 1))
else
    echo "skip: pong's case ($cache is not cached)"
fi
echo "$n passed, 0 failed"

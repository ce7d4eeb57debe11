#!/usr/bin/env bash
# compose/docker/: the learner host's and the actor hosts' compose files, with
# their example env files, pass Debian's `docker-compose config` and render the
# services, commands, restart policy, networking and volumes docs/deploy.md
# promises; an actor host without BROKER is refused with the reason. Then the
# commands the containers would run (entrypoint + command, from the rendered
# config, container paths mapped to the volumes' sources) run as plain
# processes on loopback: the broker listens on its five ports, the learner
# trains from two actors, the monitor's `top` sees them, a broker restart is
# survived, the learner leaves a checkpoint and the broker a recording; then the
# same with CURVE keys laid out per host as docs/deploy.md says. An actor that dies
# stops its host's others (so the restart policy starts them all again).
# A Python env: python-env.yml over actor-host.yml mounts ENVS on the actors'
# PYTHONPATH and is refused without it; as processes, the actors run
# `python -m volley actor --env MODULE:FUNCTION` on that module and the learner,
# given no --env, trains on the spec they declare; with keys they get the
# actor's --cert and --broker-key.
# No Docker engine is needed.
. "$(dirname "$0")/lib.sh"
ROOT=$(cd "$(dirname "$0")/.." && pwd)
D=$ROOT/compose/docker
# The actors launcher's processes are its children, not in PIDS: stop them too.
trap 'for p in "${PIDS[@]}"; do pkill -KILL -P "$p" 2> /dev/null; done; cleanup' EXIT

command -v docker-compose > /dev/null ||
    { echo "SKIP: docker-compose is not installed (compose/setup.sh installs it)"; exit 0; }
# docker-compose's own python has PyYAML (a dependency of Debian's package).
PY=$(sed -n '1s/^#! *\([^ ]*\).*/\1/p' "$(command -v docker-compose)")
"$PY" -c 'import yaml' 2> /dev/null || PY=python3
"$PY" -c 'import yaml' 2> /dev/null || fail "no python3 with PyYAML (docker-compose needs it)"

# q FILE services | argv SVC | env SVC | get SVC KEY | volumes SVC
# argv: entrypoint + command, /volley (the image's copy of this repository) and
# the service's volume targets mapped to their sources. env: the service's
# environment plus VOLLEY_BIN, VOLLEY_DATA, VOLLEY_KEYS for entrypoint.sh.
cat > "$TMP/q.py" << 'EOF'
import signal, sys, yaml
signal.signal(signal.SIGPIPE, signal.SIG_DFL)  # grep -q may stop reading
doc = yaml.safe_load(open(sys.argv[1]))
what, args = sys.argv[2], sys.argv[3:]
svcs = doc.get("services", {})
if what == "services":
    print("\n".join(sorted(svcs)))
    sys.exit(0)
s = svcs[args[0]]
mounts = {}
for v in s.get("volumes", []):
    src, dst = v.split(":")[:2]
    mounts[dst] = src if src.startswith("/") else "/named-volume-" + src
def host(p):
    if p == "/volley" or p.startswith("/volley/"):
        return sys.argv[-1] + p[len("/volley"):]
    for dst, src in mounts.items():
        if p == dst or p.startswith(dst + "/"):
            return src + p[len(dst):]
    return p
if what == "argv":
    for a in s.get("entrypoint", []) + s.get("command", []):
        print(host(str(a)))
elif what == "env":
    for k, v in (s.get("environment") or {}).items():
        print("%s=%s" % (k, "" if v is None else host(str(v))))
    print("VOLLEY_DATA=" + mounts.get("/data", "/nonexistent"))
    print("VOLLEY_KEYS=" + mounts.get("/keys", "/nonexistent"))
elif what == "get":
    v = s.get(args[1])
    print("" if v is None else v if isinstance(v, str) else " ".join(map(str, v)))
elif what == "volumes":
    print("\n".join(s.get("volumes", [])))
EOF
q() { "$PY" "$TMP/q.py" "$@" "$ROOT"; }
# render NAME YML[,YML...] ENVFILE [VAR=value...]: docker-compose config of the files (each
# over the one before), in a clean environment but for the given variables, into $TMP/NAME.yml.
render() {
    local name=$1 yml=$2 envfile=$3 files=() y
    shift 3
    for y in ${yml//,/ }; do files+=(-f "$D/$y"); done
    env -i PATH="$PATH" HOME="$TMP" "$@" \
        docker-compose "${files[@]}" --env-file "$envfile" config > "$TMP/$name.yml" 2> "$TMP/$name.err"
}
argv_of() { q "$TMP/$1.yml" argv "$2" | tr '\n' ' '; }

# --- the compose files, as the example env files configure them ---
render learner learner-host.yml "$D/learner-host.env" || fail "learner-host.yml: $(cat "$TMP/learner.err")"
render actor actor-host.yml "$D/actor-host.env" || fail "actor-host.yml: $(cat "$TMP/actor.err")"
[ "$(q "$TMP/learner.yml" services | tr '\n' ' ')" = "broker learner monitor " ] ||
    fail "learner host services: $(q "$TMP/learner.yml" services)"
[ "$(q "$TMP/actor.yml" services)" = actors ] || fail "actor host services: $(q "$TMP/actor.yml" services)"
for s in learner:broker learner:learner learner:monitor actor:actors; do
    f=${s%%:*} svc=${s#*:}
    [ "$(q "$TMP/$f.yml" get "$svc" network_mode)" = host ] || fail "$svc is not on the host's network"
    [ -z "$(q "$TMP/$f.yml" get "$svc" ports)" ] || fail "$svc publishes ports (host networking needs none)"
    [ "$(q "$TMP/$f.yml" get "$svc" entrypoint)" = /volley/compose/docker/entrypoint.sh ] ||
        fail "$svc's entrypoint: $(q "$TMP/$f.yml" get "$svc" entrypoint)"
    [ "$svc" = monitor ] && continue
    [ "$(q "$TMP/$f.yml" get "$svc" restart)" = unless-stopped ] || fail "$svc does not restart unless stopped"
done
[ "$(q "$TMP/learner.yml" get monitor profiles)" = tools ] || fail "the monitor would start with up"
grep -q '^ENTRYPOINT \["/volley/compose/docker/entrypoint.sh"\]' "$D/Dockerfile" ||
    fail "the Dockerfile's ENTRYPOINT is not the compose files'"
a=$(argv_of learner broker)
[ "$a" = "$D/entrypoint.sh broker --port 7600 " ] || fail "broker command: $a"
a=$(argv_of learner learner)
[[ $a == "$D/entrypoint.sh learner --broker 127.0.0.1:7600 --policy default --env cartpole "* ]] ||
    fail "learner command: $a"
[[ $a == *" --checkpoint /named-volume-data/checkpoints --resume "* ]] || fail "learner checkpoints: $a"
q "$TMP/learner.yml" volumes broker | grep -qx "data:/data:rw" || fail "the broker has no data volume"
q "$TMP/learner.yml" volumes learner | grep -qx "data:/data:rw" || fail "the learner has no data volume"
q "$TMP/learner.yml" volumes learner | grep -qx "nokeys:/keys:ro" || fail "no (empty) keys volume by default"
a=$(argv_of actor actors)
[ "$a" = "$D/entrypoint.sh actors --broker learner-host.example:7600 --envs 8 --policy default --env cartpole " ] ||
    fail "actors command: $a"
q "$TMP/actor.yml" env actors | grep -qx "ACTORS=0" || fail "ACTORS is not 0 (one per core) by default"
pass "both compose files validate; host networking, restart unless-stopped, the example env files' values in the commands"

grep -v '^BROKER=' "$D/actor-host.env" > "$TMP/nobroker.env"
render nobroker actor-host.yml "$TMP/nobroker.env" && fail "an actor host without BROKER was accepted"
grep -q "set BROKER=host:port" "$TMP/nobroker.err" || fail "no BROKER: $(cat "$TMP/nobroker.err")"
render other learner-host.yml "$D/learner-host.env" VOLLEY_PORT=7700 KEYS=/etc/vk DATA=/srv/v POLICY=p ||
    fail "learner host with overrides: $(cat "$TMP/other.err")"
a=$(argv_of other learner)
[[ $a == *" --broker 127.0.0.1:7700 --policy p "*" --checkpoint /srv/v/checkpoints "* ]] || fail "overrides: $a"
[[ $(argv_of other broker) == *" --port 7700 " ]] || fail "overridden port: $(argv_of other broker)"
q "$TMP/other.yml" volumes broker | grep -qx "/etc/vk:/keys:ro" || fail "KEYS is not mounted on /keys"
pass "an actor host without BROKER is refused with the reason; the shell's variables override the env file"

# --- the containers' commands as plain processes ---
status() { "$VOLLEY" ctl --broker 127.0.0.1:$PORT "$@" status 2> /dev/null; }
version() { sed -n 's/.* kind=learner .* version=\([0-9]*\) .*/\1/p'; }
start() { # LOG RENDERED SVC [more args]: runs the service's command like its container
    local log=$1 f=$2 svc=$3
    shift 3
    local argv env
    mapfile -t argv < <(q "$TMP/$f.yml" argv "$svc")
    mapfile -t env < <(q "$TMP/$f.yml" env "$svc")
    env "${env[@]}" VOLLEY_BIN="$VOLLEY" bash "${argv[@]}" "$@" > "$TMP/$log.log" 2>&1 &
    LAST=$!
    PIDS+=($LAST)
}
stop() { # PID: SIGTERM as `docker stop` does; fails after 5 s
    kill -TERM "$1" 2> /dev/null
    for _ in $(seq 50); do kill -0 "$1" 2> /dev/null || break; sleep 0.1; done
    kill -0 "$1" 2> /dev/null && fail "pid $1 ignored SIGTERM"
    wait "$1" 2> /dev/null
}
wait_status() { # SECS PATTERN [ctl flags]: until `ctl status` matches
    local secs=$1 pattern=$2
    shift 2
    for _ in $(seq $((secs * 5))); do
        status "$@" > "$TMP/status.txt" && grep -qE -e "$pattern" "$TMP/status.txt" && return 0
        sleep 0.2
    done
    return 1
}
actor_ids() { sed -n 's/.* kind=actor id=\([0-9]*\) .* alive=1 .*/\1/p' "$TMP/status.txt" | sort -n | tr '\n' ' '; }
wait_actors() { # SECS [ctl flags]: until `ctl status` lists two live actors
    local secs=$1
    shift
    for _ in $(seq $((secs * 5))); do
        status "$@" > "$TMP/status.txt" && [ "$(actor_ids | wc -w)" -eq 2 ] && return 0
        sleep 0.2
    done
    return 1
}

PORT=$(free_port)
mkdir -p "$TMP/data" "$TMP/nokeys"
render lh learner-host.yml "$D/learner-host.env" VOLLEY_PORT=$PORT DATA="$TMP/data" KEYS="$TMP/nokeys" RECORD=on ||
    fail "render: $(cat "$TMP/lh.err")"
render ah actor-host.yml "$D/actor-host.env" BROKER=127.0.0.1:$PORT ACTORS=2 ACTOR_ENVS=4 ||
    fail "render: $(cat "$TMP/ah.err")"
q "$TMP/ah.yml" env actors | sed -n 's/^VOLLEY_KEYS=//p' | grep -q '^/named-volume-nokeys$' ||
    fail "the actor host mounts keys without KEYS"

start broker lh broker
BROKER_PID=$LAST
wait_for "$TMP/broker.log" 10 "listening on ports $PORT " || fail "the broker did not start: $(argv_of lh broker)"
grep -q "CURVE off" "$TMP/broker.log" || fail "the broker without keys did not say CURVE is off"
ss -ltn > "$TMP/ss.txt"
for p in $PORT $((PORT + 1)) $((PORT + 2)) $((PORT + 3)) $((PORT + 4)); do
    grep -qE "[:.]$p\b" "$TMP/ss.txt" || fail "the broker does not listen on port $p"
done
start learner lh learner
LEARNER_PID=$LAST
start actors ah actors
ACTORS_PID=$LAST
wait_status 20 "kind=learner .* version=([2-9]|[1-9][0-9]+) " || fail "no training: $(cat "$TMP/status.txt")"
wait_actors 10 || fail "wanted 2 live actors in the status: $(cat "$TMP/status.txt")"
actor_pids=$(pgrep -P "$ACTORS_PID" | tr '\n' ' ')
PIDS+=($actor_pids)
ids=$(actor_ids)
[[ $ids =~ ^([0-9]*)001\ ([0-9]*)002\ $ ]] && [ "${BASH_REMATCH[1]}" = "${BASH_REMATCH[2]}" ] ||
    fail "wanted 2 actors with ids BASE+1 BASE+2, got '$ids'"
grep -q "actors: 2 processes, ids ${ids%% *}\.\." "$TMP/actors.log" || fail "actors log: $(cat "$TMP/actors.log")"
v1=$(version < "$TMP/status.txt")
start top lh monitor --once
wait $LAST || fail "the monitor's top --once exited $?: $(cat "$TMP/top.log")"
grep -q "^actors (2)" "$TMP/top.log" || fail "the monitor's top does not show the 2 actors: $(cat "$TMP/top.log")"
pass "the containers' commands train: broker on $PORT..$((PORT + 4)), learner at version $v1, actors $ids, top sees them"

stop $BROKER_PID
start broker2 lh broker
BROKER_PID=$LAST
wait_status 20 "kind=learner .* version=" || fail "the learner did not come back to the restarted broker"
for _ in $(seq 100); do
    status > "$TMP/status.txt"
    v3=$(version < "$TMP/status.txt")
    [ -n "$v3" ] && [ "$v3" -gt "$v1" ] && [ "$(actor_ids)" = "$ids" ] && break
    sleep 0.2
done
[ -n "$v3" ] && [ "$v3" -gt "$v1" ] || fail "training did not go on after the broker restart (version $v1 -> ${v3:-none})"
[ "$(actor_ids)" = "$ids" ] || fail "the actors did not come back to the restarted broker: '$(actor_ids)'"
pass "a restarted broker gets the learner and both actors back; training goes on (version $v1 -> $v3)"

[ "$(echo $actor_pids | wc -w)" -eq 2 ] || fail "the actors container runs '$actor_pids', wanted 2 processes"
kill -KILL ${actor_pids%% *}
for _ in $(seq 50); do kill -0 $ACTORS_PID 2> /dev/null || break; sleep 0.1; done
kill -0 $ACTORS_PID 2> /dev/null && fail "the actors launcher kept going with one actor dead"
wait $ACTORS_PID
rc=$?
[ $rc -eq 1 ] || fail "the actors launcher exited $rc after an actor died, wanted 1"
for p in $actor_pids; do kill -0 "$p" 2> /dev/null && fail "actor $p outlived its launcher"; done
stop $LEARNER_PID
stop $BROKER_PID
[ -s "$TMP/data/checkpoints/default.ckpt" ] || fail "no checkpoint in DATA/checkpoints"
n=$(ls "$TMP"/data/recordings/broker-*.vlrec 2> /dev/null | wc -l)
[ "$n" -eq 2 ] || fail "wanted a recording per broker start in DATA/recordings, found $n"
pass "an actor that dies stops the other (exit 1: restart); checkpoint and $n recordings in DATA"

# --- a Python env: python-env.yml over actor-host.yml, the module in ENVS ---
mkdir -p "$TMP/envs" "$TMP/pydata"
printf 'from volley.envs.cartpole import make_env  # a Python env, MODULE:FUNCTION\n' > "$TMP/envs/my_env.py"
PYENV=(VOLLEY_ENV=my_env:make_env)
render pyenv actor-host.yml,python-env.yml "$D/actor-host.env" "${PYENV[@]}" && fail "python-env.yml without ENVS was accepted"
grep -q "set ENVS=" "$TMP/pyenv.err" || fail "python-env.yml without ENVS: $(cat "$TMP/pyenv.err")"
PORT=$(free_port)
render pl learner-host.yml "$D/learner-host.env" VOLLEY_PORT=$PORT DATA="$TMP/pydata" KEYS="$TMP/nokeys" "${PYENV[@]}" ||
    fail "render: $(cat "$TMP/pl.err")"
render pa actor-host.yml,python-env.yml "$D/actor-host.env" BROKER=127.0.0.1:$PORT ACTORS=1 ACTOR_ENVS=4 \
    ENVS="$TMP/envs" "${PYENV[@]}" || fail "actor-host.yml with python-env.yml: $(cat "$TMP/pa.err")"
[[ $(argv_of pa actors) == *" --env my_env:make_env "* ]] || fail "the Python env's actors command: $(argv_of pa actors)"
q "$TMP/pa.yml" volumes actors | grep -qx "$TMP/envs:/envs:ro" || fail "ENVS is not mounted on /envs: $(q "$TMP/pa.yml" volumes actors)"
q "$TMP/pa.yml" env actors | grep -qx "PYTHONPATH=$TMP/envs" || fail "/envs is not on the actors' PYTHONPATH"
start pybroker pl broker
BROKER_PID=$LAST
wait_for "$TMP/pybroker.log" 10 "listening on ports $PORT " || fail "the broker did not start: $(argv_of pl broker)"
start pylearner pl learner
LEARNER_PID=$LAST
start pyactors pa actors
ACTORS_PID=$LAST
wait_status 60 "kind=learner .* version=[1-9]" || fail "no training on the Python actor: $(cat "$TMP/status.txt") $(tail -5 "$TMP/pyactors.log" "$TMP/pylearner.log")"
PIDS+=($(pgrep -P "$ACTORS_PID" | tr '\n' ' '))
ps -o args= -p "$(pgrep -P "$ACTORS_PID" | head -1)" | grep -q -- "-m volley actor --id [0-9]* --broker 127.0.0.1:$PORT .*--env my_env:make_env" ||
    fail "the actor is not Python's: $(ps -o args= --ppid "$ACTORS_PID")"
grep -q "my_env:make_env is a Python env: the learner takes the spec its actors declare" "$TMP/pylearner.log" &&
    grep -q "policy 'default' from the broker: .* env my_env:make_env" "$TMP/pylearner.log" ||
    fail "the learner did not take the Python actors' spec: $(head -5 "$TMP/pylearner.log")"
stop $ACTORS_PID
stop $LEARNER_PID
stop $BROKER_PID
mkdir -p "$TMP/pykeys" && touch "$TMP/pykeys/broker.cert" "$TMP/pykeys/actor.cert" "$TMP/pykeys/actor.cert_secret"
VOLLEY_DRY_RUN=1 VOLLEY_KEYS=$TMP/pykeys VOLLEY_BIN=$VOLLEY ACTORS=1 bash "$D/entrypoint.sh" actors \
    --broker 127.0.0.1:1 --env my_env:make_env > "$TMP/pycurve.log" 2>&1 ||
    fail "Python actors with keys: $(cat "$TMP/pycurve.log")"
grep -q -- "-m volley actor --id [0-9]* --cert $TMP/pykeys/actor.cert --broker-key $TMP/pykeys/broker.cert --broker" \
    "$TMP/pycurve.log" || fail "Python actors without their key: $(cat "$TMP/pycurve.log")"
pass "a Python env: python-env.yml mounts ENVS on PYTHONPATH (refused without it); a Python actor trains the learner, which takes its spec; with keys it gets the actor's"

# --- CURVE: keys laid out as docs/deploy.md distributes them ---
K=$TMP/keygen
"$VOLLEY" keygen "$K" > /dev/null || fail "keygen"
mkdir -p "$TMP/lkeys" "$TMP/akeys"
cp -r "$K"/broker.cert "$K"/broker.cert_secret "$K"/allowed "$K"/learner.cert* "$K"/monitor.cert* "$TMP/lkeys/"
cp "$K"/broker.cert "$K"/actor.cert "$K"/actor.cert_secret "$TMP/akeys/"
PORT=$(free_port)
render lk learner-host.yml "$D/learner-host.env" VOLLEY_PORT=$PORT DATA="$TMP/data2" KEYS="$TMP/lkeys" ||
    fail "render: $(cat "$TMP/lk.err")"
render ak actor-host.yml "$D/actor-host.env" BROKER=127.0.0.1:$PORT ACTORS=2 ACTOR_ENVS=4 ACTOR_ID_BASE=3000 \
    KEYS="$TMP/akeys" || fail "render: $(cat "$TMP/ak.err")"
mkdir -p "$TMP/data2"
start cbroker lk broker
wait_for "$TMP/cbroker.log" 10 "listening on ports $PORT " || fail "the secured broker did not start"
grep -q "CURVE on" "$TMP/cbroker.log" || fail "the broker with keys did not turn CURVE on"
start clearner lk learner
start cactors ak actors
CACTORS_PID=$LAST
mc=(--cert "$TMP/lkeys/monitor.cert" --broker-key "$TMP/lkeys/broker.cert")
wait_status 20 "kind=learner .* version=[1-9]" "${mc[@]}" || fail "no training with CURVE"
wait_actors 10 "${mc[@]}" || fail "wanted the 2 CURVE actors in the status: $(cat "$TMP/status.txt")"
actor_pids=$(pgrep -P "$CACTORS_PID" | tr '\n' ' ')
PIDS+=($actor_pids)
[ "$(actor_ids)" = "3001 3002 " ] || fail "CURVE actors: '$(actor_ids)'"
start ctop lk monitor --once
wait $LAST || fail "the monitor's top --once with CURVE exited $?: $(cat "$TMP/ctop.log")"
# `run --rm monitor ctl ...` replaces the monitor's command, not its entrypoint:
VOLLEY_BIN=$VOLLEY VOLLEY_KEYS=$TMP/lkeys bash "$D/entrypoint.sh" ctl --broker 127.0.0.1:$PORT status \
    > "$TMP/cctl.log" 2>&1 || fail "the monitor's ctl status with CURVE failed: $(cat "$TMP/cctl.log")"
grep -q "kind=actor id=3001 " "$TMP/cctl.log" || fail "the monitor's ctl status: $(cat "$TMP/cctl.log")"
stop $CACTORS_PID
wait $CACTORS_PID 2> /dev/null
for p in $actor_pids; do kill -0 "$p" 2> /dev/null && fail "actor $p outlived its launcher's SIGTERM"; done
pass "with CURVE: each host's keys directory as docs/deploy.md lists it; learner, actors 3001 3002 and the monitor's top and ctl get in; SIGTERM stops the actors"

# The entrypoint refuses half a key set with the reason.
rm "$TMP/akeys/actor.cert_secret"
VOLLEY_KEYS=$TMP/akeys VOLLEY_BIN=$VOLLEY bash "$D/entrypoint.sh" actor --broker 127.0.0.1:1 > "$TMP/half.log" 2>&1 &&
    fail "an actor started without its secret key"
grep -q "actor.cert_secret is not" "$TMP/half.log" || fail "half a key set: $(cat "$TMP/half.log")"
pass "a keys directory without the role's secret key is refused with the reason"
echo "8 passed, 0 failed"

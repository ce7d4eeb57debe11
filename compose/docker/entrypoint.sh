#!/usr/bin/env bash
# The entrypoint of volley's containers (compose/docker/Dockerfile):
#
#   entrypoint.sh broker|learner|actor|top|ctl [volley flags...]
#       runs `volley ROLE flags...` (exec: volley is the container's process)
#   entrypoint.sh actors [volley actor flags...]
#       runs ACTORS actor processes (0 or unset: one per core), with ids
#       ACTOR_ID_BASE+1 .. ACTOR_ID_BASE+ACTORS; when one exits it stops the
#       others and exits 1, so the container's restart policy starts them again
#
# CURVE is on when $VOLLEY_KEYS/broker.cert exists (files from `volley keygen`):
#   broker        --cert KEYS/broker.cert --allow KEYS/allowed
#   learner       --cert KEYS/learner.cert --broker-key KEYS/broker.cert
#   actor(s)      --cert KEYS/actor.cert   --broker-key KEYS/broker.cert
#   top           --cert KEYS/monitor.cert --broker-key KEYS/broker.cert (an observer)
#   ctl           --cert KEYS/admin.cert   --broker-key KEYS/broker.cert (pause, resume and
#                 shutdown need an admin key; without admin.cert, monitor's: status only)
# VOLLEY_CERT=NAME uses KEYS/NAME.cert instead (e.g. one key per actor host).
# The broker records every segment into a new DATA/recordings/broker-<UTC time>.vlrec
# when RECORD=on.
#
# A Python env, --env package.module:function (python-env.yml): the actors run
# `PYTHON -m volley actor` with the same flags (PYTHON: VOLLEY_PYTHON, else the
# image's .venv/bin/python), importing the module from PYTHONPATH; the learner is
# given no --env and takes the spec they declare from the broker. With keys they
# get --cert and --broker-key as C actors do (refused, with the reason, by a
# Python whose `volley actor` takes no --broker-key).
#
# Outside a container (tests/compose_test.sh runs these same commands as plain
# processes) the paths come from VOLLEY_BIN (default: this repository's
# build/volley), VOLLEY_KEYS (default /keys) and VOLLEY_DATA (default /data).
# VOLLEY_DRY_RUN=1 prints each command line instead of running it. A learner's --resume is
# dropped while its checkpoint does not exist yet (the first start).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
BIN=${VOLLEY_BIN:-$here/build/volley}
PY=${VOLLEY_PYTHON:-$here/.venv/bin/python}
KEYS=${VOLLEY_KEYS:-/keys}
DATA=${VOLLEY_DATA:-/data}
say() { echo "entrypoint: $*" >&2; }
die() { say "$*"; exit 2; }

[ $# -ge 1 ] || die "usage: entrypoint.sh broker|learner|actor|actors|top|ctl [volley flags]"
role=$1
shift
case $role in
    broker | learner | actor | actors | top | ctl) ;;
    *) exec "$BIN" "$role" "$@" ;; # --help, keygen, replay, up: volley as it is
esac

# The Python env --env names (package.module:function), or "".
python_env=""
args=("$@")
for ((i = 0; i + 1 < ${#args[@]}; i++)); do
    [ "${args[i]}" = --env ] &&
        [[ ${args[i + 1]} =~ ^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*:[A-Za-z_][A-Za-z0-9_]*$ ]] &&
        python_env=${args[i + 1]}
done
actor=("$BIN" actor)
if [ -n "$python_env" ]; then
    # The Python package runs the libvolley of this volley, as `volley up` has it do.
    [ -f "$(dirname "$BIN")/libvolley.so" ] && export VOLLEY_LIB=${VOLLEY_LIB:-$(dirname "$BIN")/libvolley.so}
    actor=("$PY" -m volley actor)
fi

extra=()
if [ -f "$KEYS/broker.cert" ]; then
    case $role in
        broker) extra=(--cert "$KEYS/broker.cert" --allow "$KEYS/allowed") ;;
        learner) name=${VOLLEY_CERT:-learner} ;;
        actor | actors) name=${VOLLEY_CERT:-actor} ;;
        top) name=${VOLLEY_CERT:-monitor} ;;
        ctl) if [ -f "$KEYS/admin.cert_secret" ]; then name=${VOLLEY_CERT:-admin}; else name=${VOLLEY_CERT:-monitor}; fi ;;
    esac
    if [ "$role" = broker ]; then
        [ -f "$KEYS/broker.cert_secret" ] || die "CURVE: $KEYS/broker.cert_secret is missing (the broker's secret key)"
        [ -d "$KEYS/allowed" ] || die "CURVE: $KEYS/allowed/ is missing (the clients' public certificates)"
    else
        [ -f "$KEYS/$name.cert_secret" ] ||
            die "CURVE: $KEYS/broker.cert is here but $KEYS/$name.cert_secret is not (set VOLLEY_CERT=NAME for $KEYS/NAME.cert)"
        extra=(--cert "$KEYS/$name.cert" --broker-key "$KEYS/broker.cert")
    fi
    if [ -n "$python_env" ] && [[ $role == actor* ]] &&
        [[ $("$PY" -m volley actor --help 2> /dev/null || true) != *--broker-key* ]]; then
        die "CURVE: $KEYS/broker.cert is here, but $PY's volley actor ($python_env) takes no --broker-key: unset KEYS on every host, or use a newer volley"
    fi
    say "$role: CURVE on, keys from $KEYS"
else
    say "$role: CURVE off (no $KEYS/broker.cert)"
fi

if [ "$role" = broker ] && [ "${RECORD:-off}" = on ]; then
    mkdir -p "$DATA/recordings"
    extra+=(--record "$DATA/recordings/broker-$(date -u +%Y%m%dT%H%M%S.%NZ).vlrec")
fi

run() {
    if [ -n "${VOLLEY_DRY_RUN:-}" ]; then
        echo "$*"
    else
        "$@"
    fi
}

# A learner service resumes after a restart and starts fresh the first time: `volley learner
# --resume` with no checkpoint is an error (a mistyped directory must not start over), so the
# entrypoint drops --resume while DIR/<policy>.ckpt does not exist yet, and says so.
if [ "$role" = learner ]; then
    args=("$@") ck="" policy=default
    for ((i = 0; i + 1 < ${#args[@]}; i++)); do
        [ "${args[i]}" = --checkpoint ] && ck=${args[i + 1]}
        [ "${args[i]}" = --policy ] && policy=${args[i + 1]}
    done
    if [ -n "$ck" ] && [ ! -e "$ck/$policy.ckpt" ]; then
        kept=()
        for a in "$@"; do [ "$a" = --resume ] || kept+=("$a"); done
        [ ${#kept[@]} -eq $# ] || say "learner: no checkpoint at $ck/$policy.ckpt yet: starting fresh"
        set -- "${kept[@]}"
    fi
fi

if [ "$role" = learner ] && [ -n "$python_env" ]; then
    kept=() skip=0
    for a in "$@"; do
        if [ $skip = 1 ]; then skip=0; elif [ "$a" = --env ]; then skip=1; else kept+=("$a"); fi
    done
    say "learner: $python_env is a Python env: the learner takes the spec its actors declare"
    set -- "${kept[@]}"
fi

if [ "$role" = actor ]; then
    [ -n "${VOLLEY_DRY_RUN:-}" ] && { run "${actor[@]}" "${extra[@]}" "$@"; exit 0; }
    exec "${actor[@]}" "${extra[@]}" "$@"
fi
if [ "$role" != actors ]; then
    [ -n "${VOLLEY_DRY_RUN:-}" ] && { run "$BIN" "$role" "${extra[@]}" "$@"; exit 0; }
    exec "$BIN" "$role" "${extra[@]}" "$@"
fi

# actors: one process per core (or ACTORS), each with its own id (the seed of
# its environments is mixed with it, so ids must differ across all actor hosts).
n=${ACTORS:-0}
[[ $n =~ ^[0-9]+$ ]] || die "ACTORS wants a whole number, not '$n'"
[ "$n" -gt 0 ] || n=$(nproc)
[ "$n" -le 999 ] || die "ACTORS is at most 999 per host, not $n"
base=${ACTOR_ID_BASE:-}
if [ -z "$base" ]; then
    # Distinct per machine without configuration: the hostname and the network
    # interfaces' addresses (the containers use the host's network).
    sum=$({ cat /proc/sys/kernel/hostname; cat /sys/class/net/*/address; } 2>/dev/null | cksum)
    base=$(((${sum%% *} % 2000000 + 1) * 1000))
fi
[[ $base =~ ^[0-9]+$ ]] && [ "$base" -le 2147482000 ] ||
    die "ACTOR_ID_BASE wants a whole number up to 2147482000, not '$base'"
say "actors: $n processes, ids $((base + 1))..$((base + n))"

pids=()
stop() {
    trap - TERM INT
    [ ${#pids[@]} -eq 0 ] || kill -TERM "${pids[@]}" 2>/dev/null || true
    wait || true
    exit "$1"
}
trap 'stop 0' TERM INT
for ((i = 1; i <= n; i++)); do
    if [ -n "${VOLLEY_DRY_RUN:-}" ]; then
        run "${actor[@]}" --id $((base + i)) "${extra[@]}" "$@"
    else
        "${actor[@]}" --id $((base + i)) "${extra[@]}" "$@" &
        pids+=($!)
    fi
done
[ -z "${VOLLEY_DRY_RUN:-}" ] || exit 0
set +e
wait -n
rc=$?
say "actors: an actor exited with status $rc; stopping the others (the restart policy starts them again)"
stop 1

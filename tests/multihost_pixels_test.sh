#!/usr/bin/env bash
# A pixel-game user's whole path across three machines (network namespaces h1,
# h2, h3 on a bridge in a fourth, as multihost_test.sh builds them), run from
# docs/pixels.md's own blocks: its ```sh learner-host block on h1 (`volley up
# --env volley.envs.screens:make_env --learner torch --torch-model
# screens_net:build --actors 0 --bind ADDR`: the broker and the PyTorch
# learner training a user's own nn.Module, bindings/python/examples/
# screens_net.py) and its ```sh actor-host block on h2 and on h3 (Python
# actors, `.venv/bin/python -m volley actor --env volley.envs.screens:make_env
# --torch-model screens_net:build`, acting with that module on 16 Game-Boy-
# shaped screens: 1x72x80, four shades, u2 on the wire, 7 buttons; a random
# policy scores about 73 per 512-step episode). Each block runs as written in
# a folder that looks like the checkout, but for what the page says this test
# changes: the page's learner address 10.0.0.10 is h1's; the CPU, not
# `--device cuda`; one actor a host, not 8 (two cores); the page's CNN swapped
# for a smaller module of the same contract, tests/data/tiny_screens_net.py
# (one strided conv, linear(32)), which learns these screens within the
# test's budget on two cores where screens_net takes many times the steps
# (readme_test runs the page's one-box block with screens_net itself); and
# budgets.
#
# The budgets: the actors run in step with the learner (--wait-ms: each waits
# for the next weights version rather than acting on the old one, so that on
# two cores no segment grows too old to train on) for --steps each, and the
# run's step budget is their sum: it ends when the learner has taken every
# segment they sent. Checked: the learner on h1 trained versions > 0 of
# torch:MOD:FN on u2[1x72x80] (its log, config.ini, metrics.jsonl); each actor
# is a Python process in its own namespace, connected over TCP from its host's
# address, and says how many env steps it stepped; the learner took all of
# them (none dropped: 0 %, and env_steps = the actors' sum); the mean return
# rose over the run to well above random's (at least 110).
#
# Needs root (CAP_NET_ADMIN) for `ip netns` and a checkout Python with torch;
# skips (exit 0) without either.
. "$(dirname "$0")/lib.sh"
ROOT=$(cd "$(dirname "$0")/.." && pwd)
NS=vlmp$$ # namespaces $NS-br (the bridge), $NS-h1 .. $NS-h3
NET=10.78.0
HOSTS="h1 h2 h3"
PY=${VOLLEY_PYTHON:-$ROOT/.venv/bin/python}
PAGE=$ROOT/docs/pixels.md
STEPS=24576 # per actor: 24 rounds of 16 envs x 64 steps, 3 episodes an env

trap netns_teardown EXIT

# ---- the page's blocks, and what they name ------------------------------------------------------
LEARNER=$(doc_block "$PAGE" learner-host) || fail "$LEARNER"
ACTORS=$(doc_block "$PAGE" actor-host) || fail "$ACTORS"
ENV=$(echo "$LEARNER" | grep -oE -- '--env [^ ]+' | cut -d' ' -f2)
NET_FN=$(echo "$LEARNER" | grep -oE -- '--torch-model [^ ]+' | cut -d' ' -f2)
NAME=$(echo "$LEARNER" | grep -oE -- '--name [^ ]+' | cut -d' ' -f2)
PORT=$(echo "$LEARNER" | grep -oE -- '--port [0-9]+' | cut -d' ' -f2)
MODPATH=$(echo "$LEARNER" | sed -n 's/^export PYTHONPATH=//p')
[ -n "$ENV" ] && [ -n "$NET_FN" ] && [ -n "$NAME" ] && [ -n "$PORT" ] && [ -n "$MODPATH" ] ||
    fail "$PAGE's learner-host block lacks --env, --torch-model, --name, --port or PYTHONPATH: $LEARNER"
echo "$ACTORS" | grep -q -- "--env $ENV --torch-model $NET_FN" ||
    fail "$PAGE's actor-host block runs no actor of $ENV with $NET_FN: $ACTORS"
# The changes, each of which must find its text (a page that moved on fails here, not later).
change() { # change TEXT SED: TEXT through SED, which must change it
    local out
    out=$(printf '%s\n' "$1" | sed -E "$2")
    [ "$out" != "$1" ] || { echo "'$2' changes nothing in: $1"; return 1; }
    printf '%s\n' "$out"
}
TINY=tiny_screens_net:build
for b in LEARNER ACTORS; do
    text=$(change "${!b}" "s/$NET_FN/$TINY/; s|^export PYTHONPATH=$MODPATH\$|export PYTHONPATH=$ROOT/tests/data|") ||
        fail "$text"
    printf -v "$b" '%s' "$text"
done
NET_FN=$TINY MODPATH=$ROOT/tests/data
LEARNER=$(change "$LEARNER" "s/10\.0\.0\.10/$NET.1/g") || fail "$LEARNER"
LEARNER=$(change "$LEARNER" 's/ --device cuda//') || fail "$LEARNER"
LEARNER=$(change "$LEARNER" "\$ s/\$/ --until steps --max-steps $((2 * STEPS)) --max-seconds 400/") || fail "$LEARNER"
ACTORS=$(change "$ACTORS" "s/10\.0\.0\.10/$NET.1/g") || fail "$ACTORS"
ACTORS=$(change "$ACTORS" 's/\$\(seq [0-9]+\)/$(seq 1)/') || fail "$ACTORS"
ACTORS=$(change "$ACTORS" "s|^( *)\.venv/bin/python |\1$PY |") || fail "$ACTORS"
ACTORS=$(change "$ACTORS" "s/ &\$/ --steps $STEPS --wait-ms 60000 \&/") || fail "$ACTORS"

netns_sweep vlmp 'br|h[1-3]' # namespaces a killed run left

# A folder that looks like the checkout (the blocks' relative paths), with `volley` on PATH.
mkdir -p "$TMP/bin" && ln -s "$VOLLEY" "$TMP/bin/volley" && ln -s "$ROOT/bindings" "$TMP/bindings" ||
    fail "cannot make the checkout's look-alike in $TMP"
VOLLEY_LIB=$(dirname "$VOLLEY")/libvolley.so
export VOLLEY_LIB VOLLEY_PYTHON=$PY PATH=$TMP/bin:$PATH
said=$(cd "$TMP" && PYTHONPATH=$MODPATH "$PY" -c "import torch, volley.actor_cmd, ${ENV%:*}, ${NET_FN%:*}" 2>&1) ||
    { echo "SKIP: $PY cannot import torch, volley's actor, ${ENV%:*} and ${NET_FN%:*}: $(echo "$said" | tail -1)"; exit 0; }
netns_build br '' $HOSTS

# ---- the run: the learner-host block on h1, the actor-host block on h2 and on h3 ----------------
cd "$TMP" || fail "no $TMP"
printf '%s\n' "$LEARNER" > learner-host.sh
printf '%s\nwait\n' "$ACTORS" > actor-host.sh
t0=$(date +%s.%N)
ip netns exec "$NS-h1" bash -e learner-host.sh > "$TMP/up.log" 2>&1 &
UP=$!
PIDS+=("$UP")
wait_for "$TMP/up.log" 15 "broker on $NET.1:$PORT" || fail "volley up did not start on $NET.1: $(cat "$TMP/up.log")"
for a in 2 3; do
    ip netns exec "$NS-h$a" env N=$a bash -e actor-host.sh > "$TMP/actor-$a.log" 2>&1 &
    PIDS+=($!)
done
wait_for "$TMP/up.log" 60 "version=[1-9]" || fail "no weights version trained across the hosts"
for a in 2 3; do
    pid=$(for p in $(ip netns pids "$NS-h$a"); do
        tr '\0' ' ' < "/proc/$p/cmdline" 2>/dev/null | grep -q -- "-m volley actor" && echo "$p"
    done | head -1)
    [ -n "$pid" ] || fail "no Python actor runs in $NS-h$a"
    ACTOR[a]=$pid
    cmd=$(tr '\0' ' ' < "/proc/$pid/cmdline")
    echo "$cmd" | grep -qE "python[0-9.]* -m volley actor --env $ENV --torch-model $NET_FN" ||
        fail "actor $a is not a Python actor with $NET_FN: $cmd"
    conn=$(ip netns exec "$NS-h$a" ss -Htnp state established "( dport = :$PORT )" |
        awk -v p="pid=$pid," 'index($0, p) { print $3; exit }')
    [ "${conn%:*}" = "$NET.$a" ] || fail "actor $a has no TCP connection from $NET.$a to $NET.1:$PORT: '$conn'"
done
pass "up on h1 ($NET.1:$PORT) trains on Python actors in h2 and h3 (pids ${ACTOR[2]}, ${ACTOR[3]}), each connected from its own address"

wait "$UP"
rc=$?
secs=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
last=$(tail -n 1 "$TMP/up.log")
[ $rc -eq 0 ] && echo "$last" | grep -qE "^done: $((2 * STEPS)) steps" || fail "volley up: exit $rc, '$last'"
R=$TMP/runs/$NAME
L=$R/logs/learner.log
grep -qE "policy 'default' from the broker: obs u2\[1x72x80\] actions discrete\(7\) .*model torch:$NET_FN env $ENV" "$L" ||
    fail "the learner did not take the actors' spec (u2[1x72x80], torch:$NET_FN): $(grep -m1 'from the broker' "$L")"
grep -q "torch engine: torch:$NET_FN on cpu" "$L" || fail "the learner did not train $NET_FN: $(grep -m1 'engine' "$L")"
grep -q "^torch-model = $NET_FN$" "$R/config.ini" && grep -q "^learner = torch$" "$R/config.ini" ||
    fail "config.ini lacks learner = torch, torch-model = $NET_FN"
m() { tail -n 1 "$R/metrics.jsonl" | sed -n "s/.*\"$1\":\([-0-9.e+]*\).*/\1/p"; }
version=$(m version) steps=$(m env_steps) dropped=$(m segments_dropped) trained=$(m segments_trained)
[ "${version:-0}" -gt 0 ] || fail "no version trained: $(tail -n 1 "$R/metrics.jsonl")"
share=$(grep "progress:" "$L" | tail -1 | grep -oE 'dropped [0-9]+ of [0-9]+ arrived \([0-9]+%[^)]*\)')
[ "$dropped" = 0 ] && [ "$trained" = $((2 * STEPS / 64)) ] ||
    fail "the learner dropped $dropped segments and trained $trained of $((2 * STEPS / 64)): $share"
n2=$(sed -n 's/^volley actor: \([0-9]*\) env steps$/\1/p' "$TMP/actor-2.log")
n3=$(sed -n 's/^volley actor: \([0-9]*\) env steps$/\1/p' "$TMP/actor-3.log")
[ "$n2" = $STEPS ] && [ "$n3" = $STEPS ] || fail "the actors did not report $STEPS env steps each: '$n2', '$n3'"
[ "$steps" = $((n2 + n3)) ] || fail "the learner's env_steps $steps != the actors' $n2 + $n3"
pass "the learner on h1 trained torch:$NET_FN on u2[1x72x80] to version $version, $trained segments," \
    "$steps env steps = actor 2's $n2 + actor 3's $n3, $share; ${secs} s from start to '$last'"

# ---- it learns: random scores about 73; the first episodes end 8 updates in --------------------
returns=$(grep -oE '"return_mean":[0-9.]+' "$R/metrics.jsonl" | cut -d: -f2 | awk '$1 > 0' | uniq)
first=$(echo "$returns" | head -1) final=$(echo "$returns" | tail -1)
awk -v a="$first" -v b="$final" 'BEGIN { exit !(b >= 110 && b > a + 20) }' ||
    fail "no return trend: mean return $first -> $final (random scores about 73): $(echo $returns)"
pass "it learns from the pixels: mean return $first -> $final (random: about 73; windows $(echo $returns | tr ' ' ','))"
echo "3 passed, 0 failed"

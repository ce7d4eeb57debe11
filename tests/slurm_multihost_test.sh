#!/usr/bin/env bash
# deploy/slurm/ on a real Slurm cluster of three nodes: slurmctld and the
# client commands in one network namespace (ctl, which holds the bridge), a
# slurmd in each of three more (node1 .. node3, each its own address on the
# bridge, joined by veth pairs), munged beside slurmctld (its socket is a
# file, reached from every namespace), all from a temporary folder and
# stopped by their pids on exit. Every job's broker, learner and actors run
# inside their node's namespace, so what they exchange crosses the bridge
# between nodes.
#
# (a) volley.sbatch -N 3 with VOLLEY_IFACE=eth0 and CURVE keys: broker and
#     learner on node1 (bound to node1's address), actors on node2 and node3,
#     solves CartPole.
# (b) volley-het.sbatch as written (component 0 asks --gres=gpu:1, which only
#     node1 has: a stand-in GPU, File=/dev/null): the learner runs on node1
#     with the GPU in its environment, the actors on node2 and node3 with none;
#     the env is Python's (VOLLEY_ENV=volley.envs.cartpole:make_env): the actors
#     run `.venv/bin/python -m volley actor` (CURVE keys too), the learner has
#     no --env, and the run trains to its step budget.
# (c) volley.sbatch -N 3 requeued midway (`scontrol requeue`): the second start
#     resumes from the checkpoint the first wrote as it stopped, and its
#     versions and steps go on from there.
# (d) a pixel game with your own torch module, as docs/pixels.md's ```sh
#     slurm block submits it (volley-het.sbatch, VOLLEY_ENV=volley.envs.
#     screens:make_env: 16 Game-Boy-shaped screens, 1x72x80 u2, 7 buttons;
#     VOLLEY_LEARNER=torch and VOLLEY_TORCH_MODEL, the page's screens_net
#     swapped for tests/data/tiny_screens_net.py, which learns within this
#     test's budget on two cores): the PyTorch learner on node1 trains that
#     module, the Python actors on node2 and node3 act with it, in step with
#     the learner (--wait-ms) for --steps each; the learner takes every step
#     they stepped (none dropped) and the mean return rises well above a
#     random policy's (about 73).
#
# Needs root (network namespaces, Slurm's daemons; it installs slurm-wlm and
# munge when missing) and says SKIP otherwise. Nothing outside the
# namespaces it creates gets an address or a route; tests/slurm_test.sh's
# one-node cluster (root namespace, its own folder) cannot collide with it.
. "$(dirname "$0")/lib.sh"
ROOT=$(cd "$(dirname "$0")/.." && pwd)
NS=vlsm$$ # namespaces $NS-ctl (slurmctld, the bridge), $NS-node1 .. $NS-node3
NET=10.79.0
NODES="node1 node2 node3"

[ "$(id -u)" = 0 ] || { echo "SKIP: not root: cannot create network namespaces or run Slurm's daemons"; exit 0; }
if ! command -v slurmctld > /dev/null || ! command -v munged > /dev/null; then
    DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends slurm-wlm munge \
        > "$TMP/apt.log" 2>&1 || { echo "SKIP: cannot install slurm-wlm and munge: $(tail -1 "$TMP/apt.log")"; exit 0; }
fi
command -v nsenter > /dev/null || { echo "SKIP: no nsenter (util-linux)"; exit 0; }

S=$TMP/slurm
DAEMONS=() # munged, slurmctld, the slurmds: stopped in reverse order
JOBS=()
sl() { ip netns exec "$NS-ctl" "$@"; } # a Slurm client command, beside slurmctld
teardown() {
    if [ ${#DAEMONS[@]} -gt 1 ]; then
        [ ${#JOBS[@]} -gt 0 ] && sl scancel "${JOBS[@]}" 2> /dev/null
        for _ in $(seq 60); do # the jobs' own processes end before the daemons that watch them
            [ -z "$(sl squeue -h 2> /dev/null)" ] && break
            sleep 0.5
        done
    fi
    for ((i = ${#DAEMONS[@]} - 1; i >= 0; i--)); do kill -TERM "${DAEMONS[i]}" 2> /dev/null; done
    for _ in $(seq 50); do
        alive=0
        for p in "${DAEMONS[@]}"; do kill -0 "$p" 2> /dev/null && alive=1; done
        [ $alive = 0 ] && break
        sleep 0.2
    done
    for p in "${DAEMONS[@]}"; do kill -KILL "$p" 2> /dev/null; done
    for n in ctl $NODES; do # what is left in our namespaces, which only this run started
        for p in $(ip netns pids "$NS-$n" 2> /dev/null); do kill -KILL "$p" 2> /dev/null; done
        ip netns del "$NS-$n" 2> /dev/null
    done
    cleanup
}
trap teardown EXIT
trap 'exit 143' TERM INT # a stopped test still tears down (the EXIT trap)

# Namespaces left by a run of this test that was killed (SIGKILL skips the trap), and every daemon
# and job process in them: each one runs in a namespace of its run.
netns_sweep vlsm 'ctl|node[1-3]'

# ---- the network: a bridge in ctl ($NET.254), a veth from each node's eth0 to it ----------------
netns_build ctl "$NET.254" $NODES

# ---- the cluster -----------------------------------------------------------------------------
mkdir -p "$S/state" "$S/munge" "$S/log" "$S/spool/node1" "$S/spool/node2" "$S/spool/node3"
chmod 700 "$S/munge"
dd if=/dev/urandom of="$S/munge/munge.key" bs=1024 count=1 status=none
chmod 400 "$S/munge/munge.key"
export SLURM_CONF=$S/slurm.conf
# SlurmctldHost: this machine's name (slurmctld checks it), reached at ctl's address. Each slurmd
# its own spool, pid and log files (%n: its node name); every namespace has ports 6817-6818 to
# itself. Each node this machine's CPUs (slurmd drains a node that claims more than it has).
cat > "$SLURM_CONF" << EOF
ClusterName=volleymulti
SlurmctldHost=$(hostname -s)($NET.254)
SlurmctldPort=6817
SlurmdPort=6818
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
# cred_expire: how long a requeued job waits before it starts again (default 120 s)
AuthInfo=socket=$S/munge/munge.sock,cred_expire=10
StateSaveLocation=$S/state
SlurmdSpoolDir=$S/spool/%n
SlurmctldPidFile=$S/slurmctld.pid
SlurmdPidFile=$S/slurmd-%n.pid
SlurmctldLogFile=$S/log/slurmctld.log
SlurmdLogFile=$S/log/slurmd-%n.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerType=sched/backfill
# A heterogeneous job is started by the backfill scheduler alone (default: every 30 s), and a
# requeued one, once its credential expires, by the next pass of the main one (every 60 s).
SchedulerParameters=bf_interval=1,sched_interval=2
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MpiDefault=none
ReturnToService=2
KillWait=20
MinJobAge=600
GresTypes=gpu
NodeName=node1 NodeAddr=$NET.1 CPUs=$(nproc) RealMemory=1000 Gres=gpu:1 State=UNKNOWN
NodeName=node[2-3] NodeAddr=$NET.[2-3] CPUs=$(nproc) RealMemory=1000 State=UNKNOWN
PartitionName=debug Nodes=node[1-3] Default=YES MaxTime=INFINITE State=UP
EOF
# node1's "GPU" is /dev/null: enough for Slurm to hand it out and set the job's GPU variables
echo "NodeName=node1 Name=gpu File=/dev/null" > "$S/gres.conf"

ip netns exec "$NS-ctl" munged -F --force --socket="$S/munge/munge.sock" --key-file="$S/munge/munge.key" \
    --pid-file="$S/munge/munged.pid" --log-file="$S/munge/munged.log" --seed-file="$S/munge/seed" \
    > "$S/munged.out" 2>&1 &
DAEMONS+=($!)
for _ in $(seq 50); do [ -S "$S/munge/munge.sock" ] && break; sleep 0.1; done
[ -S "$S/munge/munge.sock" ] || fail "munged did not start: $(cat "$S/munged.out" "$S/munge/munged.log" 2> /dev/null)"
ip netns exec "$NS-ctl" slurmctld -D -i -f "$SLURM_CONF" > "$S/slurmctld.out" 2>&1 &
DAEMONS+=($!)
# nsenter --net, not `ip netns exec`: that remounts /sys, and slurmd (22.05) will not start
# without the cgroup file systems under /sys/fs/cgroup, even with proctrack/linuxproc.
NSDIR=/run/netns
[ -e "$NSDIR/$NS-ctl" ] || NSDIR=/var/run/netns
for n in $NODES; do
    nsenter --net="$NSDIR/$NS-$n" slurmd -D -N "$n" -f "$SLURM_CONF" > "$S/slurmd-$n.out" 2>&1 &
    DAEMONS+=($!)
done
up=0
for _ in $(seq 60); do
    [ "$(sl sinfo -h -N -o '%T' 2> /dev/null | grep -cE '^(idle|mixed)')" = 3 ] && { up=1; break; }
    sleep 0.5
done
[ $up = 1 ] || fail "the cluster did not come up: $(sl sinfo -N 2>&1; tail -n 5 "$S"/log/*.log)"
pass "a three-node Slurm cluster: slurmctld at $NET.254, slurmd node1..node3 at $NET.1-3, each in its own network namespace"

# ---- helpers ---------------------------------------------------------------------------------
# Waits up to $2 s for job $1 to leave the queue and prints its final state.
wait_job() {
    local state=""
    for _ in $(seq $(($2 * 2))); do
        state=$(sl scontrol show job "$1" 2> /dev/null | sed -n 's/.*JobState=\([A-Z_]*\).*/\1/p' | head -1)
        case $state in COMPLETED | FAILED | CANCELLED | TIMEOUT | NODE_FAIL | OUT_OF_MEMORY) break ;; esac
        sleep 0.5
    done
    echo "$state"
}
# submit NAME SCRIPT [sbatch options] -- [VAR=VALUE...]: submits SCRIPT from ctl with the run's
# knobs (actors reach the broker at node1's eth0 address; one actor of 8 envs a node) and
# VAR=VALUE...; its output in $TMP/NAME.out. Prints the job id.
submit() {
    local name=$1 script=$2 opts=()
    shift 2
    while [ $# -gt 0 ] && [ "$1" != -- ]; do opts+=("$1"); shift; done
    [ $# -gt 0 ] && shift
    sl env VOLLEY="$VOLLEY" VOLLEY_RUN_DIR="$TMP/runs" VOLLEY_NAME="$name" VOLLEY_IFACE=eth0 \
        VOLLEY_ACTORS_PER_NODE=1 VOLLEY_ENVS=8 VOLLEY_MAX_SECONDS=300 "$@" \
        sbatch --parsable "${opts[@]}" --output="$TMP/$name.out" --chdir="$TMP" "$script" | cut -d';' -f1
}
# env_of PID VAR: VAR's value in process PID's environment.
env_of() { tr '\0' '\n' < "/proc/$1/environ" 2> /dev/null | sed -n "s/^$2=//p"; }
# procs NODE: "NODE PID gpu=C/J COMMAND LINE" for each volley process in NODE's namespace
# (`volley up`, broker, learner, actor, or PYTHON -m volley ...), C and J its
# CUDA_VISIBLE_DEVICES and SLURM_JOB_GPUS ("-": unset or empty).
procs() {
    local p a c j
    for p in $(ip netns pids "$NS-$1" 2> /dev/null); do
        mapfile -d '' -t a < "/proc/$p/cmdline" 2> /dev/null || continue
        [ ${#a[@]} -ge 3 ] || continue
        if [[ ${a[0]##*/} == volley && ${a[1]} =~ ^(up|broker|learner|actor)$ ]] ||
            [[ ${a[1]} == -m && ${a[2]} == volley ]]; then
            c=$(env_of "$p" CUDA_VISIBLE_DEVICES) j=$(env_of "$p" SLURM_JOB_GPUS)
            echo "$1 $p gpu=${c:--}/${j:--} ${a[*]}"
        fi
    done
}
# sightings JOB PATTERN...: samples every node's volley processes (procs) until each PATTERN (an
# extended regex) has matched a line or JOB has ended (at most 120 s); prints every line seen.
# A run can be over in two seconds: this looks from the moment it is submitted.
sightings() {
    local job=$1 seen="" pat left
    shift
    for _ in $(seq 600); do
        seen=$({ echo "$seen"; for n in $NODES; do procs "$n"; done; } | grep . | sort -u)
        left=0
        for pat in "$@"; do echo "$seen" | grep -qE "$pat" || left=1; done
        [ $left = 0 ] && break
        sl squeue -h -j "$job" 2> /dev/null | grep -q . || break
        sleep 0.2
    done
    echo "$seen"
}
# last_metric RUN KEY: KEY's value in the run's newest metrics line.
last_metric() { tail -n 1 "$TMP/runs/$1/metrics.jsonl" 2> /dev/null | sed -n "s/.*\"$2\":\([-0-9.e+]*\).*/\1/p"; }

# ---- (a) volley.sbatch on three nodes solves CartPole -------------------------------------------
t0=$(date +%s.%N)
JOB=$(submit solve "$ROOT/deploy/slurm/volley.sbatch" -N 3 -- VOLLEY_PORT=7600 VOLLEY_KEYS="$TMP/keys") ||
    fail "sbatch refused the job"
JOBS+=("$JOB")
where=$(sightings "$JOB" "^node1 .*volley learner " "^node2 .*volley actor " "^node3 .*volley actor ")
echo "$where" | grep -qE "^node1 .*volley learner " || fail "no learner on node1: $where"
echo "$where" | grep -qE "^node2 .*volley actor " && echo "$where" | grep -qE "^node3 .*volley actor " ||
    fail "no actors on node2 and node3: $where"
echo "$where" | grep -qE "^node1 .*volley actor " && fail "an actor on the learner's node1: $where"
state=$(wait_job "$JOB" 300)
secs=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
last=$(grep -E '^(solved|done|not solved|not done):' "$TMP/solve.out" | tail -1)
[ "$state" = COMPLETED ] && echo "$last" | grep -qE '^solved: [0-9]+ steps' ||
    fail "job $JOB: $state, '$last': $(tail -20 "$TMP/solve.out")"
grep -q "broker $NET.1:7600" "$TMP/solve.out" || fail "the actors were not given node1's eth0 address: $(grep start "$TMP/solve.out")"
echo "$where" | grep -qE "^node[23] .*volley actor .*--cert $TMP/keys/actor.cert --broker-key $TMP/keys/broker.cert" ||
    fail "the actors ran without CURVE keys: $where"
grep -q "actor 1001 (policy 'default') joined" "$TMP/runs/solve/logs/broker.log" &&
    grep -q "actor 2001 (policy 'default') joined" "$TMP/runs/solve/logs/broker.log" ||
    fail "actors 1001 and 2001 did not join: $(grep joined "$TMP/runs/solve/logs/broker.log")"
grep -q "actor 1001" "$TMP/runs/solve.actors/node2.log" && grep -q "actor 2001" "$TMP/runs/solve.actors/node3.log" ||
    fail "the actors' logs are not node2.log (actor 1001) and node3.log (actor 2001): $(ls "$TMP/runs/solve.actors")"
ret=$(last_metric solve return_mean)
pass "job $JOB (-N 3, VOLLEY_IFACE=eth0, CURVE keys): broker and learner on node1 at $NET.1:7600, actors" \
    "1001 (node2) and 2001 (node3) over the bridge; $last, mean return $ret; ${secs} s from sbatch to done"

# ---- (b) volley-het.sbatch: the GPU component's learner on node1, a Python env's actors ------
# The Python that runs the actors, on this build's libvolley (as the script has it by default).
PY=${VOLLEY_PYTHON:-$ROOT/.venv/bin/python}
said=$(cd / && VOLLEY_LIB="$(dirname "$VOLLEY")/libvolley.so" "$PY" -c 'import volley.actor_cmd, volley.envs.cartpole' 2>&1) ||
    fail "$PY cannot import volley's actor and volley.envs.cartpole on $(dirname "$VOLLEY")/libvolley.so: $(echo "$said" | tail -1)"
t0=$(date +%s.%N)
JOB=$(submit het "$ROOT/deploy/slurm/volley-het.sbatch" -- VOLLEY_HOME="$ROOT" VOLLEY_PORT=7610 \
    VOLLEY_ENV=volley.envs.cartpole:make_env VOLLEY_PYTHON="$PY" VOLLEY_MAX_STEPS=100000 VOLLEY_KEYS="$TMP/keys") ||
    fail "sbatch refused volley-het.sbatch"
JOBS+=("$JOB")
actor="$PY -m volley actor --broker $NET.1:7610 .*--env volley.envs.cartpole:make_env .*--cert $TMP/keys/actor.cert"
where=$(sightings "$JOB" "^node1 .*volley learner " "^node2 .*$actor" "^node3 .*$actor")
learner=$(echo "$where" | grep -E "^node1 [0-9]+ gpu=[^ ]* [^ ]*volley learner ")
[ -n "$learner" ] || fail "no learner on node1: $where"
[[ $learner == *--env* ]] && fail "the learner was given an --env: $learner"
[[ $learner == *" gpu=-/- "* ]] && fail "the learner's environment holds no GPU (CUDA_VISIBLE_DEVICES, SLURM_JOB_GPUS): $learner"
gpu=$(echo "$learner" | awk '{ print $3; exit }')
for n in node2 node3; do echo "$where" | grep -qE "^$n [0-9]+ gpu=-/- $actor" || fail "no Python actor without a GPU on $n: $where"; done
echo "$where" | grep -E "^node[23] " | grep -qv " gpu=-/- " && fail "an actor holds a GPU: $where"
echo "$where" | grep -E "^node1 " | grep -q " actor " && fail "an actor on the learner's node1: $where"
show=$(sl scontrol show job "$JOB")
c0=$(echo "$show" | awk -v j="$JOB" '/^JobId=/ { on = $1 == "JobId=" j } on')
c1=$(echo "$show" | awk -v j="$((JOB + 1))" '/^JobId=/ { on = $1 == "JobId=" j } on')
echo "$c0" | grep -q "NodeList=node1$" && echo "$c0" | grep -q "TresPerNode=gres:gpu:1" ||
    fail "the het job's component 0 is not node1 with gres:gpu:1: $c0"
echo "$c1" | grep -q "NodeList=node\[2-3\]$" && ! echo "$c1" | grep -q "gpu" ||
    fail "the het job's component 1 is not node2 and node3 without a GPU: $c1"
state=$(wait_job "$JOB" 240)
secs=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
last=$(grep -E '^done:' "$TMP/het.out" | tail -1)
version=$(last_metric het version)
[ "$state" = COMPLETED ] && [ -n "$last" ] && [ "${version:-0}" -gt 0 ] ||
    fail "het job $JOB: $state, '$last', version '$version': $(tail -20 "$TMP/het.out")"
pass "het job $JOB: component 0 on node1 with gres:gpu:1 (the learner's $gpu:" \
    "CUDA_VISIBLE_DEVICES, SLURM_JOB_GPUS), component 1 on node2 and node3 with none; the learner has no" \
    "--env, the actors are $(basename "$PY") -m volley actor --env volley.envs.cartpole:make_env (CURVE" \
    "keys); $last, version $version," \
    "mean return $(last_metric het return_mean); ${secs} s from sbatch to done"

# ---- (c) volley.sbatch requeued midway resumes from its checkpoint ----------------------------
JOB=$(submit requeue "$ROOT/deploy/slurm/volley.sbatch" -N 3 -- VOLLEY_PORT=7620 VOLLEY_UNTIL=steps \
    VOLLEY_MAX_STEPS=1000000) || fail "sbatch refused the requeue job"
JOBS+=("$JOB")
wait_for "$TMP/requeue.out" 90 "version=[1-9][0-9]" || fail "job $JOB trained on no weights version: $(tail -20 "$TMP/requeue.out")"
before=$(grep -E '^[0-9:]{8} steps=' "$TMP/requeue.out" | tail -1)
t0=$(date +%s.%N)
sl scontrol requeue "$JOB" || fail "scontrol requeue $JOB"
wait_for "$TMP/requeue.out" 120 "start 1: .*--resume" ||
    fail "job $JOB did not start again with --resume: $(grep -E 'start|stopping' "$TMP/requeue.out"; sl squeue)"
t_back=$(date +%s.%N) # before the second start's learner: its rows come after this
back=$(awk -v a="$t0" -v b="$t_back" 'BEGIN { printf "%.1f", b - a }')
state=$(wait_job "$JOB" 240)
last=$(grep -E '^(solved|done|not solved|not done):' "$TMP/requeue.out" | tail -1)
[ "$state" = COMPLETED ] && echo "$last" | grep -qE '^done: [0-9]+ steps' ||
    fail "requeued job $JOB: $state, '$last': $(tail -30 "$TMP/requeue.out")"
resumed=$(grep -h "resumed from" "$TMP/runs/requeue/logs/learner-2.log" 2> /dev/null)
[ -n "$resumed" ] || fail "the requeued job's learner did not resume: $(ls "$TMP/runs/requeue/logs"; tail -5 "$TMP/runs/requeue/logs/learner-2.log")"
ck_steps=$(echo "$resumed" | sed -nE 's/.* ([0-9]+) env steps.*/\1/p')
ck_version=$(echo "$resumed" | sed -nE 's/.*at version ([0-9]+).*/\1/p')
b_steps=$(echo "$before" | sed -nE 's/.* steps=([0-9]+) .*/\1/p')
b_version=$(echo "$before" | sed -nE 's/.* version=([0-9]+) .*/\1/p')
[ -n "$ck_steps" ] && [ "$ck_steps" -ge "$b_steps" ] && [ "$ck_version" -ge "$b_version" ] ||
    fail "the checkpoint lost training: resumed at version $ck_version, $ck_steps steps; before the requeue $before"
# The metrics go on: the learner's rows never go back (in version or steps), and the second
# start's (those written after it started) begin at or past the checkpoint.
cont=$(awk -v t="$t_back" -v v="$ck_version" -v s="$ck_steps" '
    function num(key) { return match($0, "\"" key "\":[0-9.]+") ? substr($0, RSTART + length(key) + 3, RLENGTH - length(key) - 3) + 0 : -1 }
    { w = num("wall_time"); ver = num("version"); st = num("env_steps") }
    ver < pv || st < ps { back = 1 }
    w > t && !n2++ { first_v = ver; first_s = st }
    { pv = ver; ps = st }
    END { if (back || !n2 || first_v < v || first_s < s) print "no"; else print first_v, first_s, pv, ps, n2 }
' "$TMP/runs/requeue/metrics.jsonl")
[ "$cont" != no ] && [ -n "$cont" ] || fail "the metrics do not go on from the checkpoint (version $ck_version, $ck_steps steps): $(cut -c1-110 "$TMP/runs/requeue/metrics.jsonl" | awk 'NR % 5 == 1')"
read -r first_v first_s last_v last_s rows <<< "$cont"
[ "$last_v" -gt "$ck_version" ] || fail "no version past the checkpoint's $ck_version after the requeue: $cont"
pass "job $JOB requeued (scontrol requeue) at: $before; it started again ${back} s later and $resumed;" \
    "its metrics go on ($rows rows) from version $first_v at $first_s steps to version $last_v at $last_s steps; $last"

# ---- (d) docs/pixels.md's ```sh slurm block: your own torch module, learner on node1, Python
# actors on node2 and node3. The block's VAR=VALUE words and its sbatch command are the job's, $PWD
# the checkout; to them this test adds what (a) to (c) have (a port, an actor of 8 envs a node), and
# VOLLEY_DEVICE=cpu (node1's stand-in GPU is /dev/null, and the checkout's torch may have no CUDA),
# a step budget and the actors in step with the learner (--wait-ms).
BLOCK=$(doc_block "$ROOT/docs/pixels.md" slurm) || fail "$BLOCK"
read -r -a WORDS <<< "$(printf '%s\n' "$BLOCK" | sed 's/\\$//' | tr '\n' ' ')"
VARS=() OPTS=() SCRIPT=
for w in "${WORDS[@]}"; do
    w=${w//\$PWD/$ROOT}
    if [ -z "$SCRIPT" ] && [ ${#OPTS[@]} -eq 0 ] && [[ $w == VOLLEY_*=* || $w == PYTHONPATH=* ]]; then VARS+=("$w")
    elif [ "$w" = sbatch ]; then OPTS+=(sbatch)
    elif [[ $w == *.sbatch ]]; then SCRIPT=$ROOT/$w
    else OPTS+=("$w"); fi
done
OPTS=("${OPTS[@]:1}") # sbatch's own options, after the word sbatch
get() { for v in "${VARS[@]}"; do [ "${v%%=*}" = "$1" ] && echo "${v#*=}"; done; }
SCREENS=$(get VOLLEY_ENV)
[ -f "$SCRIPT" ] && [ -n "$(get VOLLEY_TORCH_MODEL)" ] && [ -n "$SCREENS" ] && [ -n "$(get PYTHONPATH)" ] &&
    [ "$(get VOLLEY_LEARNER)" = torch ] ||
    fail "docs/pixels.md's slurm block has no script, VOLLEY_TORCH_MODEL, PYTHONPATH, VOLLEY_ENV or VOLLEY_LEARNER=torch: $BLOCK"
# The page's CNN swapped for a module of the same contract that learns these screens within this
# test's budget on two cores (as multihost_pixels_test.sh does), and this test's Python.
NET_FN=tiny_screens_net:build MODPATH=$ROOT/tests/data
VARS+=("VOLLEY_TORCH_MODEL=$NET_FN" "PYTHONPATH=$MODPATH" "VOLLEY_PYTHON=$PY") # later words win
STEPS=24576 # per actor: 24 rounds of the env's 16 envs x 64 steps, 3 episodes an env
said=$(cd / && PYTHONPATH="$MODPATH" "$PY" -c "import torch, ${SCREENS%:*}, ${NET_FN%:*}" 2>&1) ||
    fail "$PY cannot import torch, ${SCREENS%:*} and ${NET_FN%:*}: $(echo "$said" | tail -1)"
t0=$(date +%s.%N)
JOB=$(submit pixels "$SCRIPT" "${OPTS[@]}" -- VOLLEY_HOME="$ROOT" VOLLEY_PORT=7630 "${VARS[@]}" VOLLEY_DEVICE=cpu \
    VOLLEY_UNTIL=steps VOLLEY_MAX_STEPS=$((2 * STEPS)) VOLLEY_MAX_SECONDS=400 \
    VOLLEY_ACTOR_ARGS="--steps $STEPS --wait-ms 60000") || fail "sbatch refused the pixels job: ${OPTS[*]} $SCRIPT"
JOBS+=("$JOB")
learner="-m volley learner --torch .*--torch-model $NET_FN"
actor="$PY -m volley actor --broker $NET.1:7630 .*--env $SCREENS .*--torch-model $NET_FN"
where=$(sightings "$JOB" "^node1 .*$learner" "^node2 .*$actor" "^node3 .*$actor")
echo "$where" | grep -qE "^node1 .*$learner" || fail "no torch learner of $NET_FN on node1: $where"
for n in node2 node3; do echo "$where" | grep -qE "^$n .*$actor" || fail "no Python actor with $NET_FN on $n: $where"; done
echo "$where" | grep -E "^node1 " | grep -q " actor " && fail "an actor on the learner's node1: $where"
state=$(wait_job "$JOB" 460)
secs=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
last=$(grep -E '^(done|not done):' "$TMP/pixels.out" | tail -1)
[ "$state" = COMPLETED ] && echo "$last" | grep -qE "^done: $((2 * STEPS)) steps" ||
    fail "pixels job $JOB: $state, '$last': $(tail -20 "$TMP/pixels.out")"
R=$TMP/runs/pixels
grep -qE "policy 'default' from the broker: obs u2\[1x72x80\] actions discrete\(7\) .*model torch:$NET_FN env $SCREENS" \
    "$R/logs/learner.log" && grep -q "torch engine: torch:$NET_FN on cpu" "$R/logs/learner.log" ||
    fail "the learner did not train torch:$NET_FN on u2[1x72x80]: $(grep -E 'from the broker|engine' "$R/logs/learner.log")"
grep -q "^torch-model = $NET_FN$" "$R/config.ini" || fail "the run's config.ini lacks torch-model = $NET_FN"
version=$(last_metric pixels version) dropped=$(last_metric pixels segments_dropped)
steps=$(last_metric pixels env_steps) trained=$(last_metric pixels segments_trained)
share=$(grep "progress:" "$R/logs/learner.log" | tail -1 | grep -oE 'dropped [0-9]+ of [0-9]+ arrived \([0-9]+%[^)]*\)')
[ "${version:-0}" -gt 0 ] && [ "$dropped" = 0 ] && [ "$trained" = $((2 * STEPS / 64)) ] ||
    fail "the learner: version '$version', $trained segments trained of $((2 * STEPS / 64)), $dropped dropped ($share)"
n2=$(sed -n 's/^volley actor: \([0-9]*\) env steps$/\1/p' "$R.actors/node2.log")
n3=$(sed -n 's/^volley actor: \([0-9]*\) env steps$/\1/p' "$R.actors/node3.log")
[ "$n2" = $STEPS ] && [ "$n3" = $STEPS ] && [ "$steps" = $((n2 + n3)) ] ||
    fail "the actors stepped '$n2' (node2) and '$n3' (node3) env steps, the learner took $steps"
returns=$(grep -oE '"return_mean":[0-9.]+' "$R/metrics.jsonl" | cut -d: -f2 | awk '$1 > 0' | uniq)
first=$(echo "$returns" | head -1) final=$(echo "$returns" | tail -1)
awk -v a="$first" -v b="$final" 'BEGIN { exit !(b >= 110 && b > a + 20) }' ||
    fail "no return trend: mean return $first -> $final (random scores about 73): $(echo $returns)"
pass "job $JOB (docs/pixels.md's block: $(basename "$SCRIPT"), VOLLEY_LEARNER=torch, VOLLEY_TORCH_MODEL=$NET_FN): the learner on node1 trained" \
    "torch:$NET_FN on u2[1x72x80] to version $version, $trained segments, $steps env steps = node2's $n2 +" \
    "node3's $n3 (Python actors acting with the module), $share; mean return $first -> $final (random:" \
    "about 73); $last; ${secs} s from sbatch to done"
echo "5 passed, 0 failed"

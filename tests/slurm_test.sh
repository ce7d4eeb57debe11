#!/usr/bin/env bash
# deploy/slurm/volley.sbatch on a real, one-node Slurm cluster: munged,
# slurmctld and slurmd run from a temporary folder as this test's own
# processes (stopped by their pids on exit). A job solves CartPole; a second
# is signalled as a time limit would (USR1 to the batch script), checkpoints,
# requeues itself and resumes from its checkpoint to solve, its books showing
# what the interruption cost. A job with VOLLEY_LEARNER=torch and a GPU runs
# the PyTorch learner with --device cuda. The heterogeneous-job variant passes
# `sbatch --test-only`. Needs root (it installs slurm-wlm and munge when
# missing); says SKIP otherwise. First, anywhere, the commands the script
# generates, under stand-ins for srun, scontrol, squeue and scancel.
. "$(dirname "$0")/lib.sh"
ROOT=$(cd "$(dirname "$0")/.." && pwd)

# ---- the commands volley.sbatch generates (no Slurm: each srun is recorded, not run) -----------
STUB=$TMP/stub
mkdir -p "$STUB"
printf '#!/usr/bin/env bash\necho "srun $* " >> "$STUB_LOG"\n' > "$STUB/srun"
printf '#!/usr/bin/env bash\n[ "$1 $2" = "show hostnames" ] && tr , "\\n" <<< "$3"\nexit 0\n' > "$STUB/scontrol"
printf '#!/bin/sh\nexit 0\n' > "$STUB/squeue"
cp "$STUB/squeue" "$STUB/scancel"
chmod +x "$STUB"/*
# generated NAME [VAR=VALUE...]: runs volley.sbatch as a two-node job (n0, n1) under the
# stand-ins with VAR=VALUE... (no GPU unless they give one); its srun calls land in
# $TMP/NAME.srun, the learner host's in HEAD, the actors' in ACTORS.
generated() {
    local name=$1
    shift
    env -u CUDA_VISIBLE_DEVICES -u SLURM_GPUS -u SLURM_JOB_GPUS -u SLURM_GPUS_ON_NODE \
        -u VOLLEY_DEVICE -u VOLLEY_LEARNER PATH="$STUB:$PATH" STUB_LOG="$TMP/$name.srun" \
        SLURM_JOB_ID=7 SLURM_JOB_NODELIST=n0,n1 SLURM_CPUS_ON_NODE=4 SLURM_SUBMIT_DIR="$TMP" \
        VOLLEY="$VOLLEY" VOLLEY_RUN_DIR="$TMP/generated" "$@" \
        bash "$ROOT/deploy/slurm/volley.sbatch" > "$TMP/$name.out" 2>&1 ||
        fail "volley.sbatch ($name) under the stand-ins: $(tail -3 "$TMP/$name.out")"
    HEAD=$(grep -e "--job-name=volley-up" "$TMP/$name.srun")
    ACTORS=$(grep -e "--job-name=volley-actors" "$TMP/$name.srun")
    [ -n "$HEAD" ] && [ -n "$ACTORS" ] || fail "volley.sbatch ($name) ran no head or actor step: $(cat "$TMP/$name.srun")"
}
generated gpu VOLLEY_LEARNER=torch SLURM_JOB_GPUS=0
[[ $HEAD == *" up "*" --learner torch --device cuda "* ]] ||
    fail "with a GPU, the PyTorch learner is not given --device cuda: $HEAD"
[[ $ACTORS == *" --gres=none "* ]] || fail "the actors' step may take the job's GPU: $ACTORS"
generated gpu-visible VOLLEY_LEARNER=torch CUDA_VISIBLE_DEVICES=0
[[ $HEAD == *" --learner torch --device cuda "* ]] || fail "CUDA_VISIBLE_DEVICES=0: no --device cuda: $HEAD"
generated cpu VOLLEY_LEARNER=torch
[[ $HEAD == *" --learner torch "* && $HEAD != *--device* ]] ||
    fail "without a GPU, the PyTorch learner is given a device: $HEAD"
generated c-learner VOLLEY_LEARNER=c SLURM_GPUS_ON_NODE=1
[[ $HEAD == *" --learner c "* && $HEAD != *--device* ]] || fail "the C learner is given a device: $HEAD"
generated chosen VOLLEY_LEARNER=torch SLURM_GPUS_ON_NODE=2 VOLLEY_DEVICE=cuda:1
[[ $HEAD == *" --device cuda:1 "* ]] || fail "VOLLEY_DEVICE=cuda:1 is not the learner's device: $HEAD"
generated het VOLLEY_LEARNER=torch SLURM_JOB_GPUS=0 SLURM_JOB_NODELIST_HET_GROUP_0=g0 \
    SLURM_JOB_NODELIST_HET_GROUP_1=c0,c1 SLURM_JOB_NUM_NODES_HET_GROUP_1=2 \
    SLURM_JOB_CPUS_PER_NODE_HET_GROUP_1="8(x2)"
[[ $HEAD == *" --het-group=0 "*" --learner torch --device cuda "* ]] ||
    fail "the hetjob's learner is not on component 0 with --device cuda: $HEAD"
[[ $ACTORS == *" --het-group=1 "*" --gres=none "* ]] || fail "the hetjob's actors: $ACTORS"
generated python VOLLEY_LEARNER=torch VOLLEY_ENV=mygame.env:make_env VOLLEY_TORCH_MODEL=mynet:build
[[ $HEAD == *" --env mygame.env:make_env "* && $HEAD == *" --torch-model mynet:build"* ]] ||
    fail "a Python env's learner is not given its env and VOLLEY_TORCH_MODEL: $HEAD"
[[ $HEAD != *--batch* ]] || fail "a Python env's learner is given a --batch (its vector env sets the round): $HEAD"
generated python-batch VOLLEY_ENV=mygame.env:make_env VOLLEY_BATCH=48
[[ $HEAD == *" --batch 48 "* ]] || fail "VOLLEY_BATCH=48 is not the learner's --batch: $HEAD"
generated c-env VOLLEY_ENV=cartpole
[[ $HEAD == *" --batch 32 "* ]] || fail "a C env's batch is not its 4 actors x 8 envs: $HEAD"
pass "volley.sbatch's commands: the PyTorch learner gets --device cuda with a GPU (SLURM_JOB_GPUS," \
    "CUDA_VISIBLE_DEVICES; VOLLEY_DEVICE overrides it), none without one or for the C learner;" \
    "the actors' step takes no GPU (--gres=none); the hetjob's learner on component 0; a Python" \
    "env's learner takes VOLLEY_TORCH_MODEL and sizes its own batch"

[ "$(id -u)" = 0 ] || { echo "SKIP: not root: cannot run Slurm's daemons or install them"; exit 0; }
if ! command -v slurmctld > /dev/null || ! command -v munged > /dev/null; then
    DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends slurm-wlm munge \
        > "$TMP/apt.log" 2>&1 || { echo "SKIP: cannot install slurm-wlm and munge: $(tail -1 "$TMP/apt.log")"; exit 0; }
fi

# ---- a one-node cluster in $TMP/slurm -------------------------------------------------------
S=$TMP/slurm
mkdir -p "$S/state" "$S/spool" "$S/munge"
chmod 700 "$S/munge"
dd if=/dev/urandom of="$S/munge/munge.key" bs=1024 count=1 status=none
chmod 400 "$S/munge/munge.key"
export SLURM_CONF=$S/slurm.conf
P=$(free_port)
MEM=$(awk '/MemTotal/ { print int($2 / 1024 * 0.8) }' /proc/meminfo)
cat > "$SLURM_CONF" <<EOF
ClusterName=volleytest
SlurmctldHost=localhost
SlurmctldPort=$P
SlurmdPort=$((P + 1))
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
# cred_expire: how long a requeued job waits before it starts again (default 120 s)
AuthInfo=socket=$S/munge/munge.sock,cred_expire=10
StateSaveLocation=$S/state
SlurmdSpoolDir=$S/spool/%n
SlurmctldPidFile=$S/slurmctld.pid
SlurmdPidFile=$S/slurmd.pid
SlurmctldLogFile=$S/slurmctld.log
SlurmdLogFile=$S/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerType=sched/backfill
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MpiDefault=none
ReturnToService=2
KillWait=20
MinJobAge=600
GresTypes=gpu
NodeName=localhost NodeAddr=127.0.0.1 CPUs=$(nproc) RealMemory=$MEM Gres=gpu:1 State=UNKNOWN
PartitionName=debug Nodes=localhost Default=YES MaxTime=INFINITE State=UP
EOF
# A "GPU" that is /dev/null: enough for the het job's --gres=gpu:1 to be understood
echo "NodeName=localhost Name=gpu File=/dev/null" > "$S/gres.conf"

DAEMONS=()
JOBS=()
stop_cluster() {
    [ ${#JOBS[@]} -gt 0 ] && scancel "${JOBS[@]}" 2> /dev/null
    for _ in $(seq 60); do # the jobs' own processes end before the daemons that watch them
        [ -z "$(squeue -h 2> /dev/null)" ] && break
        sleep 0.5
    done
    for ((i = ${#DAEMONS[@]} - 1; i >= 0; i--)); do kill -TERM "${DAEMONS[i]}" 2> /dev/null; done
    for _ in $(seq 50); do
        alive=0
        for p in "${DAEMONS[@]}"; do kill -0 "$p" 2> /dev/null && alive=1; done
        [ $alive = 0 ] && break
        sleep 0.2
    done
    for p in "${DAEMONS[@]}"; do kill -KILL "$p" 2> /dev/null; done
    cleanup
}
trap stop_cluster EXIT

munged -F --force --socket="$S/munge/munge.sock" --key-file="$S/munge/munge.key" \
    --pid-file="$S/munge/munged.pid" --log-file="$S/munge/munged.log" --seed-file="$S/munge/seed" \
    > "$S/munged.out" 2>&1 &
DAEMONS+=($!)
for _ in $(seq 50); do [ -S "$S/munge/munge.sock" ] && break; sleep 0.1; done
[ -S "$S/munge/munge.sock" ] || fail "munged did not start: $(cat "$S/munged.out" "$S/munge/munged.log" 2> /dev/null)"
slurmctld -D -i -f "$SLURM_CONF" > "$S/slurmctld.out" 2>&1 &
DAEMONS+=($!)
slurmd -D -N localhost -f "$SLURM_CONF" > "$S/slurmd.out" 2>&1 &
DAEMONS+=($!)
up=0
for _ in $(seq 60); do
    sinfo -h -N -o '%T' 2> /dev/null | grep -qE '^(idle|mixed)' && { up=1; break; }
    sleep 0.5
done
[ $up = 1 ] || fail "the cluster did not come up: $(sinfo -N 2>&1; tail -n 5 "$S/slurmctld.log" "$S/slurmd.log")"
pass "a one-node Slurm cluster (munged, slurmctld, slurmd) runs from $S"

# Waits up to $2 s for job $1 to leave the queue and prints its final state.
wait_job() {
    local state=""
    for _ in $(seq $(($2 * 2))); do
        state=$(scontrol show job "$1" 2> /dev/null | sed -n 's/.*JobState=\([A-Z_]*\).*/\1/p')
        case $state in COMPLETED | FAILED | CANCELLED | TIMEOUT | NODE_FAIL | OUT_OF_MEMORY) break ;; esac
        sleep 0.5
    done
    echo "$state"
}

# Submits volley.sbatch on one node with the run's knobs in the environment. Prints the job id.
submit() {
    local name=$1
    shift
    env VOLLEY="$VOLLEY" VOLLEY_RUN_DIR="$TMP/runs" VOLLEY_NAME="$name" VOLLEY_PORT="$(free_port)" \
        VOLLEY_MAX_SECONDS=240 "$@" \
        sbatch --parsable --nodes=1 --output="$TMP/$name.out" --chdir="$TMP" \
        "$ROOT/deploy/slurm/volley.sbatch" | cut -d';' -f1
}

# ---- a job that solves ----------------------------------------------------------------------
t0=$(date +%s.%N)
JOB=$(submit solve VOLLEY_KEYS="$TMP/keys") || fail "sbatch refused the job"
JOBS+=("$JOB")
state=$(wait_job "$JOB" 300)
secs=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
last=$(grep -E '^(solved|done|not solved|not done):' "$TMP/solve.out" | tail -1)
[ "$state" = COMPLETED ] && echo "$last" | grep -qE '^solved: [0-9]+ steps' ||
    fail "job $JOB: $state, '$last': $(tail -20 "$TMP/solve.out")"
[ "$(stat -c %a "$TMP/keys")" = 700 ] || fail "the keys' folder is not 0700: $(stat -c %a "$TMP/keys")"
grep -q -- "--cert $TMP/keys/learner.cert" "$TMP/runs/solve/config.ini" || fail "the learner ran without its CURVE key"
grep -q "actor 1001 (policy 'default') joined" "$TMP/runs/solve/logs/broker.log" ||
    fail "no actor 1001 (node 0, core 1) joined: $(grep joined "$TMP/runs/solve/logs/broker.log")"
pass "job $JOB (CURVE keys made once, 0700) solves CartPole: $last; ${secs} s from sbatch to done"

# ---- a job signalled as at its time limit: checkpoint, requeue, resume, solve ------------------
# (a low --lr: the run must not solve before the signal)
JOB=$(submit requeue VOLLEY_UP_ARGS="--lr 0.0001") || fail "sbatch refused the second job"
JOBS+=("$JOB")
wait_for "$TMP/requeue.out" 120 "version=[1-9]" || fail "job $JOB trained on no weights version: $(tail "$TMP/requeue.out")"
before=$(grep -E '^[0-9:]{8} steps=' "$TMP/requeue.out" | tail -1)
scancel --signal=USR1 --batch "$JOB" || fail "scancel --signal=USR1 --batch $JOB"
wait_for "$TMP/requeue.out" 60 "requeueing job $JOB" || fail "job $JOB did not requeue: $(tail "$TMP/requeue.out")"
grep -q '^solved:' "$TMP/requeue.out" && fail "job $JOB solved before the signal: lower its --lr"
state=$(wait_job "$JOB" 400)
last=$(grep -E '^(solved|done|not solved|not done):' "$TMP/requeue.out" | tail -1)
[ "$state" = COMPLETED ] && echo "$last" | grep -qE '^solved: [0-9]+ steps' ||
    fail "requeued job $JOB: $state, '$last': $(tail -30 "$TMP/requeue.out")"
resumed=$(grep -h "resumed from" "$TMP/runs/requeue/logs/learner-2.log" 2> /dev/null)
[ -n "$resumed" ] || fail "the requeued job's learner did not resume: $(ls "$TMP/runs/requeue/logs"; cat "$TMP/runs/requeue/logs/learner-2.log")"
grep -q "start 1:.*--resume" "$TMP/requeue.out" || fail "the second start did not say --resume: $(grep start "$TMP/requeue.out")"
# The cost: steps and versions the checkpoint at the signal held against the last report before it.
ck_steps=$(echo "$resumed" | sed -nE 's/.* ([0-9]+) env steps.*/\1/p')
ck_version=$(echo "$resumed" | sed -nE 's/.*at version ([0-9]+).*/\1/p')
b_steps=$(echo "$before" | sed -nE 's/.* steps=([0-9]+) .*/\1/p')
b_version=$(echo "$before" | sed -nE 's/.* version=([0-9]+) .*/\1/p')
[ -n "$ck_steps" ] && [ "$ck_steps" -ge "$b_steps" ] && [ "$ck_version" -ge "$b_version" ] ||
    fail "the checkpoint lost training: resumed at version $ck_version, $ck_steps steps; before the signal $before"
first=$(grep -E '^[0-9:]{8} steps=' "$TMP/requeue.out" | awk -v s="$ck_steps" '{ split($2, a, "="); if (a[2] + 0 > s + 0) { print; exit } }')
pass "job $JOB requeued at its USR1 and resumed: $resumed (the last report before the signal: steps $b_steps, version $b_version); it solved: $last"
echo "     resumed run's first report: $first"

# ---- the PyTorch learner on a job with a GPU (the stand-in): told --device cuda ----------------
# Where its Python's torch has no CUDA (Debian's) the learner refuses at once, in one line that
# reaches the job's output; with CUDA it trains, and the job is cancelled once its command is seen.
JOB=$(env VOLLEY="$VOLLEY" VOLLEY_RUN_DIR="$TMP/runs" VOLLEY_NAME=gpu VOLLEY_PORT="$(free_port)" \
    VOLLEY_LEARNER=torch VOLLEY_MAX_SECONDS=60 \
    sbatch --parsable --nodes=1 --gres=gpu:1 --output="$TMP/gpu.out" --chdir="$TMP" \
    "$ROOT/deploy/slurm/volley.sbatch" | cut -d';' -f1) || fail "sbatch --gres=gpu:1 refused the job"
JOBS+=("$JOB")
wait_for "$TMP/runs/gpu/config.ini" 60 "^command = .* -m volley learner --torch .*--device cuda" ||
    fail "job $JOB's learner was not told --device cuda: $(grep -A1 '^\[learner\]' "$TMP/runs/gpu/config.ini"; tail -5 "$TMP/gpu.out")"
if "$ROOT/.venv/bin/python" -c 'import sys, torch; sys.exit(torch.cuda.is_available())' 2> /dev/null; then
    state=$(wait_job "$JOB" 120)
    said=$(grep "the learner said: " "$TMP/gpu.out")
    [ "$state" = FAILED ] && [[ $said == *"--device cuda: this Python's torch "*" has no CUDA; "* ]] ||
        fail "job $JOB with a GPU and a torch without CUDA: $state, '$said': $(tail -5 "$TMP/gpu.out")"
    pass "job $JOB (--gres=gpu:1, VOLLEY_LEARNER=torch): the learner is told --device cuda and, its torch" \
        "having no CUDA, refuses: ${said#*the learner said: }"
else
    scancel "$JOB"
    pass "job $JOB (--gres=gpu:1, VOLLEY_LEARNER=torch): the learner is told --device cuda"
fi

# ---- the heterogeneous variant --------------------------------------------------------------
# One node with that stand-in GPU: --test-only checks the script's directives, its two components
# and its GPU request, each component shrunk to fit here (one node, not exclusive).
sed 's/--nodes=2/--nodes=1/; s/ --exclusive//' "$ROOT/deploy/slurm/volley-het.sbatch" > "$TMP/het.sbatch"
out=$(sbatch --test-only "$TMP/het.sbatch" 2>&1)
echo "$out" | grep -q "to start at" || fail "sbatch --test-only volley-het.sbatch: $out"
bash -n "$ROOT/deploy/slurm/volley-het.sbatch" || fail "volley-het.sbatch does not parse"
pass "volley-het.sbatch: sbatch --test-only reads it: $(echo "$out" | tail -1)"
echo "6 passed, 0 failed"

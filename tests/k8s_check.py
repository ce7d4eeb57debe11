"""Reads deploy/k8s's rendered manifests (kubectl kustomize) for tests/k8s_test.sh.

  k8s_check.py check base|cpu|gpu RENDER.yaml
      asserts what the deployment promises: the learner host a StatefulSet of one
      with its volume, the headless Service on the broker's five ports, the actors a
      Deployment, GPU asked for only by the learner's container and only in the gpu
      overlay, no key material in the manifests, each container mounting only its
      own Secret, probes, non-root and read-only, resources; prints what it checked.
  k8s_check.py run RENDER.yaml CONTAINER [--probe] --root ROOT --vols DIR --keys DIR [--set VAR=VALUE...]
                  [--host VAR=VALUE...] [--replace-arg OLD=NEW...]
      runs CONTAINER's command and arguments (or, with --probe, its liveness probe's
      command) as a local process: the environment as the kubelet makes it (the
      ConfigMaps' envFrom, env, then --set), $(VAR) expanded in them as Kubernetes
      does, and every path under one of the pod's mounts moved into DIR/<volume>:
      Secret volumes written there from the manifests in --keys (volley keygen
      --k8s-secrets) as the kubelet lays them out (links into a hidden directory),
      the volume claim and emptyDirs as plain directories; --replace-arg swaps an
      argument (the gpu overlay's learner on --device cpu); --host sets a variable to a
      path of this machine's, never moved (a clone under /tmp is not the pod's /tmp). /volley
      (the image's copy of the repository) is ROOT; `volley` is the first on PATH.
"""
import base64
import os
import re
import sys

import yaml

KEY_FILES = {"broker": {"volley-broker", "volley-allowed"}, "learner": {"volley-learner"},
             "actor": {"volley-actor"}}
BASE_PORT = 7600


def load(path):
    return [d for d in yaml.safe_load_all(open(path)) if d]


def find(docs, kind, name=None):
    got = [d for d in docs if d["kind"] == kind and (name is None or d["metadata"]["name"] == name)]
    assert len(got) == 1, "wanted one %s %s, found %d" % (kind, name or "", len(got))
    return got[0]


def pods(docs):
    """Yields (workload, pod spec) for every workload."""
    for d in docs:
        if d["kind"] in ("StatefulSet", "Deployment", "DaemonSet", "Job", "Pod"):
            yield d, d["spec"]["template"]["spec"] if "template" in d["spec"] else d["spec"]


def containers(docs):
    for w, spec in pods(docs):
        for c in spec.get("containers", []) + spec.get("initContainers", []):
            yield w, spec, c


def strings(x):
    if isinstance(x, dict):
        for k, v in x.items():
            yield str(k)
            yield from strings(v)
    elif isinstance(x, list):
        for v in x:
            yield from strings(v)
    elif x is not None:
        yield str(x)


def check_no_keys(docs):
    for d in docs:
        assert d["kind"] != "Secret", "a Secret in the manifests: keys come from keygen --k8s-secrets"
        if d["kind"] == "ConfigMap":
            assert not d.get("binaryData"), "binary data in ConfigMap %s" % d["metadata"]["name"]
        for s in strings(d):
            for bad in ("public-key", "secret-key", "curve", "PRIVATE KEY"):
                assert bad not in s, "key material (%r) inline in %s: %.60s" % (bad, d["metadata"]["name"], s)
            # A Z85 CURVE key is 40 characters; base64 of a certificate is longer.
            assert not re.search(r"[A-Za-z0-9+/=]{60,}", s), "base64 inline in %s" % d["metadata"]["name"]


def check_secrets(docs):
    mounted = {}
    for w, spec, c in containers(docs):
        vols = {v["name"]: v for v in spec.get("volumes", [])}
        secrets = set()
        for m in c.get("volumeMounts", []):
            v = vols.get(m["name"], {})
            if "secret" in v:
                assert m.get("readOnly"), "%s mounts Secret %s writable" % (c["name"], m["name"])
                assert "subPath" not in m, "%s: a subPath mount never sees a Secret's updates" % c["name"]
                mode = v["secret"].get("defaultMode", 0o644)
                assert mode & 0o007 == 0, "%s: Secret %s readable by others" % (c["name"], m["name"])
                secrets.add(v["secret"]["secretName"])
        assert not any("secretKeyRef" in str(e) for e in c.get("env", [])), "a key in %s's env" % c["name"]
        mounted[c["name"]] = secrets
    assert mounted == KEY_FILES, "Secrets per container: %s, wanted %s" % (mounted, KEY_FILES)
    # Each --cert/--broker-key/--allow names a file of that container's own mount.
    for w, spec, c in containers(docs):
        paths = [m["mountPath"] for m in c.get("volumeMounts", []) if m["mountPath"].startswith("/keys")]
        argv = c.get("args", [])
        for flag in ("--cert", "--broker-key", "--allow"):
            if flag in argv:
                p = argv[argv.index(flag) + 1]
                assert any(p == m or p.startswith(m + "/") for m in paths), "%s %s %s: not mounted" % (
                    c["name"], flag, p)
    return mounted


def check_security(docs):
    for w, spec in pods(docs):
        sc = spec.get("securityContext", {})
        for k in ("runAsUser", "runAsGroup", "fsGroup"):
            assert sc.get(k) == 7600, "%s: %s is %s, wanted 7600" % (w["metadata"]["name"], k, sc.get(k))
        assert sc.get("runAsNonRoot") is True, "%s: runAsNonRoot" % w["metadata"]["name"]
        assert spec.get("automountServiceAccountToken") is False, "%s mounts an API token" % w["metadata"]["name"]
        assert not spec.get("hostNetwork") and not spec.get("hostPID"), "%s on the host's namespaces" % w["metadata"]["name"]
    for w, spec, c in containers(docs):
        sc = c.get("securityContext", {})
        assert sc.get("allowPrivilegeEscalation") is False, "%s may escalate" % c["name"]
        assert sc.get("readOnlyRootFilesystem") is True, "%s: root filesystem writable" % c["name"]
        assert sc.get("capabilities", {}).get("drop") == ["ALL"], "%s keeps capabilities" % c["name"]
        assert not sc.get("privileged") and not sc.get("capabilities", {}).get("add"), c["name"]
        for kind in ("requests", "limits"):
            r = c.get("resources", {}).get(kind, {})
            assert "cpu" in r and "memory" in r, "%s: no cpu/memory %s" % (c["name"], kind)


def check_gpu(docs, overlay):
    for w, spec, c in containers(docs):
        res = c.get("resources", {})
        gpu = [res.get(k, {}).get("nvidia.com/gpu") for k in ("requests", "limits")]
        if overlay == "gpu" and c["name"] == "learner":
            assert gpu[1] == 1, "the gpu overlay's learner limits: %s" % res
            argv = c.get("command", []) + c.get("args", [])
            assert argv.count("--torch") == 1 and argv[argv.index("--device") + 1] == "cuda", argv
            assert "-m volley learner" in " ".join(argv), argv
            assert c["image"].split(":")[0] == "volley-cuda", c["image"]
        else:
            assert gpu == [None, None], "%s asks for a GPU in %s" % (c["name"], overlay)
            assert "--torch" not in c.get("args", []), c["name"]
            assert c["image"].split(":")[0] == "volley", c["image"]
    learner_host = find(docs, "StatefulSet", "volley")["spec"]["template"]["spec"]
    placed = bool(learner_host.get("nodeSelector")) and bool(learner_host.get("tolerations"))
    assert placed == (overlay == "gpu"), "node selector and tolerations only in gpu (%s)" % overlay
    for w, spec in pods(docs):
        if w["metadata"]["name"] != "volley":
            assert not spec.get("nodeSelector") and not spec.get("tolerations"), w["metadata"]["name"]


def port_of(container, port):
    if isinstance(port, int):
        return port
    return next(p["containerPort"] for p in container["ports"] if p.get("name") == port)


def check_shape(docs):
    params = find(docs, "ConfigMap")["data"]
    svc = find(docs, "Service", "volley-broker")
    assert svc["spec"].get("clusterIP") == "None", "the broker's Service is not headless"
    sts = find(docs, "StatefulSet", "volley")
    assert sts["spec"]["replicas"] == 1 and sts["spec"]["serviceName"] == "volley-broker", sts["spec"]
    tpl = sts["spec"]["template"]
    assert all(tpl["metadata"]["labels"].get(k) == v for k, v in svc["spec"]["selector"].items()), \
        "the Service selects no learner-host pod"
    cs = {c["name"]: c for c in tpl["spec"]["containers"]}
    assert set(cs) == {"broker", "learner"}, set(cs)
    broker = cs["broker"]
    want = list(range(BASE_PORT, BASE_PORT + 5))
    assert [p["port"] for p in svc["spec"]["ports"]] == want, svc["spec"]["ports"]
    assert [port_of(broker, p["targetPort"]) for p in svc["spec"]["ports"]] == want, "targetPorts"
    assert params["VOLLEY_PORT"] == str(BASE_PORT), params
    assert params["VOLLEY_BROKER"] == "volley-broker:%d" % BASE_PORT, params
    assert broker["args"][:3] == ["broker", "--port", "$(VOLLEY_PORT)"], broker["args"]
    # Probes: readiness on the broker's base port, liveness for the broker and the learner.
    rp = broker["readinessProbe"]["tcpSocket"]["port"]
    assert port_of(broker, rp) == BASE_PORT, "readiness on %s" % rp
    assert "tcpSocket" in broker["livenessProbe"], broker["livenessProbe"]
    assert "exec" in cs["learner"]["livenessProbe"], "the learner has no liveness probe"
    # The run directory on the claim, which a rescheduled pod gets back.
    claims = [c["metadata"]["name"] for c in sts["spec"]["volumeClaimTemplates"]]
    data = [m for m in cs["learner"]["volumeMounts"] if m["name"] in claims]
    assert data and params["VOLLEY_RUN_DIR"].startswith(data[0]["mountPath"] + "/"), "run dir not on the claim"
    script = " ".join(cs["learner"]["command"])
    assert "--resume" in script and "checkpoints/$VOLLEY_POLICY.ckpt" in script, "no --resume when a checkpoint exists"
    assert "--run-dir" in cs["learner"]["args"], cs["learner"]["args"]
    actors = find(docs, "Deployment", "volley-actor")
    a = actors["spec"]["template"]["spec"]["containers"]
    assert len(a) == 1 and "$(VOLLEY_BROKER)" in a[0]["args"], a
    assert any(e["name"] == "POD_NAME" and e["valueFrom"]["fieldRef"]["fieldPath"] == "metadata.name"
               for e in a[0]["env"]), "actor ids not from the pod's name"
    assert "--id" in " ".join(a[0]["command"]), "no --id for the actor"


def check(overlay, path):
    docs = load(path)
    check_shape(docs)
    check_no_keys(docs)
    mounted = check_secrets(docs)
    check_security(docs)
    check_gpu(docs, overlay)
    print("%s: StatefulSet volley (broker, learner, claim), headless Service on %d..%d, Deployment "
          "volley-actor; Secrets %s; probes, non-root, read-only, resources; GPU %s" % (
              overlay, BASE_PORT, BASE_PORT + 4,
              ", ".join("%s:%s" % (c, "+".join(sorted(s))) for c, s in sorted(mounted.items())),
              "only the learner's (nvidia.com/gpu: 1), placed by node selector and tolerations"
              if overlay == "gpu" else "nowhere"))


def expand(s, env):
    """Kubernetes' $(VAR) expansion: defined names replaced, $$ an escaped $."""
    return re.sub(r"\$\$|\$\(([A-Za-z_][A-Za-z0-9_]*)\)",
                  lambda m: "$" if m.group(0) == "$$" else env.get(m.group(1), m.group(0)), s)


def run(argv):
    path, name = argv[0], argv[1]
    opts = {"--set": []}
    i, probe = 2, False
    while i < len(argv):
        if argv[i] == "--probe":
            probe, i = True, i + 1
        elif argv[i] in ("--set", "--host", "--replace-arg"):
            opts.setdefault(argv[i], []).append(argv[i + 1])
            i += 2
        else:
            opts[argv[i]], i = argv[i + 1], i + 2
    docs = load(path)
    w, spec, c = next(x for x in containers(docs) if x[2]["name"] == name)
    vols = {v["name"]: v for v in spec.get("volumes", [])}
    claims = {t["metadata"]["name"] for t in w["spec"].get("volumeClaimTemplates", [])}
    # The mounts: each volume a directory under --vols.
    mapping = {"/volley": opts["--root"]}
    for m in c.get("volumeMounts", []):
        local = os.path.join(opts["--vols"], m["name"])
        os.makedirs(local, exist_ok=True)
        v = vols.get(m["name"], {})
        if "secret" in v:
            if not os.path.exists(os.path.join(local, "..data")):
                sec = find(load_dir(opts["--keys"]), "Secret", v["secret"]["secretName"])
                write_secret(local, sec["data"], v["secret"].get("defaultMode", 0o644) & 0o700)
        else:
            assert m["name"] in claims or "emptyDir" in v, "volume %s" % m["name"]
        mapping[m["mountPath"]] = local
    env = {}
    for ref in c.get("envFrom", []):
        env.update(find(docs, "ConfigMap", ref["configMapRef"]["name"])["data"])
    for e in c.get("env", []):
        env[e["name"]] = expand(e.get("value", ""), env)
    for kv in opts["--set"]:
        k, v = kv.split("=", 1)
        env[k] = v
    prefixes = sorted(mapping, key=len, reverse=True)
    pattern = re.compile(r"(?<![\w/.])(%s)(?=/|$|[\s\"'])" % "|".join(map(re.escape, prefixes)))

    def local(s):
        return pattern.sub(lambda m: mapping[m.group(1)], s)

    cmd = c["livenessProbe"]["exec"]["command"] if probe else c.get("command", []) + c.get("args", [])
    cmd = [local(expand(a, env)) for a in cmd]  # expanded as the kubelet does, then moved
    for kv in opts.get("--replace-arg", []):
        old, new = kv.split("=", 1)
        assert old in cmd, "no argument %r to replace in %s" % (old, cmd)
        cmd = [new if a == old else a for a in cmd]
    env = {k: local(v) for k, v in env.items()}
    for kv in opts.get("--host", []):
        k, v = kv.split("=", 1)
        env[k] = v
    env["PATH"] = os.environ["PATH"]  # the image's, with this build's volley first
    sys.stdout.flush()
    os.execvpe(cmd[0], cmd, env)


def write_secret(local, data, mode):
    """Lays a Secret volume out as the kubelet does: the files in a hidden
    timestamped directory, ..data a link to it, and a link per key to
    ..data/KEY (the links swap when the Secret changes)."""
    stamp = "..2026_01_01_00_00_00.000000001"
    os.makedirs(os.path.join(local, stamp))
    for k, b64 in data.items():
        f = os.path.join(local, stamp, k)
        with open(os.open(f, os.O_WRONLY | os.O_CREAT, 0o600), "wb") as out:
            out.write(base64.b64decode(b64))
        os.chmod(f, mode)
    os.symlink(stamp, os.path.join(local, "..data"))
    for k in data:
        os.symlink(os.path.join("..data", k), os.path.join(local, k))


def load_dir(d):
    return [doc for f in sorted(os.listdir(d)) if f.endswith(".yaml") for doc in load(os.path.join(d, f))]


if __name__ == "__main__":
    if sys.argv[1] == "check":
        try:
            check(sys.argv[2], sys.argv[3])
        except AssertionError as e:
            print("k8s_check: %s: %s" % (sys.argv[2], e))
            sys.exit(1)
    elif sys.argv[1] == "run":
        run(sys.argv[2:])
    else:
        sys.exit(__doc__)

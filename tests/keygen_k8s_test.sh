#!/usr/bin/env bash
# `volley keygen --k8s-secrets DIR`: one Secret manifest per client, the broker's
# and the allowed list's, private (0700, 0600), each secret key in exactly one
# manifest and nowhere else; the decoded files are certificates a secured broker
# and its clients use; an existing manifest or a name a Secret cannot carry is
# refused with nothing written.
. "$(dirname "$0")/lib.sh"
K=$TMP/keys
# Decodes DIR's manifests: prints "FILE SECRET KEY" per entry and writes each entry's
# bytes to OUT/SECRET/KEY.
cat > "$TMP/decode.py" << 'EOF'
import base64, os, sys, yaml
d, out = sys.argv[1], sys.argv[2]
for f in sorted(os.listdir(d)):
    doc = yaml.safe_load(open(os.path.join(d, f)))
    assert doc["apiVersion"] == "v1" and doc["kind"] == "Secret" and doc["type"] == "Opaque", f
    name = doc["metadata"]["name"]
    os.makedirs(os.path.join(out, name), exist_ok=True)
    for k, v in doc["data"].items():
        open(os.path.join(out, name, k), "wb").write(base64.b64decode(v, validate=True))
        print(f, name, doc["metadata"]["labels"]["volley/role"], k)
EOF
mkdir "$TMP/cwd"
(cd "$TMP/cwd" && "$VOLLEY" keygen --k8s-secrets "$K" > "$TMP/keygen.log") || fail "keygen --k8s-secrets"
[ -z "$(ls -A "$TMP/cwd")" ] || fail "keygen wrote into its working directory: $(ls -A "$TMP/cwd")"
[ "$(ls "$K" | tr '\n' ' ')" = \
    "volley-actor.yaml volley-admin.yaml volley-allowed.yaml volley-broker.yaml volley-learner.yaml volley-monitor.yaml " ] ||
    fail "manifests: $(ls "$K")"
[ "$(stat -c %a "$K")" = 700 ] || fail "DIR is mode $(stat -c %a "$K")"
for f in "$K"/*; do [ "$(stat -c %a "$f")" = 600 ] || fail "$f is mode $(stat -c %a "$f")"; done
python3 "$TMP/decode.py" "$K" "$TMP/d" > "$TMP/entries.txt" || fail "not Secrets: $(cat "$TMP/entries.txt")"
cat > "$TMP/want.txt" << 'EOF'
volley-actor.yaml volley-actor actor actor.cert
volley-actor.yaml volley-actor actor actor.cert_secret
volley-actor.yaml volley-actor actor broker.cert
volley-admin.yaml volley-admin admin admin.cert
volley-admin.yaml volley-admin admin admin.cert_secret
volley-admin.yaml volley-admin admin broker.cert
volley-allowed.yaml volley-allowed broker actor.cert
volley-allowed.yaml volley-allowed broker admin.cert
volley-allowed.yaml volley-allowed broker learner.cert
volley-allowed.yaml volley-allowed broker monitor.cert
volley-broker.yaml volley-broker broker broker.cert
volley-broker.yaml volley-broker broker broker.cert_secret
volley-learner.yaml volley-learner learner broker.cert
volley-learner.yaml volley-learner learner learner.cert
volley-learner.yaml volley-learner learner learner.cert_secret
volley-monitor.yaml volley-monitor observer broker.cert
volley-monitor.yaml volley-monitor observer monitor.cert
volley-monitor.yaml volley-monitor observer monitor.cert_secret
EOF
sort "$TMP/entries.txt" | diff "$TMP/want.txt" - > "$TMP/diff.txt" || fail "entries: $(cat "$TMP/diff.txt")"
pass "one Secret per client, the broker's and the allowed list's; DIR 0700, manifests 0600, nothing outside DIR"

# Each secret key is in its own certificate's _secret entry and nowhere else (decoded or not).
keys=$(cat "$TMP"/d/*/*_secret | sed -n 's/^ *secret-key = "\(.*\)"$/\1/p')
[ "$(echo "$keys" | sort -u | wc -l)" -eq 5 ] || fail "wanted 5 distinct secret keys: $keys"
while read -r key; do
    n=$(grep -rlF -- "$key" "$TMP/d" | wc -l)
    [ "$n" -eq 1 ] || fail "a secret key is in $n decoded files"
done <<< "$keys"
grep -l "secret-key" "$TMP"/d/*/*.cert && fail "a public entry holds a secret key"
for s in actor learner monitor admin; do
    cmp -s "$TMP/d/volley-$s/broker.cert" "$TMP/d/volley-broker/broker.cert" || fail "volley-$s's broker.cert differs"
    cmp -s "$TMP/d/volley-$s/$s.cert" "$TMP/d/volley-allowed/$s.cert" || fail "allowed/$s.cert is not $s's"
done
grep -q 'role = "learner"' "$TMP/d/volley-learner/learner.cert" || fail "the learner's certificate has no role"
pass "each of the 5 secret keys is in one entry only; broker.cert and the allowed certificates match"

# The decoded files are what `volley keygen DIR` writes: a secured broker lets the clients in.
PORT=$(free_port)
d=$TMP/d
"$VOLLEY" broker --port "$PORT" --bind 127.0.0.1 --cert "$d/volley-broker/broker.cert" \
    --allow "$d/volley-allowed" > "$TMP/broker.log" 2>&1 &
PIDS+=($!)
wait_for "$TMP/broker.log" 10 "listening" || fail "the broker did not start with the decoded keys"
grep -q "roles: 4 keys read" "$TMP/broker.log" || fail "the broker did not read 4 allowed keys"
"$VOLLEY" ctl --broker 127.0.0.1:$PORT --cert "$d/volley-monitor/monitor.cert" \
    --broker-key "$d/volley-monitor/broker.cert" status > "$TMP/status.log" 2>&1 || fail "monitor's status"
# With no learner a pause is refused either way: the admin's for that, the monitor's for its role.
"$VOLLEY" ctl --broker 127.0.0.1:$PORT --cert "$d/volley-admin/admin.cert" \
    --broker-key "$d/volley-admin/broker.cert" pause default > "$TMP/pause.log" 2>&1
grep -q "no learner serves" "$TMP/pause.log" || fail "the admin's pause: $(cat "$TMP/pause.log")"
"$VOLLEY" ctl --broker 127.0.0.1:$PORT --cert "$d/volley-monitor/monitor.cert" \
    --broker-key "$d/volley-monitor/broker.cert" pause default > "$TMP/pause2.log" 2>&1
grep -q "role" "$TMP/pause2.log" || fail "the monitor's pause: $(cat "$TMP/pause2.log")"
pass "the decoded certificates: the broker reads 4 roles; the monitor reads status; the admin's key may pause, the monitor's may not"

# Refusals write nothing.
before=$(ls "$K" | wc -l)
"$VOLLEY" keygen --k8s-secrets "$K" --clients actor-b > "$TMP/again.log" 2>&1 && fail "an existing manifest was overwritten"
grep -q "volley-broker.yaml exists; not overwritten" "$TMP/again.log" || fail "refusal: $(cat "$TMP/again.log")"
[ "$(ls "$K" | wc -l)" -eq "$before" ] || fail "a refused keygen wrote a manifest"
"$VOLLEY" keygen --k8s-secrets "$TMP/k2" --clients Actors_A > "$TMP/bad.log" 2>&1
[ $? -eq 2 ] || fail "a name a Secret cannot carry was not refused with 2"
grep -q "cannot name a Secret" "$TMP/bad.log" && [ ! -e "$TMP/k2" ] || fail "bad name: $(cat "$TMP/bad.log")"
"$VOLLEY" keygen --k8s-secrets "$TMP/k3" "$TMP/k4" > /dev/null 2>&1
[ $? -eq 2 ] && [ ! -e "$TMP/k3" ] || fail "--k8s-secrets DIR with another DIR was not refused"
"$VOLLEY" keygen --k8s-secrets "$TMP/k5" --actors 2 --learners 1 --policies a,b > /dev/null ||
    fail "keygen --k8s-secrets --actors 2 --learners 1"
[ "$(ls "$TMP/k5" | tr '\n' ' ')" = \
    "volley-actor-1.yaml volley-actor-2.yaml volley-allowed.yaml volley-broker.yaml volley-learner-1.yaml " ] ||
    fail "counted clients: $(ls "$TMP/k5")"
python3 "$TMP/decode.py" "$TMP/k5" "$TMP/d5" > /dev/null || fail "k5 not Secrets"
grep -q 'policies = "a,b"' "$TMP/d5/volley-learner-1/learner-1.cert" || fail "the learner's policies"
pass "an existing manifest, a bad name, a second DIR are refused with nothing written; --actors N --learners N --policies"
echo "5 passed, 0 failed"

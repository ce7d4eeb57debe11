#!/usr/bin/env bash
# `volley up --name R --resume` goes on with run R as it was configured: its
# config.ini is the base (learning rate, seed, network size kept), flags
# override it and each overridden key is printed; another env or network is
# refused in one line naming the key, before anything starts. The resumed
# run's metrics go on: env steps and uptime continue from where it stopped,
# and its first row carries no zeros that were never measured.
. "$(dirname "$0")/lib.sh"
cd "$TMP"
R="$TMP/runs"

"$VOLLEY" up --runs "$R" --name r --until steps --max-steps 2e4 --lr 0.003 --seed 7 --hidden 32 \
    --record first.vlrec > first.log 2>&1 || fail "first run: $(tail -3 first.log)"
last_before=$(tail -1 "$R/r/metrics.jsonl")
sum=$(md5sum < "$R/r/first.vlrec")

"$VOLLEY" up --runs "$R" --name r --resume --max-steps 4e4 > resume.log 2>&1 ||
    fail "up --name r --resume: $(tail -3 resume.log)"
grep -q "^volley up: resuming r: max-steps = 4e4 (.*config.ini was 20000)$" resume.log ||
    fail "the overridden key was not printed: $(head -3 resume.log)"
grep -qE "resuming r: (lr|seed|hidden) " resume.log && fail "a key not given was reported overridden: $(head -5 resume.log)"
for kv in "lr = 0.003" "seed = 7" "hidden = 32" "max-steps = 40000"; do
    grep -qx "$kv" "$R/r/config-2.ini" || fail "the resumed run lost '$kv': $(grep -E '^(lr|seed|hidden|max-steps) ' "$R/r/config-2.ini")"
done
grep -q "resumed from" "$R/r/logs/learner-2.log" || fail "the learner did not resume: $(tail -3 "$R/r/logs/learner-2.log")"
[ "$(md5sum < "$R/r/first.vlrec")" = "$sum" ] || fail "the first run's recording was changed"
pass "a resumed run keeps lr, seed and hidden from its config.ini; --max-steps overrides, printed"

for flag in "--hidden 64" "--env catch" "--hid 64" "--hidden=64"; do
    key=${flag%%[ =]*}; key=${key#--}; [ "$key" = hid ] && key=hidden # getopt's abbreviation
    "$VOLLEY" up --runs "$R" --name r --resume $flag > bad.txt 2>&1
    rc=$?
    [ $rc -eq 2 ] && [ "$(wc -l < bad.txt)" -eq 1 ] && grep -q "^volley up: --resume: $key: run r was trained with $key = " bad.txt ||
        fail "resume with $flag: exit $rc: $(cat bad.txt)"
    pass "$(cat bad.txt)"
done
[ ! -e "$R/r/config-3.ini" ] || fail "a refused resume wrote a config"

# Metrics: the resumed learner's rows go on from the first run's last one.
python3 - "$R/r/metrics.jsonl" "$last_before" <<'PY' || fail "resumed metrics do not continue"
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
before = json.loads(sys.argv[2])
i = next(k for k, r in enumerate(rows) if r == before) + 1
assert i < len(rows), "no row after the resume"
after = rows[i:]
first = after[0]
assert first["uptime_s"] >= before["uptime_s"], (before["uptime_s"], first["uptime_s"])
assert first["env_steps"] >= before["env_steps"] * 0.5 and first["env_steps"] > 0, first["env_steps"]
for r in after:
    if r["loss_v"] == 0 and r["entropy"] == 0:
        raise AssertionError(f"a row with zero losses never measured: {r}")
    assert r["steps_per_s"] != 0 or r is not first, r
ups = [r["uptime_s"] for r in rows]
assert ups == sorted(ups), "uptime went back"
print(f"ok   metrics continue: uptime {before['uptime_s']:.2f} -> {first['uptime_s']:.2f} s, "
      f"env steps {before['env_steps']} -> {first['env_steps']}")
PY
echo "6 passed, 0 failed"

#!/usr/bin/env bash
# End-to-end env steps/s of a recurrent model beside the default MLP on the
# same env and box, in one run: `volley up` with each model for S seconds
# (--until seconds), the rate taken from the learner's metrics.jsonl between
# the first report past W seconds of uptime (start-up excluded) and the last.
# Each pair runs R times; the best of each model and the ratio of the bests
# are printed, with the box's load average before each run.
# Usage: bash bench/lstm_e2e_bench.sh [BUILD_DIR] [ENV] [SECONDS] [REPEATS] [LSTM_SPEC]
set -u
B=${1:-build}; E=${2:-cartpole}; S=${3:-15}; R=${4:-3}; M=${5:-linear(128) lstm(128)}
W=4
V=$(cd "$B" && pwd)/volley
D=$(mktemp -d)
trap 'rm -rf "$D"' EXIT
rate() { # steps/s in metrics.jsonl between the first report past W s and the last
    python3 - "$1" "$W" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
rows = [r for r in rows if r["uptime_s"] >= float(sys.argv[2])]
a, b = rows[0], rows[-1]
print("%.0f" % ((b["env_steps"] - a["env_steps"]) / (b["uptime_s"] - a["uptime_s"])))
PY
}
run() { # model name -> steps/s
    local name=$2
    "$V" up --env "$E" --model "$1" --until seconds --max-seconds "$S" --runs "$D" \
        --name "$name" > "$D/$name.out" 2>&1 || { echo "run $name failed:" >&2; tail -3 "$D/$name.out" >&2; echo 0; return; }
    rate "$D/$name/metrics.jsonl"
}
best_mlp=0; best_rnn=0
for i in $(seq "$R"); do
    load=$(cut -d' ' -f1 /proc/loadavg)
    mlp=$(run "mlp" "mlp-$i")
    rnn=$(run "$M" "rnn-$i")
    echo "run $i (load $load): mlp $mlp steps/s, '$M' $rnn steps/s, ratio $(python3 -c "print('%.2f' % ($rnn / max($mlp, 1)))")"
    [ "$mlp" -gt "$best_mlp" ] && best_mlp=$mlp
    [ "$rnn" -gt "$best_rnn" ] && best_rnn=$rnn
done
echo "best of $R on $E, ${S} s each: mlp $best_mlp steps/s, '$M' $best_rnn steps/s, ratio $(python3 -c "print('%.2f' % ($best_rnn / max($best_mlp, 1)))")"

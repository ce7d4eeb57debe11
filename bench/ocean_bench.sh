#!/usr/bin/env bash
# PufferLib's pong and breakout through include/volley/ocean.h, trained by `volley up` (2 actors
# x 8 envs, this box): env steps per second and the mean score (env/score, the learner's last
# 100 episodes) at 10, 30 and 60 s, for the default MLP and for "linear(128) lstm(128)" at the
# learner's defaults (4 epochs a batch), at one epoch (--epochs 1, PufferLib's own
# update_epochs: each sample trained on once, as its trainer does) and at one epoch of one
# minibatch holding the whole batch (--minibatch 1024: 2 actors x 8 envs x 64 steps), whose
# single pass takes the loss through the forward pass that recomputed the targets, one table.
#   usage: bench/ocean_bench.sh [path/to/volley] [SECONDS]   (default build/volley, 60)
# The plugins are built as tests/ocean_test.sh builds them (the sdist cached in ~/.cache/volley).
# Each run has explicit budgets: --max-seconds SECONDS and a --max-steps it does not reach.
set -u
. "$(dirname "$0")/../tests/lib.sh" "${1:-build/volley}"
. "$(dirname "$0")/../tests/ocean_lib.sh"
SECONDS_MAX=${2:-60}
ocean_fetch
ocean_install
ocean_build pong
ocean_build breakout
cd "$TMP" || exit 1

# Prints "steps/s score" of the metrics row nearest after uptime $2 in file $1.
at() {
    awk -v t="$2" '{
        match($0, /"uptime_s":[0-9.]+/); up = substr($0, RSTART + 11, RLENGTH - 11) + 0
        if (up < t || done) next
        match($0, /"env_steps":[0-9]+/); steps = substr($0, RSTART + 12, RLENGTH - 12) + 0
        score = "-"; if (match($0, /"env\/score":[-0-9.e]+/)) score = sprintf("%.1f", substr($0, RSTART + 12, RLENGTH - 12))
        printf "%9.0f %6s", steps / up, score; done = 1
    } END { if (!done) printf "%9s %6s", "-", "-" }' "$1"
}
printf '%-9s %-22s | %-16s | %-16s | %-16s\n' env model "10 s: steps/s score" "30 s" "60 s"
for env in pong breakout; do
    for row in "mlp (default)|" "linear(128) lstm(128)|--model|linear(128) lstm(128)" \
        "  the same, --epochs 1|--model|linear(128) lstm(128)|--epochs|1" \
        "  and --minibatch 1024|--model|linear(128) lstm(128)|--epochs|1|--minibatch|1024"; do
        IFS='|' read -r -a extra <<< "$row"
        label=${extra[0]}
        rm -rf runs
        args=(--env ./lib$env.so --port 0 --max-seconds "$SECONDS_MAX" --max-steps 100000000000
            "${extra[@]:1}")
        "$VOLLEY" up "${args[@]}" > up.log 2> up.err
        m=$(ls runs/*/metrics.jsonl 2>/dev/null | head -1)
        [ -n "$m" ] || { echo "$env $label: no metrics.jsonl: $(tail -2 up.err)"; continue; }
        printf '%-9s %-22s | %s | %s | %s\n' $env "$label" "$(at "$m" 10)" \
            "$(at "$m" 30)" "$(at "$m" $((SECONDS_MAX - 1)))"
    done
done
echo "load: $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) cores"

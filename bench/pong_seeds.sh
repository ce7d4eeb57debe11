#!/usr/bin/env bash
# PufferLib's pong through include/volley/ocean.h, trained by `volley up --env ./libpong.so
# --seed S` with no --config (the default MLP), one run per seed, one after another: for each
# seed the seconds and env steps at which the mean score (env/score in metrics.jsonl, the
# learner's last 100 episodes) first passed the target, the score at the end of the run, and
# the run's env steps per second; then how many seeds passed.
#   usage: bench/pong_seeds.sh [path/to/volley] [SEEDS] [SECONDS] [-- more `volley up` flags]
#   (default build/volley, 8 seeds, 60 s; TARGET=15 and MAX_STEPS=1e11 from the environment)
# Each run has explicit budgets: --max-seconds SECONDS and --max-steps MAX_STEPS (set it, e.g.
# MAX_STEPS=1e7, to compare seeds by env steps on a busy box: the run then ends at whichever
# comes first). The plugin is built as tests/ocean_test.sh builds it (the sdist cached in
# ~/.cache/volley); exits 1 when a seed missed the target.
set -u
. "$(dirname "$0")/../tests/lib.sh" "${1:-build/volley}"
. "$(dirname "$0")/../tests/ocean_lib.sh"
N=${2:-8}
SECONDS_MAX=${3:-60}
shift $(($# < 3 ? $# : 3))
[ "${1:-}" = "--" ] && shift
TARGET=${TARGET:-15}
MAX_STEPS=${MAX_STEPS:-1e11}
ocean_fetch
ocean_install
ocean_build pong
cd "$TMP" || exit 1

# Prints, for metrics file $1 and target $2: the seconds and env steps of the first row whose
# score is above the target ("- -" if none), the lowest score of the rows after it, and the
# last row's env steps, steps/s and score.
summary() {
    awk -v t="$2" '
        function field(name,   re) {
            re = "\"" name "\":[-0-9.e]+"
            return match($0, re) ? substr($0, RSTART + length(name) + 3, RLENGTH - length(name) - 3) : ""
        }
        {
            up = field("uptime_s") + 0; steps = field("env_steps") + 0; score = field("env/score")
            if (score == "") next
            if (hit && score + 0 < low) low = score + 0
            if (!hit && score + 0 > t) { hit = 1; hit_up = up; hit_steps = steps; low = score + 0 }
            end_up = up; end_steps = steps; end_score = score + 0
        }
        END {
            if (hit) printf "%.1f %d %.2f", hit_up, hit_steps, low; else printf "- - -"
            printf " %d %.0f %.2f", end_steps, (end_up > 0 ? end_steps / end_up : 0), end_score
        }' "$1"
}

printf '%-4s  %-14s %-12s %-13s  %-10s %-8s %s\n' seed "s to > $TARGET" "steps to it" \
    "lowest after" "end steps" steps/s "end score"
passed=0
for s in $(seq "$N"); do
    "$VOLLEY" up --env ./libpong.so --port 0 --seed "$s" --until seconds --max-seconds "$SECONDS_MAX" \
        --max-steps "$MAX_STEPS" --name pong-s$s "$@" > up-s$s.log 2> up-s$s.err
    m=runs/pong-s$s/metrics.jsonl
    [ -s "$m" ] || { echo "$s     no metrics.jsonl: $(tail -2 up-s$s.err)"; continue; }
    read -r secs steps low end_steps sps score <<< "$(summary "$m" "$TARGET")"
    [ "$secs" != - ] && passed=$((passed + 1))
    printf '%-4s  %-14s %-12s %-13s  %-10s %-8s %s\n' "$s" "$secs" "$steps" "$low" "$end_steps" \
        "$sps" "$score"
done
echo "$passed of $N seeds passed a mean score of $TARGET within $SECONDS_MAX s (MAX_STEPS=$MAX_STEPS)"
echo "load: $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) cores"
[ "$passed" -eq "$N" ]

#!/usr/bin/env bash
# Time to solve Pendulum-v1 with `volley up --env pendulum` (a mean of the last
# 100 episodes >= -250) for N seeds from a fresh start each, the greedy score of
# each run's policy (`volley eval RUN --greedy`, 100 episodes), and their
# medians, beside CartPole's time to solve on the same box in the same run and
# RL Baselines3 Zoo's tuned PPO score on Pendulum-v1 (-172 +- 104).
# Usage: bash bench/pendulum_solve.sh [BUILD_DIR] [SEEDS]
set -u
B=${1:-build}; N=${2:-5}
V=$(cd "$B" && pwd)/volley
D=$(mktemp -d)
trap 'rm -rf "$D"' EXIT
cd "$D"
median() { sort -g | awk '{a[NR] = $1} END {print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2}'; }
for s in $(seq "$N"); do
    line=$("$V" up --env pendulum --name p$s --seed "$s" 2>&1 | grep -E '^(solved|done|volley up)' | tail -1)
    score=$("$V" eval runs/p$s --greedy --episodes 100 2>&1 | awk '/^return/ {print $2}')
    secs=$(echo "$line" | awk '/^solved/ {print $5}')
    steps=$(echo "$line" | awk '/^solved/ {print $2}')
    echo "pendulum seed $s: ${line:-no result}; greedy return ${score:-?}"
    echo "${secs:-inf}" >> secs; echo "${steps:-inf}" >> steps; echo "${score:--inf}" >> scores
done
c=$("$V" up --env cartpole --name c 2>&1 | awk '/^solved/ {print $5}')
echo "pendulum: median $(median < secs) s and $(median < steps) steps to solve over $N seeds;" \
     "median greedy return $(median < scores) (target >= -200; RL Zoo's PPO: -172 +- 104)"
echo "cartpole on the same box, same run: ${c:-?} s to solve"

#!/usr/bin/env bash
# The broker's memory while its learner is stopped under full actor load:
# broker + learner + 3 actors flooding (--max-ahead 0), the learner SIGSTOPped
# for S seconds, the broker's RSS sampled every 0.1 s and printed beside its
# configured queue bound; then SIGCONT, and whether training went on.
# Usage: bash bench/stall_bench.sh [BUILD_DIR] [SECONDS] [QUEUE_BYTES]
set -u
B=${1:-build}; S=${2:-30}; Q=${3:-67108864}
V=$(cd "$B" && pwd)/volley
D=$(mktemp -d)
P=$((20000 + (RANDOM % 2500) * 5))
PIDS=()
trap 'kill -CONT "${PIDS[@]}" 2>/dev/null; kill "${PIDS[@]}" 2>/dev/null; wait 2>/dev/null; rm -rf "$D"' EXIT
"$V" broker --port $P --bind 127.0.0.1 --queue-bytes $Q --log-every 0 > "$D/b.log" 2>&1 & BROKER=$!
"$V" learner --env cartpole --broker 127.0.0.1:$P --verbose > "$D/l.log" 2>&1 & LEARNER=$!
PIDS+=($BROKER $LEARNER)
for i in 1 2 3; do
    "$V" actor --broker 127.0.0.1:$P --id $i --envs 16 --max-ahead 0 --quiet > "$D/a$i.log" 2>&1 &
    PIDS+=($!)
done
version() { grep -oE "version=[0-9]+" "$D/l.log" | tail -1 | cut -d= -f2; }
rss() { awk '/^VmRSS:/ {print $2}' /proc/$BROKER/status; }
sleep 4
r0=$(rss); v0=$(version)
kill -STOP $LEARNER
peak=$r0
for _ in $(seq $((S * 10))); do r=$(rss); [ "$r" -gt "$peak" ] && peak=$r; sleep 0.1; done
kill -CONT $LEARNER
sleep 3
echo "learner stopped ${S} s under 3 flooding actors; broker queue bound $((Q / 1048576)) MiB"
echo "broker RSS: ${r0} kB before, peak ${peak} kB while stopped ($(( (peak - r0) / 1024 )) MB over), $(rss) kB after"
echo "learner version: ${v0} before the stop, $(version) 3 s after SIGCONT"
"$V" ctl --broker 127.0.0.1:$P status | head -1

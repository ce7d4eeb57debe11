#!/usr/bin/env bash
# Connection floods against one broker, each from its own loopback address, and what they
# cost it: VmRSS at start, at peak and 10 s after the close, seconds until RSS is back within
# 32 MB of its start, and the slowest `volley ctl status` meanwhile.
#   usage: bench/conn_bench.sh [path/to/volley] [N]   (N connections, default 500)
# Cases: N XSUB to the weights-out port (base+3), each 60 subscriptions of 500 random bytes;
# N idle PUSH to the segments port (base). Run it on an older build for "before" figures.
set -u
VOLLEY=${1:-build/volley}
N=${2:-500}
FLOOD="/usr/bin/python3 $(cd "$(dirname "$0")/.." && pwd)/tests/conn_flood.py"
PORT=$((21000 + RANDOM % 2000 * 5))
LOG=$(mktemp)
"$VOLLEY" broker --port $PORT --bind 127.0.0.1 --log-every 0 > "$LOG" 2>&1 &
BROKER=$!
trap 'kill $BROKER 2>/dev/null; wait 2>/dev/null; rm -f "$LOG"' EXIT
sleep 1
rss_kb() { awk '/^VmRSS/ {print $2}' /proc/$BROKER/status; }
status_ms() {
    local t0=$(date +%s%N)
    timeout 20 "$VOLLEY" ctl --broker 127.0.0.1:$PORT status > /dev/null 2>&1 || { echo 99999; return; }
    echo $((($(date +%s%N) - t0) / 1000000))
}

# case name, then the flooder's arguments.
run_case() {
    local name=$1 rss0 peak r ms slowest=0 back=-1 t_close t
    shift
    rss0=$(rss_kb); peak=$rss0
    $FLOOD "$@" > /dev/null 2>&1 &
    local flood=$!
    while kill -0 $flood 2>/dev/null; do
        r=$(rss_kb); [ "$r" -gt "$peak" ] && peak=$r
        ms=$(status_ms); [ "$ms" -gt "$slowest" ] && slowest=$ms
        sleep 0.2
    done
    t_close=$(date +%s%N)
    while :; do
        r=$(rss_kb); [ "$r" -gt "$peak" ] && peak=$r
        t=$((($(date +%s%N) - t_close) / 1000000))
        [ $back -lt 0 ] && [ $((r - rss0)) -le $((32 * 1024)) ] && back=$t
        [ $t -ge 10000 ] && break
        ms=$(status_ms); [ "$ms" -gt "$slowest" ] && slowest=$ms
        sleep 0.25
    done
    printf "%-34s start %6d kB  peak %7d kB (+%6d)  +10s %7d kB (+%6d)  back within 32 MB %s  slowest status %5d ms\n" \
        "$name" "$rss0" "$peak" $((peak - rss0)) "$r" $((r - rss0)) \
        "$([ $back -ge 0 ] && echo "after $((back / 1000)).$((back % 1000 / 100)) s" || echo "not in 10 s")" "$slowest"
}

echo "volley broker: $("$VOLLEY" --version 2>/dev/null | head -1) ($VOLLEY)"
run_case "$N XSUB x 60 subs of 500 B" 127.0.0.1:$((PORT + 3)) XSUB "$N" --subs 60 --size 500 --hold 5
run_case "$N idle PUSH" 127.0.0.1:$PORT PUSH "$N" --hold 5

#!/usr/bin/env bash
# Connection floods against one broker, each from its own loopback address, and what they
# cost it: VmRSS at start, at peak and 10 s after the close, seconds until RSS is back within
# 32 MB of its start, and the slowest `volley ctl status` meanwhile.
#   usage: bench/conn_bench.sh [path/to/volley] [N]   (N connections, default 500)
# Cases: N XSUB to the weights-out port (base+3), each 60 subscriptions of 500 random bytes;
# N idle PUSH to the segments port (base). Run it on an older build for "before" figures.
set -- "${1:-build/volley}" "${2:-500}"
. "$(dirname "$0")/../tests/lib.sh" # watch_flood, rss_kb, status_ms, free_port; cleanup on exit
N=$2
FLOOD="/usr/bin/python3 $(cd "$(dirname "$0")/.." && pwd)/tests/conn_flood.py"
PORT=$(free_port)
STATUS_WAIT=20 # an unbounded broker may stall its answers for many seconds
"$VOLLEY" broker --port $PORT --bind 127.0.0.1 --log-every 0 > "$TMP/broker.log" 2>&1 &
BROKER=$!
PIDS+=($BROKER)
sleep 1

# case name, then the flooder's arguments.
run_case() {
    local name=$1 rss0 peak after slowest back
    shift
    read -r rss0 peak after slowest back < <(watch_flood $FLOOD "$@")
    printf "%-34s start %6d kB  peak %7d kB (+%6d)  +10s %7d kB (+%6d)  back within 32 MB %s  slowest status %5d ms\n" \
        "$name" "$rss0" "$peak" $((peak - rss0)) "$after" $((after - rss0)) \
        "$([ $back -ge 0 ] && echo "after $((back / 1000)).$((back % 1000 / 100)) s" || echo "not in 10 s")" "$slowest"
}

echo "volley broker: $("$VOLLEY" --version 2>/dev/null | head -1) ($VOLLEY)"
run_case "$N XSUB x 60 subs of 500 B" 127.0.0.1:$((PORT + 3)) XSUB "$N" --subs 60 --size 500 --hold 5
run_case "$N idle PUSH" 127.0.0.1:$PORT PUSH "$N" --hold 5

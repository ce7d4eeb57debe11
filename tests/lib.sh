# Shared helpers of volley's integration tests (sourced, not run).
# Each test gets the volley executable as $1, runs real processes over
# loopback sockets and kills everything it started on exit.
set -u
VOLLEY=${1:?usage: $0 path/to/volley}
VOLLEY=$(cd "$(dirname "$VOLLEY")" && pwd)/$(basename "$VOLLEY") # tests may cd
TMP=$(mktemp -d)
PIDS=()
cleanup() {
    for p in "${PIDS[@]}"; do kill -TERM "$p" 2>/dev/null; kill -CONT "$p" 2>/dev/null; done
    sleep 0.3
    for p in "${PIDS[@]}"; do kill -KILL "$p" 2>/dev/null; done
    wait 2>/dev/null
    [ -n "${KEEP_TMP:-}" ] || rm -rf "$TMP"
}
trap cleanup EXIT
fail() { echo "FAIL: $*"; for f in "$TMP"/*.log; do [ -f "$f" ] && { echo "--- $f"; tail -20 "$f"; }; done; exit 1; }
pass() { echo "ok   $*"; }
# A base port with the four ports after it free, away from the default 7600.
free_port() {
    local p
    for _ in $(seq 50); do
        # below the kernel's ephemeral range (32768-60999): no outgoing connection takes it
        p=$((20000 + (RANDOM % 2500) * 5))
        if ! (ss -ltn 2>/dev/null | grep -qE ":($p|$((p+1))|$((p+2))|$((p+3))|$((p+4))) "); then echo $p; return; fi
    done
    echo 27600
}
# Waits up to $2 seconds for file $1 to contain pattern $3.
wait_for() {
    local file=$1 secs=$2 pattern=$3
    for _ in $(seq $((secs * 10))); do
        grep -qE "$pattern" "$file" 2>/dev/null && return 0
        sleep 0.1
    done
    return 1
}
# Checks that the broker's log ($TMP/broker.log) counted at least $3 of kind $1 dropped for
# reason $2 (a fixed string), and says how many.
expect_dropped() {
    local n
    n=$(grep -F "$1: $2" "$TMP/broker.log" | sed -n "s/.*dropped \([0-9]*\) $1: .*/\1/p" | head -1)
    [ -n "$n" ] && [ "$n" -ge "$3" ] || fail "broker did not count $1 refused for '$2' (got '${n:-none}', want >= $3)"
    echo "     counted $n $1: $2"
}
# Starts a broker on $PORT (bound to 127.0.0.1, with any further broker flags given), a
# cartpole learner logging every version to $TMP/learner.log and one actor of 4 envs; sets
# BROKER to the broker's pid. rss_kb prints the broker's resident memory in kB, and
# learner_version the last weights version the learner logged.
training_broker() {
    "$VOLLEY" broker --port "$PORT" --bind 127.0.0.1 "$@" > "$TMP/broker.log" 2>&1 &
    BROKER=$!
    PIDS+=($BROKER)
    "$VOLLEY" learner --env cartpole --broker 127.0.0.1:$PORT --verbose > "$TMP/learner.log" 2>&1 &
    PIDS+=($!)
    "$VOLLEY" actor --broker 127.0.0.1:$PORT --envs 4 --quiet > "$TMP/actor.log" 2>&1 &
    PIDS+=($!)
}
rss_kb() { awk '/^VmRSS/ {print $2}' /proc/$BROKER/status; }
learner_version() { grep -oE "version=[0-9]+" "$TMP/learner.log" | tail -1 | cut -d= -f2; }
# Prints how many ms `volley ctl status` takes to answer the broker on $PORT, asking again each
# time a ctl gives up unanswered (it waits 3 s), or 99999 when none has answered in
# ${STATUS_WAIT:-30} s: a bound far above the answer's time, which is reported, not judged.
status_ms() {
    local t0 wait=${STATUS_WAIT:-30}
    t0=$(date +%s%N)
    while :; do
        timeout "$wait" "$VOLLEY" ctl --broker 127.0.0.1:$PORT status > /dev/null 2>&1 &&
            { echo $((($(date +%s%N) - t0) / 1000000)); return; }
        [ $((($(date +%s%N) - t0) / 1000000000)) -lt "$wait" ] || { echo 99999; return; }
        sleep 0.1
    done
}
# Runs a flooder ($@, its output in $TMP/flood.out) and watches the broker meanwhile and for
# 10 s after it ends: prints "START PEAK AFTER SLOWEST BACK", the broker's RSS in kB at the
# start, at its peak and 10 s after the close, the slowest status answer in ms, and the ms
# after the close when RSS was back within 32 MB of its start (-1: not within the 10 s).
watch_flood() {
    local rss0 peak r ms slowest=0 back=-1 t_close t flood
    rss0=$(rss_kb)
    peak=$rss0
    "$@" > "$TMP/flood.out" 2>&1 &
    flood=$!
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
    echo "$rss0 $peak $r $slowest $back"
}
# Deletes the namespaces TAG<pid>-NAME (NAME matching the regex $2) that a killed run of a test
# left (SIGKILL skips its trap), with every process in them, where that run's pid is gone.
netns_sweep() {
    local tag=$1 names=$2 n owner p
    for n in $(ip netns list 2>/dev/null | awk '{print $1}' | grep -E "^$tag[0-9]+-($names)\$"); do
        owner=${n#"$tag"}; owner=${owner%%-*}
        kill -0 "$owner" 2>/dev/null && continue
        for p in $(ip netns pids "$n" 2>/dev/null); do kill -KILL "$p" 2>/dev/null; done
        ip netns del "$n" 2>/dev/null
    done
}
# Builds hosts on one machine from network namespaces: $NS-$1 holds a bridge br0 (with the
# address $2 on it unless empty), and each further name h a host $NS-h whose eth0, a veth to the
# bridge, is $NET.i (i counting the hosts from 1). Says SKIP and exits 0 where namespaces, veth
# links or bridges cannot be made.
netns_build() {
    local br=$1 addr=$2 h i=0
    shift 2
    if ! ip netns add "$NS-$br" 2> "$TMP/netns.err"; then
        echo "SKIP: cannot create network namespaces (need root and CAP_NET_ADMIN): $(cat "$TMP/netns.err")"
        exit 0
    fi
    s_net ip -n "$NS-$br" link set lo up
    s_net ip -n "$NS-$br" link add br0 type bridge
    [ -z "$addr" ] || s_net ip -n "$NS-$br" addr add "$addr/24" dev br0
    s_net ip -n "$NS-$br" link set br0 up
    for h in "$@"; do
        i=$((i + 1))
        s_net ip netns add "$NS-$h"
        s_net ip -n "$NS-$h" link set lo up
        s_net ip link add eth0 netns "$NS-$h" type veth peer name "v$h" netns "$NS-$br"
        s_net ip -n "$NS-$h" addr add "$NET.$i/24" dev eth0
        s_net ip -n "$NS-$h" link set eth0 up
        s_net ip -n "$NS-$br" link set "v$h" master br0
        s_net ip -n "$NS-$br" link set "v$h" up
    done
}
s_net() { # a command building netns_build's network; without veth or bridges, a skip
    "$@" 2> "$TMP/net.err" && return
    echo "SKIP: cannot create network namespaces with veth links and a bridge: '$*': $(cat "$TMP/net.err")"
    exit 0
}

# netns_teardown: the EXIT trap of a test on netns_build's hosts ($NS-br and $NS-HOST for each of
# $HOSTS): cleanup kills the processes in PIDS first (a namespace lives while a process is in it),
# then any left in these namespaces, which only this run started, and deletes them.
netns_teardown() {
    cleanup
    for n in br $HOSTS; do
        for p in $(ip netns pids "$NS-$n" 2>/dev/null); do kill -KILL "$p" 2>/dev/null; done
        ip netns del "$NS-$n" 2>/dev/null
    done
}

# doc_block PAGE WORD: the text of PAGE's ```sh WORD block (docs/pixels.md's ```sh learner-host),
# which readme_test leaves to the test that runs it on its hosts; where the page has none, says
# so and returns 1 (`b=$(doc_block P W) || fail "$b"`).
doc_block() {
    local text
    text=$(awk -v open="\`\`\`sh $2" '$0 == open { on = 1; next } on && /^```/ { exit } on' "$1")
    [ -n "$text" ] || { echo "$1 has no \`\`\`sh $2 block"; return 1; }
    printf '%s\n' "$text"
}

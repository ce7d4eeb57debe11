#!/usr/bin/env bash
# Four machines as network namespaces: h1 runs the broker and the learner,
# h2, h3 and h4 an actor each, all joined by veth pairs to a bridge in a fifth
# namespace, so every segment and every weights message crosses a real TCP
# connection between hosts. Training progresses across them; then host 3's
# link is cut twice, once on each side of ZeroMQ's heartbeat timeout (4 s,
# common/vl_sock.c), and the broker's counters account for what happened:
#
# - a 1 s cut: the TCP connection survives (the kernel retransmits when the
#   link is back; no heartbeat expires), actor 3's segments stop reaching the
#   broker for the cut and then all arrive: same connection, seq_gaps=0.
# - a 7 s cut: the broker reports actor 3 not alive after 5 s of silence;
#   heartbeats drop the connection on both ends; after the link is back the
#   actor reconnects (a new TCP connection) and resumes, alive again. What
#   its ZeroMQ queue held is delivered; what was already written into the
#   kernel's socket buffer, unacknowledged, died with the old connection:
#   the broker counts those as seq_gaps > 0 for actor 3 (restarts stays 0:
#   the same process, its numbering went on). They never reached the broker,
#   so received = routed + dropped + queued still holds (adds_up=1).
#
# A cut of about 4 s is deliberately avoided: it races the heartbeat and the
# outcome varies from run to run (0, 1 or some 50 segments lost).
#
# Needs root (CAP_NET_ADMIN) for `ip netns`; skips (exit 0) without it. The
# root namespace's interfaces are not touched: the veth pairs are created
# straight into their namespaces, so the subnet and the port cannot collide
# with anything outside this run.
. "$(dirname "$0")/lib.sh"
NS=vlmh$$ # namespaces $NS-br (the bridge), $NS-h1 .. $NS-h4
NET=10.77.0
PORT=7600
B=$NET.1:$PORT
HOSTS="h1 h2 h3 h4"

trap netns_teardown EXIT

netns_sweep vlmh 'br|h[1-4]' # namespaces a killed run left

netns_build br '' $HOSTS
in_ns() { local h=$1; shift; ip netns exec "$NS-$h" "$@"; }

# `ip netns exec` execs the command, so $! is the volley process itself (not
# so through a shell function such as in_ns: $! would be a subshell).
ip netns exec "$NS-h1" "$VOLLEY" broker --port $PORT --bind $NET.1 > "$TMP/broker.log" 2>&1 &
PIDS+=($!)
wait_for "$TMP/broker.log" 5 "listening on" || fail "the broker does not listen on $NET.1"
ip netns exec "$NS-h1" "$VOLLEY" learner --env cartpole --broker $B --verbose > "$TMP/learner.log" 2>&1 &
PIDS+=($!)
for a in 2 3 4; do
    ip netns exec "$NS-h$a" "$VOLLEY" actor --broker $B --id $a --envs 8 --quiet > "$TMP/actor-$a.log" 2>&1 &
    PIDS+=($!)
done

# The broker's status (key=value lines) in $TMP/status.txt; av ID KEY: a field
# of actor ID's row; bv KEY: a field of the broker's line.
status() { in_ns h1 "$VOLLEY" ctl --broker $B status > "$TMP/status.txt" 2> "$TMP/status.err"; }
av() { sed -n "s/.* kind=actor id=$1 .* $2=\([^ ]*\).*/\1/p" "$TMP/status.txt" | head -1; }
bv() { sed -n "s/.* kind=broker .* $1=\([^ ]*\).*/\1/p" "$TMP/status.txt" | head -1; }
version() { sed -n 's/.* version=\([0-9]*\) .*/\1/p' "$TMP/learner.log" | tail -1; }
# The local address:port of host 3's established connection to the segments port.
conn3() { in_ns h3 ss -Htn state established "( dport = :$PORT )" | awk '{print $3}' | sort | head -1; }
now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }'; }
all_alive() {
    status || return 1
    for a in 2 3 4; do
        [ "$(av $a alive)" = 1 ] && [ "$(av $a segments)" -gt 0 ] 2>/dev/null || return 1
    done
}

wait_for "$TMP/learner.log" 20 "version=[1-9][0-9]" || fail "training did not start across the hosts"
for _ in $(seq 50); do all_alive && break; sleep 0.2; done
all_alive || fail "actors 2, 3, 4 not all alive with segments: $(cat "$TMP/status.txt" "$TMP/status.err")"
v1=$(version)
sleep 1
status || fail "no status"
v2=$(version)
[ "$v2" -gt "$v1" ] || fail "the learner's version did not grow: $v1 -> $v2"
c1=$(conn3)
[ -n "$c1" ] && [ "${c1%:*}" = "$NET.3" ] || fail "host 3 has no TCP connection from $NET.3 to $B: '$c1'"
pass "training across 4 hosts over TCP: version $v1 -> $v2; segments from actors 2, 3, 4: $(av 2 segments), $(av 3 segments), $(av 4 segments)"

# --- a 1 s cut: the connection survives, nothing is lost.
ip -n "$NS-h3" link set eth0 down || fail "cannot cut host 3"
sleep 0.3
status || fail "no status during the cut"
s3a=$(av 3 segments) s2a=$(av 2 segments)
sleep 0.7
status || fail "no status during the cut"
s3b=$(av 3 segments) s2b=$(av 2 segments)
ip -n "$NS-h3" link set eth0 up || fail "cannot restore host 3"
t_up=$(now)
[ "$s3b" -eq "$s3a" ] || fail "actor 3's segments grew while its link was down: $s3a -> $s3b"
[ "$s2b" -gt "$s2a" ] || fail "actor 2's segments stopped while host 3 was cut: $s2a -> $s2b"
for _ in $(seq 100); do status && [ "$(av 3 segments)" -gt "$s3b" ] && break; sleep 0.1; done
[ "$(av 3 segments)" -gt "$s3b" ] || fail "actor 3 did not resume after a 1 s cut: $(cat "$TMP/status.txt")"
resumed=$(since "$t_up")
sleep 1
status || fail "no status"
[ "$(av 3 seq_gaps)" = 0 ] || fail "a 1 s cut lost segments: seq_gaps=$(av 3 seq_gaps)"
[ "$(av 3 restarts)" = 0 ] || fail "actor 3 counted as restarted: $(av 3 restarts)"
[ "$(av 3 alive)" = 1 ] || fail "actor 3 not alive after a 1 s cut"
[ "$(bv adds_up)" = 1 ] || fail "counters do not add up: $(cat "$TMP/status.txt")"
c2=$(conn3)
[ "$c2" = "$c1" ] || fail "the connection was replaced by a 1 s cut: $c1 -> $c2"
grep -q "actor 3 .* went silent" "$TMP/broker.log" && fail "actor 3 reported silent after a 1 s cut"
pass "a 1 s cut: actor 3 held at $s3a segments (actor 2 went on), resumed ${resumed} s after, same connection $c1, seq_gaps=0, adds_up=1"

# --- a 7 s cut: reported silent, the connection dropped, a reconnect, the loss counted.
status || fail "no status"
v3=$(version) g3=$(av 3 seq_gaps)
ip -n "$NS-h3" link set eth0 down || fail "cannot cut host 3"
t_cut=$(now)
sleep 0.3
status || fail "no status during the cut"
s3a=$(av 3 segments) s4a=$(av 4 segments)
silent_at=
while [ "$(since "$t_cut" | tr -d .)" -lt 70 ]; do
    if [ -z "$silent_at" ] && status && [ "$(av 3 alive)" = 0 ]; then
        silent_at=$(since "$t_cut")
        s3b=$(av 3 segments) s4b=$(av 4 segments)
    fi
    sleep 0.25
done
ip -n "$NS-h3" link set eth0 up || fail "cannot restore host 3"
t_up=$(now)
[ -n "$silent_at" ] || fail "actor 3 still alive 7 s into the cut: $(cat "$TMP/status.txt")"
[ "$s3b" -eq "$s3a" ] || fail "actor 3's segments grew while its link was down: $s3a -> $s3b"
[ "$s4b" -gt "$s4a" ] || fail "actor 4's segments stopped while host 3 was cut: $s4a -> $s4b"
grep -q "actor 3 (policy 'default') went silent" "$TMP/broker.log" || fail "the broker did not log actor 3 silent"
for _ in $(seq 150); do
    status && [ "$(av 3 segments)" -gt "$s3b" ] && [ "$(av 3 alive)" = 1 ] && break
    sleep 0.1
done
[ "$(av 3 segments)" -gt "$s3b" ] && [ "$(av 3 alive)" = 1 ] ||
    fail "actor 3 did not come back within 15 s of the link: $(cat "$TMP/status.txt")"
back=$(since "$t_up")
s3c=$(av 3 segments)
sleep 1.5
status || fail "no status"
s3d=$(av 3 segments) gaps=$(av 3 seq_gaps)
[ "$s3d" -gt "$s3c" ] || fail "actor 3's segments not growing after its return: $s3c -> $s3d"
[ "$gaps" -gt "$g3" ] || fail "a 7 s cut (past the 4 s heartbeat timeout) lost no segment: seq_gaps $g3 -> $gaps"
[ "$(av 3 restarts)" = 0 ] || fail "actor 3 counted as restarted: $(av 3 restarts)"
[ "$(bv adds_up)" = 1 ] || fail "counters do not add up: $(cat "$TMP/status.txt")"
grep -q "actor 3 (policy 'default') is back" "$TMP/broker.log" || fail "the broker did not log actor 3 back"
c3=$(conn3)
[ -n "$c3" ] && [ "$c3" != "$c1" ] || fail "no new connection from host 3 after a 7 s cut: $c1 -> '$c3'"
v4=$(version)
[ "$v4" -gt "$v3" ] || fail "the learner's version did not grow: $v3 -> $v4"
pass "a 7 s cut: actor 3 not alive ${silent_at} s in (held at $s3a segments, actor 4 went on), back ${back} s after the link on a new connection ($c1 -> $c3), $gaps segments lost in transit (seq_gaps), restarts=0, adds_up=1"
echo "3 passed, 0 failed"

#!/usr/bin/python3
"""Opens many libzmq connections (pyzmq, NULL mechanism) to one broker port,
each from its own loopback source address, and holds them open: a hostile
peer's load for conn_flood_test.sh and bench/conn_bench.sh. Bounded: at most
2000 connections, 100 messages each, 60 s; loopback addresses (127.0.0.0/8)
only; a connection the broker ends is not made again. An XSUB socket keeps
in its own table what it sent, so the flooder holds about as much memory as
its subscriptions make a broker hold that files them all (500 MB for
500 x 60 x 500 B).

usage: conn_flood.py HOST:PORT TYPE N [--subs K --size B] [--hold S] [--from A.B.C.D]
  TYPE   XSUB (sends K subscriptions, "\\x01" + B random bytes each) or PUSH (idle)
  --from one source address for every connection (default: 127.0.1.1, 127.0.1.2, ...)
Prints how many connected and how many the broker ended."""
import argparse
import ipaddress
import os
import resource
import sys
import time

import zmq
from zmq.utils.monitor import recv_monitor_message

LIMIT_S = 60


def source(i, fixed):
    if fixed:
        return fixed
    return "127.0.%d.%d" % (1 + i // 250, 1 + i % 250)


def parse():
    ap = argparse.ArgumentParser()
    ap.add_argument("endpoint")
    ap.add_argument("type", choices=["XSUB", "PUSH"])
    ap.add_argument("n", type=int)
    ap.add_argument("--subs", type=int, default=0)
    ap.add_argument("--size", type=int, default=0)
    ap.add_argument("--hold", type=float, default=5)
    ap.add_argument("--from", dest="fixed", default=None)
    a = ap.parse_args()
    if not (0 < a.n <= 2000 and 0 <= a.subs <= 100 and 0 <= a.size <= 4096 and a.hold <= 40):
        sys.exit("conn_flood: over its bounds (2000 connections, 100 messages, 4 KB, 40 s held)")
    host = a.endpoint.rsplit(":", 1)[0]
    for addr in [host, source(0, a.fixed), source(a.n - 1, a.fixed)]:
        if ipaddress.ip_address(addr) not in ipaddress.ip_network("127.0.0.0/8"):
            sys.exit("conn_flood: loopback addresses only, not " + addr)
    return a


def open_conns(ctx, a, poller):
    """Connects N sockets, each with a monitor registered in poller; sends the subscriptions."""
    kind = zmq.XSUB if a.type == "XSUB" else zmq.PUSH
    socks, mons = [], {}
    for i in range(a.n):
        s = ctx.socket(kind)
        s.linger = 0
        s.setsockopt(zmq.RECONNECT_IVL, -1)  # one the broker ends stays ended
        m = s.get_monitor_socket(zmq.EVENT_CONNECTED | zmq.EVENT_DISCONNECTED)
        poller.register(m, zmq.POLLIN)
        mons[m] = i
        s.connect("tcp://%s:0;%s" % (source(i, a.fixed), a.endpoint))
        for _ in range(a.subs):
            s.send(b"\x01" + os.urandom(a.size), zmq.NOBLOCK)
        socks.append(s)
    return socks, mons


def watch(poller, mons, until, seen, n):
    """Takes monitor events until `until` (monotonic) or, when n is given, n connected."""
    while time.monotonic() < until and (n is None or len(seen["up"]) < n):
        for m, _ in poller.poll(100):
            ev = recv_monitor_message(m)
            key = "up" if ev["event"] == zmq.EVENT_CONNECTED else "down"
            seen[key].add(mons[m])


def main():
    a = parse()
    t0 = time.monotonic()
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, max(soft, 8 * a.n + 64)), hard))
    ctx = zmq.Context(io_threads=2)
    ctx.max_sockets = 3 * a.n + 64
    poller = zmq.Poller()
    socks, mons = open_conns(ctx, a, poller)
    seen = {"up": set(), "down": set()}
    watch(poller, mons, t0 + 20, seen, a.n)
    print("connected %d of %d in %.1f s" % (len(seen["up"]), a.n, time.monotonic() - t0), flush=True)
    watch(poller, mons, min(time.monotonic() + a.hold, t0 + LIMIT_S - 5), seen, None)
    print("ended by the broker %d of %d" % (len(seen["down"]), a.n), flush=True)
    for m in mons:
        m.close(linger=0)
    for s in socks:
        s.close(linger=0)
    ctx.term()


if __name__ == "__main__":
    main()

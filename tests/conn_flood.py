#!/usr/bin/env python3
"""Opens many ZMTP 3.0 connections (NULL mechanism) to one broker port, each
from its own loopback source address, and holds them open: a hostile peer's
load for conn_flood_test.sh and bench/conn_bench.sh. Bounded: at most 2000
connections, 100 messages each, 60 s; loopback addresses (127.0.0.0/8) only.

usage: conn_flood.py HOST:PORT TYPE N [--subs K --size B] [--hold S] [--from A.B.C.D]
  TYPE   XSUB (sends K subscriptions of B random bytes each) or PUSH (idle)
  --from one source address for every connection (default: 127.0.1.1, 127.0.1.2, ...)
Answers the broker's heartbeats, so a connection ends only when the broker ends it.
Prints how many connected and how many the broker ended."""
import argparse
import ipaddress
import os
import selectors
import socket
import struct
import sys
import time

GREETING = b"\xff" + b"\0" * 8 + b"\x7f" + b"\x03\x00" + b"NULL".ljust(20, b"\0") + b"\0" * 32


def frame(body, command=False):
    flags = 0x04 if command else 0
    if len(body) > 255:
        return bytes([flags | 0x02]) + struct.pack(">Q", len(body)) + body
    return bytes([flags, len(body)]) + body


def ready(sock_type):
    prop = b"\x0bSocket-Type" + struct.pack(">I", len(sock_type)) + sock_type
    return frame(b"\x05READY" + prop, command=True)


def source(i, fixed):
    if fixed:
        return fixed
    return "127.0.%d.%d" % (1 + i // 250, 1 + i % 250)


class Conn:
    def __init__(self, sock):
        self.sock, self.buf, self.greeted, self.out = sock, b"", False, b""

    def take(self):
        """Answers PINGs in what was read; returns the PONGs to send."""
        out = b""
        if not self.greeted:
            if len(self.buf) < 64:
                return out
            self.buf, self.greeted = self.buf[64:], True
        while len(self.buf) >= 2:
            flags = self.buf[0]
            if flags & 0x02:
                if len(self.buf) < 9:
                    break
                size, head = struct.unpack(">Q", self.buf[1:9])[0], 9
            else:
                size, head = self.buf[1], 2
            if len(self.buf) < head + size:
                break
            body = self.buf[head : head + size]
            self.buf = self.buf[head + size :]
            if flags & 0x04 and body[:5] == b"\x04PING":
                out += frame(b"\x04PONG" + body[7:], command=True)
        return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("endpoint")
    ap.add_argument("type", choices=["XSUB", "PUSH"])
    ap.add_argument("n", type=int)
    ap.add_argument("--subs", type=int, default=0)
    ap.add_argument("--size", type=int, default=0)
    ap.add_argument("--hold", type=float, default=5)
    ap.add_argument("--from", dest="fixed", default=None)
    a = ap.parse_args()
    host, port = a.endpoint.rsplit(":", 1)
    if not (0 < a.n <= 2000 and a.subs <= 100 and a.size <= 4096 and a.hold <= 60):
        sys.exit("conn_flood: over its bounds (2000 connections, 100 messages, 60 s)")
    for addr in [host, source(a.n - 1, a.fixed)]:
        if not ipaddress.ip_address(addr) in ipaddress.ip_network("127.0.0.0/8"):
            sys.exit("conn_flood: loopback addresses only, not " + addr)
    sel = selectors.DefaultSelector()
    conns = []
    t0 = time.time()
    for i in range(a.n):
        s = socket.socket()
        s.bind((source(i, a.fixed), 0))
        try:
            s.connect((host, int(port)))
        except OSError as e:
            s.close()
            continue
        msgs = [frame(b"\x01" + os.urandom(a.size)) for _ in range(a.subs)]
        try:
            s.sendall(GREETING + ready(a.type.encode()) + b"".join(msgs))
        except OSError:
            pass
        s.setblocking(False)
        c = Conn(s)
        conns.append(c)
        sel.register(s, selectors.EVENT_READ, c)
    print("connected %d in %.1f s" % (len(conns), time.time() - t0), flush=True)
    ended = 0
    end = time.time() + a.hold
    while time.time() < end:
        for key, _ in sel.select(timeout=0.2):
            c = key.data
            try:
                data = c.sock.recv(65536)
            except OSError:
                data = b""
            if not data:
                sel.unregister(c.sock)
                ended += 1
                continue
            c.buf += data
            pong = c.take()
            if pong:
                try:
                    c.sock.send(pong)
                except OSError:
                    pass
    for c in conns:
        c.sock.close()
    print("ended by the broker %d of %d; closed the rest" % (ended, len(conns)), flush=True)


main()

#!/usr/bin/env python3
"""Load for bench/redis-module.sh: one decision per call (GCRA, or with --leaf a
sliding log or a fixed window), on a random key
of KEYS, sent as FCALL of the Lua library's _one or as SLUICE.ONE (the same
argument, built here as the store builds it: src/redis/lua/main.lua), over C
connections with P calls in flight on each; prints Redis's own figures for
the command afterwards (INFO commandstats: calls, usec_per_call) and the
server's CPU per call (utime + stime of its PID, /proc).

The blob is binary (doubles with zero bytes), which redis-benchmark cannot
send, hence this client; INCR and the exact script run through
redis-benchmark itself (bench/redis-module.sh). Every loop is bounded by
--calls. Every call is admitted (a burst of 10^9), as in the research's lab.
"""
import argparse
import os
import random
import socket
import struct
import sys
import time


def blob(now_ns, base_ms, leaf="gcra"):
    d = lambda *xs: b"".join(struct.pack("<d", float(x)) for x in xs)
    th, tl = now_ns >> 32, now_ns & 0xFFFFFFFF
    head = d(th, tl, 1, base_ms, 0)
    if leaf == "log":
        # mode L c W: sliding-log 10^9/1s at cost 1 (every call admitted;
        # a key's log holds its admits of the last second).
        return head + b"s0badcafe" + d(1, 10**9, 1, 10**9)
    if leaf == "fixed":
        # mode kh kl o L c W: fixed-window 10^9/1s from origin 0, the
        # instant's window k (limbs) and offset o, at cost 1.
        w = 10**9
        k, o = now_ns // w, now_ns % w
        return head + b"f0badcafe" + d(1, k >> 32, k & 0xFFFFFFFF, o, 10**9, 1, w)
    # th tl tns base batch, the tag, then mode L cq cr sq sr kq kr: gcra 1/1ms
    # burst=10^9 at cost 1 (c·W = 10^6, S·W = 10^15, K = 2^52 - 1). Every
    # write expires base_ms after it (the debt is a few ns): keys live
    # through the run, as the research's lab wrote them (PX 100000).
    return head + b"g0badcafe" + d(1, 1, 10**6, 0, 10**15, 0, 2**52 - 1, 0)


def resp(args):
    out = [b"*%d\r\n" % len(args)]
    for a in args:
        a = a if isinstance(a, bytes) else str(a).encode()
        out.append(b"$%d\r\n%s\r\n" % (len(a), a))
    return b"".join(out)


class conn:
    def __init__(self, port):
        self.s = socket.create_connection(("127.0.0.1", port))
        self.s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.buf = b""

    def replies(self, n):
        """Reads n top-level replies; fails on an error reply."""
        got = 0
        while got < n:
            got += self._parse_some(n - got)

    def _parse_some(self, want):
        done = 0
        while done < want:
            pos = self._skip(0)
            if pos is None:
                chunk = self.s.recv(1 << 20)
                if not chunk:
                    raise SystemExit("redis-module load: the server closed the connection")
                self.buf += chunk
                continue
            if self.buf[:1] == b"-":
                raise SystemExit("redis-module load: error reply " + self.buf[:200].decode(errors="replace"))
            self.buf = self.buf[pos:]
            done += 1
        return done

    def _skip(self, i):
        """The end of the reply at i, or None when incomplete."""
        j = self.buf.find(b"\r\n", i)
        if j < 0:
            return None
        t, v = self.buf[i:i + 1], self.buf[i + 1:j]
        if t in (b"+", b"-", b":"):
            return j + 2
        if t == b"$":
            n = int(v)
            if n < 0:
                return j + 2
            return j + 2 + n + 2 if len(self.buf) >= j + 2 + n + 2 else None
        if t == b"*":
            n, k = int(v), j + 2
            for _ in range(max(n, 0)):
                k = self._skip(k)
                if k is None:
                    return None
            return k
        raise SystemExit("redis-module load: unexpected reply byte %r" % t)

    def call(self, *args):
        self.s.sendall(resp(args))
        while True:
            pos = self._skip(0)
            if pos is not None:
                r, self.buf = self.buf[:pos], self.buf[pos:]
                return r
            self.buf += self.s.recv(1 << 20)


def cpu_ticks(pid):
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])  # utime, stime


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--pid", type=int, required=True)
    ap.add_argument("--fn", required=True, help="the Lua library's _one function, or SLUICE.ONE")
    ap.add_argument("--calls", type=int, default=200000)
    ap.add_argument("--pipeline", type=int, default=1)
    ap.add_argument("--conns", type=int, default=10)
    ap.add_argument("--keys", type=int, default=10000)
    ap.add_argument("--name", required=True)
    ap.add_argument("--base-ms", type=int, default=60000, help="each write's TTL in ms")
    ap.add_argument("--leaf", choices=("gcra", "log", "fixed"), default="gcra", help="the leaf decided")
    a = ap.parse_args()
    rng = random.Random(7)
    admin = conn(a.port)
    conns = [conn(a.port) for _ in range(a.conns)]
    now = time.time_ns()
    module = a.fn.upper() == "SLUICE.ONE"

    def command(i):
        key = b"mb:%d" % rng.randrange(a.keys)
        b = blob(now + i, a.base_ms, a.leaf)
        return resp([b"SLUICE.ONE", b"1", key, b]) if module else resp([b"FCALL", a.fn.encode(), b"1", key, b])

    # Warm-up: every key written once, then the figures reset.
    for i in range(0, a.keys, 500):
        batch = b"".join(command(i + k) for k in range(500))
        conns[0].s.sendall(batch)
        conns[0].replies(500)
    admin.call("CONFIG", "RESETSTAT")
    hz = os.sysconf("SC_CLK_TCK")
    c0, t0 = cpu_ticks(a.pid), time.monotonic()
    sent = 0
    while sent < a.calls:
        live = []
        for c in conns:
            n = min(a.pipeline, a.calls - sent)
            if n <= 0:
                break
            c.s.sendall(b"".join(command(sent + k) for k in range(n)))
            sent += n
            live.append((c, n))
        for c, n in live:
            c.replies(n)
    c1, t1 = cpu_ticks(a.pid), time.monotonic()
    stats = admin.call("INFO", "commandstats").decode()
    want = "cmdstat_sluice.one:" if module else "cmdstat_fcall:"
    line = next((l for l in stats.split("\r\n") if l.startswith(want)), "")
    fields = dict(kv.split("=") for kv in line.split(":", 1)[1].split(",")) if line else {}
    calls = int(fields.get("calls", 0))
    if calls < a.calls:
        raise SystemExit("redis-module load: %s counted %d calls of %d" % (want, calls, a.calls))
    cpu_us = (c1 - c0) * 1e6 / hz / calls
    print("RESULT\t%s\tusec_per_call=%s\tcpu_us_per_call=%.2f\tcalls=%d\tops_per_s=%.0f\tP=%d\tconns=%d\tkeys=%d"
          % (a.name, fields.get("usec_per_call"), cpu_us, calls, calls / (t1 - t0), a.pipeline, a.conns, a.keys))


if __name__ == "__main__":
    sys.exit(main())

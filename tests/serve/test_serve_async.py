"""sluice serve's event loops never wait on Redis (semantics.md, "The
service's event loops"), through real processes: a real redis-server on a
free 127.0.0.1 port (stopped with SIGSTOP under a running service), a real
`sluice serve` with one event loop, real HTTP clients on their own
connections. Each TestCase class is one ctest test; every process is
stopped by PID; every wait is bounded.
"""
import json
import os
import signal
import sys
import threading
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from serve_support import RedisCluster, metric, wait_until  # noqa: E402
from test_serve_redis import RedisCase  # noqa: E402


def timed(fn):
    t0 = time.monotonic()
    out = fn()
    return out, time.monotonic() - t0


class StalledClusterNode(RedisCase):
    """One primary of a real Redis Cluster stopped (SIGSTOP) with many
    clients waiting, on one event loop: the requests on its keys are each
    answered by the failure mode at their own deadline, all together; the
    requests on the other primaries' keys are answered by the store at once,
    without waiting for the stopped one."""

    PER_NODE = 8
    TIMEOUT_MS = 300

    def test_a_stopped_primary_holds_only_its_own_requests(self):
        # No replicas: the stopped primary is not failed over during the test
        # (it lasts well under the cluster's node timeout of 1 s). Every
        # request's call is sent before the first deadline passes, so each
        # waits for its own (the node's breaker opens only after them).
        cluster = RedisCluster(primaries=3, replicas=0)
        self.addCleanup(cluster.stop)
        s, _ = self.start_on(cluster, {"api": "gcra 1000/1s"}, server="threads = 1\n",
                             command_timeout='"%dms"' % self.TIMEOUT_MS, on_failure='"fail-closed"')
        victim = cluster.owner_port("k0")
        keys, on_victim = [], []
        for i in range(400):
            k = "k%d" % i
            here = cluster.owner_port(k) == victim
            if sum(1 for v in on_victim if v == here) < (self.PER_NODE if here else 2 * self.PER_NODE):
                keys.append(k)
                on_victim.append(here)
            if len(keys) == 3 * self.PER_NODE:
                break
        self.assertEqual(len(keys), 3 * self.PER_NODE)
        for k in keys:  # every node connected, the library loaded
            self.assertEqual(s.decide([("api", k)])[2]["source"], "store", k)
        conns = [s.conn() for _ in keys]
        for c in conns:
            self.assertEqual(s.request("GET", "/healthz", conn=c)[0], 200)
        cluster.signal(victim, signal.SIGSTOP)
        self.addCleanup(cluster.signal, victim, signal.SIGCONT)
        results = [None] * len(keys)
        start = threading.Barrier(len(keys) + 1)

        def client(i):
            start.wait()
            t0 = time.monotonic()
            st, _, b = s.decide([("api", keys[i])], conn=conns[i])
            results[i] = (st, b["source"], time.monotonic() - t0)

        threads = [threading.Thread(target=client, args=(i,)) for i in range(len(keys))]
        for t in threads:
            t.start()
        start.wait()
        for t in threads:
            t.join(30)
        cluster.signal(victim, signal.SIGCONT)
        for i, r in enumerate(results):
            self.assertIsNotNone(r, i)
        stopped = [r for r, v in zip(results, on_victim) if v]
        others = [r for r, v in zip(results, on_victim) if not v]
        for r in stopped:
            self.assertEqual(r[:2], (429, "fail-closed"), results)
        for r in others:
            self.assertEqual(r[:2], (200, "store"), results)
        # The stopped node's requests: each at its deadline, all together
        # (one after another would take PER_NODE × the timeout); the
        # others' before that deadline.
        self.assertGreaterEqual(min(r[2] for r in stopped), self.TIMEOUT_MS / 1000.0 * 0.9)
        self.assertLess(max(r[2] for r in stopped), self.TIMEOUT_MS / 1000.0 + 1.0, stopped)
        self.assertLess(max(r[2] for r in others), self.TIMEOUT_MS / 1000.0 * 0.9, others)
        print("stopped primary: its %d requests answered in %.0f-%.0f ms (deadline %d ms), the other %d in at most "
              "%.0f ms" % (len(stopped), 1000 * min(r[2] for r in stopped), 1000 * max(r[2] for r in stopped),
                           self.TIMEOUT_MS, len(others), 1000 * max(r[2] for r in others)), file=sys.stderr)
        victim_key = keys[on_victim.index(True)]
        self.assertTrue(wait_until(lambda: s.decide([("api", victim_key)])[2]["source"] == "store", 10))


class StalledRedis(RedisCase):
    """Redis stopped (SIGSTOP) with many clients waiting on it, on one event
    loop: /healthz and a request that needs no store answer at once, while
    every store request is answered by the failure mode within its own
    deadline — all of them together, not one deadline after another."""

    CLIENTS = 24
    TIMEOUT_MS = 300

    def test_waiting_requests_hold_nothing_up(self):
        redis = self.redis()
        # Every request's call is sent before the first deadline passes, so
        # each waits for its own (the breaker opens only after them).
        s, _ = self.start_on(redis, {"api": "gcra 1000/1s", "open": "always-allow"}, server="threads = 1\n",
                             command_timeout='"%dms"' % self.TIMEOUT_MS, on_failure='"fail-closed"')
        self.assertEqual(s.decide([("api", "warm")])[0], 200)
        conns = [s.conn() for _ in range(self.CLIENTS)]
        for c in conns:  # connected before the stall, so the clients' own connects take no time
            self.assertEqual(s.request("GET", "/healthz", conn=c)[0], 200)
        redis.pause()
        self.addCleanup(redis.resume)
        results = [None] * self.CLIENTS
        start = threading.Barrier(self.CLIENTS + 1)

        def client(i):
            start.wait()
            t0 = time.monotonic()
            st, _, b = s.decide([("api", "k%d" % i)], conn=conns[i])
            results[i] = (st, b["source"], time.monotonic() - t0, time.monotonic())

        threads = [threading.Thread(target=client, args=(i,)) for i in range(self.CLIENTS)]
        for t in threads:
            t.start()
        start.wait()
        t_start = time.monotonic()
        time.sleep(0.05)  # the store requests are sent and waiting
        # While they wait: liveness and a stateless decision come back at once.
        (hz, _, _), hz_time = timed(lambda: s.request("GET", "/healthz"))
        (st, _, b), free_time = timed(lambda: s.decide([("open", "x")]))
        for t in threads:
            t.join(30)
        self.assertEqual(hz, 200)
        self.assertEqual((st, b["source"]), (200, "store"))
        # Both answered before the waiting requests' deadline passed.
        self.assertLess(hz_time, self.TIMEOUT_MS / 1000.0 * 0.8, "healthz waited on the stalled store")
        self.assertLess(free_time, self.TIMEOUT_MS / 1000.0 * 0.8, "a stateless decision waited on the store")
        for i, r in enumerate(results):
            self.assertIsNotNone(r, i)
            self.assertEqual(r[:2], (429, "fail-closed"), i)
        # Each within its deadline (plus a margin for a loaded machine),
        # and all of them together: one after another would take
        # CLIENTS × the timeout (7.2 s).
        latest = max(r[3] for r in results) - t_start
        self.assertGreaterEqual(min(r[2] for r in results), self.TIMEOUT_MS / 1000.0 * 0.9)
        self.assertLess(latest, self.TIMEOUT_MS / 1000.0 + 1.5, results)
        redis.resume()
        self.assertTrue(wait_until(lambda: s.decide([("api", "back")])[2]["source"] == "store", 10))

    def test_a_drain_timeout_answers_what_waits_on_a_stopped_redis(self):
        """SIGTERM while requests wait on a stopped Redis, their deadline far
        past the drain timeout: at the drain timeout the loop's own store
        connection closes, the failure mode answers every waiting request,
        and the process exits 0 — it neither waits out the deadline nor
        leaves a loop running on the store's connection."""
        redis = self.redis()
        s, _ = self.start_on(redis, {"api": "gcra 1000/1s"}, server='threads = 1\ndrain_timeout = "500ms"\n',
                             command_timeout='"20s"', on_failure='"fail-closed"')
        self.assertEqual(s.decide([("api", "warm")])[0], 200)
        conns = [s.conn() for _ in range(4)]
        redis.pause()
        self.addCleanup(redis.resume)
        results = [None] * len(conns)

        def client(i):
            try:
                st, _, b = s.decide([("api", "k%d" % i)], conn=conns[i])
                results[i] = (st, b["source"])
            except (OSError, ValueError) as e:
                results[i] = ("no answer", str(e))

        threads = [threading.Thread(target=client, args=(i,)) for i in range(len(conns))]
        for t in threads:
            t.start()
        time.sleep(0.3)  # the store requests are sent and waiting
        t0 = time.monotonic()
        s.signal(signal.SIGTERM)
        self.assertEqual(s.proc.wait(10), 0)
        took = time.monotonic() - t0
        for t in threads:
            t.join(10)
        self.assertGreaterEqual(took, 0.45, "stopped before the drain timeout")
        self.assertLess(took, 5, "waited past the drain timeout")
        self.assertIn("drain timeout", s.log())
        self.assertEqual(results, [(429, "fail-closed")] * len(conns))

    def test_reports_wait_on_nothing(self):
        """POST /v1/report while Redis is stopped: each report is lost by
        its own deadline (503, nothing charged), all of them together, and
        the loop answers /healthz meanwhile; once Redis is back a report is
        charged."""
        redis = self.redis()
        s, _ = self.start_on(redis, {"tok": "gcra 1000/1d"}, server="threads = 1\n",
                             command_timeout='"%dms"' % self.TIMEOUT_MS)
        body = json.dumps({"checks": [{"policy": "tok", "key": "llm"}], "cost": 5})
        h = {"Content-Type": "application/json"}
        self.assertEqual(s.request("POST", "/v1/report", body, h)[0], 200)
        conns = [s.conn() for _ in range(self.CLIENTS)]
        for c in conns:
            self.assertEqual(s.request("GET", "/healthz", conn=c)[0], 200)
        redis.pause()
        self.addCleanup(redis.resume)
        results = [None] * self.CLIENTS
        start = threading.Barrier(self.CLIENTS + 1)

        def client(i):
            start.wait()
            t0 = time.monotonic()
            st, _, b = s.request("POST", "/v1/report", body, h, conn=conns[i])
            results[i] = (st, json.loads(b)["error"]["field"], time.monotonic() - t0, time.monotonic())

        threads = [threading.Thread(target=client, args=(i,)) for i in range(self.CLIENTS)]
        for t in threads:
            t.start()
        start.wait()
        t_start = time.monotonic()
        time.sleep(0.05)
        (hz, _, _), hz_time = timed(lambda: s.request("GET", "/healthz"))
        for t in threads:
            t.join(30)
        self.assertEqual(hz, 200)
        self.assertLess(hz_time, self.TIMEOUT_MS / 1000.0 * 0.8, "healthz waited on a report's stalled call")
        for i, r in enumerate(results):
            self.assertIsNotNone(r, i)
            self.assertEqual(r[:2], (503, "store"), i)
        latest = max(r[3] for r in results) - t_start
        self.assertLess(latest, self.TIMEOUT_MS / 1000.0 + 1.5, results)
        redis.resume()
        self.assertTrue(wait_until(lambda: s.request("POST", "/v1/report", body, h)[0] == 200, 10))
        # Charged once before the stall and once after; each timed-out
        # report was written before its deadline, so it may have been
        # applied when Redis came back — at most once each (semantics.md,
        # "Reports"), never twice.
        st, _, b = s.decide([("tok", "llm")])
        self.assertEqual(st, 200)
        late = (1000 - 5 - 5 - 1) - b["checks"][0]["remaining"]
        self.assertIn(late, range(0, 5 * self.CLIENTS + 1, 5), b)

    def test_refunds_and_releases_hold_up_no_loop(self):
        """A refund on a stopped Redis waits (three calls, off the loop):
        /healthz and a stateless decision answer meanwhile; the refund is
        answered by its deadline (503, nothing refunded), and again once
        Redis is back (200, given back once)."""
        redis = self.redis()
        s, _ = self.start_on(redis, {"api": "fixed-window 5/1h", "open": "always-allow"}, server="threads = 1\n",
                             command_timeout='"%dms"' % self.TIMEOUT_MS)
        self.assertEqual(s.decide([("api", "k")], rid="r-1")[0], 200)
        h = {"Content-Type": "application/json"}
        conn = s.conn()
        self.assertEqual(s.request("GET", "/healthz", conn=conn)[0], 200)
        redis.pause()
        self.addCleanup(redis.resume)
        out = {}

        def refund():
            out["r"] = timed(lambda: s.request("POST", "/v1/refund", json.dumps({"id": "r-1"}), h, conn=conn))

        t = threading.Thread(target=refund)
        t.start()
        time.sleep(0.05)
        (hz, _, _), hz_time = timed(lambda: s.request("GET", "/healthz"))
        (st, _, b), free_time = timed(lambda: s.decide([("open", "x")]))
        t.join(30)
        self.assertEqual(hz, 200)
        self.assertEqual((st, b["source"]), (200, "store"))
        self.assertLess(hz_time, self.TIMEOUT_MS / 1000.0 * 0.8, "healthz waited on a refund's stalled calls")
        self.assertLess(free_time, self.TIMEOUT_MS / 1000.0 * 0.8, "a decision waited on a refund's calls")
        (rst, _, rbody), took = out["r"]
        self.assertEqual(rst, 503, rbody)
        self.assertLess(took, 3 * self.TIMEOUT_MS / 1000.0 + 1.5)
        redis.resume()
        self.assertTrue(wait_until(lambda: s.request("POST", "/v1/refund", json.dumps({"id": "r-1"}), h)[0] != 503,
                                   10))
        st, _, b = s.decide([("api", "k")])
        self.assertEqual((st, b["checks"][0]["remaining"]), (200, 4), "the refunded unit is back, once")

    def test_readyz_and_metrics_while_stalled(self):
        redis = self.redis()
        s, _ = self.start_on(redis, {"api": "gcra 10/1s"}, server="threads = 1\n",
                             command_timeout='"%dms"' % self.TIMEOUT_MS)
        self.assertEqual(s.request("GET", "/readyz")[0], 200)
        redis.pause()
        self.addCleanup(redis.resume)
        # Several /readyz and /metrics at once: each within its own deadline.
        out = []

        def probe(path):
            (st, _, body), took = timed(lambda: s.request("GET", path))
            out.append((path, st, took, body))

        threads = [threading.Thread(target=probe, args=(p,)) for p in ["/readyz", "/metrics"] * 4]
        t0 = time.monotonic()
        for t in threads:
            t.start()
        for t in threads:
            t.join(30)
        took = time.monotonic() - t0
        self.assertEqual(len(out), 8)
        for path, st, _, body in out:
            if path == "/readyz":
                self.assertEqual(st, 503, body)
            else:
                self.assertEqual(st, 200)
                self.assertIsNone(metric(body, "sluice_keys"), "no key count from a stalled store")
        self.assertLess(took, self.TIMEOUT_MS / 1000.0 + 1.5)


class PipelinedOnRedis(RedisCase):
    """Many concurrent clients on one event loop, their calls pipelined on
    one connection: still exactly one limit (a fixed window of L admits
    exactly L of a burst of 4·L), and fewer socket writes than calls."""

    L = 40

    def test_exact_under_concurrency(self):
        redis = self.redis()
        s, _ = self.start_on(redis, {"fw": "fixed-window %d/1h" % self.L}, server="threads = 1\n")
        n = 4 * self.L
        clients = 20
        statuses = []
        lock = threading.Lock()

        def client(i):
            c = s.conn()
            for _ in range(n // clients):
                st, _, b = s.decide([("fw", "shared")], conn=c)
                with lock:
                    statuses.append((st, b["source"]))

        threads = [threading.Thread(target=client, args=(i,)) for i in range(clients)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        self.assertEqual(len(statuses), n)
        self.assertEqual(sum(1 for st, _ in statuses if st == 200), self.L)
        self.assertEqual(sum(1 for st, _ in statuses if st == 429), n - self.L)
        self.assertTrue(all(src in ("store", "deny-cache") for _, src in statuses), set(statuses))


if __name__ == "__main__":
    unittest.main()

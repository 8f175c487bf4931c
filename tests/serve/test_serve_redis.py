"""sluice serve on the Redis store, through real processes: a real
redis-server on a free 127.0.0.1 port (killed, paused and restarted under a
running service), real `sluice serve` processes, real HTTP clients.

Each TestCase class is one ctest test (tests/serve/CMakeLists.txt). Every
process is stopped by PID; every wait is bounded in time.
"""
import json
import os
import random
import re
import signal
import subprocess
import sys
import threading
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from serve_support import (BINARY, RedisCluster, RedisSentinels, RedisServer, ServeCase, base_config,  # noqa: E402
                           decided_by_library, decided_by_module, metric, stats_since, wait_until, write_config)
from test_serve import MixedCosts, ReplayParity, RequestIds, replay_seconds  # noqa: E402


def store_section(redis, prefix, query="", **options):
    """A [store] table for `redis`, `query` after its URL (each option a TOML
    value, written as given)."""
    text = '\n[store]\nurl = "%s"\nkey_prefix = "%s"\n' % (redis.url + query, prefix)
    for k, v in options.items():
        text += "%s = %s\n" % (k, v)
    return text


def fresh_prefix():
    return "sluice:test:%08x:" % random.getrandbits(32)



class RedisCase(ServeCase):
    # Through the Lua library; ThroughTheModule's subclasses send the same
    # decisions through sluice's Redis module.
    MODULE = False

    def query(self):
        return ""

    def redis(self):
        r = RedisServer(module=self.MODULE)
        self.addCleanup(r.stop)
        return r

    def start_on(self, redis, policies, rules="", server="", **store):
        prefix = fresh_prefix()
        s, _ = self.start_config(base_config(policies, rules, server) +
                                 store_section(redis, prefix, self.query(), **store))
        return s, prefix


class FleetOnRedis(RedisCase):
    """4 sluice serve processes on one Redis hold one exact limit: a fixed
    window of L per minute admits exactly L of a burst of 10·L, a GCRA
    exactly its burst."""

    L = 24

    def store_url(self):
        self.deployment = self.redis()
        return self.deployment.url + self.query()

    def check_path(self, before, results):
        """The path the burst's decisions took (ThroughTheModule checks it)."""

    def fleet(self):
        text = base_config({"fw": "fixed-window %d/1m" % self.L, "gcra": "gcra 1/1h burst=%d" % self.L},
                           server="threads = 1\n")
        text += '\n[store]\nurl = "%s"\nkey_prefix = "%s"\n' % (self.store_url(), fresh_prefix())
        path = write_config(text)
        self.addCleanup(os.unlink, path)
        return [self.start("--config", path) for _ in range(4)]

    def away_from_a_minute_boundary(self, margin=15):
        """Waits (at most `margin` seconds) until the current minute of the
        realtime clock, which the Redis store's windows follow, has at least
        `margin` seconds left, so a burst lies in one window."""
        left = 60 - time.time() % 60
        if left < margin:
            time.sleep(left + 0.05)

    def burst(self, servers, policy):
        """10·L requests for one key, spread over the servers from 4 threads."""
        results = []
        lock = threading.Lock()

        def client(i):
            s = servers[i]
            conn = s.conn()
            mine = []
            for _ in range(10 * self.L // len(servers)):
                st, _, b = s.decide([(policy, "k")], conn=conn)
                mine.append((st, b.get("source")))
            conn.close()
            with lock:
                results.extend(mine)

        before = self.deployment.command_stats()
        threads = [threading.Thread(target=client, args=(i,)) for i in range(len(servers))]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        self.assertEqual(len(results), 10 * self.L)
        # Every answer came from Redis (or its exact deny cache), none from a failure mode.
        self.assertEqual({src for _, src in results} - {"store", "deny-cache"}, set())
        self.check_path(before, results)
        return results

    def test_fixed_window_admits_exactly_its_limit(self):
        servers = self.fleet()
        self.away_from_a_minute_boundary()
        started = time.time()
        results = self.burst(servers, "fw")
        self.assertLess(time.time() - started, 15, "the burst must lie in one minute")
        self.assertEqual(sum(1 for st, _ in results if st == 200), self.L)
        self.assertEqual(sum(1 for st, _ in results if st == 429), len(results) - self.L)

    def test_gcra_admits_exactly_its_burst(self):
        servers = self.fleet()
        results = self.burst(servers, "gcra")
        self.assertEqual(sum(1 for st, _ in results if st == 200), self.L)


class ThroughTheModule:
    """A class's tests through sluice's Redis module instead of the Lua
    library (docs/redis.md, "The store and the module"): every Redis server
    loads the module, the store URL says `?module=on`, and Redis's own INFO
    commandstats shows where the decisions ran (`sluice serve` does not show
    the store's path): in a fleet's burst, each answer from the store is one
    module command that ran (none an FCALL); after a restart, the service's
    new connections decide by the module again. Mixed in before the class."""

    MODULE = True

    def query(self):
        return "?module=on"

    def check_path(self, before, results):
        ran = stats_since(before, self.deployment.command_stats())
        from_store = sum(1 for _, src in results if src == "store")
        self.assertGreater(from_store, 0)
        self.assertEqual((decided_by_module(ran), decided_by_library(ran)), (from_store, 0), ran)

    def check_restarted_path(self, redis):
        ran = redis.command_stats()  # since its restart
        self.assertGreater(decided_by_module(ran), decided_by_library(ran), ran)


class FleetOnRedisModule(ThroughTheModule, FleetOnRedis):
    """FleetOnRedis through the module."""


class FleetOnCluster(FleetOnRedis):
    """4 sluice serve processes on one Redis Cluster hold one exact limit."""

    @classmethod
    def setUpClass(cls):
        cls.cluster = RedisCluster(module_nodes=range(6) if cls.MODULE else ())
        cls.deployment = cls.cluster

    @classmethod
    def tearDownClass(cls):
        cls.cluster.stop()

    def store_url(self):
        return self.cluster.url + self.query()

    def test_keys_are_spread_over_the_primaries(self):
        servers = self.fleet()
        for i in range(60):
            st, _, b = servers[i % 4].decide([("fw", "user%d" % i)])
            self.assertEqual((st, b.get("source")), (200, "store"))
        nodes = self.cluster.run_cli("-p", str(self.cluster.ports[0]), "cluster", "nodes").splitlines()
        primaries = [int(line.split()[1].split("@")[0].split(":")[1]) for line in nodes if "master" in line.split()[2]]
        self.assertEqual(len(primaries), 3)
        for p in primaries:
            self.assertGreater(int(self.cluster.run_cli("-p", str(p), "dbsize").strip() or 0), 0, p)

    def test_a_refund_by_its_refund_id_through_another_process(self):
        # docs/redis.md, "Refunds": a decision's answer carries the refund id
        # that names its record's slot; any process of the fleet refunds by
        # it, once. The plain id names no slot: 503, nothing refunded.
        text = base_config({"q": "quota 1"}, server="threads = 1\n")
        text += '\n[store]\nurl = "%s"\nkey_prefix = "%s"\n' % (self.store_url(), fresh_prefix())
        path = write_config(text)
        self.addCleanup(os.unlink, path)
        a, b = self.start("--config", path), self.start("--config", path)
        h = {"Content-Type": "application/json"}
        for i, key in enumerate(["alice", "bob", "carol", "{team}dave"]):
            st, _, d = a.decide([("q", key)], rid="r-%d" % i)
            self.assertEqual((st, d["id"]), (200, "r-%d" % i), d)
            rid = d["refund_id"]
            self.assertEqual(b.request("POST", "/v1/refund", json.dumps({"id": d["id"]}), h)[0], 503)
            st, _, body = b.request("POST", "/v1/refund", json.dumps({"id": rid}), h)
            self.assertEqual(st, 200, body)
            self.assertEqual(json.loads(body)["checks"][0]["given_back"], 1)
            self.assertEqual(a.request("POST", "/v1/refund", json.dumps({"id": rid}), h)[0], 409)
            self.assertEqual(b.decide([("q", key)], rid="again-%d" % i)[0], 200)  # the quota's unit is back


class FleetOnClusterModule(ThroughTheModule, FleetOnCluster):
    """FleetOnCluster through the module on every node."""


class FleetOnSentinel(FleetOnRedis):
    """4 sluice serve processes on one Sentinel deployment (a master, a
    replica, three sentinels) hold one exact limit; a SENTINEL FAILOVER under
    load is followed: every request is answered, and decisions come from the
    new master after the switch."""

    @classmethod
    def setUpClass(cls):
        cls.deployment = RedisSentinels(master_module=cls.MODULE, replica_module=cls.MODULE)

    @classmethod
    def tearDownClass(cls):
        cls.deployment.stop()

    def store_url(self):
        return self.deployment.url + self.query()

    def test_zz_failover_under_load_is_followed(self):  # last: it moves the master
        d = self.deployment
        old_port = d.master_port()
        # A limit the test never reaches: every answer from Redis is an admit,
        # so each one after the switch is a decision of the new master (no
        # deny-cache answer stands in for one).
        text = base_config({"fw": "fixed-window 100000000/1h"}, server="threads = 1\n")
        text += '\n[store]\nurl = "%s"\nkey_prefix = "%s"\ncommand_timeout = "300ms"\n' % (
            self.store_url(), fresh_prefix())
        path = write_config(text)
        self.addCleanup(os.unlink, path)
        servers = [self.start("--config", path) for _ in range(4)]
        results = []
        lock = threading.Lock()
        switched = threading.Event()
        stop = threading.Event()

        def client(i):
            conn = servers[i].conn()
            while not stop.is_set():
                st, _, b = servers[i].decide([("fw", "k")], conn=conn)
                with lock:
                    results.append((st, b.get("source"), switched.is_set()))

        threads = [threading.Thread(target=client, args=(i,)) for i in range(4)]
        for t in threads:
            t.start()
        try:
            self.assertTrue(wait_until(lambda: len(results) >= 100, 20))
            self.assertTrue(d.sentinel_command(1, "SENTINEL", "failover", "mymaster").startswith(b"+OK"))
            self.assertTrue(wait_until(lambda: d.master_port() != old_port, 20), "no switch within 20 s")
            switched.set()
            # After the switch, the fleet decides on the new master again.
            self.assertTrue(wait_until(lambda: sum(1 for r in results if r[2] and r[1] == "store") >= 200, 30),
                            "the fleet did not follow the new master")
        finally:
            stop.set()
            for t in threads:
                t.join(30)
        self.assertEqual(d.master_port(), d.replica.port)
        self.assertTrue(all(st in (200, 429) for st, _, _ in results), {r[:2] for r in results})
        after = [src for _, src, sw in results if sw]
        print("sentinel failover under load: %d requests, %d after the switch, sources %s" % (
            len(results), len(after), sorted({src for _, src, _ in results})))
        # Answered by the store or, while the master moved, the failure mode: never an error.
        self.assertEqual({src for _, src, _ in results} - {"store", "fail-closed"}, set())
        self.assertGreater(int(d.replica.command("DBSIZE")), 0, "the new master holds the state")
        print("sentinel failover under load: the new master ran %d module decisions, %d FCALLs" % (
            decided_by_module(d.replica.command_stats()), decided_by_library(d.replica.command_stats())))
        self.check_new_master_path(d.replica.command_stats())

    def check_new_master_path(self, stats):
        """The path the new master's decisions took (FleetOnSentinelModule)."""


class FleetOnSentinelModule(ThroughTheModule, FleetOnSentinel):
    """FleetOnSentinel through the module, loaded by the master and the
    replica: after the switch, the new master decides through it too.
    (Paths/SentinelFailover.WaitReplicasBoundsAFailoverToNoOverAdmission/module_on_the_master_only
    fails over to a replica without it.)"""

    def check_new_master_path(self, stats):
        self.assertGreater(decided_by_module(stats), 0)


class ReloadOnRedis(RedisCase):
    """A reload on the Redis store carries states over, as on the memory
    store: a throttled client stays throttled, a raised limit keeps what was
    consumed. A second process on the same Redis that has not reloaded meets
    the carried states as another configuration's: errors, never admits,
    until it reloads too."""

    V1 = {"a": "fixed-window 3/1h", "b": "fixed-window 2/1h"}

    def test_sighup_carries_states_over_and_a_stale_process_never_admits(self):
        redis = self.redis()
        prefix = fresh_prefix()
        text = base_config(self.V1, server='admin = "127.0.0.1:0"\nthreads = 1\n') + store_section(redis, prefix)
        s, path = self.start_config(text)
        other = self.start("--config", path)  # the same file, read once
        for _ in range(3):
            self.assertEqual(s.decide([("a", "k")])[0], 200)
        self.assertEqual(s.decide([("a", "k")])[0], 429)
        st, _, b = s.decide([("b", "k")])
        self.assertEqual((st, b["remaining"], b["source"]), (200, 1, "store"))
        with open(path, "w") as f:
            f.write(text.replace('"fixed-window 3/1h"', '"fixed-window 5/1h"').replace('"fixed-window 2/1h"',
                                                                                      '"fixed-window 6/1h"'))
        s.signal(signal.SIGHUP)
        self.assertTrue(s.wait_log("reloaded"), s.log())
        self.assertIn("2 changed", s.log())
        # a: 3 used of the new 5, 2 more; b: 1 used of the new 6.
        st, _, b = s.decide([("a", "k")])
        self.assertEqual((st, b["remaining"], b["source"]), (200, 1, "store"))
        st, _, b = s.decide([("b", "k")])
        self.assertEqual((st, b["remaining"]), (200, 4))
        # The process still on the old configuration: an error answer (a
        # 500 naming no limit), never an admit, nothing written.
        for _ in range(3):
            st, _, b = other.decide([("a", "k")])
            self.assertEqual((st, b["allowed"], b["source"]), (500, False, "error"))
        m = other.metrics()
        self.assertEqual(metric(m, 'sluice_store_errors_total{kind="state"}'), 3)
        # Reloaded too, it decides under the new configuration on the same states.
        st, _, body = other.request("POST", "/admin/reload", admin=True)
        self.assertEqual(st, 200, body)
        st, _, b = other.decide([("a", "k")])
        self.assertEqual((st, b["remaining"], b["source"]), (200, 0, "store"))
        self.assertEqual(s.decide([("a", "k")])[0], 429)


class ReplayParityOnRedis(ReplayParity):
    """The same requests through sluice serve on Redis and sluice replay (in
    process): the same decisions, field for field, every one from Redis.
    The deny cache is off here: its answers are exact in `allowed` only
    (DenyCacheOnRedis checks those)."""

    def server(self):
        redis = RedisServer()
        self.addCleanup(redis.stop)
        s, _ = self.start_config(base_config(self.POLICIES, server="client_time = true\n") +
                                 store_section(redis, fresh_prefix(), deny_cache="false"))
        return s


class MixedCostsOnRedis(MixedCosts):
    """MixedCosts with the Redis store (deny cache off: `left` reads figures
    with a cost no policy admits, which the cache would answer without them)."""

    def store_section(self):
        redis = RedisServer()
        self.addCleanup(redis.stop)
        return store_section(redis, fresh_prefix(), deny_cache="false")


class RequestIdsOnRedis(RequestIds):
    """RequestIds on the Redis store: the same answers as on the memory
    store (a used id with other checks was a 500 here)."""

    def store_section(self):
        redis = RedisServer()
        self.addCleanup(redis.stop)
        return store_section(redis, fresh_prefix())


class ReadinessOnRedis(RedisCase):
    """/readyz follows Redis: not ready while it is down (kill -9) or hung
    (SIGSTOP), ready again once it answers; decisions come from it again."""

    def ready(self, s):
        st, _, _ = s.request("GET", "/readyz")
        return st == 200

    def test_down_hung_and_back(self):
        redis = self.redis()
        s, _ = self.start_on(redis, {"api": "fixed-window 100/1h"}, server="threads = 1\n",
                             command_timeout='"100ms"')
        self.assertTrue(wait_until(lambda: self.ready(s), 10))
        checked = 0
        for fault in ("kill", "stop"):
            if fault == "kill":
                redis.kill9()
            else:
                redis.pause()
            t0 = time.time()
            self.assertFalse(self.ready(s), fault)
            # One peek, bounded by the command timeout (100 ms) and a margin for a loaded machine.
            self.assertLess(time.time() - t0, 2.0, fault)
            for _ in range(5):  # and it stays not ready
                self.assertFalse(self.ready(s), fault)
            st, _, b = s.decide([("api", "k")])
            self.assertEqual((st, b["source"]), (429, "fail-closed"), fault)
            if fault == "kill":
                redis.start()
            else:
                redis.resume()
            # The breaker probes again after its cool-down (1 s): back within seconds.
            self.assertTrue(wait_until(lambda: self.ready(s), 15), fault)
            st, _, b = s.decide([("api", "k")])
            self.assertEqual((st, b["source"]), (200, "store"), fault)
            checked += 1
        self.assertEqual(checked, 2)
        self.check_restarted_path(redis)

    def check_restarted_path(self, redis):
        """The path of the decisions since the kill's restart (ReadinessOnRedisModule)."""


class ReadinessOnRedisModule(ThroughTheModule, ReadinessOnRedis):
    """ReadinessOnRedis through the module: the server restarted after its
    kill -9 loads it again, and the service's new connections find it (their
    probe at login) and decide by it."""


class FailureModesOnRedis(RedisCase):
    """While Redis is down, each failure mode answers, with its status and
    headers, and /metrics counts the fallbacks and failed calls by source."""

    RULES = '\n[[rules]]\npolicy = "api"\nkey = "header:X-User"\n'

    def down(self, mode, **store):
        redis = self.redis()
        s, _ = self.start_on(redis, {"api": "gcra 3/3h burst=3"}, self.RULES, server="threads = 1\n",
                             on_failure='"%s"' % mode, **store)
        st, h, b = s.decide([("api", "k")])
        self.assertEqual((st, b["source"], b["remaining"]), (200, "store", 2))
        self.assertEqual(h["ratelimit"], '"api";r=2;t=3600')  # one unit back an hour after the admit
        redis.kill9()
        return redis, s

    def counts(self, s, source):
        m = s.metrics()
        return (metric(m, 'sluice_store_decisions_total{source="%s"}' % source),
                metric(m, "sluice_store_fallbacks_total"), metric(m, 'sluice_store_errors_total{kind="call"}'),
                metric(m, 'sluice_store_decisions_total{source="store"}'), metric(m, "sluice_keys"))

    def back(self, redis, s):
        redis.start()
        got = wait_until(lambda: s.decide([("api", "again")])[2]["source"] == "store", 15, 0.2)
        self.assertTrue(got, "decisions did not come from Redis again")

    def test_fail_open(self):
        redis, s = self.down("fail-open")
        for i in range(6):
            st, h, b = s.decide([("api", "k")])
            self.assertEqual((st, b["allowed"], b["source"]), (200, True, "fail-open"), i)
            self.assertEqual(h["ratelimit-policy"], '"api";q=3;w=10800')
            self.assertNotIn("ratelimit", h)  # the state is unknown: no figures
            self.assertNotIn("retry-after", h)
        st, h, _ = s.request("GET", "/v1/authorize", headers={"X-User": "k"})
        self.assertEqual((st, h["x-sluice-decision"]), (204, "allowed"))
        n, fallbacks, failed, from_store, keys = self.counts(s, "fail-open")
        self.assertEqual((n, fallbacks, from_store), (7, 7, 1))
        self.assertGreaterEqual(failed, 1)
        self.assertLessEqual(failed, 7)  # the breaker stops calling a store that keeps failing
        self.assertIsNone(keys)  # the store cannot tell while it is down
        self.back(redis, s)

    def test_fail_closed(self):
        redis, s = self.down("fail-closed", fail_closed_retry_after='"2s"')
        for i in range(6):
            st, h, b = s.decide([("api", "k")])
            self.assertEqual((st, b["allowed"], b["source"]), (429, False, "fail-closed"), i)
            self.assertEqual(b["retry_after_ns"], 2 * 10**9)
            self.assertEqual((h["retry-after"], h["cache-control"]), ("2", "no-store"))
            self.assertEqual(h["ratelimit-policy"], '"api";q=3;w=10800')
            self.assertNotIn("ratelimit", h)
        st, h, _ = s.request("GET", "/v1/authorize", headers={"X-User": "k"})
        self.assertEqual((st, h["x-sluice-decision"], h["retry-after"]), (403, "limited", "2"))
        n, fallbacks, failed, from_store, _ = self.counts(s, "fail-closed")
        self.assertEqual((n, fallbacks, from_store), (7, 7, 1))
        self.assertGreaterEqual(failed, 1)
        self.assertLessEqual(failed, 7)
        self.back(redis, s)

    def about_an_hour(self, seconds):
        # An hour after the first local admit, read a little later (whole
        # seconds rounded up; a loaded machine may take seconds in between).
        self.assertGreaterEqual(int(seconds), 3590)
        self.assertLessEqual(int(seconds), 3600)

    def test_local(self):
        redis, s = self.down("local")
        # The in-process limiter has the same policy, and its own (fresh) states.
        for i, left in enumerate([2, 1, 0]):
            st, h, b = s.decide([("api", "k")])
            self.assertEqual((st, b["source"], b["remaining"]), (200, "fallback", left), i)
            m = re.fullmatch(r'"api";r=(\d+);t=(\d+)', h["ratelimit"])
            self.assertEqual(int(m.group(1)), left)
            self.about_an_hour(m.group(2))
        st, h, b = s.decide([("api", "k")])
        self.assertEqual((st, b["source"]), (429, "fallback"))
        m = re.fullmatch(r'"api";r=0;t=(\d+)', h["ratelimit"])
        self.about_an_hour(m.group(1))
        self.about_an_hour(h["retry-after"])
        st, h, _ = s.request("GET", "/v1/authorize", headers={"X-User": "k"})
        self.assertEqual((st, h["x-sluice-decision"]), (403, "limited"))
        n, fallbacks, failed, from_store, _ = self.counts(s, "fallback")
        self.assertEqual((n, fallbacks, from_store), (5, 5, 1))
        self.assertGreaterEqual(failed, 1)
        self.assertLessEqual(failed, 5)
        self.back(redis, s)


class StatelessOnRedis(RedisCase):
    """always-allow and always-deny need no state (semantics.md, "Answers
    that need no state"): decided by the service with no Redis call, and
    the same under every failure mode while Redis is killed or stopped. A
    request mixing a stateless check with a stateful one: a denying one
    denies whatever the mode; an admitting one leaves the answer to the
    stateful check, hence to the mode."""

    POLICIES = {"open": "always-allow", "shut": "always-deny", "api": "gcra 3/3h burst=3"}

    def test_no_call_to_redis(self):
        redis = self.redis()
        s, _ = self.start_on(redis, self.POLICIES, server="threads = 1\n")
        self.assertEqual(s.decide([("api", "k")])[0], 200)  # loads the library: not what is counted
        before = CallsPerRequestOnRedis.calls(redis)
        for i in range(10):
            st, _, b = s.decide([("open", "k%d" % i)], rid="o%d" % i)
            self.assertEqual((st, b["allowed"], b["source"]), (200, True, "store"))
            st, h, b = s.decide([("shut", "k%d" % i)])
            self.assertEqual((st, b["allowed"], b["source"], b["retry_after_ns"]), (429, False, "store", "never"))
            self.assertNotIn("retry-after", h)
        after = CallsPerRequestOnRedis.calls(redis)
        used = {c: after.get(c, 0) - before.get(c, 0) for c in set(after) | set(before)}
        self.assertEqual({c: v for c, v in used.items() if v and c != "info"}, {})

    def test_every_failure_mode_while_redis_is_down(self):
        checked = 0
        for mode in ("fail-open", "fail-closed", "local"):
            for fault in ("kill", "stop"):
                redis = self.redis()
                s, _ = self.start_on(redis, self.POLICIES, server="threads = 1\n", on_failure='"%s"' % mode,
                                     command_timeout='"100ms"')
                self.assertEqual(s.decide([("api", "k")])[0], 200)
                if fault == "kill":
                    redis.kill9()
                else:
                    redis.pause()
                where = (mode, fault)
                for i in range(3):
                    st, _, b = s.decide([("open", "k")])
                    self.assertEqual((st, b["source"]), (200, "store"), where)
                    st, _, b = s.decide([("shut", "k")])
                    self.assertEqual((st, b["source"], b["retry_after_ns"]), (429, "store", "never"), where)
                # A denying stateless check beside a stateful one: denied in every mode.
                st, _, b = s.decide([("shut", "k"), ("api", "k")])
                self.assertEqual((st, b["allowed"]), (429, False), where)
                self.assertEqual(b["source"], "fallback" if mode == "local" else "rule", where)
                # An admitting one leaves it to the stateful check: the mode decides.
                st, _, b = s.decide([("open", "k"), ("api", "k")])
                want = {"fail-open": (200, "fail-open"), "fail-closed": (429, "fail-closed"),
                        "local": (200, "fallback")}[mode]
                self.assertEqual((st, b["source"]), want, where)
                if fault == "stop":
                    redis.resume()
                s.stop()
                checked += 1
        self.assertEqual(checked, 6)


class ForeignValueOnRedis(RedisCase):
    """A key holding a value sluice did not write is an error answer, never
    an admit, counted; the value is left as it was."""

    def test_error_never_admit(self):
        redis = self.redis()
        s, prefix = self.start_on(redis, {"api": "fixed-window 3/1h"},
                                  '\n[[rules]]\npolicy = "api"\nkey = "header:X-User"\n')
        key = prefix + "s:api:{mallory}"
        self.assertEqual(redis.command("SET", key, "not sluice's"), b"+OK")
        for i in range(3):
            st, h, b = s.decide([("api", "mallory")])
            self.assertEqual((st, b["allowed"], b["source"]), (500, False, "error"), i)
            self.assertIsNone(b["retry_after"])
            self.assertNotIn("retry-after", h)
            self.assertNotIn("ratelimit", h)
        st, h, _ = s.request("GET", "/v1/authorize", headers={"X-User": "mallory"})
        self.assertEqual((st, h["x-sluice-decision"]), (403, "error"))
        # In a request with another check, the other is not charged either.
        st, _, b = s.decide([("api", "alice"), ("api", "mallory")])
        self.assertEqual((st, b["source"]), (500, "error"))
        st, _, b = s.decide([("api", "alice")])
        self.assertEqual((st, b["source"], b["remaining"]), (200, "store", 2))
        self.assertEqual(redis.command("GET", key), b"not sluice's")
        m = s.metrics()
        self.assertEqual(metric(m, 'sluice_store_decisions_total{source="error"}'), 5)
        self.assertEqual(metric(m, 'sluice_store_errors_total{kind="state"}'), 5)
        self.assertEqual(metric(m, 'sluice_store_errors_total{kind="call"}'), 0)
        self.assertEqual(metric(m, 'sluice_decisions_total{policy="api",result="denied"}'), 6)


class DenyCacheOnRedis(RedisCase):
    """With the deny cache on, every decision's `allowed` is replay's; the
    cache's answers are denials with a retry_after no longer than replay's,
    and /metrics counts each hit."""

    def test_exact_in_allowed_and_counted(self):
        redis = self.redis()
        policies = {"fw": "fixed-window 3/1s", "gc": "gcra 4/1s burst=2"}
        s, _ = self.start_on(redis, policies, server="client_time = true\n")
        base = 86400 * 1000 * 10**9
        rng = random.Random(5)
        hits = 0
        checked = 0
        conn = s.conn()
        for name, expr in policies.items():
            t = 0
            lines, served = [], []
            for _ in range(300):
                t += rng.choice([0, 0, 0, 1, 10, 100, 250, 1000]) * 10**6
                key = rng.choice(["a", "b"])
                cost = rng.choice([1, 1, 2])
                lines.append("%s %s %d" % (replay_seconds(base + t), key, cost))
                st, _, b = s.decide([(name, key)], cost=cost, now=base + t, conn=conn)
                self.assertIn(b["source"], ("store", "deny-cache"))
                served.append((b["allowed"], b["source"], b["retry_after_ns"]))
            out = subprocess.run([BINARY, "replay", "--policy", expr], input="\n".join(lines) + "\n",
                                 capture_output=True, text=True, check=True).stdout.splitlines()
            header = out[0].split(",")
            rows = [dict(zip(header, r.split(","))) for r in out[1:]]
            self.assertEqual(len(rows), len(served))
            for i, (row, (allowed, source, retry_ns)) in enumerate(zip(rows, served)):
                self.assertEqual("yes" if allowed else "no", row["allowed"], "%s %d (%s)" % (name, i, lines[i]))
                if source == "deny-cache":
                    hits += 1
                    want_ns = round(float(row["retry_after"]) * 10**9)
                    self.assertGreater(retry_ns, 0)
                    self.assertLessEqual(retry_ns, want_ns + 1, "%s %d" % (name, i))
                checked += 1
        conn.close()
        self.assertEqual(checked, 600)
        self.assertGreater(hits, 20)
        m = s.metrics()
        self.assertEqual(metric(m, "sluice_deny_cache_hits_total"), hits)
        self.assertEqual(metric(m, 'sluice_store_decisions_total{source="deny-cache"}'), hits)
        self.assertEqual(metric(m, 'sluice_store_decisions_total{source="store"}'), 600 - hits)


class CallsPerRequestOnRedis(RedisCase):
    """A request of several checks is one Redis call: the decision, and each
    check's RateLimit `t` (read by the store on the states it decided on),
    come from one FCALL, counted by Redis itself (INFO commandstats before
    and after)."""

    RULES = """
[[rules]]
policy = "api"
key = "header:X-User"

[[rules]]
policy = "day"
key = "header:X-User"

[[rules]]
policy = "burst"
key = "literal:all"
"""

    @staticmethod
    def calls(redis):
        return {name: calls for name, (calls, _) in redis.command_stats().items()}

    def test_one_fcall_per_request(self):
        redis = self.redis()
        s, _ = self.start_on(redis, {"api": "gcra 100/1s burst=50", "day": "fixed-window 10000/1d",
                                     "burst": "sliding-log 1000/1m"}, self.RULES,
                             server="threads = 1\nclient_time = true\n")
        conn = s.conn()
        n = 20
        half_day = 43200 * 10**9
        now = 86400 * 1000 * 10**9 + half_day  # noon: the day's window ends in 43,200 s
        # A first request loads the function library (FUNCTION LOAD, then the
        # FCALL again): not what is counted.
        self.assertEqual(s.decide([("api", "carol")], now=now, conn=conn)[0], 200)
        before = self.calls(redis)
        for k in range(1, n + 1):
            st, h, b = s.decide([("api", "alice"), ("day", "alice"), ("burst", "all")], now=now, conn=conn)
            self.assertEqual((st, b["source"]), (200, "store"), k)
            # t: one unit back 10 ms after (GCRA, 1 s rounded up), at the end
            # of the day (fixed window), when the oldest admit leaves (log).
            self.assertEqual(h["ratelimit"], '"api";r=%d;t=1, "day";r=%d;t=43200, "burst";r=%d;t=60'
                             % (50 - k, 10000 - k, 1000 - k), k)
        for k in range(n):
            st, h, _ = s.request("GET", "/v1/authorize", headers={"X-User": "bob"}, conn=conn)
            self.assertEqual(st, 204, k)
            self.assertRegex(h["ratelimit"], r'^"api";r=\d+;t=\d+, "day";r=\d+;t=\d+, "burst";r=\d+;t=\d+$')
        after = self.calls(redis)
        conn.close()
        used = {c: after.get(c, 0) - before.get(c, 0) for c in set(after) | set(before)}
        # Not TIME either: the store reads it about once a second to measure
        # its clock's offset (docs/redis.md, "The store's clock"), not per request.
        used = {c: v for c, v in used.items() if v != 0 and c not in ("info", "time")}
        # Exactly one call per request: one FCALL, no read-only FCALL (a
        # peek), no script, no GET of its own. Redis counts the commands the
        # function runs in commandstats too: per check a GET of its override
        # key (docs/redis.md, "Overrides") and a GET and a SET of its state
        # key, 3 checks a request here.
        self.assertEqual(used, {"fcall": 2 * n, "get": 2 * 3 * 2 * n, "set": 3 * 2 * n})


class MetricsOnRedis(RedisCase):
    """/metrics with a Redis store holds every family the issue lists, with
    values that match what was done: decisions by policy and result, shadow
    denials, the latency histogram, keys held, store errors and fallbacks,
    deny-cache hits, clock skew."""

    RULES = """
[[rules]]
policy = "api"
key = "header:X-User"

[[rules]]
policy = "watch"
key = "literal:all"
shadow = true
"""

    def test_families_and_values(self):
        redis = self.redis()
        s, _ = self.start_on(redis, {"api": "gcra 1/1h burst=2", "watch": "fixed-window 1/1h"}, self.RULES,
                             server="client_time = true\n")
        now = 86400 * 1000 * 10**9
        for i in range(4):  # 2 admitted, then 2 denied (the second by the deny cache)
            st, _, _ = s.decide([("api", "alice")], now=now + i)
            self.assertEqual(st, 200 if i < 2 else 429)
        for i in range(3):  # the shadow rule: 1 admit, 2 would-be denials (the second by the cache), never a block
            st, _, _ = s.request("GET", "/v1/authorize", headers={"X-User": "u%d" % i})
            self.assertEqual(st, 204)
        # A request 5 s behind alice's latest admit (tolerance 1 s): clock skew.
        st, _, b = s.decide([("api", "bob")], now=now + 10 * 10**9)
        self.assertEqual(st, 200)
        st, _, b = s.decide([("api", "bob")], now=now + 5 * 10**9)
        self.assertEqual((st, b["source"]), (200, "store"))
        m = s.metrics()
        want = {
            'sluice_decisions_total{policy="api",result="allowed"}': 2 + 3 + 2,
            'sluice_decisions_total{policy="api",result="denied"}': 2,
            'sluice_shadow_denials_total{policy="watch"}': 2,
            'sluice_shadow_decisions_total{policy="watch",result="allowed"}': 1,
            "sluice_decision_duration_seconds_count": 4 + 3 + 2,
            'sluice_store_errors_total{kind="call"}': 0,
            'sluice_store_errors_total{kind="state"}': 0,
            "sluice_store_fallbacks_total": 0,
            "sluice_deny_cache_hits_total": 2,
            'sluice_store_decisions_total{source="deny-cache"}': 2,
            # alice 3 (and 1 from the cache), u0-u2 3, the shadow rule 2 (and 1), bob 2
            'sluice_store_decisions_total{source="store"}': 3 + 3 + 2 + 2,
            "sluice_clock_skew_total": 1,
        }
        for name, value in want.items():
            self.assertEqual(metric(m, name), value, name)
        # Keys held: the store's database's key count, as Redis says.
        self.assertEqual(metric(m, "sluice_keys"), redis.command("DBSIZE"))
        self.assertEqual(metric(m, "sluice_keys"), 6)  # alice, u0-u2, bob, the shadow rule's key
        for fam in ["sluice_decision_duration_seconds", "sluice_keys", "sluice_store_errors_total",
                    "sluice_store_fallbacks_total", "sluice_deny_cache_hits_total", "sluice_clock_skew_total"]:
            self.assertTrue(re.search(r"^# TYPE %s " % fam, m, re.M), fam)


if __name__ == "__main__":
    unittest.main()

"""The ACL user docs/redis.md gives ("An ACL user for sluice"), through real
`sluice serve` processes on real servers whose default user is off: one
redis-server (and the cases of a missing permission), Sentinel (a master, a
replica, three sentinels), a Redis Cluster and TLS. Every endpoint that
reaches the store: decide, report, refund, release, overrides, readiness,
reload, metrics.

Each TestCase class is one ctest test (tests/serve/CMakeLists.txt). Every
process is stopped by PID.
"""
import json
import os
import random
import re
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from serve_support import (RedisCluster, RedisSentinels, TlsCerts, TlsRedisServer, base_config,  # noqa: E402
                           metric)
from test_serve_redis import RedisCase  # noqa: E402


class AclEndpoints:
    """The ACL user docs/redis.md gives ("An ACL user for sluice") on real
    servers whose default user is off: decisions, reports, refunds,
    releases, overrides, readiness, reloads and metrics work, with no call
    refused. Mixed into one TestCase per URL kind (`deployment`)."""

    LINE = re.compile(r"^    ACL SETUSER sluice (.+)$", re.M)
    EXTRA = []  # the table's additions for this URL kind
    POLICIES = {"api": "gcra 10/1s", "day": "fixed-window 100/1d", "quo": "quota 5", "jobs": "concurrency 2 lease=30s"}

    def documented(self):
        with open(os.path.join(os.environ.get("SLUICE_SOURCE_DIR", "."), "docs", "redis.md")) as f:
            lines = self.LINE.findall(f.read())
        self.assertEqual(len(lines), 1, "docs/redis.md's ACL SETUSER line")
        return lines[0].split() + self.EXTRA

    def user_rules(self, rules, prefix):
        return [r.replace("PASSWORD", "s3cret").replace("~sluice:*", "~" + prefix + "*") for r in rules]

    def deployment(self, rules, prefix):
        """Sets the user on a fresh server, turns the default user off; the URL."""
        redis = self.redis()
        self.assertEqual(redis.command("ACL", "SETUSER", "sluice", *self.user_rules(rules, prefix)), b"+OK")
        self.assertEqual(redis.command("ACL", "SETUSER", "default", "off"), b"+OK")
        self.assertTrue(redis.command("PING").startswith(b"-NOAUTH"), "the default user is off")
        return redis.url.replace("redis://", "redis://sluice:s3cret@")

    def serve_as(self, rules, prefix="sluice:acl:"):
        url = self.deployment(rules, prefix)
        text = base_config(self.POLICIES, server="threads = 1\nadmin = \"127.0.0.1:0\"\n")
        text += '\n[store]\nurl = "%s"\nkey_prefix = "%s"\n' % (url, prefix)
        s, path = self.start_config(text)
        return s, path

    def post(self, s, path, body):
        st, h, data = s.request("POST", path, json.dumps(body), {"Content-Type": "application/json"})
        return st, h, data

    REFUNDS = True  # a Cluster answers refunds 503 without a call (docs/redis.md, "Refunds")

    def test_the_documented_user_decides(self):
        rules = self.documented()
        self.assertIn("~sluice:*", rules)
        s, path = self.serve_as(rules)
        for i in range(3):
            st, h, b = s.decide([("api", "alice"), ("day", "alice")])
            self.assertEqual((st, b["source"]), (200, "store"), b)
        self.assertEqual(s.request("GET", "/readyz")[0], 200)
        m = s.metrics()
        self.assertEqual(metric(m, "sluice_keys"), 2)  # +dbsize
        # The deny cache's subscription (&sluice:*, +subscribe, +ping); behind
        # Sentinel it follows the master the first calls found.
        deadline = time.monotonic() + 5
        while metric(s.metrics(), "sluice_deny_cache_subscribed") != 1 and time.monotonic() < deadline:
            time.sleep(0.05)
        self.assertEqual(metric(s.metrics(), "sluice_deny_cache_subscribed"), 1)
        # A report (the decision's own FCALL).
        st, _, body = self.post(s, "/v1/report", {"checks": [{"policy": "api", "key": "bob"}], "cost": 2})
        self.assertEqual(st, 200, body)
        # A refund by request id: PTTL gives the mark the record's lifetime.
        st, _, b = s.decide([("quo", "carol", 3)], rid="acl-1")
        self.assertEqual((st, b["source"]), (200, "store"), b)
        if self.REFUNDS:
            st, _, body = self.post(s, "/v1/refund", {"id": "acl-1"})
            self.assertEqual(st, 200, body)
            self.assertEqual(json.loads(body)["checks"][0]["given_back"], 3)
            self.assertEqual(self.post(s, "/v1/refund", {"id": "acl-1"})[0], 409)
        # A lease taken and released.
        st, h, b = s.decide([("jobs", "dave")])
        self.assertEqual((st, b["source"]), (200, "store"), b)
        st, _, body = self.post(s, "/v1/release", {"lease": b["lease"]})
        self.assertEqual(st, 200, body)
        # A redefinition carries the states over (the cas function: GET, SET, DEL).
        with open(path) as f:
            text = f.read()
        with open(path, "w") as f:
            f.write(text.replace('"gcra 10/1s"', '"gcra 20/1s"'))
        st, _, body = s.request("POST", "/admin/reload", admin=True)
        self.assertEqual(st, 200, body)
        st, _, b = s.decide([("api", "alice")])
        self.assertEqual((st, b["source"]), (200, "store"), b)
        # Overrides: set (a SCAN counts them against the bound), list (a
        # SCAN), read and delete.
        path_ = "/admin/v1/overrides/api/alice"
        st, _, body = s.request("PUT", path_, '{"policy":"gcra 50/1s"}', admin=True)
        self.assertEqual(st, 201, body)
        st, _, body = s.request("GET", "/admin/v1/overrides?policy=api", admin=True)
        self.assertEqual((st, [o["key"] for o in json.loads(body)["overrides"]]), (200, ["alice"]), body)
        st, _, b = s.decide([("api", "alice")])
        self.assertEqual((st, b["source"]), (200, "store"), b)
        self.assertEqual(s.request("DELETE", path_, admin=True)[0], 200)
        self.assertEqual(s.request("GET", "/readyz")[0], 200)
        m = s.metrics()
        self.assertEqual(metric(m, 'sluice_store_errors_total{kind="call"}'), 0)
        self.assertEqual(metric(m, 'sluice_store_errors_total{kind="state"}'), 0)
        self.assertEqual(metric(m, 'sluice_store_call_failures_total{reason="noperm"}'), 0)
        self.assertNotIn("warning", s.log())

class AclOnRedis(AclEndpoints, RedisCase):
    """The documented user on one redis-server (redis://); a user missing one
    permission, or with a key pattern that misses the prefix, is never
    admitted silently and shows in the store-error counters."""

    def test_without_scan_an_override_is_refused_and_decisions_go_on(self):
        s, _ = self.serve_as([r for r in self.documented() if r != "+scan"])
        st, _, body = s.request("PUT", "/admin/v1/overrides/api/alice", '{"policy":"gcra 50/1s"}', admin=True)
        self.assertEqual((st, json.loads(body)["error"]["field"]), (503, "store"), body)
        st, _, b = s.decide([("api", "alice")])
        self.assertEqual((st, b["source"]), (200, "store"), b)
        st, h, _ = s.decide([("api", "alice")])
        self.assertEqual(h["ratelimit-policy"], '"api";q=10;w=1')

    def test_the_script_form_needs_evalsha_and_script_load_instead(self):
        rules = [{"+fcall": "+evalsha", "+function|load": "+script|load"}.get(r, r) for r in self.documented()]
        s, _ = self.serve_as(rules)
        st, _, b = s.decide([("api", "alice")])
        self.assertEqual((st, b["source"]), (200, "store"), b)

    def test_a_missing_permission_is_never_a_silent_admit(self):
        rules = self.documented()
        cases = {  # what is taken away: (status, source, kind of store error counted, /readyz)
            "+fcall": (429, "fail-closed", "call", 503),
            "+function|load": (429, "fail-closed", "call", 503),
            "+get": (500, "error", "state", 503),
            "+set": (429, "fail-closed", "call", 200),
            "~sluice:*": (429, "fail-closed", "call", 503),
        }
        for missing, (status, source, kind, ready) in cases.items():
            with self.subTest(missing=missing):
                taken = [r for r in rules if r != missing]
                if missing.startswith("~"):
                    taken.append("~other:*")
                s, _ = self.serve_as(taken)
                st, _, b = s.decide([("api", "alice")])
                self.assertEqual((st, b["source"]), (status, source), b)
                self.assertEqual(s.request("GET", "/readyz")[0], ready)
                self.assertGreaterEqual(metric(s.metrics(), 'sluice_store_errors_total{kind="%s"}' % kind), 1)
                s.stop()


ADMIN_PW = "adm-%08x" % random.getrandbits(32)


def admin_on(command):
    """An all-permissions user for replication and the sentinels on a node
    whose default user goes off, as an operator would set it; `command`
    runs one command on the node and returns its reply (b"+OK" or "OK")."""
    for args in (("ACL", "SETUSER", "admin", "on", ">" + ADMIN_PW, "~*", "&*", "+@all"),
                 ("CONFIG", "SET", "masteruser", "admin"), ("CONFIG", "SET", "masterauth", ADMIN_PW)):
        assert command(*args) in (b"+OK", "OK"), args


class AclOnSentinel(AclEndpoints, RedisCase):
    """The documented user behind Sentinel (redis+sentinel://): the master
    must answer ROLE (+role) before any call goes to it."""

    def deployment(self, rules, prefix):
        d = RedisSentinels()
        self.addCleanup(d.stop)
        for node in (d.master, d.replica):
            admin_on(node.command)
        for i in range(len(d.sentinels)):
            self.assertIn(b"+OK", d.sentinel_command(i, "SENTINEL", "SET", "mymaster", "auth-user", "admin"))
            self.assertIn(b"+OK", d.sentinel_command(i, "SENTINEL", "SET", "mymaster", "auth-pass", ADMIN_PW))
        for node in (d.master, d.replica):
            self.assertEqual(node.command("ACL", "SETUSER", "sluice", *self.user_rules(rules, prefix)), b"+OK")
            self.assertEqual(node.command("ACL", "SETUSER", "default", "off"), b"+OK")
            self.assertTrue(node.command("PING").startswith(b"-NOAUTH"), "the default user is off")
        return d.url.replace("redis+sentinel://", "redis+sentinel://sluice:s3cret@")


class AclOnCluster(AclEndpoints, RedisCase):
    """The documented user in a Redis Cluster (redis+cluster://), with the
    table's `+cluster|slots +asking`, on every node."""

    EXTRA = ["+cluster|slots", "+asking"]
    REFUNDS = False  # a Cluster answers refunds 503 without a call (docs/redis.md, "Refunds")

    def deployment(self, rules, prefix):
        c = RedisCluster()
        self.addCleanup(c.stop)
        for port in c.ports:
            def command(*args, port=port):
                return c.run_cli("-p", str(port), *args).strip()
            admin_on(command)
            self.assertEqual(command("ACL", "SETUSER", "sluice", *self.user_rules(rules, prefix)), "OK")
        for port in c.ports:
            self.assertEqual(c.run_cli("-p", str(port), "ACL", "SETUSER", "default", "off").strip(), "OK")
        return c.url.replace("redis+cluster://", "redis+cluster://sluice:s3cret@")


class AclOnTls(AclEndpoints, RedisCase):
    """The documented user over TLS (rediss://)."""

    def deployment(self, rules, prefix):
        certs = TlsCerts()
        self.addCleanup(certs.remove)
        redis = TlsRedisServer(certs)
        self.addCleanup(redis.stop)
        self.assertEqual(redis.command("ACL", "SETUSER", "sluice", *self.user_rules(rules, prefix)), b"+OK")
        self.assertEqual(redis.command("ACL", "SETUSER", "default", "off"), b"+OK")
        return redis.tls_url("sluice:s3cret")



if __name__ == "__main__":
    unittest.main()

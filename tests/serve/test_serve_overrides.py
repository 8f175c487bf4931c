"""The overrides admin API through real `sluice serve` processes
(semantics.md, "Overrides"; docs/serve.md, "Overrides"): PUT gives one key
of a policy its own limit, GET reads one or a page, DELETE removes it; the
key's state is carried in and out (a quota's units used stay used); bad
input is a 4xx naming the field and changes nothing; only the admin
listener serves it; overrides outlive a reload and, with a snapshot, a
restart; they are counted in /metrics.
"""
import json
import os
import shutil
import sys
import tempfile
import time
import unittest
import urllib.parse

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from serve_support import RedisServer, ServeCase, base_config, metric, write_config  # noqa: E402
from test_serve_redis import fresh_prefix, store_section  # noqa: E402

POLICIES = {"api": "quota 3", "win": "gcra 5/1h"}


def path_of(policy, key):
    """The override's path: the key's bytes percent-encoded (every byte may be)."""
    return "/admin/v1/overrides/%s/%s" % (policy, urllib.parse.quote(key, safe=""))


class Overrides(ServeCase):
    def server(self, extra_args=(), policies=None):
        text = base_config(policies or POLICIES, "", 'admin = "127.0.0.1:0"\n')
        s, path = self.start_config(text, *extra_args)
        return s, path

    def put(self, s, policy, key, body):
        raw = body if isinstance(body, str) else json.dumps(body)
        st, _, data = s.request("PUT", path_of(policy, key), raw, {"Content-Type": "application/json"}, admin=True)
        return st, json.loads(data)

    def get(self, s, path):
        st, _, data = s.request("GET", path, admin=True)
        return st, json.loads(data)

    def admits(self, s, policy, key, most=50):
        """How many single requests on (policy, key) are admitted in a row."""
        n = 0
        while n < most and s.decide([(policy, key)])[0] == 200:
            n += 1
        return n

    def test_put_get_list_delete_and_the_state_carries_over(self):
        s, _ = self.server()
        self.assertEqual(s.decide([("api", "alice")])[0], 200)  # 1 of 3 used
        st, b = self.put(s, "api", "alice", {"policy": "quota 10"})
        self.assertEqual((st, b), (201, {"policy_name": "api", "key": "alice", "policy": "quota 10",
                                         "change": "created"}))
        # The unit used stays used: 9 more, not 10.
        self.assertEqual(self.admits(s, "api", "alice"), 9)
        self.assertEqual(self.admits(s, "api", "bob"), 3)  # another key keeps the configured quota
        # RateLimit-Policy advertises each key's own limit (denials charge nothing).
        st, h, _ = s.decide([("api", "alice")])
        self.assertEqual((st, h["ratelimit-policy"]), (429, '"api";q=10'))
        st, h, _ = s.decide([("api", "bob")])
        self.assertEqual((st, h["ratelimit-policy"]), (429, '"api";q=3'))
        st, b = self.put(s, "api", "alice", {"policy": "quota 10"})
        self.assertEqual((st, b["change"]), (200, "unchanged"))
        st, b = self.put(s, "api", "alice", {"policy": "quota 12"})
        self.assertEqual((st, b["change"]), (200, "replaced"))
        self.assertEqual(self.admits(s, "api", "alice"), 2)
        self.assertEqual(self.get(s, path_of("api", "alice")),
                         (200, {"policy_name": "api", "key": "alice", "policy": "quota 12"}))
        for k in ("carol", "dave"):
            self.assertEqual(self.put(s, "api", k, {"policy": "quota 7"})[0], 201)
        st, page = self.get(s, "/admin/v1/overrides?policy=api&limit=2")
        self.assertEqual(st, 200)
        self.assertEqual([o["key"] for o in page["overrides"]], ["alice", "carol"])
        self.assertEqual(page["next_cursor"], "carol")
        st, page = self.get(s, "/admin/v1/overrides?policy=api&limit=2&cursor=" + page["next_cursor"])
        self.assertEqual(([o["key"] for o in page["overrides"]], page["next_cursor"]), (["dave"], None))
        self.assertEqual(self.get(s, "/admin/v1/overrides?policy=win")[1], {"overrides": [], "next_cursor": None})
        # Deleted: alice's 12 units used are carried back to quota 3: spent.
        st, _, data = s.request("DELETE", path_of("api", "alice"), admin=True)
        self.assertEqual((st, json.loads(data)), (200, {"deleted": True}))
        self.assertEqual(s.decide([("api", "alice")])[0], 429)
        st, b = self.get(s, path_of("api", "alice"))
        self.assertEqual((st, b["error"]["field"]), (404, "key"))
        st, _, data = s.request("DELETE", path_of("api", "alice"), admin=True)
        self.assertEqual((st, json.loads(data)["error"]["field"]), (404, "key"))
        m = s.metrics()
        self.assertEqual(metric(m, "sluice_overrides"), 2)
        self.assertEqual(metric(m, 'sluice_override_changes_total{op="create"}'), 3)
        self.assertEqual(metric(m, 'sluice_override_changes_total{op="replace"}'), 1)
        self.assertEqual(metric(m, 'sluice_override_changes_total{op="delete"}'), 1)

    def test_bad_input_is_a_4xx_naming_the_field_and_changes_nothing(self):
        s, _ = self.server()
        bodies = [("{", "body"), ("[1]", "body"), ({}, "policy"), ({"policy": 5}, "policy"),
                  ({"policy": "gcra 1/1x"}, "policy"), ({"policy": "fixed-window 5/1s"}, "policy"),
                  ({"policy": "quota 5", "ttl": 3}, "ttl")]
        for body, field in bodies:
            st, b = self.put(s, "api", "alice", body)
            self.assertEqual((st, b["error"]["field"]), (400, field), body)
        st, b = self.put(s, "nope", "alice", {"policy": "quota 5"})
        self.assertEqual((st, b["error"]["field"]), (404, "policy"))
        for key_path, field in (("x" * 257, "key"), ("%zz", "key"), ("%25shadow%3Ax", "key"), ("", "key"),
                                ("alice/x", "key"), ("alice/", "key"), ("/alice", "key")):
            st, _, data = s.request("PUT", "/admin/v1/overrides/api/" + key_path, '{"policy":"quota 5"}',
                                    admin=True)
            self.assertEqual((st, json.loads(data)["error"]["field"]), (400, field), key_path)
        # A raw '/' in the key is a 400 for every method: it must be written %2F.
        for method in ("GET", "DELETE"):
            st, _, data = s.request(method, "/admin/v1/overrides/api/alice/x", admin=True)
            self.assertEqual((st, json.loads(data)["error"]["field"]), (400, "key"), method)
        for q, status, field in (("", 400, "policy"), ("?policy=zzz", 404, "policy"),
                                 ("?policy=api&limit=0", 400, "limit"), ("?policy=api&limit=x", 400, "limit"),
                                 ("?policy=api&limit=1001", 400, "limit")):
            st, b = self.get(s, "/admin/v1/overrides" + q)
            self.assertEqual((st, b["error"]["field"]), (status, field), q)
        st, h, _ = s.request("POST", path_of("api", "alice"), "{}", admin=True)
        self.assertEqual((st, h.get("allow")), (405, "GET, PUT, DELETE"))
        # The decision listener does not serve it.
        st, _, _ = s.request("PUT", path_of("api", "alice"), '{"policy":"quota 50"}')
        self.assertEqual(st, 404)
        # Nothing changed: no override, alice still has the configured 3.
        self.assertEqual(self.get(s, "/admin/v1/overrides?policy=api")[1]["overrides"], [])
        self.assertEqual(self.admits(s, "api", "alice"), 3)
        self.assertEqual(metric(s.metrics(), "sluice_overrides"), 0)

    def test_a_key_of_any_bytes_and_the_bound_on_its_length(self):
        s, _ = self.server()
        key = "tenant/a b%+?#\u00e9"
        st, b = self.put(s, "api", key, {"policy": "quota 5"})
        self.assertEqual(st, 201)
        self.assertEqual(urllib.parse.unquote(b["key"]), key)
        self.assertEqual(self.admits(s, "api", key), 5)
        self.assertEqual(self.admits(s, "api", "tenant"), 3)
        st, b = self.get(s, "/admin/v1/overrides?policy=api")
        self.assertEqual([urllib.parse.unquote(o["key"]) for o in b["overrides"]], [key])
        self.assertEqual(self.put(s, "api", "k" * 256, {"policy": "quota 5"})[0], 201)  # max_key_bytes exactly

    def test_a_reload_keeps_the_override_and_a_snapshot_keeps_it_across_a_restart(self):
        snap = tempfile.mkdtemp(prefix="sluice-ov-snap-")
        self.addCleanup(shutil.rmtree, snap, True)
        s, cfg = self.server(("--snapshot", snap))
        self.assertEqual(self.put(s, "api", "alice", {"policy": "quota 6"})[0], 201)
        for _ in range(4):
            self.assertEqual(s.decide([("api", "alice")])[0], 200)
        # A reload that changes the policy leaves the override in force.
        with open(cfg, "w") as f:
            f.write(base_config({"api": "quota 4", "win": "gcra 5/1h"}, "", 'admin = "127.0.0.1:0"\n'))
        st, _, data = s.request("POST", "/admin/reload", admin=True)
        self.assertEqual((st, json.loads(data)["changed"]), (200, ["api"]))
        self.assertEqual(self.get(s, path_of("api", "alice"))[1]["policy"], "quota 6")
        self.assertEqual(s.decide([("api", "alice")])[0], 200)  # 5 of 6
        self.assertEqual(s.stop(), 0)
        s2 = self.start("--config", cfg, "--snapshot", snap)
        self.assertEqual(self.get(s2, path_of("api", "alice"))[1]["policy"], "quota 6")
        self.assertEqual(self.admits(s2, "api", "alice"), 1)
        self.assertEqual(self.admits(s2, "api", "bob"), 4)


class OverridesOnRedis(ServeCase):
    """The admin API on the Redis store (docs/redis.md, "Overrides"): the
    override lives in Redis, so a fleet of `sluice serve` processes on one
    server applies a PUT on any of them at its very next decision, and a
    DELETE hands the key back to the configured limit with its state
    carried (a throttled tenant is never handed a fresh limit)."""

    def redis_text(self, redis, prefix, server="", **store):
        return base_config(POLICIES, "", 'admin = "127.0.0.1:0"\n' + server) + store_section(redis, prefix, **store)

    def put(self, s, policy, key, body):
        raw = body if isinstance(body, str) else json.dumps(body)
        st, _, data = s.request("PUT", path_of(policy, key), raw, {"Content-Type": "application/json"}, admin=True)
        return st, json.loads(data)

    def get(self, s, path):
        st, _, data = s.request("GET", path, admin=True)
        return st, json.loads(data)

    def test_put_get_list_delete_and_bad_input(self):
        redis = RedisServer()
        self.addCleanup(redis.stop)
        s, _ = self.start_config(self.redis_text(redis, fresh_prefix()))
        self.assertEqual(s.decide([("api", "alice")])[0], 200)  # 1 of 3 used
        # Bad input: a 4xx naming the field, and nothing charged or changed.
        for body, field in (({"policy": "quota"}, "policy"), ({"policy": "fixed-window 5/1s"}, "policy"),
                            ("{", "body"), ({"policy": "quota 5", "ttl": 3}, "ttl")):
            st, b = self.put(s, "api", "alice", body)
            self.assertEqual((st, b["error"]["field"]), (400, field), body)
        self.assertEqual(self.get(s, "/admin/v1/overrides?policy=api")[1]["overrides"], [])
        st, b = self.put(s, "api", "alice", {"policy": "quota 10"})
        self.assertEqual((st, b["change"]), (201, "created"))
        n = 0
        while n < 20 and s.decide([("api", "alice")])[0] == 200:
            n += 1
        self.assertEqual(n, 9)  # the unit used stays used
        st, h, _ = s.decide([("api", "alice")])
        self.assertEqual((st, h["ratelimit-policy"]), (429, '"api";q=10'))
        self.assertEqual(self.put(s, "api", "alice", {"policy": "quota 10"})[1]["change"], "unchanged")
        for k in ("dave", "carol"):
            self.assertEqual(self.put(s, "api", k, {"policy": "quota 7"})[0], 201)
        st, page = self.get(s, "/admin/v1/overrides?policy=api&limit=2")
        self.assertEqual(([o["key"] for o in page["overrides"]], page["next_cursor"]), (["alice", "carol"], "carol"))
        st, page = self.get(s, "/admin/v1/overrides?policy=api&limit=2&cursor=carol")
        self.assertEqual(([o["key"] for o in page["overrides"]], page["next_cursor"]), (["dave"], None))
        self.assertEqual(self.get(s, path_of("api", "dave")), (200, {"policy_name": "api", "key": "dave",
                                                                    "policy": "quota 7"}))
        st, _, data = s.request("DELETE", path_of("api", "alice"), admin=True)
        self.assertEqual((st, json.loads(data)), (200, {"deleted": True}))
        self.assertEqual(s.decide([("api", "alice")])[0], 429)  # 10 used, carried back to quota 3
        self.assertEqual(self.get(s, path_of("api", "alice"))[0], 404)
        m = s.metrics()
        self.assertEqual(metric(m, 'sluice_override_changes_total{op="create"}'), 3)
        self.assertEqual(metric(m, 'sluice_override_changes_total{op="delete"}'), 1)
        self.assertIsNone(metric(m, "sluice_overrides"))  # a count would take a call: not shown

    def test_a_fleet_applies_a_put_at_its_next_decision_and_a_delete_carries_the_state(self):
        redis = RedisServer()
        self.addCleanup(redis.stop)
        # Without the deny cache: a process's cached denial would answer
        # until it ends, over-denying (docs/redis.md, "The deny cache").
        path = write_config(self.redis_text(redis, fresh_prefix(), "threads = 1\n", deny_cache="false"))
        self.addCleanup(os.unlink, path)
        fleet = [self.start("--config", path) for _ in range(4)]
        # gcra 5/1h: 4 of the burst of 5 used, through two processes.
        for s in (fleet[0], fleet[1], fleet[0], fleet[1]):
            self.assertEqual(s.decide([("win", "t")])[0], 200)
        # A PUT on the third binds every process at its very next decision:
        # 4 more fit under a burst of 8 (its debt carried), never 8.
        st, _ = self.put(fleet[2], "win", "t", {"policy": "gcra 8/1h"})
        self.assertEqual(st, 201)
        for s in (fleet[3], fleet[0], fleet[1], fleet[2]):
            st, h, _ = s.decide([("win", "t")])
            self.assertEqual((st, h["ratelimit-policy"]), (200, '"win";q=8;w=3600'))
        for s in fleet:
            self.assertEqual(s.decide([("win", "t")])[0], 429)
        self.assertEqual(self.get(fleet[1], path_of("win", "t"))[1]["policy"], "gcra 8/1h")
        # A DELETE on the second: every process is back on gcra 5/1h with
        # the 8 units' debt carried: denied, not a fresh burst of 5.
        st, _, data = fleet[1].request("DELETE", path_of("win", "t"), admin=True)
        self.assertEqual((st, json.loads(data)), (200, {"deleted": True}))
        for s in fleet:
            st, h, b = s.decide([("win", "t")])
            self.assertEqual((st, h["ratelimit-policy"], b["source"]), (429, '"win";q=5;w=3600', "store"))
        # Another key never had an override: its own 5.
        self.assertEqual(sum(fleet[i % 4].decide([("win", "u")])[0] == 200 for i in range(8)), 5)


class RevokeARaisedLimit(ServeCase):
    """A tenant keeps using a raised sliding-log limit while the operator
    revokes it (semantics.md, "Overrides": always revocable). The report, on
    Redis: `sliding-log 5/4s` raised to `50/4s`, 24 DELETEs over three
    windows all refused (400 `policy`), 82 admits against ~15 under the
    configured limit."""

    W = 2.0  # the window, seconds: sliding-log 5/2s raised to 50/2s
    POLICIES = {"slog": "sliding-log 5/2s"}

    def start_service(self):
        return self.start_config(base_config(self.POLICIES, "", 'admin = "127.0.0.1:0"\n'))[0]

    def test_the_delete_is_made_and_every_admit_after_it_keeps_the_configured_limit(self):
        s = self.start_service()
        path = "/admin/v1/overrides/slog/tenant"
        st, _, _ = s.request("PUT", path, '{"policy":"sliding-log 50/2s"}', {"Content-Type": "application/json"},
                             admin=True)
        self.assertEqual(st, 201)
        conn = s.conn()
        admits = []  # (sent, answered) of every admit, by the client's clock
        deleted = None
        start = time.monotonic()
        while time.monotonic() - start < 2.5 * self.W:  # bounded: about 100 requests
            if deleted is None and time.monotonic() - start > 0.4 * self.W:
                st, _, data = s.request("DELETE", path, admin=True)
                self.assertEqual((st, json.loads(data)), (200, {"deleted": True}))
                deleted = time.monotonic()
            sent = time.monotonic()
            st, _, b = s.decide([("slog", "tenant")], conn=conn)
            answered = time.monotonic()
            self.assertIn(st, (200, 429), b)
            if st == 200:
                admits.append((sent, answered))
            time.sleep(0.04)
        conn.close()
        before = [a for a in admits if a[1] < deleted]
        after = [a for a in admits if a[0] > deleted]
        self.assertGreater(len(before), 5)  # the raised limit was in use
        self.assertGreater(len(after), 0)  # and the configured one admits again in time
        # The definition of sliding-log 5/W, counted on the admits surely in
        # the W seconds up to each admit after the delete (the server decided
        # each between its sending and its answer): at most 5.
        for i, (sent, answered) in enumerate(admits):
            if sent <= deleted:
                continue
            surely = [b for b in admits[: i + 1] if b[0] > answered - self.W]
            self.assertLessEqual(len(surely), 5, "an admit %.3fs after the delete" % (sent - deleted))


class RevokeARaisedLimitOnRedis(RevokeARaisedLimit):
    def start_service(self):
        redis = RedisServer()
        self.addCleanup(redis.stop)
        text = base_config(self.POLICIES, "", 'admin = "127.0.0.1:0"\n') + store_section(redis, fresh_prefix())
        return self.start_config(text)[0]


if __name__ == "__main__":
    unittest.main()

"""POST /v1/refund through real `sluice serve` processes (semantics.md,
"Refunds"; docs/serve.md): a refund by request id gives back what that
decision took, once; unknown ids are 404 and a second refund (or a
denial's id) 409, naming `id`; bad bodies are 400 naming the field; the
token guards it as it guards /v1/report. A hostile client that knows
another request's id can refund it (documented: ids must be unguessable);
a replayed refund gives back nothing more; a refund racing its own
decision's retry leaves the decision replayed, never charged again. On the
memory store (Refunds) and on a real redis-server (RefundsOnRedis).
"""
import json
import os
import sys
import threading
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from serve_support import RedisServer, ServeCase, base_config  # noqa: E402
from test_serve_redis import fresh_prefix, store_section  # noqa: E402

SECOND = 10**9


class Refunds(ServeCase):
    def store_section(self):
        return ""

    def server(self, extra=""):
        policies = {"quo": "quota 3", "win": "fixed-window 5/1h"}
        s, _ = self.start_config(base_config(policies, "", extra) + self.store_section())
        return s

    def refund(self, s, body, headers=None):
        h = {"Content-Type": "application/json"}
        h.update(headers or {})
        st, _, data = s.request("POST", "/v1/refund", body if isinstance(body, str) else json.dumps(body), h)
        return st, json.loads(data)

    def test_gives_back_once_and_the_id_still_replays(self):
        s = self.server()
        st, _, b = s.decide([("quo", "alice", 2), ("win", "alice")], rid="r-1")
        self.assertEqual((st, b["remaining"]), (200, 1))
        st, b = self.refund(s, {"id": "r-1"})
        self.assertEqual(st, 200)
        self.assertTrue(b["refunded"])
        self.assertEqual([c["given_back"] for c in b["checks"]], [2, 1])
        self.assertEqual([c["remaining"] for c in b["checks"]], [3, 5])
        # Once: a replayed refund gives nothing more.
        st, b = self.refund(s, {"id": "r-1"})
        self.assertEqual((st, b["error"]["field"], b["error"]["outcome"]), (409, "id", "already-refunded"))
        # The id stays remembered: its retry replays the first decision,
        # charging nothing (the quota is whole: 3 units admit at once).
        st, _, b = s.decide([("quo", "alice", 2), ("win", "alice")], rid="r-1")
        self.assertEqual((st, b["source"]), (200, "replayed"))
        self.assertEqual(s.decide([("quo", "alice", 3)])[0], 200)
        m = s.metrics()
        self.assertIn('sluice_refunds_total{outcome="refunded"} 1', m)
        self.assertIn('sluice_refunds_total{outcome="already-refunded"} 1', m)

    def test_unknown_denied_and_bad_bodies(self):
        s = self.server()
        st, b = self.refund(s, {"id": "never-used"})
        self.assertEqual((st, b["error"]["field"], b["error"]["outcome"]), (404, "id", "unknown-id"))
        self.assertEqual(s.decide([("quo", "bob", 3)], rid="all")[0], 200)
        self.assertEqual(s.decide([("quo", "bob")], rid="denied")[0], 429)
        st, b = self.refund(s, {"id": "denied"})
        self.assertEqual((st, b["error"]["field"], b["error"]["outcome"]), (409, "id", "not-refundable"))
        cases = [("{", "body"), ("[1]", "body"), ({}, "id"), ({"id": ""}, "id"), ({"id": 7}, "id"),
                 ({"id": "x" * 257}, "id"), ({"id": "all", "extra": 1}, "extra"), ({"id": "all", "now": 5}, "now")]
        for body, field in cases:
            st, b = self.refund(s, body)
            self.assertEqual((st, b["error"]["field"]), (400, field), body)
        # None of them refunded anything: bob's quota is still spent.
        self.assertEqual(s.decide([("quo", "bob")])[0], 429)
        st, h, _ = s.request("GET", "/v1/refund")
        self.assertEqual((st, h.get("allow")), (405, "POST"))

    def test_the_token_guards_it_as_it_guards_reports(self):
        s = self.server('token = "s3cret"\n')
        auth = {"Authorization": "Bearer s3cret"}
        self.assertEqual(s.decide([("quo", "k")], rid="t-1", headers=auth)[0], 200)
        st, b = self.refund(s, {"id": "t-1"})
        self.assertEqual((st, b["error"]["field"]), (401, "authorization"))
        self.assertEqual(self.refund(s, {"id": "t-1"}, auth)[0], 200)

    def test_a_hostile_client_refunds_an_id_it_knows_of_another_request(self):
        # An id names a request, not a caller: whoever holds the token and
        # the id can refund it (docs/serve.md). The victim's decision is
        # given back once, and nobody can refund it twice.
        s = self.server()
        self.assertEqual(s.decide([("quo", "victim", 3)], rid="victim-req")[0], 200)
        self.assertEqual(self.refund(s, {"id": "victim-req"})[0], 200)  # the hostile client
        self.assertEqual(self.refund(s, {"id": "victim-req"})[0], 409)  # the victim's own refund
        self.assertEqual(s.decide([("quo", "victim", 3)])[0], 200)  # given back once, not more

    def test_a_refund_racing_its_decisions_retry(self):
        s = self.server()
        self.assertEqual(s.decide([("quo", "race", 1)], rid="race-1")[0], 200)
        out = []

        def retry():
            out.append(s.decide([("quo", "race", 1)], rid="race-1", conn=s.conn())[2]["source"])

        def refund():
            c = s.conn()
            c.request("POST", "/v1/refund", json.dumps({"id": "race-1"}), {"Content-Type": "application/json"})
            out.append(c.getresponse().status)

        ts = [threading.Thread(target=f) for f in (retry, refund, retry, refund)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        self.assertEqual(sorted(map(str, out)), sorted(["replayed", "replayed", "200", "409"]))
        # Refunded once, never charged again: all 3 units are there.
        self.assertEqual(s.decide([("quo", "race", 3)])[0], 200)


class RefundsOnRedis(Refunds):
    """Refunds on a real redis-server: the same answers."""

    def store_section(self):
        redis = RedisServer()
        self.addCleanup(redis.stop)
        return store_section(redis, fresh_prefix())

    def test_concurrent_refunds_on_one_key_each_win_their_compare_and_set(self):
        # 400 refunds of different ids on one quota key, from 8 clients at
        # once through 4 threads: each loses compare-and-sets to the others
        # and reads again (docs/redis.md, "Refunds"); none answers 503.
        n = 400
        policies = {"pool": "quota %d" % n}
        s, _ = self.start_config(base_config(policies, "", "threads = 4\n") + self.store_section())
        c = s.conn()
        for i in range(n):
            self.assertEqual(s.decide([("pool", "shared")], rid="rf-%d" % i, conn=c)[0], 200)
        self.assertEqual(s.decide([("pool", "shared")], conn=c)[0], 429)
        statuses = []
        lock = threading.Lock()

        def refunder(ids):
            conn = s.conn(timeout=30)
            mine = []
            for i in ids:
                conn.request("POST", "/v1/refund", json.dumps({"id": "rf-%d" % i}), {"Content-Type": "application/json"})
                r = conn.getresponse()
                r.read()
                mine.append(r.status)
            with lock:
                statuses.extend(mine)

        ts = [threading.Thread(target=refunder, args=(range(k, n, 8),)) for k in range(8)]
        for t in ts:
            t.start()
        for t in ts:
            t.join(60)
        self.assertEqual(len(statuses), n)
        self.assertEqual({st: statuses.count(st) for st in set(statuses)}, {200: n})
        m = s.metrics()
        self.assertIn('sluice_refunds_total{outcome="refunded"} %d' % n, m)
        self.assertIn('sluice_store_errors_total{kind="call"} 0', m)
        # Every unit is back: the whole quota admits again, once.
        self.assertEqual(s.decide([("pool", "shared", n)])[0], 200)
        self.assertEqual(s.decide([("pool", "shared")])[0], 429)


if __name__ == "__main__":
    unittest.main()

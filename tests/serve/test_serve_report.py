"""POST /v1/report through real `sluice serve` processes (semantics.md,
"Reports"): a report charges every check whatever the limits say, never
denies, answers with the figures after the charge, and later requests wait
exactly as long as the debt takes to clear; bad input is a 400 naming the
field and charges nothing. On the memory store (Reports) and on a real
redis-server (ReportsOnRedis), with the same answers.
"""
import json
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from serve_support import RedisServer, ServeCase, base_config  # noqa: E402
from test_serve_redis import fresh_prefix, store_section  # noqa: E402

SECOND = 10**9
T0 = 86400 * 1000 * SECOND  # a whole number of days since the epoch: every window starts here


class Reports(ServeCase):
    def store_section(self):
        return ""

    def server(self):
        policies = {"tok": "gcra 10/10s burst=10", "win": "fixed-window 5/1m", "quo": "quota 3"}
        s, _ = self.start_config(base_config(policies, "", "client_time = true\n") + self.store_section())
        return s

    def report(self, s, body):
        st, _, data = s.request("POST", "/v1/report", json.dumps(body), {"Content-Type": "application/json"})
        return st, json.loads(data)

    def test_a_debt_clears_exactly_when_it_is_paid(self):
        s = self.server()
        # 1 token a second, 10 at most; 30 spent: 20 past empty, so one more
        # is admitted 21 s later, not a nanosecond earlier.
        st, b = self.report(s, {"checks": [{"policy": "tok", "key": "llm"}], "cost": 30, "now": T0})
        self.assertEqual(st, 200)
        self.assertTrue(b["charged"])
        self.assertEqual(b["remaining"], 0)
        self.assertEqual(b["retry_after_ns"], 21 * SECOND)
        self.assertEqual(b["retry_after"], 21)
        self.assertEqual(b["reset_after_ns"], 30 * SECOND)
        self.assertEqual(b["checks"][0]["cost"], 30)
        self.assertEqual(s.decide([("tok", "llm")], now=T0 + 21 * SECOND - 1)[0], 429)
        self.assertEqual(s.decide([("tok", "llm")], now=T0 + 21 * SECOND)[0], 200)

    def test_never_denied_and_every_check_charged_at_its_cost(self):
        s = self.server()
        st, b = self.report(s, {"checks": [{"policy": "win", "key": "k", "cost": 9}, {"policy": "quo", "key": "k"}],
                                "cost": 2, "now": T0 + 5 * SECOND})
        self.assertEqual(st, 200)
        self.assertEqual([c["remaining"] for c in b["checks"]], [0, 1])
        self.assertEqual(b["checks"][0]["retry_after_ns"], 55 * SECOND)  # the window ends at T0 + 60 s
        self.assertEqual(b["checks"][1]["retry_after_ns"], 0)
        self.assertEqual(b["retry_after_ns"], 55 * SECOND)
        self.assertEqual(s.decide([("win", "k")], now=T0 + 59 * SECOND)[0], 429)
        self.assertEqual(s.decide([("win", "k")], now=T0 + 60 * SECOND)[0], 200)
        # A report past everything a quota holds: charged (up to N), still a 200.
        st, b = self.report(s, {"checks": [{"policy": "quo", "key": "k", "cost": 50}], "now": T0})
        self.assertEqual((st, b["remaining"], b["retry_after_ns"]), (200, 0, "never"))

    def test_bad_input_names_the_field_and_charges_nothing(self):
        s = self.server()
        cases = [
            ({"checks": [{"policy": "tok", "key": "k"}], "cost": 0}, "cost"),
            ({"checks": [{"policy": "tok", "key": "k"}], "cost": -3}, "cost"),
            ({"checks": [{"policy": "tok", "key": "k", "cost": -1}]}, "checks[0].cost"),
            ({"checks": [{"policy": "nope", "key": "k"}]}, "checks[0].policy"),
            ({"checks": [{"policy": "tok", "key": "k"}], "id": "r-1"}, "id"),
            ({"checks": []}, "checks"),
            ({"checks": [{"policy": "tok", "key": "k"}, {"policy": "tok", "key": "k"}]}, "checks[1]"),
        ]
        for body, field in cases:
            body["now"] = T0
            st, b = self.report(s, body)
            self.assertEqual(st, 400, body)
            self.assertEqual(b["error"]["field"], field, body)
        # Nothing was charged: the key still has its whole burst.
        st, _, b = s.decide([("tok", "k")], now=T0)
        self.assertEqual((st, b["remaining"]), (200, 9))
        st, h, _ = s.request("GET", "/v1/report")
        self.assertEqual((st, h.get("allow")), (405, "POST"))


class ReportsOnRedis(Reports):
    """Reports on a real redis-server: one FCALL, the same answers."""

    def store_section(self):
        redis = RedisServer()
        self.addCleanup(redis.stop)
        return store_section(redis, fresh_prefix())


if __name__ == "__main__":
    unittest.main()

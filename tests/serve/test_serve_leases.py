"""Leases through a real `sluice serve` process on the memory store
(semantics.md, "Leases"; docs/serve.md, "Leases"): a concurrency policy
admits at most N in flight, each admit answering its lease id; POST
/v1/release frees it; an expired lease frees itself on time; ids that are
not ids are a 400 naming `lease`, ids held nowhere a 404 naming `lease`; an
id forged for another key releases nothing; /v1/authorize hands the id to
nginx in `Sluice-Lease`; RateLimit-Policy says qu="concurrent-requests".
"""
import json
import os
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from serve_support import ServeCase, base_config, metric  # noqa: E402

SECOND = 10**9


class Leases(ServeCase):
    POLICIES = {"jobs": "concurrency 3 lease=1s", "both": "all(gcra 100/1m, concurrency 2 lease=30s)",
                "rate": "gcra 100/1m", "tight": "all(gcra 1/1m, concurrency 5)"}

    def server(self, rules=""):
        s, _ = self.start_config(base_config(self.POLICIES, rules))
        return s

    def release(self, s, body):
        raw = body if isinstance(body, str) else json.dumps(body)
        st, _, data = s.request("POST", "/v1/release", raw, {"Content-Type": "application/json"})
        return st, json.loads(data)

    def test_at_most_n_in_flight_and_a_release_frees_one(self):
        s = self.server()
        leases = []
        for _ in range(3):
            st, h, b = s.decide([("jobs", "u")])
            self.assertEqual(st, 200)
            self.assertIn("lease", b)
            leases.append(b["lease"])
            self.assertEqual(h["ratelimit-policy"], '"jobs";q=3;qu="concurrent-requests"')
        self.assertEqual(len(set(leases)), 3)
        st, _, b = s.decide([("jobs", "u")])
        self.assertEqual(st, 429)
        self.assertNotIn("lease", b)
        st, b = self.release(s, {"lease": leases[1]})
        self.assertEqual(st, 200)
        self.assertEqual(b["released"], 1)
        self.assertEqual(b["checks"], [{"policy": "jobs", "key": "u", "released": 1}])
        self.assertEqual(s.decide([("jobs", "u")])[0], 200)  # the freed unit
        self.assertEqual(s.decide([("jobs", "u")])[0], 429)
        # Released once: a second release holds nothing.
        st, b = self.release(s, {"lease": leases[1]})
        self.assertEqual(st, 404)
        self.assertEqual(b["error"]["field"], "lease")
        m = s.metrics()
        self.assertEqual(metric(m, 'sluice_lease_releases_total{result="released"}'), 1)
        self.assertEqual(metric(m, 'sluice_lease_releases_total{result="not_held"}'), 1)

    def test_an_expired_lease_frees_itself_on_time(self):
        s = self.server()
        first = time.time()
        st, _, b = s.decide([("jobs", "k")], cost=3)
        self.assertEqual(st, 200)
        self.assertEqual(b["reset_after_ns"], SECOND)
        st, _, b = s.decide([("jobs", "k")])
        self.assertEqual(st, 429)
        wait = b["retry_after_ns"]
        self.assertGreater(wait, 0)
        self.assertLessEqual(wait, SECOND)
        # Not before the lease's second is over (the holder crashed: nobody releases).
        if time.time() - first < 0.5:
            self.assertEqual(s.decide([("jobs", "k")])[0], 429)
        time.sleep(max(0.0, first + 1.05 - time.time()))
        st, _, b = s.decide([("jobs", "k")], cost=3)
        self.assertEqual(st, 200)  # every unit back, on time
        # The new admit holds its own lease, released as any other.
        self.assertEqual(self.release(s, {"lease": b["lease"]})[0], 200)

    def test_one_lease_for_all_the_checks_of_a_request(self):
        s = self.server()
        st, _, b = s.decide([("both", "a"), ("rate", "a"), ("jobs", "a")])
        self.assertEqual(st, 200)
        lease = b["lease"]
        st, r = self.release(s, {"lease": lease})
        self.assertEqual(st, 200)
        self.assertEqual(r["released"], 2)
        self.assertEqual([c["policy"] for c in r["checks"]], ["both", "jobs"])  # the checks holding a concurrency part

    def test_a_request_without_concurrency_has_no_lease(self):
        s = self.server()
        st, h, b = s.decide([("rate", "x")])
        self.assertEqual(st, 200)
        self.assertNotIn("lease", b)
        self.assertNotIn("qu=", h["ratelimit-policy"])

    def test_denied_by_the_rate_holds_no_lease(self):
        s = self.server()
        self.assertEqual(s.decide([("tight", "z")])[0], 200)
        st, _, b = s.decide([("tight", "z")])
        self.assertEqual(st, 429)
        self.assertNotIn("lease", b)
        self.assertEqual(b["checks"][0]["remaining"], 0)

    def test_bad_ids_are_400_naming_lease(self):
        s = self.server()
        good = s.decide([("jobs", "b")])[2]["lease"]
        for bad in ["", "nope", "l1.", "l1.zz", "l2." + good[3:], good + ".", good[:-1] + "*", "l1.0000000000000000.am9icw.Yg",
                    good.replace("l1.", "l1.x", 1)]:
            st, b = self.release(s, {"lease": bad})
            self.assertEqual(st, 400, bad)
            self.assertEqual(b["error"]["field"], "lease", bad)
        st, b = self.release(s, {"lease": 5})
        self.assertEqual((st, b["error"]["field"]), (400, "lease"))
        st, b = self.release(s, {})
        self.assertEqual((st, b["error"]["field"]), (400, "lease"))
        st, b = self.release(s, {"lease": good, "extra": 1})
        self.assertEqual((st, b["error"]["field"]), (400, "extra"))
        st, b = self.release(s, "not json")
        self.assertEqual((st, b["error"]["field"]), (400, "body"))
        st, _, _ = s.request("GET", "/v1/release")
        self.assertEqual(st, 405)
        # Still held after all that.
        self.assertEqual(self.release(s, {"lease": good})[0], 200)

    def test_a_forged_id_for_another_key_releases_nothing(self):
        s = self.server()
        victim = s.decide([("jobs", "victim")], cost=3)[2]["lease"]
        mine = s.decide([("jobs", "attacker")])[2]["lease"]
        nonce = mine.split(".")[1]
        victim_parts = victim.split(".")
        # The attacker's nonce on the victim's key, and the victim's nonce guessed off by one.
        forged = ".".join(["l1", nonce] + victim_parts[2:])
        st, b = self.release(s, {"lease": forged})
        self.assertEqual((st, b["error"]["field"]), (404, "lease"))
        guessed = "%016x" % ((int(victim_parts[1], 16) + 1) % 2**64 or 1)
        st, _ = self.release(s, {"lease": ".".join(["l1", guessed] + victim_parts[2:])})
        self.assertEqual(st, 404)
        self.assertEqual(s.decide([("jobs", "victim")])[0], 429)  # still held: nothing was released
        # An id naming a policy this configuration does not define holds nothing.
        st, _ = self.release(s, {"lease": ".".join(["l1", victim_parts[1], "bm9wZQ", victim_parts[3]])})
        self.assertEqual(st, 404)

    def test_authorize_hands_the_lease_to_nginx(self):
        s = self.server('[[rules]]\npolicy = "jobs"\nkey = "header:X-User"\n')
        st, h, _ = s.request("GET", "/v1/authorize", headers={"X-Original-URI": "/work", "X-User": "n"})
        self.assertEqual(st, 204)
        lease = h["sluice-lease"]
        self.assertTrue(lease.startswith("l1."))
        self.assertEqual(h["ratelimit-policy"], '"jobs";q=3;qu="concurrent-requests"')
        st, b = self.release(s, {"lease": lease})
        self.assertEqual(st, 200)
        self.assertEqual(b["checks"][0]["key"], "n")


if __name__ == "__main__":
    unittest.main()

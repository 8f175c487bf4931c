"""sluice serve through real processes and real clients (http.client, nginx).

Each TestCase class is one ctest test (tests/serve/CMakeLists.txt). Every
server binds 127.0.0.1 on a port the system picks and is stopped by PID.
"""
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from serve_support import (BINARY, SOURCE, Nginx, ServeCase, base_config, free_port, metric,  # noqa: E402
                           write_config)


class DecideApi(ServeCase):
    def test_admits_then_denies_with_headers(self):
        s, _ = self.start_config(base_config({"api": "token-bucket 2/1h burst=2"}))
        st, h, b = s.decide([("api", "alice")])
        self.assertEqual(st, 200)
        self.assertTrue(b["allowed"])
        self.assertEqual(b["remaining"], 1)
        self.assertEqual(h["ratelimit-policy"], '"api";q=2;w=3600')
        self.assertEqual(h["ratelimit"], '"api";r=1;t=1800')
        self.assertNotIn("retry-after", h)
        st, h, b = s.decide([("api", "alice")])
        self.assertEqual((st, b["remaining"]), (200, 0))
        st, h, b = s.decide([("api", "alice")])
        self.assertEqual(st, 429)
        self.assertFalse(b["allowed"])
        self.assertEqual(b["checks"][0]["key"], "alice")
        # One token every 1800 s; the wait is exact in ns and rounded up on the wire.
        self.assertGreater(b["retry_after_ns"], 1799 * 10**9)
        self.assertLessEqual(b["retry_after_ns"], 1800 * 10**9)
        self.assertEqual(h["retry-after"], "1800")
        self.assertEqual(b["retry_after"], 1800)
        self.assertEqual(h["ratelimit"], '"api";r=0;t=1800')
        self.assertEqual(h["cache-control"], "no-store")
        # Another key is not affected.
        st, _, b = s.decide([("api", "bob")])
        self.assertEqual((st, b["remaining"]), (200, 1))

    def test_several_checks_give_several_members_and_deny_charges_none(self):
        s, _ = self.start_config(base_config({"a": "fixed-window 5/1h", "b": "quota 1"}))
        st, h, b = s.decide([("a", "k"), ("b", "k")])
        self.assertEqual(st, 200)
        self.assertEqual(h["ratelimit-policy"], '"a";q=5;w=3600, "b";q=1')
        self.assertTrue(h["ratelimit"].startswith('"a";r=4;t='))
        self.assertTrue(h["ratelimit"].endswith(', "b";r=0'))  # a spent quota never frees up: no t
        st, h, b = s.decide([("a", "k"), ("b", "k")])
        self.assertEqual(st, 429)
        self.assertNotIn("retry-after", h)  # never: no Retry-After, the body says so
        self.assertEqual(b["retry_after_ns"], "never")
        self.assertIsNone(b["retry_after"])
        # The denied request charged neither check: a alone still has 4.
        st, _, b = s.decide([("a", "k")])
        self.assertEqual(b["remaining"], 3)

    def test_bad_requests_name_the_field(self):
        s, _ = self.start_config(base_config({"api": "gcra 10/1s"}))
        cases = [
            ("{not json", "body"),
            ("[1,2]", "body"),
            ('{"checks":[{"policy":"nope","key":"k"}]}', "checks[0].policy"),
            ('{"checks":[{"policy":"api"}]}', "checks[0].key"),
            ('{"checks":[{"policy":"api","key":"k","x":1}]}', "checks[0].x"),
            ('{"checks":[]}', "checks"),
            ('{"checks":[{"policy":"api","key":"k"}],"cost":0}', "cost"),
            ('{"checks":[{"policy":"api","key":"k"}],"cost":"3"}', "cost"),
            ('{"checks":[{"policy":"api","key":"k"}],"now":5}', "now"),
            ('{"checks":[{"policy":"api","key":"k"}],"bogus":1}', "bogus"),
            ('{"checks":[{"policy":"api","key":"%s"}]}' % ("x" * 300), "checks[0].key"),
        ]
        for body, field in cases:
            st, h, data = s.request("POST", "/v1/decide", body, {"Content-Type": "application/json"})
            self.assertEqual(st, 400, body)
            self.assertEqual(json.loads(data)["error"]["field"], field, body)
        st, h, _ = s.request("GET", "/v1/decide")
        self.assertEqual((st, h.get("allow")), (405, "POST"))
        st, _, _ = s.request("GET", "/nowhere")
        self.assertEqual(st, 404)

    def test_crlf_in_a_key_never_reaches_a_header(self):
        s, _ = self.start_config(base_config({"api": "fixed-window 1/1h"}))
        key = "evil\r\nX-Injected: yes\r\n\r\n<html>"
        for _ in range(2):
            c = s.conn()
            c.request("POST", "/v1/decide", json.dumps({"checks": [{"policy": "api", "key": key}]}))
            r = c.getresponse()
            body = r.read()
            names = [k.lower() for k, _ in r.getheaders()]
            self.assertNotIn("x-injected", names)
            for _, v in r.getheaders():
                self.assertNotIn("\r", v)
                self.assertNotIn("\n", v)
            self.assertEqual(json.loads(body)["checks"][0]["key"], key)  # escaped in JSON, intact
            self.assertNotIn(b"\r", body)
            self.assertIn(b"evil\\u000d\\u000aX-Injected", body)
            c.close()

    def test_bearer_token(self):
        s, _ = self.start_config(base_config({"api": "gcra 10/1s"}, server='token = "s3cret"\n'))
        st, h, _ = s.request("POST", "/v1/decide", '{"policy":"api","key":"k"}')
        self.assertEqual(st, 401)
        self.assertIn("Bearer", h["www-authenticate"])
        st, _, _ = s.request("POST", "/v1/decide", '{"policy":"api","key":"k"}', {"Authorization": "Bearer wrong"})
        self.assertEqual(st, 401)
        st, _, b = s.request("POST", "/v1/decide", '{"policy":"api","key":"k"}', {"Authorization": "Bearer s3cret"})
        self.assertEqual(st, 200)
        self.assertTrue(json.loads(b)["allowed"])

    def test_request_id_is_charged_once(self):
        s, _ = self.start_config(base_config({"api": "fixed-window 5/1h"}))
        st, _, b = s.decide([("api", "k")], rid="order-17")
        self.assertEqual((st, b["remaining"], b["source"], b["id"]), (200, 4, "store", "order-17"))
        st, _, b = s.decide([("api", "k")], rid="order-17")
        self.assertEqual((st, b["remaining"], b["source"]), (200, 4, "replayed"))
        st, _, b = s.decide([("api", "k")])
        self.assertEqual((b["remaining"], b["source"]), (3, "store"))
        st, _, data = s.request("POST", "/v1/decide",
                                '{"checks":[{"policy":"api","key":"k"},{"policy":"api","key":"k"}]}')
        self.assertEqual((st, json.loads(data)["error"]["field"]), (400, "checks[1]"))

    def test_cost(self):
        s, _ = self.start_config(base_config({"api": "fixed-window 10/1h"}))
        st, _, b = s.decide([("api", "k")], cost=7)
        self.assertEqual((st, b["remaining"]), (200, 3))
        st, _, b = s.decide([("api", "k")], cost=4)
        self.assertEqual((st, b["remaining"]), (429, 3))
        st, _, b = s.decide([("api", "k")], cost=11)
        self.assertEqual((st, b["retry_after_ns"]), (429, "never"))


class Authorize(ServeCase):
    RULES = """
[[rules]]
policy = "api"
path_prefix = "/api/"
key = "header:X-Api-Key"

[[rules]]
policy = "per_path"
key = "query:user+path:2"

[[rules]]
policy = "watch"
key = "literal:all"
shadow = true
"""

    def test_rules_keys_and_shadow(self):
        s, _ = self.start_config(base_config(
            {"api": "fixed-window 2/1h", "per_path": "fixed-window 1/1h", "watch": "fixed-window 1/1h"}, self.RULES))
        # No X-Api-Key: only per_path (query user + 2nd segment) and the shadow rule apply.
        st, h, b = s.request("GET", "/v1/authorize?user=u1")
        self.assertEqual(st, 204)
        self.assertEqual(b, "")
        st, h, _ = s.request("GET", "/v1/authorize", headers={"X-Original-URI": "/api/items?user=u1",
                                                              "X-Api-Key": "alice"})
        self.assertEqual(st, 204)
        self.assertEqual(h["ratelimit-policy"], '"api";q=2;w=3600, "per_path";q=1;w=3600')
        self.assertTrue(h["ratelimit"].startswith('"api";r=1;t='))
        st, h, _ = s.request("GET", "/v1/authorize", headers={"X-Original-URI": "/api/items?user=u1",
                                                              "X-Api-Key": "alice"})
        self.assertEqual(st, 403)
        self.assertEqual(h["x-sluice-decision"], "limited")
        self.assertEqual(h["content-length"], "0")
        self.assertIn("retry-after", h)
        # Another user on the same path passes (api has 1 left for alice: the denial charged nothing).
        st, h, _ = s.request("GET", "/v1/authorize", headers={"X-Original-URI": "/api/items?user=u2",
                                                              "X-Api-Key": "alice"})
        self.assertEqual(st, 204)
        # The shadow rule denied 3 of 4 times, and never blocked anything.
        m = s.metrics()
        self.assertEqual(metric(m, 'sluice_shadow_denials_total{policy="watch"}'), 3)
        self.assertEqual(metric(m, 'sluice_shadow_decisions_total{policy="watch",result="allowed"}'), 1)
        self.assertEqual(metric(m, 'sluice_decisions_total{policy="api",result="denied"}'), 1)

    def test_bad_input_is_a_403_not_a_500(self):
        s, _ = self.start_config(base_config({"api": "fixed-window 2/1h"},
                                             '[[rules]]\npolicy = "api"\nkey = "header:X-Api-Key"\n'
                                             'cost = "header:X-Cost"\n', 'max_key_bytes = 16\n'))
        st, h, _ = s.request("GET", "/v1/authorize", headers={"X-Api-Key": "k" * 17})
        self.assertEqual((st, h["x-sluice-decision"]), (403, "invalid"))
        st, h, _ = s.request("GET", "/v1/authorize", headers={"X-Api-Key": "k", "X-Cost": "lots"})
        self.assertEqual((st, h["x-sluice-decision"]), (403, "invalid"))
        st, h, _ = s.request("GET", "/v1/authorize", headers={"X-Api-Key": "k", "X-Cost": "2"})
        self.assertEqual((st, h["ratelimit"].split(";t=")[0]), (204, '"api";r=0'))

    def test_no_file_start(self):
        s = self.start("--policy", "gcra 100/1m burst=20", "--key", "header:X-Api-Key", "--listen", "127.0.0.1:0",
                       "--threads", "1")
        st, h, _ = s.request("GET", "/v1/authorize", headers={"X-Api-Key": "alice"})
        self.assertEqual(st, 204)
        self.assertEqual(h["ratelimit-policy"], '"default";q=20;w=12')
        self.assertEqual(h["ratelimit"], '"default";r=19;t=1')
        for _ in range(19):
            s.request("GET", "/v1/authorize", headers={"X-Api-Key": "alice"})
        st, h, _ = s.request("GET", "/v1/authorize", headers={"X-Api-Key": "alice"})
        self.assertEqual((st, h["retry-after"]), (403, "1"))


class RequestIds(ServeCase):
    """A request id names one request (semantics.md, "Request ids"): the same
    checks again replay, other checks under a used id are a 409 naming `id`,
    never another request's replayed admit (also run on Redis:
    RequestIdsOnRedis, with the same answers)."""

    def store_section(self):
        return ""

    def server(self):
        s, _ = self.start_config(base_config({"api": "fixed-window 1/1h", "big": "fixed-window 5/1h"}, "",
                                             "client_time = true\n") + self.store_section())
        return s

    def test_an_id_first_used_for_another_key_is_a_conflict_not_an_admit(self):
        s = self.server()
        now = 86400 * 1000 * 10**9
        self.assertEqual(s.decide([("api", "bob")], now=now)[0], 200)
        self.assertEqual(s.decide([("api", "bob")], now=now + 1)[0], 429)  # bob is over his limit
        st, _, first = s.decide([("api", "alice")], rid="order-1", now=now + 2)
        self.assertEqual((st, first["source"]), (200, "store"))
        # bob under alice's id: refused, not alice's admit replayed.
        st, h, b = s.decide([("api", "bob")], rid="order-1", now=now + 3)
        self.assertEqual(st, 409, b)
        self.assertEqual(b["error"]["field"], "id")
        self.assertNotIn("ratelimit", h)
        # Every other way of being another request.
        for checks, cost in [([("big", "alice")], None), ([("api", "alice", 2)], None), ([("api", "alice")], 3),
                             ([("api", "alice"), ("big", "alice")], None)]:
            st, _, b = s.decide(checks, cost=cost, rid="order-1", now=now + 4)
            self.assertEqual((st, b["error"]["field"]), (409, "id"), (checks, cost))
        st, _, b = s.decide([("api", "carol"), ("big", "carol")], rid="order-2", now=now + 5)
        self.assertEqual(st, 200)
        st, _, b = s.decide([("big", "carol"), ("api", "carol")], rid="order-2", now=now + 6)
        self.assertEqual((st, b["error"]["field"]), (409, "id"))  # the same checks in another order
        # The same request again replays the first answer; nothing above was charged.
        st, _, b = s.decide([("api", "alice")], rid="order-1", now=now + 7)
        self.assertEqual((st, b["source"], b["remaining"]), (200, "replayed", first["remaining"]))
        st, _, b = s.decide([("big", "alice")], now=now + 8)
        self.assertEqual((st, b["remaining"]), (200, 4))
        self.assertEqual(s.decide([("api", "bob")], now=now + 9)[0], 429)
        m = s.metrics()
        self.assertEqual(metric(m, 'sluice_store_decisions_total{source="id-conflict"}'), 6)
        # bob, alice, carol and alice's replay: no conflict is counted as a decision of a policy.
        self.assertEqual(metric(m, 'sluice_decisions_total{policy="api",result="allowed"}'), 4)


class MixedCosts(ServeCase):
    """Checks of different costs in one request are one atomic decision: a
    denial by any of them charges none (also run on Redis: MixedCostsOnRedis)."""

    POLICIES = {"calls": "fixed-window 10/1h", "tokens": "fixed-window 100/1h"}
    RULES = """
[[rules]]
policy = "calls"
key = "header:X-User"

[[rules]]
policy = "tokens"
key = "header:X-User"
cost = "header:X-Tokens"

[[rules]]
policy = "calls"
path_prefix = "/heavy/"
key = "header:X-User"
cost = 3
"""
    NEVER = 10**15  # a cost no policy here can admit: a pure read of every check

    def store_section(self):
        return ""

    def server(self):
        s, _ = self.start_config(base_config(self.POLICIES, self.RULES + self.store_section()))
        return s

    def left(self, s, user):
        """(calls, tokens) remaining for `user`, read without charging anything."""
        st, _, b = s.decide([("calls", user, self.NEVER), ("tokens", user, self.NEVER)])
        self.assertEqual((st, b["retry_after_ns"]), (429, "never"))
        return tuple(c["remaining"] for c in b["checks"])

    def authorize(self, s, user, tokens, uri="/api/x"):
        return s.request("GET", "/v1/authorize", headers={"X-Original-URI": uri, "X-User": user,
                                                          "X-Tokens": str(tokens)})

    def test_a_later_check_that_denies_charges_no_earlier_one(self):
        s = self.server()
        st, h, _ = self.authorize(s, "u", 60)
        self.assertEqual(st, 204)
        self.assertEqual(re.sub(r";t=\d+", "", h["ratelimit"]), '"calls";r=9, "tokens";r=40')
        # calls (cost 1) would admit; tokens (cost 50, the later check) denies.
        st, h, _ = self.authorize(s, "u", 50)
        self.assertEqual((st, h["x-sluice-decision"]), (403, "limited"))
        self.assertEqual(re.sub(r";t=\d+", "", h["ratelimit"]), '"calls";r=9, "tokens";r=40')
        self.assertEqual(self.left(s, "u"), (9, 40))
        st, h, _ = self.authorize(s, "u", 40)
        self.assertEqual(st, 204)
        self.assertEqual(self.left(s, "u"), (8, 0))
        m = s.metrics()
        # The denied request and the two reads (left) are denials; the two admits charged.
        self.assertEqual(metric(m, 'sluice_decisions_total{policy="calls",result="denied"}'), 3)
        self.assertEqual(metric(m, 'sluice_decisions_total{policy="calls",result="allowed"}'), 2)
        self.assertEqual(metric(m, 'sluice_decisions_total{policy="tokens",result="allowed"}'), 2)

    def test_two_rules_on_one_key_are_one_check_at_the_larger_cost(self):
        s = self.server()
        st, h, _ = self.authorize(s, "w", 1, uri="/heavy/x")
        self.assertEqual(st, 204)
        self.assertEqual(h["ratelimit-policy"], '"calls";q=10;w=3600, "tokens";q=100;w=3600')
        self.assertEqual(self.left(s, "w"), (7, 99))  # 3 charged to calls, not 1, not 1 + 3

    def test_decide_api_checks_with_their_own_costs(self):
        s = self.server()
        st, _, b = s.decide([("calls", "v", 1), ("tokens", "v", 101)])
        self.assertEqual((st, b["allowed"], b["source"]), (429, False, "store"))
        self.assertEqual([(c["allowed"], c["retry_after_ns"]) for c in b["checks"]], [(False, 0), (False, "never")])
        self.assertEqual(self.left(s, "v"), (10, 100))
        st, _, b = s.decide([("calls", "v", 2), ("tokens", "v")], cost=30)  # the request's cost for tokens
        self.assertEqual(st, 200)
        self.assertEqual([c["remaining"] for c in b["checks"]], [8, 70])
        self.assertEqual(b["remaining"], 8)
        for bad in ['{"checks":[{"policy":"calls","key":"v"},{"policy":"tokens","key":"v","cost":0}]}',
                    '{"checks":[{"policy":"calls","key":"v","cost":"2"}]}',
                    '{"checks":[{"policy":"calls","key":"v","cost":9223372036854775808}]}']:
            st, _, data = s.request("POST", "/v1/decide", bad, {"Content-Type": "application/json"})
            self.assertEqual(st, 400, bad)
            self.assertTrue(json.loads(data)["error"]["field"].endswith("].cost"), bad)
        self.assertEqual(self.left(s, "v"), (8, 70))


def replay_seconds(ns):
    if ns == "never":
        return "never"
    whole, frac = divmod(ns, 10**9)
    return str(whole) + ("." + ("%09d" % frac).rstrip("0") if frac else "")


class ReplayParity(ServeCase):
    """The same requests through sluice serve and sluice replay: the same decisions."""

    POLICIES = {
        "tb": "token-bucket 5/2s burst=3",
        "gc": "gcra 4/1s burst=2",
        "fw": "fixed-window 3/1s",
        "sl": "sliding-log 3/2s",
        "sc": "sliding-counter 4/1s",
        "lq": "leaky-queue 2/1s queue=3",
        "co": "all(token-bucket 3/1s, fixed-window 5/2s)",
    }

    def server(self):
        s, _ = self.start_config(base_config(self.POLICIES, server="client_time = true\n"))
        return s

    def test_same_decisions_as_replay(self):
        s = self.server()
        base = 86400 * 1000  # seconds: a multiple of every window, far past the steady clock
        rng = random.Random(11)
        conn = s.conn()
        for name, expr in self.POLICIES.items():
            t = 0
            lines, served = [], []
            for i in range(300):
                t += rng.choice([0, 0, 1, 10, 100, 250, 400, 999, 1000, 1500]) * 10**6  # ms steps, in ns
                key = rng.choice(["a", "b", "c"])
                cost = rng.choice([1, 1, 1, 2, 3])
                now = base * 10**9 + t
                lines.append("%s %s %d" % (replay_seconds(now), key, cost))
                st, _, b = s.decide([(name, key)], cost=cost, now=now, conn=conn)
                self.assertEqual(st, 200 if b["allowed"] else 429)
                self.assertEqual(b["source"], "store")
                c = b["checks"][0]
                served.append(("yes" if b["allowed"] else "no", str(c["remaining"]),
                               replay_seconds(c["retry_after_ns"]), replay_seconds(c["reset_after_ns"])))
            out = subprocess.run([BINARY, "replay", "--policy", expr], input="\n".join(lines) + "\n",
                                 capture_output=True, text=True, check=True).stdout.splitlines()
            header = out[0].split(",")
            rows = [dict(zip(header, r.split(","))) for r in out[1:]]
            self.assertEqual(len(rows), len(served))
            for i, (row, got) in enumerate(zip(rows, served)):
                want = (row["allowed"], row["remaining"], row["retry_after"], row["reset_after"])
                self.assertEqual(got, want, "%s request %d (%s)" % (name, i + 1, lines[i]))
        conn.close()


class Metrics(ServeCase):
    def test_exposition(self):
        s, _ = self.start_config(base_config({"api": "fixed-window 2/1h"}))
        for _ in range(3):
            s.decide([("api", "k")])
        st, h, text = s.request("GET", "/metrics")
        self.assertEqual(st, 200)
        self.assertEqual(h["content-type"], "text/plain; version=0.0.4; charset=utf-8")
        self.assertEqual(metric(text, 'sluice_decisions_total{policy="api",result="allowed"}'), 2)
        self.assertEqual(metric(text, 'sluice_decisions_total{policy="api",result="denied"}'), 1)
        self.assertEqual(metric(text, "sluice_decision_duration_seconds_count"), 3)
        self.assertEqual(metric(text, 'sluice_decision_duration_seconds_bucket{le="+Inf"}'), 3)
        self.assertEqual(metric(text, "sluice_keys"), 1)
        for fam in ["sluice_shadow_denials_total", "sluice_store_errors_total", "sluice_store_fallbacks_total",
                    "sluice_deny_cache_hits_total", "sluice_clock_skew_total", "sluice_connections"]:
            self.assertIn("# TYPE " + fam + " ", text)
        # Every sample's family has HELP and TYPE first; buckets are cumulative.
        seen = set()
        last = -1
        for line in text.splitlines():
            if line.startswith("# TYPE "):
                seen.add(line.split()[2])
            elif not line.startswith("#"):
                name = re.match(r"[a-zA-Z_:][a-zA-Z0-9_:]*", line).group(0)
                fam = re.sub(r"_(bucket|sum|count)$", "", name)
                self.assertTrue(name in seen or fam in seen, line)
                if name.endswith("_bucket"):
                    v = float(line.split()[-1])
                    self.assertGreaterEqual(v, last)
                    last = v
        self.assertTrue(text.endswith("\n"))
        st, _, body = s.request("GET", "/healthz")
        self.assertEqual((st, body), (200, "ok\n"))
        # HEAD: the length, no body, and the connection stays usable.
        c = s.conn()
        st, h, body = s.request("HEAD", "/healthz", conn=c)
        self.assertEqual((st, h["content-length"], body), (200, "3", ""))
        st, _, body = s.request("GET", "/healthz", conn=c)
        self.assertEqual((st, body), (200, "ok\n"))
        c.close()
        st, _, _ = s.request("GET", "/readyz")
        self.assertEqual(st, 200)


class Check(ServeCase):
    def run_check(self, text):
        path = write_config(text)
        self.addCleanup(os.unlink, path)
        r = subprocess.run([BINARY, "serve", "--check", path], capture_output=True, text=True)
        return r.returncode, r.stdout + r.stderr, path

    def test_sample_config_is_valid(self):
        r = subprocess.run([BINARY, "serve", "--check", os.path.join(SOURCE, "etc", "sluice.toml")],
                           capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("ok (4 policies, 4 rules)", r.stdout)

    def test_errors_name_file_line_column(self):
        cases = [
            ('[policies]\napi = "token-bucket 2/1s bust=2"\n', ":2:26: policies.api: unknown option 'bust'"),
            ('[policies]\napi = "gcra 1/1s"\n[[rules]]\npolicy = "apx"\n', ":4:10: rules[0].policy: unknown policy 'apx'"),
            ('[policies\n', ":1:10:"),
            ('[server]\nlisten = "localhost:80"\n[policies]\na = "quota 1"\n', ":2:10: server.listen:"),
            ('[server]\nthreds = 2\n[policies]\na = "quota 1"\n', ":2:1: unknown key 'threds' in server"),
            # A setting that chose nothing is gone: a file that sets it is told so.
            ('[store]\npool_size = 4\n[policies]\na = "quota 1"\n', ":2:1: unknown key 'pool_size' in store"),
            ('[policies]\na = "quota 1"\n[[rules]]\npolicy = "a"\nkey = "heder:X"\n', ":5:7: rules[0].key:"),
            ('[store]\nurl = "mysql://x"\n[policies]\na = "quota 1"\n', ":2:7: store.url:"),
            ('[policies]\n"a b" = "quota 1"\n', ":2:1: policy name 'a b'"),
        ]
        for text, want in cases:
            rc, out, path = self.run_check(text)
            self.assertEqual(rc, 2, text)
            self.assertIn(path + want, out, text)

    def test_max_header_bytes_is_at_most_what_the_parser_holds(self):
        rc, out, path = self.run_check('[server]\nmax_header_bytes = 65536\n[policies]\na = "quota 1"\n')
        self.assertEqual(rc, 2, out)
        self.assertIn(path + ":2:20: server.max_header_bytes:", out)
        rc, out, _ = self.run_check('[server]\nmax_header_bytes = 65535\n[policies]\na = "quota 1"\n')
        self.assertEqual(rc, 0, out)

    def test_a_token_with_surrounding_space_or_control_bytes_is_refused(self):
        for token, why in [("abc ", "begin or end with a space or tab"), (" abc", "begin or end with a space or tab"),
                           ("abc\\t", "begin or end with a space or tab"), ("a\\nbc", "hold a control byte"),
                           ("ab\\u007Fc", "hold a control byte")]:
            rc, out, path = self.run_check('[server]\ntoken = "%s"\n[policies]\na = "quota 1"\n' % token)
            self.assertEqual(rc, 2, token)
            self.assertIn(path + ":2:9: server.token: the token must not " + why, out, token)
        # token_file: its trailing newline goes, other surrounding space does not.
        for text, rc_want in [("s3cret\n", 0), ("s3cret \n", 2), ("\ts3cret\n", 2), ("s3\x01cret\n", 2)]:
            tf = write_config(text)
            self.addCleanup(os.unlink, tf)
            rc, out, path = self.run_check('[server]\ntoken_file = "%s"\n[policies]\na = "quota 1"\n' % tf)
            self.assertEqual(rc, rc_want, (text, out))
            if rc_want == 2:
                self.assertIn(path + ":2:14: server.token_file: the token must not", out, text)
        # Starting refuses it too (exit 2), naming the field.
        path = write_config('[server]\nlisten = "127.0.0.1:0"\ntoken = "abc "\n[policies]\na = "quota 1"\n')
        self.addCleanup(os.unlink, path)
        r = subprocess.run([BINARY, "serve", "--config", path], capture_output=True, text=True, timeout=20)
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertIn("server.token:", r.stderr)

    def test_every_error_is_reported(self):
        # Stopped at the first error: one line for a file with twelve.
        text = ('[server]\nthreds = 2\nmax_body_bytes = "x"\n'
                '[store]\nurl = "mysql://x"\non_failure = "maybe"\n'
                '[policies]\napi = "gcra 1/1x"\nok = "quota 3"\n"a b" = "quota 1"\nlast = "all(gcra 1/1s, quot 3)"\n'
                '[[rules]]\npolicy = "nope"\nkey = "heder:X"\n'
                '[[rules]]\npolicy = "api"\ncost = 0\npath_prefix = "x"\n'
                '[[envoy]]\ndomain = "d"\ndescriptor = ["k"]\npolicy = "missing"\n')
        want = [":2:1: unknown key 'threds' in server", ":3:18: server.max_body_bytes:", ":5:7: store.url:",
                ":6:14: store.on_failure:", ":8:16: policies.api: unknown unit 'x'", ":10:1: policy name 'a b'",
                ":11:24: policies.last: unknown algorithm 'quot'", ":13:10: rules[0].policy: unknown policy 'nope'",
                ":14:7: rules[0].key:", ":17:8: rules[1].cost:", ":18:15: rules[1].path_prefix:",
                ":22:10: envoy[0].policy: unknown policy 'missing'"]
        rc, out, path = self.run_check(text)
        self.assertEqual(rc, 2, out)
        lines = out.splitlines()
        self.assertEqual(len(lines), len(want), out)
        for line, w in zip(lines, want):  # in the file's order, one a line
            self.assertTrue(line.startswith("sluice: " + path + w), "%r does not start with %r" % (line, w))
        # A rule naming a policy that has an error is not reported again.
        self.assertNotIn("unknown policy 'api'", out)
        # The same at start: every error, exit 2.
        r = subprocess.run([BINARY, "serve", "--config", path], capture_output=True, text=True, timeout=30)
        self.assertEqual((r.returncode, r.stderr.splitlines()), (2, lines))


RELOAD_V1 = """
[server]
listen = "127.0.0.1:0"
admin = "127.0.0.1:0"
threads = 1

[policies]
a = "fixed-window 3/1h"
b = "fixed-window 2/1h"
"""


class Reload(ServeCase):
    def test_sighup_and_admin(self):
        s, path = self.start_config(RELOAD_V1)
        for _ in range(3):
            s.decide([("a", "k")])
        st, _, b = s.decide([("a", "k")])
        self.assertEqual(st, 429)
        st, _, b = s.decide([("b", "k")])
        self.assertEqual(b["remaining"], 1)
        # a unchanged (keeps its state), b raised (keeps what it consumed), c new.
        with open(path, "w") as f:
            f.write(RELOAD_V1.replace('b = "fixed-window 2/1h"', 'b = "fixed-window 5/1h"\nc = "quota 1"'))
        s.signal(signal.SIGHUP)
        self.assertTrue(s.wait_log("reloaded"), s.log())
        self.assertIn("1 added, 1 changed, 1 kept", s.log())
        st, _, b = s.decide([("a", "k")])
        self.assertEqual(st, 429)  # a throttled client never gets a fresh limit
        st, _, b = s.decide([("b", "k")])
        self.assertEqual((st, b["remaining"]), (200, 3))
        st, _, b = s.decide([("c", "k")])
        self.assertEqual(st, 200)
        # A bad file is refused; the running configuration stays.
        with open(path, "w") as f:
            f.write(RELOAD_V1 + 'd = "gcra 0/0s"\n')
        s.signal(signal.SIGHUP)
        self.assertTrue(s.wait_log("reload refused"), s.log())
        self.assertRegex(s.log(), r"reload refused.*:10:\d+: policies\.d")
        st, _, b = s.decide([("c", "k")])
        self.assertEqual(st, 429)  # c still exists, its quota spent
        # The admin endpoint: refuses with the file's error, then applies the fixed file.
        st, _, body = s.request("POST", "/admin/reload", admin=True)
        self.assertEqual(st, 400)
        self.assertIn(":10:", json.loads(body)["error"]["field"])
        st, _, _ = s.request("POST", "/admin/reload")  # not on the decision listener
        self.assertEqual(st, 404)
        with open(path, "w") as f:
            f.write(RELOAD_V1.replace('"fixed-window 3/1h"', '"fixed-window 4/1h"'))
        st, _, body = s.request("POST", "/admin/reload", admin=True)
        self.assertEqual(st, 200, body)
        self.assertEqual(json.loads(body)["changed"], ["a", "b"])
        st, _, b = s.decide([("a", "k")])
        self.assertEqual((st, b["remaining"]), (200, 0))  # 3 consumed of the new 4
        m = s.metrics()
        self.assertEqual(metric(m, 'sluice_config_reloads_total{result="applied"}'), 2)
        self.assertEqual(metric(m, 'sluice_config_reloads_total{result="refused"}'), 2)


NGINX_SLUICE = """
[server]
listen = "127.0.0.1:0"
threads = 1
trusted_proxies = ["127.0.0.1"]
forwarded_header = "X-Real-IP"

[policies]
api = "fixed-window 3/1h"
per_ip = "fixed-window 100/1h"

[[rules]]
policy = "api"
path_prefix = "/api/"
key = "header:X-Api-Key"

[[rules]]
policy = "per_ip"
key = "client"
"""


class NginxAuthRequest(ServeCase):
    def test_client_gets_429_with_retry_after_and_ratelimit(self):
        if shutil.which("nginx") is None:
            self.fail("nginx is not installed (scripts/setup.sh installs nginx-light)")
        s, _ = self.start_config(NGINX_SLUICE)
        work = tempfile.mkdtemp(prefix="sluice-nginx-")
        os.chmod(work, 0o755)  # nginx's workers run as another user
        self.addCleanup(shutil.rmtree, work)
        os.makedirs(os.path.join(work, "html", "api"))
        os.makedirs(os.path.join(work, "logs"))
        with open(os.path.join(work, "html", "index.html"), "w") as f:
            f.write("ok\n")
        port = free_port()
        with open(os.path.join(SOURCE, "etc", "nginx-sluice.conf")) as f:
            conf = f.read()
        conf = (conf.replace("127.0.0.1:8080", "127.0.0.1:%d" % s.port)
                .replace("127.0.0.1:8000", "127.0.0.1:%d" % port)
                .replace("/run/nginx-sluice.pid", os.path.join(work, "nginx.pid"))
                .replace("/var/log/nginx/sluice-error.log", os.path.join(work, "logs", "error.log"))
                .replace("/var/www/html", os.path.join(work, "html")))
        ngx = Nginx(conf, work)
        self.addCleanup(ngx.stop)
        ngx.wait_port(port)
        import http.client as hc

        def get(path, key="alice"):
            c = hc.HTTPConnection("127.0.0.1", port, timeout=5)
            c.request("GET", path, headers={"X-Api-Key": key})
            r = c.getresponse()
            body = r.read().decode()
            h = {k.lower(): v for k, v in r.getheaders()}
            c.close()
            return r.status, h, body

        for i in range(3):
            st, h, body = get("/api/items")
            self.assertEqual((st, body), (200, "ok\n"))
            self.assertEqual(h["ratelimit-policy"], '"api";q=3;w=3600, "per_ip";q=100;w=3600')
            self.assertTrue(h["ratelimit"].startswith('"api";r=%d;t=' % (2 - i)), h["ratelimit"])
        st, h, body = get("/api/items")
        self.assertEqual((st, body), (429, "rate limited\n"))
        self.assertRegex(h["retry-after"], r"^\d+$")
        self.assertGreater(int(h["retry-after"]), 0)
        self.assertTrue(h["ratelimit"].startswith('"api";r=0;t='))
        self.assertIn("ratelimit-policy", h)
        self.assertEqual(h["cache-control"], "no-store")
        # Another key passes; the per-address rule saw nginx's X-Real-IP (127.0.0.1), not a missing key.
        st, h, _ = get("/api/items", key="bob")
        self.assertEqual(st, 200)
        self.assertRegex(h["ratelimit"], r'"per_ip";r=96;t=\d+$')
        # sluice saw every subrequest; nginx logged no unexpected status.
        m = s.metrics()
        self.assertEqual(metric(m, 'sluice_decisions_total{policy="api",result="denied"}'), 1)
        with open(os.path.join(work, "logs", "error.log")) as f:
            self.assertNotIn("unexpected status", f.read())
        # sluice down: nginx fails closed (500) with this configuration.
        self.assertEqual(s.stop(), 0)
        st, _, _ = get("/api/items", key="carol")
        self.assertEqual(st, 500)


class ClientTime(ServeCase):
    """With server.client_time, one client's "now" moves only the keys it decides on."""

    def test_keys_far_in_the_future_move_no_other_key(self):
        # The report: calls on fresh keys decades ahead handed an exhausted
        # key a fresh burst, then locked every key out for decades.
        s, _ = self.start_config(base_config({"api": "gcra 10/1s burst=2"}, server="client_time = true\n"))
        conn = s.conn()
        t0 = 10**9
        for allowed in (True, True, False):
            st, _, b = s.decide([("api", "exhausted")], now=t0, conn=conn)
            self.assertEqual(b["allowed"], allowed)
        future = t0 + 50 * 365 * 86400 * 10**9
        for i in range(3000):  # enough new keys for every shard to grow (and sweep)
            st, _, b = s.decide([("api", "future:%d" % i)], now=future, conn=conn)
            self.assertTrue(b["allowed"])
        st, _, b = s.decide([("api", "exhausted")], now=t0 + 1, conn=conn)
        self.assertEqual(st, 429)
        self.assertEqual(b["source"], "store")
        self.assertLess(b["retry_after_ns"], 10**9)  # its own wait: under a tenth of a second
        st, _, b = s.decide([("api", "later")], now=t0 + 1, conn=conn)
        self.assertEqual(st, 200)
        self.assertEqual(b["checks"][0]["remaining"], 1)
        self.assertEqual(b["checks"][0]["reset_after_ns"], 10**8)  # one unit from t0 + 1, not from decades ahead
        st, _, b = s.decide([("api", "later")], now=t0 + 2, conn=conn)
        self.assertEqual((st, b["checks"][0]["remaining"]), (200, 0))
        st, _, b = s.decide([("api", "later")], now=t0 + 3, conn=conn)
        self.assertEqual(st, 429)
        self.assertLess(b["retry_after_ns"], 10**9)
        conn.close()


if __name__ == "__main__":
    unittest.main()

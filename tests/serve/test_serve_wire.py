"""The RateLimit fields of a real `sluice serve`, against their definitions
(docs/semantics.md, "On the wire (HTTP)"), on the memory store and on a real
redis-server: each RateLimit-Policy item's q/w is its limiter's L/W exactly
with q the smallest such quota at least the limiter's capacity, a composite
lists every part; each RateLimit item's r is the check's remaining and t the
time until a request of cost r + 1 is admitted.

Each TestCase class is one ctest test (tests/serve/CMakeLists.txt).
"""
import math
import os
import random
import re
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from serve_support import RedisServer, ServeCase, base_config  # noqa: E402

S = 10**9

# policy expression -> the limits its items say, in order: (name suffix, L, W ns, C); W None: a quota of C.
POLICIES = {
    "fw": ("fixed-window 3/2s", [("", 3, 2 * S, 3)]),
    "fw_sub": ("fixed-window 2/500ms", [("", 2, S // 2, 2)]),
    "sl": ("sliding-log 1/300ms", [("", 1, 300 * 10**6, 1)]),
    "sc": ("sliding-counter 4/1s", [("", 4, S, 4)]),
    "sb": ("sliding-buckets 6/3s buckets=3", [("", 6, 3 * S, 6)]),
    "tb": ("token-bucket 3/1500ms burst=5", [("", 3, 1500 * 10**6, 5)]),
    "gc": ("gcra 100/1m burst=20", [("", 100, 60 * S, 20)]),
    "lq": ("leaky-queue 2/1s queue=15", [("", 2, S, 15)]),
    "qu": ("quota 40", [("", None, None, 40)]),
    "all": ("all(token-bucket 10/1s burst=4, fixed-window 30/1m)", [("/1", 10, S, 4), ("/2", 30, 60 * S, 30)]),
    "any": ("any(quota 5, gcra 2/1s burst=3)", [("/1", None, None, 5), ("/2", 2, S, 3)]),
}

ITEM = re.compile(r'"([^"]*)"((?:;[a-z]+=\d{1,15})*)')


def parse_list(field):
    """A list of `"name";k=INT...` items (RFC 9651, as sluice writes it) as
    [(name, {k: int})]; fails the test on anything else."""
    out = []
    for part in field.split(", "):
        m = ITEM.fullmatch(part)
        assert m, "not an item: %r in %r" % (part, field)
        params = dict((k, int(v)) for k, v in re.findall(r";([a-z]+)=(\d+)", m.group(2)))
        out.append((m.group(1), params))
    return out


class RateLimitFields(ServeCase):
    """Every algorithm and composite on the memory store."""

    def server(self):
        s, _ = self.start_config(base_config({n: e for n, (e, _) in POLICIES.items()}, server="client_time = true\n")
                                 + self.store())
        return s

    def store(self):
        return ""

    def test_fields_are_the_decisions(self):
        s = self.server()
        conn = s.conn()
        rng = random.Random(5)
        checked = probes = 0
        for name, (expr, limits) in POLICIES.items():
            now = 86400 * 1000 * S
            key = "k%08x" % rng.getrandbits(32)
            for step in range(40):
                now += rng.choice([0, 0, S // 4, S // 2, S, 7 * S])
                cost = rng.choice([1, 1, 2, 3])
                st, h, b = s.decide([(name, key)], cost=cost, now=now, conn=conn)
                self.assertIn(st, (200, 429), b)
                self.assertEqual(b["source"], "store")
                items = parse_list(h["ratelimit-policy"])
                self.assertEqual([n for n, _ in items], [name + suffix for suffix, _, _, _ in limits])
                for (item, params), (suffix, l, w, c) in zip(items, limits):
                    if w is None:  # a quota: q = N, no w
                        self.assertEqual(params, {"q": c}, item)
                        continue
                    q, wsec = params["q"], params["w"]
                    self.assertEqual(q * w, wsec * l * S, "%s: q/w is not L/W in %s" % (item, h["ratelimit-policy"]))
                    self.assertGreaterEqual(q, c, item)
                    self.assertLess(q - q // math.gcd(q, wsec), c, "%s: a smaller exact q would do" % item)
                (rl_name, rl), = parse_list(h["ratelimit"])
                self.assertEqual(rl_name, name)
                r = b["checks"][0]["remaining"]
                self.assertEqual(rl["r"], r)
                qs = [p["q"] for _, p in items]
                self.assertLessEqual(r, max(qs) if name == "any" else min(qs), "r above q: %s" % h["ratelimit-policy"])
                if st == 429 and "t" in rl and "retry-after" in h:
                    self.assertGreaterEqual(int(h["retry-after"]), rl["t"])
                checked += 1
                if step % 3:
                    continue
                # t by its definition: a request of cost r + 1 is admitted at
                # now + t s and not at now + (t - 1) s; without t, never.
                if "t" not in rl:
                    st2, _, b2 = s.decide([(name, key)], cost=r + 1, now=now, conn=conn)
                    self.assertEqual((st2, b2["retry_after"]), (429, None), name)
                    continue
                t = rl["t"]
                if t >= 1:
                    self.assertEqual(s.decide([(name, key)], cost=r + 1, now=now + (t - 1) * S, conn=conn)[0], 429,
                                     "%s: t=%d" % (name, t))
                now += t * S
                self.assertEqual(s.decide([(name, key)], cost=r + 1, now=now, conn=conn)[0], 200,
                                 "%s: t=%d" % (name, t))
                probes += 1
        conn.close()
        self.assertEqual(checked, 40 * len(POLICIES))
        self.assertGreater(probes, 20)
        print("%d answers, %d probes of t" % (checked, probes))


class RateLimitFieldsOnRedis(RateLimitFields):
    """The same on a real redis-server (t computed by the Lua functions).
    Without the deny cache: its answers are the store's to check here (they
    are Serve.DenyCacheOnRedis's)."""

    def store(self):
        redis = RedisServer()
        self.addCleanup(redis.stop)
        return '\n[store]\nurl = "%s"\nkey_prefix = "sluice:wire:%08x:"\ndeny_cache = false\n' % (redis.url, random.getrandbits(32))


if __name__ == "__main__":
    unittest.main()

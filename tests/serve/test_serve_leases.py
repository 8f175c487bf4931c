"""Leases through a real `sluice serve` process on the memory store
(semantics.md, "Leases"; docs/serve.md, "Leases"): a concurrency policy
admits at most N in flight, each admit answering its lease id; POST
/v1/release frees it; an expired lease frees itself on time; ids that are
not ids are a 400 naming `lease`, ids held nowhere a 404 naming `lease`; an
id forged for another key releases nothing; /v1/authorize hands the id to
nginx in `Sluice-Lease`; RateLimit-Policy says qu="concurrent-requests".

The same on a real Redis (LeasesOnRedis), and a fleet (LeaseFleetOnRedis):
4 processes on one redis-server hold one concurrency limit — never more
than N held, counted by the clients and read from the store's value; a
lease taken on one process is released through another; a holder that
never releases blocks nobody past its lease.
"""
import random
import struct
import threading
import json
import os
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from serve_support import RedisServer, ServeCase, base_config, metric, write_config  # noqa: E402
from test_serve_edge import raw_exchange, responses  # noqa: E402

SECOND = 10**9


class Leases(ServeCase):
    POLICIES = {"jobs": "concurrency 3 lease=1s", "both": "all(gcra 100/1m, concurrency 2 lease=30s)",
                "rate": "gcra 100/1m", "tight": "all(gcra 1/1m, concurrency 5)"}

    def server(self, rules="", server=""):
        s, _ = self.start_config(base_config(self.POLICIES, rules, server))
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

    def test_an_id_of_the_longest_keys_and_the_most_checks_is_released(self):
        # 16 checks (max_checks), each a key of 65,536 bytes (the largest
        # server.max_key_bytes): an id of 1,399,539 bytes.
        s = self.server(server="max_key_bytes = 65536\nmax_body_bytes = 2097152\n")
        keys = ["%02d" % i + "k" * 65534 for i in range(16)]
        st, _, b = s.decide([("both", k) for k in keys])
        self.assertEqual(st, 200)
        self.assertEqual(len(b["lease"]), 3 + 16 + 16 * (1 + 6 + 1 + 87382))  # "both" is 6 in base64url
        st, r = self.release(s, {"lease": b["lease"]})
        self.assertEqual((st, r.get("released")), (200, 16), r)
        self.assertEqual([c["key"] for c in r["checks"]], keys)

    def test_an_id_longer_than_max_body_bytes_is_released(self):
        # max_body_bytes admits a decision on one 65,536-byte key but not its
        # 87,409-byte id: /v1/release takes it all the same (its own bound,
        # from max_key_bytes), and the other endpoints keep their 413.
        s = self.server(server="max_key_bytes = 65536\nmax_body_bytes = 70000\n")
        key = "j" * 65536
        st, _, b = s.decide([("both", key)])
        self.assertEqual(st, 200)
        lease = b["lease"]
        self.assertEqual(len(lease), 3 + 16 + 1 + 6 + 1 + 87382)
        st, r = self.release(s, {"lease": lease})
        self.assertEqual((st, r.get("released")), (200, 1), r)
        self.assertEqual(r["checks"][0]["key"], key)
        body = json.dumps({"checks": [{"policy": "both", "key": key}], "cost": 1, "x": "y" * 5000}).encode()
        data, _ = raw_exchange(s.port, b"POST /v1/decide HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n%s"
                               % (len(body), body))
        self.assertEqual(responses(data), [413])
        release = json.dumps({"lease": lease}).encode()
        data, _ = raw_exchange(s.port, b"POST //v1/./release HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n"
                               b"Content-Type: application/json\r\nConnection: close\r\n\r\n%s"
                               % (len(release), release))
        self.assertEqual(responses(data), [404], data)  # routed as /v1/release; released before


def redis_section(redis, prefix):
    # A loaded machine's slow call must not turn into a failure mode's answer:
    # these tests assert on leases, not on latency.
    return '\n[store]\nurl = "%s"\nkey_prefix = "%s"\ncommand_timeout = "2s"\n' % (redis.url, prefix)


def fresh_prefix():
    return "sluice:lease:%08x:" % random.getrandbits(32)


class LeasesOnRedis(Leases):
    """Every test above, on a real Redis store."""

    def server(self, rules="", server=""):
        r = RedisServer()
        self.addCleanup(r.stop)
        s, _ = self.start_config(base_config(self.POLICIES, rules, server) + redis_section(r, fresh_prefix()))
        return s


def held_in_value(v):
    """The units of the leases in a concurrency value (semantics.md, "Leases
    in a Redis store"): its tag, latest, then per lease 5 doubles."""
    if v is None:
        return 0
    assert v[:1] == b"l" and (len(v) - 25) % 40 == 0, v
    return sum(int(struct.unpack_from("<d", v, 25 + 40 * k + 32)[0]) for k in range((len(v) - 25) // 40))


class LeaseFleetOnRedis(ServeCase):
    N = 5

    def fleet(self):
        r = RedisServer()
        self.addCleanup(r.stop)
        prefix = fresh_prefix()
        text = base_config({"jobs": "concurrency %d lease=30s" % self.N, "short": "concurrency 2 lease=1s",
                            "both": "all(gcra 1000/1s burst=1000, concurrency 2 lease=30s)"},
                           server="threads = 1\nclient_time = true\n")
        path = write_config(text + redis_section(r, prefix))
        self.addCleanup(os.unlink, path)
        return r, prefix, [self.start("--config", path) for _ in range(4)]

    def release(self, s, lease, conn=None):
        st, _, data = s.request("POST", "/v1/release", json.dumps({"lease": lease}),
                                {"Content-Type": "application/json"}, conn=conn)
        return st, json.loads(data)

    def test_never_more_than_n_held_across_the_fleet(self):
        redis, prefix, servers = self.fleet()
        key = prefix + "s:jobs:{k}"
        lock = threading.Lock()
        seen = {"held": 0, "most": 0, "admits": 0, "denials": 0, "releases": 0, "crossed": 0, "bad": []}
        stop = threading.Event()
        store_most = [0]

        def watch():  # the store's own count, read while the clients run
            while not stop.is_set():
                store_most[0] = max(store_most[0], held_in_value(redis.command("GET", key)))
                time.sleep(0.002)

        def client(i):
            rng = random.Random(i)
            conns = [s.conn() for s in servers]
            deadline = time.time() + 40
            for _ in range(60):
                if time.time() > deadline:
                    break
                a = rng.randrange(len(servers))
                st, _, b = servers[a].decide([("jobs", "k")], conn=conns[a])
                if st != 200:
                    with lock:
                        seen["denials"] += 1
                        if st != 429 or b.get("source") not in ("store", "deny-cache"):
                            seen["bad"].append((st, b))
                    continue
                with lock:
                    seen["admits"] += 1
                    seen["held"] += 1  # after the admit: never more than Redis holds
                    seen["most"] = max(seen["most"], seen["held"])
                time.sleep(rng.random() * 0.004)  # the work
                with lock:
                    seen["held"] -= 1  # before the release: never less than Redis holds
                r = (a + 1 + rng.randrange(len(servers) - 1)) % len(servers)  # another process
                st, body = self.release(servers[r], b["lease"], conn=conns[r])
                with lock:
                    seen["releases"] += 1
                    seen["crossed"] += r != a
                    if st != 200 or body["released"] != 1:
                        seen["bad"].append((st, body))
            for c in conns:
                c.close()

        w = threading.Thread(target=watch)
        w.start()
        threads = [threading.Thread(target=client, args=(i,)) for i in range(10)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        stop.set()
        w.join(10)
        failures = "".join(line + "\n" for s in servers for line in s.metrics().splitlines()
                           if line.startswith(("sluice_store_call_failures_total", "sluice_store_errors_total")))
        self.assertEqual(seen["bad"], [], failures)
        self.assertLessEqual(seen["most"], self.N)
        self.assertLessEqual(store_most[0], self.N)
        # The limit was reached: a concurrency check denies only while N
        # unexpired leases are held, so a store denial is the proof. The
        # clients' own count is a lower bound of the store's (it rises after
        # an admit's answer and falls before the release is sent), so it
        # reaching N depends on the scheduler, not on the limiter (CI once
        # saw 4 on a busy machine); it is reported, not asserted. That
        # exactly N fit, not fewer, is checked below, one acquire at a time.
        self.assertGreater(seen["denials"], 0, "some acquires met a full limit")
        self.assertEqual(seen["releases"], seen["admits"])
        self.assertEqual(seen["crossed"], seen["releases"])  # every release through another process
        print("\nfleet: %d admits, %d denials, %d releases (all through another process), at most %d held "
              "(clients), %d (store)" % (seen["admits"], seen["denials"], seen["releases"], seen["most"],
                                         store_most[0]), file=sys.stderr)
        # All released: the store holds nothing, and N admits fit again.
        self.assertEqual(held_in_value(redis.command("GET", key)), 0)
        leases = []
        for k in range(self.N):
            st, _, b = servers[k % 4].decide([("jobs", "k")])
            self.assertEqual(st, 200)
            leases.append(b["lease"])
        self.assertEqual(servers[3].decide([("jobs", "k")])[0], 429)
        self.assertEqual(held_in_value(redis.command("GET", key)), self.N)
        for k, lease in enumerate(leases):
            self.assertEqual(self.release(servers[(k + 2) % 4], lease)[0], 200)

    def test_a_killed_holders_leases_expire_on_time(self):
        _, _, servers = self.fleet()
        t0 = time.time_ns()  # explicit instants (client_time): no sleep on the wall clock
        for s in servers[:2]:  # two holders that never release
            st, _, b = s.decide([("short", "crash")], now=t0)
            self.assertEqual(st, 200)
            self.assertIn("lease", b)
        st, _, b = servers[2].decide([("short", "crash")], now=t0 + 10**9 - 1)
        self.assertEqual(st, 429)  # one tick before the expiry: still held
        self.assertEqual(b["retry_after_ns"], 1)
        self.assertEqual(b["source"], "store")
        st, _, b = servers[3].decide([("short", "crash")], cost=2, now=t0 + 10**9)
        self.assertEqual(st, 200)  # at the expiry: both free, on every process
        self.assertEqual(b["remaining"], 0)

    def test_a_lease_of_one_composite_released_elsewhere_and_bad_ids(self):
        redis, prefix, servers = self.fleet()
        st, _, b = servers[0].decide([("both", "c")])
        self.assertEqual(st, 200)
        lease = b["lease"]
        st, _, _ = servers[1].decide([("both", "c")])
        self.assertEqual(st, 200)
        self.assertEqual(servers[2].decide([("both", "c")])[0], 429)  # the concurrency part is full
        before = redis.command("GET", prefix + "s:both:{c}:1")
        # Never issued (a nonce nobody was handed), on every process: 404 naming lease, nothing changes.
        parts = lease.split(".")
        never = ".".join(["l1", "%016x" % ((int(parts[1], 16) ^ 0x5a5a) or 1)] + parts[2:])
        for s in servers:
            st, body = self.release(s, never)
            self.assertEqual((st, body["error"]["field"]), (404, "lease"))
        self.assertEqual(redis.command("GET", prefix + "s:both:{c}:1"), before)
        st, body = self.release(servers[3], lease)
        self.assertEqual((st, body["released"]), (200, 1))
        self.assertEqual(self.release(servers[2], lease)[0], 404)  # released once
        self.assertEqual(servers[1].decide([("both", "c")])[0], 200)
        m = servers[3].metrics()
        self.assertEqual(metric(m, 'sluice_lease_releases_total{result="released"}'), 1)


if __name__ == "__main__":
    unittest.main()

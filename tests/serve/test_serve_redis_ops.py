"""What the Redis store tells an operator, through real `sluice serve` and
`sluice replay` processes on real redis-servers: a server whose
`maxmemory-policy` may evict is refused at start (or warned of, with
`store.eviction = "warn"`), its evictions are counted and logged, and at
`maxmemory` under `noeviction` the failure mode answers (docs/redis.md,
"Eviction"); each TLS failure names its cause in the health line, the
`call_failures` reason and `replay --store`'s message (docs/serve.md).

Each TestCase class is one ctest test (tests/serve/CMakeLists.txt). Every
process is stopped by PID; every wait and loop is bounded.
"""
import os
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from serve_support import BINARY, TlsCerts, TlsRedisServer, base_config, metric, wait_until, write_config  # noqa: E402
from test_serve_redis import RedisCase, fresh_prefix, store_section  # noqa: E402

EVICTING = ["volatile-lru", "volatile-lfu", "volatile-random", "volatile-ttl", "allkeys-lru", "allkeys-lfu",
            "allkeys-random"]


def info_field(redis, section, name):
    for line in redis.command("INFO", section).decode().splitlines():
        if line.startswith(name + ":"):
            return line.split(":", 1)[1].strip()
    raise AssertionError("INFO %s has no %s" % (section, name))


class EvictionOnRedis(RedisCase):
    def config(self, redis, **store):
        text = base_config({"fw": "fixed-window 5/1h"}, server="threads = 1\n")
        return text + store_section(redis, fresh_prefix(), **store)

    def replay(self, redis):
        return subprocess.run([BINARY, "replay", "--policy", "gcra 1/1s", "--store", redis.url], input="1 a\n",
                              capture_output=True, text=True, timeout=30)

    def test_each_evicting_policy_is_refused_at_start_or_warned_of(self):
        redis = self.redis()
        for policy in EVICTING:
            with self.subTest(policy=policy):
                self.assertEqual(redis.command("CONFIG", "SET", "maxmemory-policy", policy), b"+OK")
                path = write_config(self.config(redis))
                self.addCleanup(os.unlink, path)
                p = subprocess.run([BINARY, "serve", "--config", path], capture_output=True, text=True, timeout=30)
                self.assertEqual(p.returncode, 1, p.stderr)
                for words in ("eviction", "maxmemory-policy is " + policy, "CONFIG SET maxmemory-policy noeviction"):
                    self.assertIn(words, p.stderr)
                p = self.replay(redis)
                self.assertEqual(p.returncode, 2, p.stderr)
                self.assertIn("maxmemory-policy is " + policy, p.stderr)
                s, _ = self.start_config(self.config(redis, eviction='"warn"'))
                self.assertIn("warning: the server's maxmemory-policy is " + policy, s.log())
                st, _, b = s.decide([("fw", "k")])
                self.assertEqual((st, b["source"]), (200, "store"), b)
                s.stop()
        self.assertEqual(redis.command("CONFIG", "SET", "maxmemory-policy", "noeviction"), b"+OK")
        s, _ = self.start_config(self.config(redis))
        self.assertEqual(s.decide([("fw", "k")])[0], 200)
        self.assertNotIn("maxmemory-policy", s.log())
        self.assertEqual(metric(s.metrics(), "sluice_store_evicted_keys_total"), 0)
        self.assertEqual(self.replay(redis).returncode, 0)

    def test_evictions_are_counted_and_logged(self):
        redis = self.redis()
        self.assertEqual(redis.command("CONFIG", "SET", "maxmemory-policy", "volatile-lru"), b"+OK")
        s, _ = self.start_config(self.config(redis, eviction='"warn"'))
        self.assertEqual(s.decide([("fw", "hot")])[0], 200)
        used = int(info_field(redis, "memory", "used_memory"))
        self.assertEqual(redis.command("CONFIG", "SET", "maxmemory", used + 200_000), b"+OK")
        for i in range(2000):  # keys with a TTL until the server evicts some
            redis.command("SET", "filler:%d" % i, "x" * 2000, "PX", 3_600_000)
            if i % 50 == 49 and int(info_field(redis, "stats", "evicted_keys")) > 0:
                break
        self.assertGreater(int(info_field(redis, "stats", "evicted_keys")), 0)
        # The server may go on evicting for a while (its eviction loop is
        # time-bounded): the metric follows it, one reading a second.
        self.assertTrue(wait_until(lambda: metric(s.metrics(), "sluice_store_evicted_keys_total") == int(
            info_field(redis, "stats", "evicted_keys")), 10), s.log())
        evicted = int(info_field(redis, "stats", "evicted_keys"))
        self.assertIn("store: the server evicted ", s.log())
        self.assertIn("(evicted_keys %d); maxmemory-policy volatile-lru" % evicted, s.log())

    def test_noeviction_at_maxmemory_answers_by_the_failure_mode_and_admits_nothing_more(self):
        redis = self.redis()
        # A quota (no window to end during the test), every decision a call
        # (no deny cache).
        text = base_config({"fw": "quota 5"}, server="threads = 1\n")
        s, _ = self.start_config(text + store_section(redis, fresh_prefix(), deny_cache="false"))
        self.assertEqual([s.decide([("fw", "hot")])[0] for _ in range(6)], [200] * 5 + [429])
        self.assertEqual(redis.command("CONFIG", "SET", "maxmemory", 1), b"+OK")
        for i in range(8):
            for key in ("hot", "new%d" % i):
                st, _, b = s.decide([("fw", key)])
                self.assertEqual((st, b["source"]), (429, "fail-closed"), b)
        m = s.metrics()
        self.assertGreaterEqual(metric(m, 'sluice_store_call_failures_total{reason="oom"}'), 1)
        self.assertEqual(metric(m, "sluice_store_evicted_keys_total"), 0)
        self.assertEqual(redis.command("CONFIG", "SET", "maxmemory", 0), b"+OK")
        # Once the breaker lets a call through again, the key is as it was:
        # 5 admitted in its window, none more.
        self.assertTrue(wait_until(lambda: s.decide([("fw", "hot")])[2]["source"] == "store", 5))
        st, _, b = s.decide([("fw", "hot")])
        self.assertEqual((st, b["source"], b["remaining"]), (429, "store", 0), b)
        self.assertEqual(int(info_field(redis, "stats", "evicted_keys")), 0)


class TlsCausesOnRedis(RedisCase):
    """Each TLS failure — an untrusted CA, a wrong name, an expired
    certificate, a missing client certificate, a plaintext port — named in
    the health line, counted under its reason and told by `replay --store`,
    with OpenSSL's reason text."""

    @classmethod
    def setUpClass(cls):
        cls.certs = TlsCerts()
        cls.servers = []
        try:
            cls.ok = cls.server(cls.certs)
            cls.expired = cls.server(cls.certs, "expired")
            cls.mutual = cls.server(cls.certs, auth_clients=True)
        except BaseException:
            cls.tearDownClass()
            raise

    @classmethod
    def server(cls, *args, **kw):
        s = TlsRedisServer(*args, **kw)
        cls.servers.append(s)
        return s

    @classmethod
    def tearDownClass(cls):
        for s in cls.servers:
            s.stop()
        cls.certs.remove()

    def cases(self):
        ca = "ca_file=" + self.certs.path("ca.crt")
        return [
            (self.ok.tls_url(query="ca_file=" + self.certs.path("other.crt")), "untrusted",
             "TLS: the server's certificate is not trusted (self-signed certificate in certificate chain"),
            (self.ok.tls_url(query=ca + "&server_name=wrong.example"), "name-mismatch",
             "TLS: the server's certificate does not match the name \"wrong.example\" (hostname mismatch"),
            (self.expired.tls_url(), "expired",
             "TLS: the server's certificate has expired or is not valid yet (certificate has expired)"),
            (self.mutual.tls_url(), "no-client-certificate",
             "TLS: the server refused the client certificate, or wants one (cert_file=..., key_file=...): "
             "tlsv13 alert certificate required"),
            ("rediss://127.0.0.1:%d?%s" % (self.ok.port, ca), "plaintext-peer", "a plaintext port"),
        ]

    def test_each_cause_in_the_log_the_metric_and_replay(self):
        for url, reason, words in self.cases():
            with self.subTest(reason=reason):
                text = base_config({"api": "gcra 10/1s"}, server="threads = 1\n")
                # A login given 2 s, not the default 200 ms: under a loaded
                # sanitizer build a handshake can take longer, and its cause
                # is then a timeout, not the one this test names.
                s, _ = self.start_config(text + '\n[store]\nurl = "%s"\nkey_prefix = "%s"\nconnect_timeout = "2s"\n'
                                         % (url, fresh_prefix()))
                for _ in range(6):
                    st, _, b = s.decide([("api", "k")])
                    self.assertEqual((st, b["source"]), (429, "fail-closed"), b)
                self.assertTrue(s.wait_log(": unhealthy: "), s.log())
                line = [x for x in s.log().splitlines() if ": unhealthy: " in x][0]
                self.assertIn("(the last: %s: " % reason, line)
                self.assertIn(words, line)
                m = s.metrics()
                self.assertGreaterEqual(metric(m, 'sluice_store_call_failures_total{reason="%s"}' % reason), 5, m)
                for other in ("refused", "timeout", "io"):
                    self.assertEqual(metric(m, 'sluice_store_call_failures_total{reason="%s"}' % other), 0, other)
                s.stop()
                p = subprocess.run([BINARY, "replay", "--policy", "gcra 1/1s", "--store", url], input="1 a\n",
                                   capture_output=True, text=True, timeout=30)
                self.assertNotEqual(p.returncode, 0)
                self.assertIn("the store did not decide (fail-closed): %s: " % reason, p.stderr)
                self.assertIn(words, p.stderr)

    def test_an_unreadable_ca_file_names_the_systems_reason(self):
        url = self.ok.tls_url(query="ca_file=/nonexistent/sluice-ca.crt")
        p = subprocess.run([BINARY, "replay", "--policy", "gcra 1/1s", "--store", url], input="1 a\n",
                           capture_output=True, text=True, timeout=30)
        self.assertEqual(p.returncode, 2, p.stderr)
        self.assertIn("ca_file", p.stderr)
        self.assertIn("No such file or directory", p.stderr)
        self.assertNotIn("error 2147483650", p.stderr)


if __name__ == "__main__":
    unittest.main()

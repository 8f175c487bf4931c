"""The envoyproxy/ratelimit configuration files `sluice serve` reads (its YAML
domains and descriptors, upstream's own files, their errors), through a real
gRPC client as in test_envoy.py, whose stubs and cases these share.

Each TestCase class is one ctest test (tests/envoy/CMakeLists.txt). Every
server binds 127.0.0.1 on ports the system picks and is stopped by PID.
Environment: SLUICE_BINARY, SLUICE_SOURCE_DIR, PROTOC.
"""
import os
import shutil
import subprocess
import sys
import tempfile
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
# Importing test_envoy generates the message classes (its stubs) first.
from test_envoy import (BINARY, OK, OVER, EnvoyCase, RedisServer, Unit, desc, headers_of, metric, rls,  # noqa: E402
                        serve_grpc, start_with_grpc, stop_grpc, write_config)

README = os.path.join(HERE, "fixtures", "readme.toml")
UINT32_MAX = 2 ** 32 - 1


def next_window(seconds, margin=0.3):
    """Waits (at most `margin` s) until the current epoch-aligned window of
    `seconds` has more than `margin` s left, so that a test's calls, a few
    milliseconds apart, fall in one window."""
    left = seconds - time.time() % seconds
    if left <= margin:
        time.sleep(left + 0.01)


class EnvoyYaml(unittest.TestCase):
    """envoyproxy/ratelimit's README examples (fixtures/readme/, written
    again), loaded through [grpc] envoy_config, decide as its README says."""

    @classmethod
    def setUpClass(cls):
        cls.server, _, cls.channel, cls.call = serve_grpc(["--config", README, "--threads", "1"])

    @classmethod
    def tearDownClass(cls):
        stop_grpc(cls)

    def ask(self, domain, *descriptors, hits=0):
        return self.call(rls.RateLimitRequest(domain=domain, descriptors=list(descriptors), hits_addend=hits),
                         timeout=5)

    def test_example1_each_value_has_its_own_limit_of_500_a_second(self):
        next_window(1)
        res = self.ask("mongo_cps", desc(("database", "users")), hits=500)
        self.assertEqual(res.overall_code, OK)
        self.assertEqual(res.statuses[0].current_limit.requests_per_unit, 500)
        self.assertEqual(res.statuses[0].current_limit.unit, Unit.SECOND)
        self.assertEqual(res.statuses[0].limit_remaining, 0)
        self.assertEqual(self.ask("mongo_cps", desc(("database", "users"))).overall_code, OVER)
        self.assertEqual(self.ask("mongo_cps", desc(("database", "default")), hits=500).overall_code, OK)
        self.assertFalse(self.ask("mongo_cps", desc(("database", "orders"))).statuses[0].HasField("current_limit"))

    def test_example2_nested_marketing_limit_and_atomic_descriptors(self):
        number = "2061111111"
        both = [desc(("message_type", "marketing"), ("to_number", number)), desc(("to_number", number))]
        for i in range(5):
            res = self.ask("messaging", *both)
            self.assertEqual(res.overall_code, OK, i)
        self.assertEqual(res.statuses[0].current_limit.requests_per_unit, 5)
        self.assertEqual(res.statuses[0].current_limit.unit, Unit.DAY)
        self.assertEqual(res.statuses[1].current_limit.requests_per_unit, 100)
        self.assertEqual(res.statuses[1].limit_remaining, 95)
        res = self.ask("messaging", *both)
        self.assertEqual(res.overall_code, OVER)
        self.assertEqual([st.code for st in res.statuses], [OVER, OK])
        # The denied call charged neither descriptor: 95 are left for the
        # number (envoyproxy/ratelimit would have counted the sixth: 94).
        self.assertEqual(res.statuses[1].limit_remaining, 95)
        self.assertEqual(self.ask("messaging", desc(("to_number", number))).statuses[0].limit_remaining, 94)
        # Another number has its own 5.
        self.assertEqual(self.ask("messaging", desc(("message_type", "marketing"), ("to_number", "2062222222")))
                         .statuses[0].limit_remaining, 4)

    def test_example3_the_exact_value_before_the_key_alone(self):
        next_window(1)
        res = self.ask("edge_proxy_per_ip", desc(("remote_address", "50.0.0.5")))
        self.assertEqual(res.overall_code, OVER)  # 0 a second: never
        self.assertEqual(res.statuses[0].current_limit.requests_per_unit, 0)
        res = self.ask("edge_proxy_per_ip", desc(("remote_address", "50.0.0.1")), hits=10)
        self.assertEqual(res.overall_code, OK)
        self.assertEqual(res.statuses[0].current_limit.requests_per_unit, 10)
        self.assertEqual(self.ask("edge_proxy_per_ip", desc(("remote_address", "50.0.0.1"))).overall_code, OVER)

    def test_example4_only_a_rule_as_deep_as_the_descriptor(self):
        res = self.ask("example4", desc(("key", "value")))
        self.assertFalse(res.statuses[0].HasField("current_limit"))
        res = self.ask("example4", desc(("key", "value"), ("subkey", "subvalue")))
        self.assertEqual(res.statuses[0].current_limit.requests_per_unit, 300)
        res = self.ask("example4", desc(("key", "value"), ("subkey", "subvalue"), ("deeper", "x")))
        self.assertFalse(res.statuses[0].HasField("current_limit"))

    def test_example5_unlimited_is_ok_with_the_largest_remaining(self):
        res = self.ask("internal", desc(("ldap", "cn=admin")), hits=1000000)
        self.assertEqual(res.overall_code, OK)
        self.assertEqual(res.statuses[0].limit_remaining, UINT32_MAX)
        self.assertFalse(res.statuses[0].HasField("current_limit"))
        res = self.ask("internal", desc(("azure", "blob")))
        self.assertEqual(res.statuses[0].current_limit.unit, Unit.MINUTE)

    def test_example6_shadow_mode_never_denies_and_is_counted(self):
        next_window(1)
        before = metric(self.server.metrics(), 'sluice_shadow_denials_total{policy="example6.service.user_user-a"}')
        ctx = ("service", "auth-service")
        res = self.ask("example6", desc(ctx, ("user", "user-a")), hits=11)
        self.assertEqual(res.overall_code, OK)
        self.assertEqual(res.statuses[0].code, OK)
        self.assertEqual(res.statuses[0].current_limit.requests_per_unit, 10)
        after = metric(self.server.metrics(), 'sluice_shadow_denials_total{policy="example6.service.user_user-a"}')
        self.assertEqual((after or 0) - (before or 0), 1)
        self.assertEqual(self.ask("example6", desc(ctx, ("user", "user-b")), hits=21).overall_code, OVER)

    def test_example7_replaces_drops_the_named_limit(self):
        next_window(1)
        first = desc(("key_1", "value_1"), ("user", "bkthomps"))
        second = desc(("key_2", "value_2"), ("user", "bkthomps"))
        res = self.ask("example7", first, second, hits=6)
        self.assertEqual(res.overall_code, OK)  # 10 a second applies, not 5
        self.assertFalse(res.statuses[0].HasField("current_limit"))  # replaced: not decided
        self.assertEqual(res.statuses[1].current_limit.requests_per_unit, 10)
        self.assertEqual(res.statuses[1].limit_remaining, 4)
        # The replaced limit was not charged: its own 5 are all there.
        res = self.ask("example7", first, hits=5)
        self.assertEqual(res.overall_code, OK)
        self.assertEqual(res.statuses[0].current_limit.requests_per_unit, 5)

    def test_example9_prefix_wildcard_limits_each_value_apart(self):
        next_window(60)
        self.assertEqual(self.ask("example9", desc(("key1", "value_1")), hits=20).overall_code, OK)
        self.assertEqual(self.ask("example9", desc(("key1", "value_1"))).overall_code, OVER)
        res = self.ask("example9", desc(("key1", "value_2")))
        self.assertEqual(res.overall_code, OK)
        self.assertEqual(res.statuses[0].limit_remaining, 19)
        self.assertFalse(self.ask("example9", desc(("key1", "other"))).statuses[0].HasField("current_limit"))

    def test_minute_windows_end_on_the_utc_minute(self):
        # envoyproxy/ratelimit's windows are epoch-aligned: a minute's ends
        # when time.time() % 60 comes back to 0. So must sluice's, in the
        # memory store too.
        next_window(60, margin=1)
        res = self.ask("internal", desc(("azure", "queue")))
        t = time.time()
        reset = res.statuses[0].duration_until_reset
        got = reset.seconds + reset.nanos / 1e9
        want = 60 - t % 60
        self.assertLess(abs(got - want), 0.5, (got, want))


class EnvoyYamlErrors(unittest.TestCase):
    """Bad envoyproxy/ratelimit files: `serve --check` exits 2 naming FILE:LINE:COLUMN."""

    def check(self, yaml_text):
        folder = tempfile.mkdtemp(prefix="sluice-envoy-yaml-")
        yaml_path = os.path.join(folder, "bad.yaml")
        with open(yaml_path, "w") as f:
            f.write(yaml_text)
        toml_path = os.path.join(folder, "sluice.toml")
        with open(toml_path, "w") as f:
            f.write('[grpc]\nlisten = "127.0.0.1:0"\nenvoy_config = ["*.yaml"]\n')
        r = subprocess.run([BINARY, "serve", "--check", toml_path], capture_output=True, text=True, timeout=20)
        for p in (yaml_path, toml_path):
            os.unlink(p)
        os.rmdir(folder)
        self.assertEqual(r.returncode, 2, r.stderr)
        return r.stderr.replace(yaml_path, "bad.yaml")

    def test_yaml_syntax(self):
        self.assertIn("bad.yaml:4:10: end of sequence flow not found",
                      self.check("domain: d\ndescriptors:\n  - key: [a\n    value: b\n"))

    def test_unknown_unit(self):
        self.assertIn("bad.yaml:4:46: descriptors[0].rate_limit.unit: unknown unit 'fortnight'",
                      self.check("domain: d\ndescriptors:\n  - key: a\n"
                                 "    rate_limit: {requests_per_unit: 1, unit: fortnight}\n"))

    def test_negative_requests_per_unit(self):
        self.assertIn("bad.yaml:6:26: descriptors[0].rate_limit.requests_per_unit: must be a whole number",
                      self.check("domain: d\ndescriptors:\n  - key: a\n    rate_limit:\n      unit: second\n"
                                 "      requests_per_unit: -5\n"))

    def test_duplicate_descriptors(self):
        self.assertIn("bad.yaml:4:5: descriptors[1]: a descriptor with key 'a' is already at bad.yaml:3:5",
                      self.check("domain: d\ndescriptors:\n  - key: a\n  - key: a\n"))

    def test_unknown_key(self):
        self.assertIn("bad.yaml:4:5: unknown key 'valeu' in descriptors[0]",
                      self.check("domain: d\ndescriptors:\n  - key: a\n    valeu: b\n"))


UPSTREAM = os.path.join(HERE, "fixtures", "upstream", "ratelimit")


def quota_mode_sequence(case, ask):
    """example.yaml's quota_mode rules, through `ask(domain, *descriptors, hits=0)`."""
    next_window(60, margin=3)
    # example.yaml: service_1 (1 a minute) and service_2 (2), both quota_mode,
    # each with metadata service_with_quota.name, Envoy's example routes by.
    # Beside a limit over (foo, 2 a minute, spent): denied, nothing charged.
    case.assertEqual(ask("rl", desc(("foo", "quota")), hits=2).overall_code, OK)
    res = ask("rl", desc(("foo", "quota")), desc(("service", "service_2")))
    case.assertEqual(res.overall_code, OVER)
    case.assertEqual([(s.code, s.limit_remaining) for s in res.statuses], [(OVER, 0), (OK, 2)])
    both = [desc(("service", "service_1")), desc(("service", "service_2"))]
    res = ask("rl", *both)
    case.assertEqual(res.overall_code, OK)
    case.assertEqual([(s.code, s.limit_remaining) for s in res.statuses], [(OK, 0), (OK, 1)])
    md = res.dynamic_metadata
    case.assertEqual(md["domain"], "rl")
    case.assertEqual([list(d["entries"]) for d in md["descriptors"]],
                     [["service=service_1"], ["service=service_2"]])
    case.assertEqual(md["metadata"]["service_with_quota"]["name"], "service_1")
    # service_1 is over: still OK, service_2 charged, its metadata sent.
    res = ask("rl", *both)
    case.assertEqual(res.overall_code, OK)
    case.assertEqual([(s.code, s.limit_remaining) for s in res.statuses], [(OVER, 0), (OK, 0)])
    case.assertEqual(res.dynamic_metadata["metadata"]["service_with_quota"]["name"], "service_2")
    # Both over: denied, no metadata.
    res = ask("rl", *both)
    case.assertEqual(res.overall_code, OVER)
    case.assertEqual([s.code for s in res.statuses], [OVER, OVER])
    case.assertNotIn("metadata", res.dynamic_metadata)


class UpstreamFiles(EnvoyCase):
    """envoyproxy/ratelimit's own files (fixtures/upstream/, copied as they
    are) through ShouldRateLimit, as that service decides them."""

    FILES = ["examples/ratelimit/config/config.yaml", "examples/ratelimit/config/example.yaml",
             "test/config/wildcard.yaml", "test/integration/runtime/current/ratelimit/config/share_threshold.yaml"]

    @classmethod
    def config_text(cls):
        files = ", ".join('"%s"' % os.path.join(UPSTREAM, f) for f in cls.FILES)
        files += ', "%s"' % os.path.join(HERE, "fixtures", "quota_mode.yaml")
        return ('[server]\nlisten = "127.0.0.1:0"\nthreads = 1\n\n[grpc]\nlisten = "127.0.0.1:0"\n'
                'dynamic_metadata = true\nenvoy_config = [%s]\n' % files)

    def ask(self, domain, *descriptors, hits=0):
        return self.call(rls.RateLimitRequest(domain=domain, descriptors=list(descriptors), hits_addend=hits),
                         timeout=5)

    def test_a_wildcard_in_the_middle_limits_each_matching_value_apart(self):
        next_window(60, margin=2)
        # wildcard.yaml: multiWild "foo*bar*baz", 10 a minute, each value its own.
        res = self.ask("test-domain", desc(("multiWild", "foo1bar1baz")), hits=10)
        self.assertEqual(res.overall_code, OK)
        self.assertEqual(res.statuses[0].current_limit.requests_per_unit, 10)
        self.assertEqual(res.statuses[0].current_limit.unit, Unit.MINUTE)
        self.assertEqual(res.statuses[0].limit_remaining, 0)
        self.assertEqual(self.ask("test-domain", desc(("multiWild", "foo1bar1baz"))).overall_code, OVER)
        res = self.ask("test-domain", desc(("multiWild", "foobarbaz")))
        self.assertEqual((res.overall_code, res.statuses[0].limit_remaining), (OK, 9))
        # Segments missing or out of order: no rule.
        for value in ("foo1baz", "bar1baz", "foobazbar"):
            res = self.ask("test-domain", desc(("multiWild", value)))
            self.assertFalse(res.statuses[0].HasField("current_limit"), value)
        # midWild "bar*b": "barb" too ('*' matches nothing), not "bara".
        res = self.ask("test-domain", desc(("midWild", "barb")), hits=20)
        self.assertEqual((res.overall_code, res.statuses[0].current_limit.requests_per_unit), (OK, 20))
        self.assertEqual(self.ask("test-domain", desc(("midWild", "barb"))).overall_code, OVER)
        self.assertFalse(self.ask("test-domain", desc(("midWild", "bara"))).statuses[0].HasField("current_limit"))

    def test_share_threshold_values_share_one_limit(self):
        next_window(3600, margin=2)
        # files/* shares 10 an hour; files_no_share/* gives each value 10.
        res = self.ask("share-threshold-test", desc(("files", "files/a.pdf")), hits=6)
        self.assertEqual((res.overall_code, res.statuses[0].limit_remaining), (OK, 4))
        res = self.ask("share-threshold-test", desc(("files", "files/b.csv")), hits=4)
        self.assertEqual((res.overall_code, res.statuses[0].limit_remaining), (OK, 0))
        res = self.ask("share-threshold-test", desc(("files", "files/c.txt")))
        self.assertEqual((res.overall_code, res.statuses[0].code), (OVER, OVER))
        for value in ("files_no_share/a.pdf", "files_no_share/b.csv"):
            res = self.ask("share-threshold-test", desc(("files_no_share", value)), hits=10)
            self.assertEqual((res.overall_code, res.statuses[0].limit_remaining), (OK, 0), value)

    def test_quota_mode_denies_only_when_every_quota_is_over(self):
        quota_mode_sequence(self, self.ask)

    def test_quota_mode_beside_shadow_mode_and_a_plain_limit(self):
        next_window(60, margin=2)
        a, b, c = desc(("a", "x")), desc(("b", "x")), desc(("c", "x"))
        res = self.ask("quota-test", a, b)
        self.assertEqual((res.overall_code, [s.code for s in res.statuses]), (OK, [OK, OK]))
        # a is over; b, a quota in shadow_mode, always passes: admitted.
        res = self.ask("quota-test", a, b)
        self.assertEqual((res.overall_code, [s.code for s in res.statuses]), (OK, [OVER, OK]))
        # a is the call's only quota, and over: denied, c not charged.
        res = self.ask("quota-test", a, c)
        self.assertEqual(res.overall_code, OVER)
        self.assertEqual([(s.code, s.limit_remaining) for s in res.statuses], [(OVER, 0), (OK, 5)])
        self.assertEqual(self.ask("quota-test", c).statuses[0].limit_remaining, 4)

    def test_dynamic_metadata_carries_the_request(self):
        d = desc(("database", "default"), hits=3)
        d.limit.requests_per_unit = 7
        d.limit.unit = 3  # HOUR
        res = self.ask("mongo_cps", d, desc(("unknown", "x")), hits=2)
        md = res.dynamic_metadata
        self.assertEqual(md["domain"], "mongo_cps")
        self.assertEqual(md["hitsAddend"], 2)
        first, second = md["descriptors"]
        self.assertEqual(list(first["entries"]), ["database=default"])
        self.assertEqual(first["hitsAddend"], 3)
        self.assertEqual(first["limit"], "requests_per_unit: 7 unit: HOUR")
        self.assertEqual(set(second.keys()), {"entries"})
        self.assertNotIn("metadata", md)  # config.yaml has none

    def test_current_limit_name_is_the_rate_limit_name(self):
        res = self.ask("rl", desc(("foo", "n"), ("bar", "bkthomps")))
        self.assertEqual(res.statuses[0].current_limit.name, "bkthomps")
        self.assertEqual(res.statuses[0].current_limit.requests_per_unit, 1)
        # No name: empty, as that service sends (the limit is still there).
        res = self.ask("mongo_cps", desc(("database", "users")))
        self.assertTrue(res.statuses[0].HasField("current_limit"))
        self.assertEqual(res.statuses[0].current_limit.name, "")
        self.assertEqual(res.statuses[0].current_limit.requests_per_unit, 500)
        # sluice's rule path still names the policy in the RateLimit fields.
        self.assertEqual(headers_of(res)["RateLimit-Policy"], '"mongo_cps.database_users";q=500;w=1')


class UpstreamQuotaOnRedis(unittest.TestCase):
    """quota_mode on a real Redis: a call decided again (a second store
    request made from the first one's answer) as on memory."""

    def test_quota_mode_on_redis(self):
        redis = RedisServer()
        self.addCleanup(redis.stop)
        path = write_config(UpstreamFiles.config_text() + '\n[store]\nurl = "%s"\nkey_prefix = "sluice:quota:"\n'
                            % redis.url)
        self.addCleanup(os.unlink, path)
        _, call = start_with_grpc(self, "--config", path)
        ask = lambda domain, *d, hits=0: call(rls.RateLimitRequest(domain=domain, descriptors=list(d),
                                                                   hits_addend=hits), timeout=5)
        quota_mode_sequence(self, ask)


class UpstreamNothingLimited(unittest.TestCase):
    """Files that limit nothing load: a domain with no descriptors
    (duplicate_domain.yaml) and one of unlimited entries only."""

    def test_a_configuration_of_such_files_serves(self):
        folder = tempfile.mkdtemp(prefix="sluice-envoy-free-")
        self.addCleanup(shutil.rmtree, folder)
        with open(os.path.join(folder, "free.yaml"), "w") as f:
            f.write("domain: free\ndescriptors:\n  - key: a\n    rate_limit:\n      unlimited: true\n")
        toml = os.path.join(folder, "sluice.toml")
        with open(toml, "w") as f:
            f.write('[server]\nlisten = "127.0.0.1:0"\n[grpc]\nlisten = "127.0.0.1:0"\n'
                    'envoy_config = ["free.yaml", "%s"]\n' % os.path.join(UPSTREAM, "test/config/duplicate_domain.yaml"))
        r = subprocess.run([BINARY, "serve", "--check", toml], capture_output=True, text=True, timeout=20)
        self.assertEqual(r.returncode, 0, r.stderr)
        _, call = start_with_grpc(self, "--config", toml)
        res = call(rls.RateLimitRequest(domain="free", descriptors=[desc(("a", "x"))]), timeout=5)
        self.assertEqual((res.overall_code, res.statuses[0].limit_remaining), (OK, UINT32_MAX))
        res = call(rls.RateLimitRequest(domain="test-domain", descriptors=[desc(("key1", "value1"))]), timeout=5)
        self.assertEqual(res.overall_code, OK)
        self.assertFalse(res.statuses[0].HasField("current_limit"))
        self.assertFalse(res.HasField("dynamic_metadata"))  # off unless [grpc] dynamic_metadata


if __name__ == "__main__":
    unittest.main()

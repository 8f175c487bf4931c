"""Envoy's rate limit service (gRPC ShouldRateLimit) of `sluice serve`, through
a real gRPC client: Debian's python3-grpcio, with message classes generated
from the vendored .proto files (src/serve/envoy/proto) by protoc at test time.

Each TestCase class is one ctest test (tests/envoy/CMakeLists.txt). Every
server binds 127.0.0.1 on ports the system picks and is stopped by PID.
Environment: SLUICE_BINARY, SLUICE_SOURCE_DIR, PROTOC.
"""
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "serve"))
from serve_support import BINARY, SOURCE, RedisServer, Server, metric, write_config  # noqa: E402

import grpc  # noqa: E402


def generate_stubs():
    """protoc --python_out for the vendored protos into a temporary folder."""
    out = tempfile.mkdtemp(prefix="sluice-envoy-pb2-")
    proto_dir = os.path.join(SOURCE, "src", "serve", "envoy", "proto")
    protos = []
    for root, _, files in os.walk(proto_dir):
        protos += [os.path.relpath(os.path.join(root, f), proto_dir) for f in files if f.endswith(".proto")]
    subprocess.run([os.environ.get("PROTOC", "protoc"), "-I", proto_dir, "--python_out=" + out] + sorted(protos),
                   check=True)
    sys.path.insert(0, out)
    return out


generate_stubs()
from envoy.service.ratelimit.v3 import rls_pb2 as rls  # noqa: E402
from envoy.extensions.common.ratelimit.v3 import ratelimit_pb2 as rl  # noqa: E402
from google.protobuf import wrappers_pb2  # noqa: E402

METHOD = "/envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit"
OK = rls.RateLimitResponse.OK
OVER = rls.RateLimitResponse.OVER_LIMIT
Unit = rls.RateLimitResponse.RateLimit

CONFIG = """
[server]
listen = "127.0.0.1:0"
threads = 1

[grpc]
listen = "127.0.0.1:0"

[policies]
per_user = "fixed-window 3/1m"
per_path = "fixed-window 10/1h"
per_ip = "token-bucket 5/10s"

[[rules]]
policy = "per_user"
key = "header:X-User"

[[envoy]]
domain = "edge"
descriptor = ["user"]
policy = "per_user"

[[envoy]]
domain = "edge"
descriptor = ["generic_key=path", "path"]
policy = "per_path"

[[envoy]]
domain = "edge"
descriptor = [{ key = "remote_address" }]
policy = "per_ip"
"""


def desc(*entries, hits=None):
    d = rl.RateLimitDescriptor(entries=[rl.RateLimitDescriptor.Entry(key=k, value=v) for k, v in entries])
    if hits is not None:
        d.hits_addend.CopyFrom(wrappers_pb2.UInt64Value(value=hits))
    return d


def user(name, hits=None):
    return desc(("user", name), hits=hits)


def path(p, hits=None):
    return desc(("generic_key", "path"), ("path", p), hits=hits)


def headers_of(res):
    return {h.key: h.value for h in res.response_headers_to_add}


def serve_grpc(args):
    """A sluice serve with `args` and a channel to its gRPC listener:
    (server, its gRPC port, the channel, the ShouldRateLimit call). A server
    that names no listener is stopped and raises."""
    s = Server(list(args))
    m = re.search(r"listening on grpc://127\.0\.0\.1:(\d+) \(envoy\)", s.log())
    if m is None:
        s.stop()
        raise RuntimeError("no grpc listener in the log:\n" + s.log())
    ch = grpc.insecure_channel("127.0.0.1:" + m.group(1))
    call = ch.unary_unary(METHOD, request_serializer=rls.RateLimitRequest.SerializeToString,
                          response_deserializer=rls.RateLimitResponse.FromString)
    return s, int(m.group(1)), ch, call


def start_with_grpc(case, *args):
    """serve_grpc, both stopped at the end of `case`'s test: (server, the
    ShouldRateLimit call)."""
    s, _, ch, call = serve_grpc(args)
    case.addCleanup(s.stop)
    case.addCleanup(ch.close)
    return s, call


def stop_grpc(cls):
    """Ends what serve_grpc started for a TestCase class; the server must exit 0."""
    cls.channel.close()
    status = cls.server.stop()
    assert status == 0, "sluice serve exited %s:\n%s" % (status, cls.server.log())


class EnvoyCase(unittest.TestCase):
    server = None
    grpc_port = None

    @classmethod
    def config_text(cls):
        return CONFIG

    @classmethod
    def setUpClass(cls):
        cls.config_path = write_config(cls.config_text())
        cls.server, cls.grpc_port, cls.channel, cls.call = serve_grpc(["--config", cls.config_path])

    @classmethod
    def tearDownClass(cls):
        try:
            stop_grpc(cls)
        finally:
            os.unlink(cls.config_path)

    def ask(self, *descriptors, domain="edge", hits=0):
        return self.call(rls.RateLimitRequest(domain=domain, descriptors=list(descriptors), hits_addend=hits),
                         timeout=5)

    def assert_invalid(self, request, field):
        with self.assertRaises(grpc.RpcError) as e:
            self.call(request, timeout=5)
        self.assertEqual(e.exception.code(), grpc.StatusCode.INVALID_ARGUMENT)
        self.assertIn(field, e.exception.details())


class Decisions(EnvoyCase):
    def test_ok_carries_limit_remaining_reset_and_headers(self):
        res = self.ask(user("alice"))
        self.assertEqual(res.overall_code, OK)
        self.assertEqual(len(res.statuses), 1)
        s = res.statuses[0]
        self.assertEqual(s.code, OK)
        self.assertEqual(s.current_limit.name, "per_user")
        self.assertEqual(s.current_limit.requests_per_unit, 3)
        self.assertEqual(s.current_limit.unit, Unit.MINUTE)
        self.assertEqual(s.limit_remaining, 2)
        reset_ns = s.duration_until_reset.seconds * 10**9 + s.duration_until_reset.nanos
        self.assertGreater(reset_ns, 0)
        self.assertLessEqual(reset_ns, 60 * 10**9)
        h = headers_of(res)
        self.assertEqual(h["RateLimit-Policy"], '"per_user";q=3;w=60')
        self.assertRegex(h["RateLimit"], r'^"per_user";r=2;t=([1-9]|[1-5][0-9]|60)$')
        self.assertNotIn("Retry-After", h)

    def test_over_limit_after_the_limit(self):
        for left in (2, 1, 0):
            res = self.ask(user("bob"))
            self.assertEqual(res.overall_code, OK)
            self.assertEqual(res.statuses[0].limit_remaining, left)
        res = self.ask(user("bob"))
        self.assertEqual(res.overall_code, OVER)
        self.assertEqual(res.statuses[0].code, OVER)
        self.assertEqual(res.statuses[0].limit_remaining, 0)
        h = headers_of(res)
        retry = int(h["Retry-After"])
        self.assertGreaterEqual(retry, 1)
        self.assertLessEqual(retry, 60)
        self.assertRegex(h["RateLimit"], r'^"per_user";r=0;t=%d$' % retry)

    def test_a_denied_request_charges_no_descriptor(self):
        for _ in range(3):
            self.assertEqual(self.ask(user("carol")).overall_code, OK)
        res = self.ask(path("/x"), user("carol"))
        self.assertEqual(res.overall_code, OVER)
        self.assertEqual([s.code for s in res.statuses], [OK, OVER])
        # The path's state is untouched: still all 10 left, and the next
        # request on it alone sees 9 after its own charge.
        self.assertEqual(res.statuses[0].limit_remaining, 10)
        self.assertEqual(res.statuses[0].current_limit.unit, Unit.HOUR)
        self.assertEqual(res.statuses[0].current_limit.requests_per_unit, 10)
        res = self.ask(path("/x"))
        self.assertEqual(res.overall_code, OK)
        self.assertEqual(res.statuses[0].limit_remaining, 9)
        h = headers_of(res)
        self.assertEqual(h["RateLimit-Policy"], '"per_path";q=10;w=3600')

    def test_several_descriptors_admitted_charge_each(self):
        res = self.ask(user("dan"), path("/y"))
        self.assertEqual(res.overall_code, OK)
        self.assertEqual([s.limit_remaining for s in res.statuses], [2, 9])
        h = headers_of(res)
        self.assertEqual(h["RateLimit-Policy"], '"per_user";q=3;w=60, "per_path";q=10;w=3600')
        self.assertRegex(h["RateLimit"], r'^"per_user";r=2;t=\d+, "per_path";r=9;t=\d+$')

    def test_hits_addend_is_the_cost(self):
        res = self.ask(user("erin"), hits=2)
        self.assertEqual(res.overall_code, OK)
        self.assertEqual(res.statuses[0].limit_remaining, 1)
        res = self.ask(user("erin"), hits=2)  # needs 2, 1 left: denied, nothing charged
        self.assertEqual(res.overall_code, OVER)
        self.assertEqual(res.statuses[0].limit_remaining, 1)
        res = self.ask(user("erin"), hits=0)  # 0 is 1 hit
        self.assertEqual(res.overall_code, OK)
        self.assertEqual(res.statuses[0].limit_remaining, 0)

    def test_descriptor_hits_addend_overrides_the_request(self):
        res = self.ask(user("fay", hits=3), hits=1)
        self.assertEqual(res.overall_code, OK)
        self.assertEqual(res.statuses[0].limit_remaining, 0)

    def test_mixed_costs_denied_charge_none(self):
        # The path costs 1, the user 4 (over its 3): nothing is charged.
        res = self.ask(path("/z"), user("gus", hits=4))
        self.assertEqual(res.overall_code, OVER)
        self.assertEqual([s.code for s in res.statuses], [OK, OVER])
        self.assertEqual(res.statuses[0].limit_remaining, 10)
        self.assertEqual(self.ask(path("/z")).statuses[0].limit_remaining, 9)
        self.assertEqual(self.ask(user("gus")).statuses[0].limit_remaining, 2)

    def test_mixed_costs_admitted_charge_each_its_own(self):
        res = self.ask(path("/w", hits=4), user("ida", hits=2))
        self.assertEqual(res.overall_code, OK)
        self.assertEqual([s.limit_remaining for s in res.statuses], [6, 1])
        self.assertEqual(self.ask(path("/w")).statuses[0].limit_remaining, 5)
        self.assertEqual(self.ask(user("ida")).statuses[0].limit_remaining, 0)

    def test_same_descriptor_at_two_costs_is_one_check_at_the_larger(self):
        res = self.ask(user("jo", hits=1), user("jo", hits=2))
        self.assertEqual(res.overall_code, OK)
        self.assertEqual([s.limit_remaining for s in res.statuses], [1, 1])  # 2 charged, not 1 and not 3

    def test_same_descriptor_twice_is_one_check(self):
        res = self.ask(user("hal"), user("hal"))
        self.assertEqual(res.overall_code, OK)
        self.assertEqual([s.limit_remaining for s in res.statuses], [2, 2])

    def test_token_bucket_window_is_no_exact_unit(self):
        res = self.ask(desc(("remote_address", "10.0.0.1")))
        self.assertEqual(res.overall_code, OK)
        s = res.statuses[0]
        self.assertEqual(s.current_limit.name, "per_ip")
        self.assertEqual(s.current_limit.requests_per_unit, 5)
        self.assertEqual(s.current_limit.unit, Unit.UNKNOWN)  # 10 s is no Envoy unit
        self.assertEqual(s.limit_remaining, 4)

    def test_shares_state_with_the_http_endpoints(self):
        # The HTTP rule keys per_user by X-User; Envoy's "user" descriptor
        # gives the same key: one state for both front ends.
        status, _, _ = self.server.request("GET", "/v1/authorize", headers={"X-User": "ivy"})
        self.assertEqual(status, 204)
        status, _, body = self.server.decide([("per_user", "ivy")])
        self.assertEqual(status, 200)
        self.assertEqual(body["remaining"], 1)
        res = self.ask(user("ivy"))
        self.assertEqual(res.statuses[0].limit_remaining, 0)
        self.assertEqual(self.ask(user("ivy")).overall_code, OVER)
        status, _, body = self.server.decide([("per_user", "ivy")])
        self.assertEqual(status, 429)


class Unmatched(EnvoyCase):
    def test_unknown_domain_is_ok_without_limits(self):
        res = self.ask(user("zed"), path("/q"), domain="nowhere")
        self.assertEqual(res.overall_code, OK)
        self.assertEqual(len(res.statuses), 2)
        for s in res.statuses:
            self.assertEqual(s.code, OK)
            self.assertFalse(s.HasField("current_limit"))
            self.assertEqual(s.limit_remaining, 0)
        self.assertEqual(len(res.response_headers_to_add), 0)
        # ... and charged nothing in the known domain.
        self.assertEqual(self.ask(user("zed")).statuses[0].limit_remaining, 2)

    def test_descriptor_without_a_rule_is_not_limited(self):
        res = self.ask(desc(("tenant", "t1")), user("yan"))
        self.assertEqual(res.overall_code, OK)
        self.assertEqual(res.statuses[0].code, OK)
        self.assertFalse(res.statuses[0].HasField("current_limit"))
        self.assertEqual(res.statuses[1].limit_remaining, 2)
        # A rule with a fixed value matches only that value.
        res = self.ask(desc(("generic_key", "other"), ("path", "/x")))
        self.assertFalse(res.statuses[0].HasField("current_limit"))


class Malformed(EnvoyCase):
    def test_empty_domain(self):
        self.assert_invalid(rls.RateLimitRequest(domain="", descriptors=[user("a")]), "domain")

    def test_no_descriptors(self):
        self.assert_invalid(rls.RateLimitRequest(domain="edge"), "descriptors")

    def test_descriptor_without_entries(self):
        self.assert_invalid(rls.RateLimitRequest(domain="edge", descriptors=[user("a"), rl.RateLimitDescriptor()]),
                            "descriptors[1].entries")

    def test_empty_key_or_value(self):
        self.assert_invalid(rls.RateLimitRequest(domain="edge", descriptors=[desc(("", "v"))]),
                            "descriptors[0].entries[0].key")
        self.assert_invalid(rls.RateLimitRequest(domain="edge", descriptors=[desc(("user", ""))]),
                            "descriptors[0].entries[0].value")

    def test_too_many_matching_descriptors(self):
        many = [user("u%d" % i) for i in range(17)]
        self.assert_invalid(rls.RateLimitRequest(domain="edge", descriptors=many), "descriptors")
        # None of them was charged.
        self.assertEqual(self.ask(user("u0")).statuses[0].limit_remaining, 2)

    def test_descriptors_naming_one_key_count_once_toward_the_limit(self):
        # 17 descriptors naming 16 keys are 16 store checks, the limit: decided.
        many = [user("once%d" % i) for i in range(16)] + [user("once0")]
        r = self.ask(*many)
        self.assertEqual(r.overall_code, OK)
        self.assertEqual(len(r.statuses), 17)

    def test_key_too_long(self):
        self.assert_invalid(rls.RateLimitRequest(domain="edge", descriptors=[user("k" * 300)]), "max_key_bytes")

    def test_not_a_request_at_all(self):
        raw = self.channel.unary_unary(METHOD)  # bytes in, bytes out
        with self.assertRaises(grpc.RpcError) as e:
            raw(b"\xff\xff\xff", timeout=5)
        self.assertNotEqual(e.exception.code(), grpc.StatusCode.OK)
        # The server still answers.
        self.assertEqual(self.ask(user("after")).overall_code, OK)


class StoreFailures(unittest.TestCase):
    """On a real Redis: an answer of the failure mode (Redis killed) carries
    no invented figures, and a store error (a key holding a value sluice did
    not write) is a gRPC error, so that Envoy's own failure_mode_deny
    decides; nothing is charged in either case."""

    def start(self, on_failure):
        redis = RedisServer()
        self.addCleanup(redis.stop)
        prefix = "sluice:envoy:%s:" % on_failure
        text = CONFIG + '\n[store]\nurl = "%s"\nkey_prefix = "%s"\non_failure = "%s"\n' % (redis.url, prefix,
                                                                                         on_failure)
        path = write_config(text)
        self.addCleanup(os.unlink, path)
        s, call = start_with_grpc(self, "--config", path)
        ask = lambda *d: call(rls.RateLimitRequest(domain="edge", descriptors=list(d)), timeout=5)
        return redis, s, ask, prefix

    def test_a_store_error_is_a_grpc_error_and_charges_nothing(self):
        redis, s, ask, prefix = self.start("fail-closed")
        key = prefix + "s:per_user:{mallory}"
        self.assertEqual(redis.command("SET", key, "not sluice's"), b"+OK")
        for _ in range(2):
            with self.assertRaises(grpc.RpcError) as e:
                ask(user("mallory"))
            self.assertEqual(e.exception.code(), grpc.StatusCode.INTERNAL)
            self.assertIn("store answered with an error", e.exception.details())
        # With another descriptor: the other is not charged either.
        with self.assertRaises(grpc.RpcError) as e:
            ask(path("/p"), user("mallory"))
        self.assertEqual(e.exception.code(), grpc.StatusCode.INTERNAL)
        res = ask(path("/p"))
        self.assertEqual((res.overall_code, res.statuses[0].limit_remaining), (OK, 9))
        self.assertEqual(redis.command("GET", key), b"not sluice's")
        m = s.metrics()
        self.assertEqual(metric(m, 'sluice_store_decisions_total{source="error"}'), 3)

    def check_down(self, on_failure, overall):
        redis, s, ask, _ = self.start(on_failure)
        self.assertEqual(ask(user("u")).statuses[0].limit_remaining, 2)  # Redis answers
        redis.kill9()
        res = ask(user("u"), path("/q"))
        self.assertEqual(res.overall_code, overall)
        for st in res.statuses:
            self.assertEqual(st.code, overall)
            self.assertEqual(st.limit_remaining, 0)  # not set: no state was read
            self.assertFalse(st.HasField("duration_until_reset"))
            self.assertTrue(st.HasField("current_limit"))  # the configuration is known
        h = headers_of(res)
        self.assertEqual(h["RateLimit-Policy"], '"per_user";q=3;w=60, "per_path";q=10;w=3600')
        self.assertNotIn("RateLimit", h)
        m = s.metrics()
        self.assertEqual(metric(m, 'sluice_store_decisions_total{source="%s"}' % on_failure), 1)
        return h

    def test_calls_waiting_on_a_stopped_redis_are_answered_together(self):
        # Redis stopped (SIGSTOP): many calls in flight at once, each answered
        # by the failure mode at its own deadline (100 ms), all of them
        # together, not one deadline after another (20 × 100 ms = 2 s).
        redis, s, ask, _ = self.start("fail-closed")
        self.assertEqual(ask(user("w")).overall_code, OK)
        redis.pause()
        self.addCleanup(redis.resume)
        out = []
        lock = threading.Lock()

        def one(i):
            t0 = time.monotonic()
            res = ask(user("w%d" % i))
            with lock:
                out.append((res.overall_code, time.monotonic() - t0))

        threads = [threading.Thread(target=one, args=(i,)) for i in range(20)]
        t0 = time.monotonic()
        for t in threads:
            t.start()
        for t in threads:
            t.join(30)
        took = time.monotonic() - t0
        self.assertEqual(len(out), 20)
        self.assertEqual({code for code, _ in out}, {OVER})
        self.assertLess(took, 1.5, out)

    def test_fail_open_answers_ok_without_figures(self):
        h = self.check_down("fail-open", OK)
        self.assertNotIn("Retry-After", h)

    def test_fail_closed_answers_over_limit_without_figures(self):
        h = self.check_down("fail-closed", OVER)
        self.assertEqual(h["Retry-After"], "1")  # the configured back-off (1 s by default)


def proto_shapes(text, only=None):
    """The messages and enums a .proto text declares: {qualified name:
    {member: (label, type, number)}} (enum members: number only). Comments,
    options and annotations are left out; `only` keeps the top-level names
    given."""
    text = re.sub(r"//[^\n]*", "", text)
    tokens = re.findall(r'"(?:[^"\\]|\\.)*"|[A-Za-z_][\w.]*|-?\d+|\S', text)
    out, stack, i = {}, [], 0

    def skip_to(end):
        nonlocal i
        depth = 0
        while i < len(tokens):
            t = tokens[i]
            i += 1
            if t in "[{(":
                depth += 1
            elif t in "]})":
                depth -= 1
                if depth < 0:
                    return
            elif t == end and depth == 0:
                return

    while i < len(tokens):
        t = tokens[i]
        if t in ("syntax", "package", "import", "option"):
            skip_to(";")
        elif t == "service":  # its block, to the matching '}'
            i += 3
            skip_to("}")
        elif t in ("message", "enum") and i + 2 < len(tokens) and tokens[i + 2] == "{":
            name = ".".join([n for n, _ in stack] + [tokens[i + 1]])
            stack.append((tokens[i + 1], t))
            if only is None or name.split(".")[0] in only:
                out[name] = {}
            i += 3
        elif t == "oneof":
            stack.append((None, "oneof"))
            i += 3
        elif t == "}":
            stack.pop()
            i += 1
        elif t == "reserved":
            skip_to(";")
        else:
            # A field (message) or a value (enum) up to its ';', options dropped.
            start = i
            while tokens[i] not in ("=",):
                i += 1
            head = tokens[start:i]
            number = int(tokens[i + 1])
            i += 2
            skip_to(";")
            scope = [n for n, _ in stack if n is not None]
            owner = ".".join(scope)
            kind = [k for _, k in stack if k != "oneof"][-1]
            if owner in out:
                if kind == "enum":
                    out[owner][head[0]] = number
                else:
                    label = head[0] if head[0] in ("repeated", "optional") else ""
                    out[owner][head[-1]] = (label, head[-2].split(".")[-1], number)
    return out


class Protos(unittest.TestCase):
    """The vendored protos declare Envoy's messages and enums field for field,
    number for number (fixtures/upstream/proto/: data-plane-api's files)."""

    FILES = {"envoy/service/ratelimit/v3/rls.proto": None,
             "envoy/extensions/common/ratelimit/v3/ratelimit.proto": None,
             "envoy/type/v3/ratelimit_unit.proto": None, "envoy/type/v3/token_bucket.proto": None,
             "envoy/config/core/v3/base.proto": {"HeaderValue"}}

    def test_every_message_and_enum_is_envoys(self):
        ours_dir = os.path.join(SOURCE, "src", "serve", "envoy", "proto")
        theirs_dir = os.path.join(HERE, "fixtures", "upstream", "proto")
        for f, only in self.FILES.items():
            with open(os.path.join(theirs_dir, f)) as t, open(os.path.join(ours_dir, f)) as o:
                theirs, ours = proto_shapes(t.read(), only), proto_shapes(o.read())
            self.assertTrue(theirs, f)
            self.assertEqual(ours, theirs, f)

    def test_the_descriptor_unit_has_no_week_and_the_response_unit_has(self):
        from envoy.type.v3 import ratelimit_unit_pb2
        self.assertNotIn("WEEK", ratelimit_unit_pb2.RateLimitUnit.keys())
        self.assertEqual(Unit.WEEK, 7)


class Lifecycle(unittest.TestCase):
    """The listener from --grpc, reloads of [[envoy]] rules, and errors."""

    def start(self, *args):
        return start_with_grpc(self, *args)

    def test_grpc_flag_without_a_file_has_no_envoy_rules(self):
        s, call = self.start("--policy", "gcra 10/1s", "--listen", "127.0.0.1:0", "--grpc", "127.0.0.1:0")
        res = call(rls.RateLimitRequest(domain="edge", descriptors=[user("a")]), timeout=5)
        self.assertEqual(res.overall_code, OK)
        self.assertFalse(res.statuses[0].HasField("current_limit"))
        self.assertEqual(s.stop(), 0)

    def test_reload_applies_new_envoy_rules_and_keeps_states(self):
        path = write_config(CONFIG)
        self.addCleanup(os.unlink, path)
        s, call = self.start("--config", path)
        ask = lambda *d, domain="edge": call(rls.RateLimitRequest(domain=domain, descriptors=list(d)), timeout=5)
        self.assertEqual(ask(user("kim")).statuses[0].limit_remaining, 2)
        self.assertFalse(ask(desc(("tenant", "t1")), domain="more").statuses[0].HasField("current_limit"))
        with open(path, "a") as f:
            f.write('\n[[envoy]]\ndomain = "more"\ndescriptor = ["tenant"]\npolicy = "per_user"\n')
        s.signal(signal.SIGHUP)
        self.assertTrue(s.wait_log("reloaded"), s.log())
        res = ask(desc(("tenant", "t1")), domain="more")
        self.assertEqual(res.statuses[0].current_limit.name, "per_user")
        self.assertEqual(res.statuses[0].limit_remaining, 2)
        self.assertEqual(ask(user("kim")).statuses[0].limit_remaining, 1)  # state kept
        self.assertEqual(s.stop(), 0)

    def test_config_errors_name_file_line_column(self):
        bad = write_config('[policies]\na = "gcra 1/1s"\n[[envoy]]\ndomain = "x"\ndescriptor = ["k"]\n'
                           'policy = "nope"\n')
        self.addCleanup(os.unlink, bad)
        r = subprocess.run([BINARY, "serve", "--check", bad], capture_output=True, text=True, timeout=20)
        self.assertEqual(r.returncode, 2)
        self.assertIn(bad + ":6:10: envoy[0].policy: unknown policy 'nope'", r.stderr)
        bad2 = write_config('[policies]\na = "gcra 1/1s"\n[grpc]\nlisten = "localhost:1"\n')
        self.addCleanup(os.unlink, bad2)
        r = subprocess.run([BINARY, "serve", "--check", bad2], capture_output=True, text=True, timeout=20)
        self.assertEqual(r.returncode, 2)
        self.assertIn(bad2 + ":4:10: grpc.listen:", r.stderr)

    def test_port_in_use_is_an_error(self):
        taken = socket.socket()
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        self.addCleanup(taken.close)
        r = subprocess.run([BINARY, "serve", "--policy", "gcra 1/1s", "--listen", "127.0.0.1:0", "--grpc",
                            "127.0.0.1:%d" % taken.getsockname()[1]], capture_output=True, text=True, timeout=20)
        self.assertEqual(r.returncode, 1)
        self.assertIn("grpc.listen: cannot listen on 127.0.0.1:%d" % taken.getsockname()[1], r.stderr)
        # Nor does a second sluice share a first one's port (no SO_REUSEPORT).
        first, _ = self.start("--policy", "gcra 1/1s", "--listen", "127.0.0.1:0", "--grpc", "127.0.0.1:0")
        port = re.search(r"grpc://127\.0\.0\.1:(\d+)", first.log()).group(1)
        r = subprocess.run([BINARY, "serve", "--policy", "gcra 1/1s", "--listen", "127.0.0.1:0", "--grpc",
                            "127.0.0.1:" + port], capture_output=True, text=True, timeout=20)
        self.assertEqual(r.returncode, 1, r.stderr)
        self.assertIn("grpc.listen: cannot listen on 127.0.0.1:" + port, r.stderr)


if __name__ == "__main__":
    unittest.main()

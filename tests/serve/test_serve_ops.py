"""What an operator meets, through real processes: secrets never printed,
the password's sources, the store's figures in /metrics and one log line per
change of its health, against a real redis-server (started with
`requirepass`, an ACL user, a unix socket; faulted with SIGSTOP, SIGKILL,
maxmemory and an ACL user without the scripting permission).

Each TestCase class is one ctest test (tests/serve/CMakeLists.txt). Every
process is stopped by PID; every wait is bounded in time.
"""
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from serve_support import (BINARY, RedisServer, ServeCase, base_config, free_port, metric, wait_until,  # noqa: E402
                           write_config)

PW = "Zq9-hush-%08x" % random.getrandbits(32)  # the server's password: must never be printed
APP_PW = "Ap7-quiet-%08x" % random.getrandbits(32)  # the ACL user app's
RULES = '\n[[rules]]\npolicy = "api"\nkey = "header:X-User"\n'


class AuthRedis(RedisServer):
    """A real redis-server with `requirepass PW` (and ACL users), on a free
    127.0.0.1 port and a unix socket, stopped by PID (kill9 and stop are
    RedisServer's)."""

    def __init__(self, extra=()):
        self.exe, self.cli = shutil.which("redis-server"), shutil.which("redis-cli")
        if self.exe is None or self.cli is None:
            raise AssertionError("redis-server and redis-cli must be installed (scripts/setup.sh)")
        self.dir = tempfile.mkdtemp(prefix="sluice-redis-auth-")
        self.port = free_port()
        self.socket = os.path.join(self.dir, "redis.sock")
        self.extra = list(extra)
        self.proc = None
        self.start()

    def start(self):
        self.proc = subprocess.Popen(
            [self.exe, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
             "--dir", self.dir, "--unixsocket", self.socket, "--unixsocketperm", "700", "--requirepass", PW]
            + self.extra, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        if not wait_until(lambda: self.proc.poll() is None and self.run("PING") == "PONG", 10):
            self.stop()
            raise AssertionError("redis-server did not start on port %d" % self.port)

    def run(self, *args):
        """One command through redis-cli as the default user; its output."""
        out = subprocess.run([self.cli, "-h", "127.0.0.1", "-p", str(self.port), "-a", PW, "--no-auth-warning"]
                             + [str(a) for a in args], capture_output=True, text=True, timeout=10)
        return out.stdout.strip()

    def url(self, userinfo=":" + PW):
        return "redis://%s@127.0.0.1:%d" % (userinfo, self.port) if userinfo else "redis://127.0.0.1:%d" % self.port


def store_toml(url, **options):
    text = '\n[store]\nurl = "%s"\nkey_prefix = "sluice:ops:%08x:"\n' % (url, random.getrandbits(32))
    for k, v in options.items():
        text += "%s = %s\n" % (k, v)
    return text


def env_without_password(**extra):
    env = {k: v for k, v in os.environ.items() if k != "SLUICE_REDIS_PASSWORD"}
    env.update(extra)
    return env


class OpsCase(ServeCase):
    def auth_redis(self, extra=()):
        r = AuthRedis(extra)
        self.addCleanup(r.stop)
        return r

    def check(self, text, env=None):
        """`sluice serve --check` on a file of `text`: (exit status, stdout + stderr)."""
        path = write_config(text)
        self.addCleanup(os.unlink, path)
        p = subprocess.run([BINARY, "serve", "--check", path], capture_output=True, text=True, timeout=30,
                           env=env or env_without_password())
        return p.returncode, p.stdout + p.stderr

    def serve_on(self, url, server="threads = 1\n", env=None, **store):
        path = write_config(base_config({"api": "gcra 1000/1s burst=1000"}, RULES, server) + store_toml(url, **store))
        self.addCleanup(os.unlink, path)
        return self.start("--config", path, env=env or env_without_password())

    def secret_file(self, text):
        f = tempfile.NamedTemporaryFile("w", prefix="sluice-pw-", delete=False)
        f.write(text)
        f.close()
        self.addCleanup(os.unlink, f.name)
        return f.name

    def assertNoSecret(self, text, *secrets):
        for s in secrets or (PW, APP_PW):
            self.assertNotIn(s, text)
            self.assertNotIn(s[4:], text)  # nor a tail of it


class SecretsNeverPrinted(OpsCase):
    """Every message that mentions a store URL holding a password — a
    configuration error, a `--store` error, the service's log and its
    /metrics while the password is wrong — shows no byte of the password."""

    BAD = [
        ("redis://:%s@127.0.0.1:99999" % PW, "port"),
        ("redis://app:%s@127.0.0.1:6379/abc" % PW, "db"),
        ("redis://app:pa/%s@127.0.0.1:1/x" % PW, "db"),
        ("redis://:%s@ho$t:1" % PW, "host"),
        ("redis://:%s@127.0.0.1:1?timeout=1" % PW, "query"),
        ("rediss://:%s@127.0.0.1:1?verify=maybe" % PW, "verify"),
        ("redis+sentinel://:%s@127.0.0.1:1" % PW, "master"),
        ("unix:///tmp/r.sock?db=1&password=%s" % PW, "query"),
        ("unix://app:%s@/tmp/r.sock?timeout=1" % PW, "query"),
        ("unix://app:%s@relative.sock" % PW, "path"),
        ("redis+cluster://:%s@127.0.0.1:1,127.0.0.1:abc" % PW, "port"),
        ("redis://:%s%%zz@127.0.0.1:1" % PW, "password"),
    ]

    def test_check_names_the_field_never_the_password(self):
        for url, part in self.BAD:
            code, out = self.check(base_config({"api": "gcra 1/1s"}) + store_toml(url))
            self.assertEqual(code, 2, url + ": " + out)
            self.assertIn("store.url", out, url)
            self.assertIn(part, out, url)
            self.assertNoSecret(out)

    def test_replay_store_errors_never_show_the_password(self):
        for url, _ in self.BAD:
            p = subprocess.run([BINARY, "replay", "--policy", "gcra 1/1s", "--store", url], input="1 a\n",
                               capture_output=True, text=True, timeout=30, env=env_without_password())
            self.assertNotEqual(p.returncode, 0, url)
            self.assertIn("--store", p.stderr, url)
            self.assertNoSecret(p.stdout + p.stderr)

    def test_replay_against_a_server_that_refuses_the_password(self):
        redis = self.auth_redis()
        wrong = "Wr0ng-%08x" % random.getrandbits(32)
        p = subprocess.run([BINARY, "replay", "--policy", "gcra 1/1s", "--store", redis.url(":" + wrong)],
                           input="1 a\n2 a\n", capture_output=True, text=True, timeout=30,
                           env=env_without_password())
        self.assertNotEqual(p.returncode, 0)
        self.assertNoSecret(p.stdout + p.stderr, wrong, PW)

    def test_service_with_a_wrong_password_logs_and_counts_without_it(self):
        redis = self.auth_redis()
        wrong = "Wr0ng-%08x" % random.getrandbits(32)
        s = self.serve_on(redis.url(":" + wrong))
        for i in range(8):
            st, _, b = s.decide([("api", "k%d" % i)])
            self.assertEqual((st, b["source"]), (429, "fail-closed"))
        self.assertTrue(s.wait_log("unhealthy"), s.log())
        m = s.metrics()
        self.assertGreaterEqual(metric(m, 'sluice_store_call_failures_total{reason="auth"}'), 1)
        self.assertNoSecret(s.log() + m, wrong, PW)
        s.stop()
        self.assertNoSecret(s.log(), wrong, PW)

    # Typos of a URL: the scheme's "://" mistyped, so that no parser sees a
    # userinfo; whatever comes before the last '@' is hidden all the same.
    MISTYPED = ["redis:/u:%s@127.0.0.1:1" % PW, "redis//u:%s@127.0.0.1:1" % PW, "rediss:u:%s@127.0.0.1:1" % PW,
                "redis:u:%s@127.0.0.1:1/0" % PW, "u:%s@127.0.0.1:1" % PW]

    def test_a_mistyped_url_never_shows_the_password(self):
        for url in self.MISTYPED:
            with self.subTest(url=url):
                text = base_config({"api": "gcra 1/1s"}) + store_toml(url)
                code, out = self.check(text)  # serve --check
                self.assertEqual(code, 2, out)
                self.assertIn("store.url", out)
                self.assertNoSecret(out)
                path = write_config(text)  # the service's start
                self.addCleanup(os.unlink, path)
                p = subprocess.run([BINARY, "serve", "--config", path], capture_output=True, text=True, timeout=30,
                                   env=env_without_password())
                self.assertEqual(p.returncode, 2, p.stderr)
                self.assertIn("store.url", p.stderr)
                self.assertNoSecret(p.stdout + p.stderr)
                p = subprocess.run([BINARY, "replay", "--policy", "gcra 1/1s", "--store", url], input="1 a\n",
                                   capture_output=True, text=True, timeout=30, env=env_without_password())
                self.assertNotEqual(p.returncode, 0, url)
                self.assertIn("--store", p.stderr)
                self.assertNoSecret(p.stdout + p.stderr)

    def test_a_reload_to_a_mistyped_url_never_shows_the_password(self):
        base = base_config({"api": "gcra 1/1s"}, "", "threads = 1\nadmin = \"127.0.0.1:0\"\n")
        s, path = self.start_config(base)
        for url in self.MISTYPED:
            with self.subTest(url=url):
                with open(path, "w") as f:
                    f.write(base + store_toml(url))
                st, _, body = s.request("POST", "/admin/reload", admin=True)
                self.assertEqual(st, 400, body)
                self.assertIn("store.url", body)
                self.assertNoSecret(body)
        self.assertNoSecret(s.log() + s.metrics())

    def test_service_with_the_right_password_prints_none(self):
        redis = self.auth_redis()
        s = self.serve_on(redis.url())
        st, _, b = s.decide([("api", "k")])
        self.assertEqual((st, b["source"]), (200, "store"))
        self.assertNoSecret(s.log() + s.metrics())


class PasswordSources(OpsCase):
    """The password from store.password_file or SLUICE_REDIS_PASSWORD logs in
    to a real server (the default user and an ACL user, over TCP and a unix
    socket); two sources, or an empty or unreadable file, are errors naming
    the key."""

    def acl_redis(self):
        redis = self.auth_redis()
        self.assertEqual(redis.run("ACL", "SETUSER", "app", "on", ">" + APP_PW, "~*", "+@all"), "OK")
        return redis

    def decides(self, s):
        st, _, b = s.decide([("api", "k")])
        self.assertEqual((st, b["source"]), (200, "store"), s.log())

    def test_password_file_for_the_default_user_and_an_acl_user(self):
        redis = self.acl_redis()
        self.decides(self.serve_on(redis.url(None), password_file='"%s"' % self.secret_file(PW + "\n")))
        app = self.serve_on(redis.url("app"), password_file='"%s"' % self.secret_file(APP_PW + "\n"))
        self.decides(app)
        self.assertIn("app", redis.run("CLIENT", "LIST"))  # logged in as the ACL user
        self.assertNoSecret(app.log() + app.metrics())

    def test_environment_variable(self):
        redis = self.acl_redis()
        s = self.serve_on(redis.url("app"), env=env_without_password(SLUICE_REDIS_PASSWORD=APP_PW))
        self.decides(s)
        self.assertNoSecret(s.log() + s.metrics())
        p = subprocess.run([BINARY, "replay", "--policy", "gcra 1/1s burst=1", "--store", redis.url("app")],
                           input="1 a\n1 a\n", capture_output=True, text=True, timeout=30,
                           env=env_without_password(SLUICE_REDIS_PASSWORD=APP_PW))
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual([line.split(",")[4] for line in p.stdout.splitlines()[1:]], ["yes", "no"])

    def test_unix_socket_with_a_password(self):
        redis = self.acl_redis()
        self.decides(self.serve_on("unix://:%s@%s" % (PW, redis.socket)))
        self.decides(self.serve_on("unix://app@%s?db=2" % redis.socket,
                                   password_file='"%s"' % self.secret_file(APP_PW)))
        self.assertNotEqual(redis.run("-n", "2", "DBSIZE"), "0")  # the keys went to database 2

    def test_two_sources_and_bad_files_are_errors_naming_the_key(self):
        base = base_config({"api": "gcra 1/1s"})
        good = self.secret_file(PW + "\n")
        cases = [
            (store_toml("redis://:%s@127.0.0.1:1" % PW, password_file='"%s"' % good), None, "store.password_file"),
            (store_toml("redis://127.0.0.1:1", password_file='"%s"' % good),
             env_without_password(SLUICE_REDIS_PASSWORD=PW), "store.password_file"),
            (store_toml("redis://:%s@127.0.0.1:1" % PW), env_without_password(SLUICE_REDIS_PASSWORD=PW), "store.url"),
            (store_toml("redis://127.0.0.1:1", password_file='"%s"' % self.secret_file("\n")), None,
             "store.password_file"),
            (store_toml("redis://127.0.0.1:1", password_file='"/nonexistent/sluice-pw"'), None,
             "store.password_file"),
            (store_toml("redis://app@127.0.0.1:1"), None, "password"),
        ]
        for text, env, key in cases:
            code, out = self.check(base + text, env)
            self.assertEqual(code, 2, text + out)
            self.assertIn(key, out, text)
            self.assertNoSecret(out)
        code, out = self.check(base + store_toml("redis://app@127.0.0.1:1", password_file='"%s"' % good))
        self.assertEqual(code, 0, out)


class StoreFiguresOnRedis(OpsCase):
    """/metrics counts the store's failed calls under their reason — NOPERM
    (an ACL user without the scripting permission), OOM (maxmemory), timeout
    (SIGSTOP), refused (a killed server) — with the call-latency histogram
    and the breaker's state, and the log says once per change that the store
    turned unhealthy and healthy again."""

    def failures(self, s, reason):
        return metric(s.metrics(), 'sluice_store_call_failures_total{reason="%s"}' % reason) or 0

    def health_lines(self, s):
        lines = [line for line in s.log().splitlines() if ": unhealthy: " in line or ": healthy again" in line]
        return [("unhealthy" if ": unhealthy: " in line else "healthy") for line in lines]

    def test_noperm_is_a_failure_not_corrupt_state(self):
        redis = self.auth_redis()
        redis.run("ACL", "SETUSER", "limited", "on", ">" + APP_PW, "~*", "+@all", "-@scripting")
        s = self.serve_on(redis.url("limited:" + APP_PW))
        for i in range(3):
            st, _, b = s.decide([("api", "k")])
            self.assertEqual((st, b["source"]), (429, "fail-closed"))
        m = s.metrics()
        self.assertEqual(metric(m, 'sluice_store_call_failures_total{reason="noperm"}'), 3)
        self.assertEqual(metric(m, 'sluice_store_errors_total{kind="state"}'), 0)
        self.assertEqual(metric(m, 'sluice_store_decisions_total{source="error"}'), 0)

    def test_oom_at_maxmemory(self):
        redis = self.auth_redis()
        s = self.serve_on(redis.url())
        self.assertEqual(s.decide([("api", "warm")])[0], 200)  # the library is loaded
        self.assertEqual(redis.run("CONFIG", "SET", "maxmemory-policy", "noeviction"), "OK")
        self.assertEqual(redis.run("CONFIG", "SET", "maxmemory", "1"), "OK")
        for i in range(3):
            st, _, b = s.decide([("api", "new%d" % i)])
            self.assertEqual((st, b["source"]), (429, "fail-closed"))
        self.assertEqual(self.failures(s, "oom"), 3)
        self.assertEqual(self.failures(s, "server"), 0)

    def test_timeout_and_refused_each_under_its_reason_one_log_line_per_change(self):
        redis = self.auth_redis()
        s = self.serve_on(redis.url(), command_timeout='"100ms"')
        for i in range(3):
            self.assertEqual(s.decide([("api", "k")])[0], 200)
        m = s.metrics()
        self.assertEqual(metric(m, 'sluice_store_breaker_state{node="127.0.0.1:%d",state="closed"}' % redis.port), 1)
        count = metric(m, "sluice_store_call_duration_seconds_count")
        self.assertGreaterEqual(count, 3)
        self.assertEqual(metric(m, 'sluice_store_call_duration_seconds_bucket{le="+Inf"}'), count)
        self.assertGreater(metric(m, "sluice_store_call_duration_seconds_sum"), 0)
        self.assertEqual(self.health_lines(s), [])

        redis.proc.send_signal(signal.SIGSTOP)  # hung: every call times out
        try:
            for i in range(12):
                st, _, b = s.decide([("api", "k")])
                self.assertEqual((st, b["source"]), (429, "fail-closed"))
            self.assertEqual(self.failures(s, "timeout"), 5)  # then the breaker opened: no more calls
            self.assertTrue(s.wait_log(": unhealthy: "))
            m = s.metrics()
            self.assertEqual(metric(m, 'sluice_store_breaker_state{node="127.0.0.1:%d",state="open"}' % redis.port),
                             1)
            # the first call waited the whole timeout (the next ones may fail at once, in the reconnect back-off)
            self.assertGreaterEqual(count_above(m, 0.1), 1)
        finally:
            redis.proc.send_signal(signal.SIGCONT)
        self.assertTrue(wait_until(lambda: s.decide([("api", "k")])[2]["source"] == "store", 10, 0.2))
        self.assertTrue(s.wait_log(": healthy again"))
        for i in range(20):
            s.decide([("api", "k")])
        self.assertEqual(self.health_lines(s), ["unhealthy", "healthy"])

        redis.kill9()  # down: the connection breaks, then every connect is refused
        for i in range(12):
            self.assertEqual(s.decide([("api", "k")])[0], 429)
        self.assertGreaterEqual(self.failures(s, "refused"), 1)
        self.assertTrue(wait_until(lambda: self.health_lines(s) == ["unhealthy", "healthy", "unhealthy"], 5))
        for i in range(20):
            s.decide([("api", "k")])
        time.sleep(1.2)  # past the cool-down: a probe is let through, and fails
        for i in range(5):
            s.decide([("api", "k")])
        self.assertEqual(self.health_lines(s), ["unhealthy", "healthy", "unhealthy"])  # once per change
        self.assertNoSecret(s.log() + s.metrics())


def count_above(text, seconds):
    """Observations of sluice_store_call_duration_seconds above `seconds`
    (the +Inf bucket less the first bucket at or above it)."""
    total, below = None, None
    for line in text.splitlines():
        if not line.startswith("sluice_store_call_duration_seconds_bucket{le=\""):
            continue
        le = line.split('"')[1]
        v = float(line.split(" ")[-1])
        if le == "+Inf":
            total = v
        elif below is None and float(le) >= seconds:
            below = v
    return total - (below or 0)


class BadRequestsCountOnlyBadRequests(OpsCase):
    """sluice_bad_requests_total counts requests refused for their content,
    never denials (429 on /v1/decide, 403 `limited` on /v1/authorize)."""

    def test_denials_are_not_bad_requests(self):
        s, _ = self.start_config(base_config({"api": "gcra 1/1h burst=1"}, RULES))
        self.assertEqual(s.decide([("api", "k")])[0], 200)
        for i in range(3):
            self.assertEqual(s.decide([("api", "k")])[0], 429)
            st, h, _ = s.request("GET", "/v1/authorize", headers={"X-User": "k"})
            self.assertEqual((st, h["x-sluice-decision"]), (403, "limited"))
        self.assertEqual(metric(s.metrics(), "sluice_bad_requests_total"), 0)
        st, _, _ = s.request("POST", "/v1/decide", "{not json", {"Content-Type": "application/json"})
        self.assertEqual(st, 400)
        st, _, _ = s.request("GET", "/nowhere")
        self.assertEqual(st, 404)
        st, h, _ = s.request("GET", "/v1/authorize", headers={"X-User": "u" * 300})  # past max_key_bytes
        self.assertEqual((st, h["x-sluice-decision"]), (403, "invalid"))
        self.assertEqual(metric(s.metrics(), "sluice_bad_requests_total"), 3)


if __name__ == "__main__":
    unittest.main()

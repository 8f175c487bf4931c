"""sluice serve's process, through real processes and real clients: its lifecycle
(SIGTERM's drain, a held port, snapshots across a restart), slow and hostile
clients, its memory bound, and what `cmake --install` gives. Split from
test_serve.py (the API on the memory store).

Each TestCase class is one ctest test (tests/serve/CMakeLists.txt). Every
server binds 127.0.0.1 on a port the system picks and is stopped by PID.
"""
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from serve_support import BINARY, ServeCase, base_config, metric, write_config  # noqa: E402


class Lifecycle(ServeCase):
    def test_sigterm_drains_in_flight_and_exits_0(self):
        s, _ = self.start_config(base_config({"api": "fixed-window 5/1h"}))
        idle = socket.create_connection(("127.0.0.1", s.port))
        busy = socket.create_connection(("127.0.0.1", s.port))
        body = b'{"policy":"api","key":"k"}'
        head = b"POST /v1/decide HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n" % len(body)
        busy.sendall(head)  # a request in flight: its body has not come yet
        time.sleep(0.2)
        s.signal(signal.SIGTERM)
        self.assertTrue(s.wait_log("draining"))
        time.sleep(0.2)
        self.assertIsNone(s.proc.poll())  # still serving the request in flight
        busy.sendall(body)
        busy.settimeout(5)
        reply = b""
        while b"\r\n\r\n" not in reply or not reply.endswith(b"}\n"):
            chunk = busy.recv(4096)
            if not chunk:
                break
            reply += chunk
        self.assertTrue(reply.startswith(b"HTTP/1.1 200 OK"), reply)
        self.assertIn(b"Connection: close", reply)
        idle.settimeout(5)
        self.assertEqual(idle.recv(10), b"")  # the idle connection was closed
        self.assertEqual(s.proc.wait(10), 0)
        with self.assertRaises(OSError):
            socket.create_connection(("127.0.0.1", s.port), 1)

    def test_a_second_process_on_a_held_port_exits_1_naming_it(self):
        # One port, one process (docs/serve.md): the second `sluice serve`,
        # with as many threads, may not share the first one's listener.
        s, path = self.start_config(base_config({"api": "gcra 1/1h"}, server="threads = 2\n"))
        for threads in ("2", "1"):
            p = subprocess.run([BINARY, "serve", "--config", path, "--listen", "127.0.0.1:%d" % s.port,
                                "--threads", threads], capture_output=True, text=True, timeout=20)
            self.assertEqual(p.returncode, 1, p.stderr)
            self.assertIn("127.0.0.1:%d" % s.port, p.stderr)
            self.assertIn("in use", p.stderr)
        # The first keeps serving, alone: its one admit, then every new
        # connection denied by the same state.
        self.assertIsNone(s.proc.poll())
        self.assertEqual(s.decide([("api", "k")])[0], 200)
        self.assertEqual([s.decide([("api", "k")])[0] for _ in range(6)], [429] * 6)

    def test_a_request_that_never_completes_stops_the_drain_at_its_timeout(self):
        s, _ = self.start_config(base_config({"api": "fixed-window 5/1h"}, server='drain_timeout = "1s"\n'))
        stuck = socket.create_connection(("127.0.0.1", s.port))
        stuck.sendall(b"POST /v1/decide HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{")
        time.sleep(0.2)
        t0 = time.time()
        s.signal(signal.SIGTERM)
        self.assertEqual(s.proc.wait(10), 0)
        self.assertLess(time.time() - t0, 5)
        self.assertGreaterEqual(time.time() - t0, 0.9)
        self.assertIn("drain timeout", s.log())
        stuck.close()

    def test_snapshot_restart_hands_out_no_fresh_limit(self):
        snap = tempfile.mkdtemp(prefix="sluice-snap-")
        self.addCleanup(shutil.rmtree, snap)
        text = base_config({"api": "fixed-window 3/1h", "tb": "token-bucket 10/1h burst=10"})
        path = write_config(text)
        self.addCleanup(os.unlink, path)
        s = self.start("--config", path, "--snapshot", snap)
        for _ in range(3):
            s.decide([("api", "alice")])
        for _ in range(4):
            s.decide([("tb", "alice")])
        self.assertEqual(s.stop(), 0)
        self.assertIn("keys saved (shutdown)", s.log())
        s2 = self.start("--config", path, "--snapshot", snap)
        self.assertIn("2 keys of 2 policies restored", s2.log())
        st, _, b = s2.decide([("api", "alice")])
        self.assertEqual(st, 429)
        st, _, b = s2.decide([("tb", "alice")])
        self.assertEqual((st, b["remaining"]), (200, 5))
        st, _, b = s2.decide([("api", "bob")])
        self.assertEqual((st, b["remaining"]), (200, 2))


    def test_snapshot_restart_keeps_every_decision(self):
        # With client ticks, a restart must change no decision at all: the
        # states come back exactly (a fixed window in its own window, a
        # GCRA to the tick), however long the service was down.
        snap = tempfile.mkdtemp(prefix="sluice-snap-")
        self.addCleanup(shutil.rmtree, snap)
        day = 86_400 * 10**9
        t = 6 * day - 10 * 10**9  # ten seconds before the end of a day
        text = base_config({"fw": "fixed-window 3/1d", "g": "gcra 1/1s"}, server="client_time = true\n")
        path = write_config(text)
        self.addCleanup(os.unlink, path)
        s = self.start("--config", path, "--snapshot", snap)
        for _ in range(3):
            self.assertEqual(s.decide([("fw", "alice")], now=t)[0], 200)
        self.assertEqual(s.decide([("g", "alice")], now=t)[0], 200)
        self.assertEqual(s.stop(), 0)
        s2 = self.start("--config", path, "--snapshot", snap)
        self.assertIn("2 keys of 2 policies restored", s2.log())
        # The last tick of the day: still counted; the window ends one tick later.
        st, _, b = s2.decide([("fw", "alice")], now=6 * day - 1)
        self.assertEqual((st, b["reset_after_ns"], b["retry_after_ns"]), (429, 1, 1))
        # GCRA: one tick before the emission interval has passed, then at it.
        st, _, b = s2.decide([("g", "alice")], now=t + 10**9 - 1)
        self.assertEqual((st, b["retry_after_ns"]), (429, 1))
        st, _, b = s2.decide([("g", "alice")], now=t + 10**9)
        self.assertEqual(st, 200)
        # The next day starts fresh, at its first tick.
        st, _, b = s2.decide([("fw", "alice")], now=6 * day)
        self.assertEqual((st, b["remaining"]), (200, 2))

    def test_a_daily_window_resets_at_midnight_utc_across_a_restart(self):
        # The service's clock counts from the Unix epoch: a 1d window ends at
        # 00:00 UTC, before a restart and after it.
        snap = tempfile.mkdtemp(prefix="sluice-snap-")
        self.addCleanup(shutil.rmtree, snap)
        day = 86_400 * 10**9
        path = write_config(base_config({"fw": "fixed-window 2/1d"}))
        self.addCleanup(os.unlink, path)

        def reset_is_midnight(server, want_remaining):
            before = time.time_ns()
            st, _, b = server.decide([("fw", "alice")])
            after = time.time_ns()
            self.assertEqual((st, b["remaining"]), (200, want_remaining))
            # The window's end, as the service saw it: between the two readings plus reset_after.
            end_lo, end_hi = before + b["reset_after_ns"], after + b["reset_after_ns"]
            midnight = (after // day + 1) * day
            self.assertLessEqual(end_lo, midnight, b)
            self.assertGreaterEqual(end_hi, midnight, b)
            return midnight

        s = self.start("--config", path, "--snapshot", snap)
        first = reset_is_midnight(s, 1)
        self.assertEqual(s.stop(), 0)
        s2 = self.start("--config", path, "--snapshot", snap)
        second = reset_is_midnight(s2, 0 if time.time_ns() < first else 1)
        self.assertIn(second, (first, first + day))

    def test_periodic_snapshot(self):
        snap = tempfile.mkdtemp(prefix="sluice-snap-")
        self.addCleanup(shutil.rmtree, snap)
        s, _ = self.start_config(base_config({"api": "fixed-window 3/1h"}) +
                                 '[store]\nsnapshot = "%s"\nsnapshot_interval = "200ms"\n' % snap)
        s.decide([("api", "alice")])
        self.assertTrue(s.wait_log("keys saved (periodic)", 5), s.log())
        self.assertTrue(os.path.isfile(os.path.join(snap, "api.snap")))
        # A kill -9 now loses at most the last interval: the restart sees alice's request.
        s.proc.kill()
        s.proc.wait()
        s2, _ = self.start_config(base_config({"api": "fixed-window 3/1h"}) + '[store]\nsnapshot = "%s"\n' % snap)
        st, _, b = s2.decide([("api", "alice")])
        self.assertEqual((st, b["remaining"]), (200, 1))


class SlowClients(ServeCase):
    def test_idle_and_byte_at_a_time_connections_do_not_delay_others(self):
        s, _ = self.start_config(base_config({"api": "gcra 1000000/1s"},
                                             server='request_timeout = "2s"\nidle_timeout = "3s"\nthreads = 1\n'))
        idle = [socket.create_connection(("127.0.0.1", s.port)) for _ in range(500)]
        slow = [socket.create_connection(("127.0.0.1", s.port)) for _ in range(500)]
        request = b"POST /v1/decide HTTP/1.1\r\nHost: x\r\nContent-Length: 26\r\n\r\n"
        conn = s.conn(timeout=5)
        worst = 0.0
        start = time.time()
        for i in range(40):
            for sock in slow:
                try:
                    sock.send(request[i:i + 1])
                except OSError:
                    pass
            t0 = time.time()
            st, _, b = s.decide([("api", "k%d" % i)], conn=conn)
            worst = max(worst, time.time() - t0)
            self.assertEqual(st, 200)
            time.sleep(0.025)
        self.assertLess(worst, 0.25, "a request waited %.3f s behind slow clients" % worst)
        # The byte-at-a-time clients are cut off by the request timeout, the idle ones by the idle timeout.
        time.sleep(max(0, start + 3.5 - time.time()))
        closed = 0
        for sock in slow + idle:
            sock.settimeout(2)
            try:
                data = sock.recv(100)
                closed += data == b""
            except ConnectionResetError:
                closed += 1
            except socket.timeout:
                pass
            sock.close()
        self.assertEqual(closed, 1000)
        self.assertGreaterEqual(metric(s.metrics(), "sluice_connection_timeouts_total"), 1000)
        conn.close()


class Hostile(ServeCase):
    def test_limits(self):
        s, _ = self.start_config(base_config({"api": "gcra 100/1s"},
                                             server="max_header_bytes = 1024\nmax_body_bytes = 256\n"
                                                    "max_connections = 40\nthreads = 1\n"))
        st, _, _ = s.request("GET", "/healthz", headers={"X-Big": "x" * 2000})
        self.assertEqual(st, 431)
        st, _, _ = s.request("POST", "/v1/decide", body="{" + " " * 300 + "}")
        self.assertEqual(st, 413)
        raw = socket.create_connection(("127.0.0.1", s.port))
        raw.sendall(b"GARBAGE\r\n\r\n")
        raw.settimeout(5)
        self.assertTrue(raw.recv(100).startswith(b"HTTP/1.1 400"))
        raw.close()
        # Connection limit: the ones past 40 are closed at once, the others still served.
        socks = [socket.create_connection(("127.0.0.1", s.port)) for _ in range(50)]
        time.sleep(0.3)
        refused = 0
        for sock in socks:
            sock.settimeout(0.5)
            try:
                sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
                data = sock.recv(100)
                refused += data == b""
            except (ConnectionResetError, BrokenPipeError):
                refused += 1
        self.assertEqual(refused, 10)
        for sock in socks:
            sock.close()
        time.sleep(0.3)
        st, _, _ = s.request("GET", "/healthz")
        self.assertEqual(st, 200)
        self.assertGreaterEqual(metric(s.metrics(), "sluice_connections_refused_total"), 10)

    def test_a_field_at_the_largest_header_bound_is_refused_not_a_crash(self):
        # Boost.Beast holds a field of at most 65,533 bytes and throws past
        # it, which ended the process; the bound keeps every field below.
        s, _ = self.start_config(base_config({"api": "gcra 100/1s"}, server="max_header_bytes = 65535\nthreads = 1\n"))
        for size in (65_533, 65_536, 70_000):
            st, _, _ = s.request("GET", "/healthz", headers={"X-Big": "x" * size})
            self.assertEqual(st, 431, size)
        st, _, _ = s.request("GET", "/healthz")
        self.assertEqual(st, 200)
        self.assertIsNone(s.proc.poll())


class MemoryBound(ServeCase):
    """store.max_keys: a new key past the bound is answered by store.on_failure and counted."""

    def test_bound_refuses_new_keys_and_keeps_old_ones(self):
        store = '[store]\nmax_keys = 3\non_failure = "fail-closed"\nfail_closed_retry_after = "2s"\n'
        s, _ = self.start_config(base_config({"api": "gcra 1/1h burst=2"}, server="client_time = true\n") + store)
        conn = s.conn()
        now = 10**12
        for key in ("a", "b", "c"):
            st, _, b = s.decide([("api", key)], now=now, conn=conn)
            self.assertEqual((st, b["source"]), (200, "store"))
        st, _, b = s.decide([("api", "a")], now=now, conn=conn)  # a spent
        self.assertEqual((st, b["checks"][0]["remaining"]), (200, 0))
        st, h, b = s.decide([("api", "d")], now=now, conn=conn)
        self.assertEqual((st, b["source"]), (429, "fail-closed"))
        self.assertEqual(h["retry-after"], "2")
        # A held key keeps its state: a is spent, not handed a fresh limit.
        st, _, b = s.decide([("api", "a")], now=now + 1, conn=conn)
        self.assertEqual((st, b["source"]), (429, "store"))
        self.assertGreater(b["retry_after_ns"], 1799 * 10**9)
        text = s.metrics()
        self.assertEqual(metric(text, "sluice_keys"), 3)
        self.assertEqual(metric(text, "sluice_store_max_keys"), 3)
        self.assertEqual(metric(text, "sluice_store_refused_total"), 1)
        self.assertEqual(metric(text, "sluice_store_fallbacks_total"), 1)
        self.assertEqual(metric(text, 'sluice_store_decisions_total{source="fail-closed"}'), 1)
        self.assertEqual(metric(text, "sluice_store_purged_total"), 0)
        per_key = metric(text, "sluice_store_bytes_per_key")
        self.assertGreater(per_key, 16)
        self.assertEqual(metric(text, "sluice_store_bytes") // 3, per_key)
        conn.close()

    def test_the_schedule_purges_fresh_states_and_frees_room(self):
        # The service's own clock: states fresh after 100 ms are purged every
        # 100 ms, and the bound admits new keys again.
        store = '[store]\nmax_keys = 2\npurge_interval = "100ms"\n'
        s, _ = self.start_config(base_config({"api": "gcra 10/1s burst=1"}) + store)
        for key in ("a", "b"):
            st, _, b = s.decide([("api", key)])
            self.assertEqual((st, b["source"]), (200, "store"))
        st, _, b = s.decide([("api", "c")])
        self.assertEqual((st, b["source"]), (429, "fail-closed"))
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and metric(s.metrics(), "sluice_store_purged_total") < 2:
            time.sleep(0.05)
        self.assertEqual(metric(s.metrics(), "sluice_store_purged_total"), 2)
        self.assertEqual(metric(s.metrics(), "sluice_keys"), 0)
        st, _, b = s.decide([("api", "c")])
        self.assertEqual((st, b["source"]), (200, "store"))

    def test_bad_values_name_the_field(self):
        for text, field in (('max_keys = -1', "max_keys"), ('max_keys = "many"', "max_keys"),
                            ('purge_interval = 5', "purge_interval")):
            path = write_config(base_config({"api": "gcra 1/1s"}) + "[store]\n" + text + "\n")
            self.addCleanup(os.unlink, path)
            r = subprocess.run([BINARY, "serve", "--check", path], capture_output=True, text=True)
            self.assertEqual(r.returncode, 2, r.stderr)
            self.assertIn(field, r.stderr)


class Install(unittest.TestCase):
    def test_cmake_install_gives_binary_config_and_unit(self):
        build = os.environ.get("SLUICE_BUILD_DIR")
        cmake = os.environ.get("CMAKE_COMMAND", "cmake")
        self.assertTrue(build, "SLUICE_BUILD_DIR is not set")
        prefix = tempfile.mkdtemp(prefix="sluice-install-")
        self.addCleanup(shutil.rmtree, prefix)
        subprocess.run([cmake, "--install", build, "--prefix", prefix], check=True, capture_output=True)
        binary = os.path.join(prefix, "bin", "sluice")
        conf = os.path.join(prefix, "etc", "sluice", "sluice.toml")
        unit = os.path.join(prefix, "lib", "systemd", "system", "sluice.service")
        for f in [binary, conf, unit, os.path.join(prefix, "share", "sluice", "nginx-sluice.conf")]:
            self.assertTrue(os.path.isfile(f), f)
        r = subprocess.run([binary, "serve", "--check", conf], capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stderr)
        with open(unit) as f:
            text = f.read()
        self.assertIn("ExecStart=%s serve --config %s" % (binary, conf), text)
        self.assertIn("ExecReload=/bin/sh -c 'kill -HUP ${MAINPID}'", text)  # no /bin/kill on a minimal system
        self.assertNotIn("@", text)


if __name__ == "__main__":
    unittest.main()

"""One clock for a fleet (semantics.md, "Clocks of a fleet"; docs/serve.md,
store.clock): two real `sluice serve` processes on one real redis-server,
one of them started under libfaketime (Debian package `faketime`, installed
by scripts/setup.sh) with its clock shifted by +30 s, +1 h and -30 s.

- store.clock = "store" (the default): 5 requests through the process
  whose clock lags, then 5 through the other, on one key of every
  algorithm, each with an allowance of 5 in the seconds the test runs
  (the leaky queue 6), admit exactly that between them — leases included
  (none is released): the allowance's definition, counted from the
  answers. At each process's own clock ("local", today's behaviour before
  store.clock) the same requests admit 10 on the 20 s leases at every
  offset, and 9-10 on most algorithms at +1 h.
- store.clock = "local": each process reports its measured offset to the
  store's clock, sluice_clock_offset_seconds, on the right process with
  the right sign (the store's clock minus the process's: about -30 on the
  process 30 s ahead), logs that it is past store.max_clock_offset, and
  counts its requests in sluice_clock_skew_total — ahead as well as behind
  (the process on time counts none).

libfaketime is an LD_PRELOAD library (the path the `faketime` wrapper
preloads, with FAKETIME="+30s" etc., so that the PID the test stops is
sluice's own: the wrapper dies on SIGTERM and leaves its child running); the
ASan build's runtime checks that it comes first in the library list, so the
shifted process runs with ASAN_OPTIONS=verify_asan_link_order=0 (harmless
without ASan). The test first
checks that the shift reaches the binary: its measured offset to Redis's
clock must be minus the shift.

One ctest test (Serve.ClockOnRedis) runs every offset and every algorithm.
"""
import os
import shutil
import subprocess
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from serve_support import RedisServer, ServeCase, base_config, metric, wait_until, write_config  # noqa: E402

HOUR = 3600


def mid_window_fixed(limit):
    """A fixed window of `limit` an hour, half over now: no window ends while the test runs."""
    return "fixed-window %d/1h origin=%ds" % (limit, int((time.time() % HOUR + HOUR / 2) % HOUR))


def make_policies():
    """Every algorithm, 5 in the seconds the test runs (one text for every process)."""
    return {
        "gcra": "gcra 5/1h burst=5",
        "bucket": "token-bucket 5/1h burst=5",
        "fixed": mid_window_fixed(5),
        "log": "sliding-log 5/1h",
        "counter": "sliding-counter 5/1h",
        "buckets": "sliding-buckets 5/1h buckets=4",
        "queue": "leaky-queue 5/1h queue=5",
        "quota": "quota 5",
        "lease": "concurrency 5 lease=1h",
        # Leases shorter than the offsets: at each process's own clock the
        # leases the lagging process took look expired to the leading one
        # at every offset here (semantics.md's table: d >= D), while the
        # test's own seconds expire none.
        "lease20": "concurrency 5 lease=20s",
    }


def allowance(policies):
    """What each policy admits of 10 requests in a few seconds, by its
    definition (semantics.md, "The algorithms"): 5, and the leaky queue 6 —
    its first unit leaves at the instant it arrived, so any later request
    finds it gone, and the next leaves 12 minutes later."""
    return {name: 6 if name == "queue" else 5 for name in policies}


class ClockOnRedis(ServeCase):
    OFFSETS = (("+30s", 30), ("+1h", HOUR), ("-30s", -30))

    def setUp(self):
        if shutil.which("faketime") is None:
            raise AssertionError("faketime is not installed (scripts/setup.sh installs it)")
        self.redis = RedisServer()
        self.addCleanup(self.redis.stop)
        self.policies = make_policies()
        self.preload = subprocess.run(["faketime", "-f", "+0s", "sh", "-c", 'printf %s "$LD_PRELOAD"'],
                                      capture_output=True, text=True, timeout=10, check=True).stdout
        self.assertIn("libfaketime", self.preload)

    def serve(self, clock, prefix, shift=None):
        text = base_config(self.policies, server="threads = 1\n")
        text += '\n[store]\nurl = "%s"\nkey_prefix = "%s"\n' % (self.redis.url, prefix)
        if clock is not None:
            text += 'clock = "%s"\n' % clock
        path = write_config(text)
        self.addCleanup(os.unlink, path)
        if shift is None:
            return self.start("--config", path)
        env = dict(os.environ)
        env["ASAN_OPTIONS"] = (env.get("ASAN_OPTIONS", "") + ":verify_asan_link_order=0").lstrip(":")
        # The library itself, not the `faketime` wrapper, which would stand
        # between the test and the PID it stops: the wrapper's own preload
        # (its $LIB left to the loader), and its relative form of FAKETIME.
        env["LD_PRELOAD"] = self.preload
        env["FAKETIME"] = shift
        return self.start("--config", path, env=env)

    def admits(self, a, b, key):
        """Per policy: the admits of 5 requests through a (the process whose
        clock lags), then 5 through b."""
        out = {}
        for name in self.policies:
            n = 0
            for s in (a, a, a, a, a, b, b, b, b, b):
                status, _, body = s.decide([(name, key)])
                self.assertIn(status, (200, 429), body)
                self.assertIn(body["source"], ("store", "deny-cache"), body)
                n += status == 200
            out[name] = n
        return out

    def offset_of(self, server):
        """sluice_clock_offset_seconds once the process has measured it."""
        seen = {}

        def measured():
            seen["v"] = metric(server.metrics(), "sluice_clock_offset_seconds")
            return seen["v"] is not None

        self.assertTrue(wait_until(measured, 10), server.log())
        return seen["v"]

    def test_one_clock_for_the_fleet(self):
        on_time = self.serve(None, "store:")  # store.clock left to its default: "store"
        local_on_time = self.serve("local", "local:")
        for label, seconds in self.OFFSETS:
            with self.subTest(offset=label):
                shifted = self.serve(None, "store:", shift=label)
                # The shift reaches the binary: its measured offset to
                # Redis's clock (the store's minus its own) is minus it.
                shifted.decide([("quota", "probe" + label)])
                offset = self.offset_of(shifted)
                self.assertLess(abs(offset + seconds), 2, "faketime did not shift sluice serve: %s s" % offset)
                lagging, leading = (on_time, shifted) if seconds > 0 else (shifted, on_time)
                got = self.admits(lagging, leading, "k" + label)
                self.assertEqual(got, allowance(self.policies), "clock=store, " + label)

                local_shifted = self.serve("local", "local:", shift=label)
                local_shifted.decide([("gcra", "m1" + label)])  # keys of their own: no skew between them
                local_on_time.decide([("gcra", "m2" + label)])
                ahead = self.offset_of(local_shifted)
                self.assertLess(abs(ahead + seconds), 2, "the store's clock minus the shifted process's")
                self.assertLess(abs(self.offset_of(local_on_time)), 2)
                self.assertTrue(local_shifted.wait_log("past max_clock_offset"), local_shifted.log())
                self.assertIn("ahead of" if seconds > 0 else "behind", local_shifted.log())
                # The shifted process counts skew, ahead (its requests
                # stamped past the store's clock) or behind (a key admitted
                # by the process on time is ahead of it): every request.
                self.assertEqual(local_on_time.decide([("gcra", "s" + label)])[0], 200)
                before = metric(local_shifted.metrics(), "sluice_clock_skew_total")
                for _ in range(3):
                    local_shifted.decide([("gcra", "s" + label)])
                after = metric(local_shifted.metrics(), "sluice_clock_skew_total")
                self.assertEqual(after - before, 3)
                self.assertEqual(metric(local_on_time.metrics(), "sluice_clock_skew_total"), 0)
                self.assertEqual(shifted.stop(), 0)
                self.assertEqual(local_shifted.stop(), 0)


if __name__ == "__main__":
    unittest.main()

"""The example programs (examples/*.cpp) print what the README shows.

Each example is a target of the build (examples/CMakeLists.txt). The
README's transcript of it — a 4-space-indented block whose `$ ` lines run
`build/examples/NAME` — is run with the built program, step by step, and
each step must exit 0 and print exactly the lines under it (a `...` line
stands for any lines). The Redis example runs against a real redis-server
on a free port (serve_support.RedisServer, started here and stopped by
PID), its URL in place of the README's redis://127.0.0.1:6379. The README
also shows examples/one_limiter.cpp whole: its C++ block must be the file.
Environment: SLUICE_EXAMPLES_DIR (the built programs), SLUICE_SOURCE_DIR.
"""
import glob
import os
import re
import shlex
import subprocess
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "serve"))
sys.path.insert(0, os.path.join(HERE, "..", "readme"))
from serve_support import SOURCE, RedisServer  # noqa: E402
from test_readme import matches, transcripts  # noqa: E402

EXAMPLES = os.environ.get("SLUICE_EXAMPLES_DIR", "build/examples")
README = os.path.join(SOURCE, "README.md")
SHOWN_AS = "build/examples/"
README_URL = "redis://127.0.0.1:6379"


def readme():
    with open(README) as f:
        return f.read()


def steps_of(name):
    """The README's transcript steps that run example `name`: (command, expected lines)."""
    return [(command, expected) for steps in transcripts(readme()) for command, expected in steps
            if shlex.split(command)[0] == SHOWN_AS + name]


class Example:
    """Runs the README's transcript of one example (a mixin: `name` is the example)."""

    name = None
    url = None

    def run_shown(self):
        steps = steps_of(self.name)
        self.assertTrue(steps, "README.md shows no `$ %s%s`" % (SHOWN_AS, self.name))
        for command, expected in steps:
            if README_URL in command:
                self.assertIsNotNone(self.url, "$ %s: no server to run it against" % command)
                command = command.replace(README_URL, self.url)
            args = shlex.split(command)
            args[0] = os.path.join(EXAMPLES, self.name)
            p = subprocess.run(args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=60)
            actual = p.stdout.splitlines()
            self.assertEqual(p.returncode, 0, "$ %s exited %d:\n%s" % (command, p.returncode, p.stdout))
            self.assertTrue(matches(expected, actual), "README: $ %s\n--- shows:\n%s\n--- prints:\n%s" %
                            (command, "\n".join(expected), "\n".join(actual)))
        return len(steps)


class OneLimiter(Example, unittest.TestCase):
    name = "one_limiter"

    def test_prints_what_the_readme_shows(self):
        self.run_shown()

    def test_the_readme_shows_the_whole_file(self):
        with open(os.path.join(SOURCE, "examples", "one_limiter.cpp")) as f:
            source = f.read()
        blocks = re.findall(r"^```cpp\n(.*?)^```$", readme(), re.M | re.S)
        self.assertIn(source, blocks, "README.md's C++ block differs from examples/one_limiter.cpp")


class KeyedLimiter(Example, unittest.TestCase):
    name = "keyed_limiter"

    def test_prints_what_the_readme_shows(self):
        self.run_shown()


class RedisLimiter(Example, unittest.TestCase):
    name = "redis_limiter"

    def setUp(self):
        self.redis = RedisServer()
        self.addCleanup(self.redis.stop)
        self.url = self.redis.url

    def test_prints_what_the_readme_shows(self):
        # Two runs, two processes: the second is denied by what the first took.
        self.assertGreaterEqual(self.run_shown(), 2)
        self.assertGreater(self.redis.command("DBSIZE"), 0, "the example left no state in Redis")

    def test_a_server_that_is_down_is_a_failure_said_so(self):
        self.redis.stop()
        p = subprocess.run([os.path.join(EXAMPLES, self.name), self.url], capture_output=True, text=True,
                           timeout=60)
        self.assertEqual(p.returncode, 1)
        self.assertEqual(p.stdout, "")
        self.assertEqual(p.stderr, "redis_limiter: Redis did not decide (fail-closed)\n")

    def test_a_bad_url_is_a_usage_error_naming_it(self):
        p = subprocess.run([os.path.join(EXAMPLES, self.name), "redis://127.0.0.1:notaport"], capture_output=True,
                           text=True, timeout=60)
        self.assertEqual(p.returncode, 2)
        self.assertIn("port", p.stderr)
        p = subprocess.run([os.path.join(EXAMPLES, self.name)], capture_output=True, text=True, timeout=60)
        self.assertEqual(p.returncode, 2)
        self.assertTrue(p.stderr.startswith("usage: redis_limiter URL"), p.stderr)


class EveryExample(unittest.TestCase):
    def test_is_shown_in_the_readme_and_run_here(self):
        names = sorted(os.path.basename(f)[:-4] for f in glob.glob(os.path.join(SOURCE, "examples", "*.cpp")))
        tested = sorted(c.name for c in (OneLimiter, KeyedLimiter, RedisLimiter))
        self.assertEqual(names, tested)
        for name in names:
            self.assertTrue(steps_of(name), "README.md shows no `$ %s%s`" % (SHOWN_AS, name))


if __name__ == "__main__":
    unittest.main()

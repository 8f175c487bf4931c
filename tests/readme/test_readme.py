"""The README's examples (and docs/traces.md's) print what they show.

Every indented block of README.md with `$ ` lines is a transcript: each
`$ cat FILE` names a file that ships in the repository and shows all of it
(the file is copied into the test's folder), and every other command is
run (with `sluice` the built binary, in a fresh folder) and must print
exactly the lines under it, standard error included; a line `...` stands for
any lines. The Redis example runs against a real redis-server on a free
port, the curl example against a real `sluice serve` started as the README
starts it. The explorer's session has its own test
(Readme.ExplorerTranscriptIsTheRealSession), and the example programs'
(`build/examples/...`) theirs (tests/examples/). Environment: SLUICE_BINARY,
SLUICE_SOURCE_DIR.
"""
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "serve"))
from serve_support import BINARY, SOURCE, RedisServer, Server  # noqa: E402

README = os.path.join(SOURCE, "README.md")


def transcripts(text):
    """The README's blocks of 4-space-indented lines that hold a `$ ` line,
    each a list of (command, [expected lines])."""
    blocks, block = [], []
    for line in text.splitlines() + [""]:
        if line.startswith("    "):
            block.append(line[4:])
            continue
        if line.strip() == "" and block:
            block.append("")  # a blank line inside a block
            continue
        if any(b.startswith("$ ") for b in block):
            blocks.append(block)
        block = []
    out = []
    for b in blocks:
        while b and b[-1] == "":
            b.pop()
        steps = []
        for line in b:
            if line.startswith("$ "):
                steps.append((line[2:], []))
            elif steps:
                steps[-1][1].append(line)
        out.append(steps)
    return out


def matches(expected, actual):
    """Whether `actual` is `expected` line for line, a `...` line standing
    for any number of lines."""
    if not expected:
        return not actual
    if expected[0] == "...":
        return any(matches(expected[1:], actual[i:]) for i in range(len(actual) + 1))
    return bool(actual) and actual[0] == expected[0] and matches(expected[1:], actual[1:])


class Examples(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="sluice-readme-")
        self.addCleanup(shutil.rmtree, self.dir, ignore_errors=True)
        bin_dir = os.path.join(self.dir, "bin")
        os.mkdir(bin_dir)
        os.symlink(os.path.abspath(BINARY), os.path.join(bin_dir, "sluice"))
        self.env = dict(os.environ, PATH=bin_dir + os.pathsep + os.environ.get("PATH", ""))
        with open(README) as f:
            self.readme = f.read()

    def shipped_file(self, command, expected):
        """A `$ cat FILE` step: FILE ships in the repository (a reader who
        follows the page in the checkout has it) and holds exactly the lines
        shown; it is copied into the test's folder for the steps after it.
        False for any other command."""
        m = re.fullmatch(r"cat (\S+)", command)
        if not m:
            return False
        path = m.group(1)
        shipped = os.path.join(SOURCE, path)
        self.assertTrue(os.path.isfile(shipped), "$ cat %s: the file does not ship in the repository" % path)
        with open(shipped) as f:
            self.assertEqual(f.read(), "\n".join(expected) + "\n", "$ cat %s: the shipped file differs" % path)
        os.makedirs(os.path.join(self.dir, os.path.dirname(path)), exist_ok=True)
        shutil.copyfile(shipped, os.path.join(self.dir, path))
        return True

    def run_shell(self, command):
        p = subprocess.run(["sh", "-c", command + " 2>&1"], cwd=self.dir, env=self.env, capture_output=True,
                           text=True, timeout=120)
        lines = p.stdout.replace("\r\n", "\n").splitlines()
        while lines and lines[-1] == "":
            lines.pop()  # an HTTP response's closing blank line
        return lines

    def test_every_example_prints_what_the_readme_shows(self):
        redis = None
        serve = None
        checked = 0
        try:
            for steps in transcripts(self.readme):
                for command, expected in steps:
                    if command == "sluice":
                        continue  # the explorer: Readme.ExplorerTranscriptIsTheRealSession
                    if command.startswith("build/examples/"):
                        continue  # the example programs: tests/examples/ (Examples.*)
                    if self.shipped_file(command, expected):
                        continue
                    if "redis://127.0.0.1:6379" in command:
                        if redis is None:
                            redis = RedisServer()
                        command = command.replace("redis://127.0.0.1:6379", redis.url)
                    if command.startswith("curl ") and "127.0.0.1:8080" in command:
                        if serve is None:
                            start = re.search(r"^    build/sluice serve (.+)$", self.readme, re.M)
                            self.assertIsNotNone(start, "the README's way to start sluice serve")
                            serve = Server(shlex.split(start.group(1)) + ["--listen", "127.0.0.1:0"])
                        command = command.replace("127.0.0.1:8080", "127.0.0.1:%d" % serve.port)
                    actual = self.run_shell(command)
                    self.assertTrue(matches(expected, actual),
                                    "README: $ %s\n--- shows:\n%s\n--- prints:\n%s" %
                                    (command, "\n".join(expected), "\n".join(actual)))
                    checked += 1
        finally:
            if serve is not None:
                serve.stop()
            if redis is not None:
                redis.stop()
        self.assertGreaterEqual(checked, 10)
        print("README examples checked: %d" % checked)

    def test_every_example_of_the_trace_page_prints_what_it_shows(self):
        """docs/traces.md's transcripts, run as the README's are."""
        with open(os.path.join(SOURCE, "docs", "traces.md")) as f:
            page = f.read()
        checked = 0
        for steps in transcripts(page):
            for command, expected in steps:
                if self.shipped_file(command, expected):
                    continue
                actual = self.run_shell(command)
                self.assertTrue(matches(expected, actual), "docs/traces.md: $ %s\n--- shows:\n%s\n--- prints:\n%s" %
                                (command, "\n".join(expected), "\n".join(actual)))
                checked += 1
        self.assertGreaterEqual(checked, 1)


if __name__ == "__main__":
    unittest.main()

"""docs/serve.md's examples print what the page shows.

Every indented block of docs/serve.md with `$ ` lines is a transcript (at
any depth of indentation, so a block inside a list item counts too): each
command is run by sh in a fresh folder (`sluice` the built binary, `etc/`
the checkout's) and must print exactly the lines under it, standard error
included; a line `...` stands for any lines. The curl commands go to one
real `sluice serve --config etc/sluice.toml`, started once, on free ports
put in place of the page's 127.0.0.1:8080 (decisions) and 127.0.0.1:8081
(admin), and run in the page's order. Environment: SLUICE_BINARY,
SLUICE_SOURCE_DIR.
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "serve"))
sys.path.insert(0, HERE)
from serve_support import BINARY, SOURCE, Server  # noqa: E402
from test_readme import matches  # noqa: E402

PAGE = os.path.join(SOURCE, "docs", "serve.md")
SAMPLE = os.path.join(SOURCE, "etc", "sluice.toml")


def transcripts(text):
    """The page's indented blocks that hold a `$ ` line, each a list of
    (command, [expected lines]); a block's indent is its first line's."""
    out, block, indent = [], [], None
    for line in text.splitlines() + [""]:
        if indent is None and line.startswith("    ") and line.strip():
            indent = len(line) - len(line.lstrip(" "))
        if indent is not None and line.startswith(" " * indent):
            block.append(line[indent:])
            continue
        if indent is not None and line.strip() == "":
            block.append("")
            continue
        if any(b.startswith("$ ") for b in block):
            while block and block[-1] == "":
                block.pop()
            steps = []
            for b in block:
                if b.startswith("$ "):
                    steps.append((b[2:], []))
                elif steps:
                    steps[-1][1].append(b)
            out.append(steps)
        block, indent = [], None
        if line.startswith("    ") and line.strip():  # a block right after a shallower one
            indent = len(line) - len(line.lstrip(" "))
            block.append(line[indent:])
    return out


class ServePage(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="sluice-serve-md-")
        self.addCleanup(shutil.rmtree, self.dir, ignore_errors=True)
        bin_dir = os.path.join(self.dir, "bin")
        os.mkdir(bin_dir)
        os.symlink(os.path.abspath(BINARY), os.path.join(bin_dir, "sluice"))
        os.symlink(os.path.abspath(os.path.join(SOURCE, "etc")), os.path.join(self.dir, "etc"))
        self.env = dict(os.environ, PATH=bin_dir + os.pathsep + os.environ.get("PATH", ""))
        with open(PAGE) as f:
            self.page = f.read()

    def run_shell(self, command):
        p = subprocess.run(["sh", "-c", "{ %s\n} 2>&1" % command], cwd=self.dir, env=self.env, capture_output=True,
                           text=True, timeout=60)
        lines = p.stdout.replace("\r\n", "\n").splitlines()
        while lines and lines[-1] == "":
            lines.pop()  # an HTTP response's closing blank line
        return lines

    def test_every_example_prints_what_the_page_shows(self):
        serve = Server(["--config", SAMPLE, "--listen", "127.0.0.1:0", "--admin", "127.0.0.1:0"], cwd=self.dir)
        self.addCleanup(serve.stop)
        checked = curls = 0
        for steps in transcripts(self.page):
            for command, expected in steps:
                if "127.0.0.1:808" in command:
                    self.assertTrue(command.startswith("curl "), command)
                    command = command.replace("127.0.0.1:8080", "127.0.0.1:%d" % serve.port)
                    command = command.replace("127.0.0.1:8081", "127.0.0.1:%d" % serve.admin_port)
                    curls += 1
                actual = self.run_shell(command)
                self.assertTrue(matches(expected, actual),
                                "docs/serve.md: $ %s\n--- shows:\n%s\n--- prints:\n%s" %
                                (command, "\n".join(expected), "\n".join(actual)))
                checked += 1
        self.assertGreaterEqual(curls, 8)
        self.assertGreaterEqual(checked, 11)
        print("docs/serve.md examples checked: %d (%d against sluice serve)" % (checked, curls))

    def test_the_sample_shows_every_setting(self):
        """Every key of the page's configuration table (`server.*`,
        `store.*`, `grpc.*`) stands in etc/sluice.toml, set or commented
        out (`# key = ...`), under its own section, so a reader of the
        sample sees every setting there is (but those the table calls
        ignored, kept only so that older files load)."""
        keys = []
        for row, meaning in re.findall(r"^\| (`[a-z_]+\.[^|]*?) \|[^|]*\| (.*) \|$", self.page, re.M):
            if meaning.startswith("Ignored"):
                continue
            names = re.findall(r"`([a-z_]+(?:\.[a-z_]+)?)`", row)
            section = names[0].split(".")[0] if names else None
            if section not in ("server", "store", "grpc"):
                continue
            keys += [n if "." in n else section + "." + n for n in names]
        self.assertGreaterEqual(len(keys), 25, keys)
        sections, section = {}, None
        with open(SAMPLE) as f:
            for line in f:
                m = re.match(r"^#?\s*\[([a-z]+)\]\s*$", line)
                if m:
                    section = m.group(1)
                    continue
                m = re.match(r"^#?\s*([a-z_]+)\s*=", line)
                if m and section:
                    sections.setdefault(section, set()).add(m.group(1))
        missing = [k for k in keys if k.split(".")[1] not in sections.get(k.split(".")[0], set())]
        self.assertEqual(missing, [], "docs/serve.md's settings missing from etc/sluice.toml")


if __name__ == "__main__":
    unittest.main()

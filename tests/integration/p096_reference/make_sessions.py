#!/usr/bin/env python3
"""Writes the explorer's reference sessions: tests/integration/p096_sessions/
NAME.in (what is typed, as bytes) and NAME.out (the screen, produced by
running the P096 reference p096.py on NAME.in).

explore_test.cpp runs every NAME.in through the explorer with echo and wants
NAME.out byte for byte. Rerun after changing a session here:

    python3 tests/integration/p096_reference/make_sessions.py

It first checks that p096.py reproduces P096's own golden sessions
(shared/p096/basic and bad-input) and stops if it does not.
"""
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
OUT_DIR = os.path.join(os.path.dirname(HERE), "p096_sessions")
SHARED = os.environ.get("SLUICE_SHARED_DIR", os.path.join(HERE, "..", "..", "..", "..", "shared"))
REFERENCE = os.path.join(HERE, "p096.py")


def run_reference(data):
    r = subprocess.run([sys.executable, REFERENCE], input=data, stdout=subprocess.PIPE, check=True)
    return r.stdout


def lines(*rows, end=b"\n"):
    """Typed lines, each ended with `end` (bytes or str rows)."""
    out = b""
    for row in rows:
        out += (row.encode("utf-8") if isinstance(row, str) else row) + end
    return out


def set_limits(l, w, b):
    return ["4", str(l), str(w), str(b)]


def look():
    return ["1", "2"]


SESSIONS = {
    # Random traces: other seeds, each compared and shown (60 > 40 rows).
    "random-seeds": lines("3", "random", "0", *look(), "3", "random", "1", "1", "3", "random", "42", *look(),
                          "3", "random", "999999", *look(), "3", "random", "123456", "1", "5"),
    "random-seed-leading-zeros": lines("3", "random", "000007", "1", "3", "random", "0000007", "00", "3",
                                       " random ", "  7  ", "1", "5"),
    # Limits at their edges.
    "limit-one-per-second": lines(*set_limits(1, 1, 1), *look(), "3", "burst", *look(), "3", "steady", "1",
                                  "3", "random", "5", *look(), "5"),
    "limit-hundred-per-hour": lines(*set_limits(100, 3600, 100), *look(), "3", "burst", *look(), "3", "steady",
                                    *look(), "5"),
    "limit-hundred-bucket-one": lines(*set_limits(100, 3600, 1), "3", "burst", *look(), "3", "random", "77",
                                      *look(), "5"),
    "bucket-equals-limit": lines(*set_limits(7, 30, 7), "3", "burst", *look(), "3", "steady", *look(), "3",
                                 "random", "31337", *look(), "5"),
    "window-one-second": lines(*set_limits(5, 1, 2), *look(), "3", "burst", *look(), "3", "own",
                               "0 0 0 0 0 0 1 1 1 1 1 1 2 2 3", *look(), "5"),
    "limit-one": lines(*set_limits(1, 60, 1), "3", "burst", *look(), "3", "steady", *look(), "3", "own",
                       "0 59 60 61 119 120", *look(), "5"),
    "window-3600-small-limit": lines(*set_limits(3, 3600, 2), "3", "steady", *look(), "3", "own",
                                     "3599 3600 3600 7199 7200", *look(), "5"),
    "limits-sweep": lines(*set_limits(2, 10, 2), "3", "steady", "1", *set_limits(13, 17, 5), "1",
                          *set_limits(50, 100, 25), "1", *set_limits(99, 3599, 98), "1", *set_limits(10, 7, 3),
                          "3", "random", "2024", *look(), "5"),
    # Typed traces: spacing, leading zeros, the 2-to-60 bounds, 99999.
    "own-spacing-and-zeros": lines("3", "own", "   0    00  007 7   010  ", *look(), "3", "own",
                                   "00000 99999", *look(), "3", "own", "5 5", "1", "5"),
    "own-sixty-and-sixty-one": lines("3", "own", " ".join(str(i * 3) for i in range(60)), *look(), "3", "own",
                                     " ".join(str(i) for i in range(61)), "1", "5"),
    "own-rejected": lines("3", "own", "000000 1", "3", "own", "1 2 100000", "3", "own", "-1 2", "3", "own",
                          "1,2", "3", "own", "+1 2", "3", "own", "1\t2", "3", "own", "1 2 1", "3", "own", "9",
                          "3", "own", "x 1 2", "3", "own", "1 2 3 0 4 5", "3", "own", "", "3", "own", "    ",
                          "1", "5"),
    "own-then-limits": lines("3", "own", "0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20", *set_limits(4, 5, 2),
                             *look(), *set_limits(4, 5, 4), "1", *set_limits(4, 5, 1), "1", "5"),
    # Cancelled dialogs, at every step.
    "cancel-everywhere": lines("4", "", "4", "20", "", "4", "20", "30", "", "4", "   ", "3", "", "3", "   ",
                               "3", "random", "", "3", "random", "  ", "1", "5"),
    "cancel-keeps-old-limits": lines(*set_limits(3, 10, 2), "4", "50", "600", "", "1", "3", "random", "x", "-1",
                                     "", "2", "5"),
    # Bad answers of every kind.
    "menu-rejects": lines("0", "6", "01", "1 2", "one", "+1", "1.", ".5", "\t1", "5x", "", "   ", " 1 ", "  2",
                          "3 ", "burst", "5"),
    "trace-rejects": lines("3", "BURST", "3", "Steady", "3", "rand", "3", "own times", "3", "burst now", "3",
                           " steady ", "1", "5"),
    "ask-rejects": lines("4", "0", "101", "-1", "1e2", "10.0", "0000010", "000010", "abc", "100000000",
                         "  60  ", "11", "0", "10", "1", "3", "random", "1000000", "9999999", "000000", "1", "5"),
    "ask-bucket-bound": lines("4", "5", "60", "6", "100", "0", "5", "1", "4", "1", "1", "2", "1", "1", "5"),
    # Non-ASCII and odd bytes: refused like any other bad answer, echoed back as typed.
    "non-ascii": lines("１", "é", "日本", "٣", "3", "bürst", "3", "own", "1 ２ 3", "3", "own", "١ ٢",
                       "4", "１０", "10", "６０", "60", "é", "2", "3", "random", "７", "8", "1", "5"),
    "raw-bytes": lines(b"\xff", b"1\xfe", b"\x00", b"1\x00", b"3", b"own", b"1 2\x003", b"3", b"random",
                       b"\xc3", b"4", b"1", b"5"),
    # Line endings: CRLF keeps its "\r" (CPython on POSIX splits at "\n" only).
    "crlf": lines("1", "3", "steady", "4", end=b"\r\n") + lines("1", "3", "steady", "1", "5"),
    "bare-cr": b"1\r2\n3\rsteady\n1\n5\n",
    "no-final-newline": lines("3", "steady", "1") + b"5",
    "no-final-newline-mid-dialog": lines("4", "10") + b"60",
    # End of input anywhere: the line is finished and the program stops.
    "eof-empty": b"",
    "eof-at-menu": lines("1"),
    "eof-in-limits": lines("4", "10"),
    "eof-in-bucket": lines("4", "10", "60"),
    "eof-in-trace": lines("3"),
    "eof-in-seed": lines("3", "random", "x"),
    "eof-in-own": lines("3", "own"),
    # Long lines (explore_test.cpp adds megabyte ones in-process).
    "long-lines": lines("1" * 4000, "3", "own", " ".join(["5"] * 1000), "3", "own", " " * 3000 + "1 2" + " " * 3000,
                        "4", "9" * 2000, "", "3", "random", "0" * 7, "0" * 6, "2", "5"),
}


def main():
    for name in ("basic", "bad-input"):
        with open(os.path.join(SHARED, "p096", name + ".in"), "rb") as f:
            data = f.read()
        with open(os.path.join(SHARED, "p096", name + ".out"), "rb") as f:
            want = f.read()
        if run_reference(data) != want:
            sys.exit("p096.py does not reproduce the golden session " + name)
    os.makedirs(OUT_DIR, exist_ok=True)
    for name, data in sorted(SESSIONS.items()):
        with open(os.path.join(OUT_DIR, name + ".in"), "wb") as f:
            f.write(data)
        with open(os.path.join(OUT_DIR, name + ".out"), "wb") as f:
            f.write(run_reference(data))
    print("wrote", len(SESSIONS), "sessions to", OUT_DIR)


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""P096 rate limiter, the reference for the explorer's golden sessions.

The Python projections of main.eml and limits.eml from the P096 document
(shared/seeds/000_b4e914931e5e6150.txt), copied as published: limits.eml's
functions first, then main.eml's (its top-level statements in main(), which
changes no behaviour: every function takes cfg and times as arguments). Only
the terminal around them differs, and only where a piped session has to say
what a terminal would show:

- input(prompt) writes the prompt, reads one line and writes it back with
  its newline (the echo a terminal gives), so a session's output reads like
  its screen;
- standard input is split at "\\n" only and nothing else is translated, as
  CPython does on POSIX: a "\\r" before the "\\n" stays in the line; bytes
  that are not UTF-8 pass through unchanged (surrogateescape both ways);
- at the end of input, where P096 itself would stop with EOFError, the
  current line is finished with "\\n" and the program exits with status 0,
  printing nothing more (the explorer's documented choice).

Run: python3 p096.py < session.in > session.out
"""
import io
import sys

sys.stdin = io.TextIOWrapper(sys.stdin.buffer, encoding="utf-8", errors="surrogateescape", newline="\n")
sys.stdout = io.TextIOWrapper(sys.stdout.buffer, encoding="utf-8", errors="surrogateescape", newline="\n")


class EndOfInput(Exception):
    pass


def input(prompt):
    sys.stdout.write(prompt)
    sys.stdout.flush()
    line = sys.stdin.readline()
    if line == "":
        raise EndOfInput()
    if line.endswith("\n"):
        line = line[:-1]
    sys.stdout.write(line + "\n")
    return line


# ---- limits.eml, Python projection -------------------------------------

def quotient(a, b):
    return int((a - a % b) / b)

def fixed_window(times, limit, w):
    out = []
    current = -1
    count = 0
    for t in times:
        k = quotient(t, w)
        if k != current:
            current = k
            count = 0
        if count < limit:
            count = count + 1
            out = out + [True]
        else:
            out = out + [False]
    return out

def sliding_log(times, limit, w):
    out = []
    kept = []
    first = 0
    for t in times:
        while first < len(kept) and kept[first] <= t - w:
            first = first + 1
        if len(kept) - first < limit:
            kept = kept + [t]
            out = out + [True]
        else:
            out = out + [False]
    return out

def token_bucket(times, limit, w, size):
    tokens = size * w
    full = size * w
    last = -1
    out = []
    for t in times:
        if last >= 0:
            tokens = tokens + (t - last) * limit
            if tokens > full:
                tokens = full
        last = t
        if tokens >= w:
            tokens = tokens - w
            out = out + [True]
        else:
            out = out + [False]
    return out

def bucket_most(limit, w, size):
    tokens = size * w
    most = 0
    for t in range(0, w):
        if t > 0:
            tokens = tokens + limit
            if tokens > size * w:
                tokens = size * w
        k = quotient(tokens, w)
        most = most + k
        tokens = tokens - k * w
    return most

def busiest(times, through, w):
    ok = []
    for i in range(0, len(times)):
        if through[i]:
            ok = ok + [times[i]]
    most = 0
    at = -1
    j = 0
    for i in range(0, len(ok)):
        while ok[i] - ok[j] >= w:
            j = j + 1
        if i - j + 1 > most:
            most = i - j + 1
            at = ok[j]
    return [most, at]

def lcg_times(n, gap, seed):
    out = []
    x = seed
    t = 0
    for i in range(1, n+1):
        x = (1664525 * x + 1013904223) % 4294967296
        t = t + quotient(x, 65536) % (2 * gap + 1)
        out = out + [t]
    return out


# main.eml says "import limits" and calls limits.fixed_window(...): this
# module is its own limits.
limits = sys.modules[__name__]


# ---- main.eml, Python projection ----------------------------------------

def plain(s):
    i = 0
    j = len(s)
    while i < j and s[i] == " ":
        i = i + 1
    while j > i and s[j - 1] == " ":
        j = j - 1
    return s[i:j]

def number(s, most):
    if len(s) == 0 or len(s) > most:
        return -1
    n = 0
    for c in s:
        if not (c >= "0" and c <= "9"):
            return -1
        n = n * 10 + int(c)
    return n

def pad(s, n):
    while len(s) < n:
        s = s + " "
    return s

def seconds(n):
    if n == 1:
        return "1 second"
    return str(n) + " seconds"

def lpad(s, n):
    while len(s) < n:
        s = " " + s
    return s

def ask(prompt, low, high):
    while True:
        a = plain(input(prompt + " (" + str(low) + " to " + str(high) + ")> "))
        if a == "":
            return -1
        n = number(a, 6)
        if n >= low and n <= high:
            return n
        print("Type a whole number from " + str(low) + " to " + str(high) + ".")

def results(times, cfg):
    out = [limits.fixed_window(times, cfg[0], cfg[1]), limits.sliding_log(times, cfg[0], cfg[1]), limits.token_bucket(times, cfg[0], cfg[1], cfg[2])]
    return out

def summary(times, cfg):
    rs = results(times, cfg)
    names = ["fixed window", "sliding log", "token bucket"]
    print(str(len(times)) + " requests from second " + str(times[0]) + " to " + str(times[len(times) - 1]) + "; the limit is " + str(cfg[0]) + " per " + seconds(cfg[1]) + " (bucket of " + str(cfg[2]) + "):")
    head = "  limiter        through  refused  most in any " + str(cfg[1]) + " s"
    print(head)
    for k in range(0, 3):
        n = 0
        for b in rs[k]:
            if b:
                n = n + 1
        m = limits.busiest(times, rs[k], cfg[1])
        note = ""
        if m[0] > cfg[0]:
            note = "  over the limit, from second " + str(m[1])
        print("  " + pad(names[k], 15) + lpad(str(n), 7) + lpad(str(len(times) - n), 9) + lpad(str(m[0]), 13) + note)
    print("A fixed window starts counting again at each boundary, so a burst just before it and another just after both get through.")
    print("A token bucket bounds the burst and the rate over time, not each window: full, then spending each token as it refills, it lets " + str(limits.bucket_most(cfg[0], cfg[1], cfg[2])) + " through in " + seconds(cfg[1]) + " - the most it ever can.")
    print("The sliding log holds every " + seconds(cfg[1]) + " to " + str(cfg[0]) + ".")

def steps(times, cfg):
    rs = results(times, cfg)
    print("  request  second   fixed  sliding  bucket")
    for i in range(0, len(times)):
        if i < 40:
            row = ""
            for k in range(0, 3):
                mark = "  no"
                if rs[k][i]:
                    mark = " yes"
                row = row + lpad(mark, 8)
            print("  " + lpad(str(i + 1), 7) + lpad(str(times[i]), 8) + row)
    if len(times) > 40:
        print("  ... and " + str(len(times) - 40) + " more")

def burst(cfg):
    out = []
    for i in range(1, cfg[0]+1):
        out = out + [cfg[1] - 1]
    for i in range(1, cfg[0]+1):
        out = out + [cfg[1]]
    return out

def new_trace(times, cfg):
    print("Traces: burst (the limit's worth just before a boundary and just after), steady, random, or your own times.")
    s = plain(input("trace (burst, steady, random or own)> "))
    if s == "burst":
        out = burst(cfg)
        print(str(len(out)) + " requests: " + str(cfg[0]) + " at second " + str(cfg[1] - 1) + " and " + str(cfg[0]) + " at second " + str(cfg[1]) + ".")
        return out
    if s == "steady":
        out = []
        for i in range(0, 75):
            out = out + [4 * i]
        print("75 requests, one every 4 seconds.")
        return out
    if s == "random":
        seed = ask("seed", 0, 999999)
        if seed == -1:
            print("Cancelled.")
            return times
        out = limits.lcg_times(60, 3, seed)
        print("60 requests, each 0 to 6 seconds after the one before.")
        return out
    if s == "own":
        t = plain(input("request times in seconds, in order (2 to 60)> "))
        out = []
        w = ""
        ok = True
        for c in t + " ":
            if c == " ":
                if w != "":
                    v = number(w, 5)
                    if v < 0 or len(out) > 0 and v < out[len(out) - 1]:
                        ok = False
                    out = out + [v]
                w = ""
            else:
                w = w + c
        if ok and len(out) >= 2 and len(out) <= 60:
            print(str(len(out)) + " requests.")
            return out
        print("Type 2 to 60 whole numbers of seconds, each no earlier than the one before.")
        return times
    if s == "":
        print("Cancelled.")
    else:
        print("Type burst, steady, random or own.")
    return times

def settings(cfg):
    l = ask("requests allowed per window", 1, 100)
    if l == -1:
        print("Cancelled.")
        return cfg
    w = ask("window in seconds", 1, 3600)
    if w == -1:
        print("Cancelled.")
        return cfg
    b = ask("token bucket size, the largest burst", 1, l)
    if b == -1:
        print("Cancelled.")
        return cfg
    print(str(l) + " per " + seconds(w) + ", bucket of " + str(b) + ".")
    return [l, w, b]

def main():
    cfg = [10, 60, 10]
    times = burst(cfg)
    print("== Rate limiter ==")
    print("One list of requests, three limiters set to the same limit - and what each really lets through.")
    running = True
    while running:
        print("")
        print("1) compare  2) request by request  3) new trace  4) limits  5) quit")
        choice = plain(input("choice> "))
        if choice == "1":
            summary(times, cfg)
        elif choice == "2":
            steps(times, cfg)
        elif choice == "3":
            times = new_trace(times, cfg)
        elif choice == "4":
            cfg = settings(cfg)
        elif choice == "5":
            running = False
        else:
            print("Pick a number from 1 to 5.")
    print("Bye.")


try:
    main()
except EndOfInput:
    sys.stdout.write("\n")
sys.stdout.flush()

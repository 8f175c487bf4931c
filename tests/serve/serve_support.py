"""Helpers for the sluice serve tests: start a real `sluice serve` (and a real
nginx, a real redis-server) on free 127.0.0.1 ports, talk to it with
http.client, stop it by PID.

Environment: SLUICE_BINARY (the sluice command), SLUICE_SOURCE_DIR (the checkout),
SLUICE_MODULE_PATH (the build's sluice_module.so, for servers that load sluice's
Redis module: docs/redis.md, "The store and the module").
"""
import http.client
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import unittest

BINARY = os.environ.get("SLUICE_BINARY", "build/sluice")
SOURCE = os.environ.get("SLUICE_SOURCE_DIR", ".")
MODULE = os.environ.get("SLUICE_MODULE_PATH", "")


def module_args():
    """redis-server's arguments that load sluice's Redis module. A build
    without the module (or a test run without SLUICE_MODULE_PATH) fails the
    test, naming it; it never skips."""
    if not MODULE or not os.path.isfile(MODULE):
        raise AssertionError("sluice's Redis module is missing (SLUICE_MODULE_PATH=%r): build the sluice_module target"
                             % MODULE)
    return ["--loadmodule", MODULE]


def command_stats(text):
    """INFO commandstats as {command: (calls, failed_calls)}: "sluice.one",
    "fcall", "get", ... (a call answered with an error counts in both)."""
    out = {}
    for m in re.finditer(r"^cmdstat_([\w|.]+):calls=(\d+)(?:.*?failed_calls=(\d+))?", text, re.M):
        out[m.group(1)] = (int(m.group(2)), int(m.group(3) or 0))
    return out


def sum_stats(many):
    """command_stats of several servers, summed."""
    out = {}
    for stats in many:
        for name, (calls, failed) in stats.items():
            c, f = out.get(name, (0, 0))
            out[name] = (c + calls, f + failed)
    return out


def stats_since(before, after):
    """What ran between two command_stats of the same servers."""
    return {name: (calls - before.get(name, (0, 0))[0], failed - before.get(name, (0, 0))[1])
            for name, (calls, failed) in after.items()}


def decided_by_module(stats):
    """The module's decision commands that ran and answered (not an error,
    such as the store's probe at each login: docs/redis.md)."""
    return sum(calls - failed for name, (calls, failed) in stats.items()
               if name in ("sluice.one", "sluice.decide", "sluice.peek", "sluice.report"))


def decided_by_library(stats):
    """FCALLs that ran and answered (a first FCALL before the library is
    loaded fails, then runs again)."""
    calls, failed = stats.get("fcall", (0, 0))
    return calls - failed


class Server:
    """A running `sluice serve`; ports come from its 'listening on' lines."""

    def __init__(self, args, cwd=None, env=None):
        self.log_file = tempfile.NamedTemporaryFile(prefix="sluice-serve-", suffix=".log", delete=False)
        self.proc = subprocess.Popen([BINARY, "serve"] + args, stdout=subprocess.DEVNULL, stderr=self.log_file,
                                     cwd=cwd, env=env)
        self.port = None
        self.admin_port = None
        deadline = time.time() + 20
        while time.time() < deadline:
            text = self.log()
            if "ready" in text:
                for m in re.finditer(r"listening on http://127\.0\.0\.1:(\d+) \((\w+)\)", text):
                    if m.group(2) == "admin":
                        self.admin_port = int(m.group(1))
                    elif self.port is None:
                        self.port = int(m.group(1))
                return
            if self.proc.poll() is not None:
                raise RuntimeError("sluice serve exited %s:\n%s" % (self.proc.returncode, text))
            time.sleep(0.02)
        self.stop()
        raise RuntimeError("sluice serve did not start:\n" + self.log())

    @property
    def pid(self):
        return self.proc.pid

    def log(self):
        with open(self.log_file.name, "r", errors="replace") as f:
            return f.read()

    def signal(self, sig):
        self.proc.send_signal(sig)

    def wait_log(self, text, timeout=10):
        deadline = time.time() + timeout
        while time.time() < deadline:
            if text in self.log():
                return True
            time.sleep(0.02)
        return False

    def stop(self, timeout=15):
        """SIGTERM and wait; returns the exit status."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        return self.proc.returncode

    def conn(self, admin=False, timeout=10):
        return http.client.HTTPConnection("127.0.0.1", self.admin_port if admin else self.port, timeout=timeout)

    def request(self, method, path, body=None, headers=None, admin=False, conn=None):
        """One request; returns (status, headers dict (lower-case names), body text)."""
        c = conn or self.conn(admin)
        c.request(method, path, body=body, headers=headers or {})
        r = c.getresponse()
        data = r.read().decode("utf-8", "replace")
        hdrs = {k.lower(): v for k, v in r.getheaders()}
        if conn is None:
            c.close()
        return r.status, hdrs, data

    def decide(self, checks, cost=None, rid=None, now=None, headers=None, conn=None):
        """POST /v1/decide; a check is (policy, key) or (policy, key, its own cost)."""
        body = {"checks": [dict(zip(("policy", "key", "cost"), c)) for c in checks]}
        if cost is not None:
            body["cost"] = cost
        if rid is not None:
            body["id"] = rid
        if now is not None:
            body["now"] = now
        h = {"Content-Type": "application/json"}
        h.update(headers or {})
        status, hdrs, data = self.request("POST", "/v1/decide", json.dumps(body), h, conn=conn)
        return status, hdrs, json.loads(data)

    def metrics(self):
        status, _, data = self.request("GET", "/metrics")
        assert status == 200
        return data


def base_config(policies, rules="", server=""):
    text = '[server]\nlisten = "127.0.0.1:0"\n' + ("" if "threads" in server else "threads = 2\n") + server
    text += "\n[policies]\n"
    for name, expr in policies.items():
        text += '%s = "%s"\n' % (name, expr)
    return text + rules


class ServeCase(unittest.TestCase):
    """A test whose servers are stopped (by PID) when it ends."""

    def start(self, *args, **kw):
        s = Server(list(args), **kw)
        self.addCleanup(s.stop)
        return s

    def start_config(self, text, *extra):
        path = write_config(text)
        self.addCleanup(os.unlink, path)
        return self.start("--config", path, *extra), path


def write_config(text):
    f = tempfile.NamedTemporaryFile("w", prefix="sluice-", suffix=".toml", delete=False)
    f.write(text)
    f.close()
    return f.name


def metric(text, name_and_labels):
    """The value of one sample in a Prometheus exposition (or None)."""
    for line in text.splitlines():
        if line.startswith(name_and_labels + " "):
            return float(line.split(" ")[-1])
    return None


def wait_until(what, timeout, step=0.05):
    """Calls `what` until it returns a true value or `timeout` seconds pass;
    returns its last value."""
    deadline = time.time() + timeout
    while True:
        v = what()
        if v or time.time() > deadline:
            return v
        time.sleep(step)


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


class TlsCerts:
    """Certificates made by the `openssl` command in a temporary folder, as
    tests/support/tls_certs.cpp makes them for the C++ tests: a CA (ca.crt),
    a server certificate it signed for 127.0.0.1 and localhost (server.crt,
    server.key), a client certificate it signed (client.crt, client.key),
    a second, unrelated CA (other.crt) with a client certificate of its
    own (stranger.crt, stranger.key), and a server certificate of the first
    CA that has expired (expired.crt, expired.key). Without openssl the test
    fails; it never skips. `remove()` deletes the folder."""

    def __init__(self):
        if shutil.which("openssl") is None:
            raise RuntimeError("openssl is not in PATH (Debian package openssl)")
        self.dir = tempfile.mkdtemp(prefix="sluice-tls-")
        key = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
        try:
            for ca in ("ca", "other"):
                self._openssl(["req", "-x509"] + key + ["-keyout", ca + ".key", "-out", ca + ".crt", "-days", "2",
                                                        "-subj", "/CN=sluice-%s-ca" % ca])
            with open(self.path("server.ext"), "w") as f:
                f.write("subjectAltName=IP:127.0.0.1,DNS:localhost\n")
            with open(self.path("client.ext"), "w") as f:
                f.write("extendedKeyUsage=clientAuth\n")
            for who, ca, ext, days in (("server", "ca", "server", "2"), ("client", "ca", "client", "2"),
                                       ("stranger", "other", "client", "2"), ("expired", "ca", "server", "-1")):
                self._openssl(["req"] + key + ["-keyout", who + ".key", "-out", who + ".csr", "-subj",
                                               "/CN=sluice-" + who])
                self._openssl(["x509", "-req", "-in", who + ".csr", "-CA", ca + ".crt", "-CAkey", ca + ".key",
                               "-CAcreateserial", "-out", who + ".crt", "-days", days, "-extfile", ext + ".ext"])
        except Exception:
            self.remove()
            raise

    def _openssl(self, args):
        r = subprocess.run(["openssl"] + args, cwd=self.dir, capture_output=True, text=True, timeout=30)
        if r.returncode != 0:
            raise RuntimeError("openssl %s failed: %s" % (" ".join(args), r.stderr))

    def path(self, name):
        return os.path.join(self.dir, name)

    def read(self, name):
        with open(self.path(name), "rb") as f:
            return f.read()

    def remove(self):
        shutil.rmtree(self.dir, ignore_errors=True)


class Nginx:
    """A real nginx (Debian's) with a generated config, stopped by PID."""

    def __init__(self, conf_text, workdir):
        self.workdir = workdir
        self.conf = os.path.join(workdir, "nginx.conf")
        with open(self.conf, "w") as f:
            f.write(conf_text)
        self.proc = subprocess.Popen(["nginx", "-p", workdir, "-c", self.conf, "-g", "daemon off;"],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)

    def wait_port(self, port, timeout=10):
        wait_listening(self.proc, "nginx", port, timeout)

    def stop(self):
        stop_process(self.proc, signal.SIGQUIT)


class HAProxy:
    """A real HAProxy (Debian's) in the foreground with a generated config,
    stopped by PID. It appends X-Forwarded-For (`option forwardfor`) and
    Forwarded (`option forwarded`) lines, as nginx's sample replaces them."""

    def __init__(self, conf_text, workdir):
        if shutil.which("haproxy") is None:
            raise RuntimeError("haproxy is not installed (scripts/setup.sh installs it)")
        self.conf = os.path.join(workdir, "haproxy.cfg")
        with open(self.conf, "w") as f:
            f.write(conf_text)
        self.proc = subprocess.Popen(["haproxy", "-db", "-f", self.conf],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)

    def wait_port(self, port, timeout=10):
        wait_listening(self.proc, "haproxy", port, timeout)

    def stop(self):
        stop_process(self.proc, signal.SIGTERM)


def wait_listening(proc, name, port, timeout=10):
    """Waits until 127.0.0.1:port accepts; fails if `proc` exits first."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), 0.2).close()
            return
        except OSError:
            if proc.poll() is not None:
                raise RuntimeError("%s exited: %s" % (name, proc.stderr.read().decode()))
            time.sleep(0.05)
    raise RuntimeError("%s did not listen on %d" % (name, port))


def stop_process(proc, sig):
    """Sends `sig` to a process we started and waits for it (killed after 10 s)."""
    if proc.poll() is None:
        proc.send_signal(sig)
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    if proc.stderr is not None:
        proc.stderr.close()


class RedisServer:
    """A real redis-server on a free 127.0.0.1 port, stopped by PID. It can be
    killed (-9) and started again on the same port, or paused (SIGSTOP) and
    resumed, to fault the store under a running service. With `module`, it
    loads sluice's Redis module (module_args)."""

    def __init__(self, module=False):
        self.module_args = module_args() if module else []
        self.exe = shutil.which("redis-server")
        if self.exe is None:
            raise AssertionError("redis-server is not installed (scripts/setup.sh installs it)")
        self.dir = tempfile.mkdtemp(prefix="sluice-redis-")
        self.port = free_port()
        self.proc = None
        self.start()

    @property
    def url(self):
        return "redis://127.0.0.1:%d" % self.port

    def start(self):
        self.proc = subprocess.Popen(
            [self.exe, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
             "--dir", self.dir] + list(getattr(self, "extra", [])) + self.module_args,
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.time() + 10
        while True:
            try:
                if self.command("PING") == b"+PONG":
                    return
            except OSError:
                pass
            if time.time() > deadline or self.proc.poll() is not None:
                self.stop()
                raise AssertionError("redis-server did not start on port %d" % self.port)
            time.sleep(0.05)

    def command(self, *args, timeout=2):
        """One command in RESP. The reply: a status line as bytes with its
        sign (b"+PONG", b"-ERR ..."), an integer, a bulk string's bytes, or
        None for a nil."""
        out = b"*%d\r\n" % len(args)
        for a in args:
            a = a if isinstance(a, bytes) else str(a).encode()
            out += b"$%d\r\n%s\r\n" % (len(a), a)
        with socket.create_connection(("127.0.0.1", self.port), timeout=timeout) as c:
            c.sendall(out)
            data = b""
            deadline = time.time() + timeout
            while time.time() < deadline:
                line, sep, rest = data.partition(b"\r\n")
                if sep and line[:1] == b"$":
                    n = int(line[1:])
                    if n < 0:
                        return None
                    if len(rest) >= n + 2:
                        return rest[:n]
                elif sep:
                    return int(line[1:]) if line[:1] == b":" else line
                chunk = c.recv(65536)
                if not chunk:
                    break
                data += chunk
            raise OSError("no whole reply from redis-server on port %d" % self.port)

    def command_stats(self):
        """Its INFO commandstats (command_stats)."""
        return command_stats(self.command("INFO", "commandstats").decode())

    def kill9(self):
        """SIGKILL, and wait for it to be gone."""
        self.proc.kill()
        self.proc.wait(10)

    def pause(self):
        self.proc.send_signal(signal.SIGSTOP)

    def resume(self):
        self.proc.send_signal(signal.SIGCONT)

    def stop(self):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGCONT)  # a paused server cannot act on SIGTERM
            self.proc.terminate()
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        shutil.rmtree(self.dir, ignore_errors=True)


class TlsRedisServer(RedisServer):
    """A real redis-server with a TLS port (`tls_port`, certificate `cert` of
    `certs`: "server" or "expired"; client certificates required when
    `auth_clients`) beside its plaintext port, on which the test's own
    commands go."""

    def __init__(self, certs, cert="server", auth_clients=False):
        self.certs = certs
        self.tls_port = free_port()
        self.extra = ["--tls-port", str(self.tls_port), "--tls-cert-file", certs.path(cert + ".crt"),
                      "--tls-key-file", certs.path(cert + ".key"), "--tls-ca-cert-file", certs.path("ca.crt"),
                      "--tls-auth-clients", "yes" if auth_clients else "no"]
        super().__init__()

    def tls_url(self, userinfo="", query=None):
        q = "ca_file=" + self.certs.path("ca.crt") if query is None else query
        return "rediss://%s127.0.0.1:%d?%s" % (userinfo + "@" if userinfo else "", self.tls_port, q)


class RedisSentinels:
    """One master, one replica and three sentinels watching "mymaster", each a
    real redis-server on a free 127.0.0.1 port (the sentinels started with
    --sentinel on a config file of their own), every process stopped by PID.
    Ready once the first sentinel knows the replica and the replica is in
    sync. `master_module`, `replica_module`: that server loads sluice's Redis
    module."""

    def __init__(self, master_module=False, replica_module=False):
        self.master = RedisServer(module=master_module)
        self.replica = RedisServer(module=replica_module)
        self.sentinels = []
        try:
            self.replica.command("REPLICAOF", "127.0.0.1", self.master.port)
            for _ in range(3):
                self.sentinels.append(self._sentinel())
            deadline = time.time() + 20
            while time.time() < deadline:
                info = self.replica.command("INFO", "replication")
                known = self.sentinel_command(0, "SENTINEL", "replicas", "mymaster")
                if isinstance(info, bytes) and b"master_link_status:up" in info and known:
                    return
                time.sleep(0.05)
            raise AssertionError("sentinel deployment: the replica was not seen in sync within 20 s")
        except BaseException:
            self.stop()
            raise

    def _sentinel(self):
        d = tempfile.mkdtemp(prefix="sluice-sentinel-")
        port = free_port()
        conf = os.path.join(d, "sentinel.conf")
        with open(conf, "w") as f:
            f.write("port %d\nbind 127.0.0.1\ndir %s\n" % (port, d))
            f.write("sentinel monitor mymaster 127.0.0.1 %d 2\n" % self.master.port)
            f.write("sentinel down-after-milliseconds mymaster 1000\nsentinel failover-timeout mymaster 5000\n")
        proc = subprocess.Popen([shutil.which("redis-server"), conf, "--sentinel"], stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL)
        s = {"port": port, "proc": proc, "dir": d}
        deadline = time.time() + 10
        while time.time() < deadline:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=1):
                    return s
            except OSError:
                time.sleep(0.05)
        proc.kill()
        raise AssertionError("redis-server --sentinel did not start on port %d" % port)

    def sentinel_command(self, i, *args):
        """One command to sentinel i: a crude RESP read that is enough to tell
        an empty array (falsy) from a reply with content (truthy bytes)."""
        out = b"*%d\r\n" % len(args)
        for a in args:
            a = str(a).encode()
            out += b"$%d\r\n%s\r\n" % (len(a), a)
        with socket.create_connection(("127.0.0.1", self.sentinels[i]["port"]), timeout=2) as c:
            c.sendall(out)
            data = c.recv(65536)
        return b"" if data.startswith(b"*0") else data

    @property
    def url(self):
        return "redis+sentinel://" + ",".join("127.0.0.1:%d" % s["port"] for s in self.sentinels) + "/mymaster"

    def master_port(self):
        """The master's port as the first sentinel reports it."""
        data = self.sentinel_command(0, "SENTINEL", "get-master-addr-by-name", "mymaster")
        return int(data.split(b"\r\n")[-2])

    def command_stats(self):
        """INFO commandstats of the master and the replica, summed (each
        counts what ran on it while it was the master)."""
        return sum_stats([self.master.command_stats(), self.replica.command_stats()])

    def stop(self):
        for s in self.sentinels:
            if s["proc"].poll() is None:
                s["proc"].terminate()
                try:
                    s["proc"].wait(5)
                except subprocess.TimeoutExpired:
                    s["proc"].kill()
                    s["proc"].wait()
            shutil.rmtree(s["dir"], ignore_errors=True)
        self.sentinels = []
        self.replica.stop()
        self.master.stop()


class RedisCluster:
    """A real Redis Cluster: 3 primaries + 3 replicas on free 127.0.0.1 ports
    (each with its bus port, port + 10000, free too), created with redis-cli
    --cluster create, every node stopped by PID. The nodes in `module_nodes`
    (by start order: the primaries first) load sluice's Redis module."""

    def __init__(self, primaries=3, replicas=1, module_nodes=()):
        self.module_nodes = set(module_nodes)
        exe, cli = shutil.which("redis-server"), shutil.which("redis-cli")
        if exe is None or cli is None:
            raise AssertionError("redis-server and redis-cli must be installed (scripts/setup.sh)")
        self.cli = cli
        self.dir = tempfile.mkdtemp(prefix="sluice-cluster-")
        self.procs, self.ports = [], []
        try:
            for i in range(primaries * (1 + replicas)):
                self.start_node(exe, i)
            out = subprocess.run([cli, "--cluster", "create"] + ["127.0.0.1:%d" % p for p in self.ports] +
                                 ["--cluster-replicas", str(replicas), "--cluster-yes"],
                                 capture_output=True, text=True, timeout=60)
            if out.returncode != 0 or "All 16384 slots covered" not in out.stdout:
                raise AssertionError("redis-cli --cluster create failed: " + out.stdout[-800:] + out.stderr)
            self.wait_ready()
        except BaseException:
            self.stop()
            raise

    @staticmethod
    def bus_port():
        for _ in range(200):
            port = free_port()
            if port > 55535:
                continue
            with socket.socket() as s:
                try:
                    s.bind(("127.0.0.1", port + 10000))
                    return port
                except OSError:
                    continue
        raise AssertionError("no free port with a free cluster bus port")

    def start_node(self, exe, i):
        node_dir = os.path.join(self.dir, str(i))
        os.mkdir(node_dir)
        for _ in range(8):
            port = self.bus_port()
            proc = subprocess.Popen(
                [exe, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
                 "--dir", node_dir, "--cluster-enabled", "yes", "--cluster-node-timeout", "1000",
                 "--repl-diskless-sync-delay", "0", "--shutdown-timeout", "0"] +
                (module_args() if i in self.module_nodes else []),
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            self.procs.append(proc)
            if self.answers(port, proc):
                self.ports.append(port)
                return
        raise AssertionError("a cluster node did not start")

    def answers(self, port, proc):
        deadline = time.time() + 10
        while time.time() < deadline and proc.poll() is None:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=1) as c:
                    c.sendall(b"PING\r\n")
                    if c.recv(16).startswith(b"+PONG"):
                        return True
            except OSError:
                pass
            time.sleep(0.05)
        return False

    def run_cli(self, *args):
        return subprocess.run([self.cli] + list(args), capture_output=True, text=True, timeout=20).stdout

    def wait_ready(self):
        deadline = time.time() + 30
        while time.time() < deadline:
            ok = all("cluster_state:ok" in self.run_cli("-p", str(p), "cluster", "info") for p in self.ports)
            if ok:
                check = self.run_cli("--cluster", "check", "127.0.0.1:%d" % self.ports[0])
                if "All nodes agree" in check and "All 16384 slots covered" in check and "[WARNING]" not in check:
                    return
            time.sleep(0.05)
        raise AssertionError("the cluster was not ready within 30 s")

    @property
    def url(self):
        return "redis+cluster://" + ",".join("127.0.0.1:%d" % p for p in self.ports)

    def owner_port(self, key):
        """The port of the primary that serves `key`'s hash slot now."""
        slot = int(self.run_cli("-p", str(self.ports[0]), "cluster", "keyslot", key).strip())
        for line in self.run_cli("-p", str(self.ports[0]), "cluster", "nodes").splitlines():
            f = line.split()
            if "master" not in f[2]:
                continue
            for r in f[8:]:
                lo, _, hi = r.partition("-")
                if lo.isdigit() and int(lo) <= slot <= int(hi or lo):
                    return int(f[1].split("@")[0].split(":")[1])
        raise AssertionError("no primary serves slot %d" % slot)

    def command_stats(self, port=None):
        """INFO commandstats of the node on `port`, or of every running node
        summed."""
        if port is not None:
            return command_stats(self.run_cli("-p", str(port), "info", "commandstats"))
        return sum_stats([self.command_stats(p) for proc, p in zip(self.procs, self.ports) if proc.poll() is None])

    def signal(self, port, sig):
        """Sends `sig` (SIGSTOP, SIGCONT) to the node on `port`, by its PID."""
        for proc, p in zip(self.procs, self.ports):
            if p == port:
                os.kill(proc.pid, sig)
                return
        raise AssertionError("no node on port %d" % port)

    def stop(self):
        for proc in self.procs:
            if proc.poll() is None:
                proc.terminate()
        for proc in self.procs:
            try:
                proc.wait(5)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        shutil.rmtree(self.dir, ignore_errors=True)

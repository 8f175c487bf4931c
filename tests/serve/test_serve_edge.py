"""The edge of sluice serve: what the HTTP front end lets through.

semantics.md, "On the wire (HTTP)": the path the rules see is the path that
is served (every spelling of one path counted as that path, through a real
nginx and directly), HTTP/1.1 framing as RFC 9112 says (raw sockets, one
case a test), the bearer token on /v1/authorize, and shadow rules that never
deny. Each TestCase class is one ctest test (tests/serve/CMakeLists.txt).
"""
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from serve_support import BINARY, SOURCE, Nginx, ServeCase, base_config, free_port, metric  # noqa: E402


def raw_exchange(port, data, timeout=5):
    """Sends bytes on a new connection and reads until the server closes it
    (or `timeout`). Returns (bytes read, whether the server closed)."""
    s = socket.create_connection(("127.0.0.1", port), timeout)
    s.sendall(data)
    got = b""
    closed = False
    deadline = time.time() + timeout
    try:
        while time.time() < deadline:
            chunk = s.recv(65536)
            if not chunk:
                closed = True
                break
            got += chunk
    except socket.timeout:
        pass
    except ConnectionResetError:
        closed = True
    s.close()
    return got, closed


def responses(data):
    """The status codes of the HTTP responses in `data`, in order."""
    return [int(m.group(1)) for m in re.finditer(rb"HTTP/1\.[01] (\d{3}) ", data)]


def field(data, name):
    """The value of the first header `name` in the first response of `data`."""
    head = data.split(b"\r\n\r\n", 1)[0].decode("latin-1")
    for line in head.split("\r\n")[1:]:
        k, _, v = line.partition(":")
        if k.strip().lower() == name.lower():
            return v.strip()
    return None


def authorize(port, uri=None, headers=(), target="/v1/authorize", method="GET"):
    """One /v1/authorize on its own connection, headers as (name, value)
    pairs (repeats allowed). Returns (status, {lower-case name: value})."""
    req = "%s %s HTTP/1.1\r\nHost: sluice.test\r\nConnection: close\r\n" % (method, target)
    if uri is not None:
        req += "X-Original-URI: %s\r\n" % uri
    for k, v in headers:
        req += "%s: %s\r\n" % (k, v)
    data, _ = raw_exchange(port, (req + "\r\n").encode("latin-1"))
    st = responses(data)
    head = data.split(b"\r\n\r\n", 1)[0].decode("latin-1").split("\r\n")[1:]
    return (st[0] if st else None), {k.strip().lower(): v.strip() for k, _, v in (h.partition(":") for h in head)}


def remaining(h, policy):
    """The r of one policy's member of a RateLimit field, or None."""
    m = re.search(r'"%s";r=(\d+)' % re.escape(policy), h.get("ratelimit", ""))
    return int(m.group(1)) if m else None


# Every spelling of /api/items, as a client may send it (curl --path-as-is).
SPELLINGS = [
    "/api/items",
    "//api/items",
    "/api//items",
    "///api///items",
    "/%61pi/items",
    "/%61%70%69/%69%74%65%6d%73",
    "/api/ite%6ds",
    "/api/ite%6Ds",
    "/x/../api/items",
    "/x/y/../../api/items",
    "/x/%2e%2e/api/items",
    "/x/%2E%2E/api/items",
    "/x/.%2e/api/items",
    "/./api/items",
    "/api/./items",
    "/api/%2e/items",
    "/api/items/../items",
    "/a//../api/items",
    "/api/items?x=1",
    "/api/items?",
    "/api/items?next=/../../admin",
]

# Spellings that cannot be normalised safely: an invalid answer, never a pass.
INVALID = [
    "/api%2Fitems",
    "/api%2fitems",
    "/api/%00items",
    "/api/items%0d%0aX-Api-Key:%20victim",
    "/api/%zzitems",
    "/api/items%6",
    "/api/items%",
    "/../api/items",
    "/api/../../api/items",
    "/%2e%2e/api/items",
    "/api%5citems",
    "/api\\items",
    "/api/items#frag",
    "/x/..;/api/items",
    "/x/.;/api/items",
    "api/items",
    "*",
]

PATH_RULES = """
[[rules]]
name = "api"
policy = "api"
path_prefix = "/api/"
key = "literal:all"

[[rules]]
name = "per item"
policy = "item"
path_prefix = "/api/"
key = "path:2"

[[rules]]
name = "per user"
policy = "user"
path_prefix = "/q/"
key = "query:user"

[[rules]]
name = "per key"
policy = "per_key"
key = "header:X-Api-Key"
"""
PATH_POLICIES = {"api": "fixed-window 1000/1h", "item": "fixed-window 1000/1h", "user": "fixed-window 1000/1h",
                 "per_key": "fixed-window 1000/1h"}


class PathSpellings(ServeCase):
    """Directly: X-Original-URI spelled every way is one path and one key."""

    def setUp(self):
        self.s, _ = self.start_config(base_config(PATH_POLICIES, PATH_RULES))

    def test_every_spelling_of_a_path_is_that_path_and_its_segment_key(self):
        for i, uri in enumerate(SPELLINGS):
            st, h = authorize(self.s.port, uri)
            self.assertEqual(st, 204, uri)
            # Both rules matched, and the path:2 key is "items" for every spelling (one state).
            self.assertEqual((remaining(h, "api"), remaining(h, "item")), (999 - i, 999 - i), uri)

    def test_an_absolute_form_uri_is_its_path(self):
        st, h = authorize(self.s.port, "http://example.com/%61pi//items?x=1")
        self.assertEqual((st, remaining(h, "item")), (204, 999))
        st, h = authorize(self.s.port, "/api/items")
        self.assertEqual((st, remaining(h, "item")), (204, 998))

    def test_a_path_that_cannot_be_normalised_is_invalid_and_charges_nothing(self):
        for uri in INVALID:
            st, h = authorize(self.s.port, uri)
            self.assertEqual((st, h.get("x-sluice-decision")), (403, "invalid"), uri)
        st, h = authorize(self.s.port, "/api/items")
        self.assertEqual((st, remaining(h, "api"), remaining(h, "item")), (204, 999, 999))

    def test_an_invalid_path_does_not_matter_to_a_rule_that_does_not_read_it(self):
        # Here every rule but "per key" has a path_prefix, so it reads the path: invalid.
        st, h = authorize(self.s.port, "/other%2Fthing", [("X-Api-Key", "k")])
        self.assertEqual((st, h.get("x-sluice-decision")), (403, "invalid"))
        only_key, _ = self.start_config(base_config({"per_key": "fixed-window 5/1h"},
                                                    '[[rules]]\npolicy = "per_key"\nkey = "header:X-Api-Key"\n'))
        st, h = authorize(only_key.port, "/other%2Fthing", [("X-Api-Key", "k")])
        self.assertEqual((st, remaining(h, "per_key")), (204, 4))

    def test_the_endpoint_itself_is_routed_by_its_normalised_path(self):
        for target in ["//v1/authorize", "/v1/./authorize", "/x/../v1/authorize", "/v1/%61uthorize",
                       "http://sluice.test/v1/authorize"]:
            st, h = authorize(self.s.port, "/api/items", target=target)
            self.assertEqual(st, 204, target)
        st, _ = authorize(self.s.port, "/api/items", target="/v1%2Fauthorize")
        self.assertEqual(st, 400)

    def test_query_values_are_decoded_and_one_name_given_twice_is_invalid(self):
        for i, q in enumerate(["user=alice", "user=%61lice", "user=al%69ce", "us%65r=alice", "x=%zz&user=alice",
                               "user=alice&other=1"]):
            st, h = authorize(self.s.port, "/q/x?" + q)
            self.assertEqual((st, remaining(h, "user")), (204, 999 - i), q)
        st, h = authorize(self.s.port, "/q/x?user=a+b")
        self.assertEqual(remaining(h, "user"), 999)
        st, h = authorize(self.s.port, "/q/x?user=a%20b")
        self.assertEqual(remaining(h, "user"), 998)  # the same user as "a+b"
        for q in ["user=fresh&user=alice", "user=fresh&us%65r=alice", "user=%zz", "us%zzer=x", "user=alice#x"]:
            st, h = authorize(self.s.port, "/q/x?" + q)
            self.assertEqual((st, h.get("x-sluice-decision")), (403, "invalid"), q)
        st, h = authorize(self.s.port, "/q/x?user=alice")
        self.assertEqual(remaining(h, "user"), 993)  # six before, none of the invalid ones

    def test_a_semicolon_in_a_query_a_rule_reads_is_invalid(self):
        st, h = authorize(self.s.port, "/q/x?user=bob")
        self.assertEqual((st, remaining(h, "user")), (204, 999))
        # Some backends split at ';' as at '&': to them these are bob, or ambiguous.
        for q in ["user=x1;user=bob", "user=bob;x=1", "x=1;user=bob", "x=1;y=2&user=bob", "user=bob&x=;"]:
            st, h = authorize(self.s.port, "/q/x?" + q)
            self.assertEqual((st, h.get("x-sluice-decision")), (403, "invalid"), q)
        st, h = authorize(self.s.port, "/q/x?user=bob")
        self.assertEqual((st, remaining(h, "user")), (204, 998))  # none of those was charged
        st, h = authorize(self.s.port, "/q/x?user=a%3Bb")  # an encoded ';' is part of the value
        self.assertEqual((st, remaining(h, "user")), (204, 999))
        # A rule that reads no query parameter does not look at the query.
        st, h = authorize(self.s.port, "/api/items?a=1;b=2")
        self.assertEqual((st, remaining(h, "api")), (204, 999))

    def test_a_header_a_rule_reads_given_twice_is_invalid(self):
        st, h = authorize(self.s.port, "/", [("X-Api-Key", "fresh"), ("X-Api-Key", "alice")])
        self.assertEqual((st, h.get("x-sluice-decision")), (403, "invalid"))
        st, h = authorize(self.s.port, None, [("X-Original-URI", "/api/items")])
        self.assertEqual(st, 204)
        st, h = authorize(self.s.port, "/other", [("X-Original-URI", "/api/items")])
        self.assertEqual((st, h.get("x-sluice-decision")), (403, "invalid"))  # two X-Original-URI

    def test_a_path_prefix_that_is_not_normalised_is_a_configuration_error(self):
        for prefix, message in [("/api//", "write it as '/api/'"), ("/%61pi/", "write it as '/api/'"),
                                ("/x/../api", "write it as '/api'"), ("/api%2F", "no path a request can have")]:
            path = os.path.join(tempfile.mkdtemp(prefix="sluice-edge-"), "c.toml")
            self.addCleanup(shutil.rmtree, os.path.dirname(path))
            with open(path, "w") as f:
                f.write(base_config({"api": "fixed-window 1/1h"},
                                    '[[rules]]\npolicy = "api"\npath_prefix = "%s"\n' % prefix))
            out = subprocess.run([BINARY, "serve", "--check", path], capture_output=True, text=True, timeout=20)
            self.assertEqual(out.returncode, 2, out.stderr)
            self.assertIn("path_prefix", out.stderr)
            self.assertIn(message, out.stderr)


def start_sample_nginx(case, sluice_port, token=None):
    """A real nginx running the shipped etc/nginx-sluice.conf in front of
    sluice (ports, paths and the token replaced), serving html/api/items.
    Returns nginx's port."""
    if shutil.which("nginx") is None:
        case.fail("nginx is not installed (scripts/setup.sh installs nginx-light)")
    work = tempfile.mkdtemp(prefix="sluice-nginx-")
    os.chmod(work, 0o755)  # nginx's workers run as another user
    case.addCleanup(shutil.rmtree, work)
    os.makedirs(os.path.join(work, "html", "api"))
    os.makedirs(os.path.join(work, "html", "q"))
    os.makedirs(os.path.join(work, "logs"))
    for d in (work, os.path.join(work, "html"), os.path.join(work, "html", "api")):
        os.chmod(d, 0o755)
    with open(os.path.join(work, "html", "index.html"), "w") as f:
        f.write("index\n")
    with open(os.path.join(work, "html", "api", "items"), "w") as f:
        f.write("the items\n")
    port = free_port()
    with open(os.path.join(SOURCE, "etc", "nginx-sluice.conf")) as f:
        conf = f.read()
    case.assertIn("CHANGE-ME", conf)
    conf = (conf.replace("127.0.0.1:8080", "127.0.0.1:%d" % sluice_port)
            .replace("127.0.0.1:8000", "127.0.0.1:%d" % port)
            .replace("/run/nginx-sluice.pid", os.path.join(work, "nginx.pid"))
            .replace("/var/log/nginx/sluice-error.log", os.path.join(work, "logs", "error.log"))
            .replace("/var/www/html", os.path.join(work, "html"))
            .replace("CHANGE-ME", token or "no-token-set"))
    ngx = Nginx(conf, work)
    case.addCleanup(ngx.stop)
    ngx.wait_port(port)
    return port


def via_nginx(port, target, headers=()):
    """One request to nginx with the target exactly as given (--path-as-is).
    Returns (status, headers dict, body)."""
    req = "GET %s HTTP/1.1\r\nHost: www.test\r\nConnection: close\r\n" % target
    for k, v in headers:
        req += "%s: %s\r\n" % (k, v)
    data, _ = raw_exchange(port, (req + "\r\n").encode("latin-1"))
    head, _, body = data.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    st = int(lines[0].split(" ")[1]) if lines and lines[0].startswith("HTTP/") else None
    return st, {k.strip().lower(): v.strip() for k, _, v in (h.partition(":") for h in lines[1:])}, body


NGINX_SERVER = """
trusted_proxies = ["127.0.0.1"]
forwarded_header = "X-Real-IP"
"""


class NginxEdge(ServeCase):
    """Through a real nginx running the shipped configuration."""

    def test_every_spelling_nginx_serves_is_counted_as_the_path_it_serves(self):
        s, _ = self.start_config(base_config(PATH_POLICIES, PATH_RULES, NGINX_SERVER + "threads = 1\n"))
        port = start_sample_nginx(self, s.port)
        # nginx 1.22 serves html/api/items for every spelling; each is counted as /api/items.
        for i, uri in enumerate(SPELLINGS):
            st, h, body = via_nginx(port, uri)
            self.assertEqual((st, body), (200, b"the items\n"), uri)
            self.assertEqual((remaining(h, "api"), remaining(h, "item")), (999 - i, 999 - i), uri)
        counted = len(SPELLINGS)
        # nginx refuses some of these itself (400); sluice answers the rest invalid (403).
        for uri in INVALID:
            st, h, body = via_nginx(port, uri)
            self.assertIn(st, (400, 403), (uri, st, body))
            self.assertNotEqual(body, b"the items\n", uri)
        # Nothing of those was charged: the next request is the next count.
        st, h, _ = via_nginx(port, "/api/items")
        self.assertEqual((st, remaining(h, "api")), (200, 999 - counted))

    def test_crlf_in_the_path_injects_no_header_into_the_subrequest(self):
        s, _ = self.start_config(base_config(PATH_POLICIES, PATH_RULES, NGINX_SERVER + "threads = 1\n"))
        port = start_sample_nginx(self, s.port)
        for uri in ["/api/items%0d%0aX-Api-Key:%20victim", "/x%0d%0aX-Api-Key:%20victim%0d%0a"]:
            st, _, body = via_nginx(port, uri)
            self.assertIn(st, (400, 403), uri)
        st, h, _ = via_nginx(port, "/", [("X-Api-Key", "victim")])
        self.assertEqual((st, remaining(h, "per_key")), (200, 999))  # victim's first request

    def test_nginx_sends_the_token_and_a_client_without_it_spends_nothing(self):
        s, _ = self.start_config(base_config(PATH_POLICIES, PATH_RULES,
                                             NGINX_SERVER + 'threads = 1\ntoken = "t0ken-for-nginx"\n'))
        port = start_sample_nginx(self, s.port, token="t0ken-for-nginx")
        st, h, body = via_nginx(port, "/api/items", [("Authorization", "Bearer forged")])
        self.assertEqual((st, body, remaining(h, "api")), (200, b"the items\n", 999))
        # A client reaching sluice itself, without the token: 401, nothing charged.
        st, h = authorize(s.port, "/api/items")
        self.assertEqual((st, h.get("www-authenticate")), (401, 'Bearer realm="sluice"'))
        st, h, _ = via_nginx(port, "/api/items")
        self.assertEqual((st, remaining(h, "api")), (200, 998))

    def test_an_http_1_0_request_without_host_is_served(self):
        # nginx's $host is then its server_name; without one it sent sluice an empty Host (a 500).
        s, _ = self.start_config(base_config(PATH_POLICIES, PATH_RULES, NGINX_SERVER + "threads = 1\n"))
        port = start_sample_nginx(self, s.port)
        for _ in range(2):
            data, _ = raw_exchange(port, b"GET /api/items HTTP/1.0\r\n\r\n")
            self.assertEqual(responses(data), [200], data)
            self.assertTrue(data.endswith(b"the items\n"), data)
        st, h, _ = via_nginx(port, "/api/items")
        self.assertEqual((st, remaining(h, "api")), (200, 997))  # each counted once

    def test_nginx_with_the_wrong_token_is_refused_and_charges_nothing(self):
        s, _ = self.start_config(base_config(PATH_POLICIES, PATH_RULES,
                                             NGINX_SERVER + 'threads = 1\ntoken = "the-real-one"\n'))
        port = start_sample_nginx(self, s.port, token="another")
        st, _, body = via_nginx(port, "/api/items")
        self.assertEqual(st, 401)
        self.assertNotEqual(body, b"the items\n")
        self.assertEqual(metric(s.metrics(), 'sluice_decisions_total{policy="api",result="allowed"}'), 0)


class AuthorizeToken(ServeCase):
    def setUp(self):
        self.s, _ = self.start_config(base_config({"api": "fixed-window 5/1h"},
                                                  '[[rules]]\npolicy = "api"\nkey = "literal:all"\n',
                                                  'token = "s3cret"\n'))

    def test_without_the_token_401_and_nothing_charged(self):
        for headers in ([], [("Authorization", "Bearer wrong")], [("Authorization", "s3cret")],
                        [("Authorization", "Basic czNjcmV0")]):
            st, h = authorize(self.s.port, "/x", headers)
            self.assertEqual((st, h.get("x-sluice-decision")), (401, "unauthorized"), headers)
            self.assertEqual(h.get("www-authenticate"), 'Bearer realm="sluice"')
            self.assertEqual(h.get("content-length"), "0")
        st, h = authorize(self.s.port, "/x", [("Authorization", "Bearer s3cret")])
        self.assertEqual((st, remaining(h, "api")), (204, 4))

    def test_decide_still_needs_it(self):
        st, _, _ = self.s.decide([("api", "k")])
        self.assertEqual(st, 401)
        st, _, b = self.s.decide([("api", "k")], headers={"Authorization": "Bearer s3cret"})
        self.assertEqual((st, b["remaining"]), (200, 4))


class Framing(ServeCase):
    """RFC 9112 framing, one case a test, each on raw sockets. The smuggled
    request in each is a GET /healthz that must never be answered."""

    SMUGGLED = b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"
    BODY = b'{"policy":"api","key":"k"}'

    def setUp(self):
        self.s, _ = self.start_config(base_config({"api": "fixed-window 100/1h"}, server="threads = 1\n"))

    def refused(self, head, body=b""):
        data, closed = raw_exchange(self.s.port, head + b"\r\n" + body + self.SMUGGLED)
        self.assertEqual(responses(data), [400], data)
        self.assertEqual(field(data, "Connection"), "close")
        self.assertTrue(closed, "the connection stays open after a framing error")
        return data

    def post(self, fields):
        return b"POST /v1/decide HTTP/1.1\r\nHost: x\r\n" + b"".join(f + b"\r\n" for f in fields)

    def test_chunked_then_identity_is_400_and_closed(self):
        self.refused(self.post([b"Transfer-Encoding: chunked, identity"]), b"1a\r\n" + self.BODY + b"\r\n0\r\n\r\n")

    def test_identity_alone_is_400_and_closed(self):
        self.refused(self.post([b"Transfer-Encoding: identity"]))

    def test_gzip_then_chunked_is_400_and_closed(self):
        self.refused(self.post([b"Transfer-Encoding: gzip, chunked"]), b"0\r\n\r\n")

    def test_gzip_alone_is_400_and_closed(self):
        self.refused(self.post([b"Transfer-Encoding: gzip"]))

    def test_two_transfer_encoding_fields_are_400_and_closed(self):
        self.refused(self.post([b"Transfer-Encoding: gzip", b"Transfer-Encoding: chunked"]), b"0\r\n\r\n")

    def test_transfer_encoding_on_http_1_0_is_400_and_closed(self):
        self.refused(b"POST /v1/decide HTTP/1.0\r\nHost: x\r\nTransfer-Encoding: chunked\r\n",
                     b"1a\r\n" + self.BODY + b"\r\n0\r\n\r\n")

    def test_content_length_and_chunked_is_400_and_closed(self):
        self.refused(self.post([b"Content-Length: 26", b"Transfer-Encoding: chunked"]), b"0\r\n\r\n")

    def test_chunked_and_content_length_is_400_and_closed(self):
        self.refused(self.post([b"Transfer-Encoding: chunked", b"Content-Length: 5"]), b"0\r\n\r\n")

    def test_identity_and_content_length_is_400_and_closed(self):
        self.refused(self.post([b"Transfer-Encoding: identity", b"Content-Length: 26"]), self.BODY)

    def test_two_equal_content_lengths_are_400_and_closed(self):
        self.refused(self.post([b"Content-Length: 26", b"Content-Length: 26"]), self.BODY)

    def test_a_content_length_list_is_400_and_closed(self):
        self.refused(self.post([b"Content-Length: 26, 26"]), self.BODY)

    def test_conflicting_content_lengths_are_400_and_closed(self):
        self.refused(self.post([b"Content-Length: 26", b"Content-Length: 0"]), self.BODY)

    def test_a_content_length_that_is_no_number_is_400_and_closed(self):
        self.refused(self.post([b"Content-Length: +26"]), self.BODY)

    def test_http_1_1_without_host_is_400(self):
        self.refused(b"GET /healthz HTTP/1.1\r\n")

    def test_two_hosts_are_400(self):
        self.refused(b"GET /healthz HTTP/1.1\r\nHost: a\r\nHost: b\r\n")

    def test_a_host_that_is_no_host_is_400(self):
        for host in [b"a b", b"a/b", b"a@b", b"[::1", b"h:x"]:
            with self.subTest(host=host):
                self.refused(b"GET /healthz HTTP/1.1\r\nHost: " + host + b"\r\n")

    def test_http_1_0_without_host_is_answered(self):
        data, _ = raw_exchange(self.s.port, b"GET /healthz HTTP/1.0\r\n\r\n")
        self.assertEqual(responses(data), [200])

    def test_an_empty_host_is_answered_not_a_500(self):
        # RFC 9112 3.2 allows an empty Host (nginx's sample sent none at all
        # for an HTTP/1.0 request without one: a 400 above, which nginx turned into a 500).
        for host in [b"Host:\r\n", b"Host: \r\n"]:
            data, _ = raw_exchange(self.s.port, b"GET /healthz HTTP/1.1\r\n" + host + b"Connection: close\r\n\r\n")
            self.assertEqual(responses(data), [200], host)

    def test_chunked_alone_is_decided_and_the_connection_kept(self):
        body = b"1a\r\n" + self.BODY + b"\r\n0\r\n\r\n"
        data, _ = raw_exchange(self.s.port, self.post([b"Transfer-Encoding: Chunked"]) + b"\r\n" + body +
                               b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        self.assertEqual(responses(data), [200, 200])

    def test_an_absolute_form_target_is_routed_by_its_path(self):
        data, _ = raw_exchange(self.s.port, b"POST http://sluice.test/v1/decide HTTP/1.1\r\nHost: x\r\n"
                               b"Content-Length: 26\r\nConnection: close\r\n\r\n" + self.BODY)
        self.assertEqual(responses(data), [200], data)
        self.assertIn(b'"remaining":99', data)


class AbsoluteFormHost(ServeCase):
    def test_the_host_of_an_absolute_form_target_replaces_host(self):
        s, _ = self.start_config(base_config({"api": "fixed-window 5/1h"},
                                             '[[rules]]\npolicy = "api"\nhost = "example.com"\nkey = "host"\n',
                                             "threads = 1\n"))
        data, _ = raw_exchange(s.port, b"GET http://Example.com:8080/v1/authorize HTTP/1.1\r\nHost: other\r\n"
                               b"Connection: close\r\n\r\n")
        self.assertEqual(responses(data), [204])
        self.assertIn('"api";r=4', field(data, "RateLimit"))
        data, _ = raw_exchange(s.port, b"GET /v1/authorize HTTP/1.1\r\nHost: other\r\nConnection: close\r\n\r\n")
        self.assertEqual((responses(data), field(data, "RateLimit")), ([204], None))


class Drain(ServeCase):
    def test_requests_received_before_sigterm_are_answered_then_closed(self):
        s, _ = self.start_config(base_config({"api": "fixed-window 1000/1h"}, server="threads = 1\n"))
        body = b'{"policy":"api","key":"k"}'
        req = b"POST /v1/decide HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body)
        kept = [socket.create_connection(("127.0.0.1", s.port), 5) for _ in range(10)]
        for c in kept:  # each kept alive after one request
            c.sendall(req)
            self.assertTrue(c.recv(65536).startswith(b"HTTP/1.1 200"))
        idle = socket.create_connection(("127.0.0.1", s.port), 5)
        # Stopped, the server reads nothing: the requests wait in its sockets
        # (the new connections in its accept queue), and so does SIGTERM.
        s.signal(signal.SIGSTOP)
        try:
            fresh = [socket.create_connection(("127.0.0.1", s.port), 5) for _ in range(10)]
            for c in kept + fresh:
                c.sendall(req)
            time.sleep(0.1)
            s.signal(signal.SIGTERM)
        finally:
            s.signal(signal.SIGCONT)
        for c in kept + fresh:
            data, closed = b"", False
            try:
                while True:
                    chunk = c.recv(65536)
                    if not chunk:
                        closed = True
                        break
                    data += chunk
            except ConnectionResetError:
                pass
            self.assertEqual(responses(data), [200], data)
            self.assertTrue(closed)
            c.close()
        self.assertEqual(idle.recv(10), b"")  # nothing received: closed
        idle.close()
        self.assertEqual(s.proc.wait(10), 0)

    def test_1000_pipelined_requests_then_sigterm_are_all_answered_and_charged_once(self):
        snap = tempfile.mkdtemp(prefix="sluice-drain-")
        self.addCleanup(shutil.rmtree, snap)
        s, path = self.start_config(base_config({"api": "quota 100000"}, server="threads = 1\n"), "--snapshot", snap)
        body = b'{"policy":"api","key":"k"}'
        req = b"POST /v1/decide HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body)
        c = socket.create_connection(("127.0.0.1", s.port), 5)
        got = []

        def read_all():  # while the requests go out: the answers must not fill the socket's buffers
            deadline = time.time() + 60
            try:
                while time.time() < deadline:
                    chunk = c.recv(1 << 16)
                    if not chunk:
                        return
                    got.append(chunk)
            except OSError:
                pass

        reader = threading.Thread(target=read_all)
        reader.start()
        c.sendall(req * 1000)
        s.signal(signal.SIGTERM)
        reader.join(70)
        c.close()
        self.assertEqual(s.proc.wait(20), 0)
        data = b"".join(got)
        self.assertEqual(responses(data), [200] * 1000)
        last = b"HTTP/1.1 " + data.rsplit(b"HTTP/1.1 ", 1)[-1]
        self.assertEqual(field(last, "Connection"), "close")  # the last answer closes
        # Charged exactly for the 1,000 admits: the snapshot's state answers the 1,001st.
        again = self.start("--config", path, "--snapshot", snap)
        st, _, b = again.decide([("api", "k")])
        self.assertEqual((st, b["remaining"]), (200, 100000 - 1001))

    def test_a_response_after_sigterm_says_connection_close(self):
        s, _ = self.start_config(base_config({"api": "fixed-window 1000/1h"}, server="threads = 1\n"))
        c = socket.create_connection(("127.0.0.1", s.port), 5)
        c.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        self.assertEqual(field(c.recv(65536), "Connection"), None)  # kept alive
        c.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n")  # the next request, in part
        time.sleep(0.1)
        s.signal(signal.SIGTERM)
        self.assertTrue(s.wait_log("draining"))
        c.sendall(b"\r\n")
        data = c.recv(65536)
        self.assertEqual((responses(data), field(data, "Connection")), ([200], "close"))
        self.assertEqual(c.recv(10), b"")
        c.close()
        self.assertEqual(s.proc.wait(10), 0)


SHADOW_POLICIES = {"api": "fixed-window 2/1h", "small": "token-bucket 1/1h burst=3", "watch": "fixed-window 1/1h"}


class ShadowNeverDenies(ServeCase):
    def shadow_case(self, shadow_rule, server="", api=None):
        rules = '[[rules]]\nname = "enforced"\npolicy = "api"\nkey = "literal:all"\n\n' + shadow_rule
        policies = dict(SHADOW_POLICIES, **({"api": api} if api else {}))
        s, _ = self.start_config(base_config(policies, rules, server))
        return s

    def test_a_cost_past_capacity_is_a_shadow_denial_not_a_denial(self):
        s = self.shadow_case('[[rules]]\npolicy = "small"\nkey = "client"\ncost = "header:X-Cost"\nshadow = true\n')
        st, h = authorize(s.port, "/", [("X-Cost", "1000")])
        self.assertEqual((st, remaining(h, "api")), (204, 1))
        self.assertNotIn("small", h.get("ratelimit-policy", ""))
        self.assertEqual(metric(s.metrics(), 'sluice_shadow_decisions_total{policy="small",result="denied"}'), 1)

    def test_an_invalid_cost_is_counted_not_a_403(self):
        s = self.shadow_case('[[rules]]\npolicy = "small"\nkey = "client"\ncost = "header:X-Cost"\nshadow = true\n',
                             api="fixed-window 10/1h")
        costs = ["lots", "0", "-3", "99999999999999999999999", "1.5"]
        for i, cost in enumerate(costs):
            st, h = authorize(s.port, "/", [("X-Cost", cost)])
            self.assertEqual((st, remaining(h, "api")), (204, 9 - i), cost)
        st, h = authorize(s.port, "/", [("X-Cost", "1"), ("X-Cost", "2")])
        self.assertEqual((st, remaining(h, "api")), (204, 9 - len(costs)))
        self.assertEqual(metric(s.metrics(), 'sluice_shadow_decisions_total{policy="small",result="invalid"}'),
                         len(costs) + 1)

    def test_an_over_long_key_is_counted_not_a_403(self):
        s = self.shadow_case('[[rules]]\npolicy = "small"\nkey = "header:X-Long"\nshadow = true\n',
                             "max_key_bytes = 16\n")
        st, h = authorize(s.port, "/", [("X-Long", "k" * 17)])
        self.assertEqual((st, remaining(h, "api")), (204, 1))
        self.assertEqual(metric(s.metrics(), 'sluice_shadow_decisions_total{policy="small",result="invalid"}'), 1)

    def test_a_missing_key_part_skips_the_shadow_rule(self):
        s = self.shadow_case('[[rules]]\npolicy = "small"\nkey = "header:X-Absent+query:q"\nshadow = true\n')
        st, h = authorize(s.port, "/?q=1")
        self.assertEqual((st, remaining(h, "api")), (204, 1))

    def test_an_invalid_path_or_a_repeated_header_is_counted_not_a_403(self):
        s = self.shadow_case('[[rules]]\npolicy = "small"\npath_prefix = "/api/"\nkey = "header:X-K"\n'
                             'shadow = true\n')
        st, h = authorize(s.port, "/api%2Fitems", [("X-K", "a")])
        self.assertEqual((st, remaining(h, "api")), (204, 1))
        st, h = authorize(s.port, "/api/items", [("X-K", "a"), ("X-K", "b")])
        self.assertEqual((st, remaining(h, "api")), (204, 0))
        self.assertEqual(metric(s.metrics(), 'sluice_shadow_decisions_total{policy="small",result="invalid"}'), 2)

    def test_a_shadow_rule_on_an_enforced_policy_and_key_consumes_nothing_it_reads(self):
        s = self.shadow_case('[[rules]]\nname = "same"\npolicy = "api"\nkey = "literal:all"\nshadow = true\n')
        st, h = authorize(s.port, "/")
        self.assertEqual((st, remaining(h, "api")), (204, 1))
        st, h = authorize(s.port, "/")
        self.assertEqual((st, remaining(h, "api")), (204, 0))
        st, h = authorize(s.port, "/")
        self.assertEqual(st, 403)
        m = s.metrics()
        self.assertEqual(metric(m, 'sluice_shadow_decisions_total{policy="api",result="allowed"}'), 2)
        self.assertEqual(metric(m, 'sluice_shadow_decisions_total{policy="api",result="denied"}'), 1)

    def test_shadow_rules_do_not_count_toward_the_16_checks(self):
        rules = "".join('[[rules]]\npolicy = "p%d"\nkey = "literal:all"\n\n' % i for i in range(16))
        rules += '[[rules]]\npolicy = "watch"\nkey = "literal:all"\nshadow = true\n'
        s, _ = self.start_config(base_config(dict({"p%d" % i: "fixed-window 9/1h" for i in range(16)},
                                                  watch="fixed-window 1/1h"), rules))
        st, h = authorize(s.port, "/")
        self.assertEqual((st, remaining(h, "p15")), (204, 8))
        self.assertEqual(metric(s.metrics(), 'sluice_shadow_decisions_total{policy="watch",result="allowed"}'), 1)


if __name__ == "__main__":
    unittest.main()

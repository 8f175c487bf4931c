"""Key part `client` behind proxies (docs/serve.md, "The client behind
proxies"): forwarded headers read as proxies write them, through a real
HAProxy that appends X-Forwarded-For and Forwarded lines and a real nginx
running the shipped configuration (which replaces X-Real-IP). A client that
sends forged lines of its own is still limited under the address the proxy
saw. Each TestCase class is one ctest test (tests/serve/CMakeLists.txt).
"""
import os
import sys
import tempfile
import shutil
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from serve_support import HAProxy, ServeCase, base_config, free_port  # noqa: E402
from test_serve_edge import authorize, remaining, start_sample_nginx, via_nginx  # noqa: E402

# Three requests an address an hour, keyed by the client.
POLICIES = {"per_client": "fixed-window 3/1h"}
RULES = '[[rules]]\nname = "per client"\npolicy = "per_client"\nkey = "client"\n'
# HAProxy connects to sluice from this address: the one trusted proxy. The
# test client connects from 127.0.0.1, so the proxy's entry for it is untrusted.
PROXY_SOURCE = "127.0.0.3"

HAPROXY_CONF = """
defaults
    mode http
    timeout connect 2s
    timeout client 10s
    timeout server 10s

frontend appends_xff
    bind 127.0.0.1:%(xff_port)d
    default_backend xff

frontend appends_forwarded
    bind 127.0.0.1:%(fwd_port)d
    default_backend forwarded

backend xff
    option forwardfor
    server sluice 127.0.0.1:%(xff_sluice)d source %(source)s

backend forwarded
    # HAProxy 2.6 (Debian 12) has no `option forwarded` yet: the same line, appended.
    http-request add-header Forwarded for=%%[src];proto=http
    server sluice 127.0.0.1:%(fwd_sluice)d source %(source)s
"""


def via_proxy(port, forged=()):
    """GET /v1/authorize through the proxy on `port` with the client's own
    header lines `forged` ((name, value) pairs). Returns (status, headers)."""
    return authorize(port, None, forged)


class ForwardedHeaders(ServeCase):
    def start_haproxy(self):
        """Two sluices behind one HAProxy: one reading X-Forwarded-For, one
        Forwarded. Returns (HAProxy's X-Forwarded-For port, its Forwarded
        port, the two sluices)."""
        server = 'threads = 1\ntrusted_proxies = ["%s"]\n' % PROXY_SOURCE
        xff, _ = self.start_config(base_config(POLICIES, RULES, server + 'forwarded_header = "X-Forwarded-For"\n'))
        fwd, _ = self.start_config(base_config(POLICIES, RULES, server + 'forwarded_header = "Forwarded"\n'))
        work = tempfile.mkdtemp(prefix="sluice-haproxy-")
        self.addCleanup(shutil.rmtree, work)
        ports = {"xff_port": free_port(), "fwd_port": free_port(), "xff_sluice": xff.port, "fwd_sluice": fwd.port,
                 "source": PROXY_SOURCE}
        proxy = HAProxy(HAPROXY_CONF % ports, work)
        self.addCleanup(proxy.stop)
        proxy.wait_port(ports["xff_port"])
        proxy.wait_port(ports["fwd_port"])
        return ports["xff_port"], ports["fwd_port"], xff, fwd

    def limited_whatever_it_forges(self, port, header, forgeries):
        """Three admits for 127.0.0.1 through the proxy, then each forgery
        is still limited (403 limited: it is 127.0.0.1's fourth request)."""
        for left in (2, 1, 0):
            st, h = via_proxy(port)
            self.assertEqual((st, remaining(h, "per_client")), (204, left), header)
        for forged in forgeries:
            st, h = via_proxy(port, forged)
            self.assertEqual((st, h.get("x-sluice-decision")), (403, "limited"), forged)

    def test_x_forwarded_for_appended_by_haproxy_is_read_from_the_right(self):
        xff_port, _, xff, _ = self.start_haproxy()
        self.limited_whatever_it_forges(xff_port, "X-Forwarded-For", [
            [("X-Forwarded-For", "6.6.6.6")],                     # its own line first, HAProxy's after
            [("X-Forwarded-For", "6.6.6.6"), ("X-Forwarded-For", "7.7.7.7")],
            [("X-Forwarded-For", "6.6.6.6, " + PROXY_SOURCE)],   # posing as the trusted proxy
            [("X-Forwarded-For", "garbage, unknown")],          # left of the client: never read
        ])
        # No forged address was charged: 6.6.6.6's first request is its first.
        st, _, body = xff.decide([("per_client", "6.6.6.6")])
        self.assertEqual((st, body["remaining"]), (200, 2))

    def test_forwarded_appended_by_haproxy_is_read_from_the_right(self):
        _, fwd_port, _, fwd = self.start_haproxy()
        self.limited_whatever_it_forges(fwd_port, "Forwarded", [
            [("Forwarded", "for=6.6.6.6")],
            [("Forwarded", 'for="[2001:db8::6]:4711";proto=http'), ("Forwarded", "for=7.7.7.7")],
            [("Forwarded", "for=6.6.6.6, for=%s" % PROXY_SOURCE)],
            [("Forwarded", "for=unknown, for=_hidden")],
        ])
        st, _, body = fwd.decide([("per_client", "6.6.6.6")])
        self.assertEqual((st, body["remaining"]), (200, 2))

    def test_through_nginx_forged_lines_are_replaced(self):
        s, _ = self.start_config(base_config(POLICIES, RULES, 'threads = 1\ntrusted_proxies = ["127.0.0.1"]\n'
                                                              'forwarded_header = "X-Real-IP"\n'))
        port = start_sample_nginx(self, s.port)
        for left in (2, 1, 0):
            st, h, _ = via_nginx(port, "/")
            self.assertEqual((st, remaining(h, "per_client")), (200, left))
        for forged in ([("X-Real-IP", "6.6.6.6")], [("X-Real-IP", "6.6.6.6"), ("X-Real-IP", "7.7.7.7")],
                       [("X-Forwarded-For", "6.6.6.6")], [("Forwarded", "for=6.6.6.6")]):
            st, _, body = via_nginx(port, "/", forged)
            self.assertEqual((st, body), (429, b"rate limited\n"), forged)

    def test_x_real_ip_twice_is_invalid_and_charges_nothing(self):
        s, _ = self.start_config(base_config(POLICIES, RULES, 'threads = 1\ntrusted_proxies = ["127.0.0.1"]\n'
                                                              'forwarded_header = "X-Real-IP"\n'))
        st, h = authorize(s.port, "/", [("X-Real-IP", "10.0.0.1"), ("X-Real-IP", "6.6.6.6")])
        self.assertEqual((st, h.get("x-sluice-decision")), (403, "invalid"))
        st, h = authorize(s.port, "/", [("X-Real-IP", "6.6.6.6"), ("X-Real-IP", "10.0.0.1")])
        self.assertEqual((st, h.get("x-sluice-decision")), (403, "invalid"))
        # Neither address was charged.
        for ip in ("10.0.0.1", "6.6.6.6"):
            st, h = authorize(s.port, "/", [("X-Real-IP", ip)])
            self.assertEqual((st, remaining(h, "per_client")), (204, 2), ip)


if __name__ == "__main__":
    unittest.main()

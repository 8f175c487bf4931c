"""Request ids through real `sluice serve` processes (docs/serve.md,
"Request ids"): their bytes bounded by store.max_id_bytes, where a new id is
answered by store.on_failure with nothing charged and no remembered id is
forgotten within its window; their window settable and read on the
service's clock only, so no client "now" (server.client_time) ends another
id's window; and kept with their refund records across a restart with a
snapshot.
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from serve_support import BINARY, ServeCase, base_config, write_config  # noqa: E402

QUOTA = 1000000


def store(**options):
    text = "\n[store]\n"
    for k, v in options.items():
        text += "%s = %s\n" % (k, v)
    return text


class IdBound(ServeCase):
    def test_a_new_id_at_the_bound_is_answered_by_the_failure_mode_and_charges_nothing(self):
        text = base_config({"q": "quota %d" % QUOTA}) + store(max_id_bytes=65536, idempotency_window='"2s"',
                                                               on_failure='"fail-closed"')
        s, _ = self.start_config(text)
        conn = s.conn()
        key = "k" * 200
        charged = 0
        first_refused = None
        for i in range(2000):  # bounded: 65,536 bytes hold far fewer ids
            st, _, b = s.decide([("q", key)], rid="id-%04d" % i, conn=conn)
            if b["source"] == "store":
                self.assertEqual(st, 200)
                charged += 1
                continue
            self.assertEqual((st, b["source"]), (429, "fail-closed"), b)
            first_refused = i
            break
        self.assertIsNotNone(first_refused, "the bound was never reached")
        self.assertGreater(first_refused, 10)
        print("ids of one 200-byte-key check held by 65,536 bytes: %d" % first_refused)
        # At the bound: every remembered id still replays (none forgotten
        # within its window), and the refused one is refused again, charged
        # nothing either time.
        for i in (0, first_refused // 2, first_refused - 1):
            st, _, b = s.decide([("q", key)], rid="id-%04d" % i, conn=conn)
            self.assertEqual((st, b["source"]), (200, "replayed"), i)
        st, _, b = s.decide([("q", key)], rid="id-%04d" % first_refused, conn=conn)
        self.assertEqual((st, b["source"]), (429, "fail-closed"))
        st, _, b = s.decide([("q", key)], conn=conn)  # no id: decided, charged once
        self.assertEqual((st, b["remaining"]), (200, QUOTA - charged - 1))
        # Once the window (2 s, the service's clock) has ended, room is made:
        # the refused id is decided and charged once.
        time.sleep(2.1)
        st, _, b = s.decide([("q", key)], rid="id-%04d" % first_refused, conn=conn)
        self.assertEqual((st, b["source"], b["remaining"]), (200, "store", QUOTA - charged - 2))
        conn.close()

    def test_the_settings_are_checked_naming_the_field(self):
        for section, field in ((store(idempotency_window='"0s"'), "idempotency_window"),
                               (store(idempotency_window='"8d"'), "idempotency_window"),
                               (store(idempotency_window="5"), "idempotency_window"),
                               (store(max_id_bytes=1000), "max_id_bytes"),
                               (store(url='"redis://127.0.0.1:6379"', max_id_bytes=1048576), "max_id_bytes")):
            path = write_config(base_config({"q": "quota 5"}) + section)
            self.addCleanup(os.unlink, path)
            p = subprocess.run([BINARY, "serve", "--check", path], capture_output=True, text=True,
                               timeout=30)
            self.assertEqual(p.returncode, 2, p.stderr)
            self.assertIn(field, p.stderr)


class IdClientTime(ServeCase):
    def test_a_client_now_decades_ahead_ends_no_other_id(self):
        # The report: with client_time, 64 requests stamped 30 years ahead
        # and a victim's retry within its window was charged again.
        s, _ = self.start_config(base_config({"q": "quota %d" % QUOTA}, server="client_time = true\n"))
        conn = s.conn()
        now = time.time_ns()
        st, _, b = s.decide([("q", "victim")], rid="victim-order", now=now, conn=conn)
        self.assertEqual((st, b["source"], b["remaining"]), (200, "store", QUOTA - 1))
        ahead = now + 30 * 365 * 86400 * 10**9
        for i in range(200):  # every one of the store's 16 id stripes, all but surely
            st, _, b = s.decide([("q", "attacker:%d" % i)], rid="attacker-%d" % i, now=ahead, conn=conn)
            self.assertEqual(st, 200)
        st, _, b = s.decide([("q", "victim")], rid="victim-order", now=now + 10**9, conn=conn)
        self.assertEqual((st, b["source"]), (200, "replayed"))
        st, _, b = s.decide([("q", "victim")], now=now + 2 * 10**9, conn=conn)
        self.assertEqual(b["remaining"], QUOTA - 2)  # charged once by the retried id, once now
        conn.close()


class IdsAcrossRestart(ServeCase):
    def refund(self, s, rid):
        st, _, data = s.request("POST", "/v1/refund", json.dumps({"id": rid}), {"Content-Type": "application/json"})
        return st, json.loads(data)

    def test_a_retry_after_a_restart_is_replayed_and_a_refund_stays_once(self):
        snap = tempfile.mkdtemp(prefix="sluice-ids-snap-")
        self.addCleanup(shutil.rmtree, snap, True)
        policies = {"q": "quota 10", "w": "fixed-window 5/1h"}
        s, cfg = self.start_config(base_config(policies), "--snapshot", snap)
        st, _, first = s.decide([("q", "alice"), ("w", "alice")], rid="order-1")
        self.assertEqual((st, first["source"]), (200, "store"))
        st, _, _ = s.decide([("q", "alice")], rid="order-2")
        self.assertEqual(st, 200)
        self.assertEqual(self.refund(s, "order-2")[0], 200)
        self.assertEqual(s.stop(), 0)
        self.assertIn("2 request ids", s.log())
        self.assertTrue(os.path.exists(os.path.join(snap, "request-ids")))
        s2 = self.start("--config", cfg, "--snapshot", snap)
        self.assertIn("2 request ids", s2.log())
        # The retry within its window: the first decision, not charged again.
        st, _, again = s2.decide([("q", "alice"), ("w", "alice")], rid="order-1")
        self.assertEqual((st, again["source"]), (200, "replayed"))
        self.assertEqual(again["checks"], first["checks"])
        st, _, b = s2.decide([("q", "alice")], rid="order-1x")
        self.assertEqual((st, b["remaining"]), (200, 8))  # 10 - order-1 - this (order-2 refunded)
        # order-2 was refunded before the restart: once only.
        st, b = self.refund(s2, "order-2")
        self.assertEqual((st, b["error"]["field"]), (409, "id"))
        # order-1's receipts came back too: its refund gives back its units.
        st, b = self.refund(s2, "order-1")
        self.assertEqual(st, 200, b)
        self.assertEqual([c["given_back"] for c in b["checks"]], [1, 1])
        st, _, b = s2.decide([("q", "alice"), ("w", "alice")], rid="order-1")
        self.assertEqual((st, b["source"]), (200, "replayed"))  # the id still names its request
        st, _, b = s2.decide([("q", "alice")])
        self.assertEqual((st, b["remaining"]), (200, 8))


if __name__ == "__main__":
    unittest.main()

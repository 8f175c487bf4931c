#!/usr/bin/python3
"""Write one gRPC-framed RateLimitRequest (a 0 flag byte, a 4-byte big-endian
length, the message) for h2load -d, from the message classes protoc generated
for the vendored protos (src/serve/envoy/proto).
usage: make_frames.py PB2_DIR OUT DOMAIN KEY=VALUE..."""
import sys

sys.path.insert(0, sys.argv[1])
from envoy.service.ratelimit.v3 import rls_pb2 as rls  # noqa: E402
from envoy.extensions.common.ratelimit.v3 import ratelimit_pb2 as rl  # noqa: E402

entries = [rl.RateLimitDescriptor.Entry(key=kv.split("=", 1)[0], value=kv.split("=", 1)[1]) for kv in sys.argv[4:]]
msg = rls.RateLimitRequest(domain=sys.argv[3], descriptors=[rl.RateLimitDescriptor(entries=entries)])
body = msg.SerializeToString()
with open(sys.argv[2], "wb") as f:
    f.write(b"\x00" + len(body).to_bytes(4, "big") + body)

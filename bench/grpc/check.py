#!/usr/bin/python3
"""One ShouldRateLimit call through python3-grpcio: prints the overall code
and the statuses, exits 1 unless the answer is OK (the bench's h2load reads
only HTTP statuses, not grpc-status).
usage: check.py PB2_DIR HOST:PORT DOMAIN KEY=VALUE..."""
import sys

sys.path.insert(0, sys.argv[1])
import grpc  # noqa: E402
from envoy.service.ratelimit.v3 import rls_pb2 as rls  # noqa: E402
from envoy.extensions.common.ratelimit.v3 import ratelimit_pb2 as rl  # noqa: E402

entries = [rl.RateLimitDescriptor.Entry(key=kv.split("=", 1)[0], value=kv.split("=", 1)[1]) for kv in sys.argv[4:]]
with grpc.insecure_channel(sys.argv[2]) as ch:
    call = ch.unary_unary("/envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit",
                          request_serializer=rls.RateLimitRequest.SerializeToString,
                          response_deserializer=rls.RateLimitResponse.FromString)
    res = call(rls.RateLimitRequest(domain=sys.argv[3], descriptors=[rl.RateLimitDescriptor(entries=entries)]),
               timeout=5)
print("overall=%s statuses=[%s] headers=[%s]" % (
    rls.RateLimitResponse.Code.Name(res.overall_code),
    "; ".join("%s remaining=%d" % (rls.RateLimitResponse.Code.Name(s.code), s.limit_remaining) for s in res.statuses),
    "; ".join("%s: %s" % (h.key, h.value) for h in res.response_headers_to_add)))
sys.exit(0 if res.overall_code == rls.RateLimitResponse.OK else 1)

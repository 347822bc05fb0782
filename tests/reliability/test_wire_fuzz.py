"""Wire fuzzing: mutated, truncated and random request bytes against the live server."""

from __future__ import annotations

import random
from collections import Counter

import grpc

from memrank._gen.v1 import ranking_pb2 as pb
from memrank.client import RankingClient
from memrank.grpc.running import Running
from tests.reliability.conftest import accounted, rank_request

MUTATIONS_PER_METHOD = 1500  # the README's "inputs tried" table reads this
ALLOWED = {grpc.StatusCode.OK, grpc.StatusCode.INVALID_ARGUMENT, grpc.StatusCode.RESOURCE_EXHAUSTED}
METHODS = {
    "/memrank.v1.RankingService/Rank": [
        rank_request(3).SerializeToString(), rank_request(12, words=8, seed=3).SerializeToString(),
        pb.RankRequest(query="q", reference_time={"seconds": 1_767_225_600}, profile="lians-recall",
                       layers=[pb.LayerPolicy(name="durable", share=1, floor_tokens=10, min_score=0.1)],
                       candidates=[pb.Candidate(id="e", embedding=[0.1, 0.2], facet_scores={"bm25": 3.0},
                                                stage_scores={"ce": 0.2}, metadata={"k": "v"},
                                                valid_from={"seconds": 1}, valid_to={"seconds": 2})],
                       weight_overrides={"trust": 0.5}, min_score=0.1).SerializeToString(),
    ],
    "/memrank.v1.RankingService/ScoreAdmission": [
        pb.ScoreAdmissionRequest(request_id="a", candidate=pb.Candidate(id="x", content="user likes tea",
                                                                        importance=0.4)).SerializeToString(),
    ],
    "/memrank.v1.RankingService/ListProfiles": [b""],
}


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        byte, n = n & 0x7F, n >> 7
        out.append(byte | (0x80 if n else 0))
        if not n:
            return bytes(out)


def mutate(r: random.Random, seeds: list[bytes]) -> bytes:
    """One mutation of one seed: flip, set, insert, delete, truncate, splice, repeat, inject, or noise."""
    data = bytearray(r.choice(seeds))
    kind = r.randrange(10)
    pos = r.randrange(len(data) + 1)
    if kind == 0 and data:
        data[pos % len(data)] ^= 1 << r.randrange(8)
    elif kind == 1 and data:
        data[pos % len(data)] = r.choice([0x00, 0x7F, 0x80, 0xFF, r.randrange(256)])
    elif kind == 2:
        data[pos:pos] = r.randbytes(r.randrange(1, 16))
    elif kind == 3:
        del data[pos:pos + r.randrange(1, 32)]
    elif kind == 4:
        data = data[:pos]
    elif kind == 5:
        other = r.choice(seeds)
        data = data[:pos] + other[r.randrange(len(other) + 1):]
    elif kind == 6:
        data += bytes(data[pos:pos + r.randrange(1, 64)]) * r.randrange(1, 8)
    elif kind == 7:  # a field with a hostile tag, wire type and length
        tag = r.choice([1, 2, 3, 4, 5, 6, 7, 8, 12, 13, 19, 21, 536870911, r.randrange(1, 10_000)])
        wire = r.choice([0, 1, 2, 3, 4, 5, 6, 7])
        body = _varint(r.choice([0, 1, 2**31, 2**63, 2**64 - 1])) if wire == 0 else \
            _varint(r.choice([0, 5, 1 << 20, 2**32])) + r.randbytes(r.randrange(8))
        data[pos:pos] = _varint(tag << 3 | wire) + body
    elif kind == 8:
        data = bytearray(r.randbytes(r.randrange(0, 256)))
    else:
        for _ in range(r.randrange(2, 8)):
            if data:
                data[r.randrange(len(data))] = r.randrange(256)
    return bytes(data)


def test_mutated_request_bytes_get_only_ok_or_refusals(server: Running) -> None:
    r = random.Random(20261129)
    codes: Counter[str] = Counter()
    with grpc.insecure_channel(f"127.0.0.1:{server.port}") as channel:
        for method, seeds in METHODS.items():
            call = channel.unary_unary(method, request_serializer=None, response_deserializer=None)
            for _ in range(MUTATIONS_PER_METHOD):
                payload = mutate(r, seeds)
                try:
                    call(payload, timeout=30)
                    codes["OK"] += 1
                except grpc.RpcError as err:
                    assert err.code() in ALLOWED, (method, payload.hex(), err.code(), err.details())
                    codes[err.code().name] += 1
    assert codes["OK"] > 0 and codes["INVALID_ARGUMENT"] > 0, codes
    with RankingClient(f"127.0.0.1:{server.port}") as client:
        assert client.health() == "SERVING"
        request = rank_request(7)
        assert accounted(request, client.rank(request))


def test_undecodable_bytes_are_invalid_argument_naming_the_request(server: Running) -> None:
    with grpc.insecure_channel(f"127.0.0.1:{server.port}") as channel:
        call = channel.unary_unary("/memrank.v1.RankingService/Rank", request_serializer=None,
                                   response_deserializer=None)
        # Malformed bytes name the request; a well-formed string field (1 = request_id) that is not UTF-8 is named.
        for payload, want in ((b"\xff" * 10, "request: not a valid memrank.v1.RankRequest encoding"),
                              (b"\x0a\x05\xff\xfe\xfd\xfc\xfb", "request_id: not valid UTF-8"),
                              (b"\x2a\x80", "request: not a valid memrank.v1.RankRequest encoding")):
            try:
                call(payload, timeout=10)
            except grpc.RpcError as err:
                assert err.code() == grpc.StatusCode.INVALID_ARGUMENT  # grpc alone would say INTERNAL
                assert want in (err.details() or ""), err.details()
            else:
                raise AssertionError(f"{payload!r} was accepted")

"""Reflection resolves method symbols, which ghz and `grpcurl describe` ask for."""

from __future__ import annotations

import grpc
from grpc_reflection.v1alpha.proto_reflection_descriptor_database import ProtoReflectionDescriptorDatabase

from memrank.grpc.running import Running


def test_reflection_finds_the_file_of_a_method(server: Running) -> None:
    with grpc.insecure_channel(f"127.0.0.1:{server.port}") as channel:
        db = ProtoReflectionDescriptorDatabase(channel)
        # Regression: upb's pool knows no method symbols, so this was "Symbol not found".
        assert db.FindFileContainingSymbol("memrank.v1.RankingService.Rank").name == \
            "memrank/v1/ranking_service.proto"

"""Python client of the memrank sidecar (see memrank.grpc.client)."""

from memrank.grpc.client import FieldError, RankingClient, RankingError, pack_embeddings, tls_credentials

__all__ = ["FieldError", "RankingClient", "RankingError", "pack_embeddings", "tls_credentials"]

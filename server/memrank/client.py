"""Python client of the memrank sidecar (see memrank.grpc.client)."""

from memrank.grpc.client import FieldError, RankingClient, RankingError, tls_credentials

__all__ = ["FieldError", "RankingClient", "RankingError", "tls_credentials"]

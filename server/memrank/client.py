"""Python client of the memrank sidecar (see memrank.grpc.client)."""

from memrank.grpc.client import FieldError, RankingClient, RankingError

__all__ = ["FieldError", "RankingClient", "RankingError"]

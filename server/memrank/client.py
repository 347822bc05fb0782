"""Python client of the memrank sidecar (see memrank.grpc.client); verify_receipt checks a response's receipt."""

from memrank.grpc.client import (
    FieldError,
    RankingClient,
    RankingError,
    ReceiptCheck,
    pack_embeddings,
    tls_credentials,
    verify_receipt,
)

__all__ = ["FieldError", "RankingClient", "RankingError", "ReceiptCheck", "pack_embeddings", "tls_credentials",
           "verify_receipt"]

"""Python client of the memrank sidecar (see memrank.grpc.client); verify_receipt checks a response's receipt.

The enums of the API come along for their names: ``DropReason.Name(d.reason)`` is "DROP_REASON_REDUNDANT".
"""

from memrank._gen.v1.ranking_pb2 import DropReason, ExplainLevel, Placement, SafetyStatus, Source
from memrank.grpc.client import (
    FieldError,
    RankingClient,
    RankingError,
    ReceiptCheck,
    pack_embeddings,
    tls_credentials,
    verify_receipt,
)

__all__ = ["DropReason", "ExplainLevel", "FieldError", "Placement", "RankingClient", "RankingError", "ReceiptCheck",
           "SafetyStatus", "Source", "pack_embeddings", "tls_credentials", "verify_receipt"]

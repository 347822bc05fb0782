"""Python client of the memrank sidecar: ``RankingClient`` (blocking) and ``AsyncRankingClient`` (asyncio).

Everything a caller builds or reads comes from here: the request and response messages of ``memrank.v1``
(``RankRequest``, ``Candidate``, ``LayerPolicy``, ``Budget``, ``RankResponse``, ...), ``Timestamp``
(google.protobuf's, for ``reference_time`` and the candidates' times), the enums (``DropReason.Name(d.reason)`` is
"DROP_REASON_REDUNDANT"), the errors (``RankingError`` and its subclasses by code), ``pack_embeddings``,
``tls_credentials``, ``service_config`` and ``verify_receipt`` (a response's receipt). Nobody needs
``memrank._gen``: a message's repr names the module protobuf generated it in (``memrank._gen.v1.ranking_pb2``),
where it is defined, but that path is not part of the API and may move; import the messages from here.
Importing this module loads no server code (``tests/unit/test_layers.py`` checks it).
"""

from google.protobuf.timestamp_pb2 import Timestamp

from memrank._gen.v1.ranking_pb2 import (
    AdmissionDecision,
    Budget,
    CalibrationBucket,
    Candidate,
    CandidateColumns,
    DroppedMemory,
    DropReason,
    ExplainLevel,
    FeedbackLabel,
    ImportanceSuggestion,
    LayerAllocation,
    LayerPolicy,
    ListProfilesRequest,
    ListProfilesResponse,
    MetadataRow,
    Placement,
    Profile,
    RankedMemory,
    RankingStage,
    RankRequest,
    RankResponse,
    Receipt,
    RecordFeedbackRequest,
    RecordFeedbackResponse,
    SafetyStatus,
    ScoreAdmissionRequest,
    ScoreAdmissionResponse,
    ScoreBreakdown,
    ShadowComparison,
    SignalScore,
    SignalWeight,
    Source,
    TimeColumn,
)
from memrank.client.aio import AsyncRankingClient
from memrank.client.config import service_config
from memrank.client.errors import (
    FieldError,
    InvalidArgument,
    RankingError,
    ResourceExhausted,
    Unauthenticated,
    Unavailable,
)
from memrank.client.requests import pack_embeddings
from memrank.client.sync import RankingClient
from memrank.client.tls import tls_credentials
from memrank.client.verify import ReceiptCheck, verify_receipt

__all__ = [
    "AdmissionDecision",
    "AsyncRankingClient",
    "Budget",
    "CalibrationBucket",
    "Candidate",
    "CandidateColumns",
    "DropReason",
    "DroppedMemory",
    "ExplainLevel",
    "FeedbackLabel",
    "FieldError",
    "ImportanceSuggestion",
    "InvalidArgument",
    "LayerAllocation",
    "LayerPolicy",
    "ListProfilesRequest",
    "ListProfilesResponse",
    "MetadataRow",
    "Placement",
    "Profile",
    "RankRequest",
    "RankResponse",
    "RankedMemory",
    "RankingClient",
    "RankingError",
    "RankingStage",
    "Receipt",
    "ReceiptCheck",
    "RecordFeedbackRequest",
    "RecordFeedbackResponse",
    "ResourceExhausted",
    "SafetyStatus",
    "ScoreAdmissionRequest",
    "ScoreAdmissionResponse",
    "ScoreBreakdown",
    "ShadowComparison",
    "SignalScore",
    "SignalWeight",
    "Source",
    "TimeColumn",
    "Timestamp",
    "Unauthenticated",
    "Unavailable",
    "pack_embeddings",
    "service_config",
    "tls_credentials",
    "verify_receipt",
]

"""Python client of memrank.v1.RankingService: dicts in, messages out, retries on UNAVAILABLE."""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import grpc
import numpy as np
from google.protobuf import json_format
from google.protobuf.message import Message
from google.rpc import error_details_pb2
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_status import rpc_status
from numpy.typing import ArrayLike

from memrank._gen.v1 import ranking_pb2 as pb
from memrank._gen.v1 import ranking_service_pb2_grpc as pb_grpc
from memrank.core.batch import CandidateInput
from memrank.grpc.convert import candidate_to_proto
from memrank.grpc.tls import channel_credentials
from memrank.grpc.verify import ReceiptCheck as ReceiptCheck  # re-exported: memrank.client
from memrank.grpc.verify import verify_receipt as verify_receipt

T = TypeVar("T", bound=Message)
RETRYABLE = frozenset({grpc.StatusCode.UNAVAILABLE})


@dataclass(frozen=True)
class FieldError:
    """One field violation reported by the server."""

    field: str
    description: str


class RankingError(Exception):
    """A failed call: the gRPC code, the message and any BadRequest field violations."""

    def __init__(self, code: grpc.StatusCode, message: str, violations: Sequence[FieldError] = (),
                 reason: str = "") -> None:
        self.code = code
        self.message = message
        self.violations = tuple(violations)
        self.reason = reason
        fields = "; ".join(f"{v.field}: {v.description}" for v in self.violations)
        super().__init__(f"{code.name}: {message}" + (f" [{fields}]" if fields and fields not in message else ""))

    @property
    def fields(self) -> tuple[str, ...]:
        """The violated field paths."""
        return tuple(v.field for v in self.violations)

    @classmethod
    def from_rpc_error(cls, err: grpc.RpcError) -> RankingError:
        """Decode a grpc.RpcError, including google.rpc.BadRequest and ErrorInfo details."""
        status = rpc_status.from_call(err) if isinstance(err, grpc.Call) else None
        violations: list[FieldError] = []
        reason = ""
        for detail in status.details if status is not None else ():
            if detail.Is(error_details_pb2.BadRequest.DESCRIPTOR):
                bad = error_details_pb2.BadRequest()
                detail.Unpack(bad)
                violations.extend(FieldError(v.field, v.description) for v in bad.field_violations)
            elif detail.Is(error_details_pb2.ErrorInfo.DESCRIPTOR):
                info = error_details_pb2.ErrorInfo()
                detail.Unpack(info)
                reason = info.reason
        code = err.code() if isinstance(err, grpc.Call) else grpc.StatusCode.UNKNOWN
        details = err.details() if isinstance(err, grpc.Call) else str(err)
        return cls(code, details or "", violations, reason)


def _as_message(value: Message | Mapping[str, Any], cls: type[T]) -> T:
    """A message from a message or a protobuf-JSON-shaped dict (CandidateInput rows allowed)."""
    if isinstance(value, cls):
        return value
    if not isinstance(value, Mapping):
        raise TypeError(f"expected {cls.__name__} or a dict, got {type(value).__name__}")
    data = dict(value)
    rows = [c for c in data.get("candidates", ()) if isinstance(c, CandidateInput)]
    if rows:
        data["candidates"] = [c for c in data["candidates"] if not isinstance(c, CandidateInput)]
    msg = json_format.ParseDict(data, cls())
    if rows and isinstance(msg, pb.RankRequest):
        msg.candidates.extend(candidate_to_proto(r) for r in rows)
    return msg


def pack_embeddings(request: pb.RankRequest, embeddings: ArrayLike | None = None) -> pb.RankRequest:
    """A copy of ``request`` with its embeddings packed into ``embeddings_f32`` / ``embedding_dim``.

    ``embeddings`` is an (n, dim) array-like with one row per candidate, in
    candidate order (a numpy float32 matrix is used as it is); without it, the
    candidates' own ``embedding`` fields are moved into the matrix, which then
    needs every candidate to carry one of one dimension. The copy's
    candidates carry no ``embedding`` (the server refuses both at once).
    Raises ValueError when the shapes do not fit.
    """
    n = len(request.candidates)
    if embeddings is None:
        lengths = {len(c.embedding) for c in request.candidates}
        if len(lengths) != 1 or 0 in lengths:
            raise ValueError("packing needs every candidate to carry an embedding of one dimension; "
                             f"got dimensions {sorted(lengths)}")
        matrix = np.array([c.embedding for c in request.candidates], dtype="<f4")
    else:
        matrix = np.ascontiguousarray(embeddings, dtype="<f4")
        if matrix.ndim != 2 or matrix.shape[0] != n or matrix.shape[1] == 0:
            raise ValueError(f"embeddings must be an ({n}, dim) matrix with dim >= 1 (one row per candidate), "
                             f"got shape {matrix.shape}")
    out = pb.RankRequest()
    out.CopyFrom(request)
    for c in out.candidates:
        if len(c.embedding):
            c.ClearField("embedding")
    out.embeddings_f32 = matrix.tobytes()
    out.embedding_dim = matrix.shape[1]
    return out


def _packable(request: pb.RankRequest) -> bool:
    """Every candidate carries an embedding of one dimension, and nothing is packed yet."""
    if not request.candidates or request.embeddings_f32 or request.embedding_dim:
        return False
    lengths = {len(c.embedding) for c in request.candidates}
    return len(lengths) == 1 and 0 not in lengths


def tls_credentials(ca_file: str | None = None, cert_file: str | None = None,
                    key_file: str | None = None) -> grpc.ChannelCredentials:
    """Channel credentials from PEM files: trust ``ca_file``; present cert/key for mutual TLS."""
    return channel_credentials(ca_file, cert_file, key_file)


class RankingClient:
    """A client of one memrank sidecar. Use as a context manager, or call close()."""

    def __init__(self, target: str, *, timeout: float = 5.0, retries: int = 3, backoff: float = 0.05,
                 max_message_bytes: int = 64 << 20, credentials: grpc.ChannelCredentials | None = None,
                 token: str | None = None, pack_embeddings: bool = False) -> None:
        options = [("grpc.max_receive_message_length", max_message_bytes),
                   ("grpc.max_send_message_length", max_message_bytes)]
        # Bearer token for servers with security.auth_token_file (sent on every call, TLS or not).
        self._metadata = (("authorization", f"Bearer {token}"),) if token else None
        self._channel = (grpc.secure_channel(target, credentials, options) if credentials
                         else grpc.insecure_channel(target, options))
        self._stub = pb_grpc.RankingServiceStub(self._channel)
        self._health = health_pb2_grpc.HealthStub(self._channel)
        self.timeout = timeout
        self.retries = retries
        self.backoff = backoff
        # Send per-candidate embeddings packed (RankRequest.embeddings_f32) when every candidate has one.
        self.pack_embeddings = pack_embeddings

    def _call(self, method: Callable[..., T], request: Message, timeout: float | None) -> T:
        """Call within one deadline for all attempts; retry UNAVAILABLE with jittered exponential backoff while
        time is left (a 5 s timeout is 5 s in all, not 5 s per attempt)."""
        deadline = time.monotonic() + (self.timeout if timeout is None else timeout)
        attempt = 0
        while True:
            try:
                return method(request, timeout=max(deadline - time.monotonic(), 0.0), metadata=self._metadata)
            except grpc.RpcError as err:
                code = err.code() if isinstance(err, grpc.Call) else None
                pause = self.backoff * (2 ** attempt) * (0.5 + random.random())
                if code not in RETRYABLE or attempt >= self.retries or time.monotonic() + pause >= deadline:
                    raise RankingError.from_rpc_error(err) from None
                time.sleep(pause)
                attempt += 1

    def rank(self, request: pb.RankRequest | Mapping[str, Any], timeout: float | None = None, *,
             embeddings: ArrayLike | None = None) -> pb.RankResponse:
        """Rank candidates; ``request`` is a RankRequest or a dict in protobuf JSON form.

        ``embeddings`` (an (n, dim) array, one row per candidate) is sent packed in
        ``embeddings_f32``; without it, a client made with ``pack_embeddings=True``
        packs the candidates' own embeddings when every candidate has one of one
        dimension (otherwise the request goes as it is). The caller's message is
        never modified.
        """
        msg = _as_message(request, pb.RankRequest)
        if embeddings is not None or (self.pack_embeddings and _packable(msg)):
            msg = pack_embeddings(msg, embeddings)
        return self._call(self._stub.Rank, msg, timeout)

    def score_admission(self, request: pb.ScoreAdmissionRequest | Mapping[str, Any],
                        timeout: float | None = None) -> pb.ScoreAdmissionResponse:
        """Score one memory for admission."""
        return self._call(self._stub.ScoreAdmission, _as_message(request, pb.ScoreAdmissionRequest), timeout)

    def record_feedback(self, decision: str | pb.RankResponse, labels: Mapping[str, int], *,
                        labeler: str = "", timeout: float | None = None) -> pb.RecordFeedbackResponse:
        """Label the candidates of one logged Rank decision (relevance 0..3 by candidate id).

        ``decision`` is the Rank call's response (its receipt digest and request_id are
        sent) or its decision id (``response.receipt.digest``). The server writes a
        memrank.feedback.v1 record to its decision log; FAILED_PRECONDITION when the log is off.
        """
        if isinstance(decision, pb.RankResponse):
            msg = pb.RecordFeedbackRequest(decision_id=decision.receipt.digest, request_id=decision.request_id)
        else:
            msg = pb.RecordFeedbackRequest(decision_id=decision)
        msg.labeler = labeler
        msg.labels.extend(pb.FeedbackLabel(candidate_id=cid, relevance=grade) for cid, grade in labels.items())
        return self._call(self._stub.RecordFeedback, msg, timeout)

    def list_profiles(self, timeout: float | None = None) -> pb.ListProfilesResponse:
        """The server's profiles."""
        return self._call(self._stub.ListProfiles, pb.ListProfilesRequest(), timeout)

    def health(self, service: str = "", timeout: float | None = None) -> str:
        """The health status name ("SERVING", "NOT_SERVING", ...) of a service ("" = the server)."""
        resp = self._call(self._health.Check, health_pb2.HealthCheckRequest(service=service), timeout)
        return str(health_pb2.HealthCheckResponse.ServingStatus.Name(resp.status))

    def close(self) -> None:
        """Close the channel."""
        self._channel.close()

    def __enter__(self) -> RankingClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

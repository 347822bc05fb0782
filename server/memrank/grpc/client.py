"""Python clients of memrank.v1.RankingService, blocking and asyncio: dicts in, messages out.

Retries are gRPC's own, from the one service config every memrank client ships (``clients/service_config.json``;
this package's copy is ``service_config.json`` beside this module): only UNAVAILABLE is retried, with gRPC's
jittered exponential backoff, and a call's deadline bounds every attempt of it. ``retries`` and ``backoff`` are
mapped onto that config's ``retryPolicy`` (``service_config``).

Importing this module loads no server code (no ``memrank.config``, yaml, prometheus_client or scoring pipeline).
"""

from __future__ import annotations

import asyncio
import copy
import functools
import json
import weakref
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from importlib import resources
from typing import Any, ClassVar, TypeVar

import grpc
import grpc.aio
import numpy as np
from google.protobuf import json_format
from google.protobuf.message import Message
from google.rpc import error_details_pb2, status_pb2
from grpc_health.v1 import health_pb2, health_pb2_grpc
from numpy.typing import ArrayLike

from memrank._gen.v1 import ranking_pb2 as pb
from memrank._gen.v1 import ranking_service_pb2_grpc as pb_grpc
from memrank.core.batch import CandidateInput
from memrank.grpc.client_tls import channel_credentials
from memrank.grpc.convert import candidate_to_proto
from memrank.grpc.verify import ReceiptCheck as ReceiptCheck  # re-exported: memrank.client
from memrank.grpc.verify import verify_receipt as verify_receipt

T = TypeVar("T", bound=Message)
RETRYABLE = frozenset({grpc.StatusCode.UNAVAILABLE})  # what the service config retries
MAX_ATTEMPTS = 5  # gRPC's cap on retryPolicy.maxAttempts (gRFC A6): more is treated as 5
# The least initialBackoff: with 1 ms, grpc C-core (1.85) loses about every other retry, and the call then waits for
# its deadline (grpc/grpc#41036); from 2 ms on it does not, here.
MIN_BACKOFF = 0.01
SERVICE_CONFIG_FILE = "service_config.json"
_DETAILS_KEY = "grpc-status-details-bin"


@functools.cache
def _shipped_config() -> str:
    return resources.files(__package__ or "memrank.grpc").joinpath(SERVICE_CONFIG_FILE).read_text(encoding="utf-8")


def _duration(seconds: float) -> str:
    """Seconds as a protobuf JSON Duration ("0.05s")."""
    text = f"{seconds:.9f}".rstrip("0").rstrip(".")
    return f"{text}s"


def _seconds(duration: str) -> float:
    return float(duration.removesuffix("s"))


def service_config(retries: int | None = None, backoff: float | None = None) -> dict[str, Any]:
    """The gRPC service config the clients use: the shipped ``service_config.json``, with ``retries`` and
    ``backoff`` (when given) mapped onto every ``retryPolicy`` in it.

    ``retries`` n sets ``maxAttempts`` to min(n + 1, 5); 0 removes the retry policy (no call is retried).
    gRPC allows at most 5 attempts, so more retries than 4 cannot be honoured as such; what they asked for,
    riding out a longer outage, is what gRPC's wait-for-ready does: ``retries`` of 5 or more also set
    ``waitForReady``, so a call waits (up to its deadline) for a server that is not up yet instead of failing at
    once, and then retries UNAVAILABLE answers 4 times. ``backoff`` (seconds, > 0; below 10 ms counts as 10 ms,
    see MIN_BACKOFF) sets ``initialBackoff``, and raises ``maxBackoff`` to it when lower. The delay before retry
    k is random in [0, min(initialBackoff * backoffMultiplier^(k-1), maxBackoff)] (gRFC A6), and the call's
    deadline bounds all attempts together.
    """
    if retries is not None and retries < 0:
        raise ValueError(f"retries must be >= 0, got {retries}")
    if backoff is not None and not backoff > 0:
        raise ValueError(f"backoff must be > 0 seconds, got {backoff}")
    if backoff is not None:
        backoff = max(backoff, MIN_BACKOFF)
    config: dict[str, Any] = json.loads(_shipped_config())
    for method in config.get("methodConfig", ()):
        policy = method.get("retryPolicy")
        if policy is None:
            continue
        if retries == 0:
            del method["retryPolicy"]
            continue
        if retries is not None:
            policy["maxAttempts"] = min(retries + 1, MAX_ATTEMPTS)
            if retries + 1 > MAX_ATTEMPTS:
                method["waitForReady"] = True
        if backoff is not None:
            policy["initialBackoff"] = _duration(backoff)
            if _seconds(policy["maxBackoff"]) < backoff:
                policy["maxBackoff"] = _duration(backoff)
    return config


def _retry_policy(config: Mapping[str, Any]) -> Mapping[str, Any]:
    """The retry policy of RankingService in a service config ({} when none)."""
    for method in config.get("methodConfig", ()):
        if any(n.get("service") == "memrank.v1.RankingService" and "method" not in n for n in method["name"]):
            return dict(method.get("retryPolicy", {}))
    return {}


@dataclass(frozen=True)
class FieldError:
    """One field violation reported by the server."""

    field: str
    description: str


def _decode_details(trailing_metadata: Iterable[tuple[str, str | bytes]] | None) -> tuple[list[FieldError], str]:
    """The google.rpc.BadRequest violations and the google.rpc.ErrorInfo reason in grpc-status-details-bin."""
    violations: list[FieldError] = []
    reason = ""
    for key, value in trailing_metadata or ():
        if key != _DETAILS_KEY or not isinstance(value, bytes):
            continue
        for detail in status_pb2.Status.FromString(value).details:
            if detail.Is(error_details_pb2.BadRequest.DESCRIPTOR):
                bad = error_details_pb2.BadRequest()
                detail.Unpack(bad)
                violations.extend(FieldError(v.field, v.description) for v in bad.field_violations)
            elif detail.Is(error_details_pb2.ErrorInfo.DESCRIPTOR):
                info = error_details_pb2.ErrorInfo()
                detail.Unpack(info)
                reason = info.reason
    return violations, reason


class RankingError(Exception):
    """A failed call: the gRPC code, the message and any BadRequest field violations and ErrorInfo reason.

    A RankingError is made as the subclass of its code: ``InvalidArgument``, ``Unavailable``,
    ``Unauthenticated`` or ``ResourceExhausted`` (``RankingError(grpc.StatusCode.UNAVAILABLE, ...)`` is an
    ``Unavailable``); other codes stay plain RankingErrors. ``except RankingError`` catches them all.
    """

    CODE: ClassVar[grpc.StatusCode | None] = None  # the code of a subclass

    def __new__(cls, code: grpc.StatusCode, message: str = "", violations: Sequence[FieldError] = (),
                reason: str = "") -> RankingError:
        if cls is RankingError:
            cls = _BY_CODE.get(code, RankingError)
        return super().__new__(cls)

    def __init__(self, code: grpc.StatusCode, message: str = "", violations: Sequence[FieldError] = (),
                 reason: str = "") -> None:
        self.code = code
        self.message = message
        self.violations = tuple(violations)
        self.reason = reason
        fields = "; ".join(f"{v.field}: {v.description}" for v in self.violations)
        super().__init__(f"{code.name}: {message}" + (f" [{fields}]" if fields and fields not in message else ""))

    def __reduce__(self) -> tuple[Any, ...]:
        return type(self), (self.code, self.message, self.violations, self.reason), self.__dict__

    @property
    def fields(self) -> tuple[str, ...]:
        """The violated field paths."""
        return tuple(v.field for v in self.violations)

    @classmethod
    def from_rpc_error(cls, err: grpc.RpcError) -> RankingError:
        """Decode a grpc.RpcError (blocking or grpc.aio), including google.rpc.BadRequest and ErrorInfo details."""
        code = err.code() if hasattr(err, "code") else grpc.StatusCode.UNKNOWN
        details = err.details() if hasattr(err, "details") else str(err)
        violations, reason = _decode_details(err.trailing_metadata() if hasattr(err, "trailing_metadata") else None)
        return RankingError(code, details or "", violations, reason)


class InvalidArgument(RankingError):
    """INVALID_ARGUMENT: the request was refused; ``violations`` / ``fields`` name what is wrong."""

    CODE = grpc.StatusCode.INVALID_ARGUMENT


class Unavailable(RankingError):
    """UNAVAILABLE: no server answered (or it was draining), after every retry the service config allows."""

    CODE = grpc.StatusCode.UNAVAILABLE


class Unauthenticated(RankingError):
    """UNAUTHENTICATED: the server wants a bearer token (``token=``) and got none, or another."""

    CODE = grpc.StatusCode.UNAUTHENTICATED


class ResourceExhausted(RankingError):
    """RESOURCE_EXHAUSTED: the server is at a limit (in-flight bytes, message size); try later or send less."""

    CODE = grpc.StatusCode.RESOURCE_EXHAUSTED


_BY_CODE: dict[grpc.StatusCode, type[RankingError]] = {
    c.CODE: c for c in (InvalidArgument, Unavailable, Unauthenticated, ResourceExhausted) if c.CODE is not None}


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


def _feedback_request(decision: str | pb.RankResponse, labels: Mapping[str, int],
                      labeler: str) -> pb.RecordFeedbackRequest:
    if isinstance(decision, pb.RankResponse):
        msg = pb.RecordFeedbackRequest(decision_id=decision.receipt.digest, request_id=decision.request_id)
    else:
        msg = pb.RecordFeedbackRequest(decision_id=decision)
    msg.labeler = labeler
    msg.labels.extend(pb.FeedbackLabel(candidate_id=cid, relevance=grade) for cid, grade in labels.items())
    return msg


class _Options:
    """What both clients share: the channel options (the service config among them), the token, the deadline."""

    def __init__(self, target: str, timeout: float, retries: int | None, backoff: float | None,
                 max_message_bytes: int, credentials: grpc.ChannelCredentials | None, token: str | None,
                 pack_embeddings: bool) -> None:
        self.target = target
        self.timeout = timeout
        self.service_config = service_config(retries, backoff)
        policy = _retry_policy(self.service_config)
        self.retries = int(policy.get("maxAttempts", 1)) - 1  # what gRPC will do (capped), for information
        self.backoff = _seconds(policy["initialBackoff"]) if policy else 0.0
        self.credentials = credentials
        # Send per-candidate embeddings packed (RankRequest.embeddings_f32) when every candidate has one.
        self.pack_embeddings = pack_embeddings
        # Bearer token for servers with security.auth_token_file (sent on every attempt, TLS or not).
        self.metadata = (("authorization", f"Bearer {token}"),) if token else None
        self.channel_options: list[tuple[str, Any]] = [
            ("grpc.max_receive_message_length", max_message_bytes),
            ("grpc.max_send_message_length", max_message_bytes),
            ("grpc.enable_retries", 1),
            ("grpc.service_config", json.dumps(self.service_config)),
            ("grpc.service_config_disable_resolution", 1),  # this config, never one from DNS
            # A request larger than the retry buffer (C-core default 256 KiB) would be committed, never retried.
            ("grpc.per_rpc_retry_buffer_size", max_message_bytes),
        ]

    def rank_message(self, request: pb.RankRequest | Mapping[str, Any],
                     embeddings: ArrayLike | None) -> pb.RankRequest:
        msg = _as_message(request, pb.RankRequest)
        if embeddings is not None or (self.pack_embeddings and _packable(msg)):
            msg = pack_embeddings(msg, embeddings)
        return msg

    def deadline(self, timeout: float | None) -> float:
        return self.timeout if timeout is None else timeout


class _Client:
    """The options both clients read."""

    _opts: _Options

    @property
    def target(self) -> str:
        """The server's address."""
        return self._opts.target

    @property
    def timeout(self) -> float:
        """The deadline of a call given none, in seconds (all attempts together)."""
        return self._opts.timeout

    @timeout.setter
    def timeout(self, value: float) -> None:
        self._opts.timeout = value

    @property
    def retries(self) -> int:
        """How many times UNAVAILABLE is retried (the service config's maxAttempts - 1)."""
        return self._opts.retries

    @property
    def backoff(self) -> float:
        """The service config's initialBackoff, in seconds."""
        return self._opts.backoff

    @property
    def service_config(self) -> dict[str, Any]:
        """The gRPC service config of this client's channel."""
        return copy.deepcopy(self._opts.service_config)

    @property
    def pack_embeddings(self) -> bool:
        """Whether the candidates' own embeddings are sent packed when they can be."""
        return self._opts.pack_embeddings

    @pack_embeddings.setter
    def pack_embeddings(self, value: bool) -> None:
        self._opts.pack_embeddings = value


class RankingClient(_Client):
    """A client of one memrank sidecar. Use as a context manager, or call close().

    ``timeout`` (seconds, default 5) is each call's deadline, for all its attempts together. UNAVAILABLE is
    retried as the shipped service config says (3 retries, first backoff 50 ms); ``retries`` and ``backoff``
    change that (see ``service_config``: at most 4 retries, ``retries=0`` none). Failures raise RankingError
    (InvalidArgument, Unavailable, Unauthenticated, ResourceExhausted by code).
    """

    def __init__(self, target: str, *, timeout: float = 5.0, retries: int | None = None,
                 backoff: float | None = None, max_message_bytes: int = 64 << 20,
                 credentials: grpc.ChannelCredentials | None = None, token: str | None = None,
                 pack_embeddings: bool = False) -> None:
        self._opts = _Options(target, timeout, retries, backoff, max_message_bytes, credentials, token,
                              pack_embeddings)
        self._metadata = self._opts.metadata  # sent on every call (the bearer token)
        self._channel = (grpc.secure_channel(target, credentials, self._opts.channel_options) if credentials
                         else grpc.insecure_channel(target, self._opts.channel_options))
        self._stub = pb_grpc.RankingServiceStub(self._channel)
        self._health = health_pb2_grpc.HealthStub(self._channel)

    def _call(self, method: Callable[..., T], request: Message, timeout: float | None) -> T:
        try:
            return method(request, timeout=self._opts.deadline(timeout), metadata=self._metadata)
        except grpc.RpcError as err:
            raise RankingError.from_rpc_error(err) from None

    def rank(self, request: pb.RankRequest | Mapping[str, Any], timeout: float | None = None, *,
             embeddings: ArrayLike | None = None) -> pb.RankResponse:
        """Rank candidates; ``request`` is a RankRequest or a dict in protobuf JSON form.

        ``embeddings`` (an (n, dim) array, one row per candidate) is sent packed in
        ``embeddings_f32``; without it, a client made with ``pack_embeddings=True``
        packs the candidates' own embeddings when every candidate has one of one
        dimension (otherwise the request goes as it is). The caller's message is
        never modified.
        """
        return self._call(self._stub.Rank, self._opts.rank_message(request, embeddings), timeout)

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
        return self._call(self._stub.RecordFeedback, _feedback_request(decision, labels, labeler), timeout)

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


class AsyncRankingClient(_Client):
    """An asyncio (grpc.aio) client of one memrank sidecar, with RankingClient's methods, options and errors.

    ``async with AsyncRankingClient(target) as client: resp = await client.rank(request)``, or ``await close()``
    when done. A grpc.aio channel belongs to one event loop: the client opens one per loop it is awaited on, so
    one client serves successive ``asyncio.run`` calls (``close()`` closes the running loop's).
    """

    def __init__(self, target: str, *, timeout: float = 5.0, retries: int | None = None,
                 backoff: float | None = None, max_message_bytes: int = 64 << 20,
                 credentials: grpc.ChannelCredentials | None = None, token: str | None = None,
                 pack_embeddings: bool = False) -> None:
        self._opts = _Options(target, timeout, retries, backoff, max_message_bytes, credentials, token,
                              pack_embeddings)
        self._metadata = self._opts.metadata  # sent on every call (the bearer token)
        self._channels: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, tuple[grpc.aio.Channel, Any, Any]] = \
            weakref.WeakKeyDictionary()

    def _stubs(self) -> tuple[Any, Any]:
        loop = asyncio.get_running_loop()
        entry = self._channels.get(loop)
        if entry is None:
            opts = self._opts
            channel = (grpc.aio.secure_channel(opts.target, opts.credentials, opts.channel_options)
                       if opts.credentials else grpc.aio.insecure_channel(opts.target, opts.channel_options))
            entry = (channel, pb_grpc.RankingServiceStub(channel),
                     health_pb2_grpc.HealthStub(channel))
            self._channels[loop] = entry
        return entry[1], entry[2]

    async def _call(self, method: Callable[..., Awaitable[T]], request: Message, timeout: float | None) -> T:
        try:
            return await method(request, timeout=self._opts.deadline(timeout), metadata=self._metadata)
        except grpc.RpcError as err:
            raise RankingError.from_rpc_error(err) from None

    async def rank(self, request: pb.RankRequest | Mapping[str, Any], timeout: float | None = None, *,
                   embeddings: ArrayLike | None = None) -> pb.RankResponse:
        """Rank candidates (as RankingClient.rank)."""
        stub, _ = self._stubs()
        return await self._call(stub.Rank, self._opts.rank_message(request, embeddings), timeout)

    async def score_admission(self, request: pb.ScoreAdmissionRequest | Mapping[str, Any],
                              timeout: float | None = None) -> pb.ScoreAdmissionResponse:
        """Score one memory for admission."""
        stub, _ = self._stubs()
        return await self._call(stub.ScoreAdmission, _as_message(request, pb.ScoreAdmissionRequest), timeout)

    async def record_feedback(self, decision: str | pb.RankResponse, labels: Mapping[str, int], *,
                              labeler: str = "", timeout: float | None = None) -> pb.RecordFeedbackResponse:
        """Label the candidates of one logged Rank decision (as RankingClient.record_feedback)."""
        stub, _ = self._stubs()
        return await self._call(stub.RecordFeedback, _feedback_request(decision, labels, labeler), timeout)

    async def list_profiles(self, timeout: float | None = None) -> pb.ListProfilesResponse:
        """The server's profiles."""
        stub, _ = self._stubs()
        return await self._call(stub.ListProfiles, pb.ListProfilesRequest(), timeout)

    async def health(self, service: str = "", timeout: float | None = None) -> str:
        """The health status name ("SERVING", "NOT_SERVING", ...) of a service ("" = the server)."""
        _, health = self._stubs()
        resp = await self._call(health.Check, health_pb2.HealthCheckRequest(service=service), timeout)
        return str(health_pb2.HealthCheckResponse.ServingStatus.Name(resp.status))

    async def close(self) -> None:
        """Close the channel opened on the running loop (channels of finished loops are already gone)."""
        entry = self._channels.pop(asyncio.get_running_loop(), None)
        if entry is not None:
            await entry[0].close()

    async def __aenter__(self) -> AsyncRankingClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

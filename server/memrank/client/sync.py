"""The blocking Python client of memrank.v1.RankingService: dicts in, messages out (the asyncio one: ``client_async``).

Retries are gRPC's own, from the one service config every memrank client ships (``clients/service_config.json``;
this package's copy is ``service_config.json`` beside this module): only UNAVAILABLE is retried, with gRPC's
jittered exponential backoff, and a call's deadline bounds every attempt of it. ``retries`` and ``backoff`` are
mapped onto that config's ``retryPolicy`` (``service_config``).

Importing this module loads no server code (no ``memrank.config``, yaml, prometheus_client or scoring pipeline).
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

import grpc
import grpc.aio
from google.protobuf.message import Message
from grpc_health.v1 import health_pb2, health_pb2_grpc
from numpy.typing import ArrayLike

from memrank._gen.v1 import ranking_pb2 as pb
from memrank._gen.v1 import ranking_service_pb2_grpc as pb_grpc
from memrank.client.config import retry_policy, seconds_of, service_config
from memrank.client.errors import RankingError
from memrank.client.requests import (
    as_message,
    feedback_request,
    in_candidate_words,
    pack_embeddings,
    packable,
    rank_request,
)
from memrank.client.tls import channel_credentials

T = TypeVar("T", bound=Message)


def tls_credentials(ca_file: str | None = None, cert_file: str | None = None,
                    key_file: str | None = None) -> grpc.ChannelCredentials:
    """Channel credentials from PEM files: trust ``ca_file``; present cert/key for mutual TLS."""
    return channel_credentials(ca_file, cert_file, key_file)


class Options:
    """What both clients share: the channel options (the service config among them), the token, the deadline."""

    def __init__(self, target: str, timeout: float, retries: int | None, backoff: float | None,
                 max_message_bytes: int, credentials: grpc.ChannelCredentials | None, token: str | None,
                 pack_embeddings: bool) -> None:
        self.target = target
        self.timeout = timeout
        self.service_config = service_config(retries, backoff)
        policy = retry_policy(self.service_config)
        self.retries = int(policy.get("maxAttempts", 1)) - 1  # what gRPC will do (capped), for information
        self.backoff = seconds_of(policy["initialBackoff"]) if policy else 0.0
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
        msg = rank_request(request, embeddings)
        return pack_embeddings(msg) if embeddings is None and self.pack_embeddings and packable(msg) else msg

    @staticmethod
    def as_sent(request: object, msg: pb.RankRequest, err: RankingError) -> RankingError:
        """A refusal of a dict's request in the dict's words (its candidates went as columns)."""
        return err.renamed(in_candidate_words) if msg is not request and msg.HasField("columns") else err

    def deadline(self, timeout: float | None) -> float:
        return self.timeout if timeout is None else timeout


class SharedOptions:
    """The options both clients read."""

    _opts: Options

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


class RankingClient(SharedOptions):
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
        self._opts = Options(target, timeout, retries, backoff, max_message_bytes, credentials, token,
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
        """Rank candidates; ``request`` is a RankRequest (sent as it is) or a dict in protobuf JSON form
        (camelCase or snake_case keys), whose candidates are sent as columns (``RankRequest.columns``).

        ``embeddings`` (an (n, dim) array, one row per candidate) is sent packed in
        ``embeddings_f32``; a dict's candidates' own embeddings are packed too. Without it, a
        client made with ``pack_embeddings=True`` packs a message's candidates' embeddings
        when every candidate has one of one dimension (otherwise the request goes as it is).
        The caller's message is never modified.
        """
        msg = self._opts.rank_message(request, embeddings)
        try:
            return self._call(self._stub.Rank, msg, timeout)
        except RankingError as err:
            raise self._opts.as_sent(request, msg, err) from None

    def score_admission(self, request: pb.ScoreAdmissionRequest | Mapping[str, Any],
                        timeout: float | None = None) -> pb.ScoreAdmissionResponse:
        """Score one memory for admission."""
        return self._call(self._stub.ScoreAdmission, as_message(request, pb.ScoreAdmissionRequest), timeout)

    def record_feedback(self, decision: str | pb.RankResponse, labels: Mapping[str, int], *,
                        labeler: str = "", timeout: float | None = None) -> pb.RecordFeedbackResponse:
        """Label the candidates of one logged Rank decision (relevance 0..3 by candidate id).

        ``decision`` is the Rank call's response (its receipt digest and request_id are
        sent) or its decision id (``response.receipt.digest``). The server writes a
        memrank.feedback.v1 record to its decision log; FAILED_PRECONDITION when the log is off.
        """
        return self._call(self._stub.RecordFeedback, feedback_request(decision, labels, labeler), timeout)

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

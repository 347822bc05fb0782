"""The blocking Python client of memrank.v1.RankingService: dicts in, messages out (the asyncio one: ``aio``).

Retries are gRPC's own, from the one service config every memrank client ships (``clients/service_config.json``;
this package's copy is ``service_config.json`` beside this module): only UNAVAILABLE is retried, with gRPC's
jittered exponential backoff, and a call's deadline bounds every attempt of it. ``retries`` and ``backoff`` are
mapped onto that config's ``retryPolicy`` (``service_config``).

Importing this module loads no server code (no ``memrank.config``, yaml, prometheus_client or scoring pipeline).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, TypeVar

import grpc
import grpc.aio
from google.protobuf.message import Message
from grpc_health.v1 import health_pb2, health_pb2_grpc
from numpy.typing import ArrayLike

from memrank._gen.v1 import ranking_pb2 as pb
from memrank._gen.v1 import ranking_service_pb2_grpc as pb_grpc
from memrank.client._options import Options, SharedOptions
from memrank.client.errors import RankingError
from memrank.client.requests import (
    as_message,
    feedback_request,
)

T = TypeVar("T", bound=Message)


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

"""The asyncio (grpc.aio) Python client: RankingClient's methods, options and errors, awaited."""

from __future__ import annotations

import asyncio
import weakref
from collections.abc import Awaitable, Callable, Mapping
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
from memrank.client.requests import as_message, feedback_request

T = TypeVar("T", bound=Message)


class AsyncRankingClient(SharedOptions):
    """An asyncio (grpc.aio) client of one memrank sidecar, with RankingClient's methods, options and errors.

    ``async with AsyncRankingClient(target) as client: resp = await client.rank(request)``, or ``await close()``
    when done. A grpc.aio channel belongs to one event loop: the client opens one per loop it is awaited on, so
    one client serves successive ``asyncio.run`` calls (``close()`` closes the running loop's).
    """

    def __init__(self, target: str, *, timeout: float = 5.0, retries: int | None = None,
                 backoff: float | None = None, max_message_bytes: int = 64 << 20,
                 credentials: grpc.ChannelCredentials | None = None, token: str | None = None,
                 pack_embeddings: bool = False) -> None:
        self._opts = Options(target, timeout, retries, backoff, max_message_bytes, credentials, token,
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
        msg = self._opts.rank_message(request, embeddings)
        try:
            return await self._call(stub.Rank, msg, timeout)
        except RankingError as err:
            raise self._opts.as_sent(request, msg, err) from None

    async def score_admission(self, request: pb.ScoreAdmissionRequest | Mapping[str, Any],
                              timeout: float | None = None) -> pb.ScoreAdmissionResponse:
        """Score one memory for admission."""
        stub, _ = self._stubs()
        return await self._call(stub.ScoreAdmission, as_message(request, pb.ScoreAdmissionRequest), timeout)

    async def record_feedback(self, decision: str | pb.RankResponse, labels: Mapping[str, int], *,
                              labeler: str = "", timeout: float | None = None) -> pb.RecordFeedbackResponse:
        """Label the candidates of one logged Rank decision (as RankingClient.record_feedback)."""
        stub, _ = self._stubs()
        return await self._call(stub.RecordFeedback, feedback_request(decision, labels, labeler), timeout)

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

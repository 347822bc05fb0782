"""A thin asyncio client of memrank.v1.RankingService (grpc.aio over the generated stubs).

It mirrors ``memrank.client.RankingClient.rank``: a deadline, retries on
UNAVAILABLE with jittered exponential backoff, and failures raised as
``RankingError`` (code, message, BadRequest field violations, ErrorInfo reason).
A grpc.aio channel belongs to one event loop: the client opens one per loop it
is awaited on, so one client serves successive ``asyncio.run`` calls.
"""

from __future__ import annotations

import asyncio
import random
import weakref
from typing import Any

import grpc
from google.rpc import error_details_pb2, status_pb2

from memrank._gen.v1 import ranking_pb2 as pb
from memrank._gen.v1 import ranking_service_pb2_grpc as pb_grpc
from memrank.grpc.client import RETRYABLE, FieldError, RankingError

_DETAILS_KEY = "grpc-status-details-bin"


def error_from_aio(err: grpc.aio.AioRpcError) -> RankingError:
    """A grpc.aio failure as a RankingError, with its google.rpc details decoded."""
    violations: list[FieldError] = []
    reason = ""
    for key, value in err.trailing_metadata() or ():
        if key != _DETAILS_KEY:
            continue
        status = status_pb2.Status.FromString(value)
        for detail in status.details:
            if detail.Is(error_details_pb2.BadRequest.DESCRIPTOR):
                bad = error_details_pb2.BadRequest()
                detail.Unpack(bad)
                violations.extend(FieldError(v.field, v.description) for v in bad.field_violations)
            elif detail.Is(error_details_pb2.ErrorInfo.DESCRIPTOR):
                info = error_details_pb2.ErrorInfo()
                detail.Unpack(info)
                reason = info.reason
    return RankingError(err.code(), err.details() or "", violations, reason)


class AsyncRankingClient:
    """An asyncio client of one memrank sidecar (Rank only). ``await close()`` when done."""

    def __init__(self, target: str, *, timeout: float = 5.0, retries: int = 3, backoff: float = 0.05,
                 max_message_bytes: int = 64 << 20, credentials: grpc.ChannelCredentials | None = None,
                 token: str | None = None) -> None:
        self.target = target
        self.timeout = timeout
        self.retries = retries
        self.backoff = backoff
        self._options = [("grpc.max_receive_message_length", max_message_bytes),
                         ("grpc.max_send_message_length", max_message_bytes)]
        self._credentials = credentials
        self._metadata = (("authorization", f"Bearer {token}"),) if token else None
        self._channels: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, tuple[Any, Any]] = \
            weakref.WeakKeyDictionary()

    def _stub(self) -> Any:
        loop = asyncio.get_running_loop()
        if loop not in self._channels:
            channel = (grpc.aio.secure_channel(self.target, self._credentials, self._options) if self._credentials
                       else grpc.aio.insecure_channel(self.target, self._options))
            self._channels[loop] = (channel, pb_grpc.RankingServiceStub(channel))  # type: ignore[no-untyped-call]
        return self._channels[loop][1]

    async def rank(self, request: pb.RankRequest, timeout: float | None = None) -> pb.RankResponse:
        """Rank candidates (a RankRequest message)."""
        stub = self._stub()
        attempt = 0
        while True:
            try:
                response: pb.RankResponse = await stub.Rank(
                    request, timeout=self.timeout if timeout is None else timeout, metadata=self._metadata)
                return response
            except grpc.aio.AioRpcError as err:
                if err.code() not in RETRYABLE or attempt >= self.retries:
                    raise error_from_aio(err) from None
                await asyncio.sleep(self.backoff * (2 ** attempt) * (0.5 + random.random()))
                attempt += 1

    async def close(self) -> None:
        """Close the channel opened on the running loop (channels of finished loops are already gone)."""
        entry = self._channels.pop(asyncio.get_running_loop(), None)
        if entry is not None:
            await entry[0].close()

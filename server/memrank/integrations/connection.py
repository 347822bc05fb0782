"""The adapters' way to the sidecar: a sync client, an async one, and errors that name documents."""

from __future__ import annotations

import asyncio
import re

from memrank._gen.v1 import ranking_pb2 as pb
from memrank.client.aio import AsyncRankingClient
from memrank.client.errors import RankingError
from memrank.client.requests import in_candidate_words
from memrank.client.sync import RankingClient
from memrank.integrations.explanation import candidate_ids
from memrank.integrations.mapping import document_name

_CANDIDATE = re.compile(r"^candidates\[(\d+)\]")


def name_documents(err: RankingError, request: pb.RankRequest) -> RankingError:
    """The refusal in candidate words (``columns.threads[2]`` is ``candidates[2].thread``, as the client says
    it of a dict's candidates), with a note naming the document behind each ``candidates[i]`` field."""
    if request.HasField("columns"):
        err = err.renamed(in_candidate_words)
    ids = candidate_ids(request)
    seen: set[int] = set()
    for path in err.fields:
        match = _CANDIDATE.match(path)
        if match and (i := int(match.group(1))) not in seen and i < len(ids):
            seen.add(i)
            err.add_note(f"{path}: {document_name(request, i)}")
    return err


class Connection:
    """Sync calls go through ``client`` (or a RankingClient on ``target``); async ones through
    ``async_client`` (or an AsyncRankingClient on ``target``), else through the sync client in a thread."""

    def __init__(self, target: str | None = None, client: RankingClient | None = None,
                 async_client: AsyncRankingClient | None = None, *, timeout: float = 5.0,
                 token: str | None = None) -> None:
        if target is None and client is None and async_client is None:
            raise ValueError("memrank needs a target ('host:port') or a client")
        self._owned = client is None and target is not None
        self.client = client if client is not None or target is None else \
            RankingClient(target, timeout=timeout, token=token)
        self.async_client = async_client if async_client is not None or target is None else \
            AsyncRankingClient(target, timeout=timeout, token=token)

    def rank(self, request: pb.RankRequest) -> pb.RankResponse:
        """Rank synchronously."""
        if self.client is None:
            raise RuntimeError("this memrank adapter was given only an async_client: use its async method")
        try:
            return self.client.rank(request)
        except RankingError as err:
            raise name_documents(err, request) from None

    async def arank(self, request: pb.RankRequest) -> pb.RankResponse:
        """Rank on the running event loop (grpc.aio), or in a worker thread with only a sync client."""
        if self.async_client is None:
            return await asyncio.to_thread(self.rank, request)
        try:
            return await self.async_client.rank(request)
        except RankingError as err:
            raise name_documents(err, request) from None

    def close(self) -> None:
        """Close the sync channel this connection opened itself (not a client it was given)."""
        if self._owned and self.client is not None:
            self.client.close()

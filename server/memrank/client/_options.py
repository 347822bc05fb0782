"""What both clients share: their options (the channel's, the service config among them, the token, the
deadline) and the properties that read them. Private: a caller sets these through the clients' constructors."""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping
from typing import Any

import grpc
from numpy.typing import ArrayLike

from memrank._gen.v1 import ranking_pb2 as pb
from memrank.client.config import retry_policy, seconds_of, service_config
from memrank.client.errors import RankingError
from memrank.client.requests import in_candidate_words, pack_embeddings, packable, rank_request


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

"""Shared pieces of the reliability suite: request builders, certificates, soak switch."""

from __future__ import annotations

import os
import random
from collections.abc import Iterator
from pathlib import Path

import pytest

from memrank._gen.v1 import ranking_pb2 as pb
from memrank.grpc.running import Running
from memrank.grpc.server import create_server
from tests.support.certs import Certificates, make_certificates
from tests.support.servers import loopback_settings

SOAK = os.environ.get("MEMRANK_SOAK") == "1"
_TEXT = ("the user prefers green tea and decided to move the deploy to friday after the outage because "
         "postgres failed twice last week while the team was at the offsite in lisbon")
WORDS = tuple(_TEXT.split())
LAYERS = ("session", "durable", "knowledge", "")
DATA = Path(__file__).parent / "data"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """`slow` reliability tests (soak) run only with MEMRANK_SOAK=1."""
    if SOAK:
        return
    skip = pytest.mark.skip(reason="soak: set MEMRANK_SOAK=1")
    for item in items:
        if "reliability" in item.nodeid and item.get_closest_marker("slow"):
            item.add_marker(skip)


def rank_request(n: int, words: int = 30, seed: int = 0, request_id: str = "") -> pb.RankRequest:
    """A realistic request of n candidates spread over the default layers."""
    r = random.Random(seed)
    return pb.RankRequest(
        request_id=request_id, query="what does the user prefer to drink after the outage",
        candidates=[pb.Candidate(id=f"c{i}", layer=r.choice(LAYERS), kind=r.choice(("fact", "preference", "")),
                                 content=" ".join(r.choice(WORDS) for _ in range(words)),
                                 retrieval_score=r.random(), access_count=r.randrange(10))
                    for i in range(n)],
        budget=pb.Budget(max_tokens=2000),
    )


def accounted(request: pb.RankRequest, response: pb.RankResponse) -> bool:
    """Every candidate exactly once: selected or dropped with a reason."""
    ids = [m.id for m in response.selected] + [d.id for d in response.dropped]
    return (sorted(ids) == sorted(c.id for c in request.candidates)
            and all(d.reason != pb.DROP_REASON_UNSPECIFIED for d in response.dropped))


def injections() -> list[str]:
    """The prompt-injection corpus."""
    lines = (DATA / "prompt_injections.txt").read_text(encoding="utf-8").splitlines()
    return [line for line in lines if line.strip() and not line.startswith("#")]


@pytest.fixture(scope="session")
def server() -> Iterator[Running]:
    """One in-process server on the built-in configuration."""
    running = create_server(loopback_settings())
    yield running
    running.stop(0)


@pytest.fixture(scope="session")
def certs(tmp_path_factory: pytest.TempPathFactory) -> Certificates:
    """A CA, a server certificate for 127.0.0.1/localhost, a client certificate, and a rogue client."""
    return make_certificates(tmp_path_factory.mktemp("certs"))

"""Live-server fixtures for the framework adapters (the ones of tests/server, reused) and a shared corpus."""

from __future__ import annotations

import os

# Haystack reports usage to a remote service unless told not to; the tests talk to loopback only.
os.environ.setdefault("HAYSTACK_TELEMETRY_ENABLED", "False")

from collections.abc import Iterator

import pytest

from memrank.client import RankingClient
from memrank.grpc.running import Running

REF = "2026-06-01T12:00:00Z"
QUERY = "what did Caroline decide about the trip to Lisbon?"

# A conversation: (id, text, metadata). Positions are turns of thread s1 / s2.
CORPUS: list[tuple[str, str, dict[str, object]]] = [
    ("t0", "Caroline: I keep thinking about a trip this summer.",
     {"thread": "s1", "position": 0, "speaker": "Caroline", "created_at": "2026-05-01T10:00:00Z"}),
    ("t1", "Melanie: Where would you go? Lisbon or Porto?",
     {"thread": "s1", "position": 1, "speaker": "Melanie", "created_at": "2026-05-01T10:01:00Z"}),
    ("t2", "Caroline: I decided on Lisbon, the trip is booked for July.",
     {"thread": "s1", "position": 2, "speaker": "Caroline", "created_at": "2026-05-01T10:02:00Z",
      "importance": 0.9, "kind": "decision"}),
    ("t3", "Melanie: Lisbon in July will be hot, take a hat.",
     {"thread": "s1", "position": 3, "speaker": "Melanie", "created_at": "2026-05-01T10:03:00Z"}),
    ("t4", "Caroline: I painted a sunrise over the lake last weekend.",
     {"thread": "s2", "position": 0, "speaker": "Caroline", "created_at": "2026-04-12T09:00:00Z"}),
    ("t5", "Melanie: My kids love the pottery class on Tuesdays.",
     {"thread": "s2", "position": 1, "speaker": "Melanie", "created_at": "2026-04-12T09:01:00Z"}),
    ("t6", "Caroline: The adoption agency called back about the interview.",
     {"thread": "s2", "position": 2, "speaker": "Caroline", "created_at": "2026-04-12T09:02:00Z",
      "importance": 0.8, "kind": "fact"}),
    ("t7", "Melanie: We went camping by the river, the trip was lovely.",
     {"thread": "s2", "position": 3, "speaker": "Melanie", "created_at": "2026-04-12T09:03:00Z"}),
    ("t8", "Caroline: Lisbon has great tiles, I want to paint them on the trip.",
     {"thread": "s1", "position": 4, "speaker": "Caroline", "created_at": "2026-05-01T10:04:00Z"}),
    ("t9", "Melanie: Porto is cheaper than Lisbon, but Lisbon it is then.",
     {"thread": "s1", "position": 5, "speaker": "Melanie", "created_at": "2026-05-01T10:05:00Z"}),
]


@pytest.fixture(scope="session")
def target(live_server: Running) -> str:
    """host:port of the shared in-process server."""
    return f"127.0.0.1:{live_server.port}"


@pytest.fixture()
def client(target: str) -> Iterator[RankingClient]:
    """A plain client of the shared server, for the tests' own reference calls."""
    with RankingClient(target, timeout=10) as c:
        yield c


def candidate(ident: str, retrieval_score: float, meta: dict[str, object], content: str) -> dict[str, object]:
    """The candidate the README's mapping table says a document becomes, written out by hand (protobuf JSON)."""
    out: dict[str, object] = {"id": ident, "content": content, "retrievalScore": retrieval_score}
    names = {"thread": "thread", "position": "position", "speaker": "speaker", "created_at": "createdAt",
             "importance": "importance", "kind": "kind"}
    out.update({names[k]: v for k, v in meta.items()})
    return out

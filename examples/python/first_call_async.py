"""A first call from Python with asyncio: the same request as first_call.py, awaited (AsyncRankingClient, grpc.aio),
on a running sidecar (memrank serve).

    python examples/python/first_call_async.py
"""

# --8<-- [start:call]
import asyncio

from memrank.client import AsyncRankingClient, DropReason


async def main() -> None:
    async with AsyncRankingClient("localhost:50051", timeout=2.0) as client:
        resp = await client.rank({
            "query": "what tea does the user like?",
            "candidates": [{"id": "m1", "content": "The user prefers green tea.", "retrievalScore": 0.82}],
            "budget": {"maxTokens": 512},
        })
    for m in resp.selected:                      # placement order
        print(m.rank, m.id, m.score, [(s.name, s.contribution) for s in m.breakdown.signals])
    for d in resp.dropped:
        print(d.id, DropReason.Name(d.reason))   # e.g. DROP_REASON_BELOW_THRESHOLD


asyncio.run(main())
# --8<-- [end:call]

"""A first call from Python: rank two memories on a running sidecar (memrank serve) and print why.

    python examples/python/first_call.py
"""

# --8<-- [start:call]
from memrank.client import DropReason, RankingClient

with RankingClient("localhost:50051", timeout=2.0) as client:
    resp = client.rank({
        "query": "what tea does the user like?",
        "candidates": [{"id": "m1", "content": "The user prefers green tea.", "retrievalScore": 0.82}],
        "budget": {"maxTokens": 512},
    })
    for m in resp.selected:                      # placement order
        # score: public and calibrated; final_score: what min_score thresholds compare
        print(m.rank, m.id, m.score, m.breakdown.final_score,
              [(s.name, s.contribution) for s in m.breakdown.signals])
    for d in resp.dropped:
        print(d.id, DropReason.Name(d.reason))   # e.g. DROP_REASON_BELOW_THRESHOLD
# --8<-- [end:call]

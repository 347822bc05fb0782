"""Synthetic decision logs of a fleet: decision and feedback records as `memrank serve` writes them.

Every decision ranks ``CANDIDATES`` candidates under a profile whose signals
are the default profile's; each candidate's normalised signals are uniform in
[0, 1). Which candidates the feedback marks relevant is chosen here, not by
memrank: ``truth="importance"`` marks the top ``RELEVANT`` by
``0.8 x importance + 0.2 x relevance + N(0, 0.1)`` (a signal the default profile weights
0.013, so a refit has much to gain); ``truth="noise"`` marks ``RELEVANT``
candidates drawn at random (nothing to learn). Request ids are
``user-<g>/turn-<i>``, so a group is a user.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from memrank.profiles.builtin import BUILTIN_PROFILES

SIGNALS = [(s.name, s.normalization) for s in BUILTIN_PROFILES["default"].signals]
CANDIDATES = 20
RELEVANT = 3


def records(seed: int, users: int, turns: int, truth: str, profile: str = "default",
            weights: dict[str, float] | None = None) -> list[dict[str, Any]]:
    """Decision and feedback records of ``users`` x ``turns`` requests, from one seed."""
    rng = np.random.default_rng(seed)
    w = weights or {s.name: s.weight for s in BUILTIN_PROFILES["default"].signals}
    out: list[dict[str, Any]] = []
    for u in range(users):
        for t in range(turns):
            cols = np.round(rng.random((len(SIGNALS), CANDIDATES)), 6)
            by = {name: cols[j] for j, (name, _) in enumerate(SIGNALS)}
            if truth == "importance":
                truth_score = 0.8 * by["importance"] + 0.2 * by["relevance"] + 0.1 * rng.standard_normal(CANDIDATES)
                top = np.argsort(-truth_score, kind="stable")[:RELEVANT]
            else:
                top = rng.choice(CANDIDATES, size=RELEVANT, replace=False)
            did = f"{seed:04d}{u:04d}{t:04d}".ljust(64, "d")
            ids = [f"m{i}" for i in range(CANDIDATES)]
            out.append({
                "schema": "memrank.decision.v1", "decision_id": did, "request_id": f"user-{u}/turn-{t}",
                "profile": profile,
                "weights": [{"signal": n, "weight": w[n], "normalization": norm} for n, norm in SIGNALS],
                "candidates": {"count": CANDIDATES, "id": ids, "outcome": ["selected"] * CANDIDATES,
                               "token_count": [10] * CANDIDATES, "rank": list(range(1, CANDIDATES + 1)),
                               "signals": {n: {"raw": cols[j].tolist(), "normalized": cols[j].tolist(),
                                               "contribution": (w[n] * cols[j]).tolist()}
                                           for j, (n, _) in enumerate(SIGNALS)}},
            })
            out.append({"schema": "memrank.feedback.v1", "feedback_id": did.replace("d", "f"), "decision_id": did,
                        "request_id": f"user-{u}/turn-{t}",
                        "labels": [{"candidate_id": f"m{int(i)}", "relevance": 1} for i in top]})
    return out


def write(path: Path, recs: list[dict[str, Any]]) -> Path:
    """The records as JSON lines, the way the file sink writes them (schema first, compact)."""
    path.write_text("".join(json.dumps(r, separators=(",", ":")) + "\n" for r in recs), encoding="utf-8")
    return path

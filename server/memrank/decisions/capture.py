"""What a record needs from a finished call, taken on the request path: references and lengths, no formatting.

A capture is a plain dict of strings, tuples and numpy arrays (it crosses to the
writer process by pickle). The arrays are the outcome's own columns, not copies;
texts travel only when the content mode logs them (``hash`` or ``plain``).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from memrank._gen.v1 import ranking_pb2 as pb
from memrank.core.batch import Batch, RankParams
from memrank.core.explain.breakdown import LOGGED_SIGNAL_PARTS, signal_rows
from memrank.core.explain.outcome import RankOutcome
from memrank.decisions.mask import OMIT

DECISION, FEEDBACK = "decision", "feedback"


def capture_decision(o: RankOutcome, batch: Batch, params: RankParams, response: pb.RankResponse,
                     server_time: float, content_mode: str, forced: bool) -> dict[str, Any]:
    """Everything a memrank.decision.v1 record holds about one Rank call."""
    s = o.scores
    n = o.n
    rank = np.full(n, -1, dtype=np.int64)
    position = np.full(n, -1, dtype=np.int64)
    rank[o.ranked] = np.arange(1, o.ranked.shape[0] + 1)
    position[o.ranked] = o.positions
    sh = o.shadow
    out: dict[str, Any] = {
        "kind": DECISION,
        "decision_id": response.receipt.digest,
        "request_id": response.request_id,
        "server_time": server_time,
        "reference_time": params.reference_time,
        "profile": o.profile.name,
        "policy_version": response.policy_version,
        # the profile's weights (with the request's overrides), as RankResponse.weights: a signal's effective
        # weight in this request (share_constant_weight) shows in its contributions
        "weights": tuple((w.name, w.weight, w.normalization) for w in o.profile.signals),
        "shadow": None if sh is None else {"profile": sh.profile, "k": sh.k, "overlap_at_k": sh.overlap_at_k,
                                           "kendall_tau": sh.kendall_tau, "selected_ids": list(sh.selected_ids)},
        "forced": forced,
        "query_length": len(params.query),
        "query": params.query if content_mode != OMIT else None,
        "ids": batch.ids,
        "layers": o.layer_of,
        "kinds": batch.kinds,
        "sources": batch.source,
        "content_length": np.fromiter(map(len, batch.contents), dtype=np.int64, count=n),
        "contents": batch.contents if content_mode != OMIT else None,
        "token_count": o.token_count,
        "token_estimated": o.token_estimated,
        "signals": signal_rows(s.signals, LOGGED_SIGNAL_PARTS),  # the columns themselves, by reference
        "final": o.final,
        "drop": o.drop,
        "rank": rank,
        "position": position,
        "covered_by": o.covered_by,
        "allocations": [vars(a) for a in o.allocations],
    }
    return out


def capture_feedback(request: pb.RecordFeedbackRequest, feedback_id: str, server_time: float) -> dict[str, Any]:
    """Everything a memrank.feedback.v1 record holds (the request is already validated)."""
    return {
        "kind": FEEDBACK,
        "feedback_id": feedback_id,
        "decision_id": request.decision_id,
        "request_id": request.request_id,
        "labeler": request.labeler,
        "server_time": server_time,
        "labels": [(label.candidate_id, label.relevance) for label in request.labels],
    }

"""Feedback win rate by profile: which of the served and the shadow selection held the memories that feedback
later marked relevant, computed from the decision log (``memrank shadow-report``).

The server keeps nothing between calls and RecordFeedback sees only the feedback, and a server-side shadow's
selection is not in the response a caller could send back: only the decision log holds both selections (a
decision record's ranked candidates and its ``shadow.selected_ids``) and, later, the labels (feedback records).
So the join happens here, offline, over the log files (``tuning.logs.join``: by decision_id, else request_id).

For each decision with a shadow and feedback, each selection's gain is its DCG over the labels:
``DCG(S) = sum over rank r = 1..|S| of grade(S[r]) / log2(r + 1)`` (unlabelled memories grade 0). The selection
with the larger DCG wins; equal DCGs tie. A decision whose candidates have no grade above 0 is not compared
(neither selection could serve it better). Rates are per (served profile, shadow profile) pair, over the
compared decisions, and the shadow's share of the decided ones (wins, ties left out) has a Wilson 95 % interval.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from memrank.tuning.logs import LogStats, join

WINNERS = ("served", "shadow", "tie")
_Z95 = 1.959963984540054


@dataclass
class PairTally:
    """One (served profile, shadow profile) pair's compared decisions."""

    profile: str
    shadow_profile: str
    served: int = 0  # the served selection had the larger DCG
    shadow: int = 0
    tie: int = 0

    @property
    def compared(self) -> int:
        """Decisions compared (wins of either side and ties)."""
        return self.served + self.shadow + self.tie

    def rate(self, winner: str) -> float:
        """Share of the compared decisions ``winner`` ("served", "shadow", "tie") took; 0 with none compared."""
        return getattr(self, winner) / self.compared if self.compared else 0.0

    def shadow_interval(self) -> tuple[float, float] | None:
        """Wilson 95 % interval of the shadow's share of the decided comparisons (None: none decided)."""
        return wilson(self.shadow, self.served + self.shadow)


@dataclass
class ShadowReport:
    """What the logs held and the tallies by profile pair."""

    stats: LogStats
    pairs: dict[tuple[str, str], PairTally] = field(default_factory=dict)
    without_shadow: int = 0  # decisions with feedback but no shadow
    nothing_relevant: int = 0  # decisions with a shadow and feedback, no grade above 0 among their candidates


def dcg(selection: Sequence[str], grades: dict[str, int]) -> float:
    """sum over rank r = 1.. of grade(selection[r]) / log2(r + 1)."""
    return sum(grades.get(cid, 0) / math.log2(r + 1) for r, cid in enumerate(selection, 1))


def wilson(successes: int, trials: int) -> tuple[float, float] | None:
    """Wilson score interval at 95 % of successes / trials (None when there are no trials)."""
    if trials == 0:
        return None
    p, z2 = successes / trials, _Z95 * _Z95
    centre = (p + z2 / (2 * trials)) / (1 + z2 / trials)
    half = _Z95 * math.sqrt(p * (1 - p) / trials + z2 / (4 * trials * trials)) / (1 + z2 / trials)
    return max(0.0, centre - half), min(1.0, centre + half)


def served_selection(decision: dict[str, Any]) -> list[str]:
    """The decision's selected candidate ids in rank order (``candidates.rank``, 1 = first)."""
    cands = decision["candidates"]
    ranked = [(r, cid) for cid, r in zip(cands["id"], cands["rank"], strict=True) if r is not None]
    return [cid for _, cid in sorted(ranked)]


def shadow_report(decisions: list[dict[str, Any]], feedback: list[dict[str, Any]]) -> ShadowReport:
    """Tally every decision with a shadow and feedback by its (served, shadow) profile pair."""
    report = ShadowReport(LogStats())
    for decision, grades in join(decisions, feedback, report.stats):
        shadow = decision.get("shadow")
        if not shadow:
            report.without_shadow += 1
            continue
        ids = set(decision["candidates"]["id"])
        if not any(g > 0 for cid, g in grades.items() if cid in ids):
            report.nothing_relevant += 1
            continue
        key = (decision["profile"], shadow["profile"])
        tally = report.pairs.setdefault(key, PairTally(*key))
        served, other = dcg(served_selection(decision), grades), dcg(shadow["selected_ids"], grades)
        if math.isclose(served, other, rel_tol=1e-12, abs_tol=1e-12):
            tally.tie += 1
        elif served > other:
            tally.served += 1
        else:
            tally.shadow += 1
    return report

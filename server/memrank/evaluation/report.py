"""Aggregation of per-question scores into the report's rows, the targets check, and the recall@k plot."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from memrank.evaluation._deps import require
from memrank.evaluation.bootstrap import paired
from memrank.evaluation.metrics import CURVE_KS, QuestionScores

SIDECAR_PROFILES = ("default", "generative-agents", "agent-observer", "lians-recall", "research")
OVERALL_CATEGORIES = (1, 2, 3, 4)
ALL_CATEGORIES = (1, 2, 3, 4, 5)
# The ranking-quality target on categories 1-4: recall@5 this far above the reference (LlamaIndex's fusion).
MARGIN_OVER_REFERENCE = 0.10


COMPARED = ("recall@5", "recall@10", "ndcg@10", "budget_recall@512", "redundancy@5")


@dataclass(frozen=True)
class Scored:
    """One question's scores under one profile."""

    category: int
    scores: QuestionScores
    key: str = ""  # "<conversation>/q<index>"

    def metric(self, name: str) -> float:
        """One of the ``COMPARED`` metrics of this question."""
        s = self.scores
        return {"recall@5": s.recall_at(5), "recall@10": s.recall_at(10), "ndcg@10": s.ndcg10,
                "budget_recall@512": s.budget_recall, "redundancy@5": s.redundancy5, "anyhit@5": s.anyhit5}[name]


def versus(scored: Sequence[Scored], reference: Sequence[Scored]) -> dict[str, Any]:
    """Paired-bootstrap difference to the reference row per metric, over categories 1-4 (same questions)."""
    mine = [s for s in scored if s.category in OVERALL_CATEGORIES]
    ref = [s for s in reference if s.category in OVERALL_CATEGORIES]
    if [s.key for s in mine] != [s.key for s in ref]:
        raise ValueError("versus: the two rows were not scored on the same questions")
    return {m: paired([s.metric(m) for s in mine], [s.metric(m) for s in ref]).as_dict() for m in COMPARED}


def _metrics(items: Sequence[QuestionScores]) -> dict[str, float]:
    if not items:
        return {"recall@5": 0.0, "recall@10": 0.0, "anyhit@5": 0.0, "ndcg@10": 0.0, "budget_recall@512": 0.0,
                "redundancy@5": 0.0}
    mean = lambda xs: round(float(np.mean(xs)), 4)  # noqa: E731
    return {
        "recall@5": mean([s.recall_at(5) for s in items]),
        "recall@10": mean([s.recall_at(10) for s in items]),
        "anyhit@5": mean([s.anyhit5 for s in items]),
        "ndcg@10": mean([s.ndcg10 for s in items]),
        "budget_recall@512": mean([s.budget_recall for s in items]),
        "redundancy@5": mean([s.redundancy5 for s in items]),
    }


def row(profile: str, scored: Sequence[Scored]) -> dict[str, Any]:
    """One report row: metrics over categories 1-4, then per category (1-5) with question counts."""
    overall = [s.scores for s in scored if s.category in OVERALL_CATEGORIES]
    by_cat = {}
    for c in ALL_CATEGORIES:
        items = [s.scores for s in scored if s.category == c]
        by_cat[str(c)] = {"questions": len(items), **_metrics(items)}
    return {"profile": profile, **_metrics(overall), "by_category": by_cat}


def curve(scored: Sequence[Scored]) -> list[float]:
    """Mean recall@k for k = 1..20 over categories 1-4."""
    items = [s.scores for s in scored if s.category in OVERALL_CATEGORIES]
    if not items:
        return [0.0] * len(CURVE_KS)
    return [round(float(np.mean([s.recall[j] for s in items])), 4) for j in range(len(CURVE_KS))]


def targets(rows: Sequence[Mapping[str, Any]], reference: str | None, profile: str = "default") -> dict[str, Any]:
    """The ranking-quality targets for ``profile`` against the reference row, categories 1-4.

    recall@5 at least ``MARGIN_OVER_REFERENCE`` above the reference with the paired interval above 0;
    recall within 512 tokens above it; redundancy@5 at most the reference's.
    """
    by = {r["profile"]: r for r in rows}
    if profile not in by or reference is None or reference not in by:
        return {}
    mine, ref = by[profile], by[reference]
    vs = mine.get("vs_reference", {})
    r5 = vs.get("recall@5", {"delta": 0.0, "ci95": [0.0, 0.0]})
    budget = vs.get("budget_recall@512", {"delta": 0.0, "ci95": [0.0, 0.0]})
    return {
        "recall@5_over_reference": {"reference": reference, "gain": r5["delta"], "ci95": r5["ci95"],
                                    "required": MARGIN_OVER_REFERENCE,
                                    "met": r5["delta"] >= MARGIN_OVER_REFERENCE and r5["ci95"][0] > 0},
        "budget_recall_over_reference": {"gain": budget["delta"], "ci95": budget["ci95"], "met": budget["delta"] > 0},
        "redundancy_at_most_reference": {"profile": mine["redundancy@5"], "reference": ref["redundancy@5"],
                                         "met": mine["redundancy@5"] <= ref["redundancy@5"]},
    }


def plot(curves: Mapping[str, Sequence[float]], baselines: Sequence[str], path: str | Path, title: str) -> None:
    """Recall@k (k = 1..20, categories 1-4) per profile; baselines dashed."""
    matplotlib = require("matplotlib")
    matplotlib.use("Agg")
    plt = require("matplotlib.pyplot", "matplotlib")
    fig, ax = plt.subplots(figsize=(8, 5), dpi=120)
    colours = plt.get_cmap("tab20").colors  # 20 distinct colours: the default cycle of 10 repeats past ten curves
    for i, (name, ys) in enumerate(curves.items()):
        ax.plot(CURVE_KS, ys, linestyle="--" if name in baselines else "-", marker=".", label=name,
                color=colours[i % len(colours)], linewidth=2.4 if name == "default" else 1.3)
    ax.set_xlabel("k (memories, by rank)")
    ax.set_ylabel("recall@k of evidence turns")
    ax.set_xticks(list(CURVE_KS))
    ax.set_ylim(0, 1)
    ax.grid(alpha=0.3)
    ax.set_title(title)
    ax.legend(fontsize=8, ncol=2, loc="lower right")
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)

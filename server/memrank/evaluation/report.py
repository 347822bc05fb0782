"""Aggregation of per-question scores into the report's rows, the targets check, and the recall@k plot."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from memrank.evaluation._deps import require
from memrank.evaluation.metrics import CURVE_KS, QuestionScores

SIDECAR_PROFILES = ("default", "generative-agents", "agent-observer", "lians-recall", "research")
OVERALL_CATEGORIES = (1, 2, 3, 4)
ALL_CATEGORIES = (1, 2, 3, 4, 5)
SINGLE_RETRIEVERS = ("bm25", "dense")
# The issue's targets on categories 1-4 (recall@5 margins; redundancy below rrf).
MARGIN_OVER_SINGLE = 0.09
MARGIN_OVER_MINMAX = 0.02


@dataclass(frozen=True)
class Scored:
    """One question's scores under one profile."""

    category: int
    scores: QuestionScores


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


def targets(rows: Sequence[Mapping[str, Any]], profile: str = "default") -> dict[str, Any]:
    """The issue's targets for ``profile`` on categories 1-4, each with the numbers and whether it is met."""
    by = {r["profile"]: r for r in rows}
    if profile not in by:
        return {}
    mine = by[profile]
    out: dict[str, Any] = {}
    singles = [by[p] for p in SINGLE_RETRIEVERS if p in by]
    if singles:
        best = max(singles, key=lambda r: r["recall@5"])
        gain = round(mine["recall@5"] - best["recall@5"], 4)
        out["over_best_single"] = {"best": best["profile"], "gain": gain, "required": MARGIN_OVER_SINGLE,
                                   "met": gain >= MARGIN_OVER_SINGLE}
    if "minmax" in by:
        gain = round(mine["recall@5"] - by["minmax"]["recall@5"], 4)
        out["over_minmax"] = {"gain": gain, "required": MARGIN_OVER_MINMAX, "met": gain >= MARGIN_OVER_MINMAX}
    if "rrf" in by:
        out["redundancy_below_rrf"] = {"profile": mine["redundancy@5"], "rrf": by["rrf"]["redundancy@5"],
                                       "met": mine["redundancy@5"] < by["rrf"]["redundancy@5"]}
    return out


def plot(curves: Mapping[str, Sequence[float]], baselines: Sequence[str], path: str | Path, title: str) -> None:
    """Recall@k (k = 1..20, categories 1-4) per profile; baselines dashed."""
    matplotlib = require("matplotlib")
    matplotlib.use("Agg")
    plt = require("matplotlib.pyplot", "matplotlib")
    fig, ax = plt.subplots(figsize=(8, 5), dpi=120)
    for name, ys in curves.items():
        ax.plot(CURVE_KS, ys, linestyle="--" if name in baselines else "-", marker=".", label=name,
                linewidth=2.4 if name == "default" else 1.3)
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

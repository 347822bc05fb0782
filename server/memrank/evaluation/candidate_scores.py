"""Per-candidate scores a caller computed itself, read from files for `memrank eval --candidate-scores`.

``--candidate-scores reranker=FILE``: FILE is JSON ``{question key: {turn id: score}}``, the question keys those of
the embeddings file (``"conv-26/q3"``, ``data.Question.key``), each score a finite number on any scale (e.g. a
cross-encoder's logits, as ``eval/rerank_scores.py`` writes them). The eval requests carry each score as the
candidate's ``reranker_score``; a candidate without one is sent without (the server then scores it as the batch's
lowest). ``reranker`` is the one kind of candidate score the API has.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType

KINDS = ("reranker",)
_NONE: Mapping[str, float] = MappingProxyType({})


class CandidateScoresError(ValueError):
    """A --candidate-scores option or file that cannot be used; the message names the option, file and key."""


@dataclass
class CandidateScores:
    """The reranker scores of each question (turn id -> score), and how many candidates the eval sent with one."""

    reranker: Mapping[str, Mapping[str, float]] = field(default_factory=dict)
    source: str = ""
    sent: int = 0  # candidates sent, over the questions evaluated
    scored: int = 0  # of those, candidates sent with a reranker_score
    questions_scored: int = 0  # questions with at least one scored candidate

    def of(self, key: str) -> Mapping[str, float] | None:
        """The scores of one question, None when the file has none (or no file was given)."""
        return self.reranker.get(key) if self.reranker else None

    def count(self, key: str, ids: Sequence[str]) -> None:
        """Count one question's pool (every profile sends the same candidates: counted once per question)."""
        scores = self.of(key) or _NONE
        hits = sum(1 for i in ids if i in scores)
        self.sent += len(ids)
        self.scored += hits
        self.questions_scored += hits > 0

    def summary(self) -> dict[str, object] | None:
        """What the report says about the scores, None without a file."""
        if not self.source:
            return None
        return {"reranker": {"file": self.source, "questions_in_file": len(self.reranker),
                             "questions_with_scored_candidates": self.questions_scored,
                             "candidates_sent": self.sent, "candidates_with_score": self.scored,
                             "share_with_score": round(self.scored / self.sent, 4) if self.sent else 0.0}}


def parse_option(specs: Sequence[str]) -> dict[str, Path]:
    """``["reranker=FILE"]`` -> ``{"reranker": Path(FILE)}``; an unknown kind or a repeated one is refused."""
    out: dict[str, Path] = {}
    for spec in specs:
        kind, sep, path = spec.partition("=")
        if not sep or not path:
            raise CandidateScoresError(f"--candidate-scores {spec!r}: expected KIND=FILE, e.g. reranker=scores.json")
        if kind not in KINDS:
            raise CandidateScoresError(f"--candidate-scores {spec!r}: unknown kind {kind!r} (known: "
                                       f"{', '.join(KINDS)})")
        if kind in out:
            raise CandidateScoresError(f"--candidate-scores: {kind} given twice")
        out[kind] = Path(path)
    return out


def load(files: Mapping[str, Path]) -> CandidateScores:
    """The scores of the files (``parse_option``'s result); empty scores without a file."""
    path = files.get("reranker")
    if path is None:
        return CandidateScores()
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise CandidateScoresError(f"--candidate-scores reranker={path}: cannot read it as JSON: {exc}") from None
    return CandidateScores(reranker=_checked(raw, path), source=str(path))


def _checked(raw: object, path: Path) -> dict[str, dict[str, float]]:
    where = f"--candidate-scores reranker={path}"
    if not isinstance(raw, dict):
        raise CandidateScoresError(f"{where}: expected an object {{question key: {{turn id: score}}}}")
    out: dict[str, dict[str, float]] = {}
    for key, turns in raw.items():
        if not isinstance(turns, dict):
            raise CandidateScoresError(f"{where}: [{key!r}] must be an object {{turn id: score}}")
        scores: dict[str, float] = {}
        for turn, score in turns.items():
            if isinstance(score, bool) or not isinstance(score, int | float) or not math.isfinite(score):
                raise CandidateScoresError(f"{where}: [{key!r}][{turn!r}] must be a finite number, got {score!r}")
            scores[turn] = float(score)
        out[key] = scores
    return out

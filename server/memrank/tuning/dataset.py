"""What tuning fits on: per query, the base profile's normalised signal columns, the gate and the graded labels.

Both loaders (``labels`` for RankRequest JSON lines, ``locomo`` for the
conversations `memrank eval` reads) produce a ``Dataset``; everything after
loading (metrics, coordinate ascent, folds) is pure numpy over it.
``Stack`` pads the queries into (query, candidate) matrices once, so a weight
vector is scored on every query at the same time.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np


class TuningError(ValueError):
    """The data cannot be tuned on as given; the message says which line, field or value, and why."""


@dataclass(frozen=True)
class Query:
    """One labelled query, scored once under the base profile."""

    key: str  # "<file>:<line>" or "<conversation>/q<index>"
    group: str  # cross-validation keeps a group's queries in one fold
    features: np.ndarray  # float64 (signals, n): the base profile's normalised columns (0 where gated)
    eligible: np.ndarray  # bool (n,): not gated (gated candidates are never returned)
    grades: np.ndarray  # float64 (n,): graded relevance, 0 = not relevant
    tokens: np.ndarray  # int64 (n,): token_count as the pipeline budgets it (estimated where unset)
    outside: np.ndarray  # float64 (m,): grades of relevant items that are not candidates (missed by retrieval)

    @property
    def relevant(self) -> int:
        """Relevant items in all, candidates or not (the recall denominator)."""
        return int((self.grades > 0).sum() + (self.outside > 0).sum())

    @property
    def reachable(self) -> bool:
        """True when at least one relevant item is a candidate (only such queries can teach a weight)."""
        return bool((self.grades > 0).any())


@dataclass(frozen=True)
class Dataset:
    """Labelled queries over the signals of one base profile."""

    base: str
    signals: tuple[str, ...]
    queries: tuple[Query, ...]
    skipped: int = 0  # queries left out: nothing relevant at all


@dataclass(frozen=True)
class Stack:
    """Queries padded to (query, candidate) matrices; padding is never eligible and never relevant."""

    features: np.ndarray  # float64 (signals, queries, width)
    eligible: np.ndarray  # bool (queries, width)
    grades: np.ndarray  # float64 (queries, width), 0 where gated or padding is irrelevant anyway
    tokens: np.ndarray  # int64 (queries, width)
    relevant: np.ndarray  # float64 (queries,): relevant items in all
    all_grades: tuple[np.ndarray, ...]  # per query, every relevant grade (candidates and outside), for ideal DCG

    @property
    def size(self) -> int:
        """Number of queries."""
        return int(self.eligible.shape[0])

    @staticmethod
    def of(queries: Sequence[Query], signals: int) -> Stack:
        """Pad the queries (each with ``signals`` feature rows) to the widest one."""
        width = max((q.grades.shape[0] for q in queries), default=0)
        n = len(queries)
        features = np.zeros((signals, n, width))
        eligible = np.zeros((n, width), dtype=bool)
        grades = np.zeros((n, width))
        tokens = np.zeros((n, width), dtype=np.int64)
        for i, q in enumerate(queries):
            m = q.grades.shape[0]
            features[:, i, :m] = q.features
            eligible[i, :m] = q.eligible
            grades[i, :m] = q.grades
            tokens[i, :m] = q.tokens
        relevant = np.array([q.relevant for q in queries], dtype=np.float64)
        every = tuple(np.concatenate([q.grades[q.grades > 0], q.outside[q.outside > 0]]) for q in queries)
        return Stack(features, eligible, grades, tokens, relevant, every)

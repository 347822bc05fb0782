"""The columnar form (``RankRequest.columns``) read into ``request_columns``' columns, and ``columns_of``, the
reader for a request in either form."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from memrank._gen.v1 import ranking_pb2 as pb
from memrank.api.request_columns import (
    COLUMNAR,
    CandidateColumns,
    Once,
    OptionalColumn,
    ScoreColumn,
    TimeColumn,
    nans,
)


def columns_of(req: pb.RankRequest, packed: bytes | memoryview | None = None) -> CandidateColumns:
    """The columns of a request in either form, its packed embeddings included (``packed``: the embeddings_f32
    bytes when the runtime split them off the wire, else the request's own)."""
    data = req.embeddings_f32 if packed is None else packed
    if req.HasField("columns"):
        return ColumnarCandidates(req.columns, data, req.embedding_dim)
    return CandidateColumns(req.candidates, data, req.embedding_dim)


def _column(name: str, default: object) -> Once[list[Any]]:
    """A column of CandidateColumns (the message) as a list: its values, or ``default`` for every row when empty."""
    def read(self: ColumnarCandidates) -> list[Any]:
        column = getattr(self.message, name)
        return list(column) if len(column) else [default] * self.n
    return Once(read)


def _optional_column(name: str, dtype: type) -> Once[OptionalColumn]:
    """An optional column of CandidateColumns (the message) with its ``<name>_present`` column."""
    def read(self: ColumnarCandidates) -> OptionalColumn:
        values = getattr(self.message, name)
        present = _present(values, getattr(self.message, name + "_present"), self.n)
        return OptionalColumn(present, np.array(values, dtype=dtype)[present] if len(values) else np.zeros(0, dtype))
    return Once(read)


class ColumnarCandidates(CandidateColumns):
    """The columnar form (``RankRequest.columns``) read into the same columns: each message column is read
    once, whole (a repeated scalar field converts in C). Its shape (every column empty or one value per id)
    is ``validate``'s first rule, checked before any column here is read."""

    def __init__(self, columns: pb.CandidateColumns, packed: bytes | memoryview = b"", dim: int = 0) -> None:
        super().__init__((), packed, dim, COLUMNAR)
        self.message = columns
        self.n = len(columns.ids)

    ids, layers, kinds, contents = _column("ids", ""), _column("layers", ""), _column("kinds", ""), \
        _column("contents", "")
    provenance, threads, speakers = _column("provenance", ""), _column("threads", ""), _column("speakers", "")
    access_count, token_count = _column("access_counts", 0), _column("token_counts", 0)
    source, safety, retrieval_scores = _column("sources", 0), _column("safety", 0), _column("retrieval_scores", 0.0)
    importance, position = _optional_column("importance", np.float64), _optional_column("positions", np.int64)

    @Once
    def reranker(self) -> OptionalColumn:
        """NaN: the row has no score, as in facet_scores."""
        values = self.message.reranker_scores
        column = np.array(values, dtype=np.float64) if len(values) else nans(self.n)
        present = ~np.isnan(column)
        return OptionalColumn(present, column[present])

    def _time(self, name: str) -> TimeColumn | None:
        column: pb.TimeColumn = getattr(self.message, name)
        if not len(column.seconds):
            return None
        mask = _present(column.seconds, column.present, self.n)
        seconds = np.array(column.seconds, dtype=np.int64)
        nanos = np.array(column.nanos, dtype=np.int64) if len(column.nanos) else np.zeros(self.n, dtype=np.int64)
        if not mask.all():
            seconds[~mask] = nanos[~mask] = 0  # an unset row's values are ignored, as an unset field's
        return TimeColumn(mask, seconds, nanos) if mask.any() else None

    def _scores(self, name: str) -> dict[str, ScoreColumn]:
        names = list(getattr(self.message, "facet_names" if name == "facet_scores" else "stage_names"))
        if not names:
            return {}
        matrix = np.array(getattr(self.message, name), dtype=np.float64).reshape(self.n, len(names))
        present = ~np.isnan(matrix)
        return {key: ScoreColumn(present[:, j].copy(), matrix[:, j].copy())
                for key, j in sorted((key, j) for j, key in enumerate(names)) if present[:, j].any()}

    @Once
    def metadata(self) -> list[tuple[int, dict[str, str]]]:
        return [(i, dict(row.entries)) for i, row in enumerate(self.message.metadata) if len(row.entries)]

    @Once
    def embedding_lengths(self) -> list[int]:
        return [0] * self.n  # the columnar form's embeddings are the packed matrix only

    @Once
    def row_embeddings(self) -> np.ndarray | None:
        return None


def _present(values: Sequence[object], present: Sequence[bool], n: int) -> np.ndarray:
    """Which rows set an optional column: none when it is empty, all when its presence column is."""
    if not len(values):
        return np.zeros(n, dtype=bool)
    return np.array(present, dtype=bool) if len(present) else np.ones(n, dtype=bool)

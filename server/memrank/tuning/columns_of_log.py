"""Second pass over fleet logs: the chosen decisions' candidate columns, flat numpy arrays, then one Query each.

Only the decisions the first pass chose (``index.sample``) are kept as they stream by; DuckDB unnests
their candidates into one row per candidate (position, id, gate, token count, each base signal's
normalised value, the merged grade), so what reaches Python is a handful of flat arrays, cut into
per-query views; never a dict per record. The columns are the ones ``logs.query_of_decision``
builds: a gated candidate has no features, a missing value is 0, labels outside the candidates are
the query's ``outside`` grades.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from memrank.core.profile import Profile
from memrank.decisions.record import DECISION_SCHEMA, GATES
from memrank.tuning.dataset import Query
from memrank.tuning.index import read_json

CANDIDATES = ("STRUCT(id VARCHAR[], outcome VARCHAR[], token_count BIGINT[], "
              "signals MAP(VARCHAR, STRUCT(normalized DOUBLE[])))")


def _group(rid: str, decision_id: str) -> str:
    return rid.rpartition("/")[0] if "/" in rid else rid or decision_id


def fetch(con: Any, files: list[str], base: Profile) -> tuple[list[Query], int]:
    """The chosen decisions as Queries in log order; and how many of them lack one of the base's signals."""
    names = [s.name for s in base.signals]
    cols = {"schema": "VARCHAR", "decision_id": "VARCHAR", "candidates": CANDIDATES}
    pick = ", ".join(f"c.signals[$s{i}].normalized AS s{i}" for i in range(len(names)))
    params: dict[str, Any] = {"f": files, **{f"s{i}": n for i, n in enumerate(names)}}
    con.execute("SET threads = 1")  # each thread holds its own buffers of whole candidate columns: one fits 1 GB
    con.execute(f"""
        CREATE TEMP TABLE picked AS
        SELECT ch.ord, r.decision_id, r.candidates.id AS ids, r.candidates.outcome AS outcome,
               r.candidates.token_count AS tokens, {pick.replace('c.signals', 'r.candidates.signals')}
        FROM {read_json('$f', cols)} r JOIN chosen ch ON r.decision_id = ch.decision_id
        WHERE r.schema = '{DECISION_SCHEMA}'
        QUALIFY row_number() OVER (PARTITION BY r.decision_id) = 1""", params)
    present = " AND ".join(f"s{i} IS NOT NULL" for i in range(len(names)))
    (missing,), = con.execute(f"SELECT count(*) FROM picked WHERE NOT ({present})").fetchall()
    con.execute(f"DELETE FROM picked WHERE NOT ({present})")
    signals = ", ".join(f"coalesce(unnest(s{i}), 0.0) AS s{i}" for i in range(len(names)))
    flat = con.execute(f"""
        WITH flat AS (SELECT ord, decision_id, unnest(ids) AS id, generate_subscripts(ids, 1) AS pos,
                             unnest(outcome) AS outcome, unnest(tokens) AS tokens, {signals} FROM picked)
        SELECT ord, NOT list_contains($gates, outcome) AS eligible, tokens, coalesce(m.rel, 0) AS grade,
               {', '.join(f's{i}' for i in range(len(names)))}
        FROM flat LEFT JOIN merged m ON m.target = flat.decision_id AND m.cid = flat.id
        ORDER BY ord, pos""", {"gates": sorted(GATES)}).fetchnumpy()
    outside = con.execute("""
        SELECT p.ord, m.rel FROM picked p JOIN merged m ON m.target = p.decision_id
        WHERE NOT list_contains(p.ids, m.cid) ORDER BY p.ord, m.cid""").fetchnumpy()
    keys = con.execute("SELECT ch.ord, ch.decision_id, ch.rid FROM chosen ch JOIN picked USING (ord) ORDER BY ord"
                       ).fetchall()
    return _queries(flat, outside, keys, len(names)), int(missing)


def _cuts(ords: np.ndarray, wanted: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    return np.searchsorted(ords, wanted, side="left"), np.searchsorted(ords, wanted, side="right")


def _queries(flat: dict[str, Any], outside: dict[str, Any], keys: list[tuple[int, str, str | None]],
             signals: int) -> list[Query]:
    ords = np.asarray(flat["ord"], dtype=np.int64)
    eligible = np.asarray(flat["eligible"], dtype=bool)
    features = np.stack([np.asarray(flat[f"s{i}"], dtype=np.float64) for i in range(signals)])
    features[:, ~eligible] = 0.0
    grades = np.asarray(flat["grade"], dtype=np.float64)
    tokens = np.asarray(flat["tokens"], dtype=np.int64)
    wanted = np.array([k[0] for k in keys], dtype=np.int64)
    lo, hi = _cuts(ords, wanted)
    out_ord = np.asarray(outside["ord"], dtype=np.int64)
    out_rel = np.asarray(outside["rel"], dtype=np.float64)
    olo, ohi = _cuts(out_ord, wanted)
    queries = []
    for j, (_, did, rid) in enumerate(keys):
        a, b = lo[j], hi[j]
        queries.append(Query(key=rid or did, group=_group(rid or "", did), features=features[:, a:b],
                             eligible=eligible[a:b], grades=grades[a:b], tokens=tokens[a:b],
                             outside=out_rel[olo[j]:ohi[j]]))
    return queries

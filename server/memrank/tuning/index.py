"""First pass over fleet logs: every record's ids, no candidate columns; the join, the counts and the sample.

DuckDB reads every file (gzip or plain, local or through s3fs) as JSON lines, keeping of each record
only its ids, times, profile, logged weights and feedback labels, in a database that spills to disk
past its memory limit. There the rules of ``tuning.logs`` are applied (its docstring states them):

- a record delivered twice is kept once: a decision by ``decision_id`` (the receipt digest, so the
  same decision), a feedback record by ``feedback_id`` (as ``logs.join`` already did);
- feedback joins its decision by ``decision_id``, else by ``request_id`` when exactly one (distinct)
  decision carries it: several is ambiguous, none is orphaned;
- labels merge per decision and candidate, a later label replacing an earlier one. "Later" is by the
  feedback's ``server_time`` (then file order): across a fleet the files have no order of their own;
- a labelled decision is used when it was logged with the base's signals and normalisers and has a
  label above 0.

Of the usable decisions, at most ``budget`` are kept: those with the smallest md5(seed:decision_id),
so a sample is the same on every run and every machine, and grows by adding decisions, not swapping.
"""

from __future__ import annotations

from typing import Any

from memrank.core.profile import Profile
from memrank.decisions.record import DECISION_SCHEMA, FEEDBACK_SCHEMA
from memrank.tuning.logs import LogStats

COLUMNS = {
    "schema": "VARCHAR", "decision_id": "VARCHAR", "request_id": "VARCHAR", "feedback_id": "VARCHAR",
    "server_time": "VARCHAR", "profile": "VARCHAR",
    "weights": "STRUCT(signal VARCHAR, normalization VARCHAR)[]",
    "labels": "STRUCT(candidate_id VARCHAR, relevance BIGINT)[]",
}
# Fits one decision of 10 signals x 20,000 candidates (about 13 MB of JSON); DuckDB sizes its read buffers by it
# (at 64 MB the second pass outgrew a 1 GB limit on 30 files of 32 MB).
MAX_OBJECT = 16 * 1024 * 1024


def read_json(files_param: str, columns: dict[str, str]) -> str:
    """The read_json call over a list parameter, keeping unreadable lines as all-NULL rows."""
    spec = ", ".join(f"'{k}': '{v}'" for k, v in columns.items())
    return (f"read_json({files_param}, format='newline_delimited', compression='auto', filename=true, "
            f"ignore_errors=true, maximum_object_size={MAX_OBJECT}, columns={{{spec}}})")


def build(con: Any, files: list[str]) -> dict[str, int]:
    """Load the records' ids into tables ``d`` (decisions, deduplicated) and ``fb`` (feedback); per file, how
    many lines the engine could not read as records."""
    con.execute("CREATE TEMP TABLE files AS SELECT unnest($f) AS file, generate_subscripts($f, 1) AS fidx",
                {"f": files})
    con.execute(f"""
        CREATE TEMP TABLE rec AS SELECT r.*, files.fidx FROM {read_json('$f', COLUMNS)} r
        JOIN files ON r.filename = files.file""", {"f": files})
    bad = con.execute(f"""
        SELECT filename, count(*) FROM rec
        WHERE schema IS NULL OR schema NOT IN ('{DECISION_SCHEMA}', '{FEEDBACK_SCHEMA}')
           OR (schema = '{DECISION_SCHEMA}' AND (decision_id IS NULL OR weights IS NULL))
           OR (schema = '{FEEDBACK_SCHEMA}' AND (feedback_id IS NULL OR labels IS NULL))
        GROUP BY filename""").fetchall()
    con.execute(f"""
        CREATE TEMP TABLE d AS
        SELECT decision_id, arg_min(request_id, (server_time, fidx)) AS rid, min(server_time) AS t,
               min(fidx) AS fidx, arg_min(profile, (server_time, fidx)) AS profile,
               arg_min(weights, (server_time, fidx)) AS weights, count(*) AS copies
        FROM rec WHERE schema = '{DECISION_SCHEMA}' AND decision_id IS NOT NULL AND weights IS NOT NULL
        GROUP BY decision_id""")
    con.execute(f"""
        CREATE TEMP TABLE fb AS
        SELECT feedback_id, decision_id, request_id, server_time, fidx, labels FROM rec
        WHERE schema = '{FEEDBACK_SCHEMA}' AND feedback_id IS NOT NULL AND labels IS NOT NULL""")
    con.execute("DROP TABLE rec")
    return {name: int(n) for name, n in bad}


def join(con: Any, base: Profile, stats: LogStats) -> None:
    """Resolve each (first) feedback record to its decision, merge the labels (table ``merged``) and mark the
    usable labelled decisions (table ``labelled``); fills the counts of ``stats``."""
    con.execute("""
        CREATE TEMP TABLE fb1 AS SELECT * FROM fb
        QUALIFY row_number() OVER (PARTITION BY feedback_id ORDER BY server_time, fidx) = 1""")
    con.execute("""
        CREATE TEMP TABLE resolved AS
        WITH reqs AS (SELECT rid, count(*) AS n, any_value(decision_id) AS did FROM d WHERE rid <> ''
                      GROUP BY rid)
        SELECT f.feedback_id, f.server_time, f.fidx, f.labels,
               CASE WHEN d.decision_id IS NOT NULL THEN d.decision_id WHEN r.n = 1 THEN r.did END AS target,
               d.decision_id IS NULL AND coalesce(r.n, 0) > 1 AS ambiguous
        FROM fb1 f LEFT JOIN d ON f.decision_id = d.decision_id
        LEFT JOIN reqs r ON f.request_id = r.rid AND f.request_id <> ''""")
    con.execute("""
        CREATE TEMP TABLE merged AS
        WITH lab AS (SELECT target, server_time, fidx, feedback_id, unnest(labels) AS l,
                            generate_subscripts(labels, 1) AS pos FROM resolved WHERE target IS NOT NULL)
        SELECT target, l.candidate_id AS cid, l.relevance AS rel FROM lab
        QUALIFY row_number() OVER (PARTITION BY target, l.candidate_id
                                   ORDER BY server_time DESC, fidx DESC, feedback_id DESC, pos DESC) = 1""")
    wanted = [f"{s.name}\x1f{s.normalization}" for s in base.signals]
    con.execute("""
        CREATE TEMP TABLE labelled AS
        WITH targets AS (SELECT DISTINCT target FROM resolved WHERE target IS NOT NULL),
             best AS (SELECT target, max(rel) AS top FROM merged GROUP BY target)
        SELECT d.decision_id, d.rid, d.t, d.fidx, d.profile,
               list_has_all(list_transform(d.weights, lambda w: w.signal || chr(31) || w.normalization), $wanted)
                   AS same_signals,
               coalesce(best.top, 0) > 0 AS relevant
        FROM targets JOIN d ON d.decision_id = targets.target LEFT JOIN best USING (target)""", {"wanted": wanted})
    (stats.decisions,), = con.execute("SELECT count(*) FROM d").fetchall()
    (stats.feedback, first), = con.execute("SELECT (SELECT count(*) FROM fb), count(*) FROM fb1").fetchall()
    stats.duplicates = stats.feedback - first
    (stats.ambiguous, stats.orphaned), = con.execute(
        "SELECT count(*) FILTER (ambiguous), count(*) FILTER (target IS NULL AND NOT ambiguous) FROM resolved"
    ).fetchall()
    (stats.labelled, stats.other_signals, stats.nothing_relevant), = con.execute(
        "SELECT count(*), count(*) FILTER (NOT same_signals), count(*) FILTER (same_signals AND NOT relevant) "
        "FROM labelled").fetchall()
    stats.unlabelled = stats.decisions - stats.labelled
    stats.profiles = dict(con.execute("SELECT profile, count(*) FROM labelled GROUP BY profile ORDER BY 1")
                          .fetchall())


def sample(con: Any, budget: int | None, seed: int) -> int:
    """Table ``chosen``: the usable decisions kept (at most ``budget``), in log order with their ordinal;
    returns how many were usable before sampling."""
    (usable,), = con.execute("SELECT count(*) FROM labelled WHERE same_signals AND relevant").fetchall()
    limit = "" if budget is None else f"ORDER BY md5($seed || ':' || decision_id) LIMIT {int(budget)}"
    con.execute(f"""
        CREATE TEMP TABLE chosen AS
        WITH kept AS (SELECT * FROM labelled WHERE same_signals AND relevant {limit})
        SELECT row_number() OVER (ORDER BY t NULLS LAST, fidx, decision_id) - 1 AS ord, decision_id, rid
        FROM kept""", {"seed": str(seed)} if budget is not None else {})
    return int(usable)

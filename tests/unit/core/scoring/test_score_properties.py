"""Properties of score() over arbitrary batches, under every built-in profile."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from memrank.core.scoring.combine import score
from memrank.core.signals import get_signal
from memrank.core.types import DropReason, Safety, Source
from memrank.profiles.builtin import BUILTIN_PROFILES
from tests.support.build import HOUR, REF, batch, ctx

WORDS = ["the", "log", "dialog", "Alice", "decided", "prefer", "thanks", "ignore previous instructions", "2024-03-01",
         "actually", "fixed", "never", "ok", "Σίσυφος", "東京", "\n", "42"]
TEXT = st.lists(st.sampled_from(WORDS), max_size=12).map(" ".join)
TIME = st.one_of(st.none(), st.floats(-1000.0, 1000.0).map(lambda h: REF - h * HOUR))
FACETS = st.dictionaries(st.sampled_from(["bm25", "dense", "graph"]), st.floats(-1e6, 1e6), max_size=3)
ROW = st.fixed_dictionaries({
    "kind": st.sampled_from(["decision", "fact", "preference", "note", ""]), "content": TEXT,
    "retrieval_score": st.floats(0.0, 1.0), "facet_scores": FACETS,
    "importance": st.one_of(st.none(), st.floats(0.0, 1.0)), "access_count": st.integers(0, 10_000),
    "created_at": TIME, "last_accessed_at": TIME, "event_time": TIME, "ingested_at": TIME,
    "valid_from": TIME, "valid_to": TIME, "source": st.integers(0, 8), "safety": st.integers(0, 5),
    "metadata": st.dictionaries(st.sampled_from(["topic", "_trust"]), st.just("x"), max_size=2),
})
CASE = st.tuples(st.lists(ROW, max_size=10), TEXT, st.sampled_from(sorted(BUILTIN_PROFILES)), st.booleans())
BOUNDED = {"lexical", "substring_match", "recency", "importance", "kind_prior", "access", "access_log", "trust",
           "confidence", "stability", "freshness", "safety", "retrieval", "relevance", "context", "speaker",
           "speaker_pair", "speaker_crowd"}
# The most a combined score can reach: 1 for every profile but generative-agents, whose seed sums three
# min-max normalised signals with weight 1 each.
COMBINED_MAX = {name: 3.0 if name == "generative-agents" else 1.0 for name in BUILTIN_PROFILES}


def _score(rows, query, name, lookup):
    return score(batch(*rows), ctx(query, explicit_lookup=lookup), BUILTIN_PROFILES[name])


@settings(max_examples=150, deadline=None)
@given(CASE)
def test_contributions_plus_blend_term_equal_combined(case):
    s = _score(*case)
    total = np.zeros(s.n)
    for c in s.signals:
        assert np.array_equal(c.contribution, c.weight * c.normalized)
        total = total + c.contribution
    assert np.allclose(total + s.blend_term, s.combined, rtol=0, atol=1e-12)
    assert np.array_equal(total + s.blend_term, s.combined)  # the documented summation order is exact


@settings(max_examples=150, deadline=None)
@given(CASE)
def test_every_signal_is_bounded_and_nothing_is_nan(case):
    s = _score(*case)
    for arr in (s.combined, s.blend_term, s.quality, s.importance):
        assert np.all(np.isfinite(arr))
    for c in s.signals:
        assert np.all(np.isfinite(c.raw)) and np.all(np.isfinite(c.normalized))
        if c.name in BOUNDED:
            assert np.all((c.raw >= 0.0) & (c.raw <= 1.0)), c.name
        if c.normalization != "none" or c.name in BOUNDED:
            assert np.all((c.normalized >= 0.0) & (c.normalized <= 1.0)), c.name
        assert len(c.reasons) == s.n and all(c.reasons)
    assert np.all((s.importance >= 0.0) & (s.importance <= 1.0))


@settings(max_examples=150, deadline=None)
@given(CASE)
def test_gates_drop_what_they_must_and_only_that(case):
    rows, query, name, lookup = case
    s = _score(rows, query, name, lookup)
    b = batch(*rows)
    lians = score(b, ctx(query), BUILTIN_PROFILES["lians-recall"])
    safety_col = next(c for c in lians.signals if c.name == "safety")
    def unsafe_at(i: int) -> bool:
        return rows[i]["safety"] in (Safety.UNSAFE, Safety.QUARANTINED, Safety.PENDING) or safety_col.raw[i] == 0.0

    def temporal_at(i: int) -> bool:
        r = rows[i]
        return ((r["event_time"] is not None and r["event_time"] > REF)
                or (r["valid_from"] is not None and r["valid_from"] > REF)
                or (r["valid_to"] is not None and r["valid_to"] <= REF))

    profile = BUILTIN_PROFILES[name]
    # The batch floor: every candidate the safety and temporal gates kept, when none of them reaches it.
    kept = [r["retrieval_score"] for i, r in enumerate(rows) if not unsafe_at(i) and not temporal_at(i)]
    nothing_relevant = profile.relevance_floor is not None and bool(kept) and max(kept) < profile.relevance_floor
    for i, r in enumerate(rows):
        unsafe, temporal = unsafe_at(i), temporal_at(i)
        zero = s.importance[i] == 0.0 and profile.gate_zero_importance and not lookup
        threshold = profile.relevance_threshold
        weak = (threshold is not None and r["retrieval_score"] < threshold) or nothing_relevant
        gate = s.gate[i]
        if unsafe:
            assert gate == DropReason.SAFETY_GATED
        elif temporal:
            assert gate in (DropReason.FUTURE_EVENT, DropReason.NOT_YET_VALID, DropReason.EXPIRED)
        elif weak:
            assert gate == DropReason.BELOW_THRESHOLD
        elif zero:
            assert gate == DropReason.ZERO_IMPORTANCE
        else:
            assert gate == DropReason.KEPT
        if gate:
            assert s.combined[i] == 0.0 and s.gate_reasons[i]
        else:
            assert s.gate_reasons[i] == ()


@settings(max_examples=50, deadline=None)
@given(CASE)
def test_scoring_is_deterministic_and_does_not_touch_its_input(case):
    rows, query, name, lookup = case
    b = batch(*rows)
    before = b.retrieval.copy(), b.importance.copy(), {k: v.copy() for k, v in b.facets.items()}
    first = score(b, ctx(query, explicit_lookup=lookup), BUILTIN_PROFILES[name])
    second = score(b, ctx(query, explicit_lookup=lookup), BUILTIN_PROFILES[name])
    assert np.array_equal(first.combined, second.combined) and first.gate_reasons == second.gate_reasons
    assert np.array_equal(before[0], b.retrieval) and np.array_equal(before[1], b.importance, equal_nan=True)
    assert all(np.array_equal(before[2][k], b.facets[k], equal_nan=True) for k in b.facets)
    assert not b.retrieval.flags.writeable


def test_trust_ignores_metadata_claims():
    rows = [{"source": int(Source.CHAT), "metadata": {"trust": "1.0", "_source": "system_verified"}}]
    s = score(batch(*rows), ctx(), BUILTIN_PROFILES["lians-recall"])
    assert next(c for c in s.signals if c.name == "trust").raw.tolist() == [0.65]


@settings(max_examples=150, deadline=None)
@given(CASE, st.data())
def test_importance_of_any_rows_is_the_importance_signal_of_those_rows(case, data):
    """Profiles that neither weigh nor gate on importance compute it only for the rows asked about."""
    rows, query, name, lookup = case
    b = batch(*rows)
    c = ctx(query, explicit_lookup=lookup)
    full = get_signal("importance")(b, c, BUILTIN_PROFILES[name], np.ones(b.n, dtype=bool)).values
    s = score(b, c, BUILTIN_PROFILES[name])
    picked = data.draw(st.lists(st.integers(0, max(b.n - 1, 0)), max_size=b.n, unique=True)) if b.n else []
    assert s.importance_of(np.array(picked, dtype=np.int64)).tolist() == full[picked].tolist()
    assert s.importance.tolist() == full.tolist()


@settings(max_examples=100, deadline=None)
@given(st.lists(ROW, max_size=8), st.data())
def test_take_is_the_batch_of_those_rows(rows, data):
    picked = data.draw(st.lists(st.integers(0, max(len(rows) - 1, 0)), max_size=len(rows), unique=True)) \
        if rows else []
    got, want = batch(*rows).take(picked), batch(*[rows[i] for i in picked])
    assert got.ids == tuple(f"c{i}" for i in picked)
    assert got.contents == want.contents and got.kinds == want.kinds and got.metadata == want.metadata
    for name in ("retrieval", "importance", "access_count", "created_at", "valid_to", "source", "safety"):
        assert np.array_equal(getattr(got, name), getattr(want, name), equal_nan=True), name
    assert got.facets.keys() >= want.facets.keys()
    for k, v in want.facets.items():
        assert np.array_equal(got.facets[k], v, equal_nan=True)


@settings(max_examples=200, deadline=None)
@given(CASE)
def test_every_combined_score_is_within_its_profiles_range(case):
    # Facet scores anywhere in the accepted [-1e6, 1e6] (raw BM25 of 40 included) never push a score out.
    s = _score(*case)
    top = COMBINED_MAX[case[2]]
    assert np.all((s.combined >= 0.0) & (s.combined <= top + 1e-12)), (case[2], s.combined)


def test_lians_recall_with_a_raw_bm25_facet_stays_bounded():
    # The reproduction: one candidate, retrieval 0.5, facet bm25 = 40. max fusion clips the facet to 1,
    # relevance = 0.5 x 1 + 0.5 x lexical; lexical: query "deploy alpha" vs "The user deploys alpha service":
    # "alpha" found, "deploy" not ("deploys" is another word): N = 1, both idf = ln(2/2) + 1 = 1 and
    # ln(2/1) + 1, lexical = 1 / (1 + ln 2 + 1).
    b = batch({"content": "The user deploys alpha service", "retrieval_score": 0.5, "facet_scores": {"bm25": 40.0}})
    s = score(b, ctx("deploy alpha"), BUILTIN_PROFILES["lians-recall"])
    rel = next(c for c in s.signals if c.name == "relevance")
    lex = 1.0 / (1.0 + np.log(2.0) + 1.0)
    assert float(rel.raw[0]) == __import__("pytest").approx(0.5 * 1.0 + 0.5 * lex, abs=1e-12)
    assert 0.0 <= float(s.combined[0]) <= 1.0

"""memrank's importance cue rules (lians-*): each expected value is written from the rule table in
docs/concepts/signals.md, importance = b + (1 - b) x (1 - prod(1 - v)) over the cues found."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memrank.core.errors import ConfigError
from memrank.core.signals import get_signal
from memrank.profiles.model import profile_from_mapping, profile_to_mapping
from tests.support.build import batch, profile, run

LIANS = profile("lians-recall")
FACT, DECISION, METRIC, DATE, CONSTRAINT, EVIDENCE = 0.25, 0.30, 0.15, 0.15, 0.30, 0.15


def cues(*rows: dict) -> tuple[list[float], list[tuple[str, ...]]]:
    got = run(get_signal("importance"), batch(*rows), p=LIANS)
    return got.values.tolist(), list(got.reasons)


def one(content: str, kind: str = "", importance: float | None = None) -> tuple[float, tuple[str, ...]]:
    values, reasons = cues({"content": content, "kind": kind, "importance": importance})
    return values[0], reasons[0]


def test_no_cue_leaves_the_caller_value_or_zero():
    assert one("the weather was nice on the walk", importance=0.6) == (
        0.6, ("caller importance 0.6", "no importance cue: 0.6"))
    assert one("the weather was nice on the walk") == (0.0, ("no caller importance: 0", "no importance cue: 0"))
    assert one("hi")[0] == 0.0


@pytest.mark.parametrize(("content", "kind", "what"), [
    ("The ledger is backed up nightly", "fact", "kind fact"),
    ("Ada maintains the billing service", "Profile", "kind profile"),
    ("My name is Ada", "", '"my name"'),
    ("I live in Lisbon with two cats", "", '"i live"'),
])
def test_fact(content, kind, what):
    value, why = one(content, kind)
    assert value == 0 + (1 - 0) * (1 - (1 - FACT))
    assert f"cue fact 0.25 ({what})" in why


def test_a_time_bound_fact_is_not_durable():
    value, why = one("My wife is at the store right now", importance=0.2)
    assert value == 0.2
    assert 'no fact cue: time-bound ("right now")' in why
    assert one("The deploy is frozen today", "fact")[0] == 0.0


@pytest.mark.parametrize(("content", "kind", "what"), [
    ("Postgres for the ledger", "decision", "kind decision"),
    ("Let's go with Postgres for the ledger", "", '"let s go with"'),
    ("We decided to drop the cache", "", '"we decided"'),
])
def test_decision(content, kind, what):
    value, why = one(content, kind)
    assert value == pytest.approx(1 - (1 - DECISION), abs=1e-15)
    assert f"cue decision 0.3 ({what})" in why


@pytest.mark.parametrize(("content", "what"), [
    ("p99 latency is 250ms after the change", '"250ms"'),
    ("p99 latency is 250 ms after the change", '"250 ms"'),
    ("the hit rate reached 95% again", '"95%"'),
    ("the build image takes 3.5 GB on disk", '"3.5 gb"'),
    ("the plan costs $120 for the team", '"$120"'),
    ("about 1,200 users signed up", '"1,200 users"'),
    ("Caché: 95 % de aciertos", '"95 %"'),
])
def test_metric(content, what):
    value, why = one(content)
    assert value == pytest.approx(1 - (1 - METRIC), abs=1e-15)
    assert f"cue metric 0.15 ({what})" in why


@pytest.mark.parametrize("content", ["I have 2 kids and a dog", "upgrade v2 ms later", "room 101 was booked",
                                     "the 3rd attempt", "x25ms is a name"])
def test_a_number_without_a_unit_is_no_metric(content):
    assert one(content)[0] == 0.0


@pytest.mark.parametrize(("content", "what"), [
    ("the release goes out on Monday", '"monday"'),
    ("we met the auditors yesterday", '"yesterday"'),
    ("the release goes out on 2026-03-01", "a numeric or month date"),
    ("the release goes out on March 3", "a numeric or month date"),
])
def test_date(content, what):
    value, why = one(content)
    assert value == pytest.approx(1 - (1 - DATE), abs=1e-15)
    assert f"cue date 0.15 ({what})" in why


@pytest.mark.parametrize(("content", "kind", "what"), [
    ("window seats on long flights", "preference", "kind preference"),
    ("no deploys on the freeze", "Constraint", "kind constraint"),
    ("I prefer window seats on long flights", "", '"i prefer"'),
    ("The user is allergic to peanuts", "", '"allergic"'),
])
def test_constraint(content, kind, what):
    value, why = one(content, kind)
    assert value == pytest.approx(1 - (1 - CONSTRAINT), abs=1e-15)
    assert f"cue constraint 0.3 ({what})" in why


@pytest.mark.parametrize(("content", "kind", "what"), [
    ("the queue drained slowly", "observation", "kind observation"),
    ("According to the runbook the queue drains slowly", "", '"according to"'),
    ("the fix is confirmed by the on-call engineer", "", '"confirmed"'),
    ("details at https://example.org/runbook", "", '"https"'),
])
def test_evidence(content, kind, what):
    value, why = one(content, kind)
    assert value == pytest.approx(1 - (1 - EVIDENCE), abs=1e-15)
    assert f"cue evidence 0.15 ({what})" in why


def test_cues_fill_the_headroom_of_the_caller_value():
    value, why = one("Ledger v2 uses Postgres 16 on Monday", "fact", importance=0.5)
    assert value == 0.5 + (1 - 0.5) * (1 - (1 - FACT) * (1 - DATE))  # 0.68125
    assert why == ("caller importance 0.5", "cue fact 0.25 (kind fact)", 'cue date 0.15 ("monday")',
                   "importance 0.5 + (1 - 0.5) x (1 - (1 - 0.25) x (1 - 0.15)) = 0.68125")


def test_each_cue_counts_once_and_all_six_stay_below_one():
    text = ("We decided on Monday, according to the logs, that p99 must stay under 250ms; "
            "my job is on call and we decided again on Tuesday")
    value, why = one(text)
    assert value == pytest.approx(1 - (1 - FACT) * (1 - DECISION) * (1 - METRIC) * (1 - DATE) * (1 - CONSTRAINT)
                                  * (1 - EVIDENCE), abs=1e-15)  # 0.7743...
    assert [r.split()[1] for r in why if r.startswith("cue ")] == [
        "fact", "decision", "metric", "date", "constraint", "evidence"]
    assert one(text, importance=1.0)[0] == 1.0


def test_the_category_profiles_keep_the_category_rules():
    got = run(get_signal("importance"), batch({"content": "We decided to ship on Monday"}), p=profile("default"))
    assert got.values.tolist() == [0.5] and got.reasons[0][0].startswith("importance rule decision_fact")


WORDS = ["my", "name", "we", "decided", "250ms", "95%", "$5", "monday", "2026-03-01", "must", "never",
         "according", "to", "https", "today", "right", "now", "hi", "thanks", "the", "ledger", "İ", "café", "7",
         "users", ",", "."]
ROWS = st.tuples(st.lists(st.sampled_from(WORDS), max_size=10).map(" ".join) | st.text(max_size=20),
                 st.sampled_from(["", "fact", "Decision", "note", "preference", "observation"]),
                 st.none() | st.floats(0.0, 1.0))


@settings(max_examples=200, deadline=None)
@given(st.lists(ROWS, min_size=1, max_size=8))
def test_bounded_and_the_same_alone_or_in_a_batch(rows):
    dicts = [{"content": c, "kind": k, "importance": b} for c, k, b in rows]
    values, reasons = cues(*dicts)
    for d, value, why in zip(dicts, values, reasons, strict=True):
        base = d["importance"] or 0.0
        assert base <= value <= 1.0
        assert cues(d) == ([value], [why])


def test_profile_files_name_the_rules():
    p = profile_from_mapping("profiles.mine", {"signals": [{"name": "importance", "weight": 1.0}],
                                               "importance_rules": "cues"})
    assert p.importance_rules == "cues" and profile_to_mapping(p)["importance_rules"] == "cues"
    assert profile("lians-admission").importance_rules == "cues" and profile("default").importance_rules == "category"
    with pytest.raises(ConfigError, match=r"profiles\.mine\.importance_rules: 'cue' is not one of category, cues"):
        profile_from_mapping("profiles.mine", {"signals": [{"name": "importance"}], "importance_rules": "cue"})

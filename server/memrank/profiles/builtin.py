"""Built-in profiles: four compatibility profiles and memrank's own presets.

Compatibility profiles reproduce a reference formula (README, "Profiles" and
"Where the profiles come from") and apply
no threshold and no diversity pass (diversity_lambda 1):

- ``agent-observer``: the Go scoreMemory, raw values summed:
  kind_prior + 0.30 retrieval + 0.25 substring_match + access, with Go's
  lower-casing and splitting (``core.text.golang``); retrieval_score may be
  any finite value, as Go takes any float64 (``grpc.validate.retrieval_range``).
  Go's number is the breakdown's final_score, not the calibrated public score.
- ``generative-agents``: recency (0.995/h, floor 0: the pure formula) +
  importance + retrieval, each min-max normalised, weights 1/1/1.
- ``lians-recall``: 0.8 retrieval + 0.2 quality, quality = .35 relevance
  (0.5 fused retrieval + 0.5 lexical) + .15 confidence + .15 importance
  + .10 trust + .10 freshness + .10 stability + .05 safety.
- ``lians-admission``: .25 importance + .20 stability + .20 confidence
  + .15 trust + .15 safety + .05 freshness (ScoreAdmission's default).

The seed gives no rule text for the lians importance ("caller importance plus
durable fact, decision, metric, date, constraint, and evidence signals"): both
lians profiles take memrank's own rules for those six cues
(``importance_rules="cues"``, ``core.signals.importance_cues``), not a
reproduction of the seed's.

memrank's own profiles are weighted sums whose weights add up to 1, so each
combined score is in [0, 1]. ``support``, ``assistant`` and ``research``
fuse facets by RRF and are untuned starting points.

``default`` is chosen by cross-validation on the six LoCoMo dev conversations
(``eval/cv.py``; protocol and table in ``eval/README.md``): weights fitted on
three conversations are scored on the other three and the reverse, and only
those out-of-fold numbers are reported (recall@5 0.654 against LlamaIndex's
relative-score fusion 0.527 on the same questions, +0.126, 95% paired
bootstrap [+0.102, +0.150]). The shipped weights are the same procedure run
on all six:

- relevance .193 (facets fused ``weighted``, bm25 0.2 / dense 0.8, min-max);
- lexical .288: the IDF share of the question's words a memory covers, with
  English Snowball stemming (kept: out of fold against the same procedure
  without stemming, recall@10 +0.014 [+0.001, +0.028], nDCG@10 +0.015
  [+0.004, +0.026], recall@5 +0.002 [-0.014, +0.017]);
- context .288: the best match among the memory's neighbours (same thread,
  position +/- 1): the turn that answers a question is often next to the one
  that matches it;
- speaker .154: the question names the memory's speaker;
- importance .077; recency fitted to 0.017 in one fold, 0 in the other and
  on all six: dropped (in a months-long transcript the newest session is not
  where the answers are);
- diversity lambda 0.9 (0.95, 0.8, 0.7 measured lower; 1.0 would turn off the
  covering set and with it the dropping of near-copies);
- relevance threshold 0.1 on retrieval_score, chosen before the weights: the
  largest floor that cut no gold evidence turn on conv-26/30 (0.15 cut 1.0%);
  on conv-41..44 it cut none either, recall@5 -0.001 [-0.002, 0.000] with the
  weights of the time. The weights above were then fitted with it in place.

- share_constant_weight: a signal whose normalised value is the same for
  every eligible candidate of a request gets weight 0 there, and the others
  share its weight pro rata (``core.scoring.constant``). Added after
  LongMemEval_S at session level (one candidate per chat session, speaker
  always "user") put `default` behind LlamaIndex: there context (no session
  has a neighbour) and speaker (never named) are 0 for every candidate, 44%
  of the weight was dead, the combined scores spanned at most 0.558, and the
  covering set's similarity penalty, on an absolute scale, weighed 1.8 times
  as much against them, pushing down the second and third evidence sessions
  of a question (one topic: median cosine 0.47 between them, 0.07 between
  any two candidates). The linear order never changes; on LoCoMo nothing
  changes (recall@5 +0.0000 out of fold); on LongMemEval dev, out of fold
  (``eval/cv_shapes.py``): recall@5 +0.0145 [+0.0047, +0.0262] over the
  `default` without it, +0.0121 [-0.0068, +0.0330] over LlamaIndex (before:
  -0.0024 [-0.0239, +0.0205]).

Callers that send no ``thread``/``position``/``speaker`` get 0 from those two
signals for every candidate; with share_constant_weight the ranking is then
relevance, lexical and importance with the whole weight between them. Facets
named other than ``bm25`` and ``dense`` weigh 1.0 each (an equal-weight
min-max fusion).
"""

from __future__ import annotations

from types import MappingProxyType

from memrank.core.profile import Profile, RecencySpec, SignalSpec


def _own(name: str, description: str, weights: dict[str, float], recency: RecencySpec | None = None) -> Profile:
    signals = tuple(SignalSpec(s, w, "min_max" if s == "relevance" else "none") for s, w in weights.items())
    return Profile(name=name, description=description, signals=signals, fusion="rrf", diversity_lambda=0.7,
                   recency=recency or RecencySpec())


_PROFILES = (
    Profile(
        name="default",
        description="memrank's own, chosen by cross-validation on LoCoMo dev: relevance, stemmed lexical IDF, "
                    "neighbour context and speaker, then importance; a signal constant in a request gives its "
                    "weight to the others; covering set",
        signals=(SignalSpec("relevance", 0.193, "min_max"), SignalSpec("lexical", 0.288),
                 SignalSpec("context", 0.288), SignalSpec("speaker", 0.154), SignalSpec("importance", 0.077)),
        fusion="weighted", facet_weights=MappingProxyType({"bm25": 0.2, "dense": 0.8}), diversity_lambda=0.9,
        lexical_stemmer="english", relevance_threshold=0.1, share_constant_weight=True,
    ),
    _own("support", "recency-led (half-life 48 h) for support agents",
         {"recency": 0.35, "relevance": 0.30, "importance": 0.10, "lexical": 0.10, "trust": 0.05,
          "kind_prior": 0.05, "access_log": 0.05}, recency=RecencySpec.from_half_life(48.0, 0.05)),
    _own("assistant", "importance-led for personal assistants",
         {"importance": 0.35, "relevance": 0.30, "lexical": 0.10, "recency": 0.10, "trust": 0.10,
          "kind_prior": 0.05}),
    _own("research", "relevance-led for research agents",
         {"relevance": 0.50, "lexical": 0.20, "confidence": 0.10, "trust": 0.10, "importance": 0.05,
          "recency": 0.05}),
    Profile(
        name="agent-observer",
        description="the Go scoreMemory: kind prior + 0.30 retrieval + 0.25 task-word substrings + access",
        signals=(SignalSpec("kind_prior", 1.0), SignalSpec("retrieval", 0.30), SignalSpec("substring_match", 0.25),
                 SignalSpec("access", 1.0)),
        formula="agent_observer", compatibility=True, gate_zero_importance=False,
    ),
    Profile(
        name="generative-agents",
        description="Park et al. 2023: min-max recency (0.995/h) + importance + relevance, weights 1/1/1",
        signals=(SignalSpec("recency", 1.0, "min_max"), SignalSpec("importance", 1.0, "min_max"),
                 SignalSpec("retrieval", 1.0, "min_max")),
        recency=RecencySpec(decay_per_hour=0.995, floor=0.0), compatibility=True, gate_zero_importance=False,
    ),
    Profile(
        name="lians-recall",
        description="seven-component quality, recall weights; final = 0.8 retrieval + 0.2 quality; importance "
                    "follows memrank's cue rules, not the seed's",
        signals=(SignalSpec("relevance", 0.35), SignalSpec("confidence", 0.15), SignalSpec("importance", 0.15),
                 SignalSpec("trust", 0.10), SignalSpec("freshness", 0.10), SignalSpec("stability", 0.10),
                 SignalSpec("safety", 0.05)),
        formula="blend", retrieval_blend=0.8, lexical_blend=0.5, compatibility=True, gate_zero_importance=False,
        importance_rules="cues",
    ),
    Profile(
        name="lians-admission",
        description="seven-component quality, admission weights (no relevance); importance follows memrank's "
                    "cue rules, not the seed's",
        signals=(SignalSpec("importance", 0.25), SignalSpec("stability", 0.20), SignalSpec("confidence", 0.20),
                 SignalSpec("trust", 0.15), SignalSpec("safety", 0.15), SignalSpec("freshness", 0.05)),
        compatibility=True, gate_zero_importance=False, importance_rules="cues",
    ),
)

BUILTIN_PROFILES = MappingProxyType({p.name: p for p in _PROFILES})

"""Built-in profiles: four compatibility profiles and memrank's own presets.

Compatibility profiles reproduce a reference formula (README, "Profiles" and
"Where the profiles come from") and apply
no threshold and no diversity pass (diversity_lambda 1):

- ``agent-observer``: the Go scoreMemory, raw values summed:
  kind_prior + 0.30 retrieval + 0.25 substring_match + access, with Go's
  lower-casing and splitting (``core.text.golang``); retrieval_score may be
  any finite value, as Go takes any float64 (``api.validate.retrieval_range``).
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

``default`` is fitted on both data shapes, LoCoMo's turns and LongMemEval_S's
sessions (``eval/cv_shapes.py``; protocol and tables in ``eval/README.md``):
inside two folds that hold out part of both datasets, its weights are the
listwise fit of ``memrank tune --model linear`` (softmax cross-entropy over
each question's candidates, weights >= 0, each dataset one half of the loss)
and lambda the best mean training recall@5 of the two; only the held-out
numbers are reported. Out of fold, recall@5 is 0.709 on 883 LoCoMo dev
questions (+0.056 [+0.039, +0.073] over the previous `default`, +0.182 over
LlamaIndex's relative-score fusion) and 0.927 on 177 LongMemEval dev
questions (+0.033 [+0.014, +0.056] over LlamaIndex), no category or question
type lower than before. The shipped weights are the same fit on all the dev
questions:

- relevance .166 (facets fused ``weighted``, bm25 0.2 / dense 0.8, min-max);
- lexical .159: the IDF share of the question's words a memory covers, with
  English Snowball stemming;
- date .156: the query names a date and the memory is from then;
- thread .121: the best match among the other memories of its thread (a
  session keeps to a topic);
- length .115: the log of its token count, full at 200 (a one-line reply
  rarely answers a question);
- context .109: the best match among the memory's neighbours (same thread,
  position +/- 1): the turn that answers a question is often next to the one
  that matches it;
- speaker_pair .092: the question names the memory's speaker, and at most two
  people speak in the request (``core.signals.speaker_crowd``). Fitted as
  ``speaker`` on two-person talk; when many people talk (FriendsQA: 9-20 per
  episode) naming someone does not say who said the answer, and the signal is
  0 there (constant, so its weight goes to the others). Rankings of requests
  with at most two speakers are exactly those of ``speaker``;
- hop .048: its cosine with one of the request's three best matches;
- statement .021: 0 for a memory that ends with a question mark;
- importance .013; recency is not among the fitted signals (in a months-long
  transcript the newest session is not where the answers are);
- diversity lambda 0.95 (0.9 and 0.8 measured lower in both folds; 1.0 would
  turn off the covering set and with it the dropping of near-copies);
- relevance floor 0.1 on retrieval_score, for the batch: when no candidate
  reaches it, nothing is selected; otherwise no candidate is dropped for its
  score. As a threshold on each candidate (0.1.0) it dropped the
  weakest candidate of every batch whose scores the caller min-max scaled
  (0 by construction): on FriendsQA's scene-sized pools it cut gold evidence
  in 7.2 % of questions (85 of 1,182). A caller whose scores are absolute
  (raw cosine) sends its own per-candidate RankRequest.relevance_threshold;
- share_constant_weight: a signal whose normalised value is the same for
  every eligible candidate of a request gets weight 0 there, and the others
  share its weight pro rata (``core.scoring.constant``). Added after
  LongMemEval_S at session level (one candidate per chat session, speaker
  always "user") put the earlier `default` behind LlamaIndex: there context,
  thread (no session has a neighbour) and speaker (never named) are 0 for
  every candidate, and their weight would be dead while the covering set's
  similarity penalty, on an absolute scale, kept its full weight.

``with-reranker`` is ``default`` (floor, covering set, sharing) with the caller's ``reranker_score`` among its
signals, fitted by the same procedure with ``reranker`` among the learned signals (``eval/cv_reranker.py``):
listwise on LoCoMo dev (883 questions) and LongMemEval_S dev (177), each dataset half the loss, scores of
ms-marco-MiniLM-L-12-v2 (``eval/rerank_scores.py``, INT8 ONNX) for every candidate of each question's pool, as a
caller that scores what it sends. Out of fold (folds by conversation) it is ahead of ``default`` on LoCoMo
(recall@5 .733 against .711, +.022 [+.011, +.034]) and level on LongMemEval (.929 against .923, +.006 [-.012,
+.023]), and ahead of the cross-encoder alone (+.039 [+.017, +.061] on LoCoMo, +.013 [-.023, +.047] on
LongMemEval). On FriendsQA (not in the fit), with scores for every candidate, it is ahead of ``default`` (+.016
[+.003, +.029]) and of the cross-encoder alone (+.029 [+.013, +.048]); with scores over a 30-turn shortlist only,
level with ``default`` (+.007 [-.008, +.022]). Weights: relevance .118, lexical .110, context .098, speaker_pair
.080, importance .016, thread .108, length .104, hop .034, statement .017, date .150, reranker .165; lambda 0.9.

Callers that send no ``thread``/``position``/``speaker`` get 0 from those two
signals for every candidate; with share_constant_weight the ranking is then
relevance, lexical and importance with the whole weight between them. Facets
named other than ``bm25`` and ``dense`` weigh 1.0 each (an equal-weight
min-max fusion).
"""

from __future__ import annotations

from dataclasses import replace
from types import MappingProxyType

from memrank.core.profile import Profile, RecencySpec, SignalSpec


def _own(name: str, description: str, weights: dict[str, float], recency: RecencySpec | None = None) -> Profile:
    signals = tuple(SignalSpec(s, w, "min_max" if s == "relevance" else "none") for s, w in weights.items())
    return Profile(name=name, description=description, signals=signals, fusion="rrf", diversity_lambda=0.7,
                   recency=recency or RecencySpec())


_DEFAULT = Profile(
    name="default",
    description="memrank's own, fitted listwise on two data shapes (LoCoMo turns, LongMemEval sessions): "
                "relevance, stemmed lexical IDF, neighbour and thread context, length, the named speaker when "
                "two talk, a second hop, statements over questions, the dates a query names; a signal constant "
                "in a request gives its weight to the others; covering set",
    signals=(SignalSpec("relevance", 0.166, "min_max"), SignalSpec("lexical", 0.159),
             SignalSpec("context", 0.109), SignalSpec("speaker_pair", 0.092), SignalSpec("importance", 0.013),
             SignalSpec("thread", 0.121), SignalSpec("length", 0.115), SignalSpec("hop", 0.048),
             SignalSpec("statement", 0.021), SignalSpec("date", 0.156)),
    fusion="weighted", facet_weights=MappingProxyType({"bm25": 0.2, "dense": 0.8}), diversity_lambda=0.95,
    lexical_stemmer="english", relevance_floor=0.1, share_constant_weight=True,
)

# Fitted by eval/cv_reranker.py on every LoCoMo (883) and LongMemEval (177) dev question with cross-encoder scores
# (module docstring: with-reranker).
_WITH_RERANKER = replace(
    _DEFAULT, name="with-reranker",
    description="default's signals plus the caller's reranker_score (the reranker signal: its logistic z-score in "
                "the batch), fitted listwise with it by default's procedure; without reranker scores its weight "
                "goes to the others",
    signals=(SignalSpec("relevance", 0.118, "min_max"), SignalSpec("lexical", 0.11), SignalSpec("context", 0.098),
             SignalSpec("speaker_pair", 0.08), SignalSpec("importance", 0.016), SignalSpec("thread", 0.108),
             SignalSpec("length", 0.104), SignalSpec("hop", 0.034), SignalSpec("statement", 0.017),
             SignalSpec("date", 0.15), SignalSpec("reranker", 0.165)),
    diversity_lambda=0.9,
)

_PROFILES = (
    _DEFAULT,
    _WITH_RERANKER,
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

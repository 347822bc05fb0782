"""`memrank tune`: a profile's signal weights fitted to the caller's own labelled queries.

Loading (``labels`` for RankRequest JSON lines, ``locomo`` for the
conversations `memrank eval` reads) scores every request once with the
server's own validation, conversion and core (``queries``) and keeps, per
query, the base profile's normalised signal columns, the gate and the graded
labels (``dataset``). The rest is pure numpy: ``metrics`` ranks by the linear
score sum(w_s x normalised_s) and measures recall, nDCG or budget recall;
``ascent`` fits the weights by coordinate ascent (also what ``eval/cv.py``
uses); ``crossval`` checks them fold by fold, by query group; ``output``
prints the tables and writes the config file.
"""

from __future__ import annotations

from memrank.tuning.ascent import Settings, coordinate_ascent, fit_weights, to_simplex
from memrank.tuning.crossval import CrossValidation, cross_validate
from memrank.tuning.dataset import Dataset, Query, Stack, TuningError
from memrank.tuning.metrics import Metric, Objective

__all__ = ["CrossValidation", "Dataset", "Metric", "Objective", "Query", "Settings", "Stack", "TuningError",
           "coordinate_ascent", "cross_validate", "fit_weights", "to_simplex"]

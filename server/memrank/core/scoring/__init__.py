"""Scoring: signals weighed into one score per candidate, the gates, and the order-producing stages.

In: a batch, its scoring context and a profile. Out: ``scores.Scores`` (every signal's raw, normalised and
weighted column, the combined score, each candidate's gate code and reasons) and the stage passes.
"""

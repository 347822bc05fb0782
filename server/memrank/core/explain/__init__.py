"""Explanation: what a ranking decided, in a form the transport and the auditor can read.

In: the batch, the scores and the selection. Out: ``outcome.RankOutcome`` (every candidate selected or
dropped with a reason, stage records, allocations), the shadow comparison, and the receipt's digest.
"""

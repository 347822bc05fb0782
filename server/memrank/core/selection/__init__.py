"""Selection: which eligible candidates fit each layer's budget, in what order, with what public score.

In: the scores after every stage, the gates' verdicts, layers and token counts. Out: ``select.Selection``
(picks, gains, why the rest were not picked, allocations), the tie order, placement and calibration buckets.
"""

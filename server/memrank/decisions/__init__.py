"""The decision log: Rank decisions and caller feedback as JSON records, off the request path.

In: a finished Rank call (its outcome, batch and response) or a validated
RecordFeedback request. ``capture`` takes what a record needs on the request
path (references and lengths, no formatting); ``log`` queues it for a log
writer process (``writer``, started by ``process``), which masks (``mask``),
formats (``record``) and writes it (``sink``, ``s3sink``). Out:
``memrank.decision.v1`` and ``memrank.feedback.v1`` JSON lines (schemas in
``schema/``), read back by ``memrank tune --log``.
"""

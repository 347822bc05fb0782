"""The scoring core: pure functions over numpy columns (no I/O, no clock, no gRPC, no metrics).

A request's path, top to bottom: ``batch`` (the request as columns) and ``profile`` (which signals, how
weighed) come in; ``text`` indexes the words; ``signals`` compute each raw signal and normalise it;
``scoring`` weighs them, applies the gates and the order-producing stages; ``selection`` picks the covering
set under each layer's budget, orders and calibrates it; ``explain`` writes what was decided (outcome,
shadow comparison, receipt). ``pipeline.rank`` drives one request; ``admission`` scores one new memory.
"""

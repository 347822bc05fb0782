"""speaker_pair and speaker_crowd: the speaker signal split by the number of people who speak in the batch."""

from __future__ import annotations

import numpy as np

from memrank.core.signals.speaker_crowd import distinct_speakers, speaker_crowd, speaker_pair
from tests.support.build import batch, ctx, run


def test_two_people_talking_count_as_a_pair():
    # Speakers Caroline, Melanie (twice) and one without a speaker: n = 2. The query names Caroline only.
    b = batch({"speaker": "Caroline"}, {"speaker": "Melanie"}, {"speaker": "Melanie"}, {})
    assert distinct_speakers(b) == 2
    pair = run(speaker_pair, b, ctx("What did Caroline research?"))
    assert pair.values.tolist() == [1.0, 0.0, 0.0, 0.0]
    assert pair.reasons[0] == ("the query names speaker 'Caroline'",)
    crowd = run(speaker_crowd, b, ctx("What did Caroline research?"))
    assert crowd.values.tolist() == [0.0, 0.0, 0.0, 0.0]
    assert crowd.reasons[0] == ("2 speakers: at most 2, not counted here",)


def test_three_people_talking_are_a_crowd():
    # Ross, Monica, Joey: n = 3 > 2. The query names Ross (a word of "Ross Geller") and Joey.
    b = batch({"speaker": "Ross Geller"}, {"speaker": "Monica Geller"}, {"speaker": "Joey Tribbiani"},
              {"speaker": "Ross Geller"})
    assert distinct_speakers(b) == 3
    q = ctx("Why did Ross call Joey?")
    assert run(speaker_pair, b, q).values.tolist() == [0.0, 0.0, 0.0, 0.0]
    assert run(speaker_pair, b, q).reasons[1] == ("3 speakers: more than 2, not counted here",)
    crowd = run(speaker_crowd, b, q)
    assert crowd.values.tolist() == [1.0, 0.0, 1.0, 1.0]
    assert crowd.reasons[1] == ("the query does not name speaker 'Monica Geller'",)


def test_one_speaker_and_none_are_not_a_crowd():
    # Every candidate the user's (LongMemEval's sessions): n = 1, a pair's signal (never a crowd's).
    b = batch({"speaker": "user"}, {"speaker": "user"})
    assert distinct_speakers(b) == 1
    assert run(speaker_pair, b, ctx("what did the user buy")).values.tolist() == [1.0, 1.0]
    assert run(speaker_crowd, b, ctx("what did the user buy")).values.tolist() == [0.0, 0.0]
    empty = batch({}, {})
    assert distinct_speakers(empty) == 0
    assert run(speaker_pair, empty, ctx("anything")).values.tolist() == [0.0, 0.0]
    assert run(speaker_crowd, empty, ctx("anything")).values.tolist() == [0.0, 0.0]


def test_the_two_columns_add_up_to_speaker_and_stay_in_0_1():
    # For any batch, exactly one of the two is the speaker column and the other is all 0.
    from memrank.core.signals.speaker import speaker

    for names in (["A1", "B1"], ["A1", "B1", "C1"], ["A1"] * 5, ["A1", "B1", "C1", "D1", "", "A1"]):
        b = batch(*({"speaker": n} if n else {} for n in names))
        q = ctx("did a1 or c1 say it")
        total = run(speaker_pair, b, q).values + run(speaker_crowd, b, q).values
        assert np.array_equal(total, run(speaker, b, q).values)
        assert ((total >= 0) & (total <= 1)).all()

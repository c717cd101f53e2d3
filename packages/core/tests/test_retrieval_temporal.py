"""Time phrases of a query resolved to a window of dates, without an LLM."""

from __future__ import annotations

import datetime as dt

from stratamem.core.retrieval.candidates import Pool
from stratamem.core.retrieval.temporal import (
    DAY_MS,
    asks_present,
    lift_in_window,
    lift_recent,
    time_window,
)


def ms(y: int, m: int, d: int) -> int:
    return int(dt.datetime(y, m, d, tzinfo=dt.UTC).timestamp() * 1000)


NOW = ms(2023, 6, 10) + 15 * 3_600_000


def days(text: str, tz: int = 0) -> tuple[dt.date, dt.date] | None:
    w = time_window(text, NOW, tz)
    if w is None:
        return None
    f = dt.datetime.fromtimestamp
    return f(w.start / 1000, dt.UTC).date(), f(w.end / 1000, dt.UTC).date()


def test_explicit_days_months_and_years_in_the_usual_spellings() -> None:
    may1 = (dt.date(2022, 5, 1), dt.date(2022, 5, 1))
    assert days("What movie did Joanna watch on 1 May, 2022?") == may1
    assert days("what did she watch on May 1st 2022") == may1
    assert days("on 2022-05-01?") == may1
    assert days("the painting from Sept. 3rd, 2021") == (dt.date(2021, 9, 3), dt.date(2021, 9, 3))
    assert days("What class did Maria start in December 2023?") == (
        dt.date(2023, 12, 1),
        dt.date(2023, 12, 31),
    )
    assert days("beach trips in 2023") == (dt.date(2023, 1, 1), dt.date(2023, 12, 31))
    # an impossible day falls back to its month
    assert days("on 31 February, 2023") == (dt.date(2023, 2, 1), dt.date(2023, 2, 28))


def test_relative_phrases_read_against_now() -> None:
    assert days("what did I do yesterday") == (dt.date(2023, 6, 9), dt.date(2023, 6, 9))
    assert days("3 days ago") == (dt.date(2023, 6, 6), dt.date(2023, 6, 8))
    assert days("last month") == (dt.date(2023, 5, 1), dt.date(2023, 5, 31))
    assert days("the trip last year") == (dt.date(2022, 1, 1), dt.date(2022, 12, 31))
    last_week = days("what did we discuss last week")
    assert last_week is not None and last_week[0] < dt.date(2023, 6, 3) < last_week[1]


def test_numbers_that_are_not_dates_name_no_window() -> None:
    for text in ("her 18th birthday", "what is 2023 minus 5", "room 1204", "how many days"):
        assert time_window(text, NOW) is None, text


def test_a_memory_mentions_an_event_from_a_day_before_to_ten_days_after() -> None:
    w = time_window("on 1 May, 2022", NOW)
    assert w is not None
    assert w.mentions(ms(2022, 5, 2))  # "I watched it last night"
    assert w.mentions(ms(2022, 4, 30) + 1)
    assert w.mentions(ms(2022, 5, 11))
    assert not w.mentions(ms(2022, 5, 12) + DAY_MS)
    assert not w.mentions(ms(2022, 4, 29))
    assert not w.mentions(None)


def test_lift_in_window_adds_the_weight_to_fused_candidates_told_in_it() -> None:
    pool = Pool("trace", (), lambda r: "")
    pool.add_channel(
        "fts",
        [
            ({"id": "in", "ts": ms(2022, 5, 3)}, 1.0),
            ({"id": "out", "ts": ms(2022, 7, 3)}, 1.0),
            ({"id": "unfused", "ts": ms(2022, 5, 3)}, 1.0),
        ],
    )
    pool.items["in"].prior = 0.2
    pool.items["out"].prior = 0.9
    assert lift_in_window(pool, time_window("in May 2022", NOW), 0.5) == 1
    assert pool.items["in"].prior == 0.7 and pool.items["out"].prior == 0.9
    assert pool.items["unfused"].prior is None
    assert lift_in_window(pool, None, 0.5) == 0


def test_present_time_cues_are_recognised_and_past_questions_are_not() -> None:
    for text in (
        "Where do I work now?",
        "What is my current job?",
        "Which city do I live in at the moment?",
        "Where am I living these days?",
        "What's my latest 5k time?",
    ):
        assert asks_present(text), text
    for text in ("Where did I work in 2021?", "What did Maria adopt?", "a knowing nod"):
        assert not asks_present(text), text


def test_lift_recent_puts_the_newest_of_the_best_candidates_ahead_of_a_superseded_one() -> None:
    pool = Pool("trace", (), lambda r: "")
    pool.add_channel(
        "fts",
        [
            ({"id": "old", "ts": ms(2022, 1, 1)}, 1.0),  # the superseded statement, best words
            ({"id": "mid", "ts": ms(2022, 6, 1)}, 1.0),
            ({"id": "new", "ts": ms(2023, 1, 1)}, 1.0),  # the update
            ({"id": "far", "ts": ms(2023, 5, 1)}, 1.0),  # newest, but not among the best two
        ],
    )
    for rid, prior in (("old", 0.9), ("mid", 0.5), ("new", 0.7), ("far", 0.1)):
        pool.items[rid].prior = prior
    assert lift_recent(pool, 0.6, top=3) == 3
    got = {rid: round(c.prior or 0.0, 6) for rid, c in pool.items.items()}
    assert got == {"old": 0.9, "mid": 0.8, "new": 1.3, "far": 0.1}
    assert lift_recent(pool, 0.0) == 0

"""Time phrases in a query ("on 3 June, 2023", "in May 2023", "last week", "3 days ago") resolved
to a window of dates, without an LLM, so memories told in that window can be preferred.

A conversation reports an event at or after it happens ("I watched it last night"), so a memory
*mentions* an event of the window when its own time falls from a day before the window's start to
``MENTION_LAG_DAYS`` after its end. Relative phrases are read against the query's ``now``.
"""

from __future__ import annotations

import calendar
import datetime as dt
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

DAY_MS = 86_400_000
#: a memory may mention an event up to this long after it happened
MENTION_LAG_DAYS = 10

_MONTHS = {
    name.lower(): i
    for i in range(1, 13)
    for name in (calendar.month_name[i], calendar.month_abbr[i])
}
_MONTHS["sept"] = 9
_MONTH = r"(?P<{}>" + "|".join(sorted(_MONTHS, key=len, reverse=True)) + r")\.?"
_DAY = r"(?P<{}>[0-3]?\d)(?:st|nd|rd|th)?"
_YEAR = r"(?P<{}>(?:19|20)\d\d)"
_PATTERNS: list[tuple[str, re.Pattern[str]]] = [
    (
        "day",
        re.compile(
            rf"\b{_DAY.format('d')}\s+(?:of\s+)?{_MONTH.format('m')},?\s+{_YEAR.format('y')}\b",
            re.I,
        ),
    ),
    (
        "day",
        re.compile(rf"\b{_MONTH.format('m')}\s+{_DAY.format('d')},?\s+{_YEAR.format('y')}\b", re.I),
    ),
    ("day", re.compile(r"\b(?P<y>(?:19|20)\d\d)-(?P<m>[01]\d)-(?P<d>[0-3]\d)\b")),
    ("month", re.compile(rf"\b{_MONTH.format('m')},?\s+(?:of\s+)?{_YEAR.format('y')}\b", re.I)),
    ("year", re.compile(rf"\b(?:in|during|of|since)\s+{_YEAR.format('y')}\b", re.I)),
]
_UNIT_DAYS = {"day": 1, "week": 7, "month": 30, "year": 365}
_AGO = re.compile(
    r"\b(?P<n>\d+|a|an|one|two|three|four|five|six)\s+(?P<u>day|week|month|year)s?\s+ago\b", re.I
)
_WORDS = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6}
_LAST = re.compile(
    r"\b(?P<w>yesterday|last\s+(?:night|weekend|week|month|year)|this\s+(?:week|month))\b", re.I
)


@dataclass(frozen=True, slots=True)
class TimeWindow:
    """Event window ``[start, end]`` (epoch ms, UTC) named by the query, and how it was found."""

    start: int
    end: int
    phrase: str

    def mentions(self, ts: int | None) -> bool:
        """Whether a memory told at ``ts`` can be about an event of this window."""
        if ts is None:
            return False
        return self.start - DAY_MS <= ts <= self.end + MENTION_LAG_DAYS * DAY_MS

    def span(self) -> tuple[None, int, int]:
        """The times of the memories that can mention the window (any session)."""
        return None, self.start - DAY_MS, self.end + MENTION_LAG_DAYS * DAY_MS


def _ms(d: dt.datetime) -> int:
    return int(d.replace(tzinfo=dt.UTC).timestamp() * 1000)


def _span(y: int, m: int = 0, d: int = 0) -> tuple[int, int] | None:
    try:
        if d:
            start = dt.datetime(y, m, d)
            return _ms(start), _ms(start) + DAY_MS - 1
        if m:
            start = dt.datetime(y, m, 1)
            days = calendar.monthrange(y, m)[1]
            return _ms(start), _ms(start) + days * DAY_MS - 1
        return _ms(dt.datetime(y, 1, 1)), _ms(dt.datetime(y + 1, 1, 1)) - 1
    except ValueError:
        return None


def _month(value: str) -> int:
    return int(value) if value.isdigit() else _MONTHS[value.lower().rstrip(".")]


def _relative(text: str, now_ms: int, tz_offset_minutes: int) -> TimeWindow | None:
    local_now = now_ms + tz_offset_minutes * 60_000
    today = local_now - local_now % DAY_MS - tz_offset_minutes * 60_000
    m = _AGO.search(text)
    if m:
        n = _WORDS.get(m["n"].lower()) or int(m["n"])
        unit = _UNIT_DAYS[m["u"].lower()] * DAY_MS
        centre = today - n * unit
        return TimeWindow(centre - unit // 2, centre + unit // 2 + DAY_MS - 1, m[0])
    m = _LAST.search(text)
    if not m:
        return None
    w = " ".join(m["w"].lower().split())
    day = dt.datetime.fromtimestamp(local_now / 1000, dt.UTC)
    if w in ("last month", "this month", "last year"):
        y, mo = day.year, day.month
        if w == "last month":
            y, mo = (y, mo - 1) if mo > 1 else (y - 1, 12)
        span = _span(y - 1) if w == "last year" else _span(y, mo)
        assert span is not None
        shift = tz_offset_minutes * 60_000
        return TimeWindow(span[0] - shift, span[1] - shift, m[0])
    back = {
        "yesterday": (1, 1),
        "last night": (1, 1),
        "last weekend": (9, 1),
        "last week": (14, 1),
        "this week": (7, 0),
    }[w]
    return TimeWindow(today - back[0] * DAY_MS, today - back[1] * DAY_MS + DAY_MS - 1, m[0])


def time_window(text: str, now_ms: int, tz_offset_minutes: int = 0) -> TimeWindow | None:
    """The first explicit date (day, month or year) named in ``text``, else a relative phrase."""
    for grain, pat in _PATTERNS:
        m = pat.search(text or "")
        if not m:
            continue
        y = int(m["y"])
        span = _span(
            y,
            _month(m["m"]) if grain in ("day", "month") else 0,
            int(m["d"]) if grain == "day" else 0,
        )
        if span is not None:
            return TimeWindow(span[0], span[1], m[0])
    return _relative(text or "", now_ms, tz_offset_minutes)


def lift_in_window(pool: Any, window: TimeWindow | None, weight: float) -> int:
    """Add ``weight`` to the fused ``prior`` of every candidate told inside the window; returns how
    many were lifted."""
    if window is None or weight <= 0:
        return 0
    n = 0
    for c in pool.items.values():
        ts = c.row.get("ts")
        if c.prior is not None and window.mentions(int(ts) if ts is not None else None):
            c.prior += weight
            n += 1
    return n


def by_cosine(
    rows: Sequence[Mapping[str, Any]], qvec: Any, column: str = "vec_summary"
) -> list[tuple[Mapping[str, Any], float]]:
    """Rows of the window, best cosine first (rows without a vector last)."""
    from stratamem.core.retrieval.candidates import unit

    out = []
    for r in rows:
        v = unit(r.get(column))
        cos = (
            float(v @ qvec)
            if v is not None and qvec is not None and v.shape == qvec.shape
            else -1.0
        )
        out.append((r, cos))
    out.sort(key=lambda rc: -rc[1])
    return out


#: the query asks about the present state of something that may have changed ("where do I live
#: now?", "my current job"): the newest of the matching memories should lead
_PRESENT = re.compile(
    r"\b(?:now|nowadays|currently|current|at the moment|these days|latest|most recent|anymore)\b",
    re.I,
)
#: how many of the best fused candidates compete on recency
RECENT_TOP = 10


def asks_present(text: str) -> bool:
    """Whether ``text`` asks about the present state (a present-time cue, no explicit date)."""
    return bool(_PRESENT.search(text or ""))


def lift_recent(pool: Any, weight: float, top: int = RECENT_TOP) -> int:
    """Add up to ``weight`` to the fused ``prior`` of the ``top`` best candidates by how recent
    they are among themselves (the newest gains ``weight``, the oldest nothing): a superseded
    statement that uses the question's own words no longer outranks the update that replaced
    it. Returns how many were lifted."""
    if weight <= 0:
        return 0
    best = sorted(
        (c for c in pool.items.values() if c.prior is not None),
        key=lambda c: -float(c.prior),
    )[:top]
    times = sorted({int(c.row.get("ts") or 0) for c in best})
    if len(times) < 2:
        return 0
    rank = {ts: i / (len(times) - 1) for i, ts in enumerate(times)}
    for c in best:
        c.prior = float(c.prior) + weight * rank[int(c.row.get("ts") or 0)]
    return len(best)

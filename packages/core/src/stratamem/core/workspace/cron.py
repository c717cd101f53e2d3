"""A tiny five-field cron matcher (minute hour day-of-month month day-of-week) for the insight schedule."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from stratamem.core.workspace.errors import invalid

_RANGES = ((0, 59), (0, 23), (1, 31), (1, 12), (0, 7))


def _field(text: str, lo: int, hi: int) -> frozenset[int]:
    values: set[int] = set()
    for part in text.split(","):
        step = 1
        if "/" in part:
            part, step_text = part.split("/", 1)
            if not step_text.isdigit() or int(step_text) < 1:
                raise ValueError(f"bad step {step_text!r}")
            step = int(step_text)
        if part == "*":
            start, end = lo, hi
        elif "-" in part:
            a, b = part.split("-", 1)
            if not (a.isdigit() and b.isdigit()):
                raise ValueError(f"bad range {part!r}")
            start, end = int(a), int(b)
        elif part.isdigit():
            start = int(part)
            end = hi if step > 1 else start
        else:
            raise ValueError(f"bad value {part!r}")
        if start < lo or end > hi or start > end:
            raise ValueError(f"{part!r} out of range {lo}-{hi}")
        values.update(range(start, end + 1, step))
    return frozenset(values)


@dataclass(frozen=True, slots=True)
class CronSchedule:
    expression: str
    minutes: frozenset[int]
    hours: frozenset[int]
    days: frozenset[int]
    months: frozenset[int]
    weekdays: frozenset[int]  # 0 = Sunday
    day_any: bool
    weekday_any: bool

    def matches(self, when: dt.datetime) -> bool:
        if when.minute not in self.minutes or when.hour not in self.hours:
            return False
        if when.month not in self.months:
            return False
        weekday = (when.weekday() + 1) % 7
        day_ok = when.day in self.days
        wd_ok = weekday in self.weekdays
        if self.day_any or self.weekday_any:
            return day_ok and wd_ok
        return day_ok or wd_ok  # classic cron: either restricted field may match

    def next_after(self, when: dt.datetime) -> dt.datetime:
        """The first matching minute strictly after ``when`` (searches up to ~4 years)."""
        t = when.replace(second=0, microsecond=0) + dt.timedelta(minutes=1)
        for _ in range(366 * 4 * 24 * 60):
            if self.matches(t):
                return t
            t += dt.timedelta(minutes=1)
        raise ValueError(f"cron expression never fires: {self.expression}")


def parse_cron(expression: str) -> CronSchedule:
    """Parse ``m h dom mon dow``; a bad expression is ``invalid_argument``."""
    if not isinstance(expression, str):
        raise invalid("cron expression must be a string")
    fields = expression.split()
    if len(fields) != 5:
        raise invalid("cron expression needs five fields", expression=expression)
    try:
        parsed = [_field(f, lo, hi) for f, (lo, hi) in zip(fields, _RANGES, strict=True)]
    except ValueError as exc:
        raise invalid(f"bad cron expression: {exc}", expression=expression) from None
    weekdays = frozenset(d % 7 for d in parsed[4])
    return CronSchedule(
        expression,
        parsed[0],
        parsed[1],
        parsed[2],
        parsed[3],
        weekdays,
        day_any=fields[2] == "*",
        weekday_any=fields[4] == "*",
    )

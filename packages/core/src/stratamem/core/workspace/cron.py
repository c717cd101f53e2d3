"""The insight schedule's five-field cron expressions (minute hour day-of-month month day-of-week).

Parsing and evaluation are ``cronsim``'s (Debian cron semantics, names, ``L``/``W``/``#``); this module
only keeps the schedule to five fields and turns its errors into ``invalid_argument``.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from cronsim import CronSim, CronSimError

from stratamem.core.workspace.errors import invalid

_EPOCH = dt.datetime(2000, 1, 1)


def _minute(when: dt.datetime) -> dt.datetime:
    return when.replace(second=0, microsecond=0)


@dataclass(frozen=True, slots=True)
class CronSchedule:
    expression: str

    def matches(self, when: dt.datetime) -> bool:
        """Whether the schedule fires in ``when``'s minute."""
        minute = _minute(when)
        return next(CronSim(self.expression, minute - dt.timedelta(seconds=1))) == minute

    def next_after(self, when: dt.datetime) -> dt.datetime:
        """The first matching minute strictly after ``when``'s minute."""
        return next(CronSim(self.expression, _minute(when)))


def parse_cron(expression: str) -> CronSchedule:
    """Parse ``m h dom mon dow``; a bad expression is ``invalid_argument``."""
    if not isinstance(expression, str):
        raise invalid("cron expression must be a string")
    if len(expression.split()) != 5:
        raise invalid("cron expression needs five fields", expression=expression)
    try:
        CronSim(expression, _EPOCH)
    except CronSimError as exc:
        raise invalid(f"bad cron expression: {exc}", expression=expression) from None
    return CronSchedule(expression)

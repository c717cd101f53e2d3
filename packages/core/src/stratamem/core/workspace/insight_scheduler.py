"""Runs insight extraction on each configured root's cron schedule; re-syncs when settings change.

The clock is injected so the schedule is testable without waiting for 2 AM.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from stratamem.core.telemetry import get_logger
from stratamem.core.workspace.cron import CronSchedule, parse_cron
from stratamem.core.workspace.insights import InsightRunOutcome, LlmProvider, run_insight_extraction
from stratamem.core.workspace.settings import load_settings, settings_path


def _log() -> Any:
    return get_logger(
        "workspace.insight_scheduler"
    )  # resolved per call: honours logging configured later


def _utcnow() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


class InsightScheduler:
    """``start()``/``stop()`` a background loop; ``tick(now)`` runs what is due at that minute."""

    def __init__(
        self,
        roots: Iterable[Path] | Callable[[], Iterable[Path]],
        llm: LlmProvider | None,
        *,
        clock: Callable[[], dt.datetime] = _utcnow,
        poll_seconds: float = 30.0,
    ) -> None:
        self._roots = roots
        self.llm = llm
        self.clock = clock
        self.poll_seconds = poll_seconds
        self.schedules: dict[Path, CronSchedule] = {}
        self._signatures: dict[Path, float | None] = {}
        self._last_fired: dict[Path, dt.datetime] = {}
        self._task: asyncio.Task[None] | None = None
        self.outcomes: list[tuple[Path, InsightRunOutcome]] = []

    def _root_list(self) -> list[Path]:
        roots = self._roots() if callable(self._roots) else self._roots
        return [Path(r) for r in roots]

    def resync(self) -> dict[Path, CronSchedule]:
        """Re-read every root's settings: enabled roots get their (valid) schedule, others none."""
        schedules: dict[Path, CronSchedule] = {}
        for root in self._root_list():
            try:
                sig = settings_path(root).stat().st_mtime_ns
            except OSError:
                sig = None
            self._signatures[root] = sig
            settings = load_settings(root)
            if not settings["insight_extraction_enabled"]:
                continue
            try:
                schedules[root] = parse_cron(settings["insight_extraction_schedule"])
            except Exception as exc:
                _log().warning(
                    "bad insight schedule, root not scheduled", root=str(root), error=str(exc)
                )
        self.schedules = schedules
        return schedules

    def _settings_changed(self) -> bool:
        roots = self._root_list()
        if set(roots) != set(self._signatures):
            return True
        for root in roots:
            try:
                sig: float | None = settings_path(root).stat().st_mtime_ns
            except OSError:
                sig = None
            if sig != self._signatures.get(root):
                return True
        return False

    async def tick(self, now: dt.datetime | None = None) -> list[tuple[Path, InsightRunOutcome]]:
        """Resync if settings changed, then run each root whose schedule matches this minute once."""
        when = (now or self.clock()).replace(second=0, microsecond=0)
        if self._settings_changed():
            self.resync()
        ran: list[tuple[Path, InsightRunOutcome]] = []
        for root, schedule in list(self.schedules.items()):
            if not schedule.matches(when) or self._last_fired.get(root) == when:
                continue
            self._last_fired[root] = when
            outcome = await run_insight_extraction(root, self.llm, load_settings(root), now=when)
            ran.append((root, outcome))
        self.outcomes.extend(ran)
        return ran

    def start(self) -> None:
        if self._task is None or self._task.done():
            self.resync()
            self._task = asyncio.get_running_loop().create_task(self._loop())

    async def _loop(self) -> None:
        while True:
            try:
                await self.tick()
            except Exception as exc:
                _log().warning("insight scheduler tick failed", error=str(exc))
            await asyncio.sleep(self.poll_seconds)

    async def stop(self) -> None:
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    @property
    def running(self) -> bool:
        return self._task is not None and not self._task.done()

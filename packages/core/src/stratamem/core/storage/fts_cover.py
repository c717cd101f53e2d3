"""Whether a table's FTS index answers for every row it holds, and bringing it up to date before
the LanceDB path runs a text query on it.

Why: LanceDB scores rows its ``search_text`` index does not cover (appended or rewritten since it
was built) by a flat scan whose BM25 is not on the indexed rows' scale, and a delete leaves its
rows in the index's statistics until a rebuild or ``optimize``. The same memories then ranked
differently depending on when the index was last built (bench/results/lance-fts-session18.md:
with the index built on a first batch of 6 of 24 rows, the right answer left the top 5), while
the hot index computes BM25 over every row. Folding the rows in at write time costs a full
rebuild per writer batch whether or not anything reads LanceDB (the hot index serves by default),
so the LanceDB path folds them in when it reads: at most one rebuild per text query after writes,
none while only the hot index reads. A store without a hot index (every text query reads
LanceDB) starts the fold when the write lands, so a query arriving later finds it done.

Every write counts a change of its table after its commit; an index build records the count it
started from (a write committed before it started is in the rows it indexes)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

from stratamem.core.telemetry import get_logger

_log = get_logger("storage")

#: a full build of one table's FTS index over the rows it holds now
Build = Callable[[str], Awaitable[None]]


class FtsCover:
    """Per table: changes written, changes the FTS index is known to cover, the running fold."""

    def __init__(self, build: Build) -> None:
        self._build = build
        self._changes: dict[str, int] = {}
        self._covered: dict[str, int] = {}
        self._folding: dict[str, asyncio.Task[None]] = {}
        #: folds run since open (tests and the bench)
        self.folds = 0

    def changed(self, name: str) -> None:
        """A write to ``name`` committed (rows added, rewritten or deleted)."""
        self._changes[name] = self._changes.get(name, 0) + 1

    def mark(self, name: str) -> int:
        """The change count an index build starting now will cover (pass it to ``covered``)."""
        return self._changes.get(name, 0)

    def covered(self, name: str, mark: int) -> None:
        """An index build (or an optimize) started at ``mark`` has committed."""
        self._covered[name] = max(self._covered.get(name, -1), mark)

    def soon(self, name: str) -> None:
        """Start a fold in the background unless one is running: a store without a hot index
        serves every text query from LanceDB, so the rebuild starts when a write lands and a
        query arriving after it finds the index current (one arriving sooner waits for it; a
        write landing while it runs is left to the next write or query)."""
        task = self._folding.get(name)
        if task is None or task.done():
            self._folding[name] = asyncio.get_running_loop().create_task(self._quiet_fold(name))

    async def settle(self, name: str | None = None) -> None:
        """Wait for the running fold of ``name`` (every table's: None), e.g. before the store
        closes, so no index build of this process commits after it let the home go."""
        for table, task in list(self._folding.items()):
            if name in (None, table):
                await asyncio.shield(task)

    async def _quiet_fold(self, name: str) -> None:
        try:
            await self._fold(name)
        except Exception as exc:  # the next query folds again
            _log.warning("storage.fts_fold_failed", table=name, error=str(exc))

    async def current(self, name: str) -> None:
        """Bring ``name``'s FTS index up to date with the writes committed before this call.

        One fold runs per table at a time; a query arriving meanwhile waits for it (and for one
        more if a write committed after it started). Shielded: a query cut off by its deadline
        leaves the fold to finish for the next one. A failed fold is logged and the query reads
        the index as it is."""
        want = self._changes.get(name, 0)
        while self._covered.get(name, -1) < want:
            task = self._folding.get(name)
            if task is None or task.done():
                task = asyncio.get_running_loop().create_task(self._fold(name))
                self._folding[name] = task
            try:
                await asyncio.shield(task)
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                _log.warning("storage.fts_fold_failed", table=name, error=str(exc))
                return

    async def _fold(self, name: str) -> None:
        await self._build(name)  # records what it covered (``mark`` / ``covered``)
        self.folds += 1

    def cancel(self) -> None:
        for task in self._folding.values():
            task.cancel()

"""The hot index: every LanceDB table of a home mirrored in memory, written through by the store.

LanceDB stays the store of record. ``LanceStore`` calls ``upsert``/``update``/``delete`` here after
each successful write, so a query served from memory sees exactly what a LanceDB query would, without
a round trip; ``load`` rebuilds everything from LanceDB at open (restart, or after something wrote
the tables behind the store's back). Acknowledged, not yet applied journal rows stay the journal's
(searched beside this index), which keeps read-your-writes without a second copy.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from typing import Any

from stratamem.core.config.settings import Section
from stratamem.core.hotindex.blas import limit_blas_threads
from stratamem.core.hotindex.scoped import ScopedHotTable
from stratamem.core.hotindex.table import HotTable
from stratamem.core.storage.ownership import Scope
from stratamem.core.telemetry import get_logger

_log = get_logger("hotindex")


class HotIndex:
    def __init__(self, tables: Mapping[str, Sequence[str]], dim: int, cfg: Mapping[str, Any]):
        self.cfg = cfg
        self.dim = dim
        self.tables = {name: HotTable(name, cols, dim, cfg) for name, cols in tables.items()}
        self._builds: set[asyncio.Task[None]] = set()
        limit_blas_threads(Section("storage", cfg).get_int("hot_blas_threads"))

    def scoped(self, name: str, scope: Scope) -> ScopedHotTable | None:
        """``name`` as the query path sees it: every mask narrowed to ``scope``, rows outside it
        refused (``hotindex/scoped.py``); None while it holds no live row (readers skip it)."""
        t = self.tables.get(name)
        return ScopedHotTable(t, scope) if t is not None and t.live > 0 else None

    def maintenance_table(self, name: str, job: str) -> HotTable | None:
        """The raw table, every namespace's rows: only for a named maintenance job (footprint,
        benchmarks). Never on the query path (a test checks)."""
        if not job:
            raise ValueError("an unscoped hot table needs the name of its job")
        t = self.tables.get(name)
        return t if t is not None and t.live > 0 else None

    # -- write-through -----------------------------------------------------------------------
    def upsert(self, name: str, rows: Sequence[Mapping[str, Any]]) -> None:
        t = self.tables[name]
        t.upsert(rows)
        self._maybe_build(t)

    def update(self, name: str, row_id: str, values: Mapping[str, Any]) -> None:
        self.tables[name].update(row_id, values)

    def delete(self, name: str, ids: Sequence[str]) -> None:
        self.tables[name].delete(ids)

    # -- (re)build from the store of record --------------------------------------------------
    async def load(
        self, lance_tables: Mapping[str, Any], *, wait_ann: bool = True
    ) -> dict[str, int]:
        """Replace every table's contents with LanceDB's, batch by batch, column-wise (vectors as
        one matrix per batch, postings as arrays): the state the write-through path would build."""
        counts: dict[str, int] = {}
        for name, tbl in lance_tables.items():
            if name not in self.tables:
                continue
            old = self.tables[name]
            fresh = HotTable(name, old.vec_cols, self.dim, self.cfg)
            fresh.reserve(int(await tbl.count_rows()))
            reader = await tbl.query().to_batches(max_batch_length=8192)
            async for batch in reader:
                fresh.load_batch(batch)
                await asyncio.sleep(0)  # a large home loads without starving the event loop
            self.tables[name] = fresh
            counts[name] = fresh.live
            self._maybe_build(fresh)
        if wait_ann:
            await self.settle()
        return counts

    async def settle(self) -> None:
        """Wait for background ANN builds (tests and benchmarks measure a settled index)."""
        while self._builds:
            await asyncio.gather(*list(self._builds), return_exceptions=True)

    def _maybe_build(self, t: HotTable) -> None:
        for col in t.vec_cols:
            if t.needs_ann(col):
                task = asyncio.get_running_loop().create_task(self._build(t, col))
                self._builds.add(task)
                task.add_done_callback(self._builds.discard)

    async def _build(self, t: HotTable, col: str) -> None:
        try:
            await t.build_ann(col)
            _log.info("hotindex.ann_built", table=t.name, column=col, rows=len(t.ann[col] or ()))
        except Exception as exc:  # exact scans keep serving; the next write retries
            _log.warning("hotindex.ann_failed", table=t.name, column=col, error=str(exc))

    def cancel_builds(self) -> None:
        for task in list(self._builds):
            task.cancel()

    def stats(self) -> dict[str, Any]:
        return {
            name: {
                "rows": t.live,
                "slots": t.n,
                "ann": {c: len(a) for c, a in t.ann.items() if a is not None},
                "vector_mb": round(sum(m.nbytes for m in t.vecs.values()) / 1e6, 1),
            }
            for name, t in self.tables.items()
        }

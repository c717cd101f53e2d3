"""The hot index: every LanceDB table of a home mirrored in memory, written through by the store.

LanceDB stays the store of record. ``LanceStore`` calls ``upsert``/``update``/``delete`` here after
each successful write, so a query served from memory sees exactly what a LanceDB query would, without
a round trip; ``load`` rebuilds everything from LanceDB at open (restart, or after something wrote
the tables behind the store's back). Under a memory budget it holds the shared rows and the private
rows of the owners used most recently (``residency.py``); ``serves`` says whether a query's
namespace is held. Acknowledged, not yet applied journal rows stay the journal's
(searched beside this index), which keeps read-your-writes without a second copy.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from stratamem.core.config.settings import Section
from stratamem.core.hotindex.blas import limit_blas_threads
from stratamem.core.hotindex.residency import (
    CHECK_EVERY_ROWS,
    DEFAULT_ROW_BYTES,
    Owner,
    Residency,
    owner_of,
)
from stratamem.core.hotindex.scoped import ScopedHotTable
from stratamem.core.hotindex.table import OWNER_COLUMNS, HotTable
from stratamem.core.storage.ownership import Scope
from stratamem.core.telemetry import get_logger

_log = get_logger("hotindex")


class HotIndex:
    def __init__(
        self,
        tables: Mapping[str, Sequence[str]],
        dim: int,
        cfg: Mapping[str, Any],
        spill_dir: Path | str | None = None,
    ):
        self.cfg = cfg
        self.dim = dim
        #: where the tables' row side files go (``rowfile.py``; None: the system's temp dir)
        self.spill_dir = spill_dir
        self.tables = {
            name: HotTable(name, cols, dim, cfg, spill_dir) for name, cols in tables.items()
        }
        self._builds: set[asyncio.Task[None]] = set()
        self.residency = Residency(Section("storage", cfg).get_int("hot_index_max_mb"))
        self._since_check = 0
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

    def serves(self, scope: Scope) -> bool:
        """Whether memory holds every row ``scope`` may read (else: the LanceDB path)."""
        return self.residency.serves(scope)

    # -- write-through -----------------------------------------------------------------------
    def upsert(self, name: str, rows: Sequence[Mapping[str, Any]]) -> None:
        """Take the rows memory holds; a row now owned by an owner not held leaves memory."""
        t = self.tables[name]
        if self.residency.held is not None:
            gone = [str(r["id"]) for r in rows if not self.residency.holds(r)]
            if gone:
                t.delete(gone)
                rows = [r for r in rows if self.residency.holds(r)]
        t.upsert(rows)
        self._since_check += len(rows)
        self._maybe_build(t)

    def update(self, name: str, row_id: str, values: Mapping[str, Any]) -> bool:
        """Apply ``values`` to a held row; False when memory does not hold the row but might need
        to (a row of an owner not held may just have been shared): the caller upserts it whole."""
        t = self.tables[name]
        slot = t.slot_of.get(row_id)
        if slot is None:
            return self.residency.held is None
        if self.residency.holds({**t.full_row(slot), **values}):
            t.update(row_id, values)
        else:
            t.delete([row_id])
        return True

    def delete(self, name: str, ids: Sequence[str]) -> None:
        self.tables[name].delete(ids)

    # -- (re)build from the store of record --------------------------------------------------
    async def load(
        self,
        lance_tables: Mapping[str, Any],
        *,
        wait_ann: bool = True,
        held: frozenset[Owner] | str | None = "keep",
    ) -> dict[str, int]:
        """Replace every table's contents with LanceDB's rows memory holds for ``held`` (the
        owners; None: every row; default: the owners held now), batch by batch, column-wise
        (vectors as one matrix per batch, postings as arrays): the state the write-through path
        would build. The tables are swapped together at the end, so a query meanwhile reads the
        previous state, whole."""
        if isinstance(held, str):
            held = self.residency.held
        where = Residency.where(held)
        fresh_tables: dict[str, HotTable] = {}
        for name, tbl in lance_tables.items():
            if name not in self.tables:
                continue
            fresh = HotTable(name, self.tables[name].vec_cols, self.dim, self.cfg, self.spill_dir)
            fresh.reserve(int(await tbl.count_rows(where)))
            query = tbl.query() if where is None else tbl.query().where(where)
            reader = await query.to_batches(max_batch_length=8192)
            async for batch in reader:
                fresh.load_batch(batch)
                await asyncio.sleep(0)  # a large home loads without starving the event loop
            fresh_tables[name] = fresh
        self.tables.update(fresh_tables)
        self.residency.held = held
        self._since_check = 0
        for t in fresh_tables.values():
            self._maybe_build(t)
        if wait_ann:
            await self.settle()
        return {name: t.live for name, t in fresh_tables.items()}

    # -- the memory budget -------------------------------------------------------------------
    def over_budget(self, *, force: bool = False) -> bool:
        """Whether the estimate exceeds the budget (checked every ~1/64 of the rows written)."""
        rows = sum(t.live for t in self.tables.values())
        every = max(CHECK_EVERY_ROWS, rows // 64)  # an estimate costs O(rows): amortised
        if not self.residency.bounded or (not force and self._since_check < every):
            return False
        self._since_check = 0
        return sum(self.owner_bytes().values()) > self.residency.max_bytes

    def owner_bytes(self) -> dict[Owner | None, float]:
        """Estimated bytes held per owner (None: the shared rows), each table's estimate split
        by its rows."""
        from stratamem.core.hotindex.footprint import estimate_bytes

        out: dict[Owner | None, float] = {}
        for t in self.tables.values():
            if t.live == 0:
                continue
            per_row = estimate_bytes(t) / t.live
            codes = t.owner[: t.n][t.alive[: t.n]]
            for code, count in enumerate(np.bincount(codes, minlength=len(t._owner_keys))):
                if count:
                    key = owner_of(dict(zip(OWNER_COLUMNS, t._owner_keys[code], strict=True)))
                    out[key] = out.get(key, 0.0) + float(count) * per_row
        return out

    def row_bytes(self) -> float:
        """Estimated bytes per held row (``DEFAULT_ROW_BYTES`` while memory holds none)."""
        rows = sum(t.live for t in self.tables.values())
        if rows == 0:
            return float(DEFAULT_ROW_BYTES)
        return sum(self.owner_bytes().values()) / rows

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
                "vector_mb": round(
                    sum(t.codes[c].nbytes() + t.has[c].nbytes for c in t.vec_cols) / 1e6, 1
                ),
            }
            for name, t in self.tables.items()
        }

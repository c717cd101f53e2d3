"""LanceDB tables (async API): create/open with explicit schemas, upsert on id (append for rows known
new), index upkeep.

Cosine distance everywhere; native FTS on ``search_text``; an ANN index (IVF_HNSW_SQ, cosine) once a
vector column holds ``ann_threshold_rows`` rows, queried with explicit ``nprobes``/``ef``/``refine``
so recall stays high (stack.md §2.3); ``optimize()`` on a schedule with a bounded cleanup window;
the FTS index brought up to date before a LanceDB-path text query (storage/fts_cover.py).
No scalar index on owner/namespace columns: stack.md §2.3 measured a BTree making the prefiltered
brute-force vector query slower, so the visibility predicate runs as a plain prefilter.
"""

from __future__ import annotations

import os

os.environ.setdefault("LANCEDB_LOG", "error")  # before lancedb loads: quiet Rust WARN lines

import asyncio
import time
from collections.abc import Sequence
from datetime import timedelta
from pathlib import Path
from typing import Any, Literal

import lancedb
import numpy as np
import pyarrow as pa
from lancedb.index import FTS, IvfHnswSq
from lancedb.query import ColumnOrdering

from stratamem.contract.errors import ErrorCode, StratamemError
from stratamem.core.config.settings import Section
from stratamem.core.hotindex import HotIndex
from stratamem.core.storage import allocator
from stratamem.core.storage.fts_cover import FtsCover
from stratamem.core.storage.ownership import Scope, owners_where, quote, shared_where
from stratamem.core.storage.ownership import ids_where as ids_where  # re-export (local.py)
from stratamem.core.storage.schemas import DIM_METADATA_KEY, MODEL_METADATA_KEY, TABLES, conform
from stratamem.core.storage.scoped import ScopedTable
from stratamem.core.storage.stats import table_stats
from stratamem.core.telemetry import get_logger

_log = get_logger("storage")


#: how ``LanceStore._write`` treats ids already stored: merge over them, append blindly, keep them
WriteMode = Literal["merge", "append", "keep"]

#: rows the hot index takes between two yields of the event loop (``LanceStore._hot_upsert``)
HOT_UPSERT_SLICE = 8
#: after a reload of the mirror found nothing to change (a namespace larger than the budget), the
#: next attempt for the same most recent namespace waits this long: its queries meanwhile take the
#: LanceDB path without a recount
REBALANCE_IDLE_S = 30.0


class LanceStore:
    """All LanceDB tables of one home. Every read takes an ownership ``Scope``; retrieval builds its
    own queries on ``scoped(name, scope)`` (a ``ScopedTable``, filtered whatever ``where`` it adds).
    The raw table is ``maintenance_table(name, job)``: for named maintenance jobs only."""

    def __init__(self, path: Path, dim: int, model: str, storage_cfg: dict[str, Any]) -> None:
        self.path = path
        self.dim = dim
        self.model = model
        self.cfg = Section("storage", storage_cfg)
        self._db: lancedb.AsyncConnection | None = None
        self._tables: dict[str, lancedb.AsyncTable] = {}
        self._fts_ready: set[str] = set()
        self._ann_ready: set[tuple[str, str]] = set()
        self._rows_since_optimize = 0
        self._optimizes = 0
        #: LanceDB sessions opened since open (``renew_session``; for tests and the bench)
        self.sessions_opened = 0
        self._nonempty: set[str] = set()
        #: rows returned by reads since open (what a query costs, for tests and ``doctor``)
        self.rows_read = 0
        self.index_lock = asyncio.Lock()
        #: whether each table's FTS index covers its rows; the LanceDB path folds them in first
        self.fts = FtsCover(self._rebuild_fts)
        #: orders each write's LanceDB commit with its hot-index update (a sliced upsert yields
        #: the loop, so an update of one of its rows must wait for the slices to land)
        self._write_lock = asyncio.Lock()
        #: the running reload of the mirror under its memory budget (``hot_for``)
        self._rebalancing: asyncio.Task[None] | None = None
        self._rebalance_again = False
        #: the most recent namespace when a reload last changed nothing, and until when a miss of
        #: the same namespace first does not retry (``REBALANCE_IDLE_S``)
        self._rebalance_idle: tuple[list[tuple[str, str]], float] = ([], 0.0)
        #: the in-memory mirror recall reads (None when ``storage.hot_index`` is off)
        self.hot: HotIndex | None = (
            HotIndex({n: v for n, (_f, v) in TABLES.items()}, dim, storage_cfg, spill_dir=path)
            if self.cfg.get_bool("hot_index")
            else None
        )

    # -- open ------------------------------------------------------------------------------
    async def open(self) -> LanceStore:
        self.path.mkdir(parents=True, exist_ok=True)
        # before LanceDB's runtime threads start allocating (storage/allocator.py says why)
        allocator.use_arrow_pool(self.cfg.get_str("arrow_memory_pool"))
        allocator.limit_malloc_arenas(self.cfg.get_int("malloc_arena_max"))
        allocator.set_mmap_threshold(self.cfg.get_int("malloc_mmap_threshold_kb") * 1024)
        self._session, self._db = await self._connect()
        existing = set((await self._db.list_tables()).tables)
        for name, (factory, _vecs) in TABLES.items():
            schema = factory(self.dim, self.model)
            if name in existing:
                tbl = await self._db.open_table(name)
                self._check_dimension(name, await tbl.schema())
            else:
                tbl = await self._db.create_table(name, schema=schema, exist_ok=True)
            self._tables[name] = tbl
            if await tbl.count_rows() > 0:
                self._nonempty.add(name)
            await self._refresh_index_state(name)
        await self.reload_hot(wait_ann=False)
        return self

    async def _connect(self) -> tuple[lancedb.Session, lancedb.AsyncConnection]:
        mb = 1 << 20
        session = lancedb.Session(
            index_cache_size_bytes=self.cfg.get_int("lance_index_cache_mb") * mb,
            metadata_cache_size_bytes=self.cfg.get_int("lance_metadata_cache_mb") * mb,
        )
        return session, await lancedb.connect_async(str(self.path), session=session)

    async def renew_session(self) -> None:
        """Reopen every table on a fresh LanceDB session and let the old one go.

        Why (bench/soak.py, issue 16): each commit leaves entries in the session's caches, keyed
        by that table version (manifests, transactions, file metadata, index pieces of versions
        that compaction has since replaced). They are never read again, and their weighed size
        (``cache_bytes``) counts only part of what they hold: the soak's RSS grew ~2x what the
        caches reported, by ~2.5 MB per 1,000 versions beyond it. Dropping the session frees all
        of it. Under the write lock: no write straddles the swap; a read already running keeps
        the handle it started on, released with its last reference."""
        if self._db is None:
            return
        async with self._write_lock:
            session, db = await self._connect()
            tables = {name: await db.open_table(name) for name in self._tables}
            self._session, self._db, self._tables = session, db, tables
        self.sessions_opened += 1

    async def reload_hot(self, *, wait_ann: bool = True) -> None:
        """Rebuild the in-memory mirror from LanceDB (open, or after writes behind the store's back).
        At open the ANN graph builds in the background (exact scans serve until it is ready).
        A home larger than the memory budget opens holding its shared rows only: each namespace
        is loaded when first used (``hot_for``)."""
        hot = self.hot
        if hot is None:
            return
        held = hot.residency.held
        if held is None and hot.residency.bounded:
            rows = sum([await t.count_rows() for t in self._tables.values()])
            if rows * hot.row_bytes() > hot.residency.max_bytes:
                held = frozenset()
        counts = await hot.load(self._tables, wait_ann=wait_ann, held=held)
        _log.info("storage.hot_loaded", held=_held_log(held), **counts)
        if hot.over_budget(force=True):
            await self._rebalance()

    def hot_for(self, scope: Scope) -> HotIndex | None:
        """The hot index when it holds every row ``scope`` may read, else None (the caller takes
        the LanceDB path, which returns the same results) and the namespace is loaded behind."""
        hot = self.hot
        if hot is None or hot.serves(scope):
            return hot
        self._rebalance_soon()
        return None

    def _rebalance_soon(self) -> None:
        if self._rebalancing is not None and not self._rebalancing.done():
            self._rebalance_again = True  # the running one may have read the use order before
            return
        hot = self.hot
        recent = hot.residency.wanted()[:1] if hot is not None else []
        if recent == self._rebalance_idle[0] and time.monotonic() < self._rebalance_idle[1]:
            return  # the last attempt with this namespace first changed nothing
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return
        self._rebalancing = loop.create_task(self._rebalance_loop())

    async def _rebalance_loop(self) -> None:
        self._rebalance_again = True
        while self._rebalance_again:
            self._rebalance_again = False
            await self._rebalance()

    async def _rebalance(self) -> None:
        """Reload the mirror with the owners that fit the budget, most recently used first (under
        the write lock: no write lands between LanceDB's snapshot and the swap)."""
        hot = self.hot
        if hot is None or not self._tables:
            return
        try:
            async with self._write_lock:
                sizes = hot.owner_bytes()
                per_row = hot.row_bytes()
                for owner in hot.residency.wanted():
                    if owner in sizes or not hot.residency.bounded:
                        continue
                    where = f"({owners_where([owner])}) AND NOT {shared_where()}"
                    rows = sum([await t.count_rows(where) for t in self._tables.values()])
                    sizes[owner] = rows * per_row
                held = hot.residency.choose(sizes) if hot.residency.bounded else None
                if held == hot.residency.held:  # e.g. a namespace too large for the budget
                    until = time.monotonic() + REBALANCE_IDLE_S
                    self._rebalance_idle = (hot.residency.wanted()[:1], until)
                    return
                counts = await hot.load(self._tables, wait_ann=False, held=held)
            _log.info("storage.hot_rebalanced", held=_held_log(held), **counts)
        except Exception as exc:  # the LanceDB path keeps serving; the next miss retries
            _log.warning("storage.hot_rebalance_failed", error=str(exc))

    async def settle_hot(self) -> None:
        """Wait for a pending reload of the mirror (tests and benchmarks)."""
        while self._rebalancing is not None and not self._rebalancing.done():
            await asyncio.shield(self._rebalancing)

    def _check_dimension(self, name: str, schema: pa.Schema) -> None:
        meta = schema.metadata or {}
        stored = meta.get(DIM_METADATA_KEY)
        stored_dim = int(stored) if stored else None
        if stored_dim is None:
            for vec in TABLES[name][1]:
                field = schema.field(vec)
                stored_dim = getattr(field.type, "list_size", None)
                break
        if stored_dim is not None and stored_dim != self.dim:
            stored_model = meta.get(MODEL_METADATA_KEY, b"").decode() or "unknown"
            raise StratamemError(
                ErrorCode.EMBEDDING_DIMENSION_MISMATCH,
                f"table {name!r} holds {stored_dim}-d vectors from model {stored_model!r} but the "
                f"configured embedder {self.model!r} gives {self.dim}-d; run `stratamem reembed` "
                "to re-embed the home with the new model, or restore the old embedding config",
                {"table": name, "stored_dim": stored_dim, "dim": self.dim, "model": self.model},
            )

    async def _refresh_index_state(self, name: str) -> None:
        for idx in await self._tables[name].list_indices():
            cols = list(idx.columns)
            if "search_text" in cols:
                self._fts_ready.add(name)
            for vec in TABLES[name][1]:
                if vec in cols:
                    self._ann_ready.add((name, vec))

    def scoped(self, name: str, scope: Scope) -> ScopedTable:
        """``name`` as the query path sees it: every query it builds is filtered by ``scope``."""
        return ScopedTable(name, self._tables[name], scope)

    def maintenance_table(self, name: str, job: str) -> lancedb.AsyncTable:
        """The raw table, unfiltered: only for a named maintenance job (index upkeep, the hot
        index's load, bulk loads in the bench). Never on the query path (a test checks)."""
        if not job:
            raise ValueError("an unfiltered table needs the name of its job")
        return self._tables[name]

    def cache_bytes(self) -> int:
        """Bytes held by LanceDB's index and metadata caches (bounded by ``lance_*_cache_mb``)."""
        session = getattr(self, "_session", None)
        return int(session.size_bytes) if session is not None else 0

    def may_have_rows(self, name: str) -> bool:
        """False only while a table has never held a row (this process owns every write), so
        readers can skip querying it."""
        return name in self._nonempty

    def has_fts(self, name: str) -> bool:
        return name in self._fts_ready

    def has_ann(self, name: str, column: str) -> bool:
        return (name, column) in self._ann_ready

    def close(self) -> None:
        if self._rebalancing is not None:
            self._rebalancing.cancel()
        self.fts.cancel()
        if self.hot is not None:
            self.hot.cancel_builds()
        for tbl in self._tables.values():
            tbl.close()  # type: ignore[no-untyped-call]
        self._tables.clear()
        if self._db is not None:
            self._db.close()  # type: ignore[no-untyped-call]
            self._db = None

    # -- writes ----------------------------------------------------------------------------
    async def upsert(self, name: str, rows: Sequence[dict[str, Any]]) -> int:
        """Idempotent write keyed on ``id`` (replaying the same rows changes nothing).

        ``merge_insert("id")`` joins the rows against a scan of the table's ids (no index covers
        the key): its CPU and allocations grow with the table (bench/merge_join.py). Rows known
        not to be stored yet take ``insert``."""
        return await self._write(name, rows, "merge")

    async def insert(self, name: str, rows: Sequence[dict[str, Any]]) -> int:
        """Append rows whose ids the caller knows are not stored (LanceDB ``add()``: no join, a
        flat cost whatever the table's size). NOT idempotent: a row already stored would be
        there twice, so anything that may have been written before (a replay, a retry after a
        failure that may have followed the commit) goes through ``insert_missing``."""
        return await self._write(name, rows, "append")

    async def insert_missing(self, name: str, rows: Sequence[dict[str, Any]]) -> int:
        """Append the rows whose ids are not stored; a stored row is kept as it is (idempotent).

        For a journal entry that may have been stored before (a replay, a retry): its row was
        written from this very payload, and may have been edited since (``update_trace``, a
        reward, a reflection), so the stored row wins where ``upsert`` would overwrite the edit.
        The hot index is given the stored rows too (a failure after the commit may have kept
        them from it). Returns how many rows were appended."""
        return await self._write(name, rows, "keep")

    async def stored_ids(self, name: str, ids: Sequence[str]) -> set[str]:
        """Which of ``ids`` are stored in ``name`` (the journal's retry skips embedding them:
        ``insert_missing`` keeps the stored row anyway). A look-up by id, no rows read."""
        if not ids:
            return set()
        query = self._tables[name].query().where(ids_where(ids)).select(["id"]).limit(len(ids))
        return set((await query.to_arrow()).column("id").to_pylist())

    async def _write(self, name: str, rows: Sequence[dict[str, Any]], mode: WriteMode) -> int:
        if not rows:
            return 0
        schema = await self._tables[name].schema()
        # built before the lock: every journal batch writes here, and only the write needs it
        data = pa.Table.from_pylist([conform(r, schema) for r in rows], schema=schema)
        async with self._write_lock:
            table = self._tables[name]
            hot_rows = list(rows)
            if mode == "keep":
                stored = (
                    await table.query()
                    .where(ids_where([r["id"] for r in rows]))
                    .limit(len(rows))
                    .to_arrow()
                )
                have = set(stored.column("id").to_pylist())
                if have:
                    missing = [r["id"] not in have for r in rows]
                    data = data.filter(pa.array(missing))
                    rows = [r for r, m in zip(rows, missing, strict=True) if m]
                    hot_rows = list(rows) + stored.to_pylist()
            if mode == "merge":
                await (
                    table.merge_insert("id")
                    .when_matched_update_all()
                    .when_not_matched_insert_all()
                    .execute(data, on_bad_vectors="null")
                )
            elif rows:
                await table.add(data, on_bad_vectors="null")
            self._rows_since_optimize += len(rows)
            self._nonempty.add(name)
            self._changed(name)
            if self.hot is not None:
                await self._hot_upsert(name, hot_rows)
        if self.hot is not None and self.hot.over_budget():
            self._rebalance_soon()
        return len(rows)

    async def _hot_upsert(self, name: str, rows: Sequence[dict[str, Any]]) -> None:
        """The hot index takes the rows in slices, yielding the loop between them: indexing a
        64-row journal batch is ~5 ms of Python, which a ``turn_end`` acknowledgement (or a
        search) arriving meanwhile would otherwise wait out."""
        step = HOT_UPSERT_SLICE
        for i in range(0, len(rows), step):
            if i:
                await asyncio.sleep(0)
            assert self.hot is not None
            self.hot.upsert(name, rows[i : i + step])

    async def update(self, name: str, row_id: str, values: dict[str, Any]) -> None:
        async with self._write_lock:
            await self._tables[name].update(values, where=f"id = {quote(row_id)}")
            self._changed(name)
            if self.hot is not None and not self.hot.update(name, row_id, values):
                # a row memory does not hold (its owner is not held) may have been shared
                got = await self._tables[name].query().where(f"id = {quote(row_id)}").to_arrow()
                self.hot.upsert(name, got.to_pylist())

    async def delete(self, name: str, ids: Sequence[str]) -> None:
        if ids:
            async with self._write_lock:
                await self._tables[name].delete(ids_where(ids))
                self._changed(name)
                if self.hot is not None:
                    self.hot.delete(name, ids)

    # -- reads -----------------------------------------------------------------------------
    # Reads state whose rows they may see (``storage.ownership.Scope``): visible to or owned by a
    # namespace, or ``Scope.everything(job)`` for a named maintenance job. No unscoped read.
    async def get_rows(
        self, name: str, ids: Sequence[str], scope: Scope, where: str | None = None
    ) -> list[dict[str, Any]]:
        if not ids:
            return []
        flt = scope.where_and(ids_where(ids), where)
        arrow = await self._tables[name].query().where(flt).limit(max(len(ids), 1)).to_arrow()
        return self._counted(arrow.to_pylist())

    async def scan(
        self,
        name: str,
        scope: Scope,
        where: str | None,
        limit: int,
        columns: Sequence[str] | None = None,
        offset: int = 0,
        order_by: Sequence[tuple[str, bool]] | None = None,
    ) -> list[dict[str, Any]]:
        """Up to ``limit`` rows after ``offset``; ``order_by`` = ``[(column, ascending), ...]``.
        Order, offset and limit run inside LanceDB (a top-k sort): one page is read, not the table."""
        q = self._tables[name].query().where(scope.where_and(where)).limit(limit)
        if order_by:
            q = q.order_by([ColumnOrdering(column_name=c, ascending=asc) for c, asc in order_by])
        if offset:
            q = q.offset(offset)
        if columns:
            q = q.select(list(columns))
        return self._counted((await q.to_arrow()).to_pylist())

    def plain_columns(self, name: str) -> list[str]:
        """``name``'s columns without its vector columns (listings never need the vectors)."""
        factory, vecs = TABLES[name]
        return [f.name for f in factory(self.dim, self.model) if f.name not in vecs]

    def _counted(self, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
        self.rows_read += len(rows)
        return rows

    async def count(self, name: str, scope: Scope, where: str | None = None) -> int:
        flt = scope.where_and(where)
        return int(await self._tables[name].count_rows(None if flt == "true" else flt))

    async def vector_search(
        self,
        name: str,
        column: str,
        vector: np.ndarray,
        scope: Scope,
        limit: int,
        *,
        where: str | None = None,
        exact: bool = False,
        columns: Sequence[str] | None = None,
    ) -> list[dict[str, Any]]:
        """Cosine nearest neighbours (``_distance`` = 1 - cosine) among the rows ``scope`` may
        read (``where`` narrows further). ANN knobs set for high recall."""
        q = (
            self._tables[name]
            .query()
            .nearest_to(np.asarray(vector, dtype=np.float32))
            .column(column)
            .distance_type("cosine")
            .where(scope.where_and(f"{column} IS NOT NULL", where))
            .limit(limit)
        )
        q = self.tune_vector_query(q, name, column, exact=exact)
        if not exact and self.has_ann(name, column):  # HNSW ef must cover limit × refine_factor
            refine = self.cfg.get_int("ann_refine_factor")
            q = q.ef(max(self.cfg.get_int("ann_ef"), limit * refine))
        if columns:
            q = q.select([*columns, "_distance"])
        return self._counted((await q.to_arrow()).to_pylist())

    def tune_vector_query(self, q: Any, name: str, column: str, *, exact: bool = False) -> Any:
        """Apply the recall knobs to any vector query on ``name.column``: exact scan while the column
        has no ANN index, else ``nprobes``/``ef``/``refine_factor`` from ``storage.*`` (the index
        defaults give poor recall, stack.md §2.3). Readers building their own queries call this."""
        if exact or not self.has_ann(name, column):
            return q.bypass_vector_index()
        return (
            q.nprobes(self.cfg.get_int("ann_nprobes"))
            .ef(self.cfg.get_int("ann_ef"))
            .refine_factor(self.cfg.get_int("ann_refine_factor"))
        )

    async def fts_search(
        self,
        name: str,
        text: str,
        scope: Scope,
        limit: int,
        *,
        where: str | None = None,
        columns: Sequence[str] | None = None,
    ) -> list[dict[str, Any]]:
        """BM25 over ``search_text`` (``_score``) among the rows ``scope`` may read, the rows written
        since the index was built folded in first; empty when the table has no FTS index yet."""
        if not self.has_fts(name) or not text.strip():
            return []
        await self.fts_current(name)
        q = self._tables[name].query().nearest_to_text(text)
        q = q.where(scope.where_and(where)).limit(limit)
        if columns:
            q = q.select([*columns, "_score"])
        return self._counted((await q.to_arrow()).to_pylist())

    # -- maintenance -----------------------------------------------------------------------
    async def ensure_indexes(self) -> list[str]:
        """FTS once a table has rows; ANN once a vector column passes the threshold."""
        built: list[str] = []
        threshold = self.cfg.get_int("ann_threshold_rows")
        async with self.index_lock:
            for name, (_f, vecs) in TABLES.items():
                tbl = self._tables[name]
                n = await tbl.count_rows()
                if n == 0:
                    continue
                if name not in self._fts_ready:
                    await self._build_fts(name)
                    built.append(f"{name}.search_text")
                for vec in vecs:
                    if (name, vec) in self._ann_ready:
                        continue
                    non_null = await tbl.count_rows(f"{vec} IS NOT NULL")
                    if non_null >= threshold:
                        parts = max(1, min(256, int(non_null**0.5 / 2)))
                        await tbl.create_index(
                            vec,
                            config=IvfHnswSq(distance_type="cosine", num_partitions=parts),
                            replace=True,
                        )
                        self._ann_ready.add((name, vec))
                        built.append(f"{name}.{vec}")
        if built:
            _log.info("storage.index_built", indexes=built)
        return built

    async def ensure_fts(self, name: str) -> None:
        """Build the FTS index the first time a table gets rows (later rows are folded in by
        optimize, or by ``fts_current`` before a LanceDB-path text query)."""
        if name in self._fts_ready:
            return
        async with self.index_lock:
            if name not in self._fts_ready and await self._tables[name].count_rows() > 0:
                await self._build_fts(name)

    def _changed(self, name: str) -> None:
        """A write committed: without a hot index the FTS fold starts now (``FtsCover.soon``)."""
        self.fts.changed(name)
        if self.hot is None and name in self._fts_ready:
            self.fts.soon(name)

    async def fts_current(self, name: str) -> None:
        """Fold the rows written since ``name``'s FTS index was built into it, so a text query
        scores every row on one BM25 scale (storage/fts_cover.py says why). No index: nothing."""
        if self.has_fts(name):
            await self.fts.current(name)

    async def _rebuild_fts(self, name: str) -> None:
        async with self.index_lock:
            await self._build_fts(name)

    async def _build_fts(self, name: str) -> None:
        """A full build over the rows held now (under ``index_lock``)."""
        mark = self.fts.mark(name)
        await self._tables[name].create_index("search_text", config=FTS(), replace=True)
        self._fts_ready.add(name)
        self.fts.covered(name, mark)

    async def optimize(self, cleanup_older_than_s: float | None = None) -> None:
        """Compact, fold new rows into indexes, drop versions older than the bounded window
        (``storage.cleanup_older_than_s`` unless given: 0 keeps only the latest version); every
        ``storage.lance_session_renew_every`` rounds, a fresh LanceDB session (``renew_session``)."""
        window = self.cfg.get_int("cleanup_older_than_s")
        older = timedelta(seconds=window if cleanup_older_than_s is None else cleanup_older_than_s)
        async with self.index_lock:
            for name, tbl in self._tables.items():
                mark = self.fts.mark(name)
                await tbl.optimize(cleanup_older_than=older)
                if name in self._fts_ready:  # its index now covers every row it held
                    self.fts.covered(name, mark)
            self._optimizes += 1
            every = self.cfg.get_int("lance_session_renew_every")
            if every > 0 and self._optimizes % every == 0:
                await self.renew_session()
        self._rows_since_optimize = 0

    @property
    def rows_since_optimize(self) -> int:
        return self._rows_since_optimize

    async def stats(self) -> dict[str, Any]:
        """Rows, versions, fragments, unindexed rows and disk bytes per table (for ``doctor``)."""
        return await table_stats(self._tables)


def _held_log(held: frozenset[tuple[str, str]] | None) -> str:
    return "all" if held is None else f"{len(held)} namespaces"

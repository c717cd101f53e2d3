"""The capture journal's single background writer: SQLite journal -> LanceDB, idempotently.

``turn_end`` commits trace rows (without vectors) to the journal and returns; this writer embeds them,
``merge_insert``s them on ``id`` and marks them applied. Start-up replays whatever was not applied.
Unapplied rows are mirrored in memory so reads can see them (read-your-writes) at no SQL cost.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import Callable
from concurrent.futures import Executor
from typing import Any

import numpy as np

from stratamem.core.events import EventBus
from stratamem.core.storage.lance import LanceStore
from stratamem.core.storage.sqlite import Database
from stratamem.core.telemetry import get_logger, span

_log = get_logger("journal")

#: payload key holding ``{vector_column: text}`` to embed before the row is written
EMBED_KEY = "_embed"


class JournalWriter:
    def __init__(
        self,
        db: Database,
        store: LanceStore,
        embed: Callable[[list[str]], np.ndarray] | None,
        bus: EventBus,
        db_exec: Executor,
        cpu_exec: Executor,
        cfg: dict[str, Any],
    ) -> None:
        self.db = db
        self.store = store
        self.embed = embed
        self.bus = bus
        self._db_exec = db_exec
        self._cpu_exec = cpu_exec
        self.cfg = cfg
        #: seq -> journal row (kind, target_id, payload dict, ...) not yet applied
        self.pending: dict[int, dict[str, Any]] = {}
        self._wake = asyncio.Event()
        self._applied = asyncio.Condition()
        self._task: asyncio.Task[None] | None = None
        self._stopping = False
        self.write_lock = asyncio.Lock()
        self.applied_total = 0
        self.on_applied: list[Callable[[list[dict[str, Any]]], None]] = []

    # -- lifecycle -------------------------------------------------------------------------
    async def start(self) -> int:
        """Load unapplied entries (replay) and start the loop; returns how many were pending."""
        rows = await self._db(lambda: self.db.journal_pending(limit=10**9))
        for r in rows:
            self.pending[int(r["seq"])] = _entry(r)
        self._task = asyncio.create_task(self._loop(), name="stratamem-journal-writer")
        if self.pending:
            _log.info("journal.replay", pending=len(self.pending))
            self._wake.set()
        return len(rows)

    async def stop(self, timeout_s: float = 15.0) -> None:
        """Drain (bounded) while the writer runs, then stop it; what is left replays at next start."""
        if self._task is not None and not self._task.done():
            with contextlib.suppress(TimeoutError):
                await self.drain(timeout_s)
        self._stopping = True
        self._wake.set()
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._task

    async def _db(self, fn: Callable[[], Any]) -> Any:
        return await asyncio.get_running_loop().run_in_executor(self._db_exec, fn)

    # -- intake ----------------------------------------------------------------------------
    def add_committed(self, entries: list[dict[str, Any]]) -> None:
        """Register entries already committed to SQLite (called right after the commit)."""
        for e in entries:
            self.pending[int(e["seq"])] = e
        self._wake.set()

    def pending_rows(self, kind: str = "trace") -> list[dict[str, Any]]:
        """Payloads of unapplied entries of ``kind`` (in journal order)."""
        return [e["payload"] for s, e in sorted(self.pending.items()) if e["kind"] == kind]

    def pending_ids(self) -> set[str]:
        return {e["target_id"] for e in self.pending.values()}

    def forget(self, target_ids: set[str]) -> list[int]:
        """Drop unapplied entries for deleted targets (caller marks them applied in SQLite)."""
        seqs = [s for s, e in self.pending.items() if e["target_id"] in target_ids]
        for s in seqs:
            self.pending.pop(s, None)
        return seqs

    # -- waiting ---------------------------------------------------------------------------
    async def wait_applied(self, upto_seq: int, timeout_s: float) -> bool:
        """True once every entry with seq <= ``upto_seq`` is applied (within ``timeout_s``)."""

        def done() -> bool:
            return not any(s <= upto_seq for s in self.pending)

        if done():
            return True
        if timeout_s <= 0:
            return False
        self._wake.set()
        try:
            async with self._applied:
                await asyncio.wait_for(self._applied.wait_for(done), timeout_s)
            return True
        except TimeoutError:
            return False

    async def drain(self, timeout_s: float | None = None) -> int:
        target = max(self.pending, default=0)
        before = self.applied_total
        ok = await self.wait_applied(target, timeout_s if timeout_s is not None else 3600.0)
        if not ok:
            raise TimeoutError
        return self.applied_total - before

    def max_seq(self) -> int:
        return max(self.pending, default=0)

    # -- the loop --------------------------------------------------------------------------
    async def _loop(self) -> None:
        idle = float(self.cfg.get("apply_idle_ms", 20)) / 1000
        backoff = float(self.cfg.get("retry_backoff_ms", 500)) / 1000
        while not self._stopping:
            await self._wake.wait()
            self._wake.clear()
            while self.pending and not self._stopping:
                try:
                    await self.apply_batch()
                except asyncio.CancelledError:
                    raise
                except Exception as exc:  # keep the entries, retry later
                    _log.error("journal.apply_failed", error=str(exc))
                    with contextlib.suppress(Exception):
                        self.bus.emit("system.error", {"stage": "journal.apply", "error": str(exc)})
                    await asyncio.sleep(backoff)
            await asyncio.sleep(idle)

    async def apply_batch(self) -> int:
        batch_max = int(self.cfg.get("apply_batch_max", 64))
        async with self.write_lock:
            seqs = sorted(self.pending)[:batch_max]
            entries = [self.pending[s] for s in seqs]
            if not entries:
                return 0
            with span("journal.apply", entries=len(entries)):
                by_table: dict[str, list[dict[str, Any]]] = {}
                rows = [dict(e["payload"]) for e in entries]
                await self._embed_rows(rows)
                for e, row in zip(entries, rows, strict=True):
                    row["journal_seq"] = e["seq"]
                    by_table.setdefault(e.get("table", "traces"), []).append(row)
                for table, trows in by_table.items():
                    await self.store.upsert(table, trows)
                    await self.store.ensure_fts(table)
                await self._db(lambda: self.db.journal_mark_applied(seqs))
            for s in seqs:
                self.pending.pop(s, None)
            self.applied_total += len(seqs)
        async with self._applied:
            self._applied.notify_all()
        for row in rows:
            self.bus.emit(
                "trace.created",
                {
                    "trace_id": row["id"],
                    "episode_id": row.get("episode_id"),
                    "session_id": row.get("session_id"),
                },
            )
        for cb in self.on_applied:
            with contextlib.suppress(Exception):
                cb(rows)
        return len(seqs)

    async def _embed_rows(self, rows: list[dict[str, Any]]) -> None:
        jobs: list[tuple[int, str, str]] = []
        for i, row in enumerate(rows):
            for col, text in (row.pop(EMBED_KEY, None) or {}).items():
                if text:
                    jobs.append((i, col, text))
        if not jobs or self.embed is None:
            return
        embed = self.embed
        texts = [t for _, _, t in jobs]
        t0 = time.perf_counter()
        try:
            vecs = await asyncio.get_running_loop().run_in_executor(
                self._cpu_exec, lambda: embed(texts)
            )
        except Exception as exc:
            err = f"{type(exc).__name__}: {exc}"
            _log.warning("journal.embed_failed", error=err, rows=len(rows))
            self.bus.emit("system.error", {"stage": "embedding", "error": err})

            def enqueue() -> None:
                def run(c: Any) -> None:
                    for i, col, text in jobs:
                        self.db.enqueue_embedding_retry(
                            c,
                            "trace",
                            rows[i]["id"],
                            col,
                            text,
                            err,
                            int(self.cfg.get("embedding_retry_max_attempts", 6)),
                        )

                self.db.call(run)

            await self._db(enqueue)
            return
        for (i, col, _), vec in zip(jobs, vecs, strict=True):
            rows[i][col] = np.asarray(vec, dtype=np.float32)
        _log.debug("journal.embedded", n=len(texts), ms=round((time.perf_counter() - t0) * 1000, 1))


def _entry(row: Any) -> dict[str, Any]:
    payload = json.loads(row["payload_json"])
    return {
        "seq": int(row["seq"]),
        "kind": row["kind"],
        "target_id": row["target_id"],
        "table": payload.pop("_table", "traces"),
        "payload": payload,
    }


def journal_entry(
    kind: str, target_id: str, payload: dict[str, Any], table: str = "traces"
) -> dict[str, Any]:
    return {"kind": kind, "target_id": target_id, "table": table, "payload": payload}


def payload_json(entry: dict[str, Any]) -> str:
    return json.dumps({**entry["payload"], "_table": entry.get("table", "traces")}, default=str)

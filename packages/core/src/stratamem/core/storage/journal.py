"""The capture journal's single background writer: SQLite journal -> LanceDB, idempotently.

``turn_end`` commits trace rows (without vectors) to the journal and returns; this writer embeds them,
writes them to LanceDB and marks them applied. Start-up replays whatever was not applied.

Rows whose ids ``turn_end`` minted in the transaction it just committed cannot be stored yet: their
first attempt appends them (``LanceStore.insert``, no join). Everything else is appended only where
its id is not stored (``LanceStore.insert_missing``, idempotent): an entry read back from disk
(start-up replay, a requeue) may have been stored before a crash between LanceDB's commit and
``journal_mark_applied``, and a retry may follow a failure that came after the commit. A stored
row was written from the entry's own payload and may have been edited since, so it is kept (a
merge would put the payload back over an ``update_trace`` made meanwhile). That look-up filters
the table's ids, so its cost grows with the table (bench/results/soak-session14.md); the
append's does not.
Unapplied rows are mirrored in memory so reads can see them (read-your-writes) at no SQL cost.
One entry that cannot be applied is retried, then set aside; it never holds the others back.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from concurrent.futures import Executor
from typing import Any

import numpy as np

from stratamem.core.config.settings import Section
from stratamem.core.events import EventBus
from stratamem.core.ids import now_ms
from stratamem.core.storage.lance import LanceStore
from stratamem.core.storage.ownership import owner_namespace
from stratamem.core.storage.rows import unreadable_trace
from stratamem.core.storage.sqlite import Database
from stratamem.core.telemetry import get_logger, span
from stratamem.core.telemetry.audit import audit

_log = get_logger("journal")

#: payload key holding ``{vector_column: text}`` to embed before the row is written
EMBED_KEY = "_embed"
#: entry key set (to the reason) on an entry read back from disk that no read could show
UNREADABLE = "unreadable"
#: entry key (in memory only, never journaled) of an entry whose target id was minted in the
#: transaction that committed it: nothing can have stored it, so its first attempt appends
NEW = "new"


class JournalWriter:
    """Applies committed journal entries to LanceDB in seq order, never blocking on one entry.

    An entry whose apply fails is retried on its own with exponential back-off
    (``retry_backoff_ms`` doubling up to ``retry_backoff_max_ms``); after ``max_attempts`` it is
    set aside (a dead letter keeping its attempts and last error) and later entries go on.
    Readers never wait for an entry that is failing. Applied entries are pruned after
    ``retention_s``; their turn keys live on in the compact ``turn_keys`` index for
    ``turn_key_retention_s``. Start-up replays
    in pages of ``replay_page`` entries.
    """

    def __init__(
        self,
        db: Database,
        store: LanceStore,
        embed: Callable[[list[str]], np.ndarray] | None,
        bus: EventBus,
        db_exec: Executor,
        cpu_exec: Executor,
        cfg: Mapping[str, Any],
    ) -> None:
        self.db = db
        self.store = store
        self.embed = embed
        self.bus = bus
        self._db_exec = db_exec
        self._cpu_exec = cpu_exec
        self.cfg = Section("journal", cfg)
        #: seq -> journal row (kind, target_id, payload dict, ...) not yet applied
        self.pending: dict[int, dict[str, Any]] = {}
        #: seq -> (failed attempts, monotonic time of the next try) for entries that failed
        self._failing: dict[int, tuple[int, float]] = {}
        self._loaded_upto = 0
        #: unapplied entries past ``_loaded_upto`` still only on disk (start-up replays in pages);
        #: they count in the backlog and every wait for "applied up to" includes them
        self._more_on_disk = False
        self._unloaded = 0
        #: the newest entry on disk at start-up: a read waits for the replay up to it
        self._replay_top = 0
        self._next_housekeeping = 0.0
        self._wake = asyncio.Event()
        #: LanceDB commits made (one per applied batch; bench/soak.py samples it): the soak
        #: made one per ~4 turns, and 4.2x as many added only ~0.5 MB of RSS per 1,000 commits
        #: (bench/results/soak-session14-lance.md)
        self.commits_total = 0
        #: table writes started, by kind: appends of new rows (``LanceStore.insert``) and writes
        #: keyed on id (``LanceStore.insert_missing``: replays, retries); bench/soak.py samples both
        self.appends_total = 0
        self.merges_total = 0
        self._applied = asyncio.Condition()
        self._task: asyncio.Task[None] | None = None
        self._stopping = False
        self.write_lock = asyncio.Lock()
        self.applied_total = 0
        self.set_aside_total = 0
        self.on_applied: list[Callable[[list[dict[str, Any]]], None]] = []
        #: awaited with (table, rows) once a batch is stored, before it counts as applied (the
        #: home's word store: vocab/service.py); a failure is logged, never fails the batch
        self.after_store: list[Callable[[str, list[dict[str, Any]]], Awaitable[None]]] = []

    # -- lifecycle -------------------------------------------------------------------------
    async def start(self) -> int:
        """Load the first page of unapplied entries (replay), start the loop; returns how many
        entries were pending at start-up."""
        backlog = int(await self._db(self.db.journal_backlog))
        self._replay_top = int(await self._db(self.db.journal_last_pending))
        self.set_aside_total = int(await self._db(self.db.journal_set_aside_count))
        await self._load_page()
        self._task = asyncio.create_task(self._loop(), name="stratamem-journal-writer")
        if self.pending:
            _log.info("journal.replay", pending=backlog, loaded=len(self.pending))
            self._wake.set()
        return backlog

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

    async def _load_page(self, after_seq: int | None = None) -> int:
        """Read the next page of pending entries from SQLite into memory."""
        page = int(self.cfg["replay_page"])
        after = self._loaded_upto if after_seq is None else after_seq
        rows = await self._db(lambda: self.db.journal_pending(limit=page, after_seq=after))
        for r in rows:
            seq = int(r["seq"])
            if seq not in self.pending:
                self.pending[seq] = _entry(r)
            self._loaded_upto = max(self._loaded_upto, seq)
        if after_seq is None:
            self._more_on_disk = len(rows) == page
            upto = self._loaded_upto
            beyond = (
                int(await self._db(lambda: self.db.journal_backlog(after_seq=upto)))
                if self._more_on_disk
                else 0
            )
            # entries committed since start-up are on disk and in memory: count them once
            self._unloaded = max(0, beyond - sum(1 for s in self.pending if s > upto))
        return len(rows)

    def backlog(self) -> int:
        """Acknowledged entries not yet applied (in memory or still on disk), set-aside excluded."""
        return len(self.pending) + (self._unloaded if self._more_on_disk else 0)

    # -- intake ----------------------------------------------------------------------------
    def add_committed(self, entries: list[dict[str, Any]], *, new: bool = False) -> None:
        """Register entries already committed to SQLite (called right after the commit).

        ``new``: their target ids were minted in that transaction, so no row with them is stored
        and the first attempt may append them. Should a page read from disk have taken an entry
        first, it keeps the look-up (it was registered as read back)."""
        for e in entries:
            seq = int(e["seq"])
            if new and seq not in self.pending:
                e[NEW] = True
            self.pending[seq] = e
        if not self._more_on_disk:
            self._loaded_upto = max(self._loaded_upto, *(int(e["seq"]) for e in entries), 0)
        self._wake.set()

    def pending_rows(self, kind: str = "trace") -> list[dict[str, Any]]:
        """Payloads of unapplied entries of ``kind`` (in journal order) that a reader can be shown:
        an entry no answer could carry is left to the writer (retried, then set aside)."""
        return [
            e["payload"]
            for s, e in sorted(self.pending.items())
            if e["kind"] == kind and UNREADABLE not in e
        ]

    def pending_ids(self) -> set[str]:
        return {e["target_id"] for e in self.pending.values()}

    def forget(self, target_ids: set[str]) -> list[int]:
        """Drop unapplied entries for deleted targets (caller marks them applied in SQLite)."""
        seqs = [s for s, e in self.pending.items() if e["target_id"] in target_ids]
        for s in seqs:
            self.pending.pop(s, None)
            self._failing.pop(s, None)
        return seqs

    # -- set-aside entries (dead letters) ---------------------------------------------------
    async def set_aside(self) -> list[dict[str, Any]]:
        """Entries set aside after their retries: seq, kind, target, attempts, last error."""
        rows = await self._db(self.db.journal_set_aside_rows)
        return [dead_letter(r) for r in rows]

    async def retry_set_aside(self, seqs: Sequence[int] | None = None) -> int:
        """Put set-aside entries (all, or ``seqs``) back in the queue with a fresh retry budget."""
        rows = await self._db(lambda: self.db.journal_requeue(seqs))
        for r in rows:
            self.pending[int(r["seq"])] = _entry(r)
        self.set_aside_total = int(await self._db(self.db.journal_set_aside_count))
        self._wake.set()
        audit("journal.requeued", target=[str(r["seq"]) for r in rows])
        return len(rows)

    async def discard_set_aside(self, seqs: Sequence[int] | None = None) -> int:
        """Drop set-aside entries for good (an admin decision; their turn keys stay known)."""
        n = int(await self._db(lambda: self.db.journal_discard(seqs)))
        self.set_aside_total = int(await self._db(self.db.journal_set_aside_count))
        audit("journal.discarded", target=None if seqs is None else [str(s) for s in seqs], count=n)
        return n

    # -- waiting ---------------------------------------------------------------------------
    def _settled(self, upto_seq: int) -> bool:
        """No entry <= ``upto_seq`` is still on its way (failing entries are not waited for), nor
        still on disk waiting for its replay page."""
        if self._more_on_disk and self._loaded_upto < min(upto_seq, self._replay_top):
            return False  # (entries committed since start-up are all in memory)
        return not any(s <= upto_seq and s not in self._failing for s in self.pending)

    async def wait_applied(self, upto_seq: int, timeout_s: float) -> bool:
        """True once every entry with seq <= ``upto_seq`` is applied or failing (within
        ``timeout_s``): one bad entry never makes readers wait."""
        if self._settled(upto_seq):
            return True
        if timeout_s <= 0:
            return False
        self._wake.set()
        try:
            async with self._applied:
                await asyncio.wait_for(
                    self._applied.wait_for(lambda: self._settled(upto_seq)), timeout_s
                )
            return True
        except TimeoutError:
            return False

    async def drain(self, timeout_s: float | None = None) -> int:
        target = self.max_seq()  # past the replay pages still on disk
        before = self.applied_total
        ok = await self.wait_applied(target, timeout_s if timeout_s is not None else 3600.0)
        if not ok:
            raise TimeoutError
        return self.applied_total - before

    def replaying(self) -> bool:
        """Acknowledged entries are still only on disk (start-up replays in pages): a read that
        merges the in-memory pending rows with LanceDB would miss them."""
        return self._more_on_disk and self._loaded_upto < self._replay_top

    async def wait_replayed(self, timeout_s: float) -> bool:
        """True once no acknowledged entry is left only on disk (within ``timeout_s``)."""
        if not self.replaying():
            return True
        return await self.wait_applied(self._replay_top, timeout_s)

    def max_seq(self, accepts: Callable[[Mapping[str, Any]], bool] | None = None) -> int:
        """The newest acknowledged entry not yet applied (past every replay page still on disk).

        ``accepts``: only entries whose row it accepts (a reader's scope), so a reader does not
        wait for another namespace's backlog; an entry no reader can be shown, and the replay
        pages still on disk (their owners unread), count whatever it says."""
        if accepts is None:
            top = max(self.pending, default=0)
        else:
            top = max(
                (s for s, e in self.pending.items() if UNREADABLE in e or accepts(e["payload"])),
                default=0,
            )
        return max(top, self._replay_top) if self._more_on_disk else top

    # -- the loop --------------------------------------------------------------------------
    async def _loop(self) -> None:
        idle = float(self.cfg["apply_idle_ms"]) / 1000
        while not self._stopping:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), self._sleep_s())
            self._wake.clear()
            while not self._stopping:
                if self._more_on_disk and len(self.pending) < int(self.cfg["replay_page"]) // 2:
                    await self._load_page()
                try:
                    if not await self.apply_batch():
                        break
                except asyncio.CancelledError:
                    raise
                except Exception as exc:  # a failure outside any entry (e.g. SQLite): retry later
                    _log.error("journal.apply_failed", error=str(exc))
                    await asyncio.sleep(float(self.cfg["retry_backoff_ms"]) / 1000)
            with contextlib.suppress(Exception):
                await self._housekeeping()
            await asyncio.sleep(idle)

    def _sleep_s(self) -> float:
        """Until the next failing entry is due, or the next housekeeping."""
        now = time.monotonic()
        due = [t for _, t in self._failing.values()] + [self._next_housekeeping]
        return max(0.01, min(due) - now)

    async def _housekeeping(self) -> None:
        """Every ``prune_interval_s``: prune applied entries past retention and turn keys past
        ``turn_key_retention_s``, pick up entries requeued by another process (``stratamem
        journal retry``)."""
        now = time.monotonic()
        if now < self._next_housekeeping:
            return
        self._next_housekeeping = now + float(self.cfg["prune_interval_s"])
        cutoff = now_ms() - int(float(self.cfg["retention_s"]) * 1000)
        pruned = 0
        while True:
            n = int(await self._db(lambda: self.db.journal_prune(cutoff)))
            pruned += n
            if n < 5000:
                break
        keys = 0
        keep_keys_s = float(self.cfg["turn_key_retention_s"])
        if keep_keys_s > 0:
            keys_before = now_ms() - int(keep_keys_s * 1000)
            while True:
                n = int(await self._db(lambda: self.db.turn_keys_prune(keys_before)))
                keys += n
                if n < 5000:
                    break
        if pruned or keys:
            _log.info("journal.pruned", entries=pruned, turn_keys=keys)
        async with self.write_lock:  # not while a delete forgets entries (they'd come back)
            requeued = not self._more_on_disk and await self._load_page(after_seq=0)
        if requeued:
            self._wake.set()
        self.set_aside_total = int(await self._db(self.db.journal_set_aside_count))

    async def apply_batch(self) -> int:
        """Apply the oldest due entries; a failing batch is split so each entry stands alone.
        Returns how many entries were applied or set aside (0: nothing was due)."""
        batch_max = int(self.cfg["apply_batch_max"])
        async with self.write_lock:
            now = time.monotonic()
            order = sorted(self.pending)
            fresh = [s for s in order if s not in self._failing][:batch_max]
            due = [s for s in order if s in self._failing and self._failing[s][1] <= now]
            groups = ([fresh] if fresh else []) + [[s] for s in due[:batch_max]]
            if not groups:
                return 0
            done: list[tuple[list[int], list[dict[str, Any]]]] = []
            for group in groups:  # a failing entry is retried alone, never inside a batch
                try:
                    done.append((group, await self._apply(group)))
                except Exception as exc:
                    if len(group) == 1:
                        await self._failed(group[0], exc)
                        continue
                    for s in group:  # isolate the bad entry: the rest go on
                        try:
                            done.append(([s], await self._apply([s])))
                        except Exception as one_exc:
                            await self._failed(s, one_exc)
            self.commits_total += len(done)
            for applied, _ in done:
                for s in applied:
                    self.pending.pop(s, None)
                    self._failing.pop(s, None)
                self.applied_total += len(applied)
        async with self._applied:
            self._applied.notify_all()
        for _, rows in done:
            self._announce(rows)
        return sum(len(g) for g in groups)

    async def _apply(self, seqs: list[int]) -> list[dict[str, Any]]:
        entries = [self.pending[s] for s in seqs]
        # a group of entries none of which can be stored yet is appended; the flags go before
        # any write, so every later attempt (whatever failed, maybe after LanceDB's commit)
        # looks its ids up and keeps what is stored
        append = all([e.pop(NEW, False) for e in entries])  # (a list: every flag goes)
        with span("journal.apply", entries=len(entries)):
            by_table: dict[str, list[dict[str, Any]]] = {}
            rows = [dict(e["payload"]) for e in entries]
            if not append:  # what is stored already keeps its row (``insert_missing``): no embed
                await self._skip_stored(entries, rows)
            await self._embed_rows(rows)
            for e, row in zip(entries, rows, strict=True):
                row["journal_seq"] = e["seq"]
                by_table.setdefault(e.get("table", "traces"), []).append(row)
            for table, trows in by_table.items():
                if append:
                    self.appends_total += 1
                    await self.store.insert(table, trows)
                else:
                    self.merges_total += 1
                    await self.store.insert_missing(table, trows)
                await self.store.ensure_fts(table)
            for table, trows in by_table.items():
                for hook in self.after_store:
                    try:
                        await hook(table, trows)
                    except Exception as exc:
                        _log.warning("journal.after_store_failed", table=table, error=str(exc))
            await self._db(lambda: self.db.journal_mark_applied(seqs))
        return rows

    async def _skip_stored(self, entries: list[dict[str, Any]], rows: list[dict[str, Any]]) -> None:
        """Drop the texts to embed of rows already stored: a retry after a failure that followed
        LanceDB's commit (or a replay after a death there) would embed them again for nothing."""
        by_table: dict[str, list[dict[str, Any]]] = {}
        for e, row in zip(entries, rows, strict=True):
            if row.get(EMBED_KEY):
                by_table.setdefault(e.get("table", "traces"), []).append(row)
        for table, trows in by_table.items():
            stored = await self.store.stored_ids(table, [str(r["id"]) for r in trows])
            for row in trows:
                if row["id"] in stored:
                    row.pop(EMBED_KEY, None)

    async def _failed(self, seq: int, exc: BaseException) -> None:
        """Count a failed attempt; back off, or set the entry aside once its budget is spent."""
        err = f"{type(exc).__name__}: {exc}"[:2000]
        attempts = self._failing.get(seq, (0, 0.0))[0] + 1
        await self._db(lambda: self.db.journal_mark_failed([seq], err))
        with contextlib.suppress(Exception):
            self.bus.emit("system.error", {"stage": "journal.apply", "seq": seq, "error": err})
        if attempts < int(self.cfg["max_attempts"]):
            base = float(self.cfg["retry_backoff_ms"]) / 1000
            delay = min(float(self.cfg["retry_backoff_max_ms"]) / 1000, base * 2 ** (attempts - 1))
            self._failing[seq] = (attempts, time.monotonic() + delay)
            _log.warning("journal.entry_failed", seq=seq, attempts=attempts, error=err)
            return
        await self._db(lambda: self.db.journal_set_aside(seq, err))
        self.pending.pop(seq, None)
        self._failing.pop(seq, None)
        self.set_aside_total += 1
        _log.error("journal.entry_set_aside", seq=seq, attempts=attempts, error=err)
        with contextlib.suppress(Exception):
            self.bus.emit(
                "system.error",
                {"stage": "journal.set_aside", "seq": seq, "attempts": attempts, "error": err},
            )

    def _announce(self, rows: list[dict[str, Any]]) -> None:
        for row in rows:
            self.bus.emit(
                "trace.created",
                {
                    "trace_id": row["id"],
                    "episode_id": row.get("episode_id"),
                    "session_id": row.get("session_id"),
                },
                namespace=owner_namespace(row),
            )
        for cb in self.on_applied:
            with contextlib.suppress(Exception):
                cb(rows)

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
                            self.cfg.get_int("embedding_retry_max_attempts"),
                        )

                self.db.call(run)

            await self._db(enqueue)
            return
        for (i, col, _), vec in zip(jobs, vecs, strict=True):
            rows[i][col] = np.asarray(vec, dtype=np.float32)
        _log.debug("journal.embedded", n=len(texts), ms=round((time.perf_counter() - t0) * 1000, 1))


def dead_letter(row: Any) -> dict[str, Any]:
    return {
        "seq": int(row["seq"]),
        "kind": row["kind"],
        "target_id": row["target_id"],
        "session_id": row["session_id"],
        "turn_key": row["turn_key"],
        "created_at": int(row["created_at"]),
        "set_aside_at": int(row["set_aside_at"]),
        "attempts": int(row["attempts"]),
        "last_error": row["last_error"],
    }


def _entry(row: Any) -> dict[str, Any]:
    """A journal row read back from disk (replay, requeue). ``turn_end`` only journals what the
    wire can carry, but an older version (or a bug) may have journaled a trace no answer can
    encode (a ``ts`` past int64, NaN in a tool call): it is marked ``UNREADABLE`` so reads that
    merge pending rows skip it instead of failing for its whole namespace while it is retried."""
    payload = json.loads(row["payload_json"])
    entry = {
        "seq": int(row["seq"]),
        "kind": row["kind"],
        "target_id": row["target_id"],
        "table": payload.pop("_table", "traces"),
        "payload": payload,
    }
    reason = unreadable_trace(payload) if entry["kind"] == "trace" else None
    if reason is not None:
        entry[UNREADABLE] = reason
        _log.warning("journal.entry_unreadable", seq=entry["seq"], error=reason)
    return entry


def journal_entry(
    kind: str, target_id: str, payload: dict[str, Any], table: str = "traces"
) -> dict[str, Any]:
    return {"kind": kind, "target_id": target_id, "table": table, "payload": payload}


def payload_json(entry: dict[str, Any]) -> str:
    return json.dumps({**entry["payload"], "_table": entry.get("table", "traces")}, default=str)

"""The services every engine module shares: SQLite on its own thread, CPU work in a bounded executor,
document/query embedding, the LanceDB store, the capture journal, the event bus and the config.

Public so that other parts of the core (learning, viewer, maintenance jobs) use the same plumbing
instead of reaching into ``LocalCore``'s privates.
"""

from __future__ import annotations

import asyncio
import contextlib
import weakref
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

from stratamem.contract.dtos import Namespace
from stratamem.contract.errors import ErrorCode, StratamemError
from stratamem.core.events import EventBus
from stratamem.core.ids import now_ms
from stratamem.core.storage.journal import JournalWriter
from stratamem.core.storage.lance import LanceStore
from stratamem.core.storage.sqlite import Database
from stratamem.core.vocab.service import VocabService

T = TypeVar("T")


class EngineServices:
    """Owns the executors and the journal writer; borrows the database, store and models."""

    def __init__(
        self,
        home: Path,
        config: dict[str, Any],
        *,
        db: Database,
        store: LanceStore,
        embedder: Any,
        llm: Any,
        bus: EventBus,
    ) -> None:
        self.home = home
        self.config = config
        self.db = db
        self.store = store
        self.embedder = embedder
        self.llm = llm
        self.bus = bus
        self.lightweight = bool(config["algorithm"]["lightweight_memory"]["enabled"])
        ns = config["namespace"]
        #: the home's configured namespace for calls that name none (fixed for the core's life)
        self.default_namespace = Namespace(
            agent_kind=str(ns["agent_kind"]), profile_id=str(ns["profile_id"])
        )
        #: the full-mode learner (``None`` in lightweight mode); set by the facade
        self.learner: Any = None
        self.db_executor = ThreadPoolExecutor(1, thread_name_prefix="stratamem-sqlite")
        self.cpu_executor = ThreadPoolExecutor(
            int(config["runtime"]["executor_workers"]), thread_name_prefix="stratamem-cpu"
        )
        self.journal = JournalWriter(
            db,
            store,
            self.embed_documents if embedder is not None else None,
            bus,
            self.db_executor,
            self.cpu_executor,
            config["journal"],
        )
        #: the home's word store (query expansion), filled after each applied batch
        self.vocab = VocabService(
            home / "data" / "vocab",
            int(getattr(embedder, "dimension", 0) or 0) or 384,
            config["retrieval"],
            embed=self.embed_words if embedder is not None else None,
            run_cpu=self.run_cpu,
            lance=store,
            model=str(getattr(embedder, "model", "") or ""),
        )
        self.journal.after_store.append(self.vocab.on_applied)
        #: set once the core is shut down; every public call then raises ``already_shut_down``
        self.shut = False
        #: weak: a session's lock lives while a call holds or awaits it, so sessions that are
        #: never closed leave nothing behind
        self._session_locks: weakref.WeakValueDictionary[str, asyncio.Lock] = (
            weakref.WeakValueDictionary()
        )
        #: callbacks freeing other per-session state when a session closes (turn-start results)
        self.on_session_closed: list[Callable[[str], None]] = []

    # -- executors ---------------------------------------------------------------------------
    async def run_db(self, fn: Callable[[], T]) -> T:
        """Run ``fn`` on the single SQLite thread (the connection is not shared across threads)."""
        return await asyncio.get_running_loop().run_in_executor(self.db_executor, fn)

    async def run_cpu(self, fn: Callable[[], T]) -> T:
        """Run CPU-bound ``fn`` (embedding) off the event loop, in the bounded executor."""
        return await asyncio.get_running_loop().run_in_executor(self.cpu_executor, fn)

    # -- embedding ---------------------------------------------------------------------------
    def embed_documents(self, texts: list[str]) -> np.ndarray:
        """Document vectors (blocking: call through ``run_cpu``)."""
        out: np.ndarray = self.embedder.embed_documents(texts)
        return out

    def embed_words(self, words: list[str]) -> np.ndarray:
        """Vocabulary words' vectors (blocking), past the embedding cache: words would push the
        queries a user repeats out of it."""
        inner = getattr(self.embedder, "inner", self.embedder)
        out: np.ndarray = inner.embed_documents(words)
        return out

    async def embed_many(self, texts: list[str]) -> np.ndarray:
        """Several texts' vectors from one model call (a query and the words the home lacks)."""
        out: np.ndarray = await self.run_cpu(lambda: self.embedder.embed_documents(texts))
        return out

    async def embed_query(self, text: str) -> np.ndarray | None:
        """The query vector, or ``None`` without an embedder."""
        if self.embedder is None:
            return None
        peek = getattr(self.embedder, "cached_query", None)
        hit = peek(text) if peek is not None else None
        if hit is not None:  # a repeated query: no executor hop
            return np.asarray(hit)
        vec: np.ndarray = await self.run_cpu(lambda: self.embedder.embed_query(text))
        return vec

    # -- per-call helpers --------------------------------------------------------------------
    def alive(self) -> None:
        if self.shut:
            raise StratamemError(ErrorCode.ALREADY_SHUT_DOWN, "the core has been shut down")

    def session_lock(self, session_id: str) -> asyncio.Lock:
        """One lock per session: a session's turns are routed and committed one at a time."""
        lk = self._session_locks.get(session_id)
        if lk is None:
            lk = self._session_locks[session_id] = asyncio.Lock()
        return lk

    def forget_session(self, session_id: str) -> None:
        """A session closed: free its turn-start results and the learner's state (its lock goes
        by itself once no call holds it)."""
        for hook in self.on_session_closed:
            hook(session_id)
        if self.learner is not None:
            self.learner.forget_session(session_id)

    def state_sizes(self) -> dict[str, int]:
        """Per-session state held in memory (the soak bench samples it)."""
        out = {
            "session_locks": len(self._session_locks),
            "journal_pending": len(self.journal.pending),
        }
        if self.learner is not None:
            out.update(self.learner.state_sizes())
        return out

    @property
    def max_input(self) -> int:
        return int(self.config["capture"]["max_input_chars"])

    def deadline_left_s(self, deadline_at: int | None) -> float:
        """Seconds left before ``deadline_at`` (epoch ms); the default budget when it is ``None``."""
        if deadline_at is None:
            return float(self.config["retrieval"]["default_deadline_ms"]) / 1000
        return (deadline_at - now_ms()) / 1000

    async def drain_journal(self, timeout_s: float) -> None:
        """Read-your-writes barrier: the journal only (learning keeps running in the background)."""
        self.alive()
        with contextlib.suppress(TimeoutError):
            await self.journal.drain(timeout_s)

    async def wait_for_replay(self, what: str) -> None:
        """Consistency barrier for reads that merge LanceDB with the journal's in-memory rows:
        while start-up replay pages are still on disk, wait for them (``journal.replay_read_wait_s``),
        then refuse with ``deadline_exceeded`` rather than answer without acknowledged turns."""
        if not self.journal.replaying():
            return
        wait = float(self.config["journal"]["replay_read_wait_s"])
        if await self.journal.wait_replayed(wait):
            return
        backlog = self.journal.backlog()
        raise StratamemError(
            ErrorCode.DEADLINE_EXCEEDED,
            f"{what}: the journal is still replaying {backlog} acknowledged entries after a "
            f"restart (waited {wait:g}s, journal.replay_read_wait_s); an answer now would miss "
            "some of them, retry shortly (`stratamem health` shows journal_backlog)",
            {"journal_backlog": backlog},
        )

    async def wait_for_writes(
        self, deadline_at: int | None, accepts: Callable[[Mapping[str, Any]], bool] | None = None
    ) -> list[dict[str, Any]]:
        """Wait (within ~half the remaining budget) for every acknowledged turn to be applied —
        with ``accepts`` (the reader's scope), every one up to the newest it can see: the journal
        is one queue, but another namespace's later backlog is not this reader's writes; return
        the rows still pending so a reader can search them too."""
        target = self.journal.max_seq(accepts)
        if target:
            budget = max(0.0, self.deadline_left_s(deadline_at) * 0.5)
            await self.journal.wait_applied(target, budget)
        return self.journal.pending_rows("trace")

    def close(self) -> None:
        """Close the store and database and stop the executors (after the journal has stopped)."""
        self.store.close()
        self.db_executor.submit(self.db.close).result()
        self.db_executor.shutdown(wait=True)
        self.cpu_executor.shutdown(wait=True)

"""The word store's life in a running core: loaded on first use, filled by the journal writer
after each applied batch (background, never in ``turn_end``'s acknowledgement), built from the
stored memories in the background when a home has memories but no store (an older home, or the
switch turned on after captures made with it off). Until a store is complete a query gets no
expansion: plain BM25, never an error."""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

from stratamem.core.embedding.base import is_asymmetric
from stratamem.core.telemetry import get_logger
from stratamem.core.vocab.counts import Owner, owner_of
from stratamem.core.vocab.lacking import LackingVectors
from stratamem.core.vocab.store import WordStore

T = TypeVar("T")
_log = get_logger("vocab")

#: words embedded per model call while a store is built
BUILD_BATCH = 256
#: the lists and counts are written at most this often while captures arrive (and at shutdown)
SAVE_EVERY_S = 5.0
#: set when memories were captured with the switch off: the store no longer covers them
_STALE = "stale"
#: what decides who may see a memory (vocab/counts.py: ``owner_of``)
_OWNER_COLUMNS = ("owner_agent_kind", "owner_profile_id", "share_scope")


class VocabService:
    """One home's word store behind its switch (``retrieval.expand_vocab``)."""

    def __init__(
        self,
        folder: Path,
        dim: int,
        retrieval: Mapping[str, Any],
        *,
        embed: Callable[[list[str]], np.ndarray] | None,
        run_cpu: Callable[[Callable[[], Any]], Awaitable[Any]],
        lance: Any,
        model: str = "",
    ) -> None:
        self.folder = folder
        self.dim = dim
        #: the embedder's model name: a store of another model's vectors is embedded again
        self.model = model
        self.cfg = retrieval
        self.embed = embed
        self.run_cpu = run_cpu
        self.lance = lance
        self._store: WordStore | None = None
        self._loading = asyncio.Lock()
        #: held while counting memories: the build's scan and the writer's batches never overlap
        self._counting = asyncio.Lock()
        self._build: asyncio.Task[None] | None = None
        self._saved = time.monotonic()
        #: whether the home held no memory when the core opened (its store starts complete)
        self._new_home = not lance.may_have_rows("traces")
        #: memories observed since the core opened (for tests and the bench)
        self.applied = 0
        #: stored memories (owner, text) not yet counted (``_drain`` takes them in order)
        self._queue: list[tuple[Owner, str]] = []
        self._worker: asyncio.Task[None] | None = None
        self._idle = asyncio.Event()
        self._idle.set()
        #: vectors of query words the store lacks, kept between queries (vocab/lacking.py)
        self.lacking = LackingVectors()

    @property
    def enabled(self) -> bool:
        return bool(self.cfg.get("expand_vocab")) and self.embed is not None

    @property
    def m(self) -> int:
        return int(self.cfg["expand_vocab_neighbours"])

    async def store(self) -> WordStore:
        """The store, loaded on first use (off the event loop)."""
        if self._store is not None:
            return self._store
        async with self._loading:
            if self._store is None:
                self._store = await self.run_cpu(self._load)
        return self._store

    def _load(self) -> WordStore:
        t0 = time.perf_counter()
        fresh = not (self.folder / "words.txt").exists() and not WordStore.exists(self.folder)
        st = WordStore.load(self.folder, self.dim, self.m, self.model)
        if fresh:  # a new home is complete from its first memory; an older one needs a build
            st.complete = self._new_home
        if (self.folder / _STALE).exists():
            st.complete = False
        _log.info(
            "vocab.loaded",
            words=len(st),
            complete=st.complete,
            ms=round((time.perf_counter() - t0) * 1000, 1),
        )
        return st

    async def for_query(self) -> WordStore | None:
        """The store when it covers every memory, else None (and its build started)."""
        if not self.enabled:
            return None
        st = await self.store()
        if st.complete:
            return st
        self.start_build()
        return None

    # -- capture ----------------------------------------------------------------------------------
    async def on_applied(self, table: str, rows: Sequence[Mapping[str, Any]]) -> None:
        """The journal writer stored ``rows`` in ``table``: queue their texts for the store's own
        task (counting and embedding never delay the writer: a restart's replay, read-your-writes).
        With the switch off only a stale mark is left when a store exists."""
        if table != "traces" or not rows:
            return
        if not self.enabled:
            if self.folder.exists() and not (self.folder / _STALE).exists():
                (self.folder / _STALE).touch()
            return
        self._queue.extend((owner_of(r), str(r.get("search_text") or "")) for r in rows)
        self._idle.clear()
        if self._worker is None or self._worker.done():
            self._worker = asyncio.create_task(self._drain(), name="stratamem-vocab-words")

    async def _drain(self) -> None:
        try:
            while self._queue:
                texts, self._queue = self._queue, []
                st = await self.store()
                async with self._counting:
                    new = await self.run_cpu(lambda s=st, t=texts: s.observe(t))  # type: ignore[misc]
                self.applied += len(texts)
                if new:
                    await self._add(st, new)
                if time.monotonic() - self._saved >= SAVE_EVERY_S:
                    await self.save()
        except Exception as exc:  # the words are lost: the store is rebuilt on next use
            _log.warning("vocab.update_failed", error=str(exc))
            self._queue.clear()
            if self._store is not None:
                self._store.complete = False
        finally:
            self._idle.set()

    async def settle(self, timeout_s: float | None) -> bool:
        """Wait (bounded) until every stored memory's words are in the store (``flush``)."""
        if self._idle.is_set():
            return True
        try:
            async with asyncio.timeout(timeout_s):
                await self._idle.wait()
        except TimeoutError:
            return False
        return True

    async def _add(self, st: WordStore, words: list[str]) -> None:
        embed = self.embed
        assert embed is not None
        for a in range(0, len(words), BUILD_BATCH):
            part = words[a : a + BUILD_BATCH]
            vecs = await self.run_cpu(lambda p=part: embed(p))  # type: ignore[misc]
            await self.run_cpu(lambda p=part, v=vecs: st.add(p, np.asarray(v)))  # type: ignore[misc]

    # -- build ------------------------------------------------------------------------------------
    def start_build(self) -> None:
        if self._build is None or self._build.done():
            self._build = asyncio.create_task(self.build(), name="stratamem-vocab-build")

    async def build(self) -> None:
        """Count every stored memory again and embed the words the store lacks (an older home's
        first use; minutes per 40k words, once). Queries get plain BM25 meanwhile."""
        st = await self.store()
        t0 = time.perf_counter()
        async with self._counting:
            table = self.lance.maintenance_table("traces", "vocab.build")
            got = await table.query().select([*_OWNER_COLUMNS, "search_text"]).to_list()
            texts = [(owner_of(r), str(r.get("search_text") or "")) for r in got]

            def recount() -> list[str]:
                with st.lock:
                    st.counts.clear()
                    return st.observe(texts)

            new = await self.run_cpu(recount)
            with contextlib.suppress(FileNotFoundError):
                (self.folder / _STALE).unlink()
        await self._add(st, new)
        st.complete = True
        await self.save()
        _log.info(
            "vocab.built",
            memories=len(texts),
            words=len(st),
            embedded=len(new),
            s=round(time.perf_counter() - t0, 1),
        )

    async def save(self) -> None:
        st = self._store
        if st is None:
            return
        self._saved = time.monotonic()
        await self.run_cpu(st.save)

    async def close(self, timeout_s: float = 10.0) -> None:
        """Let the queued words in (bounded), stop a running build (it starts again on next use)
        and write the lists and counts. Words left out mark the store incomplete: rebuilt."""
        done = await self.settle(timeout_s)
        for task in (self._worker, self._build):
            if task is not None and not task.done():
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await task
        if not done and self._store is not None:
            self._store.complete = False
        with contextlib.suppress(Exception):
            await self.save()


async def embed_with_query(
    embedder: Any, text: str, words: Sequence[str]
) -> tuple[np.ndarray, np.ndarray]:
    """The query's vector and the vectors of ``words`` from one model call (the words the home
    lacks cost no second call). An asymmetric embedder (``embedding.base.is_asymmetric``) takes
    two: one batch would embed the query as a document; the words stay documents, the role the
    word store embeds its words in."""
    if is_asymmetric(embedder):
        vec = np.asarray(await _query_vector(embedder, text), dtype=np.float32).reshape(-1)
        return vec, np.asarray(await _documents(embedder, list(words)), dtype=np.float32)
    mat = np.asarray(await _documents(embedder, [text, *words]), dtype=np.float32)
    return mat[0], mat[1:]


async def _documents(embedder: Any, texts: list[str]) -> Any:
    many = getattr(embedder, "embed_many", None)
    if many is not None:
        return await many(texts)
    fn = getattr(embedder, "embed_documents", None)
    if fn is None:
        raise TypeError("the embedder cannot embed a batch")
    return await asyncio.to_thread(fn, texts)


async def _query_vector(embedder: Any, text: str) -> Any:
    fn = embedder.embed_query
    if inspect.iscoroutinefunction(fn):
        return await fn(text)
    vec = await asyncio.to_thread(fn, text)
    return await vec if inspect.isawaitable(vec) else vec

"""Each tier's channels as LanceDB queries (the path without a hot index: contexts built over bare
tables, e.g. tools and tests that hand the engine LanceDB tables directly).

Every query runs under the shared deadline; channels of one tier run concurrently.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Container, Mapping, Sequence
from typing import Any

import numpy as np

from stratamem.core.retrieval import channels as ch
from stratamem.core.retrieval.candidates import Pool
from stratamem.core.retrieval.deadline import Deadline
from stratamem.core.retrieval.expand import (
    FETCH_LIMIT,
    Span,
    adjacency,
    neighbour_spans,
    spans_where,
)
from stratamem.core.retrieval.filters import TraceFilter
from stratamem.core.retrieval.hot_tiers import TraceChannels
from stratamem.core.retrieval.query import CompiledQuery
from stratamem.core.storage.ownership import quote
from stratamem.core.storage.read import rows_of

Row = dict[str, Any]
TextOf = Callable[[Mapping[str, Any]], str]


async def fts_current(store: Any | None, name: str, text: str) -> None:
    """Fold the rows written since ``name``'s FTS index was built into it before a text query:
    LanceDB scores rows its index does not cover on another BM25 scale (``LanceStore.fts_current``).
    Bare tables (no store) are read as they are."""
    fold = getattr(store, "fts_current", None)
    if fold is not None and text.strip():
        await fold(name)


async def table_pool(
    pool: Pool,
    table: Any,
    where: str,
    cq: CompiledQuery,
    qvec: np.ndarray | None,
    dl: Deadline,
    *,
    store: Any | None,
    name: str,
    vec_floor: float,
    vec_limit: int,
    kw_limit: int,
    text_of: TextOf,
) -> None:
    """Skills, experiences, world models: vector, FTS, pattern and identifier channels."""

    async def vec() -> ch.Scored:
        if qvec is None:
            return []
        got = await dl.run(
            "vec",
            lambda: ch.table_vector(table, "vec", qvec, where, vec_limit, store=store, name=name),
        )
        return [(r, sc) for r, sc in (got or []) if sc >= vec_floor]

    async def fts() -> ch.Scored:
        async def query() -> ch.Scored:
            await fts_current(store, name, cq.fts_text)
            return await ch.table_fts(table, cq.fts_text, where, kw_limit)

        got = await dl.run("fts", query)
        return ch.floor_relative(ch.merge_scored(got or [], [], normalise=True), 0.0, 0.2)

    async def pattern() -> ch.Scored:
        indexed = await dl.run("indices", lambda: ch.has_text_index(table))
        if indexed is None or not ch.needs_table_pattern(cq.terms, indexed):
            return []
        w = await dl.run("pattern_idf", lambda: ch.pattern_weights(table, cq.terms, where, []))
        if not w or not w[0]:
            return []
        terms, weights, dfs = w
        got = await dl.run(
            "pattern",
            lambda: ch.table_pattern(table, terms, weights, dfs, where, kw_limit, text_of),
        )
        return [(r, sc) for r, sc in (got or []) if sc >= 0.25]

    async def exact() -> ch.Scored:
        if not cq.identifiers:
            return []
        ids = cq.identifiers
        return await dl.run("exact", lambda: ch.table_substring(table, ids, where, kw_limit)) or []

    v, f, p, e = await asyncio.gather(vec(), fts(), pattern(), exact())
    pool.add_channel("vec", v)
    pool.add_channel("fts", f)
    pool.add_channel("pattern", p)
    pool.add_channel("exact_identifier", e)


async def trace_channels(
    table: Any | None,
    cq: CompiledQuery,
    qvec: np.ndarray | None,
    flt: TraceFilter,
    pending: Sequence[Row],
    dl: Deadline,
    *,
    store: Any | None,
    min_sim: float,
    vec_pool: int,
    kw_pool: int,
    lexical_floor: float,
    k: int,
    personal: bool,
    use_action: bool,
    tag_mode: str,
    text_of: TextOf,
) -> TraceChannels:
    """Tier 2's six channels over the LanceDB traces table and the pending rows."""
    lex_pending = [r for r in pending if flt.accepts(r)]
    where = flt.where()

    async def vec(column: str, with_tags: bool, ratio: float) -> ch.Scored:
        if qvec is None:
            return []
        got: ch.Scored = []
        if table is not None:
            w = flt.where(vector=True, with_tags=with_tags)
            got = (
                await dl.run(
                    column,
                    lambda: ch.table_vector(
                        table, column, qvec, w, vec_pool, store=store, name="traces"
                    ),
                )
                or []
            )
        rows = [r for r in pending if flt.accepts(r, vector=True, with_tags=with_tags)]
        merged = ch.merge_scored(got, ch.pending_vector(rows, column, qvec))
        return ch.floor_relative(merged, min_sim, ratio)[:vec_pool]

    async def vectors() -> tuple[ch.Scored, ch.Scored]:
        tagged = bool(flt.tags)
        rs, ra = (0.55, 0.65) if personal else (0.45, 0.45)
        jobs = [vec("vec_summary", tagged, rs)]
        if use_action:
            jobs.append(vec("vec_action", tagged, ra))
        got = await asyncio.gather(*jobs)
        s_hits, a_hits = got[0], (got[1] if len(got) > 1 else [])
        if tagged and tag_mode == "auto" and not s_hits and not a_hits:
            s_hits = await vec("vec_summary", False, rs)
        return s_hits, a_hits

    async def fts() -> ch.Scored:
        got: ch.Scored = []
        extra = [(word, w) for word, _tok, w in cq.expansion]  # the hot path's weighted terms
        if table is not None:

            async def query() -> ch.Scored:
                await fts_current(store, "traces", cq.fts_text)
                return await ch.table_fts(table, cq.fts_text, where, kw_pool, extra=extra)

            got = await dl.run("fts", query) or []
        merged = ch.merge_scored(got, ch.pending_bm25(lex_pending, cq.terms), normalise=True)
        return ch.floor_relative(merged, 0.0, lexical_floor)[:kw_pool]

    async def pattern() -> ch.Scored:
        texts = [text_of(r) for r in lex_pending]
        on_table = False
        if table is not None:
            indexed = await dl.run("indices", lambda: ch.has_text_index(table))
            on_table = indexed is not None and ch.needs_table_pattern(cq.terms, indexed)
        src = table if on_table else None
        w = await dl.run("pattern_idf", lambda: ch.pattern_weights(src, cq.terms, where, texts))
        if not w or not w[0]:
            return []
        terms, weights, dfs = w
        got: ch.Scored = []
        if on_table:
            got = (
                await dl.run(
                    "pattern",
                    lambda: ch.table_pattern(table, terms, weights, dfs, where, kw_pool, text_of),
                )
                or []
            )
        merged = ch.merge_scored(got, ch.pending_pattern(lex_pending, terms, weights, text_of))
        return [(r, sc) for r, sc in merged if sc >= 0.25][:kw_pool]

    async def substring(name: str, needles: Sequence[str], limit: int) -> ch.Scored:
        if not needles:
            return []
        got: ch.Scored = []
        if table is not None:
            got = await dl.run(name, lambda: ch.table_substring(table, needles, where, limit)) or []
        return ch.merge_scored(got, ch.pending_substring(lex_pending, needles))[:limit]

    (s_hits, a_hits), f_hits, p_hits, st_hits, ex_hits = await asyncio.gather(
        vectors(),
        fts(),
        pattern(),
        substring("structural", cq.error_fragments, max(k, 10)),
        substring("exact_identifier", cq.identifiers, kw_pool),
    )
    return TraceChannels(s_hits, a_hits, f_hits, p_hits, st_hits, ex_hits)


#: what the prefer/avoid lines are read from (retrieval/guidance.py: ``collect_guidance``)
GUIDANCE_COLUMNS = ["id", "guidance_json"]


async def linked_policies(
    table: Any, where: str, dl: Deadline, limit: int = 20
) -> list[dict[str, Any]]:
    """The policies linked to the kept episodes, as much of them as their guidance needs."""
    q = lambda: rows_of(table.query().where(where).select(GUIDANCE_COLUMNS).limit(limit))  # noqa: E731
    rows = await dl.run("guidance", q)
    return list(rows or [])


#: what finding a row's place in its session needs (retrieval/expand.py: ``adjacency``)
PLACE_COLUMNS = ["id", "session_id", "ts"]


async def rows_in_spans(
    table: Any, where: str, spans: list[Span], dl: Deadline, stage: str
) -> list[Row]:
    """The stored traces in ``spans`` passing ``where``, every column (they become candidates)."""
    if not spans:
        return []
    w = f"({where}) AND ({spans_where(spans)})"
    got = await dl.run(stage, lambda: rows_of(table.query().where(w).limit(FETCH_LIMIT)))
    return list(got or [])


async def session_neighbours(
    table: Any, where: str, seeds: Sequence[Mapping[str, Any]], known: Container[str], dl: Deadline
) -> list[Row]:
    """The stored rows next to each seed in its session (``expand_pool``'s ``near_rows``), in the
    order the seeds' spans are read: the same neighbours, edges and order as reading the spans
    whole, which read up to 400 rows with both vectors to keep about twenty.

    The spans are read with ``PLACE_COLUMNS`` and the row ids only (same filter, same limit); the
    neighbours the pool lacks (the ones that can become candidates) are then read whole in one
    query by row id, which LanceDB answers with a take, not a scan. A row id a compaction or an
    update retired in between matches nothing, so those few are read again by ``id``. Rows the
    pool holds keep their place-only row: expansion reads only the rows it adds. A cut-off read
    gives no neighbours, as a cut-off span read did.
    """
    spans = neighbour_spans(seeds)
    if not spans:
        return []
    w = f"({where}) AND ({spans_where(spans)})"
    placed = await dl.run(
        "neighbours",
        lambda: rows_of(
            table.query().where(w).select(PLACE_COLUMNS).with_row_id().limit(FETCH_LIMIT)
        ),
    )
    if not placed:
        return []
    adj = adjacency([*seeds, *placed])
    near = {n for s in seeds for n in adj.get(str(s["id"]), ())}
    rows = [r for r in placed if str(r["id"]) in near]
    missing = [r for r in rows if str(r["id"]) not in known]
    if not missing:
        return rows
    by_rowid = f"({where}) AND _rowid IN ({', '.join(str(int(r['_rowid'])) for r in missing)})"
    whole = await dl.run("neighbour_rows", lambda: rows_of(table.query().where(by_rowid)))
    if whole is None:
        return []
    want = {str(r["id"]) for r in missing}
    got = {i: r for r in whole if (i := str(r["id"])) in want}
    if len(got) < len(want):  # moved or rewritten since the spans were read: by id instead
        ids = ", ".join(quote(i) for i in sorted(want - got.keys()))
        by_id = f"({where}) AND id IN ({ids})"
        again = await dl.run("neighbour_rows_by_id", lambda: rows_of(table.query().where(by_id)))
        if again is None:
            return []
        got.update((str(r["id"]), r) for r in again)
    # a row deleted between the reads is left out, never passed on with its place alone
    return [got.get(i, r) for r in rows if (i := str(r["id"])) in got or i in known]

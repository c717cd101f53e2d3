"""The LanceDB path's neighbour read (retrieval/lance_tiers.session_neighbours) gives neighbour
expansion exactly what reading the seeds' whole session spans with every column gives it: same
pool, same channels, same priors, and every candidate it adds with every field and vector the
ranking reads. Real LanceDB (several fragments, deleted rows, rows the filter hides, pending
rows); a write landing between its two reads is honoured."""

from __future__ import annotations

import asyncio
import random
from collections.abc import Awaitable, Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import lancedb
import numpy as np
import pyarrow as pa

from stratamem.contract.dtos import Namespace
from stratamem.core.retrieval.candidates import Pool
from stratamem.core.retrieval.deadline import Deadline
from stratamem.core.retrieval.expand import FETCH_LIMIT, Span, expand_pool, spans_where
from stratamem.core.retrieval.lance_tiers import session_neighbours
from stratamem.core.storage.ownership import Scope
from stratamem.core.storage.read import arrow_rows, rows_of
from stratamem.core.storage.schemas import traces_schema
from stratamem.core.storage.scoped import ScopedQuery, ScopedTable

DIM = 8
MIN = 60_000
NS = Namespace("k", "default")
#: the trace filter of these tests: rows of priority 0 are hidden
WHERE = "priority > 0"


def _rows(rng: random.Random, n: int, sessions: Sequence[str]) -> list[dict[str, Any]]:
    out = []
    ts = 1_700_000_000_000
    for i in range(n):
        # bursts of equal timestamps, ordinary steps, and gaps longer than the window
        ts += rng.choice([0, 0, MIN, 3 * MIN, 45 * MIN])
        out.append(
            {
                "id": f"t-{rng.randrange(10**6):06d}-{i}",
                "episode_id": f"e-{i // 4}",
                "session_id": rng.choice(sessions),
                "ts": ts,
                "turn_id": i,
                "summary": f"summary {i}",
                "user_text": f"user {i}",
                "tags": [f"tag{i % 3}"],
                "value": rng.random(),
                "priority": rng.choice([0.0, 0.5, 1.0]),
                "search_text": f"row {i}",
                "owner_agent_kind": "k",
                "owner_profile_id": "default",
                "share_scope": "private",
                "vec_summary": [rng.gauss(0, 1) for _ in range(DIM)],
                "vec_action": None if i % 3 else [rng.gauss(0, 1) for _ in range(DIM)],
            }
        )
    return out


async def _table(path: Path, rows: list[dict[str, Any]]) -> tuple[Any, ScopedTable]:
    schema = traces_schema(DIM)
    db = await lancedb.connect_async(path)
    raw = await db.create_table("traces", schema=schema)
    for start in range(0, len(rows), 37):  # several fragments
        await raw.add(pa.Table.from_pylist(rows[start : start + 37], schema=schema))
    if len(rows) > 10:
        await raw.delete(f"id = '{rows[5]['id']}'")  # a deletion vector too
    return raw, ScopedTable("traces", raw, Scope.visible(NS))


def _pool(full: Mapping[str, dict[str, Any]], picks: Sequence[str]) -> Pool:
    pool = Pool("trace", ("vec_summary", "vec_action"), lambda r: "")
    pool.add_channel("vec_summary", [(dict(full[i]), 0.9 - k / 100) for k, i in enumerate(picks)])
    pool.add_channel("fts", [(dict(full[i]), 1.0 / (k + 1)) for k, i in enumerate(picks[::2])])
    return pool


def _snapshot(pool: Pool) -> list[tuple[Any, ...]]:
    """Everything ranking reads of a candidate: channels, prior, its row and its vectors."""
    return sorted(
        (
            rid,
            sorted(c.channels.items()),
            c.prior,
            sorted(c.row.items(), key=lambda kv: kv[0]),
            [v.tolist() for v in c.vectors],
        )
        for rid, c in pool.items.items()
    )


async def _same_expansion(
    path: Path, rng: random.Random, n: int, sessions: list[str]
) -> tuple[bool, int]:
    """(same snapshot both ways, how many neighbours the expansion added)"""
    rows = _rows(rng, n, sessions)
    _raw, table = await _table(path, rows)
    full = {str(r["id"]): r for r in await table.query().where(WHERE).to_list()}
    if not full:
        return True, 0
    qvec = np.array([rng.gauss(0, 1) for _ in range(DIM)], dtype=np.float32)
    qvec /= np.linalg.norm(qvec)
    picks = rng.sample(sorted(full), min(len(full), rng.randrange(1, 15)))
    pending = [
        {**r, "id": f"p-{k}", "ts": r["ts"] + rng.choice([0, MIN // 2])}
        for k, r in enumerate(rng.sample(sorted(full.values(), key=str), min(3, len(full))))
    ]
    top = rng.choice([1, 3, 10])

    async def whole_spans(spans: list[Span]) -> list[dict[str, Any]]:
        """The read this replaces: the seeds' spans, every column, as Python lists."""
        w = f"({WHERE}) AND ({spans_where(spans)})"
        got: list[dict[str, Any]] = await table.query().where(w).limit(FETCH_LIMIT).to_list()
        return got

    async def never(spans: list[Span]) -> list[dict[str, Any]]:
        raise AssertionError("near_rows replaces the span read")

    whole = _pool(full, picks)
    await expand_pool(whole, whole_spans, pending, qvec, lexical_weight=0.5, top=top)
    fast = _pool(full, picks)

    def near(seeds: list[Mapping[str, Any]]) -> Awaitable[list[dict[str, Any]]]:
        return session_neighbours(table, WHERE, seeds, fast.items, Deadline(None))

    await expand_pool(fast, never, pending, qvec, lexical_weight=0.5, top=top, near_rows=near)
    added = sum(c.channels.keys() == {"neighbour"} for c in whole.items.values())
    return _snapshot(fast) == _snapshot(whole), added


def test_lancedb_neighbours_expand_exactly_like_the_whole_spans(tmp_path: Path) -> None:
    async def go() -> None:
        rng = random.Random(5)
        added = 0
        for trial in range(12):
            n = rng.randrange(5, 120)
            ok, got = await _same_expansion(tmp_path / f"t{trial}", rng, n, ["a", "b", "c", ""])
            assert ok, f"trial {trial}"
            added += got
        assert added > 0  # the trials do add neighbours (read whole by the new code)

    asyncio.run(go())


def test_a_session_longer_than_the_read_limit_keeps_the_same_rows(tmp_path: Path) -> None:
    """Past ``FETCH_LIMIT`` rows in the spans, the place-only read cuts at the same rows."""
    ok, _added = asyncio.run(_same_expansion(tmp_path, random.Random(11), FETCH_LIMIT + 150, ["s"]))
    assert ok


class _WriteBetweenReads(ScopedTable):
    """The real table; ``write`` lands on it just before the second read (the whole rows)."""

    def __init__(
        self, name: str, table: Any, scope: Scope, write: Callable[[], Awaitable[None]]
    ) -> None:
        super().__init__(name, table, scope)
        self.write = write
        self.reads = 0

    def query(self) -> Any:
        self.reads += 1
        q = super().query()
        return _WriteFirst(q, self.write) if self.reads == 2 else q


class _WriteFirst:
    """A scoped query that lets ``write`` land before it runs."""

    def __init__(self, q: ScopedQuery, write: Callable[[], Awaitable[None]]) -> None:
        self.q, self.write = q, write

    def where(self, predicate: str) -> _WriteFirst:
        self.q.where(predicate)
        return self

    async def to_arrow(self) -> Any:
        await self.write()
        return await self.q.to_arrow()


def test_a_row_updated_or_deleted_between_the_two_reads_is_read_as_it_is_now(
    tmp_path: Path,
) -> None:
    async def go() -> None:
        rows = _rows(random.Random(2), 6, ["s"])
        for i, r in enumerate(rows):
            r.update(ts=1_700_000_000_000 + i * MIN, priority=1.0)
        raw, _ = await _table(tmp_path, rows)
        schema = traces_schema(DIM)

        async def write() -> None:
            changed = {**rows[1], "summary": "changed after the span read"}
            await (
                raw.merge_insert("id")
                .when_matched_update_all()
                .when_not_matched_insert_all()
                .execute(pa.Table.from_pylist([changed], schema=schema))
            )
            await raw.delete(f"id = '{rows[3]['id']}'")

        table = _WriteBetweenReads("traces", raw, Scope.visible(NS), write)
        seed = (await table.query().where(f"id = '{rows[2]['id']}'").to_list())[0]
        table.reads = 0
        got = await session_neighbours(table, WHERE, [seed], {}, Deadline(None))
        assert table.reads >= 2  # the write landed between the reads
        assert [r["id"] for r in got] == [rows[1]["id"]]  # rows[3] is gone
        assert got[0]["summary"] == "changed after the span read"
        assert got[0]["vec_summary"] is not None and got[0]["user_text"] == "user 1"

    asyncio.run(go())


def test_rows_known_to_the_pool_are_not_read_again(tmp_path: Path) -> None:
    async def go() -> None:
        rows = _rows(random.Random(3), 5, ["s"])
        for i, r in enumerate(rows):
            r.update(ts=1_700_000_000_000 + i * MIN, priority=1.0)
        raw, _ = await _table(tmp_path, rows)

        async def nothing() -> None:
            return None

        table = _WriteBetweenReads("traces", raw, Scope.visible(NS), nothing)
        seed = {**rows[2]}
        known = {rows[1]["id"]: object(), rows[3]["id"]: object()}
        got = await session_neighbours(table, WHERE, [seed], known, Deadline(None))
        assert [r["id"] for r in got] == [rows[1]["id"], rows[3]["id"]]
        assert table.reads == 1  # the span's places only: both neighbours are in the pool

    asyncio.run(go())


def test_arrow_rows_are_to_pylist_with_float32_vectors(tmp_path: Path) -> None:
    async def go() -> None:
        rows = _rows(random.Random(4), 90, ["a", "b"])
        _raw, table = await _table(tmp_path, rows)
        tbl = await table.query().to_arrow()
        chunked = pa.concat_tables([tbl.slice(0, 31), tbl.slice(31)])  # as batches arrive
        assert chunked.column("vec_summary").num_chunks == 2
        for t in (tbl, tbl.slice(7, 50), chunked, chunked.slice(20, 30)):
            want = t.to_pylist()
            got = arrow_rows(t)
            assert [r.keys() for r in got] == [r.keys() for r in want]
            for g, w in zip(got, want, strict=True):
                for k, v in g.items():
                    if isinstance(v, np.ndarray):
                        assert v.dtype == np.float32 and v.tolist() == w[k]
                    else:
                        assert v == w[k]
            assert any(r["vec_action"] is None for r in got)
        assert await rows_of(table.query().where("false")) == []

    asyncio.run(go())

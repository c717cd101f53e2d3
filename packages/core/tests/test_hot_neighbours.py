"""The hot index's session-neighbour lookup gives neighbour expansion exactly what reading the
seeds' whole session spans gives it (same pool, same channels, same priors), on sessions with
equal timestamps, gaps beyond the window, rows the filter hides and pending rows."""

from __future__ import annotations

import asyncio
import random
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from stratamem.core.hotindex import HotTable
from stratamem.core.retrieval import hot_channels as hc
from stratamem.core.retrieval.candidates import Pool
from stratamem.core.retrieval.expand import (
    NEIGHBOUR_WINDOW_MS,
    Span,
    expand_pool,
    hot_rows_in_spans,
    in_spans,
)

DIM = 8
MIN = 60_000


def _rows(rng: random.Random, n: int) -> list[dict[str, Any]]:
    out = []
    ts = 1_700_000_000_000
    for i in range(n):
        # bursts of equal timestamps, ordinary steps, and gaps longer than the window
        ts += rng.choice([0, 0, MIN, 3 * MIN, 45 * MIN])
        vec = np.array([rng.gauss(0, 1) for _ in range(DIM)], dtype=np.float32)
        out.append(
            {
                "id": f"t-{rng.randrange(10**6):06d}-{i}",
                "session_id": rng.choice(["a", "b", "c", None]),
                "ts": ts,
                "priority": rng.choice([0.0, 0.5, 1.0]),
                "owner_agent_kind": "k",
                "owner_profile_id": "default",
                "search_text": f"row {i}",
                "vec_summary": vec,
            }
        )
    return out


def _pool(
    rows: Sequence[Mapping[str, Any]], picks: Sequence[int], qvec: np.ndarray, t: HotTable
) -> Pool:
    pool = Pool("trace", ("vec_summary", "vec_action"), lambda r: "")
    slots = [t.slot_of[str(rows[i]["id"])] for i in picks]
    pool.add_channel("vec_summary", [(t.full_row(s), 0.9 - k / 100) for k, s in enumerate(slots)])
    pool.add_channel("fts", [(t.full_row(s), 1.0 / (k + 1)) for k, s in enumerate(slots[::2])])
    return pool


def _snapshot(pool: Pool) -> list[tuple[str, Any, Any]]:
    return sorted((rid, sorted(c.channels.items()), c.prior) for rid, c in pool.items.items())


def _same_expansion(rng: random.Random) -> bool:
    rows = _rows(rng, rng.randrange(5, 120))
    t = HotTable("traces", ("vec_summary", "vec_action"), DIM, {})
    t.upsert(rows)
    mask = t.alive[: t.n] & (t.priority[: t.n] > 0)  # a filter that hides some rows
    visible = [i for i, r in enumerate(rows) if r["priority"] > 0]
    if not visible:
        return True
    qvec = np.array([rng.gauss(0, 1) for _ in range(DIM)], dtype=np.float32)
    qvec /= np.linalg.norm(qvec)
    picks = rng.sample(visible, min(len(visible), rng.randrange(1, 15)))
    pending = [
        {**r, "id": f"p-{k}", "ts": r["ts"] + rng.choice([0, MIN // 2])}
        for k, r in enumerate(rng.sample(rows, min(3, len(rows))))
        if r["priority"] > 0
    ]
    top = rng.choice([1, 3, 10])

    async def fetch(spans: list[Span]) -> list[dict[str, Any]]:
        return hot_rows_in_spans(t, mask, spans, limit=10**6)

    def near(seeds: list[Mapping[str, Any]]) -> list[dict[str, Any]]:
        return hc.session_neighbours(t, mask, seeds, NEIGHBOUR_WINDOW_MS)

    async def never(spans: list[Span]) -> list[dict[str, Any]]:
        raise AssertionError("near_rows replaces the span fetch")

    whole = _pool(rows, picks, qvec, t)
    asyncio.run(expand_pool(whole, fetch, pending, qvec, lexical_weight=0.5, top=top))
    fast = _pool(rows, picks, qvec, t)
    asyncio.run(
        expand_pool(fast, never, pending, qvec, lexical_weight=0.5, top=top, near_rows=near)
    )
    return _snapshot(fast) == _snapshot(whole)


def test_session_neighbours_expand_exactly_like_the_whole_spans() -> None:
    rng = random.Random(3)
    for trial in range(60):
        assert _same_expansion(rng), f"trial {trial}"


def test_session_neighbours_are_the_nearest_visible_rows_within_the_window() -> None:
    t = HotTable("traces", ("vec_summary",), DIM, {})
    base = 1_700_000_000_000
    spec = [  # id, ts offset (minutes), priority
        ("a", 0, 0.5),
        ("b", 5, 0.0),  # hidden by the filter: skipped over
        ("c", 10, 0.5),
        ("d", 10, 0.5),  # same time as c: ordered by id
        ("e", 80, 0.5),  # beyond the window
    ]
    t.upsert(
        [
            {"id": i, "session_id": "s", "ts": base + m * MIN, "priority": p, "search_text": ""}
            for i, m, p in spec
        ]
    )
    mask = t.alive[: t.n] & (t.priority[: t.n] > 0)

    def near(rid: str) -> list[str]:
        row = t.full_row(t.slot_of[rid])
        return [r["id"] for r in hc.session_neighbours(t, mask, [row], NEIGHBOUR_WINDOW_MS)]

    assert near("a") == ["c"]
    assert near("c") == ["a", "d"]
    assert near("d") == ["c"]  # e is 70 minutes later: no next neighbour
    assert near("e") == []
    assert in_spans(t.full_row(0), [("s", base, base)])


def test_a_write_to_the_session_reaches_the_cached_order() -> None:
    t = HotTable("traces", ("vec_summary",), DIM, {})
    base = 1_700_000_000_000

    def put(rid: str, minute: int, session: str = "s") -> None:
        t.upsert([{"id": rid, "session_id": session, "ts": base + minute * MIN, "priority": 1.0}])

    def near(rid: str) -> list[str]:
        mask = t.alive[: t.n].copy()
        row = t.full_row(t.slot_of[rid])
        return [r["id"] for r in hc.session_neighbours(t, mask, [row], NEIGHBOUR_WINDOW_MS)]

    put("a", 0)
    put("c", 10)
    assert near("a") == ["c"]
    put("b", 5)  # a new turn between them
    assert near("a") == ["b"]
    put("b", 5, session="other")  # moved to another session
    assert near("a") == ["c"]
    t.delete(["c"])
    assert near("a") == []

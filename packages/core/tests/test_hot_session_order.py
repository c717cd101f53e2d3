"""A session's (ts, id) order is made from the timestamps held in memory: ids (a side-file read
each) are read only where timestamps tie, and it equals sorting by (ts, id)."""

from __future__ import annotations

import os
import random
from bisect import bisect_left
from typing import Any

import numpy as np
import pytest

from stratamem.core.hotindex import HotTable
from stratamem.core.hotindex.sessions import order_of

DIM = 8


def test_order_and_place_equal_sorting_by_ts_then_id() -> None:
    rng = random.Random(5)
    for _ in range(200):
        n = rng.randrange(0, 30)
        ids = [f"t-{rng.randrange(10**4):04d}-{i}" for i in range(n)]
        base = 1_700_000_000_000
        ts = np.array([base + rng.choice([0, 0, 1, 2, 60_000]) * rng.randrange(3) for _ in ids])
        slots = np.arange(n, dtype=np.int64)
        id_of = ids.__getitem__
        got = order_of(slots, ts, id_of)
        keys = sorted((int(ts[s]), ids[s]) for s in range(n))
        assert list(got.ts) == [k[0] for k in keys]
        assert [ids[s] for s in got.slots] == [k[1] for k in keys]
        probes = [
            *keys,
            *((int(t) + d, f"t-{rng.randrange(10**4):04d}") for t in ts for d in (-1, 0, 1)),
        ]
        for key in probes:
            i = bisect_left(keys, key)
            assert got.place(key[0], key[1], id_of) == (
                i,
                i < len(keys) and keys[i] == key,
            )


def test_ids_are_read_only_where_timestamps_tie() -> None:
    reads: list[int] = []

    def id_of(slot: int) -> str:
        reads.append(slot)
        return f"id-{slot:03d}"

    ts = np.array([5, 3, 9, 3, 7, 1], dtype=np.int64)  # slots 1 and 3 share a timestamp
    got = order_of(np.arange(6, dtype=np.int64), ts, id_of)
    assert list(got.slots) == [5, 1, 3, 0, 4, 2] and sorted(reads) == [1, 3]
    reads.clear()
    assert got.place(7, "id-004", id_of) == (4, True) and reads == [4]
    reads.clear()
    assert got.place(8, "id-999", id_of) == (5, False) and reads == []


def _row(i: int, session: str, ts: int) -> dict[str, Any]:
    return {
        "id": f"row-{i:05d}",
        "session_id": session,
        "ts": ts,
        "priority": 0.5,
        "owner_agent_kind": "k",
        "owner_profile_id": "default",
        "search_text": f"turn {i} of a long conversation about nothing in particular",
        "vec_summary": np.ones(DIM, dtype=np.float32),
    }


def test_a_session_of_distinct_timestamps_is_ordered_without_reading_its_rows(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    t = HotTable("traces", ["vec_summary"], DIM, {})
    t.upsert(
        [_row(i, f"s{i % 3}", 1_700_000_000_000 + (97 * i) % 120 * 60_000) for i in range(120)]
    )
    calls = 0
    real = os.pread

    def counting(fd: int, n: int, offset: int) -> bytes:
        nonlocal calls
        calls += 1
        return real(fd, n, offset)

    monkeypatch.setattr(os, "pread", counting)
    order = t.session_order("s1")
    assert calls == 0  # the old order read the 40 rows' ids (40 reads)
    monkeypatch.setattr(os, "pread", real)
    want = sorted((int(t.ts[s]), str(t.ids[s])) for s in t.session_slots("s1").tolist())
    assert list(zip(order.ts, (str(t.ids[s]) for s in order.slots), strict=True)) == want


def test_session_codes_hold_no_python_object_per_session() -> None:
    """A table's session ids map to codes in order of first sight, through writes, rewrites into
    another session and deletes, without a string, an int and a dict entry per session (~130 B
    of small objects each for the table's life; ~45 B and the id's bytes in arrays now)."""
    import gc
    import tracemalloc

    t = HotTable("traces", ("v",), DIM, {})
    n = 3000
    codes: Any = t.session_code
    add = getattr(codes, "code", None) or (lambda sid: codes.setdefault(sid, len(codes) + 1))
    gc.collect()
    tracemalloc.start()
    try:
        for i in range(n):  # each id made here, held by nothing else (as a row's once written)
            add(f"soak-33-{i:05d}")
        held, _peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    sids = [f"soak-33-{i:05d}" for i in range(3)]
    assert [t.session_code.get(s) for s in sids] == [1, 2, 3]
    assert held / n <= 90, f"{held / n:.1f} B a session"
    rows = [
        {"id": f"r{i}", "session_id": f"s{i % 3}", "ts": i, "search_text": "x", "v": None}
        for i in range(9)
    ]
    t.upsert(rows)
    t.upsert([{**rows[0], "session_id": "s9"}])  # moved to a new session
    t.delete(["r1"])
    assert t.session_code.get("s9") == n + 4 and t.session_code.get("nope") is None
    assert t.session_slots("s0").tolist() == [3, 6] and t.session_slots("s9").tolist() == [0]
    assert t.session_slots("s1").tolist() == [4, 7] and len(t.session_code) == n + 4


def test_a_cached_order_holds_no_int_object_per_row() -> None:
    """An order stays cached until its session is written (up to ``SESSION_ORDERS_CACHED`` of
    them): as lists it held an int object per timestamp and slot, ~80 B a row; 16 now."""
    import gc
    import tracemalloc

    n = 2000
    ts = np.arange(1_700_000_000_000, 1_700_000_000_000 + 7 * n, 7, dtype=np.int64)
    slots = np.arange(300, 300 + n, dtype=np.int64)
    gc.collect()
    tracemalloc.start()
    try:
        got = order_of(slots, np.concatenate((np.zeros(300, np.int64), ts)), str)
        held, _peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert list(got.slots) == slots.tolist() and got.ts[5] == int(ts[5])
    assert held / n <= 24, f"{held / n:.1f} B a row"

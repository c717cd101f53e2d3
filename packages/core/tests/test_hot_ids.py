"""The hot index's ids (``hotindex/ids.py``): id -> slot through sorted hashes and a batch not yet
merged, confirmed against the row's own id; deletes, re-adds and bulk loads keep every lookup exact.
And what the switch to the side file is for: a trace's rows, ids, sessions and tags cost a few
dozen resident bytes, not the ~1.1 KB of Python objects they were (soak-session8.md)."""

from __future__ import annotations

import random
import tracemalloc
from typing import Any

import numpy as np

from stratamem.core.hotindex import ids as ids_mod
from stratamem.core.hotindex.footprint import table_bytes
from stratamem.core.hotindex.ids import IdIndex
from stratamem.core.hotindex.rowfile import RowFile
from stratamem.core.hotindex.table import HotTable


def _store(n: int) -> tuple[RowFile, IdIndex]:
    rows = RowFile()
    index = IdIndex(rows)
    for i in range(n):
        rows.append({"id": f"tr_{i:06d}", "v": i})
    return rows, index


def test_lookups_stay_exact_across_merges_deletes_and_re_adds() -> None:
    n = ids_mod.MERGE_EVERY * 2 + 300
    rows, index = _store(n)
    index.update([f"tr_{i:06d}" for i in range(100)], range(100))  # a bulk batch
    for i in range(100, n):  # one by one: merged every MERGE_EVERY
        index[f"tr_{i:06d}"] = i
    rng = random.Random(7)
    gone = set(rng.sample(range(n), 500))
    for i in gone:
        assert index.pop(f"tr_{i:06d}") == i
        rows[i] = None
    assert len(index) == n - len(gone)
    for i in range(n):
        rid = f"tr_{i:06d}"
        assert index.get(rid) == (None if i in gone else i)
        assert (rid in index) is (i not in gone)
    assert index.get("tr_missing") is None and index.pop("tr_missing", -5) == -5
    back = sorted(gone)[:50]
    for i in back:  # a deleted id comes back at a new slot
        rows.append({"id": f"tr_{i:06d}", "v": -i})
        index[f"tr_{i:06d}"] = len(rows) - 1
    for i in back:
        assert index[f"tr_{i:06d}"] == rows.column("v").index(-i)
    assert index.any_held(["tr_x", f"tr_{back[0]:06d}"]) and not index.any_held(["tr_x", "tr_y"])
    assert index.any_held([f"tr_{n - 1:06d}"]) is ((n - 1) not in gone)


def test_a_hash_shared_by_two_ids_is_told_apart_by_the_rows_id() -> None:
    _rows, index = _store(2)
    index.update(["tr_000000", "tr_000001"], [0, 1])
    # another id under row 0's hash (a collision, made by hand): it must not find row 0
    index._keys = np.concatenate((index._keys, [hash("tr_other")]))
    index._slots = np.concatenate((index._slots, np.array([0], dtype=np.int32)))
    order = np.argsort(index._keys, kind="stable")
    index._keys, index._slots = index._keys[order], index._slots[order]
    assert index.get("tr_other") is None and "tr_other" not in index
    assert not index.any_held(["tr_other"])
    assert index.get("tr_000000") == 0


def test_a_traces_resident_bytes_besides_vectors_and_postings_are_a_few_dozen() -> None:
    t = HotTable("traces", ("vec_summary",), 8, {})
    n = ids_mod.MERGE_EVERY + 1000  # most ids merged into the arrays, as in a long run
    rows: list[dict[str, Any]] = []
    for i in range(n):
        user = f"How do I back up my phone photos? (note {i})"
        agent = "Turn on cloud backup or copy them to an external drive regularly."
        rows.append(
            {
                "id": f"tr_{i:012x}",
                "episode_id": f"ep_{i // 8:012x}",
                "session_id": f"soak-11-{i // 8:05d}",
                "ts": 1796207399702 + i,
                "user_text": user,
                "agent_text": agent,
                "summary": user,
                "tags": ["lightweight_memory", "python"],
                "priority": 0.5,
                "search_text": f"{user}\n{agent}\n{user}\nlightweight_memory python",
                "owner_agent_kind": "bench",
                "owner_profile_id": "default",
                "share_scope": "private",
                "vec_summary": np.ones(8, dtype=np.float32),
            }
        )
    for i in range(0, n, 4):
        t.upsert(rows[i : i + 4])
    t.session_order(str(rows[-1]["session_id"]))
    # rows, ids, filter columns, sessions, tags: ~1.1 KB a row as Python objects, here the slot
    # locations, 12-byte id entries, compact columns and slot arrays
    assert table_bytes(t)["rows"] / n < 120
    got = t.full_row(t.slot_of[str(rows[1234]["id"])])
    assert got["search_text"] == rows[1234]["search_text"] and t.ids[1234] == rows[1234]["id"]


def test_ids_waiting_to_be_merged_hold_no_python_object_each() -> None:
    """Ids added one by one wait for the next merge (up to ``MERGE_EVERY``): as a ``dict`` of
    their strings they were small objects alive for thousands of turns among the transient ones
    (CPython's arenas). Traced here, each id made in the loop and held by nothing else (as once
    its row is written): ~114 B an id as a ``dict`` (the string, an int per slot, the entry); as
    hashes, slots and bytes in arrays, ~30."""
    n = ids_mod.MERGE_EVERY - 1
    _rows, index = _store(n)
    tracemalloc.start()
    try:
        for i in range(n):
            index[f"tr_{i:06d}"] = i
        held, _peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert index.get("tr_000077") == 77 and index.pop("tr_000078") == 78
    assert "tr_000078" not in index and index.get("tr_000079") == 79
    assert held / n <= 45, f"{held / n:.1f} B an id"
    assert index.nbytes() / n <= 45

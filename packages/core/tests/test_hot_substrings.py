"""The substring channel's joined texts (``lexical/substrings.py``): the same hits as a
case-insensitive ``str.find`` over each text, across the chunks the texts are read in (non-ASCII
lower-casings that lengthen a text, final sigmas at a text's edges, empty and missing texts); and
a rebuild over a large table needs no new CPython arenas for a Python object per text (the soak's
arena growth, soak-session13-lexmem.md)."""

from __future__ import annotations

import os
import random
import sys
import tempfile

import numpy as np
import pyarrow as pa
import pytest

from stratamem.core.hotindex import rowfile
from stratamem.core.hotindex.table import HotTable
from stratamem.core.retrieval import hot_channels

PIECES = ["ΑΣ", "Σα", "ΣΑΣ", "İstanbul", "straße", "ǅ", "Error E42", "x", "", "café", "ß", "ΌΣΟΣ"]


def _row(i: int, text: str | None) -> dict[str, object]:
    return {
        "id": f"tr_{i:08d}",
        "session_id": f"s{i // 8}",
        "ts": 1_000 + i,
        "priority": 0.5,
        "tags": ["t"],
        "search_text": text,
        "owner_agent_kind": "bench",
        "owner_profile_id": "default",
        "share_scope": "private",
    }


def _table(texts: list[str | None]) -> HotTable:
    t = HotTable("traces", (), 8, {})
    t.load_batch(pa.RecordBatch.from_pylist([_row(i, x) for i, x in enumerate(texts)]))
    return t


def _texts(t: HotTable) -> object:
    """The table's texts as the substring channel reads them (``texts`` before the chunks)."""
    return getattr(t, "text_chunks", None) or t.texts  # type: ignore[attr-defined]


def _want(texts: list[str | None], needle: str, mask: np.ndarray, limit: int) -> list[int]:
    low = needle.lower()
    hits = [i for i, x in enumerate(texts) if low in (x or "").lower() and mask[i]]
    return hits[:limit]


@pytest.mark.parametrize("chunk", [1, 3, 512])
def test_substring_hits_equal_a_find_over_each_text(
    chunk: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(rowfile, "CHUNK_ROWS", chunk, raising=False)
    rng = random.Random(chunk)
    texts: list[str | None] = [
        None if rng.random() < 0.1 else " ".join(rng.choices(PIECES, k=rng.randrange(0, 4)))
        for _ in range(300)
    ]
    t = _table(texts)
    t.delete([f"tr_{i:08d}" for i in range(0, 300, 17)])  # deleted slots read as no text
    for i in range(0, 300, 17):
        texts[i] = None
    t.upsert([_row(5, "late İ ΣΑΣ")])  # rewritten: appended out of slot order in the file
    texts[5] = "late İ ΣΑΣ"
    mask = np.array([rng.random() > 0.2 for _ in range(300)], dtype=bool)
    for needle in ["σ", "ς", "ας", "i̇s", "strasse", "straße", "e42", "ǆ", "late", "x ", " x", "é"]:
        for limit in (1, 5, 1000):
            got = t.sub.find(_texts(t), needle, mask, limit)
            assert got == _want(texts, needle, mask, limit), (needle, limit)


def _arenas_allocated() -> int:
    """CPython's count of arenas allocated since start (``sys._debugmallocstats``, C stderr)."""
    with tempfile.TemporaryFile() as tmp:
        sys.stderr.flush()
        saved = os.dup(2)
        try:
            os.dup2(tmp.fileno(), 2)
            sys._debugmallocstats()
        finally:
            os.dup2(saved, 2)
            os.close(saved)
        tmp.seek(0)
        for line in tmp.read().decode(errors="replace").splitlines():
            if line.startswith("# arenas allocated total"):
                return int(line.split("=")[1].replace(",", "").strip())
    raise AssertionError("no arena count")


@pytest.mark.skipif(not hasattr(sys, "_debugmallocstats"), reason="CPython's allocator stats")
def test_a_rebuild_over_a_large_table_needs_no_arena_per_text() -> None:
    """60k texts of ~120 characters: read whole and lower-cased text by text, the rebuild held
    two strings a text (and decoded each row's other values) at its peak: 10 new 1 MiB arenas
    in this process, which anything allocated meanwhile pins. A chunk at a time it needs none
    beyond a chunk's few."""
    rng = random.Random(7)
    words = ["deploy", "staging", "Postgres", "port", "5432", "kayak", "pier", "Zürich"]
    texts: list[str | None] = [f"{i} " + " ".join(rng.choices(words, k=16)) for i in range(60_000)]
    t = _table(texts)
    mask = np.ones(len(texts), dtype=bool)
    hot_channels.substring(t, ["warm"], mask, 5)  # (the channel's own first-use allocations)
    t.upsert([_row(0, texts[0])])  # a write: the next probe rebuilds
    before = _arenas_allocated()
    got = hot_channels.substring(t, ["59999 "], mask, 5)
    new = _arenas_allocated() - before
    assert [r["id"] for r, _s in got] == ["tr_00059999"]
    assert new <= 3, f"{new} new arenas for one rebuild"

"""What the hot index holds in memory, by part, in bytes.

The hot index legitimately grows with the data (vectors, rows, postings), so a memory figure that
mixes it with everything else cannot tell a leak from data. This estimate walks the index:
numpy buffers by ``nbytes`` (capacity included), Python containers and their values by
``sys.getsizeof`` (the rows themselves are in a side file: only their locations count, ``RowFile.nbytes``). It costs one pass over the
rows: for ``doctor`` and the bench; the memory budget's check estimates the rows from a sample.
Side files (rows, vector codes, rescoring records, long postings, one-posting tokens) are on disk
and in the kernel's page cache, not in the process: they are not counted (nor a scan's scratch
buffer: one per scanning thread, ``codefile.SCAN_BYTES``, whatever the data).
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Mapping
from typing import Any

from stratamem.core.hotindex.index import HotIndex
from stratamem.core.hotindex.table import HotTable


def _arrays(values: Iterable[Any]) -> int:
    return sum(getattr(v, "nbytes", 0) or sys.getsizeof(v) for v in values)


def _masks_bytes(masks: Mapping[Any, Any]) -> int:
    """Cached masks: arrays, and the scoped views' own dicts of them (``hotindex/scoped.py``)."""
    return sum(
        _masks_bytes(m) if isinstance(m, Mapping) else int(getattr(m, "nbytes", 0))
        for m in masks.values()
    )


def table_bytes(t: HotTable, sample: int = 0) -> dict[str, int]:
    """The table's parts in bytes; with ``sample``, the rows' values are estimated from that many
    rows spread over the table (the memory budget's periodic check) instead of walking them all."""
    vectors = sum(m.nbytes() for m in t.codes.values()) + sum(h.nbytes for h in t.has.values())
    vectors += sum(r.nbytes() for r in t.resid.values())
    rows = t.rows.nbytes(sample)
    ids = t.slot_of.nbytes()
    columns = _arrays((t.alive, t.owner, t.priority, t.ts, t.session))
    sessions = t.session_code.nbytes() + sys.getsizeof(t.by_session)
    sessions += sum(sys.getsizeof(s) for s in t.by_session.values())
    tags = sys.getsizeof(t.tags) + sum(sys.getsizeof(s) for s in t.tags.values())
    postings = t.lex.nbytes()
    sub: Any = t.sub
    substrings = sys.getsizeof(sub._blob) + sub._starts.nbytes
    ann = 0
    for a in t.ann.values():
        if a is not None:
            ann += int(getattr(a.index, "memory_usage", 0) or 0)
    masks = _masks_bytes(t._masks)
    masks += sum(m.nbytes for _v, m in t._visible_cache.values())
    return {
        "vectors": vectors,
        "rows": rows + ids + columns + sessions + tags + masks,
        "postings": postings + substrings,
        "ann": ann,
    }


def estimate_bytes(t: HotTable) -> int:
    """The table's bytes with the rows estimated from a sample (cheap enough to run often)."""
    return sum(table_bytes(t, sample=256).values())


def footprint(hot: HotIndex | None) -> dict[str, Any]:
    """``{"total": bytes, "vectors"|"rows"|"postings"|"ann": bytes, "per_table": {...}}``."""
    per: dict[str, dict[str, int]] = {}
    if hot is not None:
        per = {name: table_bytes(t) for name, t in hot.tables.items()}
    parts = ("vectors", "rows", "postings", "ann")
    out: dict[str, Any] = {p: sum(v[p] for v in per.values()) for p in parts}
    out["total"] = sum(out[p] for p in parts)
    out["per_table"] = per
    return out


def footprint_mb(hot: HotIndex | None) -> Mapping[str, float]:
    fp = footprint(hot)
    return {k: round(v / 1e6, 2) for k, v in fp.items() if k != "per_table"}

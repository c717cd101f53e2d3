"""Bookkeeping on a write reads the table's flags without copying them: ``needs_ann`` runs after
every write, and a bool array's ``sum()`` cast the flags through numpy's 64 KB buffer each time
(10x the time of ``count_nonzero`` at 100k rows: 55 against 5 us), heap traffic on every turn
that a soak's memray capture showed beside the index's own growth (soak-session14-heap.md)."""

from __future__ import annotations

import tracemalloc

import numpy as np
import pyarrow as pa

from stratamem.core.hotindex.table import HotTable

COL = "vec_summary"


def test_deciding_whether_a_table_needs_its_graph_copies_nothing_sized_by_the_table() -> None:
    n, dim = 40_000, 8
    vecs = np.random.default_rng(3).standard_normal((n, dim)).astype(np.float32)
    t = HotTable("traces", [COL], dim, {"hot_ann_threshold_rows": 10 * n})
    t.load_batch(
        pa.RecordBatch.from_pydict(
            {
                "id": [f"r{i}" for i in range(n)],
                "owner_agent_kind": ["a"] * n,
                COL: pa.FixedSizeListArray.from_arrays(pa.array(vecs.reshape(-1)), dim),
            }
        )
    )
    assert t.needs_ann(COL) is False
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        for _ in range(3):
            assert t.needs_ann(COL) is False
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 4096, f"{peak} B allocated to count {n} flags"

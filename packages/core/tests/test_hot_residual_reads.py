"""A tier reads each candidate's int4 residual once: the vector channel's rescoring keeps the unit
vectors of the slots it returns, and their rows take them instead of reading the side file
again (it used to read ~40 residuals a query twice). Same bytes, so the same rows and scores."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa

from stratamem.core.hotindex.table import HotTable
from stratamem.core.retrieval import hot_channels as hc

COL = "vec_summary"


def _table(tmp_path: Path, n: int = 400, dim: int = 64) -> tuple[HotTable, np.ndarray]:
    rng = np.random.default_rng(3)
    vecs = rng.standard_normal((n, dim)).astype(np.float32)
    batch = pa.RecordBatch.from_pydict(
        {
            "id": [f"r{i}" for i in range(n)],
            "owner_agent_kind": ["a"] * n,
            "search_text": [
                f"row {i} talks about {'apples' if i % 3 else 'pears'}" for i in range(n)
            ],
            COL: pa.FixedSizeListArray.from_arrays(pa.array(vecs.reshape(-1)), dim),
        }
    )
    t = HotTable("traces", [COL], dim, {}, tmp_path)
    t.load_batch(batch)
    q = vecs[11] + 0.1 * rng.standard_normal(dim).astype(np.float32)
    return t, q / np.linalg.norm(q)


def test_the_rows_of_a_vector_channels_hits_read_no_residual_again(tmp_path: Path) -> None:
    t, q = _table(tmp_path)
    mask = np.ones(t.n, dtype=bool)
    kept: dict[int, np.ndarray] = {}
    before = t.resid[COL].reads
    hits = t.vector(COL, q, mask, 20, kept)
    rescored = t.resid[COL].reads - before
    assert rescored == 20 * 4 and sorted(kept) == sorted(s for s, _ in hits)
    rows = hc.rows_of(t, hits, {}, {COL: kept})
    assert t.resid[COL].reads - before == rescored  # the old rows read the 20 again
    # the same rows as made without the kept vectors (read from the side file)
    again = hc.rows_of(t, hits, {})
    assert t.resid[COL].reads - before == rescored + 20
    for (a, sa), (b, sb) in zip(rows, again, strict=True):
        assert sa == sb and a["id"] == b["id"] and np.array_equal(a[COL], b[COL])
    # BM25's hits: the vector hits among them are taken, the others read (each once)
    lex = t.lex.bm25(["pear"], mask, 30)
    assert lex
    fresh = {s for s, _ in lex} - set(kept)
    mark = t.resid[COL].reads
    hc.rows_of(t, lex, {}, {COL: kept})
    assert t.resid[COL].reads - mark == len(fresh)

"""The default vector layout ("i4") holds only a 4-bit code per component and a scale in memory
(~197 B per 384-d vector instead of "i8"'s 389) and reads what rescoring needs (the int8 codes,
the int4 residual and the scale: "i8"'s bytes) from the side file, one record per candidate. So a
query's rescored scores are "i8"'s bit for bit, and float32's to ~1e-4 (bench/results/hot-int4.md).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa

from stratamem.core.hotindex.footprint import table_bytes
from stratamem.core.hotindex.table import HotTable

COL = "vec_summary"


def _clustered(n: int, dim: int, seed: int) -> np.ndarray:
    """Unit rows drawn around a few dozen centres: many near-ties, as the bench corpus has."""
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((40, dim)).astype(np.float32)
    pick = rng.integers(0, 40, n)
    vecs = centres[pick] + 0.6 * rng.standard_normal((n, dim)).astype(np.float32)
    out: np.ndarray = vecs / np.linalg.norm(vecs, axis=1, keepdims=True)
    return out


def _batch(vecs: np.ndarray) -> pa.RecordBatch:
    n, dim = vecs.shape
    return pa.RecordBatch.from_pydict(
        {
            "id": [f"r{i}" for i in range(n)],
            "owner_agent_kind": ["a"] * n,
            COL: pa.FixedSizeListArray.from_arrays(pa.array(vecs.reshape(-1)), dim),
        }
    )


def _table(vecs: np.ndarray, layout: str | None, tmp_path: Path) -> HotTable:
    cfg = {} if layout is None else {"hot_vector_dtype": layout}
    t = HotTable("traces", [COL], vecs.shape[1], cfg, tmp_path)
    t.reserve(len(vecs))
    t.load_batch(_batch(vecs[:-1]))
    t.upsert([{"id": "last", COL: vecs[-1], "owner_agent_kind": "a"}])  # the write-through path
    return t


def test_the_default_layout_holds_its_codes_in_side_files_and_a_flag_in_memory(
    tmp_path: Path,
) -> None:
    vecs = _clustered(600, 384, 1)
    t = _table(vecs, None, tmp_path)
    n = len(vecs)
    # a 1 B flag per vector in memory (before the codes' file: + 192 B of 4-bit codes, 4 B scale)
    assert table_bytes(t)["vectors"] / n <= 2
    # the first stage's records: 4-bit codes, scale; the rescoring records: int8 codes, residual,
    # scale
    assert t.codes[COL].file_bytes() == n * (192 + 4)
    assert t.resid[COL].file_bytes() == n * (384 + 192 + 4)
    old = _table(vecs, "i8", tmp_path)
    assert old.codes[COL].file_bytes() == n * (384 + 4)


def test_rescoring_reads_int8s_bytes_from_the_side_file_so_scores_are_int8s_exactly(
    tmp_path: Path,
) -> None:
    vecs = _clustered(3000, 384, 2)
    i4 = _table(vecs, "i4", tmp_path)
    i8 = _table(vecs, "i8", tmp_path)
    slots = np.random.default_rng(3).permutation(len(vecs))[:200]
    # the stored unit vectors (what leaves the index, what the graph is fed) are the same bits
    assert np.array_equal(i4.unit_vectors(COL, slots), i8.unit_vectors(COL, slots))
    mask = np.ones(len(vecs), dtype=bool)
    rng = np.random.default_rng(4)
    recall = []
    for k in range(40):
        q = vecs[k * 70] + 0.3 * rng.standard_normal(384).astype(np.float32) / np.sqrt(384)
        q /= np.linalg.norm(q)
        exact = vecs @ q
        want = np.argsort(-exact, kind="stable")[:20]
        before = i4.resid[COL].reads
        got = i4.vector(COL, q, mask, 20)
        assert i4.resid[COL].reads - before == 20 * i4.layout.rescore  # one record a candidate
        ref = dict(i8.vector(COL, q, mask, 20))
        # a slot both return has the same score, bit for bit; float32's to ~1e-4
        assert all(ref[s] == score for s, score in got if s in ref)
        assert max(abs(score - float(exact[s])) for s, score in got) < 5e-4
        recall.append(len({s for s, _ in got} & set(want.tolist())) / 20)
    assert float(np.mean(recall)) >= 0.99, recall


def test_an_update_that_leaves_the_vector_alone_keeps_its_stored_bytes(tmp_path: Path) -> None:
    vecs = _clustered(50, 384, 5)
    t = _table(vecs, "i4", tmp_path)

    def stored() -> tuple[bytes, bytes, float]:
        record = t.resid[COL].read(np.array([7]))[0]
        codes, scales = t.codes[COL].read(np.array([7]))
        return codes.tobytes(), record.tobytes(), float(scales[0])

    before = stored()
    t.update("r7", {"priority": 0.9})
    assert stored() == before
    row = t.full_row(7)
    assert abs(float(np.linalg.norm(row[COL])) - 1.0) < 1e-5
    assert float(row[COL] @ vecs[7]) > 0.99999

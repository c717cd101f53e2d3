"""The vectors' int4 residuals live in a side file, not in the process: every record reads back as
written (per slot in any order, or as a range), a slot never written reads as zeros, the file has
no name, and the hot table's resident vectors are the int8 codes and scales only while its scores
stay float32's (bench/results/soak-session9.md)."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from stratamem.core.hotindex.footprint import table_bytes
from stratamem.core.hotindex.quantized import quantize_rows, unit_rows
from stratamem.core.hotindex.slotfile import SlotFile
from stratamem.core.hotindex.table import HotTable

COL = "vec_summary"
WIDTH = 5

WRITES = st.lists(
    st.tuples(st.integers(0, 40), st.lists(st.binary(min_size=WIDTH, max_size=WIDTH), max_size=6)),
    max_size=12,
)


@settings(max_examples=200, deadline=None)
@given(WRITES, st.lists(st.integers(0, 60), max_size=30), st.sampled_from([0, 16, 64]))
def test_records_read_back_as_last_written_and_unwritten_slots_as_zeros(
    writes: list[tuple[int, list[bytes]]], reads: list[int], extent: int
) -> None:
    """With an ``extent`` too: the file extended by zeros in blocks ahead of the records (the
    codes' file, for large folios) reads the same."""
    f = SlotFile(WIDTH, extent=extent)
    want: dict[int, bytes] = {}
    for first, records in writes:
        block = np.frombuffer(b"".join(records), np.uint8).reshape(len(records), WIDTH)
        f.write(first, block)
        want.update({first + i: r for i, r in enumerate(records)})
    zero = bytes(WIDTH)
    got = f.read(np.array(reads, dtype=np.int64))
    assert got.shape == (len(reads), WIDTH)
    assert [bytes(r) for r in got] == [want.get(s, zero) for s in reads]
    span = f.read_range(3, 61)
    assert [bytes(r) for r in span] == [want.get(s, zero) for s in range(3, 61)]
    assert f.nbytes() == 0
    end = (
        max((first + len(records)) * WIDTH for first, records in writes if records)
        if any(records for _f, records in writes)
        else 0
    )
    assert f.file_bytes() == end  # the records' bytes, not the zeros ahead of them
    if extent and end:
        size = os.fstat(f.fd()).st_size
        assert end <= size < max(2 * end, end + extent) and size % 16 == 0


def test_the_file_has_no_name_and_a_width_of_zero_writes_nothing(tmp_path: Path) -> None:
    f = SlotFile(WIDTH, tmp_path)
    f.write(2, np.full((3, WIDTH), 7, np.uint8))
    assert list(tmp_path.iterdir()) == []
    assert f.file_bytes() == 5 * WIDTH
    none = SlotFile(0, tmp_path)
    none.write(0, np.zeros((4, 0), np.uint8))
    assert none.read(np.arange(4)).shape == (4, 0) and none.file_bytes() == 0


def test_the_hot_table_holds_codes_and_scales_only_and_reads_the_residuals_exactly(
    tmp_path: Path,
) -> None:
    rng = np.random.default_rng(9)
    n, dim = 300, 384
    vecs = rng.standard_normal((n, dim)).astype(np.float32)
    unit = vecs / np.linalg.norm(vecs, axis=1, keepdims=True)
    batch = pa.RecordBatch.from_pydict(
        {
            "id": [f"r{i}" for i in range(n)],
            "owner_agent_kind": ["a"] * n,
            COL: pa.FixedSizeListArray.from_arrays(pa.array(vecs.reshape(-1)), dim),
        }
    )
    t = HotTable("traces", [COL], dim, {"hot_vector_dtype": "i8"}, tmp_path)
    t.reserve(n + 1)
    t.load_batch(batch)  # slots 0..299, one write of the residuals
    extra = rng.standard_normal(dim).astype(np.float32)
    t.upsert([{"id": "x", COL: extra, "owner_agent_kind": "a"}])  # slot 300, one record
    # resident per vector: 384 B of codes, a 4 B scale, a flag (the 192 B residual is in the file)
    assert table_bytes(t)["vectors"] / (n + 1) <= 390
    assert t.resid[COL].file_bytes() == (n + 1) * 192
    # the stored vectors are the codes plus the residual, bit for bit as quantised in memory
    q8, scale, r4 = quantize_rows(
        np.vstack([unit, extra / np.linalg.norm(extra)]).astype(np.float32), t.layout
    )
    want = unit_rows(q8, scale, r4, t.layout, dim)
    slots = rng.permutation(n + 1)[:80]
    assert np.array_equal(t.unit_vectors(COL, slots), want[slots])
    # and a query's scores are float32's to ~1e-4 (the residual read for every candidate)
    q = unit[17] + 0.01 * rng.standard_normal(dim).astype(np.float32)
    q /= np.linalg.norm(q)
    got = t.vector(COL, q, np.ones(n + 1, dtype=bool), 10)
    assert got[0][0] == 17
    assert max(abs(score - float(want[s] @ q)) for s, score in got) < 1e-6
    exact = np.vstack([unit, extra / np.linalg.norm(extra)]) @ q
    assert max(abs(score - float(exact[s])) for s, score in got) < 5e-4

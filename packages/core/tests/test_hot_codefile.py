"""The first stage's codes and scales live in a side file, not in the process (``codefile.py``):
a row's codes cost no resident bytes, and a scan read a chunk at a time returns what the scan of
an in-memory code matrix returned — the same slots, scores and order, ties included — with
masks, deletes, updates, the graph's selective scans and chunks of a few rows."""

from __future__ import annotations

import asyncio
import gc
import math
import tracemalloc
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from stratamem.core.hotindex import codefile
from stratamem.core.hotindex.quantized import dots, encode_query, quantize_rows
from stratamem.core.hotindex.table import HotTable

COL = "vec_summary"
DIM = 64


def _unit(rng: np.random.Generator, n: int, dim: int = DIM) -> np.ndarray:
    """Clustered unit rows with exact duplicates (tied scores): what a real corpus has."""
    centres = rng.standard_normal((6, dim)).astype(np.float32)
    vecs = centres[rng.integers(0, 6, n)] + 0.5 * rng.standard_normal((n, dim)).astype(np.float32)
    dup = rng.integers(0, n, n // 5)
    vecs[rng.integers(0, n, n // 5)] = vecs[dup]
    out: np.ndarray = vecs / np.linalg.norm(vecs, axis=1, keepdims=True)
    return out


class Model:
    """The table's first stage as it was: a code matrix and scales in memory, the old scan."""

    def __init__(self, t: HotTable) -> None:
        self.t = t
        self.unit: dict[int, np.ndarray] = {}
        self._mats: tuple[tuple[int, int], np.ndarray, np.ndarray] | None = None

    def put(self, rows: list[dict[str, Any]]) -> None:
        self.t.upsert(rows)
        for r in rows:
            slot = self.t.slot_of.get(str(r["id"]))
            assert slot is not None
            v = r.get(COL)
            if v is not None:
                self.unit[slot] = np.asarray(v, np.float32) / np.linalg.norm(v)

    def delete(self, ids: list[str]) -> None:
        for i in ids:
            slot = self.t.slot_of.get(i)
            if slot is not None:
                self.unit.pop(slot, None)
        self.t.delete(ids)

    def matrices(self) -> tuple[np.ndarray, np.ndarray]:
        """The code matrix (``scan_rows`` long, as it was grown) and scales of the inputs."""
        key = (self.t.version, self.t.scan_rows[COL])
        if self._mats is None or self._mats[0] != key:
            lay = self.t.layout
            mat = np.zeros((key[1], lay.code_width(DIM)), dtype=lay.codes)
            scale = np.zeros(key[1], dtype=np.float32)
            for slot, u in self.unit.items():
                codes, sc, _rec = quantize_rows(u[None, :], lay)
                mat[slot], scale[slot] = codes[0], sc[0]
            self._mats = (key, mat, scale)
        return self._mats[1], self._mats[2]

    def vector(self, qvec: np.ndarray, mask: np.ndarray, limit: int) -> list[tuple[int, float]]:
        """``HotTable.vector`` before the codes' file, over matrices built from the inputs."""
        t, lay = self.t, self.t.layout
        mat, scale = self.matrices()
        n = min(t.n, len(mat))
        if n == 0 or limit <= 0:
            return []
        valid = mask[:n] & t.has[COL][:n]
        count = int(np.count_nonzero(valid))
        if count == 0:
            return []
        ann = t.ann[COL]
        slots: np.ndarray | None = None
        if ann is not None and count > 4 * limit:
            share = count / max(1, len(ann))
            over = t.cfg.get_int("hot_ann_oversample")
            fetch = math.ceil(limit * over / max(share, 1e-9))
            if fetch <= t.cfg.get_int("hot_ann_max_fetch"):
                got = ann.search(qvec, max(fetch, limit * over))
                got = got[(got >= 0) & (got < n)]
                got = got[valid[got]]
                if len(got) >= limit:
                    slots = got
        if slots is None:
            query = encode_query(qvec, lay)
            if count * 4 < n:
                slots = np.flatnonzero(valid)
                approx = dots(query, mat[slots], lay) * scale[slots]
            else:
                approx = dots(query, mat[:n], lay) * scale[:n]
                approx[~valid] = -np.inf
            m = min(count, limit * lay.rescore)
            best = (
                np.argpartition(-approx, m - 1)[:m] if len(approx) > m else np.arange(len(approx))
            )
            best = best[np.isfinite(approx[best])]
            slots = slots[best] if slots is not None else best
        unit = t.unit_vectors(COL, slots)
        scores = unit @ qvec
        k = min(limit, len(scores))
        top = np.argpartition(-scores, k - 1)[:k] if len(scores) > k else np.arange(len(scores))
        top = top[np.argsort(-scores[top], kind="stable")]
        return [(int(slots[t_]), float(scores[t_])) for t_ in top]


def _rows(ids: range, vecs: np.ndarray, owners: int = 3) -> list[dict[str, Any]]:
    return [
        {"id": f"r{i}", COL: vecs[j], "owner_agent_kind": f"k{i % owners}", "ts": i}
        for j, i in enumerate(ids)
    ]


def _masks(t: HotTable, rng: np.random.Generator) -> list[np.ndarray]:
    n = t.n
    out = [np.ones(n, dtype=bool), t.alive[:n].copy()]
    for share in (0.6, 0.3, 0.1, 0.02, 0.004):  # dense scans, sparse ones, a few slots
        out.append(rng.random(n) < share)
    out.append(t.scope_mask(_scope_of(t, "k1")))  # one owner's rows, interleaved
    block = np.zeros(n, dtype=bool)
    block[n // 3 : n // 3 + 90] = True  # one run
    out.append(block)
    return out


def _scope_of(t: HotTable, kind: str) -> Any:
    from stratamem.contract.dtos import Namespace
    from stratamem.core.storage.ownership import Scope

    return Scope.visible(Namespace(agent_kind=kind, profile_id="default"))


@pytest.mark.parametrize(("layout", "chunk_rows"), [("i4", 3), ("i4", 1000), ("i8", 7), ("f32", 5)])
def test_a_scan_read_a_chunk_at_a_time_returns_what_the_in_memory_scan_returned(
    tmp_path: Path, layout: str, chunk_rows: int
) -> None:
    rng = np.random.default_rng(11)
    t = HotTable("traces", [COL], DIM, {"hot_vector_dtype": layout}, tmp_path)
    t.codes[COL].scan_bytes = chunk_rows * t.codes[COL].file.width
    t.codes[COL].release_bytes = 4 * t.codes[COL].file.width  # pages released every 4 slots
    model = Model(t)
    vecs = _unit(rng, 1500)
    queries = [vecs[i] + 0.2 * _unit(rng, 1)[0] for i in rng.integers(0, 1500, 6)]
    queries.append(vecs[17].copy())  # exact duplicates of the query: tied scores
    checked = 0

    def check() -> None:
        nonlocal checked
        for mask in _masks(t, rng):
            for q in queries:
                for limit in (1, 10, 40):
                    got, want = t.vector(COL, q, mask, limit), model.vector(q, mask, limit)
                    if layout == "f32":
                        # BLAS's float32 dot products of a chunk may differ in the last bit from
                        # those of the whole matrix: tied rows (duplicates) can swap places
                        assert [s for _i, s in got] == [s for _i, s in want]
                    else:
                        assert got == want
                    checked += 1

    model.put(_rows(range(0, 700), vecs[:700]))  # grows across chunk boundaries
    check()
    model.put(_rows(range(700, 1500), vecs[700:]))
    model.delete([f"r{i}" for i in rng.integers(0, 1500, 200).tolist()])
    # updates: a new vector, the same vector, another column only, a vector taken away
    model.put(_rows(range(300, 340), vecs[900:940]))
    t.update("r400", {"priority": 0.5})
    model.put([{"id": "r401", COL: None, "owner_agent_kind": "k2"}])
    model.unit.pop(t.slot_of.get("r401") or 0, None)
    model.put([{"id": f"x{i}", "owner_agent_kind": "k0"} for i in range(600)])  # rows, no vector
    check()
    assert checked == 2 * 9 * 7 * 3
    # a small chunk is many kernel calls; the buffer is at most one chunk
    assert t.codes[COL].chunks > 100
    assert codefile.scratch_bytes() >= t.codes[COL].scan_bytes - t.codes[COL].file.width


def test_the_graphs_selective_scans_read_the_codes_file_and_return_the_same(
    tmp_path: Path,
) -> None:
    rng = np.random.default_rng(12)
    cfg = {"hot_ann_threshold_rows": 400, "hot_ann_max_fetch": 400, "hot_ann_threads": 1}
    t = HotTable("traces", [COL], DIM, cfg, tmp_path)
    t.codes[COL].scan_bytes = 50 * t.codes[COL].file.width
    model = Model(t)
    vecs = _unit(rng, 2000)
    model.put(_rows(range(2000), vecs, owners=20))
    assert t.needs_ann(COL)
    asyncio.run(t.build_ann(COL))
    assert t.ann[COL] is not None
    before = t.codes[COL].chunks
    for mask in _masks(t, rng):
        for i in rng.integers(0, 2000, 5).tolist():
            assert t.vector(COL, vecs[i], mask, 10) == model.vector(vecs[i], mask, 10)
    assert t.codes[COL].chunks > before  # the selective masks scanned the file


def test_a_rows_codes_cost_no_resident_memory(tmp_path: Path) -> None:
    """Measured: 4,000 rows with 384-d vectors against the same rows without; before the codes'
    file the difference was the code matrix and scales (196 B a row, ×1.25 capacity)."""
    rng = np.random.default_rng(13)
    n, dim = 4000, 384
    vecs = _unit(rng, n, dim)

    def resident(with_vectors: bool, rows: int = n) -> int:
        t = HotTable("traces", [COL], dim, {}, tmp_path)
        tracemalloc.start()
        try:
            base = tracemalloc.get_traced_memory()[0]
            for at in range(0, rows, 500):
                t.upsert(
                    [
                        {"id": f"r{i}", "owner_agent_kind": "a", "ts": i}
                        | ({COL: vecs[i]} if with_vectors else {})
                        for i in range(at, min(rows, at + 500))
                    ]
                )
            gc.collect()
            used = tracemalloc.get_traced_memory()[0] - base
        finally:
            tracemalloc.stop()
        assert t.n == rows
        return used

    resident(True, 10)  # what the first write imports or caches, process-wide

    extra = (resident(True) - resident(False)) / n
    assert extra <= 8, extra


def test_scans_in_several_threads_each_use_their_own_buffer(tmp_path: Path) -> None:
    rng = np.random.default_rng(14)
    t = HotTable("traces", [COL], DIM, {}, tmp_path)
    t.codes[COL].scan_bytes = 5 * t.codes[COL].file.width
    vecs = _unit(rng, 800)
    t.upsert(_rows(range(800), vecs))
    mask = np.ones(t.n, dtype=bool)
    queries = [vecs[i] for i in rng.integers(0, 800, 40).tolist()]
    want = [t.vector(COL, q, mask, 10) for q in queries]
    with ThreadPoolExecutor(4) as pool:
        for _round in range(3):
            assert list(pool.map(lambda q: t.vector(COL, q, mask, 10), queries)) == want


def _read_bytes() -> int:
    """Bytes this process has read with read system calls (``/proc/self/io``'s ``rchar``)."""
    for line in Path("/proc/self/io").read_text().splitlines():
        if line.startswith("rchar:"):
            return int(line.split()[1])
    raise AssertionError("no rchar in /proc/self/io")


@pytest.mark.skipif(not Path("/proc/self/io").exists(), reason="needs /proc/self/io (Linux)")
def test_a_scattered_masks_scan_reads_its_slots_not_the_span_of_them(tmp_path: Path) -> None:
    """A small namespace scattered among 20,000 rows: 0.5 % of them, too few for the graph. Session
    18 read the span of their records (~3.9 MB a query, system calls counted in ``rchar``); the
    scan reads its ~100 records through the mapping, and only rescoring's 40 records are read
    by ``pread`` (~23 KB)."""
    rng = np.random.default_rng(15)
    n, dim = 20000, 384
    t = HotTable("traces", [COL], dim, {"hot_ann_threshold_rows": 10**9}, tmp_path)
    vecs = _unit(rng, n, dim)
    for at in range(0, n, 2000):
        t.upsert(_rows(range(at, at + 2000), vecs[at : at + 2000]))
    mask = np.zeros(n, dtype=bool)
    mask[rng.choice(n, n // 200, replace=False)] = True
    queries = [vecs[i] for i in np.flatnonzero(mask)[:5].tolist()]
    want = [t.vector(COL, q, mask, 10) for q in queries]  # warm: imports, first mapping
    before = _read_bytes()
    got = [t.vector(COL, q, mask, 10) for q in queries]
    per_query = (_read_bytes() - before) / len(queries)
    assert got == want
    assert all(len(g) == 10 and g[0][0] in np.flatnonzero(mask) for g in got)
    record_bytes = t.codes[COL].file.width * n
    assert per_query < 100_000, (per_query, record_bytes)
    # one owner's rows in four runs of 50 consecutive slots: one ``preadv`` a run
    runs = np.zeros(n, dtype=bool)
    for first in (1000, 7000, 12000, 19000):
        runs[first : first + 50] = True
    t.vector(COL, vecs[1010], runs, 10)
    reads, before = t.codes[COL].reads, _read_bytes()
    assert t.vector(COL, vecs[1010], runs, 10)[0][0] == 1010
    assert t.codes[COL].reads - reads == 4
    assert _read_bytes() - before < 100_000


def _mapped_kb(inode: int) -> tuple[int, int]:
    """(mappings of the file ``inode``, their resident kB) in this process (``/proc/self/smaps``)."""
    count = rss = 0
    mine = False
    for line in Path("/proc/self/smaps").read_text().splitlines():
        head = line.split()
        if head and "-" in head[0] and len(head) >= 5 and not head[0].endswith(":"):
            mine = head[4] == str(inode)
            count += mine
        elif mine and line.startswith("Rss:"):
            rss += int(head[1])
    return count, rss


@pytest.mark.skipif(not Path("/proc/self/smaps").exists(), reason="needs /proc/self/smaps")
def test_a_scan_leaves_none_of_the_codes_file_mapped(tmp_path: Path) -> None:
    """The scans read the records through a mapping, and RSS counts a mapped page: every scan
    (dense, masked, the graph's selective ones) unmaps the file when it ends, so the codes stay
    out of the process between queries (what the soak's RSS measures)."""
    import os

    rng = np.random.default_rng(16)
    n, dim = 12000, 384
    cfg = {"hot_ann_threshold_rows": 6000, "hot_ann_max_fetch": 300, "hot_ann_threads": 1}
    t = HotTable("traces", [COL], dim, cfg, tmp_path)
    vecs = _unit(rng, n, dim)
    t.upsert(_rows(range(n // 2), vecs[: n // 2]))
    cf = t.codes[COL]
    inode = os.fstat(cf.file.fd()).st_ino
    masks = [np.ones(n // 2, dtype=bool), rng.random(n // 2) < 0.1, rng.random(n // 2) < 0.01]
    for mask in masks:  # dense and masked scans below the graph's threshold
        t.vector(COL, vecs[3], mask, 10)
        assert _mapped_kb(inode) == (0, 0)
    t.upsert(_rows(range(n // 2, n), vecs[n // 2 :]))
    asyncio.run(t.build_ann(COL))
    before = cf.chunks
    for share in (0.02, 0.005):  # selective masks above it: scans, not the graph
        t.vector(COL, vecs[5], rng.random(n) < share, 10)
        assert _mapped_kb(inode) == (0, 0)
    assert cf.chunks > before


@pytest.mark.skipif(not Path("/proc/self/smaps").exists(), reason="needs /proc/self/smaps")
def test_while_a_scan_runs_it_holds_a_few_blocks_of_the_file_mapped_not_all(
    tmp_path: Path,
) -> None:
    """During a scan of 100,000 rows' codes (19.6 MB) the pages it has passed are released:
    mapped at most ``release_bytes`` plus the block it is in and the next (a fault maps a whole
    large folio), sampled before each of its chunks."""
    import os

    import pyarrow as pa

    rng = np.random.default_rng(17)
    n, dim = 100_000, 384
    t = HotTable("traces", [COL], dim, {"hot_ann_threshold_rows": 10**9}, tmp_path)
    vecs = rng.standard_normal((n, dim)).astype(np.float32)
    for at in range(0, n, 25_000):
        part = vecs[at : at + 25_000]
        flat = pa.FixedSizeListArray.from_arrays(pa.array(part.reshape(-1)), dim)
        t.load_batch(pa.record_batch({"id": [f"r{i}" for i in range(at, at + 25_000)], COL: flat}))
    cf = t.codes[COL]
    inode = os.fstat(cf.file.fd()).st_ino
    cf.release_bytes = codefile.EXTENT_BYTES
    seen: list[int] = []
    dots = cf._dots

    def sampling(query: np.ndarray, block: np.ndarray, out: np.ndarray) -> None:
        seen.append(_mapped_kb(inode)[1])
        dots(query, block, out)

    cf._dots = sampling  # type: ignore[method-assign]
    query = encode_query(vecs[7] / np.linalg.norm(vecs[7]), t.layout)
    dense = cf.scan(query, np.ones(n, dtype=bool))
    slots = np.flatnonzero(rng.random(n) < 0.4)
    sparse = cf.scores(query, slots)
    assert np.array_equal(sparse, dense[slots])
    assert len(seen) > 40
    whole_kb = cf.file.width * n // 1024
    bound_kb = (cf.release_bytes + 2 * codefile.EXTENT_BYTES) // 1024 + 64
    assert max(seen) <= bound_kb < whole_kb // 3, (max(seen), bound_kb, whole_kb)
    assert _mapped_kb(inode) == (0, 0)


def test_a_scan_the_system_refuses_to_map_reads_the_records_and_returns_the_same(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``mmap`` can fail (ENOMEM: the address-space limit, or ``vm.max_map_count`` reached by a
    process with many homes open). Every recall through the hot index then raised; now the scans
    (dense, masked, scattered, the graph's selective ones) read the records with ``preadv`` and
    return what the in-memory scan returned."""
    import errno
    import mmap

    rng = np.random.default_rng(21)
    cfg = {"hot_ann_threshold_rows": 1200, "hot_ann_max_fetch": 200, "hot_ann_threads": 1}
    t = HotTable("traces", [COL], DIM, cfg, tmp_path)
    cf = t.codes[COL]
    cf.scan_bytes = 40 * cf.file.width  # many chunks, a partial last one
    model = Model(t)
    vecs = _unit(rng, 2000)
    model.put(_rows(range(900), vecs[:900], owners=20))

    def refuse(*_args: Any, **_kwargs: Any) -> mmap.mmap:
        raise OSError(errno.ENOMEM, "Cannot allocate memory")

    monkeypatch.setattr(mmap, "mmap", refuse)

    def check() -> int:
        n = 0
        for mask in _masks(t, rng):
            mask[rng.integers(0, t.n, 40)] = True  # scattered: more runs than ``RUNS_READ``
            for i in rng.integers(0, 900, 4).tolist():
                assert t.vector(COL, vecs[i], mask, 10) == model.vector(vecs[i], mask, 10)
                n += 1
        return n

    assert check() == 9 * 4
    dense = cf.map_failures
    assert dense > 0
    model.put(_rows(range(900, 2000), vecs[900:], owners=20))
    asyncio.run(t.build_ann(COL))
    assert t.ann[COL] is not None
    before = cf.chunks
    assert check() == 9 * 4  # above the graph's threshold: selective masks gather their slots
    assert cf.map_failures > dense and cf.chunks > before

"""The hot index's vectors as int8: a quarter of float32's memory, scanned by a SIMD int8 kernel.

A unit vector is stored as its components scaled so the largest is ±127, rounded (per-row scale:
on MiniLM vectors it ranked closer to float32 than any fixed scale for unit vectors: recall@10 vs
exact 0.996 vs 0.987-0.994, bench/results/hot-int8.md), plus one float32 per row, ``1/‖q8‖``, so
``q8 · scale`` is the unit vector in the stored direction. A scan quantises the query the same
way and takes int8 dot products with int32 accumulation (numkong, usearch's own kernel library:
AVX-512 VNNI / AMX / NEON where present), times the row scales; the top candidates are then
rescored with the float32 query against the stored unit vectors, so a score is the exact cosine
to what the index holds (the same number the ranking's cosine feature computes from the row).

``storage.hot_vector_dtype = "f32"`` keeps float32 rows instead (scale 1, a BLAS scan): the same
code path, exact scores, four times the memory.
"""

from __future__ import annotations

import numkong as nk
import numpy as np

#: int8 magnitude of each row's largest component
Q_MAX = 127.0
#: ``storage.hot_vector_dtype`` -> the matrix dtype
DTYPES = {"i8": np.dtype(np.int8), "f32": np.dtype(np.float32)}


def dtype_of(name: str) -> np.dtype:
    got = DTYPES.get(name)
    if got is None:
        raise ValueError(f"storage.hot_vector_dtype must be one of {sorted(DTYPES)}, not {name!r}")
    return got


def quantize_rows(unit: np.ndarray, dtype: np.dtype) -> tuple[np.ndarray, np.ndarray]:
    """Unit float32 rows (k, dim), none zero, as stored rows of ``dtype`` and their scales
    (int8: ``1/‖q8‖``; float32: the rows as they are, scale 1).

    Element-wise per row, so one row quantised alone equals the same row quantised in a batch
    (a load and the write-through path leave the same bytes)."""
    if dtype != np.int8:
        return unit.astype(np.float32), np.ones(len(unit), dtype=np.float32)
    peak = np.abs(unit).max(axis=1, keepdims=True)
    q8 = np.rint(unit * (np.float32(Q_MAX) / peak)).astype(np.int8)
    sq = np.einsum("ij,ij->i", q8.astype(np.int32), q8.astype(np.int32))
    scale = (1.0 / np.sqrt(sq.astype(np.float64))).astype(np.float32)
    return q8, scale


def encode_query(qvec: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """The query in the matrix's dtype (int8: its own scale is the same for every row, so the
    ranking drops it)."""
    if dtype != np.int8:
        return qvec.astype(np.float32, copy=False)
    peak = float(np.abs(qvec).max())
    if not peak or not np.isfinite(peak):
        return np.zeros(qvec.shape, dtype=np.int8)
    return np.rint(qvec * (Q_MAX / peak)).astype(np.int8)


def dots(query: np.ndarray, mat: np.ndarray) -> np.ndarray:
    """``mat @ query`` as float32; int8 with int32 accumulation (exact: |sum| ≤ 127²·dim < 2²⁴
    for dim ≤ 1040; beyond that float32 rounds the last bits of a sum far above any near-tie)."""
    if mat.dtype != np.int8:
        out_f: np.ndarray = mat @ query
        return out_f
    out = np.empty((1, len(mat)), dtype=np.float32)
    if len(mat):
        nk.cdist(query[None, :], np.ascontiguousarray(mat), metric="dot", out=out)
    return out[0]


def unit_rows(mat: np.ndarray, scale: np.ndarray) -> np.ndarray:
    """Stored rows as float32 unit vectors (the direction the index holds)."""
    out: np.ndarray = mat.astype(np.float32)  # a copy: callers own it
    out *= scale[:, None]
    return out


def rescore(mat: np.ndarray, scale: np.ndarray, slots: np.ndarray, qvec: np.ndarray) -> np.ndarray:
    """Exact cosines (×‖qvec‖) of the float32 query to the stored unit vectors at ``slots``."""
    out: np.ndarray = (mat[slots].astype(np.float32, copy=False) @ qvec) * scale[slots]
    return out
